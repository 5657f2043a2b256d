"""The plain decode / prefill wrappers on the GPU against the float64 torch
reference: dtypes, head dims, GQA, page sizes, layouts, (k, v) pairs, the
options, split and unsplit plans, out=/lse=, and bad input."""
import math

import pytest

import cascade_mlir as cm
from gpu_support import (TOL, attention_ref, gpu, random_batch, rel_err,  # noqa: F401
                         tdtype, torch, workspace)

# (dtype, Hqo, Hkv, D, page, layout, form, options): all in the gpu-tests set.
CONFIGS = [
    ("f16", 32, 8, 128, 16, "NHD", "pool", {}),
    ("bf16", 32, 8, 128, 16, "NHD", "pool", {}),
    ("f16", 32, 8, 128, 16, "NHD", "pair", {}),
    ("bf16", 32, 8, 128, 16, "HND", "pool", {}),
    ("f16", 8, 8, 64, 16, "NHD", "pool", {}),
    ("f16", 16, 4, 256, 16, "NHD", "pool", {}),
    ("bf16", 32, 4, 64, 1, "HND", "pair", {}),
    ("f16", 64, 8, 128, 16, "NHD", "pool", {}),
    ("f16", 32, 8, 128, 16, "NHD", "pool", dict(logits_soft_cap=30.0, window_left=40)),
    ("f16", 32, 8, 128, 16, "NHD", "pool", dict(pos_encoding_mode="ROPE_LLAMA")),
    ("f16", 32, 8, 128, 16, "NHD", "pool", dict(pos_encoding_mode="ALIBI")),
    ("f16", 32, 8, 128, 16, "NHD", "pool", dict(sm_scale=0.1)),
]


def make_cache(num_pages, page, hkv, d, layout, form, dtype, dev):
    shape = [num_pages, page, hkv, d] if layout == "NHD" else [num_pages, hkv, page, d]
    if form == "pair":
        return tuple(torch.randn(*shape, device=dev).to(tdtype(dtype)) for _ in range(2))
    return torch.randn(num_pages, 2, *shape[1:], device=dev).to(tdtype(dtype))


def ref_kwargs(opts):
    return {k.replace("_mode", ""): v for k, v in opts.items()}


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: "-".join(map(str, c[:7])) +
                         ("-" + "-".join(c[7]) if c[7] else ""))
@pytest.mark.parametrize("batch", [3, 300])
def test_decode(gpu, cfg, batch):
    dtype, hq, hkv, d, page, layout, form, opts = cfg
    num_pages = 4096
    max_pages = max(1, min(2048 // page, num_pages // batch - 1))
    indptr, indices, last = random_batch(batch, page, max_pages, num_pages, empty=(1,))
    cache = make_cache(num_pages, page, hkv, d, layout, form, dtype, gpu)
    q = torch.randn(batch, hq, d, device=gpu).to(tdtype(dtype))
    w = cm.BatchDecodeWithPagedKVCacheWrapper(workspace(gpu), layout)
    w.plan(indptr.to(gpu), indices.to(gpu), last.to(gpu), hq, hkv, d, page,
           q_data_type=tdtype(dtype), **opts)
    o, lse = w.run(q, cache, return_lse=True)
    eo, el = attention_ref(q, cache, layout, torch.arange(batch + 1), indptr, indices,
                           last, page, **ref_kwargs(opts))
    tol = TOL[str(q.dtype).replace("torch.", "")]
    assert rel_err(o, eo) <= tol and rel_err(lse, el) <= tol
    # Into the caller's outputs; the lse scratch path (no lse) agrees.
    out = torch.full_like(q, math.nan)
    lse_out = torch.full((batch, hq), math.nan, device=gpu)
    res = w.run(q, cache, out=out, lse=lse_out)
    assert res is out and torch.equal(out, o) and torch.equal(lse_out, lse)
    assert torch.equal(w.run(q, cache), o)


# A decode's split merge spreads each state's chunks over as many groups of
# threads as the grid's spare blocks allow (1 to statesPerBlock, from the
# chunks per state): few requests with many chunks, and many with few.
@pytest.mark.parametrize("cfg", [CONFIGS[0], CONFIGS[4], CONFIGS[5], CONFIGS[9]],
                         ids=lambda c: "-".join(map(str, c[:7])) +
                         ("-" + "-".join(c[7]) if c[7] else ""))
@pytest.mark.parametrize("batch,max_pages,split", [
    (1, 64, 1), (1, 9, 2), (2, 40, 4), (3, 50, 1), (6, 30, 2), (40, 12, 3)])
def test_decode_split_merge_groups(gpu, cfg, batch, max_pages, split):
    dtype, hq, hkv, d, page, layout, form, opts = cfg
    num_pages = 4096
    indptr, indices, last = random_batch(batch, page, max_pages, num_pages,
                                         empty=(1,) if batch >= 3 else ())
    cache = make_cache(num_pages, page, hkv, d, layout, form, dtype, gpu)
    q = torch.randn(batch, hq, d, device=gpu).to(tdtype(dtype))
    w = cm.BatchDecodeWithPagedKVCacheWrapper(workspace(gpu), layout)
    w.plan(indptr.to(gpu), indices.to(gpu), last.to(gpu), hq, hkv, d, page,
           q_data_type=tdtype(dtype), fixed_split_size=split, **opts)
    o, lse = w.run(q, cache, return_lse=True)
    eo, el = attention_ref(q, cache, layout, torch.arange(batch + 1), indptr, indices,
                           last, page, **ref_kwargs(opts))
    tol = TOL[str(q.dtype).replace("torch.", "")]
    assert rel_err(o, eo) <= tol and rel_err(lse, el) <= tol
    if batch >= 3:  # the empty request: (0, -inf)
        assert torch.all(o[1] == 0) and torch.all(torch.isneginf(lse[1]))


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: "-".join(map(str, c[:7])) +
                         ("-" + "-".join(c[7]) if c[7] else ""))
@pytest.mark.parametrize("causal", [True, False])
def test_prefill(gpu, cfg, causal):
    dtype, hq, hkv, d, page, layout, form, opts = cfg
    num_pages, batch = 2048, 9
    indptr, indices, last = random_batch(batch, page, 256 // page + 2, num_pages, empty=(2,))
    qlens = torch.randint(1, 70, (batch,))
    qlens[4] = 0  # a request without queries
    qo = torch.zeros(batch + 1, dtype=torch.int32)
    qo[1:] = torch.cumsum(qlens, 0)
    cache = make_cache(num_pages, page, hkv, d, layout, form, dtype, gpu)
    q = torch.randn(int(qo[-1]), hq, d, device=gpu).to(tdtype(dtype))
    w = cm.BatchPrefillWithPagedKVCacheWrapper(workspace(gpu), layout)
    w.plan(qo, indptr, indices, last, hq, hkv, d, page, causal=causal,
           q_data_type=tdtype(dtype), **opts)
    o, lse = w.run(q, cache, return_lse=True)
    eo, el = attention_ref(q, cache, layout, qo, indptr, indices, last, page,
                           causal=causal, **ref_kwargs(opts))
    tol = TOL[str(q.dtype).replace("torch.", "")]
    assert rel_err(o, eo) <= tol and rel_err(lse, el) <= tol


def test_bad_input_raises_before_launch_and_leaves_outputs(gpu):
    hq, hkv, d, page = 32, 8, 128, 16
    indptr, indices, last = random_batch(4, page, 8, 64)
    cache = make_cache(64, page, hkv, d, "NHD", "pool", "f16", gpu)
    q = torch.randn(4, hq, d, device=gpu).half()
    w = cm.BatchDecodeWithPagedKVCacheWrapper(workspace(gpu))
    with pytest.raises(ValueError, match="plan"):
        w.run(q, cache)
    w.plan(indptr, indices, last, hq, hkv, d, page)
    out = torch.full_like(q, math.nan)
    lse = torch.full((4, hq), math.nan, device=gpu)
    bad = [
        (TypeError, "q has dtype bfloat16", dict(q=q.bfloat16())),
        (ValueError, r"q has shape \[4, 16, 128\]", dict(q=q[:, :16])),
        (ValueError, "q is on cpu", dict(q=q.cpu())),
        # Strided views are taken (test_gpu_strides.py), but not along head_dim.
        (ValueError, "q has strides .*head_dim is contiguous",
         dict(q=q.transpose(0, 2).contiguous().transpose(0, 2))),
        (ValueError, "paged_kv_cache has shape", dict(kv=cache[:, :, :8])),
        (ValueError, "plan reads page", dict(kv=cache[: int(indices.max())])),
        (ValueError, r"paged_kv_cache\[0\] has strides .*head_dim is contiguous",
         dict(kv=tuple(cache[:, i].transpose(1, 3).contiguous().transpose(1, 3)
                       for i in range(2)))),
        (ValueError, "out has strides .*do not overlap",
         dict(out=out.as_strided(out.shape, (hq * d, 64, 1)))),
        (TypeError, "out has dtype float32", dict(out=out.float())),
        (ValueError, "lse has shape", dict(lse=lse[:, :8])),
    ]
    for exc, match, args in bad:
        with pytest.raises(exc, match=match):
            w.run(args.get("q", q), args.get("kv", cache), out=args.get("out", out),
                  lse=args.get("lse", lse))
    torch.cuda.synchronize()
    assert bool(torch.isnan(out).all()) and bool(torch.isnan(lse).all())


def test_cupy_decode(gpu):
    cp = pytest.importorskip("cupy", reason="cupy is not installed here: the DLPack "
                             "path is checked with cupy arrays")
    hq, hkv, d, page = 32, 8, 128, 16
    indptr, indices, last = random_batch(5, page, 20, 256)
    cache = make_cache(256, page, hkv, d, "NHD", "pool", "f16", gpu)
    q = torch.randn(5, hq, d, device=gpu).half()
    w = cm.BatchDecodeWithPagedKVCacheWrapper(cp.empty(64 << 20, dtype=cp.uint8))
    w.plan(cp.asarray(indptr.numpy()), indices.numpy(), last.tolist(), hq, hkv, d, page)
    o = w.run(cp.from_dlpack(q), cp.from_dlpack(cache))
    assert isinstance(o, cp.ndarray)
    eo, _ = attention_ref(q, cache, "NHD", torch.arange(6), indptr, indices, last, page)
    assert rel_err(torch.from_dlpack(o), eo) <= TOL["float16"]
