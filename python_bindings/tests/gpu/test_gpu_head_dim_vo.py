"""head_dim_qk != head_dim_vo on the GPU (DeepSeek's prefill before MLA
absorption: q and k of head_dim 192, v and the output of 128): the paged
prefill wrapper over a (k_cache, v_cache) pair (NHD and HND, page 16 and
1), the ragged prefill wrapper (contiguous K/V, HND views, v sliced from a
packed projection) and single_prefill_with_kv_cache, causal and not, f16
and bf16, 192/128, 128/64 and 96/64, GQA 16/4 and MHA, against the float64
torch reference (gpu_support.attention_ref, whose v may have a head_dim of
its own). Every configuration is in the gpu-tests kernel set."""

import pytest

import cascade_mlir as cm
from gpu_support import (TOL, attention_ref, gpu, random_batch, rel_err, tdtype,  # noqa: F401
                         torch, workspace)

#: (head_dim_qk, head_dim_vo)
DIMS = [(192, 128), (128, 64), (96, 64)]


def ragged_ref(q, k, v, qo_indptr, kv_indptr, causal=False):
    """gpu_support.attention_ref over contiguous K/V (k [tokens, Hkv, D], v
    [tokens, Hkv, Dv]) as one-token pages of a (k, v) pair, in order."""
    n = k.shape[0]
    return attention_ref(q, (k[:, None], v[:, None]), "NHD", qo_indptr, kv_indptr,
                         torch.arange(n, dtype=torch.int32),
                         torch.ones(len(qo_indptr) - 1, dtype=torch.int32), 1, causal)


def check_close(o, lse, eo, el, dtype):
    tol = TOL[dtype]
    assert rel_err(o, eo) <= tol, rel_err(o, eo)
    assert rel_err(lse, el) <= tol, rel_err(lse, el)


def lengths_indptr(lens, dev):
    t = torch.zeros(len(lens) + 1, dtype=torch.int32)
    t[1:] = torch.cumsum(torch.tensor(lens), 0)
    return t.to(dev)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("page", [16, 1])
@pytest.mark.parametrize("layout", ["NHD", "HND"])
def test_paged_prefill_pair(gpu, layout, page, causal, dtype):
    paged_pair_case(gpu, layout, page, causal, dtype)


@pytest.mark.parametrize("causal", [False, True])
def test_paged_prefill_pair_split_kv(gpu, causal):
    """Split-KV (every request in chunks of 2 pages): the partial states in
    the workspace and their merge have v's head_dim."""
    paged_pair_case(gpu, "NHD", 16, causal, "bfloat16", fixed_split_size=2)


def paged_pair_case(gpu, layout, page, causal, dtype, **plan_options):
    hq, hkv, d, dv = 16, 4, 192, 128
    dt = tdtype(dtype)
    num_pages = 4096 // page
    kv_indptr, kv_indices, last = random_batch(5, page, max(1, 600 // page), num_pages,
                                               empty=(3,))
    kv_lens = [(int(kv_indptr[i + 1] - kv_indptr[i]) - 1) * page + int(last[i])
               if kv_indptr[i + 1] > kv_indptr[i] else 0 for i in range(5)]
    qo_lens = [min(n, x) for n, x in zip(kv_lens, [1, 37, 300, 0, 129])]
    qo_indptr = lengths_indptr(qo_lens, "cpu")
    shape = (lambda dim: (num_pages, page, hkv, dim)) if layout == "NHD" else \
        (lambda dim: (num_pages, hkv, page, dim))
    k_cache = torch.randn(*shape(d), device=gpu).to(dt)
    v_cache = torch.randn(*shape(dv), device=gpu).to(dt)
    q = torch.randn(int(qo_indptr[-1]), hq, d, device=gpu).to(dt)
    w = cm.BatchPrefillWithPagedKVCacheWrapper(workspace(gpu), layout)
    w.plan(qo_indptr.to(gpu), kv_indptr.to(gpu), kv_indices.to(gpu), last.to(gpu), hq, hkv,
           d, page, head_dim_vo=dv, causal=causal, q_data_type=dt, kv_data_type=dt,
           **plan_options)
    o, lse = w.run(q, (k_cache, v_cache), return_lse=True)
    assert o.shape == (q.shape[0], hq, dv) and o.dtype == dt
    eo, el = attention_ref(q, (k_cache, v_cache), layout, qo_indptr, kv_indptr, kv_indices,
                           last, page, causal)
    check_close(o, lse, eo, el, dtype)
    # out= / lse= given (a view of a larger buffer for out): the same values.
    big = torch.empty(q.shape[0], hq, 2 * dv, device=gpu, dtype=dt)
    out, lse2 = big[:, :, dv:], torch.empty_like(lse)
    w.run(q, (k_cache, v_cache), out=out, lse=lse2)
    assert torch.equal(out, o) and torch.equal(lse2, lse)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(
    "heads,dims",
    # GQA at every pair of dims; MHA at DeepSeek's (192 / 128) only.
    [pytest.param(h, dims, id=f"h{h[0]}x{h[1]}-{dims[0]}x{dims[1]}")
     for h, dims in [((16, 4), dims) for dims in DIMS] + [((16, 16), (192, 128))]])
def test_ragged_prefill(gpu, heads, dims, causal, dtype):
    (hq, hkv), (d, dv) = heads, dims
    dt = tdtype(dtype)
    kv_lens = [0, 1, 77, 1000, 350]
    qo_lens = [0, 1, 20, 1000, 3]
    qo_indptr, kv_indptr = lengths_indptr(qo_lens, gpu), lengths_indptr(kv_lens, gpu)
    k = torch.randn(sum(kv_lens), hkv, d, device=gpu).to(dt)
    v = torch.randn(sum(kv_lens), hkv, dv, device=gpu).to(dt)
    q = torch.randn(sum(qo_lens), hq, d, device=gpu).to(dt)
    w = cm.BatchPrefillWithRaggedKVCacheWrapper(workspace(gpu), "NHD")
    w.plan(qo_indptr, kv_indptr, hq, hkv, d, head_dim_vo=dv, causal=causal,
           q_data_type=dt, kv_data_type=dt)
    o, lse = w.run(q, k, v, return_lse=True)
    assert o.shape == (q.shape[0], hq, dv)
    eo, el = ragged_ref(q, k, v, qo_indptr.cpu(), kv_indptr.cpu(), causal)
    check_close(o, lse, eo, el, dtype)


@pytest.mark.parametrize("kv", ["hnd", "packed"])
def test_ragged_prefill_views(gpu, kv):
    """K and V as views: HND input (transposed, each with strides of its
    own) and v sliced from a packed [tokens, Hkv, 192 + 128] projection."""
    hq, hkv, d, dv = 16, 4, 192, 128
    kv_lens, qo_lens = [300, 45, 512], [300, 5, 17]
    qo_indptr, kv_indptr = lengths_indptr(qo_lens, gpu), lengths_indptr(kv_lens, gpu)
    n = sum(kv_lens)
    if kv == "hnd":
        k_in = torch.randn(hkv, n, d, device=gpu).half()
        v_in = torch.randn(hkv, n, dv, device=gpu).half()
        k, v = k_in.transpose(0, 1), v_in.transpose(0, 1)
        layout = "HND"
    else:
        packed = torch.randn(n, hkv, d + dv, device=gpu).half()
        k_in, v_in = packed[:, :, :d], packed[:, :, d:]
        k, v = k_in, v_in
        layout = "NHD"
    q = torch.randn(sum(qo_lens), hq, d, device=gpu).half()
    w = cm.BatchPrefillWithRaggedKVCacheWrapper(workspace(gpu), layout)
    w.plan(qo_indptr, kv_indptr, hq, hkv, d, head_dim_vo=dv, causal=True)
    o, lse = w.run(q, k_in, v_in, return_lse=True)
    eo, el = ragged_ref(q, k, v, qo_indptr.cpu(), kv_indptr.cpu(), True)
    check_close(o, lse, eo, el, "float16")
    assert w._engine.program.copy_fallbacks == 0


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dims", DIMS, ids=lambda x: f"{x[0]}x{x[1]}")
def test_single_prefill(gpu, dims, causal):
    d, dv = dims
    q = torch.randn(257, 16, d, device=gpu).half()
    k = torch.randn(700, 4, d, device=gpu).half()
    v = torch.randn(700, 4, dv, device=gpu).half()
    o, lse = cm.single_prefill_with_kv_cache(q, k, v, causal=causal, return_lse=True)
    assert o.shape == (257, 16, dv)
    eo, el = ragged_ref(q, k, v, torch.tensor([0, 257]), torch.tensor([0, 700]), causal)
    check_close(o, lse, eo, el, "float16")
