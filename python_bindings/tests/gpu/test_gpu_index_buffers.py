"""Preallocated page-index buffers on the GPU (issue 41): the wrappers take
a kv_indices buffer of the largest size whole, as vLLM's and SGLang's
FlashInfer backends pass it, and read only its first kv_indptr[-1] entries.
The tail holds garbage (ids past the cache, negative ids); the results are
bit-equal to those of the exact array and match the float64 reference,
CUDA-graph replays after replans from the same buffer included."""
import pytest

import cascade_mlir as cm
from gpu_support import (TOL, attention_ref, gpu, random_batch, rel_err,  # noqa: F401
                         torch, workspace)

HQ, HKV, D, PAGE, POOL = 32, 8, 128, 16, 2048


def padded(indices, size, dev):
    """`indices` at the start of a device buffer of `size` entries whose
    tail is garbage."""
    buf = torch.randint(-(2**31), 2**31 - 1, (size,), dtype=torch.int32)
    buf[1::3] = POOL + 5
    buf[: indices.numel()] = indices
    return buf.to(dev)


@pytest.mark.parametrize("wrapper", ["decode", "prefill"])
def test_oversized_buffer_equals_exact(gpu, wrapper):
    batch = 37
    indptr, indices, last = random_batch(batch, PAGE, 40, POOL, empty=(3,))
    cache = torch.randn(POOL, 2, PAGE, HKV, D, device=gpu).half()
    if wrapper == "decode":
        qo = torch.arange(batch + 1, dtype=torch.int32)
    else:
        qo = torch.zeros(batch + 1, dtype=torch.int32)
        qo[1:] = torch.cumsum(torch.randint(1, 9, (batch,)), 0)
    q = torch.randn(int(qo[-1]), HQ, D, device=gpu).half()
    outs = []
    for ki in (indices.to(gpu), padded(indices, 12288, gpu)):
        if wrapper == "decode":
            w = cm.BatchDecodeWithPagedKVCacheWrapper(workspace(gpu))
            w.plan(indptr.to(gpu), ki, last.to(gpu), HQ, HKV, D, PAGE)
        else:
            w = cm.BatchPrefillWithPagedKVCacheWrapper(workspace(gpu))
            w.plan(qo.to(gpu), indptr.to(gpu), ki, last.to(gpu), HQ, HKV, D, PAGE,
                   causal=True)
        outs.append(w.run(q, cache, return_lse=True))
    torch.cuda.synchronize()
    assert torch.equal(outs[0][0], outs[1][0]) and torch.equal(outs[0][1], outs[1][1])
    eo, el = attention_ref(q, cache, "NHD", qo, indptr, indices, last, PAGE,
                           causal=wrapper == "prefill")
    assert rel_err(outs[1][0], eo) <= TOL["float16"]
    assert rel_err(outs[1][1], el) <= TOL["float16"]


def test_cuda_graph_decode_wrapper_with_its_buffer_passed_whole(gpu):
    batch = 12
    bufs = (torch.empty(batch + 1, dtype=torch.int32, device=gpu),
            padded(torch.zeros(0, dtype=torch.int32), POOL, gpu),
            torch.empty(batch, dtype=torch.int32, device=gpu))
    w = cm.CUDAGraphBatchDecodeWithPagedKVCacheWrapper(workspace(gpu), *bufs)
    cache = torch.randn(POOL, 2, PAGE, HKV, D, device=gpu).half()
    q = torch.randn(batch, HQ, D, device=gpu).half()
    graph = None
    for step in range(3):
        indptr, indices, last = random_batch(batch, PAGE, 60 if step else 5, POOL)
        bufs[1][: indices.numel()] = indices.to(gpu)  # the engine's own write
        w.plan(indptr, bufs[1], last, HQ, HKV, D, PAGE)
        if graph is None:
            o = w.run(q, cache)
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                o = w.run(q, cache)
        graph.replay()
        torch.cuda.synchronize()
        eo, _ = attention_ref(q, cache, "NHD", torch.arange(batch + 1), indptr, indices,
                              last, PAGE)
        assert rel_err(o, eo) <= TOL["float16"], f"replay {step}"


def test_cascade_wrapper_with_level_buffers_passed_whole(gpu):
    batch, shared = 9, 100
    unique = torch.randint(1, 30, (batch,))
    total = shared + int(unique.sum())
    perm = torch.randperm(POOL)[:total].int()
    qo = [torch.tensor([0, batch], dtype=torch.int32), torch.arange(batch + 1).int()]
    kp = [torch.tensor([0, shared], dtype=torch.int32),
          torch.cat([torch.zeros(1), torch.cumsum(unique, 0)]).int()]
    ki = [perm[:shared], perm[shared:]]
    last = [torch.tensor([PAGE], dtype=torch.int32),
            torch.randint(1, PAGE + 1, (batch,), dtype=torch.int32)]
    bufs = [padded(ki[0], 512, gpu), padded(ki[1], 1024, gpu)]
    cache = torch.randn(POOL, 2, PAGE, HKV, D, device=gpu).half()
    q = torch.randn(batch, HQ, D, device=gpu).half()
    outs = []
    for graph in (False, True):
        for arrays in (ki, bufs):
            kw = {"paged_kv_indices_buf_arr": bufs} if graph else {}
            w = cm.MultiLevelCascadeAttentionWrapper(2, workspace(gpu), "NHD",
                                                     use_cuda_graph=graph, **kw)
            w.plain_when_cheaper = False  # the levels' kernels under test
            w.plan(qo, kp, arrays, last, HQ, HKV, D, PAGE)
            outs.append(w.run(q, cache))
    torch.cuda.synchronize()
    assert torch.equal(outs[0], outs[1]) and torch.equal(outs[2], outs[3])
    flat_kp = torch.zeros(batch + 1, dtype=torch.int32)
    flat_kp[1:] = torch.cumsum(unique + shared, 0)
    flat_ki = torch.cat([torch.cat([ki[0], ki[1][int(kp[1][i]):int(kp[1][i + 1])]])
                         for i in range(batch)])
    eo, _ = attention_ref(q, cache, "NHD", qo[1], flat_kp, flat_ki, last[1], PAGE)
    for o in outs:
        assert rel_err(o, eo) <= TOL["float16"]
