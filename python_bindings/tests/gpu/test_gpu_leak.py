"""No wrapper outlives its last reference (issue: the GPU wrappers kept their
workspaces alive through the C++ program's resolver): 200 wrappers of each
kind are constructed, planned, run and deleted, and the CUDA memory torch
has allocated returns to its baseline."""
import gc

import pytest

import cascade_mlir as cm
from gpu_support import gpu, torch  # noqa: F401

#: A float workspace of 32 MiB per wrapper: 200 leaked ones would hold 6.4 GB.
WS_MB = 32


def cycle(kind, dev):
    ws = torch.empty(WS_MB << 20, dtype=torch.uint8, device=dev)
    indptr = torch.tensor([0, 3, 3, 10], dtype=torch.int32, device=dev)
    indices = torch.arange(10, dtype=torch.int32, device=dev)
    last = torch.tensor([5, 1, 16], dtype=torch.int32, device=dev)
    cache = torch.randn(10, 2, 16, 8, 128, device=dev).half()
    if kind == "decode":
        w = cm.BatchDecodeWithPagedKVCacheWrapper(ws)
        w.plan(indptr, indices, last, 32, 8, 128, 16)
        w.run(torch.randn(3, 32, 128, device=dev).half(), cache)
    elif kind == "prefill":
        w = cm.BatchPrefillWithPagedKVCacheWrapper(ws)
        qo = torch.tensor([0, 5, 6, 40], dtype=torch.int32, device=dev)
        w.plan(qo, indptr, indices, last, 32, 8, 128, 16, causal=True)
        w.run(torch.randn(40, 32, 128, device=dev).half(), cache)
    elif kind == "multi_level":
        w = cm.MultiLevelCascadeAttentionWrapper(2, ws)
        shared = torch.tensor([0, 3], dtype=torch.int32, device=dev)
        one = torch.tensor([0, 1], dtype=torch.int32, device=dev)
        w.plan([shared, torch.arange(4, dtype=torch.int32, device=dev)], [one, indptr],
               [one[:1], indices],
               [torch.tensor([16], dtype=torch.int32, device=dev), last],
               64, 16, 128, 16)
        w.run(torch.randn(3, 64, 128, device=dev).half(),
              torch.randn(10, 2, 16, 16, 128, device=dev).half())
    elif kind == "ragged":
        w = cm.BatchPrefillWithRaggedKVCacheWrapper(ws)
        w.plan(torch.tensor([0, 5, 6, 40], dtype=torch.int32, device=dev),
               torch.tensor([0, 30, 30, 45], dtype=torch.int32, device=dev), 32, 8, 128,
               causal=True)
        k = torch.randn(45, 8, 128, device=dev).half()
        w.run(torch.randn(40, 32, 128, device=dev).half(), k, k)
    elif kind == "cuda_graph_decode":
        bufs = [torch.empty(n, dtype=torch.int32, device=dev) for n in (4, 10, 3)]
        w = cm.CUDAGraphBatchDecodeWithPagedKVCacheWrapper(ws, *bufs)
        w.plan(indptr, indices, last, 32, 8, 128, 16)
        w.run(torch.randn(3, 32, 128, device=dev).half(), cache)
    else:
        w = cm.BatchDecodeWithSharedPrefixPagedKVCacheWrapper(ws)
        w.begin_forward(indptr, indices, last, 64, 8, 128, 16)
        k = torch.randn(32, 8, 128, device=dev).half()
        w.forward(torch.randn(3, 64, 128, device=dev).half(), k, k.clone(), cache)


@pytest.mark.parametrize("kind", ["decode", "prefill", "multi_level", "shared_decode",
                                  "ragged", "cuda_graph_decode"])
def test_wrappers_release_their_memory(gpu, kind):
    cycle(kind, gpu)  # kernels loaded, torch's caches warm
    gc.collect()
    torch.cuda.synchronize()
    baseline = torch.cuda.memory_allocated(gpu)
    for _ in range(200):
        cycle(kind, gpu)
    gc.collect()
    torch.cuda.synchronize()
    grown = torch.cuda.memory_allocated(gpu) - baseline
    assert grown == 0, (f"{kind}: {grown / 2**20:.1f} MiB still allocated after 200 "
                        "wrappers were deleted")
