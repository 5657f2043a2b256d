"""The float64 CPU reference behind the cascade API (cascade_mlir.cascade).

What the wrappers and the merges compute without a GPU: numpy arrays or CPU
torch tensors in, the runtime's float64 reference (`_runtime.ref_*`) in
between, results in the caller's framework and dtype out.
"""

from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

from . import _runtime
from .config import AttentionConfig

#: What run() returns: the output, or (output, lse) with return_lse=True.
RunResult = Union[Any, Tuple[Any, Any]]


# --- array plumbing (CPU reference) ---------------------------------------------

def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch")


def _to_numpy(x: Any, name: str) -> np.ndarray:
    if _is_torch(x):
        if x.device.type != "cpu":
            raise ValueError(f"{name} is on {x.device} while the other arguments are on "
                             "the host: pass all tensors on one device")
        if str(x.dtype) in ("torch.bfloat16", "torch.float8_e4m3fn", "torch.float8_e5m2"):
            x = x.float()  # exact
        return x.detach().numpy()
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{name} must be a numpy array or a torch tensor, got {type(x).__name__}")
    return x


def _like(result: np.ndarray, template: Any) -> Any:
    """Returns `result` in the kind (numpy/torch) and dtype of `template`."""
    if _is_torch(template):
        import torch
        return torch.from_numpy(np.ascontiguousarray(result)).to(template.dtype)
    return result.astype(template.dtype)


def _lse_out(result: np.ndarray, template: Any) -> Any:
    if _is_torch(template):
        import torch
        return torch.from_numpy(np.ascontiguousarray(result, dtype=np.float32))
    return result.astype(np.float32)


# --- run() without a GPU -------------------------------------------------------

def _reference_run(cfg: AttentionConfig, causal: bool, levels: List[Any], q: Any,
                   paged_kv_cache: Any, k_scale: float = 1.0,
                   v_scale: float = 1.0, state_inputs: Optional[Dict[str, Any]] = None
                   ) -> Tuple[np.ndarray, np.ndarray]:
    qn = _to_numpy(q, "q")
    if qn.ndim != 3 or qn.shape[1] != cfg.num_qo_heads or qn.shape[2] != cfg.head_dim:
        raise ValueError(f"q must be [rows, {cfg.num_qo_heads}, {cfg.head_dim}], "
                         f"got {list(qn.shape)}")
    if isinstance(paged_kv_cache, (tuple, list)):
        kv = [np.asarray(_to_numpy(t, "paged_kv_cache"), dtype=np.float32)
              for t in paged_kv_cache]
    else:
        kv = [np.asarray(_to_numpy(paged_kv_cache, "paged_kv_cache"), dtype=np.float32)]
    if cfg.split_head_dims:
        _check_split_kv(cfg, kv)
    o, lse = _runtime.ref_attention(
        np.asarray(qn, dtype=np.float32), kv, levels, cfg.page_size,
        cfg.kv_layout.upper(), causal=causal, k_scale=k_scale, v_scale=v_scale,
        state_inputs={name: np.asarray(_to_numpy(t, name), np.float32)
                      for name, t in (state_inputs or {}).items() if t is not None},
        **cfg.score_args())
    return o, lse


def _check_split_kv(cfg: AttentionConfig, kv: List[np.ndarray]) -> None:
    """A (k, v) pair whose head_dims are the configuration's: k's head_dim
    (q's), v's head_dim_vo (the output's)."""
    if len(kv) != 2:
        raise ValueError(f"paged_kv_cache is one tensor, but the plan's head_dim_vo "
                         f"({cfg.v_dim}) differs from head_dim ({cfg.head_dim}): pass a "
                         "(k_cache, v_cache) pair, k [..., head_dim] and v [..., "
                         "head_dim_vo] (a 5-D pool holds k and v of one head_dim)")
    for name, t, d, what in (("paged_kv_cache[0]", kv[0], cfg.head_dim, "head_dim"),
                             ("paged_kv_cache[1]", kv[1], cfg.v_dim, "head_dim_vo")):
        if t.ndim != 4 or t.shape[3] != d:
            raise ValueError(f"{name} has shape {list(t.shape)}, expected 4-D pages "
                             f"whose last dim is {what} = {d}")


def _reference_outputs(cfg: AttentionConfig, causal: bool, levels: List[Any], q: Any,
                       paged_kv_cache: Any, out: Any, lse: Any,
                       return_lse: bool, k_scale: float = 1.0,
                       v_scale: float = 1.0,
                       state_inputs: Optional[Dict[str, Any]] = None) -> RunResult:
    """run() without a GPU: the float64 reference, in q's framework and
    dtype, written into `out` / `lse` when given. The output is
    [rows, num_qo_heads, head_dim_vo] (q's shape unless v has a head_dim of
    its own)."""
    o, l = _reference_run(cfg, causal, levels, q, paged_kv_cache, k_scale, v_scale,
                          state_inputs)
    o, l = _like(o, q), _lse_out(l, q)
    if out is not None:
        if tuple(out.shape) != tuple(o.shape):
            raise ValueError(f"out has shape {list(out.shape)}, expected {list(o.shape)} "
                             "([rows of q, num_qo_heads, head_dim_vo])")
        out[...] = o
        o = out
    if lse is not None:
        lse[...] = l
        l = lse
    return (o, l) if return_lse else o
