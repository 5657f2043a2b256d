"""FlashInfer parity beyond the cascade module, on the CPU reference:
single-request attention, the ragged-KV prefill wrapper, the page utilities,
bit packing, the CUDA-graph decode wrapper's checks and fast_decode_plan,
and the clear errors of what is not supported (custom masks, multi-item
scoring)."""
import functools

import numpy as np
import pytest

import cascade_mlir as cm
from cascade_mlir.masks import unpack_segments


def attention(q, k, v, causal=False, mask=None, sm_scale=None):
    """float64 attention of q [L, Hq, D] over k, v [T, Hkv, D] (GQA);
    causal aligns the queries with the last keys; lse in base 2."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    rows, hq, d = q.shape
    t, hkv = k.shape[:2]
    g = hq // hkv
    scale = 1 / np.sqrt(d) if sm_scale is None else sm_scale
    o = np.zeros((rows, hq, d))
    lse = np.full((rows, hq), -np.inf)
    for i in range(rows):
        seen = np.ones(t, bool)
        if causal:
            seen &= np.arange(t) <= t - rows + i
        if mask is not None:
            seen &= mask[i]
        if not seen.any():
            continue
        for h in range(hq):
            x = (k[seen, h // g] @ q[i, h]) * scale * np.log2(np.e)
            m = x.max()
            w = np.exp2(x - m)
            o[i, h] = w @ v[seen, h // g] / w.sum()
            lse[i, h] = m + np.log2(w.sum())
    return o, lse


def randn(rng, *shape):
    return rng.standard_normal(shape).astype(np.float16)


@pytest.mark.parametrize("layout", ["NHD", "HND"])
def test_single_decode_matches_float64(rng, layout):
    q, k, v = randn(rng, 8, 64), randn(rng, 45, 2, 64), randn(rng, 45, 2, 64)
    kk, vv = (np.ascontiguousarray(x.transpose(1, 0, 2)) if layout == "HND" else x
              for x in (k, v))
    o, lse = cm.single_decode_with_kv_cache(q, kk, vv, kv_layout=layout, return_lse=True)
    eo, el = attention(q[None], k, v)
    assert o.shape == (8, 64) and lse.shape == (8,) and o.dtype == np.float16
    np.testing.assert_allclose(o, eo[0], atol=2e-3)
    np.testing.assert_allclose(lse, el[0], rtol=1e-5)


def test_single_decode_scales_fold_as_flashinfer(rng):
    q, k, v = randn(rng, 4, 32), randn(rng, 20, 4, 32), randn(rng, 20, 4, 32)
    o = cm.single_decode_with_kv_cache(q, k, v, q_scale=0.5, k_scale=0.25, v_scale=2.0)
    eo, _ = attention(q[None], k, v, sm_scale=0.5 * 0.25 / np.sqrt(32))
    np.testing.assert_allclose(o, 2.0 * eo[0], atol=4e-3)


@pytest.mark.parametrize("causal", [False, True])
def test_single_prefill_matches_float64(rng, causal):
    q, k, v = randn(rng, 13, 8, 64), randn(rng, 40, 2, 64), randn(rng, 40, 2, 64)
    o, lse = cm.single_prefill_with_kv_cache(q, k, v, causal=causal, return_lse=True)
    eo, el = attention(q, k, v, causal=causal)
    np.testing.assert_allclose(o, eo, atol=2e-3)
    np.testing.assert_allclose(lse, el, rtol=1e-5)
    o2 = cm.single_prefill_with_kv_cache_return_lse(q, k, v, causal=causal)[0]
    np.testing.assert_array_equal(o, o2)


def test_single_prefill_rejects_what_it_does_not_support(rng):
    q, k = randn(rng, 3, 4, 32), randn(rng, 9, 4, 32)
    with pytest.raises(cm.UnsupportedFeatureError, match="scale_q.*fp8"):
        cm.single_prefill_with_kv_cache(q, k, k, scale_q=np.ones(4, np.float32))
    with pytest.raises(ValueError, match="custom_mask has 26 entries; the batch's "
                       "sum\\(qo_len \\* kv_len\\) is 27"):
        cm.single_prefill_with_kv_cache(q, k, k, custom_mask=np.ones(26, bool))
    with pytest.raises(ValueError, match="k has shape .* but v"):
        cm.single_prefill_with_kv_cache(q, k, k[:4])
    with pytest.raises(ValueError, match="q must be"):
        cm.single_prefill_with_kv_cache(q[0], k, k)


@pytest.mark.parametrize("layout,causal", [("NHD", True), ("NHD", False), ("HND", True)])
def test_ragged_prefill_equals_per_request_attention(rng, layout, causal):
    qo = np.array([0, 5, 5, 12, 13], np.int32)
    kv = np.array([0, 37, 40, 60, 60 + 1], np.int32)
    q, k, v = randn(rng, 13, 8, 64), randn(rng, 61, 2, 64), randn(rng, 61, 2, 64)
    kk, vv = (np.ascontiguousarray(x.transpose(1, 0, 2)) if layout == "HND" else x
              for x in (k, v))
    w = cm.BatchPrefillWithRaggedKVCacheWrapper(np.empty(0, np.uint8), layout)
    w.plan(qo, kv, 8, 2, 64, causal=causal)
    o, lse = w.run(q, kk, vv, return_lse=True)
    for i in range(4):
        a, b = qo[i], qo[i + 1]
        eo, el = attention(q[a:b], k[kv[i]:kv[i + 1]], v[kv[i]:kv[i + 1]], causal=causal)
        np.testing.assert_allclose(o[a:b], eo, atol=2e-3)
        np.testing.assert_allclose(lse[a:b], el, rtol=1e-5)
    # FlashInfer's forward_return_lse() sets the mask (causal=False unless
    # passed): with plan()'s, the same result as run().
    np.testing.assert_array_equal(w.forward_return_lse(q, kk, vv, causal=causal)[0], o)


def test_ragged_prefill_errors(rng):
    w = cm.BatchPrefillWithRaggedKVCacheWrapper(np.empty(0, np.uint8))
    qo, kv = np.array([0, 2, 4], np.int32), np.array([0, 3, 9], np.int32)
    with pytest.raises(cm.NotPlannedError):
        w.run(randn(rng, 4, 4, 32), randn(rng, 9, 4, 32), randn(rng, 9, 4, 32))
    with pytest.raises(cm.UnsupportedFeatureError, match="multi-item scoring"):
        w.plan(qo, kv, 4, 4, 32, prefix_len_ptr=np.zeros(2, np.int32))
    with pytest.raises(ValueError, match="packed_custom_mask has 2 bytes; the batch's "
                       "masks need 3"):
        w.plan(qo, kv, 4, 4, 32, packed_custom_mask=np.zeros(2, np.uint8))
    with pytest.raises(cm.UnsupportedFeatureError, match="auto_cascade"):
        w.plan(qo, kv, 4, 4, 32, packed_custom_mask=np.zeros(3, np.uint8),
               auto_cascade=True)
    with pytest.raises(ValueError, match="must start at 0 and not decrease"):
        w.plan(qo, np.array([0, 5, 3], np.int32), 4, 4, 32)
    with pytest.raises(ValueError, match="head_dim_vo"):
        w.plan(qo, kv, 4, 4, 32, head_dim_vo=64)
    w.plan(qo, kv, 4, 4, 32)
    with pytest.raises(ValueError, match="hold 8 tokens; plan\\(\\)'s kv_indptr\\[-1\\] is 9"):
        w.run(randn(rng, 4, 4, 32), randn(rng, 8, 4, 32), randn(rng, 8, 4, 32))
    with pytest.raises(TypeError, match="positionally"):
        w.run(randn(rng, 4, 4, 32), randn(rng, 9, 4, 32), randn(rng, 9, 4, 32), None)


@pytest.mark.parametrize("packed", [False, True])
def test_custom_masks_on_the_cpu_reference(rng, packed):
    """FlashInfer's layout: request i's [qo_len, kv_len] mask row-major;
    custom_mask replaces causal. Single, ragged and paged prefill agree
    with float64 attention under the mask."""
    qo = np.array([0, 3, 3, 8], np.int32)
    kv = np.array([0, 10, 14, 31], np.int32)
    q, k, v = randn(rng, 8, 4, 32), randn(rng, 31, 2, 32), randn(rng, 31, 2, 32)
    masks = [rng.random((qo[i + 1] - qo[i], kv[i + 1] - kv[i])) < 0.6 for i in range(3)]
    masks[2][1] = False  # a row that sees nothing: the empty state
    flat = np.concatenate([m.reshape(-1) for m in masks])
    bits = np.array([0] + [m.size for m in masks]).cumsum()
    arg = {"packed_custom_mask": cm.segment_packbits(flat, bits, "little")[0]} if packed \
        else {"custom_mask": flat}
    w = cm.BatchPrefillWithRaggedKVCacheWrapper(np.empty(0, np.uint8))
    w.plan(qo, kv, 4, 2, 32, causal=True, **arg)
    o, lse = w.run(q, k, v, return_lse=True)
    # The same tokens as pages of 4 through the paged wrapper.
    p = cm.BatchPrefillWithPagedKVCacheWrapper(np.empty(0, np.uint8))
    pages = [np.arange(a, b) for a, b in zip(kv[:-1], kv[1:])]
    pool = np.zeros((12, 2, 4, 2, 32), np.float16)
    indptr, indices, last, nxt = [0], [], [], 0
    for toks in pages:
        n = -(-toks.size // 4)
        for j in range(n):
            chunk = toks[4 * j:4 * j + 4]
            pool[nxt, 0, :chunk.size], pool[nxt, 1, :chunk.size] = k[chunk], v[chunk]
            indices.append(nxt)
            nxt += 1
        indptr.append(len(indices))
        last.append(toks.size - 4 * (n - 1) if n else 1)
    p.plan(qo, np.array(indptr), np.array(indices), np.array(last), 4, 2, 32, 4, **arg)
    np.testing.assert_array_equal(p.run(q, pool), o)
    for i in range(3):
        a, b = qo[i], qo[i + 1]
        if a == b:
            continue
        eo, el = attention(q[a:b], k[kv[i]:kv[i + 1]], v[kv[i]:kv[i + 1]], mask=masks[i])
        np.testing.assert_allclose(o[a:b], eo, atol=2e-3)
        np.testing.assert_allclose(lse[a:b], el, rtol=1e-5)
        single = cm.single_prefill_with_kv_cache(q[a:b], k[kv[i]:kv[i + 1]],
                                                 v[kv[i]:kv[i + 1]], custom_mask=masks[i])
        np.testing.assert_array_equal(single, o[a:b])
    assert np.all(lse[qo[2] + 1] == -np.inf) and np.all(o[qo[2] + 1] == 0)


def test_a_causal_custom_mask_equals_causal(rng):
    q, k, v = randn(rng, 5, 4, 32), randn(rng, 12, 4, 32), randn(rng, 12, 4, 32)
    tril = np.tril(np.ones((5, 12), bool), k=12 - 5)
    np.testing.assert_array_equal(
        cm.single_prefill_with_kv_cache(q, k, v, custom_mask=tril),
        cm.single_prefill_with_kv_cache(q, k, v, causal=True))


def test_paged_prefill_rejects_multi_item_scoring():
    w = cm.BatchPrefillWithPagedKVCacheWrapper(np.empty(0, np.uint8))
    args = (np.array([0, 2]), np.array([0, 1]), np.array([0]), np.array([3]), 4, 4, 32, 16)
    with pytest.raises(cm.UnsupportedFeatureError,
                       match="token_pos_in_items_ptr, token_pos_in_items_len"):
        w.plan(*args, token_pos_in_items_ptr=np.zeros(2), token_pos_in_items_len=2)
    with pytest.raises(cm.UnsupportedFeatureError, match="custom masks"):
        cm.BatchPrefillWithPagedKVCacheWrapper(np.empty(0, np.uint8),
                                               custom_mask_buf=np.zeros(8, np.uint8))


def test_batch_indices_positions_and_seq_lens():
    # FlashInfer's documented example.
    b, p = cm.get_batch_indices_positions(np.array([0, 1, 3, 6, 10], np.int32),
                                          np.array([5, 5, 5, 5]), 10)
    assert b.dtype == np.int32 and p.dtype == np.int32
    assert b.tolist() == [0, 1, 1, 2, 2, 2, 3, 3, 3, 3]
    assert p.tolist() == [4, 3, 4, 2, 3, 4, 1, 2, 3, 4]
    # Empty requests and a request with no page (length = its last page).
    assert cm.get_seq_lens(np.array([0, 2, 2, 5]), np.array([3, 1, 4]), 4).tolist() == \
        [7, 1, 12]
    with pytest.raises(ValueError, match="seq_lens has 3 entries, expected batch_size = 2"):
        cm.get_batch_indices_positions(np.array([0, 1, 3]), np.array([1, 2, 3]), 3)


@pytest.mark.parametrize("layout,pair", [("NHD", False), ("HND", False), ("NHD", True),
                                         ("HND", True)])
def test_append_paged_kv_cache_writes_each_token_to_its_page_slot(rng, layout, pair):
    page, h, d = 4, 2, 8
    kv_indptr = np.array([0, 2, 3, 6], np.int32)
    kv_indices = np.array([5, 1, 0, 2, 4, 3], np.int32)
    last = np.array([3, 4, 1], np.int32)
    seq_lens = cm.get_seq_lens(kv_indptr, last, page)  # [7, 4, 9]
    append_indptr = np.array([0, 3, 3, 8], np.int32)  # 3, 0, 5 new tokens
    nnz = 8
    key, val = rng.standard_normal((nnz, h, d)), rng.standard_normal((nnz, h, d))
    shape = (6, page, h, d) if layout == "NHD" else (6, h, page, d)
    cache = ((np.zeros(shape), np.zeros(shape)) if pair
             else np.zeros((6, 2) + shape[1:]))
    b, pos = cm.get_batch_indices_positions(append_indptr, seq_lens, nnz)
    cm.append_paged_kv_cache(key, val, b, pos, cache, kv_indices, kv_indptr, last, layout)
    kc, vc = cache if pair else (cache[:, 0], cache[:, 1])
    written = 0
    for t in range(nnz):
        req = int(np.searchsorted(append_indptr[1:], t, side="right"))
        position = seq_lens[req] - (append_indptr[req + 1] - append_indptr[req]) + \
            (t - append_indptr[req])
        pg = kv_indices[kv_indptr[req] + position // page]
        slot = position % page
        got_k = kc[pg, slot] if layout == "NHD" else kc[pg, :, slot]
        got_v = vc[pg, slot] if layout == "NHD" else vc[pg, :, slot]
        np.testing.assert_array_equal(got_k, key[t])
        np.testing.assert_array_equal(got_v, val[t])
        written += 1
    assert written == nnz
    # Nothing else was written.
    assert np.count_nonzero(kc) == nnz * h * d and np.count_nonzero(vc) == nnz * h * d


def test_append_paged_mla_kv_cache_writes_each_token_to_its_page_slot(rng):
    """The MLA cache (3-D latent and rotary pages), through the same page
    and slot arithmetic, against positions computed here."""
    page, dc, dp = 4, 16, 8
    kv_indptr = np.array([0, 2, 3, 6], np.int32)
    kv_indices = np.array([5, 1, 0, 2, 4, 3], np.int32)
    last = np.array([3, 4, 1], np.int32)
    seq_lens = cm.get_seq_lens(kv_indptr, last, page)
    append_indptr = np.array([0, 3, 3, 8], np.int32)
    ckv_new, kpe_new = rng.standard_normal((8, dc)), rng.standard_normal((8, dp))
    ckv, kpe = np.zeros((6, page, dc)), np.zeros((6, page, dp))
    b, pos = cm.get_batch_indices_positions(append_indptr, seq_lens, 8)
    cm.page.append_paged_mla_kv_cache(ckv_new, kpe_new, b, pos, ckv, kpe, kv_indices,
                                      kv_indptr, last)
    for t in range(8):
        req = int(np.searchsorted(append_indptr[1:], t, side="right"))
        position = seq_lens[req] - (append_indptr[req + 1] - append_indptr[req]) + \
            (t - append_indptr[req])
        pg, slot = kv_indices[kv_indptr[req] + position // page], position % page
        np.testing.assert_array_equal(ckv[pg, slot], ckv_new[t])
        np.testing.assert_array_equal(kpe[pg, slot], kpe_new[t])
    assert np.count_nonzero(ckv) == 8 * dc and np.count_nonzero(kpe) == 8 * dp
    with pytest.raises(ValueError, match="same pages"):
        cm.page.append_paged_mla_kv_cache(ckv_new, kpe_new, b, pos, ckv, kpe[:5],
                                          kv_indices, kv_indptr, last)


@pytest.mark.parametrize("order", ["big", "little"])
def test_packbits_as_numpy_and_segments_round_trip(rng, order):
    bits = rng.integers(0, 2, 37).astype(bool)
    np.testing.assert_array_equal(cm.packbits(bits, order), np.packbits(bits, bitorder=order))
    indptr = np.array([0, 5, 5, 21, 37])
    y, new = cm.segment_packbits(bits, indptr, order)
    assert new.tolist() == [0, 1, 1, 3, 5]
    masks = unpack_segments(y, new, [(1, 5), (0, 0), (4, 4), (2, 8)], order)
    np.testing.assert_array_equal(np.concatenate([m.reshape(-1) for m in masks]), bits)
    with pytest.raises(ValueError, match="request 1: its packed mask has 0 bytes"):
        unpack_segments(y, new, [(1, 5), (1, 1), (4, 4), (2, 8)], order)
    with pytest.raises(ValueError, match="bitorder"):
        cm.packbits(bits, "middle")


def test_cuda_graph_wrapper_needs_cuda_and_checks_buffers():
    i32 = functools.partial(np.zeros, dtype=np.int32)
    with pytest.raises(ValueError, match="indptr_buffer has 3 entries.*needs 4"):
        cm.CUDAGraphBatchDecodeWithPagedKVCacheWrapper(np.empty(0, np.uint8), i32(3),
                                                       i32(10), i32(3))
    with pytest.raises(ValueError, match="use_cuda_graph needs a CUDA"):
        cm.CUDAGraphBatchDecodeWithPagedKVCacheWrapper(np.empty(0, np.uint8), i32(4),
                                                       i32(10), i32(3))


def test_fast_decode_plan_is_plan(rng):
    indptr = np.array([0, 2, 3], np.int32)
    indices, last = np.array([0, 1, 2], np.int32), np.array([3, 4], np.int32)
    cache = randn(rng, 3, 2, 4, 2, 32)
    q = randn(rng, 2, 4, 32)
    w = cm.BatchDecodeWithPagedKVCacheWrapper(np.empty(0, np.uint8))
    w.plan(indptr, indices, last, 4, 2, 32, 4)
    expect = w.run(q, cache)
    w2 = cm.BatchDecodeWithPagedKVCacheWrapper(np.empty(0, np.uint8))
    w2.plan = functools.partial(cm.fast_decode_plan, w2)
    w2.plan(np.array([9, 9, 9]), indices, last, 4, 2, 32, 4,
            global_override_indptr_cpu=indptr)  # the override wins
    np.testing.assert_array_equal(w2.run(q, cache), expect)
    with pytest.raises(TypeError, match="BatchDecodeWithPagedKVCacheWrapper"):
        cm.fast_decode_plan(object(), indptr, indices, last, 4, 2, 32, 4)
