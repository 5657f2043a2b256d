"""fp8 KV caches (torch.float8_e4m3fn / float8_e5m2) on the GPU: the decode
wrapper (rows kernels) and a two-level decode cascade (the shared prefix on
mma_sync, the suffixes on rows) against the float64 reference over the
dequantized cache (fp8 value x k_scale / v_scale), f16 and bf16 queries, with
the tolerances of the f16/bf16 tests; run(k_scale=, v_scale=) per call
(a changed scale is honoured, also in CUDA-graph mode); fp8 queries over fp8
caches on fp8 tensor cores (prefill). Every configuration is in the default
kernel set (32/8 heads, D 128, page 16, NHD pool)."""
import pytest

import cascade_mlir as cm
from gpu_support import (TOL, attention_ref, gpu, merge_ref, random_batch,  # noqa: F401
                         rel_err, tdtype, torch, workspace)

from test_gpu_cascade import concatenated, seed_levels

HQ, HKV, D, PAGE = 32, 8, 128, 16
FP8 = ["float8_e4m3fn", "float8_e5m2"]


def fp8_cache(shape, kv, dev):
    return (torch.randn(*shape, device=dev) * 2).to(getattr(torch, kv))


def dequantized(cache, ks, vs):
    """The cache the kernels compute with: K times k_scale, V times v_scale
    (powers of two: exact in float64)."""
    c = cache.double()
    c[:, 0] *= ks
    c[:, 1] *= vs
    return c


@pytest.mark.parametrize("kv", FP8)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("batch", [3, 300])
@pytest.mark.parametrize("graph", [False, True])
def test_fp8_decode(gpu, kv, dtype, batch, graph):
    num_pages = 4096
    max_pages = max(1, min(2048 // PAGE, num_pages // batch - 1))
    indptr, indices, last = random_batch(batch, PAGE, max_pages, num_pages, empty=(1,))
    cache = fp8_cache((num_pages, 2, PAGE, HKV, D), kv, gpu)
    q = torch.randn(batch, HQ, D, device=gpu).to(tdtype(dtype))
    if graph:
        w = cm.BatchDecodeWithPagedKVCacheWrapper(
            workspace(gpu), "NHD", use_cuda_graph=True,
            paged_kv_indptr_buffer=indptr.to(gpu), paged_kv_indices_buffer=indices.to(gpu),
            paged_kv_last_page_len_buffer=last.to(gpu))
    else:
        w = cm.BatchDecodeWithPagedKVCacheWrapper(workspace(gpu), "NHD")
    w.plan(indptr.to(gpu), indices.to(gpu), last.to(gpu), HQ, HKV, D, PAGE,
           q_data_type=tdtype(dtype), kv_data_type=getattr(torch, kv))
    tol = TOL[dtype]
    for ks, vs in ((0.5, 2.0), (1.0, 1.0), (0.25, 4.0)):
        o, lse = w.run(q, cache, k_scale=ks, v_scale=vs, return_lse=True)
        eo, el = attention_ref(q, dequantized(cache, ks, vs), "NHD", torch.arange(batch + 1),
                               indptr, indices, last, PAGE)
        assert rel_err(o, eo) <= tol and rel_err(lse, el) <= tol, (ks, vs)


# fp8 queries round P to their type before P V (FlashAttention-3's fp8
# prefill): max|o - ref| / max|ref| within this, against the float64
# reference over the dequantized q, K and V (the lse keeps f16's bound).
FP8_QUERY_TOL = {"float8_e4m3fn": 4e-2, "float8_e5m2": 8e-2}


@pytest.mark.parametrize("kv", FP8)
@pytest.mark.parametrize("causal", [True, False])
def test_fp8_query_prefill(gpu, kv, causal):
    """q, K and V in fp8 on fp8 tensor cores (sm_90a's wgmma; the kernel set
    has the key): the output is bf16 (the dtype FlashAttention-3 writes), or
    the `out` given; the kernels take k_scale and v_scale (a q_scale folds
    into sm_scale, another key: not in the prebuilt set)."""
    if torch.cuda.get_device_capability(gpu) != (9, 0):
        pytest.skip("fp8 queries run on sm_90a's fp8 wgmma only; this GPU is "
                    f"sm_{''.join(map(str, torch.cuda.get_device_capability(gpu)))}")
    f8 = getattr(torch, kv)
    b, num_pages = 5, 1024
    indptr, indices, last = random_batch(b, PAGE, 40, num_pages, empty=(2,))
    qo_lens = torch.randint(1, 200, (b,))
    qo_indptr = torch.cat([torch.zeros(1, dtype=torch.int64), qo_lens.cumsum(0)]).int()
    cache = fp8_cache((num_pages, 2, PAGE, HKV, D), kv, gpu)
    q = torch.randn(int(qo_indptr[-1]), HQ, D, device=gpu).to(f8)
    w = cm.BatchPrefillWithPagedKVCacheWrapper(workspace(gpu), "NHD")
    w.plan(qo_indptr.to(gpu), indptr.to(gpu), indices.to(gpu), last.to(gpu), HQ, HKV, D,
           PAGE, causal=causal, q_data_type=f8, kv_data_type=f8)
    ks, vs = 0.25, 2.0
    o, lse = w.run(q, cache, k_scale=ks, v_scale=vs, return_lse=True)
    assert o.dtype == torch.bfloat16 and o.shape == (q.shape[0], HQ, D)
    eo, el = attention_ref(q.double(), dequantized(cache, ks, vs), "NHD", qo_indptr,
                           indptr, indices, last, PAGE, causal=causal)
    assert rel_err(o, eo) <= FP8_QUERY_TOL[kv] and rel_err(lse, el) <= TOL["float16"]
    # An out of the planned dtype is written in place; one of q's (fp8) is
    # refused with the reason.
    out = torch.empty_like(o)
    w.run(q, cache, k_scale=ks, v_scale=vs, out=out)
    assert torch.equal(out, o)
    with pytest.raises((TypeError, ValueError), match="out"):
        w.run(q, cache, out=torch.empty_like(q))


@pytest.mark.parametrize("kv", FP8)
def test_fp8_two_level_decode_cascade(gpu, kv):
    total, levels = seed_levels(gpu)
    cache = fp8_cache((total, 2, PAGE, HKV, D), kv, gpu)
    q = torch.randn(7, HQ, D, device=gpu).half()
    w = cm.MultiLevelCascadeAttentionWrapper(2, workspace(gpu), "NHD")
    w.plain_when_cheaper = False  # the levels' kernels under test
    w.plan(*levels, HQ, HKV, D, PAGE, kv_data_type=getattr(torch, kv))
    o, lse = w.run(q, cache, k_scale=0.5, v_scale=2.0, return_lse=True)
    indptr, indices, last = concatenated(levels)
    eo, el = attention_ref(q, dequantized(cache, 0.5, 2.0), "NHD", torch.arange(8), indptr,
                           indices, last, PAGE)
    assert rel_err(o, eo) <= TOL["float16"] and rel_err(lse, el) <= TOL["float16"]


@pytest.mark.parametrize("length", [8192, 1000])
def test_fp8_shared_prefix_decode_wrapper(gpu, length):
    """The deprecated wrapper with begin_forward(kv_data_type=...): an fp8
    prefix (a view of whole pages, or a padded copy) and fp8 pages."""
    hq, hkv, b = 64, 8, 7
    indptr, indices, last = random_batch(b, PAGE, 30, 256, empty=(3,))
    cache = fp8_cache((256, 2, PAGE, hkv, D), "float8_e4m3fn", gpu)
    ks = fp8_cache((length, hkv, D), "float8_e4m3fn", gpu)
    vs = fp8_cache((length, hkv, D), "float8_e4m3fn", gpu)
    q = torch.randn(b, hq, D, device=gpu).half()
    w = cm.BatchDecodeWithSharedPrefixPagedKVCacheWrapper(workspace(gpu), "NHD")
    w.begin_forward(indptr, indices, last, hq, hkv, D, PAGE, data_type=torch.float16,
                    kv_data_type=torch.float8_e4m3fn)
    o = w.forward(q, ks, vs, cache, k_scale=0.5, v_scale=2.0)
    s0 = attention_ref(q, (ks.double()[None] * 0.5, vs.double()[None] * 2.0), "NHD",
                       torch.tensor([0, b]), torch.tensor([0, 1]), torch.tensor([0]),
                       torch.tensor([length]), length)
    s1 = attention_ref(q, dequantized(cache, 0.5, 2.0), "NHD", torch.arange(b + 1), indptr,
                       indices, last, PAGE)
    eo, _ = merge_ref([s0, s1])
    assert rel_err(o, eo) <= TOL["float16"]


def test_fp8_errors_before_any_launch(gpu):
    indptr, indices, last = random_batch(3, PAGE, 4, 64)
    cache = torch.randn(64, 2, PAGE, HKV, D, device=gpu).half()
    q = torch.randn(3, HQ, D, device=gpu).half()
    w = cm.BatchDecodeWithPagedKVCacheWrapper(workspace(gpu), "NHD")
    w.plan(indptr, indices, last, HQ, HKV, D, PAGE)
    out = torch.full_like(q, float("nan"))
    # On an f16 cache k_scale folds into sm_scale, as FlashInfer 0.5.3 does
    # (test_forward_options.py); a non-positive one is refused.
    with pytest.raises(ValueError, match="k_scale"):
        w.run(q, cache, k_scale=-0.5, out=out)
    assert torch.isnan(out).all()
    # An fp8 plan rejects an f16 cache (the kernels' dtype): a dtype error is
    # a TypeError, as everywhere in the package (test_checks.py).
    w.plan(indptr, indices, last, HQ, HKV, D, PAGE, kv_data_type=torch.float8_e4m3fn)
    with pytest.raises(TypeError,
                       match="paged_kv_cache has dtype float16, expected float8_e4m3fn"):
        w.run(q, cache, out=out)
    assert torch.isnan(out).all()
    with pytest.raises(ValueError, match="k_scale must be finite"):
        w.run(q, cache.to(torch.float8_e4m3fn), k_scale=float("nan"))
