"""Cascades on the GPU: the result equals plain attention over the
concatenated KV (a shared prefix read once plus per-request suffixes), and
the float64 reference; prefill cascades, three levels, (k, v) pairs, the
deprecated shared-prefix wrappers, and CUDA-graph replay after a replan."""
import math

import pytest

import cascade_mlir as cm
from gpu_support import (TOL, attention_ref, gpu, merge_ref, random_batch,  # noqa: F401
                         rel_err, torch, workspace)


def seed_levels(dev, batch=7, shared_pages=512, unique=(17, 12, 15, 4, 18, 34, 28),
                last=(1, 7, 14, 4, 3, 1, 16), page=16):
    """The layout of FlashInfer's example: one shared prefix of full pages,
    then each request's own pages."""
    total = shared_pages + sum(unique)
    uindptr = torch.zeros(batch + 1, dtype=torch.int32)
    uindptr[1:] = torch.cumsum(torch.tensor(unique), 0)
    qo = [torch.tensor([0, batch], dtype=torch.int32), torch.arange(batch + 1, dtype=torch.int32)]
    kp = [torch.tensor([0, shared_pages], dtype=torch.int32), uindptr]
    ki = [torch.arange(shared_pages, dtype=torch.int32),
          torch.arange(shared_pages, total, dtype=torch.int32)]
    kl = [torch.tensor([page], dtype=torch.int32), torch.tensor(last, dtype=torch.int32)]
    return total, [[t.to(dev) for t in arr] for arr in (qo, kp, ki, kl)]


def concatenated(levels):
    """Per request: the shared pages, then its own (plain attention)."""
    qo, kp, ki, kl = levels
    shared = ki[0].cpu()
    b = kp[1].numel() - 1
    indptr = [0]
    indices = []
    for i in range(b):
        own = ki[1][kp[1][i]:kp[1][i + 1]].cpu()
        indices.append(torch.cat([shared, own]))
        indptr.append(indptr[-1] + shared.numel() + own.numel())
    last = torch.where(kp[1][1:].cpu() > kp[1][:-1].cpu(), kl[1].cpu(), kl[0].cpu())
    return (torch.tensor(indptr, dtype=torch.int32), torch.cat(indices).int(), last.int())


def plain_decode_and_reference(gpu, levels, q, kv, cache, hq, hkv, d, page):
    """Plain decode over each request's concatenated pages (kv: the cache as
    the cascade read it) and its float64 reference (over the pool `cache`):
    ((o, lse), (o, lse))."""
    plain = cm.BatchDecodeWithPagedKVCacheWrapper(workspace(gpu), "NHD")
    indptr, indices, last = concatenated(levels)
    plain.plan(indptr, indices, last, hq, hkv, d, page)
    rows = q.shape[0]
    ref = attention_ref(q, cache, "NHD", torch.arange(rows + 1), indptr, indices, last, page)
    return plain.run(q, kv, return_lse=True), ref


@pytest.mark.parametrize("form", ["pool", "pair"])
def test_two_level_decode_equals_plain_attention(gpu, form):
    hq, hkv, d, page = (64, 8, 128, 16) if form == "pool" else (32, 8, 128, 16)
    total, levels = seed_levels(gpu)
    cache = torch.randn(total, 2, page, hkv, d, device=gpu).half()
    kv = cache if form == "pool" else (cache[:, 0].contiguous(), cache[:, 1].contiguous())
    q = torch.randn(7, hq, d, device=gpu).half()
    w = cm.MultiLevelCascadeAttentionWrapper(2, workspace(gpu), "NHD")
    w.plain_when_cheaper = False  # the levels' kernels under test
    w.plan(*levels, hq, hkv, d, page)
    o = w.run(q, kv)
    o2, lse = w.run(q, kv, return_lse=True)
    assert torch.equal(o, o2)
    (po, plse), (eo, el) = plain_decode_and_reference(gpu, levels, q, kv, cache, hq, hkv, d, page)
    assert rel_err(o, eo) <= TOL["float16"] and rel_err(lse, el) <= TOL["float16"]
    assert rel_err(o, po.double()) <= TOL["float16"]
    assert rel_err(lse, plse.double()) <= TOL["float16"]


@pytest.mark.parametrize("shared_pages", [1, 512])
def test_a_cascade_that_would_not_pay_runs_plain(gpu, shared_pages):
    """The shipped default (plain_when_cheaper): a one-page shared prefix of
    7 requests runs as the plain batch, bit-equal to the decode wrapper over
    the concatenated pages and within tolerance of float64; a 512-page one
    keeps its levels."""
    hq, hkv, d, page = 32, 8, 128, 16
    total, levels = seed_levels(gpu, shared_pages=shared_pages)
    cache = torch.randn(total, 2, page, hkv, d, device=gpu).half()
    q = torch.randn(7, hq, d, device=gpu).half()
    w = cm.MultiLevelCascadeAttentionWrapper(2, workspace(gpu), "NHD")
    w.plan(*levels, hq, hkv, d, page)
    assert w.runs_plain is (shared_pages == 1)
    o, lse = w.run(q, cache, return_lse=True)
    (po, plse), (eo, el) = plain_decode_and_reference(gpu, levels, q, cache, cache, hq, hkv,
                                                      d, page)
    assert rel_err(o, eo) <= TOL["float16"] and rel_err(lse, el) <= TOL["float16"]
    if w.runs_plain:
        assert torch.equal(o, po) and torch.equal(lse, plse)


def test_prefill_cascade_is_causal_on_the_last_level_only(gpu):
    hq, hkv, d, page, b = 32, 8, 128, 16, 5
    num_pages = 1024
    qlens = torch.tensor([30, 1, 64, 7, 20])
    qo1 = torch.zeros(b + 1, dtype=torch.int32)
    qo1[1:] = torch.cumsum(qlens, 0)
    rows = int(qo1[-1])
    u_indptr, u_idx, u_last = random_batch(b, page, 9, num_pages - 100)
    u_idx = u_idx + 100
    levels = [[torch.tensor([0, rows], dtype=torch.int32), qo1],
              [torch.tensor([0, 37], dtype=torch.int32), u_indptr],
              [torch.arange(37, dtype=torch.int32), u_idx],
              [torch.tensor([5], dtype=torch.int32), u_last]]
    cache = torch.randn(num_pages, 2, page, hkv, d, device=gpu).half()
    q = torch.randn(rows, hq, d, device=gpu).half()
    w = cm.MultiLevelCascadeAttentionWrapper(2, workspace(gpu))
    w.plain_when_cheaper = False  # the levels' kernels under test
    w.plan(*levels, hq, hkv, d, page, causal=True)
    o, lse = w.run(q, cache, return_lse=True)
    s0 = attention_ref(q, cache, "NHD", *[lv[0] for lv in levels], page)
    s1 = attention_ref(q, cache, "NHD", *[lv[1] for lv in levels], page, causal=True)
    eo, el = merge_ref([s0, s1])
    assert rel_err(o, eo) <= TOL["float16"] and rel_err(lse, el) <= TOL["float16"]


def test_three_levels(gpu):
    hq, hkv, d, page, b = 32, 8, 128, 16, 7
    num_pages = 2048
    groups = torch.tensor([0, 3, 7], dtype=torch.int32)  # two groups of requests
    g_indptr, g_idx, g_last = random_batch(2, page, 20, 500)
    u_indptr, u_idx, u_last = random_batch(b, page, 30, num_pages - 600, empty=(2,))
    levels = [[torch.tensor([0, b], dtype=torch.int32), groups, torch.arange(b + 1, dtype=torch.int32)],
              [torch.tensor([0, 50], dtype=torch.int32), g_indptr, u_indptr],
              [torch.arange(50, dtype=torch.int32) + 500, g_idx, u_idx + 600],
              [torch.tensor([16], dtype=torch.int32), g_last, u_last]]
    cache = torch.randn(num_pages, 2, page, hkv, d, device=gpu).half()
    q = torch.randn(b, hq, d, device=gpu).half()
    w = cm.MultiLevelCascadeAttentionWrapper(3, workspace(gpu))
    w.plain_when_cheaper = False  # the levels' kernels under test
    w.plan(*levels, hq, hkv, d, page)
    o, lse = w.run(q, cache, return_lse=True)
    states = [attention_ref(q, cache, "NHD", *[lv[i] for lv in levels], page) for i in range(3)]
    eo, el = merge_ref(states)
    assert rel_err(o, eo) <= TOL["float16"] and rel_err(lse, el) <= TOL["float16"]


@pytest.mark.parametrize("buffers", [True, False])
def test_cuda_graph_replay_after_replan(gpu, buffers):
    hq, hkv, d, page, b = 32, 8, 128, 16, 7
    num_pages = 3000
    cache = torch.randn(num_pages, 2, page, hkv, d, device=gpu).half()
    kw = {}
    if buffers:
        kw = dict(qo_indptr_buf_arr=[torch.empty(2, dtype=torch.int32, device=gpu),
                                     torch.empty(b + 1, dtype=torch.int32, device=gpu)],
                  paged_kv_indptr_buf_arr=[torch.empty(2, dtype=torch.int32, device=gpu),
                                           torch.empty(b + 1, dtype=torch.int32, device=gpu)],
                  paged_kv_indices_buf_arr=[torch.empty(600, dtype=torch.int32, device=gpu),
                                            torch.empty(2400, dtype=torch.int32, device=gpu)],
                  paged_kv_last_page_len_buf_arr=[torch.empty(1, dtype=torch.int32, device=gpu),
                                                  torch.empty(b, dtype=torch.int32, device=gpu)])
    w = cm.MultiLevelCascadeAttentionWrapper(2, workspace(gpu), "NHD", use_cuda_graph=True, **kw)

    def step(shared_pages, seed, batch=b):
        gen = torch.Generator().manual_seed(seed)
        u_indptr, u_idx, u_last = random_batch(batch, page, 300, 2400, empty=(seed % batch,),
                                               gen=gen)
        return [[torch.tensor([0, batch], dtype=torch.int32),
                 torch.arange(batch + 1, dtype=torch.int32)],
                [torch.tensor([0, shared_pages], dtype=torch.int32), u_indptr],
                [torch.arange(shared_pages, dtype=torch.int32) + 2400, u_idx],
                [torch.tensor([9], dtype=torch.int32), u_last]]

    q = torch.randn(b, hq, d, device=gpu).half()
    lv0 = step(500, 1)
    w.plan(*lv0, hq, hkv, d, page)
    out = torch.empty_like(q)
    lse = torch.empty(b, hq, device=gpu)
    w.run(q, cache, out=out, lse=lse)  # warm up outside the graph
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        w.run(q, cache, out=out, lse=lse)
    for shared_pages, seed in ((500, 2), (120, 3), (577, 4)):
        lv = step(shared_pages, seed)
        w.plan(*lv, hq, hkv, d, page)
        q.copy_(torch.randn_like(q))
        out.fill_(math.nan)
        g.replay()
        torch.cuda.synchronize()
        states = [attention_ref(q, cache, "NHD", *[x[i] for x in lv], page) for i in range(2)]
        eo, el = merge_ref(states)
        assert rel_err(out, eo) <= TOL["float16"] and rel_err(lse, el) <= TOL["float16"]
    with pytest.raises(ValueError, match="CUDA-graph mode"):
        w.plan(*step(500, 5, batch=b - 1), hq, hkv, d, page)


@pytest.mark.parametrize("layout,length", [("NHD", 8192), ("NHD", 1000), ("HND", 777)])
def test_shared_prefix_decode_wrapper(gpu, layout, length):
    hq, hkv, d, page, b = 64, 8, 128, 16, 7
    indptr, indices, last = random_batch(b, page, 30, 256, empty=(3,))
    shape = (256, 2, page, hkv, d) if layout == "NHD" else (256, 2, hkv, page, d)
    cache = torch.randn(*shape, device=gpu).half()
    ks = torch.randn(length, hkv, d, device=gpu).half()
    vs = torch.randn(length, hkv, d, device=gpu).half()
    k_shared, v_shared = (ks, vs) if layout == "NHD" else (ks.transpose(0, 1).contiguous(),
                                                           vs.transpose(0, 1).contiguous())
    q = torch.randn(b, hq, d, device=gpu).half()
    w = cm.BatchDecodeWithSharedPrefixPagedKVCacheWrapper(workspace(gpu), layout)
    w.begin_forward(indptr, indices, last, hq, hkv, d, page, data_type=torch.float16)
    o = w.forward(q, k_shared, v_shared, cache)
    w.end_forward()
    # The prefix as one request of one page of `length` tokens.
    s0 = attention_ref(q, (ks[None], vs[None]), "NHD", torch.tensor([0, b]),
                       torch.tensor([0, 1]), torch.tensor([0]), torch.tensor([length]), length)
    s1 = attention_ref(q, cache, layout, torch.arange(b + 1), indptr, indices, last, page)
    eo, _ = merge_ref([s0, s1])
    assert rel_err(o, eo) <= TOL["float16"]


def test_shared_prefix_prefill_wrapper(gpu):
    hq, hkv, d, page, b = 64, 16, 128, 16, 4
    indptr, indices, last = random_batch(b, page, 12, 128)
    qo = torch.tensor([0, 33, 44, 45, 70], dtype=torch.int32)
    cache = torch.randn(128, 2, page, hkv, d, device=gpu).half()
    ks = torch.randn(2048, hkv, d, device=gpu).half()
    vs = torch.randn(2048, hkv, d, device=gpu).half()
    q = torch.randn(70, hq, d, device=gpu).half()
    w = cm.BatchPrefillWithSharedPrefixPagedKVCacheWrapper(workspace(gpu), "NHD")
    w.begin_forward(qo, indptr, indices, last, hq, hkv, d, page)
    o = w.forward(q, ks, vs, cache, causal=True)
    s0 = attention_ref(q, (ks[None], vs[None]), "NHD", torch.tensor([0, 70]),
                       torch.tensor([0, 1]), torch.tensor([0]), torch.tensor([2048]), 2048)
    s1 = attention_ref(q, cache, "NHD", qo, indptr, indices, last, page, causal=True)
    eo, _ = merge_ref([s0, s1])
    assert rel_err(o, eo) <= TOL["float16"]


def test_run_checks_after_plan(gpu):
    total, levels = seed_levels(gpu)
    cache = torch.randn(total, 2, 16, 8, 128, device=gpu).half()
    w = cm.MultiLevelCascadeAttentionWrapper(2, workspace(gpu))
    with pytest.raises(cm.NotPlannedError):
        w.run(torch.randn(7, 64, 128, device=gpu).half(), cache)
    w.plan(*levels, 64, 8, 128, 16)
    out = torch.full((7, 64, 128), math.nan, device=gpu).half()
    with pytest.raises(ValueError, match=r"q has shape \[7, 32, 128\]"):
        w.run(torch.randn(7, 32, 128, device=gpu).half(), cache, out=out)
    with pytest.raises(ValueError, match="plan reads page"):
        w.run(torch.randn(7, 64, 128, device=gpu).half(), cache[:100], out=out)
    torch.cuda.synchronize()
    assert bool(torch.isnan(out).all())
    with pytest.raises(ValueError, match="float_workspace_buffer holds"):
        small = cm.MultiLevelCascadeAttentionWrapper(
            2, torch.empty(1024, dtype=torch.uint8, device=gpu))
        small.plan(*levels, 64, 8, 128, 16)


@pytest.mark.parametrize("kv", ["float16", "float8_e4m3fn"])
def test_the_last_level_is_the_base_when_the_prefix_splits(gpu, kv, monkeypatch):
    """A long shared prefix splits KV, so the suffix level writes the output
    and the prefix's split attention runs beside it, its merge accumulating
    last (docs/runtime.md): the same result as level 0 as the base, and the
    float64 reference, also with empty suffixes (the base level writes the
    empty state there)."""
    from cascade_mlir import _gpu
    hq, hkv, d, page = 32, 8, 128, 16
    total, levels = seed_levels(gpu, shared_pages=2048, unique=(17, 0, 15, 4, 0, 34, 28))
    fp8 = kv != "float16"
    cache = torch.randn(total, 2, page, hkv, d, device=gpu)
    cache = (cache * 2).to(torch.float8_e4m3fn) if fp8 else cache.half()
    ks, vs = (0.5, 2.0) if fp8 else (1.0, 1.0)
    ref_cache = cache.double()
    ref_cache[:, 0] *= ks
    ref_cache[:, 1] *= vs
    q = torch.randn(7, hq, d, device=gpu).half()
    indptr, indices, last = concatenated(levels)
    eo, el = attention_ref(q, ref_cache, "NHD", torch.arange(8), indptr, indices, last, page)
    scales = dict(k_scale=ks, v_scale=vs) if fp8 else {}
    results = {}
    for last_first in (True, False):
        if not last_first:
            monkeypatch.setattr(_gpu.Engine, "_can_put_last_level_first",
                                lambda self, form: False)
        w = cm.MultiLevelCascadeAttentionWrapper(2, workspace(gpu), "NHD")
        w.plain_when_cheaper = False  # the levels' kernels under test
        w.plan(*levels, hq, hkv, d, page, kv_data_type=cache.dtype)
        program = w._engine.program
        assert program.base_level == (1 if last_first else 0)
        o, lse = w.run(q, cache, return_lse=True, **scales)
        assert rel_err(o, eo) <= TOL["float16"] and rel_err(lse, el) <= TOL["float16"]
        for graph in (True, False):  # one graph, then kernel by kernel
            program.graph_launch = graph
            o2, lse2 = w.run(q, cache, return_lse=True, **scales)
            assert program.last_run_used_graph == graph
            assert torch.equal(o, o2) and torch.equal(lse, lse2)
        results[last_first] = (o, lse)
    o1, l1 = results[True]
    o0, l0 = results[False]
    assert rel_err(o1, o0.double()) <= TOL["float16"]
    assert rel_err(l1, l0.double()) <= TOL["float16"]
