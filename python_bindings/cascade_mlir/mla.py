"""Multi-head latent attention (MLA, DeepSeek-V2/V3 after weight absorption):
FlashInfer 0.5.3's `BatchMLAPagedAttentionWrapper` interface over the
float64 reference (issue 44's first step; no GPU kernels yet).

Per token the cache holds one latent vector `ckv` [head_dim_ckv] (512 in
DeepSeek) and one rotary key `kpe` [head_dim_kpe] (64), shared by every
head; pages are `ckv_cache [num_pages, page_size, head_dim_ckv]` and
`kpe_cache [num_pages, page_size, head_dim_kpe]`. A query row of head h
attends with

    x_t = sm_scale * (q_nope[h] . ckv_t + q_pe[h] . kpe_t)
    o[h] = sum_t softmax(x)_t * ckv_t            (the latent space)
    lse[h] = log2(sum_t e^(x_t))                 (base 2; base e on request)

over the first `kv_len_arr[b]` tokens of request b's pages (`kv_indices`
from `kv_indptr[b]`; entries past `kv_indptr[-1]` are ignored, as
FlashInfer reads them). Under `causal`, query j of a request of `qo_len`
rows sees tokens `t <= kv_len - qo_len + j`. A row with no visible token is
the empty state (0, -inf). `sm_scale` is given (the absorbed head dim
decides it, not head_dim_ckv).

The wrappers compute on the host with the runtime's float64 reference
(numpy, CPU tensors, or a host / None workspace): BatchMLAPagedAttentionWrapper
one level, MultiLevelMLACascadeWrapper a cascade of latent levels (a shared
prefix of latent pages and per-request levels). A CUDA workspace is refused
at construction with a clear error until the MLA kernels exist.
"""

from typing import Any, Dict, Optional, Sequence, Tuple, Union

import numpy as np

from . import _runtime
from ._frameworks import host_int32
from ._gpu import NotPlannedError, host_kv_indices, workspace_device
from ._reference import _like, _lse_out, _to_numpy

__all__ = ["BatchMLAPagedAttentionWrapper", "MultiLevelMLACascadeWrapper", "mla_cascade_reference",
           "mla_reference"]

LN2 = float(np.log(2.0))


def _latent_level(qo_indptr: Any, kv_indptr: Any, kv_indices: Any, kv_len: Any,
                  page: int) -> Any:
    """One level for the runtime's reference: only the pages that hold each
    request's first kv_len tokens (a request may own more: FlashInfer reads
    only kv_len tokens), and their last page's length."""
    kv_len = np.asarray(kv_len, np.int64)
    kv_indptr = np.asarray(kv_indptr, np.int64)
    need = (kv_len + page - 1) // page
    kp = np.concatenate([[0], np.cumsum(need)]).astype(np.int32)
    ki = np.concatenate([np.asarray(kv_indices[b:b + n], np.int32)
                         for b, n in zip(kv_indptr[:-1], need)] + [np.zeros(0, np.int32)])
    last = np.where(need > 0, kv_len - (need - 1) * page, 0).astype(np.int32)
    return _runtime.Level(np.asarray(qo_indptr, np.int32), kp, ki, last)


def mla_cascade_reference(q_nope: np.ndarray, q_pe: np.ndarray, ckv_cache: np.ndarray,
                          kpe_cache: np.ndarray, levels: Sequence[Tuple[Any, Any, Any, Any]],
                          sm_scale: float, causal: bool = False
                          ) -> Tuple[np.ndarray, np.ndarray]:
    """(o [rows, H, head_dim_ckv], lse [rows, H] base 2), float64: the merge
    of the latent levels `levels` (each (qo_indptr, kv_indptr, kv_indices,
    kv_len) over the one cache; every level covers all rows), the causal
    mask on the last level only (docs/semantics.md, "Latent (MLA) cache" and
    "Multi-level cascades"). The runtime's float64 reference, as multi-query
    attention with k = [ckv | kpe] and v = ckv, one KV head; inputs are taken
    as float32 (exact for f16, bf16 and fp8 values)."""
    page = ckv_cache.shape[1]
    q = np.concatenate([q_nope, q_pe], axis=-1).astype(np.float32)
    k = np.concatenate([ckv_cache, kpe_cache], axis=-1)[:, :, None, :].astype(np.float32)
    v = np.asarray(ckv_cache, np.float32)[:, :, None, :]
    return _runtime.ref_attention(q, [k, v], [_latent_level(*lv, page) for lv in levels],
                                  page, "NHD", causal=causal, sm_scale=float(sm_scale),
                                  pos_encoding_mode="NONE", window_left=-1,
                                  logits_soft_cap=0.0, rope_scale=1.0, rope_theta=1e4)


def mla_reference(q_nope: np.ndarray, q_pe: np.ndarray, ckv_cache: np.ndarray,
                  kpe_cache: np.ndarray, qo_indptr: np.ndarray, kv_indptr: np.ndarray,
                  kv_indices: np.ndarray, kv_len: np.ndarray, sm_scale: float,
                  causal: bool = False) -> Tuple[np.ndarray, np.ndarray]:
    """mla_cascade_reference of one level: (o, lse base 2), float64, of the
    arrays as the module's docstring defines them."""
    return mla_cascade_reference(q_nope, q_pe, ckv_cache, kpe_cache,
                                 [(qo_indptr, kv_indptr, kv_indices, kv_len)], sm_scale, causal)


def _check_level(qo_indptr: Any, kv_indptr: Any, kv_indices: Any, kv_len_arr: Any,
                 page_size: int, where: str = "") -> dict:
    """One level's host arrays, checked as FlashInfer's MLA plan() takes them
    (kv_indices may be longer than kv_indptr[-1]); messages name `where`."""
    qo = host_int32(qo_indptr, "qo_indptr" + where)
    kp = host_int32(kv_indptr, "kv_indptr" + where)
    ki = host_kv_indices(kv_indices, kp, "kv_indices" + where)
    kl = host_int32(kv_len_arr, "kv_len_arr" + where)
    b = kp.size - 1
    if b < 0 or qo.size != b + 1 or kl.size != b:
        raise ValueError(f"qo_indptr{where} ({qo.size}), kv_indptr{where} ({kp.size}) and "
                         f"kv_len_arr{where} ({kl.size}) must have batch_size + 1, "
                         "batch_size + 1 and batch_size entries")
    for name, ip in (("qo_indptr", qo), ("kv_indptr", kp)):
        if ip[0] != 0 or np.any(np.diff(ip) < 0):
            raise ValueError(f"{name}{where} must start at 0 and not decrease")
    if ki.size < kp[-1]:
        raise ValueError(f"kv_indices{where} has {ki.size} entries but kv_indptr{where}[-1] "
                         f"= {kp[-1]} (it needs at least that many)")
    pages = np.diff(kp)
    bad = np.nonzero((kl < 0) | (kl > pages * page_size))[0]
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"request {i}{where}: kv_len {kl[i]} does not fit its {pages[i]} "
                         f"page(s) of {page_size} tokens")
    return dict(qo=qo, kp=kp, ki=ki[:int(kp[-1])], kl=kl)


def _check_inputs(p: dict, rows: int, q_nope: Any, q_pe: Any, ckv_cache: Any,
                  kpe_cache: Any) -> Dict[str, np.ndarray]:
    """The run() tensors as host arrays, shapes checked against the plan `p`
    and its levels' page ids against the cache."""
    arrays = {}
    want = {"q_nope": (rows, p["heads"], p["dc"]), "q_pe": (rows, p["heads"], p["dp"]),
            "ckv_cache": (None, p["page"], p["dc"]), "kpe_cache": (None, p["page"], p["dp"])}
    for name, t in (("q_nope", q_nope), ("q_pe", q_pe), ("ckv_cache", ckv_cache),
                    ("kpe_cache", kpe_cache)):
        a = _to_numpy(t, name)
        shape = want[name]
        if a.ndim != 3 or any(w is not None and w != s for w, s in zip(shape, a.shape)):
            raise ValueError(f"{name} has shape {list(a.shape)}, expected "
                             f"{['num_pages' if w is None else w for w in shape]}")
        arrays[name] = a
    pages = arrays["ckv_cache"].shape[0]
    if arrays["kpe_cache"].shape[0] != pages:
        raise ValueError("ckv_cache and kpe_cache must have the same number of pages")
    for lv in p["levels"]:
        if lv["ki"].size and (lv["ki"].min() < 0 or lv["ki"].max() >= pages):
            raise ValueError(f"kv_indices holds a page id outside [0, {pages})")
    return arrays


def _outputs(o: np.ndarray, s: np.ndarray, like: Any, out: Any, lse: Any, return_lse: bool,
             base_e: bool) -> Union[Any, Tuple[Any, Any]]:
    """run()'s results in `like`'s framework, written into out / lse where
    given; lse in base e on request."""
    if base_e:
        s = s * LN2
    o_t, s_t = _like(o, like), _lse_out(s, like)
    if out is not None:
        if tuple(out.shape) != tuple(o.shape):
            raise ValueError(f"out has shape {list(out.shape)}, expected {list(o.shape)}")
        out[...] = o_t
        o_t = out
    if lse is not None:
        if tuple(lse.shape) != tuple(s.shape):
            raise ValueError(f"lse has shape {list(lse.shape)}, expected {list(s.shape)}")
        lse[...] = s_t
        s_t = lse
    return (o_t, s_t) if return_lse else o_t


def _refuse_device_workspace(name: str, workspace: Any) -> None:
    if workspace_device(workspace) is not None:
        raise NotImplementedError(
            f"{name}: cascade_mlir has no MLA kernels yet; with a host "
            "float_workspace_buffer (or None) the float64 reference computes run()")


class BatchMLAPagedAttentionWrapper:
    """FlashInfer 0.5.3's MLA wrapper (`plan` / `run` signatures) on the
    float64 reference; see the module's docstring."""

    def __init__(self, float_workspace_buffer: Any = None, use_cuda_graph: bool = False,
                 qo_indptr: Any = None, kv_indptr: Any = None, kv_indices: Any = None,
                 kv_len_arr: Any = None, backend: str = "auto"):
        _refuse_device_workspace("BatchMLAPagedAttentionWrapper", float_workspace_buffer)
        if backend not in ("auto", "fa2", "fa3"):
            raise ValueError(f"backend must be 'auto', 'fa2' or 'fa3', got {backend!r}")
        self._plan: Optional[dict] = None

    def plan(self, qo_indptr: Any, kv_indptr: Any, kv_indices: Any, kv_len_arr: Any,
             num_heads: int, head_dim_ckv: int, head_dim_kpe: int, page_size: int,
             causal: bool, sm_scale: float, q_data_type: Any, kv_data_type: Any,
             use_profiler: bool = False) -> None:
        if min(num_heads, head_dim_ckv, head_dim_kpe, page_size) < 1:
            raise ValueError("num_heads, head_dim_ckv, head_dim_kpe and page_size must be >= 1")
        level = _check_level(qo_indptr, kv_indptr, kv_indices, kv_len_arr, page_size)
        if use_profiler:
            raise ValueError("use_profiler: the reference has no intra-kernel profiler")
        self._plan = dict(levels=[level], heads=int(num_heads), dc=int(head_dim_ckv),
                          dp=int(head_dim_kpe), page=int(page_size), causal=bool(causal),
                          sm_scale=float(sm_scale))

    def run(self, q_nope: Any, q_pe: Any, ckv_cache: Any, kpe_cache: Any, out: Any = None,
            lse: Any = None, return_lse: bool = False, profiler_buffer: Any = None,
            kv_len: Any = None, page_table: Any = None,
            return_lse_base_on_e: bool = False) -> Union[Any, Tuple[Any, Any]]:
        p = self._plan
        if p is None:
            raise NotPlannedError("plan() must be called before run()")
        if profiler_buffer is not None or kv_len is not None or page_table is not None:
            raise ValueError("profiler_buffer, kv_len and page_table belong to FlashInfer's "
                             "profiler and cutlass backend, which this wrapper does not have")
        lv = p["levels"][0]
        a = _check_inputs(p, int(lv["qo"][-1]), q_nope, q_pe, ckv_cache, kpe_cache)
        o, s = mla_reference(a["q_nope"], a["q_pe"], a["ckv_cache"], a["kpe_cache"],
                             lv["qo"], lv["kp"], lv["ki"], lv["kl"], p["sm_scale"],
                             p["causal"])
        return _outputs(o, s, q_nope, out, lse, return_lse, return_lse_base_on_e)


class MultiLevelMLACascadeWrapper:
    """A cascade of latent (MLA) levels over one latent cache, the MLA
    counterpart of `MultiLevelCascadeAttentionWrapper`: level l has its own
    (qo_indptr, kv_indptr, kv_indices, kv_len_arr), every level covers the
    same query rows, and the result is the merge of the levels' states
    (base-2 lse), `causal` on the last level only. A shared system prompt is
    level 0 with qo_indptr [0, rows]: its latent pages are one request for
    all rows (and all heads), which MLA kernels read once. FlashInfer has no
    MLA cascade; plan() takes its MLA wrapper's arguments with one array per
    level in each of the four lists. Computed by the float64 reference
    (`mla_cascade_reference`) until the MLA kernels exist."""

    def __init__(self, num_levels: int, float_workspace_buffer: Any = None):
        _refuse_device_workspace("MultiLevelMLACascadeWrapper", float_workspace_buffer)
        if not isinstance(num_levels, int) or num_levels < 1:
            raise ValueError(f"num_levels must be a positive int, got {num_levels!r}")
        self._num_levels = num_levels
        self._plan: Optional[dict] = None

    def plan(self, qo_indptr_arr: Sequence, kv_indptr_arr: Sequence,
             kv_indices_arr: Sequence, kv_len_arr: Sequence, num_heads: int,
             head_dim_ckv: int, head_dim_kpe: int, page_size: int, causal: bool,
             sm_scale: float, q_data_type: Any = None, kv_data_type: Any = None) -> None:
        lists = (qo_indptr_arr, kv_indptr_arr, kv_indices_arr, kv_len_arr)
        if any(len(x) != self._num_levels for x in lists):
            raise ValueError(f"expected {self._num_levels} levels in each of qo_indptr_arr, "
                             "kv_indptr_arr, kv_indices_arr and kv_len_arr, got "
                             f"{[len(x) for x in lists]}")
        if min(num_heads, head_dim_ckv, head_dim_kpe, page_size) < 1:
            raise ValueError("num_heads, head_dim_ckv, head_dim_kpe and page_size must be >= 1")
        levels = [_check_level(*arrays, page_size, where=f" [level {i}]")
                  for i, arrays in enumerate(zip(*lists))]
        rows = {int(lv["qo"][-1]) for lv in levels}
        if len(rows) != 1:
            raise ValueError("every level must cover the same query rows (qo_indptr[-1]), "
                             f"got {[int(lv['qo'][-1]) for lv in levels]}")
        self._plan = dict(levels=levels, rows=rows.pop(), heads=int(num_heads),
                          dc=int(head_dim_ckv), dp=int(head_dim_kpe), page=int(page_size),
                          causal=bool(causal), sm_scale=float(sm_scale))

    def run(self, q_nope: Any, q_pe: Any, ckv_cache: Any, kpe_cache: Any, out: Any = None,
            lse: Any = None, return_lse: bool = False,
            return_lse_base_on_e: bool = False) -> Union[Any, Tuple[Any, Any]]:
        p = self._plan
        if p is None:
            raise NotPlannedError("plan() must be called before run()")
        a = _check_inputs(p, p["rows"], q_nope, q_pe, ckv_cache, kpe_cache)
        o, s = mla_cascade_reference(
            a["q_nope"], a["q_pe"], a["ckv_cache"], a["kpe_cache"],
            [(lv["qo"], lv["kp"], lv["ki"], lv["kl"]) for lv in p["levels"]],
            p["sm_scale"], p["causal"])
        return _outputs(o, s, q_nope, out, lse, return_lse, return_lse_base_on_e)
