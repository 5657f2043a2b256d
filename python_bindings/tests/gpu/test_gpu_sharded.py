"""The sharded cascade on one GPU (a one-process NCCL group): the same
result as the unsharded GPU cascade and the float64 reference, eager and
replayed from a CUDA graph after a replan. The multi-GPU runs are
benchmarks/python/sharded.py under torchrun (docs/multi_gpu.md)."""
import os
import socket

import pytest

import cascade_mlir as cm
from cascade_mlir.sharded import ShardedMultiLevelCascadeAttentionWrapper
from gpu_support import (TOL, attention_ref, gpu, gpu_unavailable_reason,  # noqa: F401
                         merge_ref, random_batch, rel_err, torch, workspace)


@pytest.fixture(scope="module")
def nccl_group():
    # Module scope runs before the per-test `gpu` fixture: skip (or fail
    # with CASCADE_REQUIRE_GPU=1) the same way here.
    why = gpu_unavailable_reason()
    if why:
        if os.environ.get("CASCADE_REQUIRE_GPU") == "1":
            pytest.fail(why)
        pytest.skip(why)
    import torch.distributed as dist
    if not dist.is_nccl_available():
        pytest.skip("this torch build has no NCCL")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=0,
                            world_size=1, device_id=torch.device("cuda:0"))
    yield dist.group.WORLD
    dist.destroy_process_group()


def levels(prefix_pages, seed, batch, page=16, pool=4000):
    gen = torch.Generator().manual_seed(seed)
    u_indptr, u_idx, u_last = random_batch(batch, page, 60, 2000, empty=(seed % batch,),
                                           gen=gen)
    return [[torch.tensor([0, batch], dtype=torch.int32),
             torch.arange(batch + 1, dtype=torch.int32)],
            [torch.tensor([0, prefix_pages], dtype=torch.int32), u_indptr],
            [torch.randperm(pool - 2000, generator=gen)[:prefix_pages].int() + 2000, u_idx],
            [torch.tensor([5], dtype=torch.int32), u_last]]


@pytest.mark.parametrize("graph", [False, True])
def test_world_size_one_equals_unsharded(gpu, nccl_group, graph):
    hq, hkv, d, page, b = 32, 8, 128, 16, 9
    cache = torch.randn(4000, 2, page, hkv, d, device=gpu).half()
    q = torch.randn(b, hq, d, device=gpu).half()
    w = ShardedMultiLevelCascadeAttentionWrapper(2, workspace(gpu), use_cuda_graph=graph,
                                                 group=nccl_group)
    lv = levels(1500, 1, b)
    w.plan(*lv, hq, hkv, d, page)
    out, lse = torch.empty_like(q), torch.empty(b, hq, device=gpu)
    w.run(q, cache, out=out, lse=lse)
    run = lambda: w.run(q, cache, out=out, lse=lse)  # noqa: E731
    if graph:
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            w.run(q, cache, out=out, lse=lse)
        run = g.replay
    for prefix, seed in ((1500, 2), (700, 3), (1999, 4)):
        lv = levels(prefix, seed, b)
        w.plan(*lv, hq, hkv, d, page)
        q.copy_(torch.randn_like(q))
        out.fill_(float("nan"))
        run()
        torch.cuda.synchronize()
        plain = cm.MultiLevelCascadeAttentionWrapper(2, workspace(gpu))
        plain.plan(*lv, hq, hkv, d, page)
        po, pl = plain.run(q, cache, return_lse=True)
        assert rel_err(out, po) <= TOL["float16"] and rel_err(lse, pl) <= TOL["float16"]
        states = [attention_ref(q, cache, "NHD", *[x[i] for x in lv], page) for i in range(2)]
        eo, el = merge_ref(states)
        assert rel_err(out, eo) <= TOL["float16"] and rel_err(lse, el) <= TOL["float16"]
