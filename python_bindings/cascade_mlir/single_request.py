"""`flashinfer.single_decode_with_kv_cache` / `single_prefill_with_kv_cache`
over Cascade-MLIR: attention of one request over contiguous K/V, on the
batch kernels (a batch of one whose K/V is a page-size-1 pool with the
identity page table, _contiguous.py). On the GPU the call plans and runs a
wrapper kept per device and kind (its 128 MiB workspace is allocated once,
grown when a plan needs more);
host arrays run the float64 CPU reference."""

import math
import re
from typing import Any, Dict, Optional, Tuple

import numpy as np

from ._contiguous import token_pages
from ._frameworks import framework_of
from ._signatures import flashinfer_signature
from ._unsupported import UnsupportedFeatureError
from .config import ScoreArgs
from .decode import BatchDecodeWithPagedKVCacheWrapper
from .prefill import BatchPrefillWithPagedKVCacheWrapper

__all__ = ["single_decode_with_kv_cache", "single_prefill_with_kv_cache",
           "single_prefill_with_kv_cache_return_lse"]

#: Float workspace of the per-device single-request wrappers.
SINGLE_WORKSPACE_BYTES = 128 << 20

_wrappers: Dict[Tuple[str, Optional[int], str], Any] = {}


def _wrapper(q: Any, kind: str) -> Any:
    """The cached wrapper of `kind` ('decode' / 'prefill') for q's device
    (the CPU reference for host arrays)."""
    fw = framework_of(q)
    ordinal = fw.cuda_ordinal(q) if fw is not None else None
    key = (fw.name if fw is not None else "host", ordinal, kind)
    w = _wrappers.get(key)
    if w is None:
        ws = fw.empty_bytes(SINGLE_WORKSPACE_BYTES, ordinal) if ordinal is not None \
            else np.empty(0, np.uint8)
        cls = BatchDecodeWithPagedKVCacheWrapper if kind == "decode" \
            else BatchPrefillWithPagedKVCacheWrapper
        w = _wrappers[key] = cls(ws, "NHD")
    return w


def _plan(w: Any, q: Any, *args: Any, **kwargs: Any) -> None:
    """w.plan(...), growing the cached wrapper's float workspace when a plan
    needs more than it holds (long KV split over many chunks)."""
    try:
        w.plan(*args, **kwargs)
    except ValueError as e:
        need = re.search(r"float_workspace_buffer holds \d+ bytes; this plan needs (\d+)",
                         str(e))
        if need is None or not w.is_cuda:
            raise
        fw = framework_of(q)
        w.reset_workspace_buffer(fw.empty_bytes(int(need.group(1)), fw.cuda_ordinal(q)))
        w.plan(*args, **kwargs)


def _kernel_dtype(x: Any, on_gpu: bool) -> str:
    """x's dtype as plan() takes it; host arrays of other float types run
    the reference as float16 configurations (it computes in float64)."""
    name = str(x.dtype).replace("torch.", "")
    if on_gpu or name in ("float16", "bfloat16"):
        return name
    return "float16"


def _scaled_sm_scale(head_dim: int, sm_scale: Optional[float], *scales: Optional[float]
                     ) -> Optional[float]:
    """sm_scale times the fp8 calibration scales of q and k (FlashInfer's
    folding); None (the kernels' 1/sqrt(head_dim)) when nothing is given."""
    if all(s is None for s in scales):
        return sm_scale
    s = 1.0 / math.sqrt(head_dim) if sm_scale is None else float(sm_scale)
    for x in scales:
        if x is not None:
            s *= float(x)
    return s


def _check_q(q: Any, rank: int, what: str) -> None:
    if len(getattr(q, "shape", ())) != rank:
        raise ValueError(f"q must be {what}, got shape {list(getattr(q, 'shape', []))}")


@flashinfer_signature("single_decode_with_kv_cache")
def single_decode_with_kv_cache(
        q: Any, k: Any, v: Any, kv_layout: str = "NHD", use_tensor_cores: bool = False,
        q_scale: Optional[float] = None, k_scale: Optional[float] = None,
        v_scale: Optional[float] = None, return_lse: bool = False, *,
        score: ScoreArgs) -> Any:
    """Decode attention of one query, q [num_qo_heads, head_dim], over k, v
    [kv_len, num_kv_heads, head_dim] (NHD) or [num_kv_heads, kv_len,
    head_dim] (HND). Returns o [num_qo_heads, head_dim] (and lse
    [num_qo_heads], base 2, with return_lse). `use_tensor_cores` is accepted
    and ignored (the compiler picks the kernel); q_scale and k_scale fold
    into sm_scale, v_scale multiplies the output, as in FlashInfer."""
    _check_q(q, 2, "[num_qo_heads, head_dim]")
    if kv_layout not in ("NHD", "HND"):
        raise ValueError(f"kv_layout must be 'NHD' or 'HND', got {kv_layout!r}")
    hq, d = (int(s) for s in q.shape)
    kv, n = token_pages(k, v, kv_layout)
    hkv = int(kv[0].shape[2])
    if int(kv[1].shape[3]) != int(kv[0].shape[3]):
        raise ValueError(f"v's head_dim ({int(kv[1].shape[3])}) differs from k's "
                         f"({int(kv[0].shape[3])}): decode takes one head_dim, as "
                         "FlashInfer's (a head_dim_vo of its own is prefill's: "
                         "single_prefill_with_kv_cache)")
    w = _wrapper(q, "decode")
    _plan(w, q, np.array([0, n], np.int32), np.arange(n, dtype=np.int32),
           np.array([1], np.int32), hq, hkv, d, 1,
           q_data_type=_kernel_dtype(q, w.is_cuda),
           kv_data_type=_kernel_dtype(kv[0], w.is_cuda),
           **{**score, "sm_scale": _scaled_sm_scale(d, score["sm_scale"], q_scale, k_scale)})
    o, lse = w.run(q.reshape(1, hq, d), kv, return_lse=True)
    o, lse = o[0], lse[0]
    if v_scale is not None:
        o *= v_scale
    return (o, lse) if return_lse else o


@flashinfer_signature("single_prefill_with_kv_cache")
def single_prefill_with_kv_cache(
        q: Any, k: Any, v: Any, scale_q: Any = None, scale_k: Any = None,
        scale_v: Any = None, o_dtype: Any = None, custom_mask: Any = None,
        packed_custom_mask: Any = None, causal: bool = False, kv_layout: str = "NHD",
        use_fp16_qk_reduction: bool = False, backend: str = "auto",
        return_lse: bool = False, *, score: ScoreArgs) -> Any:
    """Prefill/append attention of one request: q [qo_len, num_qo_heads,
    head_dim_qk] over k [kv_len, num_kv_heads, head_dim_qk] and v [kv_len,
    num_kv_heads, head_dim_vo] (NHD; HND: [num_kv_heads, kv_len, ...]); the
    head_dims come from the shapes, as FlashInfer infers them (v's may be
    smaller than q's and k's: DeepSeek's 192 / 128). `causal` aligns the
    queries with the last keys (query i sees keys up to kv_len - qo_len +
    i); `custom_mask` ([qo_len, kv_len] bool) or `packed_custom_mask` (its
    packbits, little bit order) replaces the causal mask. Returns o
    [qo_len, num_qo_heads, head_dim_vo] (and lse [qo_len, num_qo_heads],
    base 2). `use_fp16_qk_reduction` and `backend`
    are accepted and ignored; the fp8 per-head scales scale_q/k/v and an
    output dtype other than q's are not supported."""
    _check_q(q, 3, "[qo_len, num_qo_heads, head_dim]")
    for name, value in (("scale_q", scale_q), ("scale_k", scale_k), ("scale_v", scale_v)):
        if value is not None:
            raise UnsupportedFeatureError(
                f"{name}: per-head fp8 scales are not supported by cascade_mlir "
                "(fp8 prefill is the fp8 issue's; docs/python.md, FlashInfer parity)")
    if o_dtype is not None and str(o_dtype).replace("torch.", "") != \
            str(q.dtype).replace("torch.", ""):
        raise UnsupportedFeatureError(f"o_dtype={o_dtype}: the output has q's dtype "
                                      "(docs/python.md, FlashInfer parity)")
    if kv_layout not in ("NHD", "HND"):
        raise ValueError(f"kv_layout must be 'NHD' or 'HND', got {kv_layout!r}")
    rows, hq, d = (int(s) for s in q.shape)
    kv, n = token_pages(k, v, kv_layout)
    hkv, dv = int(kv[0].shape[2]), int(kv[1].shape[3])
    w = _wrapper(q, "prefill")
    _plan(w, q, np.array([0, rows], np.int32), np.array([0, n], np.int32),
           np.arange(n, dtype=np.int32), np.array([1], np.int32), hq, hkv, d, 1,
           head_dim_vo=dv, custom_mask=custom_mask, packed_custom_mask=packed_custom_mask,
           causal=causal, q_data_type=_kernel_dtype(q, w.is_cuda),
           kv_data_type=_kernel_dtype(kv[0], w.is_cuda), **score)
    return w.run(q, kv, return_lse=return_lse)


def single_prefill_with_kv_cache_return_lse(q: Any, k: Any, v: Any, *args: Any,
                                            **kwargs: Any) -> Any:
    """single_prefill_with_kv_cache(..., return_lse=True)."""
    kwargs["return_lse"] = True
    return single_prefill_with_kv_cache(q, k, v, *args, **kwargs)


def clear_cache() -> None:
    """Drops the per-device wrappers (and their workspaces)."""
    _wrappers.clear()

