"""FlashInfer parity beyond the cascade module, on the GPU against the float64
torch reference: single-request attention, the ragged-KV prefill wrapper
(also against the paged wrapper on the same tokens), the CUDA-graph decode
wrapper (captured once, replayed after plan() and fast_decode_plan()), the
page utilities and bit packing (the new wrappers' leak check is in
test_gpu_leak.py). Every
configuration is in the gpu-tests kernel set."""
import functools

import numpy as np
import pytest

import cascade_mlir as cm
from gpu_support import (TOL, attention_ref, gpu, rel_err, tdtype, torch,  # noqa: F401
                         workspace)


def token_ref(q, k, v, qo_indptr, kv_indptr, **opts):
    """The reference over contiguous K/V: one token per page of a pair pool."""
    t, h, d = k.shape
    b = len(kv_indptr) - 1
    cache = (k.reshape(t, 1, h, d), v.reshape(t, 1, h, d))
    return attention_ref(q, cache, "NHD", torch.as_tensor(qo_indptr),
                         torch.as_tensor(kv_indptr), torch.arange(t),
                         torch.ones(b, dtype=torch.int32), 1, **opts)


def ragged_lengths(batch, max_len):
    lens = torch.randint(0, max_len + 1, (batch,))
    indptr = torch.zeros(batch + 1, dtype=torch.int32)
    indptr[1:] = torch.cumsum(lens, 0)
    return indptr


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("layout", ["NHD", "HND"])
@pytest.mark.parametrize("kv_len", [1, 77, 5000])
def test_single_decode(gpu, dtype, layout, kv_len):
    q = torch.randn(32, 128, device=gpu).to(tdtype(dtype))
    k = torch.randn(kv_len, 8, 128, device=gpu).to(tdtype(dtype))
    v = torch.randn(kv_len, 8, 128, device=gpu).to(tdtype(dtype))
    kk, vv = (x.transpose(0, 1).contiguous() if layout == "HND" else x for x in (k, v))
    o, lse = cm.single_decode_with_kv_cache(q, kk, vv, kv_layout=layout, return_lse=True)
    eo, el = token_ref(q[None], k, v, [0, 1], [0, kv_len])
    assert o.shape == (32, 128) and lse.shape == (32,)
    tol = TOL[str(q.dtype).replace("torch.", "")]
    assert rel_err(o, eo[0]) <= tol and rel_err(lse, el[0]) <= tol


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("pos", ["NONE", "ROPE_LLAMA"])
@pytest.mark.parametrize("qo_len,kv_len", [(1, 1), (37, 54), (577, 2048)])
def test_single_prefill(gpu, causal, pos, qo_len, kv_len):
    q = torch.randn(qo_len, 32, 128, device=gpu).half()
    k = torch.randn(kv_len, 8, 128, device=gpu).half()
    v = torch.randn(kv_len, 8, 128, device=gpu).half()
    o, lse = cm.single_prefill_with_kv_cache(q, k, v, causal=causal, pos_encoding_mode=pos,
                                             return_lse=True)
    eo, el = token_ref(q, k, v, [0, qo_len], [0, kv_len], causal=causal, pos_encoding=pos)
    assert rel_err(o, eo) <= TOL["float16"] and rel_err(lse, el) <= TOL["float16"]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("batch", [7, 64])
def test_ragged_prefill_matches_reference_and_paged_wrapper(gpu, causal, batch):
    kv_indptr = ragged_lengths(batch, 700)
    q_lens = torch.minimum(torch.randint(1, 130, (batch,)), kv_indptr.diff().clamp(min=1))
    qo_indptr = torch.zeros(batch + 1, dtype=torch.int32)
    qo_indptr[1:] = torch.cumsum(q_lens, 0)
    t, rows = int(kv_indptr[-1]), int(qo_indptr[-1])
    q = torch.randn(rows, 32, 128, device=gpu).half()
    k = torch.randn(t, 8, 128, device=gpu).half()
    v = torch.randn(t, 8, 128, device=gpu).half()
    w = cm.BatchPrefillWithRaggedKVCacheWrapper(workspace(gpu))
    w.plan(qo_indptr.to(gpu), kv_indptr.to(gpu), 32, 8, 128, causal=causal)
    o, lse = w.run(q, k, v, return_lse=True)
    eo, el = token_ref(q, k, v, qo_indptr, kv_indptr, causal=causal)
    assert rel_err(o, eo) <= TOL["float16"] and rel_err(lse, el) <= TOL["float16"]
    # The same tokens as a page-size-1 pool through the paged wrapper: its
    # pair kernels load the identity page ids the ragged kernels compute, in
    # the same tiles, so the same bits.
    p = cm.BatchPrefillWithPagedKVCacheWrapper(workspace(gpu))
    p.plan(qo_indptr, kv_indptr, torch.arange(t, dtype=torch.int32),
           torch.ones(batch, dtype=torch.int32), 32, 8, 128, 1, causal=causal)
    po = p.run(q, (k.reshape(t, 1, 8, 128), v.reshape(t, 1, 8, 128)))
    assert torch.equal(po, o)


def test_ragged_prefill_in_cuda_graph_mode_replays_after_replan(gpu):
    batch = 5
    qo_buf = torch.empty(batch + 1, dtype=torch.int32, device=gpu)
    kv_buf = torch.empty(batch + 1, dtype=torch.int32, device=gpu)
    w = cm.BatchPrefillWithRaggedKVCacheWrapper(workspace(gpu), use_cuda_graph=True,
                                                qo_indptr_buf=qo_buf, kv_indptr_buf=kv_buf)
    k = torch.randn(4000, 8, 128, device=gpu).half()
    v = torch.randn(4000, 8, 128, device=gpu).half()
    q = torch.randn(300, 32, 128, device=gpu).half()
    qo1 = torch.tensor([0, 60, 120, 180, 240, 300], dtype=torch.int32)
    kv1 = torch.tensor([0, 800, 1600, 2400, 3200, 4000], dtype=torch.int32)
    w.plan(qo1, kv1, 32, 8, 128, causal=True)
    out = torch.empty_like(q)
    w.run(q, k, v, out=out)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        w.run(q, k, v, out=out)
    kv2 = torch.tensor([0, 100, 1000, 1100, 3900, 4000], dtype=torch.int32)
    w.plan(qo1, kv2, 32, 8, 128, causal=True)
    g.replay()
    torch.cuda.synchronize()
    eo, _ = token_ref(q, k, v, qo1, kv2, causal=True)
    assert rel_err(out, eo) <= TOL["float16"]


@pytest.mark.parametrize("page", [1, 16])
def test_cuda_graph_decode_wrapper_and_fast_decode_plan(gpu, page):
    batch, hq, hkv, d = 12, 32, 8, 128
    pages_per_seq = 2048 // page
    total = batch * pages_per_seq
    bufs = (torch.empty(batch + 1, dtype=torch.int32, device=gpu),
            torch.empty(total, dtype=torch.int32, device=gpu),
            torch.empty(batch, dtype=torch.int32, device=gpu))
    w = cm.CUDAGraphBatchDecodeWithPagedKVCacheWrapper(workspace(gpu), *bufs)
    cache = torch.randn(total, 2, page, hkv, d, device=gpu).half()
    q = torch.randn(batch, hq, d, device=gpu).half()
    w.plan(torch.arange(batch + 1, dtype=torch.int32), torch.arange(batch, dtype=torch.int32),
           torch.full((batch,), page, dtype=torch.int32), hq, hkv, d, page)
    o = w.run(q, cache)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        o = w.run(q, cache)
    w.plan = functools.partial(cm.fast_decode_plan, w)
    for step, n in enumerate((3, pages_per_seq)):
        indptr = torch.arange(batch + 1, dtype=torch.int32) * n
        indices = torch.randperm(total)[:batch * n].int()
        last = torch.randint(1, page + 1, (batch,), dtype=torch.int32)
        w.plan(indptr, indices, last, hq, hkv, d, page,
               global_override_indptr_cpu=indptr if step else None)
        g.replay()
        torch.cuda.synchronize()
        eo, _ = attention_ref(q, cache, "NHD", torch.arange(batch + 1), indptr, indices,
                              last, page)
        assert rel_err(o, eo) <= TOL["float16"], f"replay {step}"
    with pytest.raises(ValueError, match="fixed at 12"):
        w.plan(torch.arange(batch, dtype=torch.int32), torch.arange(batch - 1).int(),
               torch.ones(batch - 1, dtype=torch.int32), hq, hkv, d, page)


@pytest.mark.parametrize("layout", ["NHD", "HND"])
def test_append_paged_kv_cache_then_decode(gpu, layout):
    """Tokens appended with the utilities are what the decode wrapper reads."""
    page, hkv, d, batch = 16, 8, 128, 9
    kv_len = torch.randint(1, 200, (batch,))
    pages = (kv_len + page - 1) // page
    kv_indptr = torch.zeros(batch + 1, dtype=torch.int32)
    kv_indptr[1:] = torch.cumsum(pages, 0)
    num_pages = int(kv_indptr[-1])
    kv_indices = torch.randperm(num_pages).int().to(gpu)
    last = ((kv_len - 1) % page + 1).int()
    k = torch.randn(int(kv_len.sum()), hkv, d, device=gpu).half()
    v = torch.randn_like(k)
    shape = (num_pages, 2, page, hkv, d) if layout == "NHD" else (num_pages, 2, hkv, page, d)
    cache = torch.zeros(shape, device=gpu, dtype=torch.half)
    append_indptr = torch.zeros(batch + 1, dtype=torch.int32)
    append_indptr[1:] = torch.cumsum(kv_len, 0)
    seq_lens = cm.get_seq_lens(kv_indptr.to(gpu), last.to(gpu), page)
    assert seq_lens.tolist() == kv_len.tolist()
    bi, pos = cm.get_batch_indices_positions(append_indptr.to(gpu), seq_lens, k.shape[0])
    assert bi.device == gpu and pos.dtype == torch.int32
    cm.append_paged_kv_cache(k, v, bi, pos, cache, kv_indices, kv_indptr.to(gpu),
                             last.to(gpu), layout)
    q = torch.randn(batch, 32, d, device=gpu).half()
    o = cm.BatchDecodeWithPagedKVCacheWrapper(workspace(gpu), layout)
    o.plan(kv_indptr, kv_indices, last, 32, hkv, d, page)
    got = o.run(q, cache)
    eo, _ = token_ref(q, k, v, torch.arange(batch + 1), append_indptr)
    assert rel_err(got, eo) <= TOL["float16"]


@pytest.mark.parametrize("order", ["big", "little"])
def test_packbits_on_the_gpu_equal_numpy(gpu, order):
    bits = torch.randint(0, 2, (1001,), device=gpu).bool()
    host = bits.cpu().numpy()
    assert np.array_equal(cm.packbits(bits, order).cpu().numpy(),
                          np.packbits(host, bitorder=order))
    indptr = torch.tensor([0, 7, 7, 500, 1001], dtype=torch.int32, device=gpu)
    y, new = cm.segment_packbits(bits, indptr, order)
    ey, enew = cm.segment_packbits(host, indptr.cpu().numpy(), order)
    assert y.device == gpu and np.array_equal(y.cpu().numpy(), ey)
    assert new.cpu().tolist() == list(enew)

