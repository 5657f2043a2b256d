"""Sharded cascades over a gloo process group (CPU reference path).

One process group per world size (1-4) is spawned; every rank runs every
case and checks its result against the unsharded cascade, which it computes
itself with MultiLevelCascadeAttentionWrapper (float64 CPU reference).
"""

import os
import socket

import numpy as np
import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available():
    pytest.skip("this torch build has no torch.distributed", allow_module_level=True)

import cascade_mlir  # noqa: E402
from cascade_mlir.sharded import (ShardedMultiLevelCascadeAttentionWrapper,  # noqa: E402
                                  shard_bounds, shard_level)

PAGE = 4


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cascade(rng, batch, prefix_tokens, own_tokens, qo_lens=None, groups=None):
    """Levels of a cascade over one pool: a shared prefix, optionally a level
    of `groups` (lists of requests sharing pages), and each request's pages.
    Returns (levels as four lists, total pages)."""
    qo_lens = qo_lens or [1] * batch
    qo = np.concatenate([[0], np.cumsum(qo_lens)]).astype(np.int32)
    next_page = [0]

    def pages_for(tokens):
        n = -(-tokens // PAGE)
        ids = np.arange(next_page[0], next_page[0] + n, dtype=np.int32)
        next_page[0] += n
        return ids, (tokens - (n - 1) * PAGE) if n else 1

    levels = []
    spec = [[list(range(batch))]]
    if groups:
        spec.append(groups)
    spec.append([[b] for b in range(batch)])
    for li, grp in enumerate(spec):
        gq, kp, ki, kl = [0], [0], [], []
        for members in grp:
            tokens = prefix_tokens if li == 0 else (
                own_tokens[members[0]] if li == len(spec) - 1 else 3 * PAGE + 1)
            ids, last = pages_for(tokens)
            gq.append(int(qo[members[-1] + 1]))
            kp.append(kp[-1] + ids.size)
            ki.extend(ids.tolist())
            kl.append(last)
        levels.append((np.array(gq, np.int32), np.array(kp, np.int32),
                       np.array(ki, np.int32), np.array(kl, np.int32)))
    arrays = [list(x) for x in zip(*levels)]
    rng.shuffle(arrays[2][0])  # pages of the prefix in any order of ids
    return arrays, next_page[0]


def _tensors(rng, rows, pages, hq, hkv, dim, dtype):
    q = torch.from_numpy(rng.standard_normal((rows, hq, dim)).astype(np.float32)).to(dtype)
    kv = torch.from_numpy(rng.standard_normal((pages, 2, PAGE, hkv, dim))
                          .astype(np.float32)).to(dtype)
    return q, kv


def _unsharded(arrays, q, kv, hq, hkv, dim, causal=False):
    w = cascade_mlir.MultiLevelCascadeAttentionWrapper(len(arrays[0]))
    w.plan(*arrays, hq, hkv, dim, PAGE, causal=causal)
    return w.run(q, kv, return_lse=True)


def _check(got, want, atol, what):
    for g, e, name in zip(got, want, ("o", "lse")):
        g, e = g.double(), e.double()
        assert torch.equal(torch.isinf(g), torch.isinf(e)), f"{what}: {name} -inf rows differ"
        fin = torch.isfinite(e)
        err = (g[fin] - e[fin]).abs().max().item() if fin.any() else 0.0
        assert err <= atol, f"{what}: {name} differs from the unsharded cascade by {err}"


def _case_two_level(group, rank, world, dtype=torch.float32, atol=2e-6, prefix=37 * PAGE + 3):
    rng = np.random.default_rng(7)
    hq, hkv, dim, batch = 8, 2, 64, 5
    arrays, pages = _cascade(rng, batch, prefix, [5, 1, 9, 4, 12])
    q, kv = _tensors(rng, batch, pages, hq, hkv, dim, dtype)
    w = ShardedMultiLevelCascadeAttentionWrapper(2, group=group)
    w.plan(*arrays, hq, hkv, dim, PAGE)
    got = w.run(q, kv, return_lse=True)
    assert got[0].dtype == dtype and got[0].shape == q.shape
    _check(got, _unsharded(arrays, q, kv, hq, hkv, dim), atol,
           f"two levels, prefix {prefix}, {dtype}, rank {rank}/{world}")
    # out= / lse= receive the result; a second run gives the same.
    out, lse = torch.empty_like(q), torch.empty(batch, hq)
    o2 = w.run(q, kv, out=out, lse=lse)
    assert o2 is out and torch.equal(out, got[0]) and torch.equal(lse, got[1])


def _case_three_level_prefill(group, rank, world):
    """Prefix and a group level sharded; the causal prefill level local."""
    rng = np.random.default_rng(11)
    hq, hkv, dim, batch = 4, 4, 32, 4
    qo_lens = [3, 1, 4, 2]
    arrays, pages = _cascade(rng, batch, 23 * PAGE + 1, [6, 2, 9, 3], qo_lens=qo_lens,
                             groups=[[0, 1], [2, 3]])
    rows = sum(qo_lens)
    q, kv = _tensors(rng, rows, pages, hq, hkv, dim, torch.float32)
    w = ShardedMultiLevelCascadeAttentionWrapper(3, group=group, sharded_levels=(0, 1))
    w.plan(*arrays, hq, hkv, dim, PAGE, causal=True, sm_scale=0.3, logits_soft_cap=8.0)
    got = w.run(q, kv, return_lse=True)
    want = cascade_mlir.MultiLevelCascadeAttentionWrapper(3)
    want.plan(*arrays, hq, hkv, dim, PAGE, causal=True, sm_scale=0.3, logits_soft_cap=8.0)
    _check(got, want.run(q, kv, return_lse=True), 2e-6, f"three levels, rank {rank}/{world}")


def _case_all_sharded(group, rank, world):
    """Every level sharded, the per-request one too: N = W states."""
    rng = np.random.default_rng(3)
    hq, hkv, dim, batch = 4, 1, 16, 6
    arrays, pages = _cascade(rng, batch, 9 * PAGE, [1, 30, 7, 2, 13, 5])
    q, kv = _tensors(rng, batch, pages, hq, hkv, dim, torch.float32)
    w = ShardedMultiLevelCascadeAttentionWrapper(2, group=group, sharded_levels=(0, 1))
    w.plan(*arrays, hq, hkv, dim, PAGE)
    _check(w.run(q, kv, return_lse=True), _unsharded(arrays, q, kv, hq, hkv, dim), 2e-6,
           f"all levels sharded, rank {rank}/{world}")


def _case_local_pools(group, rank, world):
    """What an engine does: each rank's pool holds only its prefix pages
    (plus the requests' own pages), and plan() gets its shard with local ids
    (shard_input="local")."""
    rng = np.random.default_rng(5)
    hq, hkv, dim, batch = 8, 2, 32, 3
    arrays, pages = _cascade(rng, batch, 17 * PAGE + 2, [4, 6, 1])
    q, kv = _tensors(rng, batch, pages, hq, hkv, dim, torch.float32)
    want = _unsharded(arrays, q, kv, hq, hkv, dim)
    kp, ki, kl = shard_level(arrays[1][0], arrays[2][0], arrays[3][0], PAGE, rank, world)
    own = arrays[2][1]
    local_pool = torch.cat([kv[torch.from_numpy(ki).long()], kv[torch.from_numpy(own).long()]])
    local = [list(a) for a in arrays]
    local[1][0], local[2][0], local[3][0] = kp, np.arange(ki.size, dtype=np.int32), kl
    local[2][1] = np.arange(ki.size, ki.size + own.size, dtype=np.int32)
    w = ShardedMultiLevelCascadeAttentionWrapper(2, group=group)
    w.plan(*local, hq, hkv, dim, PAGE, shard_input="local")
    _check(w.run(q, local_pool, return_lse=True), want, 2e-6, f"local pools, rank {rank}")


def _case_tensor_parallel(world, rank):
    """TP x SP: ranks (t, s) = divmod(rank, sp); the heads split by t, the
    prefix pages by s over the SP subgroup of the ranks with the same t."""
    tp = 2
    sp = world // tp
    groups = [dist.new_group(list(range(t * sp, (t + 1) * sp))) for t in range(tp)]
    t, _ = divmod(rank, sp)
    rng = np.random.default_rng(13)
    hq, hkv, dim, batch = 8, 4, 32, 4
    arrays, pages = _cascade(rng, batch, 29 * PAGE + 1, [3, 8, 2, 5])
    q, kv = _tensors(rng, batch, pages, hq, hkv, dim, torch.float32)
    want = _unsharded(arrays, q, kv, hq, hkv, dim)
    lq, lkv = hq // tp, hkv // tp
    w = ShardedMultiLevelCascadeAttentionWrapper(2, group=groups[t])
    w.plan(*arrays, lq, lkv, dim, PAGE)
    got = w.run(q[:, t * lq:(t + 1) * lq].contiguous(),
                kv[:, :, :, t * lkv:(t + 1) * lkv].contiguous(), return_lse=True)
    _check(got, (want[0][:, t * lq:(t + 1) * lq], want[1][:, t * lq:(t + 1) * lq]), 2e-6,
           f"TP {tp} x SP {sp}, rank {rank}")


def _case_errors(group):
    with pytest.raises(ValueError, match="causal applies to the last level"):
        w = ShardedMultiLevelCascadeAttentionWrapper(2, group=group, sharded_levels=(0, 1))
        rng = np.random.default_rng(1)
        arrays, _ = _cascade(rng, 2, 8, [2, 3])
        w.plan(*arrays, 2, 2, 16, PAGE, causal=True)
    with pytest.raises(ValueError, match="outside"):
        ShardedMultiLevelCascadeAttentionWrapper(2, group=group, sharded_levels=(2,))
    with pytest.raises(cascade_mlir.NotPlannedError):
        ShardedMultiLevelCascadeAttentionWrapper(2, group=group).run(
            torch.zeros(1, 2, 16), torch.zeros(1, 2, PAGE, 2, 16))


def _worker(rank, world, port):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    try:
        group = dist.group.WORLD
        _case_two_level(group, rank, world)
        _case_two_level(group, rank, world, prefix=1)  # fewer pages than ranks
        _case_two_level(group, rank, world, dtype=torch.float16, atol=2e-3)
        _case_three_level_prefill(group, rank, world)
        _case_all_sharded(group, rank, world)
        _case_local_pools(group, rank, world)
        if world % 2 == 0:
            _case_tensor_parallel(world, rank)
        _case_errors(group)
        dist.barrier()
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("world", [1, 2, 3, 4])
def test_sharded_cascade_equals_unsharded(world):
    import torch.multiprocessing as mp
    mp.spawn(_worker, args=(world, _free_port()), nprocs=world, join=True)


def test_shard_bounds_cover_every_page_once():
    for pages in (0, 1, 3, 10, 4097):
        for world in (1, 2, 3, 4, 8):
            runs = [shard_bounds(pages, r, world) for r in range(world)]
            assert runs[0][0] == 0 and runs[-1][1] == pages
            assert all(a[1] == b[0] for a, b in zip(runs, runs[1:]))
            assert max(h - l for l, h in runs) - min(h - l for l, h in runs) <= 1
    with pytest.raises(ValueError, match="outside a group"):
        shard_bounds(4, 2, 2)


def test_shard_level_keeps_last_page_only_at_the_end():
    kp = np.array([0, 5, 6], np.int32)
    ki = np.array([9, 8, 7, 6, 5, 4], np.int32)
    kl = np.array([3, 2], np.int32)
    parts = [shard_level(kp, ki, kl, 16, r, 2) for r in range(2)]
    assert parts[0][0].tolist() == [0, 2, 2] and parts[0][1].tolist() == [9, 8]
    assert parts[0][2].tolist() == [16, 16]
    assert parts[1][0].tolist() == [0, 3, 4] and parts[1][1].tolist() == [7, 6, 5, 4]
    assert parts[1][2].tolist() == [3, 2]


def test_needs_an_initialized_group():
    if dist.is_initialized():
        pytest.skip("a process group is already initialized in this process")
    with pytest.raises(RuntimeError, match="init_process_group"):
        ShardedMultiLevelCascadeAttentionWrapper(2)
