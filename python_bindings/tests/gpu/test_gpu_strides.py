"""Strided q and out on the GPU (issue 41): q sliced from a packed QKV
projection ([tokens, (Hq + 2 Hkv) * D], the first Hq * D columns) and `out`
a view of a larger buffer, as vLLM's and SGLang's FlashInfer backends pass
them. Every kernel family and op reads q and writes o at the views' own
strides: the result is bit-equal to the tidy (contiguous) call's, matches
the float64 reference, and run() allocates nothing on the device (the
caching allocator's count of allocations does not move)."""
import pytest

import cascade_mlir as cm
from gpu_support import (TOL, attention_ref, gpu, merge_ref, random_batch,  # noqa: F401
                         rel_err, torch, workspace)

HQ, HKV, PAGE, POOL = 32, 8, 16, 1024


def packed_q(rows, hq, hkv, d, dtype, dev):
    """(qkv, q): q is the [rows, hq, d] view of the projection's output."""
    qkv = torch.randn(rows, (hq + 2 * hkv) * d, device=dev).to(dtype)
    q = qkv[:, : hq * d].view(rows, hq, d)
    assert not q.is_contiguous() and q.stride() == ((hq + 2 * hkv) * d, d, 1)
    return qkv, q


def out_view(rows, hq, d, dtype, dev):
    """An output view: heads every 2 d elements of a [rows, hq, 2 d] buffer
    (its other half left alone)."""
    big = torch.full((rows, hq, 2 * d), 7.0, device=dev, dtype=dtype)
    return big, big[:, :, d:]


def prefill_qo(indptr, last, step):
    """qo_indptr of a prefill over the pages of (indptr, last): request i
    queries min(its KV length, 1 + step * i) rows."""
    batch = len(last)
    kv_len = [(int(indptr[i + 1] - indptr[i]) - 1) * PAGE + int(last[i]) for i in range(batch)]
    qo = torch.zeros(batch + 1, dtype=torch.int32)
    qo[1:] = torch.cumsum(torch.tensor([min(n, 1 + step * i) for i, n in enumerate(kv_len)]), 0)
    return qo


def allocations():
    torch.cuda.synchronize()
    return torch.cuda.memory_stats()["allocation.all.allocated"]


def check_run(run, q, rows, hq, d, dtype, dev, ref):
    """run(q, out) with the tidy q and a fresh out, then the strided q and
    an out view: bit-equal, float64-close, nothing allocated."""
    tidy = torch.empty(rows, hq, d, device=dev, dtype=dtype)
    run(q.contiguous(), tidy)
    big, o = out_view(rows, hq, d, dtype, dev)
    run(q, o)  # warm-up: a graph or a first launch may allocate
    before = allocations()
    o.zero_()
    run(q, o)
    assert allocations() == before, "run() with strided q / out allocated device memory"
    torch.cuda.synchronize()
    assert torch.equal(o, tidy)
    assert bool((big[:, :, :d] == 7).all()), "the view's neighbours were written"
    eo, _ = ref
    assert rel_err(o, eo) <= TOL[str(dtype).split(".")[1]]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16] if torch else [])
@pytest.mark.parametrize("d", [64, 128, 256])
@pytest.mark.parametrize("split", [False, True])
def test_decode(gpu, dtype, d, split):
    batch = 5 if split else 33  # few requests of many pages split KV
    indptr, indices, last = random_batch(batch, PAGE, 60 if split else 12, POOL)
    cache = torch.randn(POOL, 2, PAGE, HKV, d, device=gpu).to(dtype)
    _, q = packed_q(batch, HQ, HKV, d, dtype, gpu)
    w = cm.BatchDecodeWithPagedKVCacheWrapper(workspace(gpu))
    w.plan(indptr.to(gpu), indices.to(gpu), last.to(gpu), HQ, HKV, d, PAGE,
           q_data_type=dtype, kv_data_type=dtype)
    qo = torch.arange(batch + 1, dtype=torch.int32)
    ref = attention_ref(q, cache, "NHD", qo, indptr, indices, last, PAGE)
    check_run(lambda qq, o: w.run(qq, cache, out=o), q, batch, HQ, d, dtype, gpu, ref)
    assert w._engine.program.copy_fallbacks == 0


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16] if torch else [])
@pytest.mark.parametrize("d", [64, 128, 256])
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("split", [False, True])
def test_paged_prefill(gpu, dtype, d, causal, split):
    batch = 6
    indptr, indices, last = random_batch(batch, PAGE, 24, POOL)
    qo = prefill_qo(indptr, last, 37)
    rows = int(qo[-1])
    cache = (torch.randn(POOL, PAGE, HKV, d, device=gpu).to(dtype),
             torch.randn(POOL, PAGE, HKV, d, device=gpu).to(dtype))
    _, q = packed_q(rows, HQ, HKV, d, dtype, gpu)
    w = cm.BatchPrefillWithPagedKVCacheWrapper(workspace(gpu))
    w.plan(qo.to(gpu), indptr.to(gpu), indices.to(gpu), last.to(gpu), HQ, HKV, d, PAGE,
           causal=causal, q_data_type=dtype, kv_data_type=dtype,
           **({"fixed_split_size": 64} if split else {}))
    ref = attention_ref(q, cache, "NHD", qo, indptr, indices, last, PAGE, causal=causal)
    check_run(lambda qq, o: w.run(qq, cache, out=o), q, rows, HQ, d, dtype, gpu, ref)
    assert w._engine.program.copy_fallbacks == 0


def test_ragged_prefill_and_single_request(gpu):
    """The ragged wrapper (q strided; K and V sliced from the same packed
    projection, which it copies to NHD pages: docs/python.md) and the
    single-request functions."""
    d, dtype = 128, torch.float16
    qo = torch.tensor([0, 17, 40, 41], dtype=torch.int32)
    rows = int(qo[-1])
    qkv, q = packed_q(rows, HQ, HKV, d, dtype, gpu)
    k = qkv[:, HQ * d:(HQ + HKV) * d].view(rows, HKV, d)
    v = qkv[:, (HQ + HKV) * d:].view(rows, HKV, d)
    w = cm.BatchPrefillWithRaggedKVCacheWrapper(workspace(gpu))
    w.plan(qo.to(gpu), qo.to(gpu), HQ, HKV, d, causal=True)
    ones = torch.ones(3, dtype=torch.int32)
    pool = (k.contiguous().view(rows, 1, HKV, d), v.contiguous().view(rows, 1, HKV, d))
    ref = attention_ref(q, pool, "NHD", qo, qo, torch.arange(rows, dtype=torch.int32),
                        ones, 1, causal=True)
    check_run(lambda qq, o: w.run(qq, k, v, out=o), q, rows, HQ, d, dtype, gpu, ref)

    one = slice(int(qo[1]), int(qo[2]))
    n = one.stop - one.start
    tidy = cm.single_prefill_with_kv_cache(q[one].contiguous(), k[one].contiguous(),
                                           v[one].contiguous(), causal=True)
    got = cm.single_prefill_with_kv_cache(q[one], k[one], v[one], causal=True)
    torch.cuda.synchronize()
    assert torch.equal(got, tidy)
    eo, _ = attention_ref(q[one], (k[one].contiguous().view(n, 1, HKV, d),
                                   v[one].contiguous().view(n, 1, HKV, d)), "NHD",
                          torch.tensor([0, n], dtype=torch.int32),
                          torch.tensor([0, n], dtype=torch.int32),
                          torch.arange(n, dtype=torch.int32), torch.ones(1, dtype=torch.int32),
                          1, causal=True)
    assert rel_err(got, eo) <= TOL["float16"]
    # single_decode: q is one row, [Hq, D], a view of a packed row.
    q1 = q[5]
    assert not q1.is_contiguous() or q1.stride() == (d, 1)
    got = cm.single_decode_with_kv_cache(q1, k[one].contiguous(), v[one].contiguous())
    tidy = cm.single_decode_with_kv_cache(q1.contiguous(), k[one].contiguous(),
                                          v[one].contiguous())
    torch.cuda.synchronize()
    assert torch.equal(got, tidy)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16] if torch else [])
def test_two_level_cascade(gpu, dtype):
    """A shared prefix and each request's own pages: the levels accumulate
    into the out view."""
    d, batch, shared = 128, 9, 40
    uind, uidx, ulast = random_batch(batch, PAGE, 10, POOL - shared)
    uidx = uidx + shared
    qo = torch.arange(batch + 1, dtype=torch.int32)
    levels = ([torch.tensor([0, batch], dtype=torch.int32), qo],
              [torch.tensor([0, shared], dtype=torch.int32), uind],
              [torch.arange(shared, dtype=torch.int32), uidx],
              [torch.tensor([PAGE], dtype=torch.int32), ulast])
    cache = torch.randn(POOL, 2, PAGE, HKV, d, device=gpu).to(dtype)
    _, q = packed_q(batch, HQ, HKV, d, dtype, gpu)
    w = cm.MultiLevelCascadeAttentionWrapper(2, workspace(gpu), "NHD")
    w.plain_when_cheaper = False  # the levels' kernels under test
    w.plan(*[[t.to(gpu) for t in lv] for lv in levels], HQ, HKV, d, PAGE,
           q_data_type=dtype, kv_data_type=dtype)
    states = []
    for lv in range(2):
        qo_l = levels[0][lv]
        # Level 0 is one request (the shared prefix) holding every row.
        states.append(attention_ref(q, cache, "NHD", qo_l, levels[1][lv], levels[2][lv],
                                    levels[3][lv], PAGE))
    ref = merge_ref(states)
    check_run(lambda qq, o: w.run(qq, cache, out=o), q, batch, HQ, d, dtype, gpu, ref)


def test_kv_pair_of_pool_views(gpu):
    """(pool[:, 0], pool[:, 1]), as FlashInfer's tests slice a 5-D cache:
    run as the pool itself (no copy), bit-equal to run(q, pool)."""
    d, dtype, batch = 128, torch.float16, 17
    indptr, indices, last = random_batch(batch, PAGE, 12, POOL)
    cache = torch.randn(POOL, 2, PAGE, HKV, d, device=gpu).to(dtype)
    q = torch.randn(batch, HQ, d, device=gpu).to(dtype)
    w = cm.BatchDecodeWithPagedKVCacheWrapper(workspace(gpu))
    w.plan(indptr.to(gpu), indices.to(gpu), last.to(gpu), HQ, HKV, d, PAGE)
    pooled = w.run(q, cache)
    out = torch.empty_like(q)
    before = allocations()
    w.run(q, (cache[:, 0], cache[:, 1]), out=out)
    assert allocations() == before
    torch.cuda.synchronize()
    assert torch.equal(out, pooled)


def test_ragged_hnd_views(gpu):
    """HND K/V ([heads, tokens, dim]) of the ragged wrapper: read in place
    at their strides, bit-equal to the NHD copies' run, no allocation."""
    d, dtype = 128, torch.float16
    qo = torch.tensor([0, 9, 30, 64], dtype=torch.int32)
    rows = int(qo[-1])
    q = torch.randn(rows, HQ, d, device=gpu).to(dtype)
    k = torch.randn(HKV, rows, d, device=gpu).to(dtype)
    v = torch.randn(HKV, rows, d, device=gpu).to(dtype)
    runs = []
    for layout, kk, vv in (("NHD", k.transpose(0, 1).contiguous(), v.transpose(0, 1).contiguous()),
                           ("HND", k, v)):
        w = cm.BatchPrefillWithRaggedKVCacheWrapper(workspace(gpu), layout)
        w.plan(qo.to(gpu), qo.to(gpu), HQ, HKV, d, causal=True)
        out = torch.empty_like(q)
        w.run(q, kk, vv, out=out)
        before = allocations()
        w.run(q, kk, vv, out=out)
        assert allocations() == before
        assert w._engine.program.copy_fallbacks == 0
        runs.append(out)
    torch.cuda.synchronize()
    assert torch.equal(runs[0], runs[1])


LAYERS = 3


def layer_cache(form, layout, d, dtype, dev):
    """(view, tidy): one layer of a cache of every layer, as an engine keeps
    one allocation (`[pages, layers, 2, page, heads, dim][:, l]`), in the
    form given, and its contiguous copy."""
    inner = (PAGE, HKV, d) if layout == "NHD" else (HKV, PAGE, d)
    if form == "pair":
        k_all = torch.randn(POOL, LAYERS, *inner, device=dev).to(dtype)
        v_all = torch.randn(POOL, LAYERS, *inner, device=dev).to(dtype)
        view = (k_all[:, 1], v_all[:, 1])
        return view, (view[0].contiguous(), view[1].contiguous())
    every = torch.randn(POOL, LAYERS, 2, *inner, device=dev).to(dtype)
    pool = every[:, 2]
    assert not pool.is_contiguous() and pool.stride(0) == LAYERS * 2 * PAGE * HKV * d
    if form == "pool":
        return pool, pool.contiguous()
    return (pool[:, 0], pool[:, 1]), pool.contiguous()  # the pool's halves


@pytest.mark.parametrize("form", ["pool", "halves", "pair"])
@pytest.mark.parametrize("layout", ["NHD", "HND"])
@pytest.mark.parametrize("op", ["decode", "decode_split", "prefill", "prefill_split"])
def test_layer_views(gpu, form, layout, op):
    """A paged cache that is one layer of a larger one: the kernels read it in
    place at its page stride (kv_stride_page): bit-equal to the contiguous
    copy's run, float64-close, no copy and no device allocation."""
    d, dtype = 128, torch.bfloat16
    decode, split = op.startswith("decode"), op.endswith("split")
    batch = 5 if split else 13
    indptr, indices, last = random_batch(batch, PAGE, 40 if split else 9, POOL)
    view, tidy = layer_cache(form, layout, d, dtype, gpu)
    if decode:
        qo = torch.arange(batch + 1, dtype=torch.int32)
        w = cm.BatchDecodeWithPagedKVCacheWrapper(workspace(gpu), layout)
        w.plan(indptr.to(gpu), indices.to(gpu), last.to(gpu), HQ, HKV, d, PAGE,
               q_data_type=dtype, kv_data_type=dtype,
               **({"fixed_split_size": 8} if split else {}))
    else:
        qo = prefill_qo(indptr, last, 29)
        w = cm.BatchPrefillWithPagedKVCacheWrapper(workspace(gpu), layout)
        w.plan(qo.to(gpu), indptr.to(gpu), indices.to(gpu), last.to(gpu), HQ, HKV, d, PAGE,
               causal=True, q_data_type=dtype, kv_data_type=dtype,
               **({"fixed_split_size": 8} if split else {}))
    rows = int(qo[-1])
    q = torch.randn(rows, HQ, d, device=gpu).to(dtype)
    want = w.run(q, tidy)
    out = torch.empty_like(q)
    w.run(q, view, out=out)  # warm-up: a graph or a first launch may allocate
    before = allocations()
    out.zero_()
    w.run(q, view, out=out)
    assert allocations() == before, "run() over a cache view allocated device memory"
    torch.cuda.synchronize()
    assert w._engine.program.copy_fallbacks == 0
    assert torch.equal(out, want)
    eo, _ = attention_ref(q, view, layout, qo, indptr, indices, last, PAGE, causal=not decode)
    assert rel_err(out, eo) <= TOL["bfloat16"]
