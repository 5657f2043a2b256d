"""MLA's float64 reference and FlashInfer's BatchMLAPagedAttentionWrapper
interface over it (cascade_mlir.mla). The reference (the runtime's C++
paged attention as multi-query attention with k = [ckv, kpe], v = ckv) is
checked against the latent form's formula written out here in numpy."""
import numpy as np
import pytest

import cascade_mlir as cm
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


def direct_mla(q_nope, q_pe, ckv_cache, kpe_cache, qo, kp, ki, kv_len, sm_scale, causal):
    """docs/semantics.md's latent form, request by request, in float64."""
    rows, heads, dc = q_nope.shape
    page = ckv_cache.shape[1]
    o, lse = np.zeros((rows, heads, dc)), np.full((rows, heads), -np.inf)
    for b in range(kv_len.size):
        r0, r1, n = int(qo[b]), int(qo[b + 1]), int(kv_len[b])
        if r1 == r0 or n == 0:
            continue
        pages = ki[int(kp[b]):int(kp[b + 1])]
        ckv = ckv_cache[pages].reshape(-1, dc)[:n]
        kpe = kpe_cache[pages].reshape(len(pages) * page, -1)[:n]
        x = (np.einsum("jhd,td->jht", q_nope[r0:r1], ckv) +
             np.einsum("jhd,td->jht", q_pe[r0:r1], kpe)) * sm_scale
        if causal:  # query j sees tokens t <= kv_len - qo_len + j
            hidden = np.arange(n)[None, :] > (n - (r1 - r0) + np.arange(r1 - r0))[:, None]
            x = np.where(hidden[:, None, :], -np.inf, x)
        m = x.max(axis=-1, keepdims=True)
        p = np.exp(x - m)
        o[r0:r1] = np.einsum("jht,td->jhd", p, ckv) / p.sum(-1)[..., None]
        lse[r0:r1] = (np.log(p.sum(-1)) + m[..., 0]) / LN2
    return o, lse


@pytest.mark.parametrize("causal", [False, True])
# DeepSeek's 128 heads x (512 + 64) at page 64, and small odd shapes.
@pytest.mark.parametrize("shape", [(4, 32, 8, 4), (16, 192, 64, 16), (128, 512, 64, 64)])
def test_reference_is_the_latent_form(causal, shape):
    heads, dc, dp, page = shape
    rng = np.random.default_rng(heads + causal)
    kv_lens = np.array([37, 1, 0, 64, 20], np.int32)
    q_lens = [3, 1, 2, 1, 5] if causal else [1] * 5
    qo, kp, ki, total = batch(rng, kv_lens, q_lens, page)
    # float32 inputs: the reference takes them exactly.
    q_nope, q_pe, ckv, kpe = (t.astype(np.float32) for t in
                              tensors(rng, int(qo[-1]), heads, dc, dp, total, page))
    # sm_scale is an f32 option (docs/semantics.md): the same value on both sides.
    sm = float(np.float32(1.0 / np.sqrt(128 + dp)))
    o, lse = mla_reference(q_nope, q_pe, ckv, kpe, qo, kp, ki, kv_lens, sm, causal)
    eo, el = direct_mla(*(t.astype(np.float64) for t in (q_nope, q_pe, ckv, kpe)),
                        qo, kp, ki, kv_lens, sm, causal)
    np.testing.assert_allclose(o, eo, rtol=0, atol=1e-9)
    np.testing.assert_allclose(lse, el, rtol=0, atol=1e-9)
    # The empty request (kv_len 0) is the empty state.
    rows = slice(int(qo[2]), int(qo[3]))
    assert np.all(o[rows] == 0) and np.all(np.isneginf(lse[rows]))


def test_reference_reads_only_kv_len_tokens_of_a_requests_pages():
    """A request may own more pages than its kv_len fills (FlashInfer reads
    kv_len tokens): the pages past them are never read."""
    rng = np.random.default_rng(5)
    heads, dc, dp, page = 4, 16, 8, 4
    kv_lens = np.array([5, 2], np.int32)
    qo = np.array([0, 1, 2], np.int32)
    kp = np.array([0, 3, 5], np.int32)  # 3 and 2 pages for 5 and 2 tokens
    ki = rng.permutation(6).astype(np.int32)[:5]
    q_nope, q_pe, ckv, kpe = tensors(rng, 2, heads, dc, dp, 6, page)
    o, lse = mla_reference(q_nope, q_pe, ckv, kpe, qo, kp, ki, kv_lens, 0.3)
    trailing = [int(ki[2]), int(ki[4])]
    ckv[trailing], kpe[trailing] = np.nan, np.nan  # unread pages
    o2, lse2 = mla_reference(q_nope, q_pe, ckv, kpe, qo, kp, ki, kv_lens, 0.3)
    np.testing.assert_array_equal(o, o2)
    np.testing.assert_array_equal(lse, lse2)
    eo, el = direct_mla(q_nope, q_pe, ckv, kpe, qo, kp, ki, kv_lens, 0.3, False)
    np.testing.assert_allclose(o, eo, rtol=0, atol=1e-6)


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


def test_cascade_is_attention_over_the_concatenated_pages():
    """A shared latent prefix (level 0, one request for all rows), a middle
    level and each request's own pages (causal, as the last level): the
    cascade equals one level over each request's concatenated pages, since
    every prefix page is full and each request has at least qo_len own
    tokens."""
    rng = np.random.default_rng(11)
    heads, dc, dp, page = 16, 64, 16, 4
    q_lens = [2, 1, 3]
    own = np.array([5, 4, 9], np.int32)
    mid = np.array([8, 0, 4], np.int32)
    B, rows = len(q_lens), sum(q_lens)
    pool = 64
    ids = rng.permutation(pool).astype(np.int32)
    prefix = ids[:3]                                # 12 shared tokens
    mid_pages = np.split(ids[3:3 + 3], [2, 2])      # 2, 0, 1 pages
    own_pages = np.split(ids[6:6 + 2 + 1 + 3], [2, 3])  # 2, 1, 3 pages
    qo = np.concatenate([[0], np.cumsum(q_lens)]).astype(np.int32)

    def csr(pages):
        return np.concatenate([[0], np.cumsum([len(p) for p in pages])]).astype(np.int32)
    levels = [(np.array([0, rows], np.int32), np.array([0, 3], np.int32), prefix,
               np.array([12], np.int32)),
              (qo, csr(mid_pages), np.concatenate(mid_pages), mid),
              (qo, csr(own_pages), np.concatenate(own_pages), own)]
    q_nope, q_pe, ckv, kpe = tensors(rng, rows, heads, dc, dp, pool, page)
    sm = 0.2
    w = cm.MultiLevelMLACascadeWrapper(3)
    w.plan(*[[lv[i] for lv in levels] for i in range(4)], heads, dc, dp, page, True, sm,
           "float32", "float32")
    o, lse = w.run(q_nope, q_pe, ckv, kpe, return_lse=True)
    whole = [np.concatenate([prefix, mid_pages[b], own_pages[b]]) for b in range(B)]
    eo, el = direct_mla(q_nope, q_pe, ckv, kpe, qo, csr(whole), np.concatenate(whole),
                        12 + mid + own, sm, True)
    np.testing.assert_allclose(o, eo, rtol=0, atol=1e-6)
    np.testing.assert_allclose(lse, el, rtol=0, atol=1e-6)
    _, lse_e = w.run(q_nope, q_pe, ckv, kpe, return_lse=True, return_lse_base_on_e=True)
    np.testing.assert_allclose(lse_e, el * LN2, rtol=0, atol=1e-6)


def test_cascade_refuses_inconsistent_levels_with_messages():
    w = cm.MultiLevelMLACascadeWrapper(2)
    one = (np.array([0, 1], np.int32), np.array([0, 1], np.int32), np.array([0], np.int32),
           np.array([3], np.int32))
    two = (np.array([0, 1, 2], np.int32), np.array([0, 1, 2], np.int32),
           np.array([1, 2], np.int32), np.array([2, 2], np.int32))
    with pytest.raises(ValueError, match="expected 2 levels"):
        w.plan(*[[x] for x in one], 2, 8, 4, 4, False, 1.0)
    with pytest.raises(ValueError, match="same query rows"):
        w.plan(*[[a, b] for a, b in zip(one, two)], 2, 8, 4, 4, False, 1.0)
    bad = one[:3] + (np.array([9], np.int32),)
    with pytest.raises(ValueError, match=r"request 0 \[level 1\]: kv_len 9 does not fit"):
        w.plan(*[[a, b] for a, b in zip(one, bad)], 2, 8, 4, 4, False, 1.0)
    with pytest.raises(cm.NotPlannedError):
        w.run(np.zeros((1, 2, 8)), np.zeros((1, 2, 4)), np.zeros((3, 4, 8)),
              np.zeros((3, 4, 4)))
    with pytest.raises(ValueError, match="num_levels"):
        cm.MultiLevelMLACascadeWrapper(0)
