"""MLA's float64 reference and FlashInfer's BatchMLAPagedAttentionWrapper
interface over it (cascade_mlir.mla). The reference is checked against the
runtime's C++ float64 paged attention: MLA is multi-query attention with
q = [q_nope, q_pe], k = [ckv, kpe] and v = ckv, one KV head, a head_dim of
v (head_dim_vo) of its own."""
import numpy as np
import pytest

from cascade_mlir import _runtime
from cascade_mlir.mla import BatchMLAPagedAttentionWrapper, mla_reference

LN2 = np.log(2.0)


def batch(rng, kv_lens, q_lens, page, pool_extra=3):
    """Shuffled pages for requests of kv_lens tokens; (qo, kv_indptr,
    kv_indices, num_pages)."""
    pages = [(n + page - 1) // page for n in kv_lens]
    total = sum(pages) + pool_extra
    ids = rng.permutation(total).astype(np.int32)[:sum(pages)]
    kp = np.concatenate([[0], np.cumsum(pages)]).astype(np.int32)
    qo = np.concatenate([[0], np.cumsum(q_lens)]).astype(np.int32)
    return qo, kp, ids, total


def tensors(rng, rows, heads, dc, dp, total, page):
    return (rng.standard_normal((rows, heads, dc)), rng.standard_normal((rows, heads, dp)),
            rng.standard_normal((total, page, dc)), rng.standard_normal((total, page, dp)))


def via_paged_attention(q_nope, q_pe, ckv, kpe, qo, kp, ki, kv_len, page, sm_scale, causal):
    """The same attention through the runtime's C++ float64 reference."""
    q = np.concatenate([q_nope, q_pe], axis=-1).astype(np.float32)
    k = np.concatenate([ckv, kpe], axis=-1)[:, :, None, :].astype(np.float32)
    v = ckv[:, :, None, :].astype(np.float32)
    pages = np.diff(kp)
    last = np.where(pages > 0, kv_len - (pages - 1) * page, 0).astype(np.int32)
    lv = _runtime.Level(qo, kp, ki, last)
    return _runtime.ref_attention(q, [k, v], [lv], page, "NHD", causal=causal,
                                  sm_scale=sm_scale, pos_encoding_mode="NONE",
                                  window_left=-1, logits_soft_cap=0.0, rope_scale=1.0,
                                  rope_theta=1e4)


@pytest.mark.parametrize("causal", [False, True])
# DeepSeek's 512 + 64 exceeds the C++ reference's head_dim limit (256): 192 + 64.
@pytest.mark.parametrize("shape", [(4, 32, 8, 4), (16, 192, 64, 16)])
def test_reference_is_paged_multi_query_attention(causal, shape):
    heads, dc, dp, page = shape
    rng = np.random.default_rng(heads + causal)
    kv_lens = np.array([37, 1, 0, 64, 20], np.int32)
    q_lens = [3, 1, 2, 1, 5] if causal else [1] * 5
    qo, kp, ki, total = batch(rng, kv_lens, q_lens, page)
    q_nope, q_pe, ckv, kpe = tensors(rng, int(qo[-1]), heads, dc, dp, total, page)
    sm = 1.0 / np.sqrt(128 + dp)
    o, lse = mla_reference(q_nope, q_pe, ckv, kpe, qo, kp, ki, kv_lens, sm, causal)
    eo, el = via_paged_attention(q_nope, q_pe, ckv, kpe, qo, kp, ki, kv_lens, page, sm, causal)
    np.testing.assert_allclose(o, eo, rtol=0, atol=1e-5)
    np.testing.assert_allclose(lse, el, rtol=0, atol=1e-5)
    # The empty request (kv_len 0) is the empty state.
    rows = slice(int(qo[2]), int(qo[3]))
    assert np.all(o[rows] == 0) and np.all(np.isneginf(lse[rows]))


def test_wrapper_matches_the_reference_and_flashinfers_conventions():
    heads, dc, dp, page = 8, 64, 16, 4
    rng = np.random.default_rng(3)
    kv_lens = np.array([9, 16, 3], np.int32)
    qo, kp, ki, total = batch(rng, kv_lens, [2, 3, 1], page)
    q_nope, q_pe, ckv, kpe = tensors(rng, int(qo[-1]), heads, dc, dp, total, page)
    sm = 0.125
    w = BatchMLAPagedAttentionWrapper(None)
    # A preallocated index buffer: only its first kv_indptr[-1] entries count.
    buf = np.concatenate([ki, np.full(7, -1, np.int32)])
    w.plan(qo, kp, buf, kv_lens, heads, dc, dp, page, True, sm, "float32", "float32")
    o = w.run(q_nope, q_pe, ckv, kpe)
    eo, el = mla_reference(q_nope, q_pe, ckv, kpe, qo, kp, ki, kv_lens, sm, True)
    np.testing.assert_allclose(o, eo, rtol=0, atol=1e-6)
    out, lse = np.empty_like(q_nope), np.empty(q_nope.shape[:2], np.float32)
    got, got_lse = w.run(q_nope, q_pe, ckv, kpe, out=out, lse=lse, return_lse=True)
    assert got is out and got_lse is lse
    np.testing.assert_allclose(lse, el, rtol=0, atol=1e-5)
    _, lse_e = w.run(q_nope, q_pe, ckv, kpe, return_lse=True, return_lse_base_on_e=True)
    np.testing.assert_allclose(lse_e, el * LN2, rtol=0, atol=1e-5)


def test_wrapper_refuses_bad_input_with_messages():
    w = BatchMLAPagedAttentionWrapper(None)
    with pytest.raises(Exception, match="plan"):
        w.run(np.zeros((1, 2, 8)), np.zeros((1, 2, 4)), np.zeros((1, 4, 8)),
              np.zeros((1, 4, 4)))
    qo, kp, ki = np.array([0, 1], np.int32), np.array([0, 1], np.int32), np.array([0], np.int32)
    with pytest.raises(ValueError, match="does not fit"):
        w.plan(qo, kp, ki, np.array([5], np.int32), 2, 8, 4, 4, False, 1.0, "f", "f")
    with pytest.raises(ValueError, match="at least"):
        w.plan(qo, kp, ki[:0], np.array([3], np.int32), 2, 8, 4, 4, False, 1.0, "f", "f")
    w.plan(qo, kp, ki, np.array([3], np.int32), 2, 8, 4, 4, False, 1.0, "f", "f")
    with pytest.raises(ValueError, match="q_pe has shape"):
        w.run(np.zeros((1, 2, 8)), np.zeros((1, 2, 5)), np.zeros((1, 4, 8)),
              np.zeros((1, 4, 4)))
    with pytest.raises(ValueError, match="page id"):
        w.plan(qo, kp, np.array([2], np.int32), np.array([3], np.int32), 2, 8, 4, 4,
               False, 1.0, "f", "f")
        w.run(np.zeros((1, 2, 8)), np.zeros((1, 2, 4)), np.zeros((1, 4, 8)),
              np.zeros((1, 4, 4)))
    with pytest.raises(ValueError, match="backend"):
        BatchMLAPagedAttentionWrapper(None, backend="cutlass")
