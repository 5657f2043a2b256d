"""Multi-level cascades whose shared levels are sharded across ranks.

A cascade level is exact under any split of its KV: every part yields an
attention state (v, s) and `merge_states` over the parts gives the state of
the whole. `ShardedMultiLevelCascadeAttentionWrapper` uses that to spread a
long shared prefix over the ranks of a `torch.distributed` process group
(docs/multi_gpu.md):

1. every rank attends all queries to its shard of the sharded levels (the
   pages of each group split into contiguous, near-equal runs by rank) and
   gets one state [rows, H, D] / [rows, H];
2. the states are all-gathered into preallocated buffers (fixed sizes: the
   collective is NCCL's all_gather on CUDA tensors, gloo's on CPU tensors);
3. meanwhile each rank runs the levels that are not sharded (each request's
   own pages, held by every rank) as one more state;
4. `merge_states` over the W gathered states (and the local one) gives every
   rank the result of the unsharded cascade, up to the rounding of the
   per-rank states to q's dtype.

Heads split across ranks (tensor parallelism) compose: give the wrapper the
process group of the ranks that share a head slice and plan with the local
head counts; the states never mix heads.

With a CUDA `float_workspace_buffer` the kernels run on the GPU and run() is
CUDA-graph safe (plan with `use_cuda_graph=True`, capture run(), replan and
replay); with None the float64 CPU reference computes each rank's levels
(torch CPU tensors and a gloo group), which is how the tests check exactness.
"""

from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from ._frameworks import host_int32
from ._gpu import NotPlannedError
from .cascade import MultiLevelCascadeAttentionWrapper, RunResult, merge_states

__all__ = [
    "shard_bounds",
    "shard_level",
    "ShardedMultiLevelCascadeAttentionWrapper",
]


def shard_bounds(num_pages: int, rank: int, world_size: int) -> Tuple[int, int]:
    """The positions [lo, hi) of a group's page list that `rank` holds: the
    list cut into `world_size` contiguous runs whose sizes differ by at most
    one page (a rank may hold none when pages < world_size)."""
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is outside a group of {world_size} ranks")
    if num_pages < 0:
        raise ValueError(f"num_pages must be >= 0, got {num_pages}")
    return num_pages * rank // world_size, num_pages * (rank + 1) // world_size


def shard_level(kv_indptr: Any, kv_indices: Any, kv_last_page_len: Any, page_size: int,
                rank: int, world_size: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One rank's shard of a level: for every group, the pages at the
    positions `shard_bounds` gives it (their ids unchanged), with the last
    page's length where the shard ends the group's list and full pages
    elsewhere."""
    kp = host_int32(kv_indptr, "kv_indptr")
    ki = host_int32(kv_indices, "kv_indices")
    kl = host_int32(kv_last_page_len, "kv_last_page_len")
    if kp.size < 1 or kl.size != kp.size - 1:
        raise ValueError(f"kv_last_page_len has {kl.size} entries, expected "
                         f"batch_size = {kp.size - 1}")
    indptr = [0]
    indices: List[np.ndarray] = []
    last = np.full(kl.size, page_size, dtype=np.int32)
    for i in range(kl.size):
        start, n = int(kp[i]), int(kp[i + 1] - kp[i])
        lo, hi = shard_bounds(n, rank, world_size)
        indices.append(ki[start + lo:start + hi])
        indptr.append(indptr[-1] + hi - lo)
        if hi == n and n:
            last[i] = kl[i]
    ids = np.concatenate(indices) if indices else np.zeros(0, np.int32)
    return np.asarray(indptr, np.int32), ids.astype(np.int32), last


def _dist() -> Any:
    import torch.distributed as dist
    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError("ShardedMultiLevelCascadeAttentionWrapper needs an initialized "
                           "torch.distributed process group (torch.distributed."
                           "init_process_group)")
    return dist


class ShardedMultiLevelCascadeAttentionWrapper:
    """`MultiLevelCascadeAttentionWrapper` with some levels sharded across
    the ranks of `group` (default: the world).

    Every rank constructs it, plans with the same arguments (the global
    cascade, or its own shard with `shard_input="local"`) and runs every
    layer with its own page pool; every rank gets the whole result.

    sharded_levels: the levels whose pages are split by rank (default: level
    0, the shared prefix). In the arrays given to plan(), the ids of the
    pages a rank holds (`shard_bounds` of each group's list) index that
    rank's `paged_kv_cache`; the ids at the other positions are not read.
    The other levels are computed by every rank from its own pool.
    """

    def __init__(self, num_levels: int, float_workspace_buffer: Any = None,
                 kv_layout: str = "NHD", use_cuda_graph: bool = False,
                 group: Any = None, sharded_levels: Sequence[int] = (0,),
                 num_sms: int = 132):
        levels = sorted({int(l) for l in sharded_levels})
        if not isinstance(num_levels, int) or isinstance(num_levels, bool) or num_levels < 1:
            raise ValueError(f"num_levels must be an int >= 1, got {num_levels!r}")
        if not levels:
            raise ValueError("sharded_levels is empty: use MultiLevelCascadeAttentionWrapper "
                             "for a cascade without sharded levels")
        if levels[0] < 0 or levels[-1] >= num_levels:
            raise ValueError(f"sharded_levels {list(sharded_levels)} name a level outside "
                             f"[0, {num_levels})")
        dist = _dist()
        self._group = group
        self._world = dist.get_world_size(group)
        self._rank = dist.get_rank(group)
        self._num_levels = num_levels
        self._sharded = levels
        self._local = [l for l in range(num_levels) if l not in levels]
        self._cuda_graph = use_cuda_graph

        def inner(n: int) -> MultiLevelCascadeAttentionWrapper:
            return MultiLevelCascadeAttentionWrapper(
                n, float_workspace_buffer, kv_layout, use_cuda_graph=use_cuda_graph,
                num_sms=num_sms)
        self._shard = inner(len(levels))
        self._rest = inner(len(self._local)) if self._local else None
        self._buffers: Optional[List[Any]] = None
        self._shape: Optional[Tuple[int, int, int]] = None

    @property
    def world_size(self) -> int:
        return self._world

    @property
    def rank(self) -> int:
        """This process's rank in the wrapper's group."""
        return self._rank

    @property
    def sharded_levels(self) -> List[int]:
        return list(self._sharded)

    def plan(self, qo_indptr_arr: Sequence, paged_kv_indptr_arr: Sequence,
             paged_kv_indices_arr: Sequence, paged_kv_last_page_len: Sequence,
             num_qo_heads: int, num_kv_heads: int, head_dim: int, page_size: int,
             causal: bool = False, shard_input: str = "global", **options: Any) -> None:
        """Plans this rank's part; the arguments are those of
        `MultiLevelCascadeAttentionWrapper.plan` plus `shard_input`:
        "global" (the sharded levels' arrays list every page; this rank keeps
        its `shard_level`) or "local" (they are this rank's shard already).
        `causal` applies to the last level, which must then not be sharded
        (a causal mask is positional: a shard would need its offset)."""
        n = self._num_levels
        arrays = (qo_indptr_arr, paged_kv_indptr_arr, paged_kv_indices_arr,
                  paged_kv_last_page_len)
        names = ("qo_indptr_arr", "paged_kv_indptr_arr", "paged_kv_indices_arr",
                 "paged_kv_last_page_len")
        for name, arr in zip(names, arrays):
            if isinstance(arr, (str, bytes)) or not hasattr(arr, "__len__") or len(arr) != n:
                raise ValueError(f"{name} must be a list with one array per level ({n})")
        if shard_input not in ("global", "local"):
            raise ValueError(f"shard_input must be 'global' or 'local', got {shard_input!r}")
        if causal and n - 1 in self._sharded:
            raise ValueError(f"causal applies to the last level ({n - 1}), which is sharded: "
                             "shard prefix levels only")
        shard = [list(a[l] for l in self._sharded) for a in arrays]
        if shard_input == "global":
            for j, l in enumerate(self._sharded):
                shard[1][j], shard[2][j], shard[3][j] = shard_level(
                    paged_kv_indptr_arr[l], paged_kv_indices_arr[l],
                    paged_kv_last_page_len[l], page_size, self._rank, self._world)
        self._shard.plan(shard[0], shard[1], shard[2], shard[3], num_qo_heads, num_kv_heads,
                         head_dim, page_size, causal=False, **options)
        if self._rest is not None:
            rest = [list(a[l] for l in self._local) for a in arrays]
            self._rest.plan(rest[0], rest[1], rest[2], rest[3], num_qo_heads, num_kv_heads,
                            head_dim, page_size, causal=causal, **options)
        rows = int(host_int32(qo_indptr_arr[0], "qo_indptr_arr[0]")[-1])
        self._shape = (rows, num_qo_heads, head_dim)

    begin_forward = plan

    def _state_buffers(self, q: Any) -> List[Any]:
        """The states' buffers, made once per shape, dtype and device so that
        a captured CUDA graph keeps its addresses: this rank's state of the
        sharded levels and of the other levels ([rows, H, D] / [rows, H]),
        the all-gather's receive buffers ([W * rows, H, D] / [W * rows, H])
        and the merge's inputs ([rows, N, H, D] / [rows, N, H], N = W plus
        one when some levels are not sharded)."""
        import torch
        assert self._shape is not None
        rows, heads, dim = self._shape
        w, n = self._world, self._world + (self._rest is not None)
        b = self._buffers
        if b is not None and b[0].dtype == q.dtype and b[0].device == q.device \
                and tuple(b[0].shape) == (rows, heads, dim) and b[6].shape[1] == n:
            return b

        def new(shape: Tuple[int, ...], dtype: Any) -> Any:
            return torch.empty(shape, dtype=dtype, device=q.device)
        f32 = torch.float32
        b = [new((rows, heads, dim), q.dtype), new((rows, heads), f32),
             new((rows, heads, dim), q.dtype), new((rows, heads), f32),
             new((w * rows, heads, dim), q.dtype), new((w * rows, heads), f32),
             new((rows, n, heads, dim), q.dtype), new((rows, n, heads), f32)]
        self._buffers = b
        return b

    def run(self, q: Any, paged_kv_cache: Any, out: Any = None, lse: Any = None,
            return_lse: bool = False, k_scale: Optional[float] = None,
            v_scale: Optional[float] = None) -> RunResult:
        """The whole cascade's attention of q (torch, replicated on every
        rank) over the ranks' pools; the same result on every rank."""
        if self._shape is None:
            raise NotPlannedError("plan() must be called before run()")
        dist = _dist()
        rows, heads, dim = self._shape
        if tuple(q.shape) != (rows, heads, dim):
            raise ValueError(f"q must be [{rows}, {heads}, {dim}] as planned, got "
                             f"{list(q.shape)}")
        v, s, rv, rs, gv, gs, mv, ms = self._state_buffers(q)
        self._shard.run(q, paged_kv_cache, out=v, lse=s, k_scale=k_scale, v_scale=v_scale)
        works = [dist.all_gather_into_tensor(gv, v, group=self._group, async_op=True),
                 dist.all_gather_into_tensor(gs, s, group=self._group, async_op=True)]
        w = self._world
        if self._rest is not None:
            # Overlaps the gather: the levels every rank holds.
            self._rest.run(q, paged_kv_cache, out=rv, lse=rs, k_scale=k_scale,
                           v_scale=v_scale)
            mv[:, w].copy_(rv)
            ms[:, w].copy_(rs)
        for work in works:
            work.wait()
        mv[:, :w].copy_(gv.view(w, rows, heads, dim).transpose(0, 1))
        ms[:, :w].copy_(gs.view(w, rows, heads).transpose(0, 1))
        o, l = merge_states(mv, ms)
        if out is not None:
            out.copy_(o)
            o = out
        if lse is not None:
            lse.copy_(l)
            l = lse
        return (o, l) if return_lse else o

    forward = run

    def end_forward(self) -> None:
        """Deprecated in FlashInfer; does nothing."""
