"""A 1M-token shared prefix sharded across the GPUs of a node
(docs/multi_gpu.md): decode steps of B=64 requests, 32/8 heads, D=128, fp16,
a shared prefix of 1,048,576 tokens (4 GiB of KV) split by pages across the
ranks, and 256 own tokens per request held by every rank.

    torchrun --standalone --nproc-per-node=W -m benchmarks.python.sharded [--check]
    python3 -m benchmarks.python.sharded [--check]        # one GPU, no torchrun

Per step (CUDA events, median over --steps): the sharded run(), the same
run's all-gather alone (its share of the step) and this rank's shard
kernels alone; the slowest rank's numbers are reported. --check (rank 0)
also runs the unsharded single-GPU cascade over the whole prefix on the
same data: the speedup over it, and the difference of the results (within
fp16 rounding). Rows are printed and, with OUT set, written to
$OUT/sharded-w<W>.json.
"""

import argparse
import json
import os
import socket
import statistics
from typing import Callable, Dict, List

import numpy as np
import torch
import torch.distributed as dist

import cascade_mlir as cm
from cascade_mlir.sharded import ShardedMultiLevelCascadeAttentionWrapper, shard_bounds


def init() -> int:
    """The NCCL group (torchrun's, or a one-process group); returns the
    local device index."""
    if "WORLD_SIZE" in os.environ:
        local = int(os.environ.get("LOCAL_RANK", 0))
        torch.cuda.set_device(local)
        dist.init_process_group("nccl", device_id=torch.device("cuda", local))
        return local
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=0,
                            world_size=1, device_id=torch.device("cuda", 0))
    return 0


def timed(fn: Callable[[], object], steps: int, warmup: int = 3) -> float:
    """Median per-call time in microseconds (CUDA events)."""
    for _ in range(warmup):
        fn()
    times: List[float] = []
    for _ in range(steps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3)
    return statistics.median(times)


def slowest(x: float) -> float:
    t = torch.tensor([x], device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t.item())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--qo-heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--page", type=int, default=16)
    ap.add_argument("--prefix", type=int, default=1 << 20, help="shared prefix tokens")
    ap.add_argument("--own", type=int, default=256, help="own tokens per request")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--check", action="store_true",
                    help="rank 0 also runs the unsharded cascade: speedup and difference")
    args = ap.parse_args()

    local = init()
    rank, world = dist.get_rank(), dist.get_world_size()
    dev = torch.device("cuda", local)
    b, hq, hkv, d, page = args.batch, args.qo_heads, args.kv_heads, args.head_dim, args.page
    prefix_pages = -(-args.prefix // page)
    own_pages = -(-args.own // page)
    lo, hi = shard_bounds(prefix_pages, rank, world)

    # Every rank draws the same global data (same seed) and keeps its shard
    # of the prefix; rank 0 keeps the whole prefix for --check.
    gen = torch.Generator(device=dev).manual_seed(1234)
    shape = (2, page, hkv, d)
    full = torch.randn((prefix_pages, *shape), generator=gen, device=dev, dtype=torch.float16)
    own = torch.randn((b * own_pages, *shape), generator=gen, device=dev, dtype=torch.float16)
    q = torch.randn((b, hq, d), generator=gen, device=dev, dtype=torch.float16)
    pool = torch.cat([full[lo:hi], own])  # local ids: shard 0..hi-lo, then own pages
    keep_full = args.check and rank == 0
    if not keep_full:
        del full
    torch.cuda.empty_cache()

    last_prefix = args.prefix - (prefix_pages - 1) * page
    last_own = args.own - (own_pages - 1) * page
    local_ids = np.zeros(prefix_pages, np.int32)
    local_ids[lo:hi] = np.arange(hi - lo, dtype=np.int32)  # positions not held: not read
    levels = [
        [np.array([0, b], np.int32), np.arange(b + 1, dtype=np.int32)],
        [np.array([0, prefix_pages], np.int32),
         np.arange(0, (b + 1) * own_pages, own_pages, dtype=np.int32)],
        [local_ids, (hi - lo) + np.arange(b * own_pages, dtype=np.int32)],
        [np.array([last_prefix], np.int32), np.full(b, last_own, np.int32)],
    ]
    ws = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    w = ShardedMultiLevelCascadeAttentionWrapper(2, ws)
    w.plan(*levels, hq, hkv, d, page)
    out = torch.empty_like(q)
    lse = torch.empty((b, hq), device=dev)

    step_us = slowest(timed(lambda: w.run(q, pool, out=out, lse=lse), args.steps))
    v, s, _, _, gv, gs, _, _ = w._state_buffers(q)

    def gather() -> None:
        for work in (dist.all_gather_into_tensor(gv, v, async_op=True),
                     dist.all_gather_into_tensor(gs, s, async_op=True)):
            work.wait()
    gather_us = slowest(timed(gather, args.steps))
    shard_us = slowest(timed(lambda: w._shard.run(q, pool, out=v, lse=s), args.steps))
    w.run(q, pool, out=out, lse=lse)
    torch.cuda.synchronize()

    row: Dict[str, object] = dict(
        world_size=world, batch=b, heads=f"{hq}/{hkv}", head_dim=d, prefix_tokens=args.prefix,
        own_tokens=args.own, pages_per_rank=hi - lo, step_us=round(step_us, 1),
        all_gather_us=round(gather_us, 1), all_gather_share=round(gather_us / step_us, 3),
        shard_kernels_us=round(shard_us, 1), device=torch.cuda.get_device_name(dev))
    if keep_full:
        whole = torch.cat([full, own])
        del full
        ref = cm.MultiLevelCascadeAttentionWrapper(2, torch.empty_like(ws))
        ref_levels = [list(levels[0]), list(levels[1]),
                      [np.arange(prefix_pages, dtype=np.int32),
                       prefix_pages + np.arange(b * own_pages, dtype=np.int32)],
                      list(levels[3])]
        ref.plan(*ref_levels, hq, hkv, d, page)
        ro, rl = ref.run(q, whole, return_lse=True)
        single_us = timed(lambda: ref.run(q, whole), args.steps)
        torch.cuda.synchronize()
        scale = float(ro.abs().max().clamp_min(1e-6))
        rel = float((out.float() - ro.float()).abs().max()) / scale
        lse_diff = float((lse - rl).abs().max())
        row.update(single_gpu_us=round(single_us, 1), speedup=round(single_us / step_us, 3),
                   max_rel_diff=rel, max_lse_diff=lse_diff,
                   equal_within_rounding=bool(rel <= 5e-3 and lse_diff <= 1e-3))
    if rank == 0:
        print(json.dumps(row))
        if os.environ.get("OUT"):
            os.makedirs(os.environ["OUT"], exist_ok=True)
            with open(os.path.join(os.environ["OUT"], f"sharded-w{world}.json"), "w") as f:
                json.dump(row, f, indent=1)
    ok = bool(row.get("equal_within_rounding", True))
    dist.destroy_process_group()
    if not ok:
        raise SystemExit("the sharded result differs from the single-GPU cascade")


if __name__ == "__main__":
    main()
