"""The merges of the cascade API (cascade_mlir.cascade): merge_state,
merge_state_in_place and merge_states.

Each takes the runtime's one-call path for torch CUDA tensors first
(_gpu.MERGES), else the checked path below (any CUDA DLPack producer; its
errors name the offending argument), else the float64 CPU reference.
"""

from typing import Any, Tuple

import numpy as np

from . import _gpu, _runtime
from ._frameworks import framework_of, is_cuda
from ._reference import _is_torch, _like, _lse_out, _to_numpy
from .config import dtype_code
from .kernels import merge_key


# --- GPU merges -----------------------------------------------------------------

class _Checked:
    """What the runtime reads from a tensor, with the argument's name."""

    def __init__(self, x, name):
        self.x, self.name = x, name
        self.info = _runtime._probe(x, name)

    @property
    def shape(self):
        return self.info["shape"]

    def expect(self, device, dtypes, shape, contiguous=True):
        if self.info["device"] != device:
            raise ValueError(f"{self.name} is on {self.info['device']}, expected {device} "
                             "(all tensors on one device)")
        if self.info["dtype"] not in dtypes:
            raise TypeError(f"{self.name} has dtype {self.info['dtype']}, expected "
                            f"{' or '.join(dtypes)}")
        if len(self.shape) != len(shape) or any(
                e is not None and e != g for e, g in zip(shape, self.shape)):
            want = "[" + ", ".join("*" if e is None else str(e) for e in shape) + "]"
            raise ValueError(f"{self.name} has shape {self.shape}, expected {want}")
        if contiguous and not self.info["contiguous"]:
            raise ValueError(f"{self.name} must be contiguous (row-major)")
        return self


_V_DTYPES = ("float16", "bfloat16", "float32")


def _merge_kernels(v: _Checked, ordinal: int):
    dev = _gpu.device(ordinal)
    key = merge_key(dtype_code(v.info["dtype"], v.name, allow_f32=True), v.shape[-1])
    return dev, _gpu.load_bundle(dev, key)


def _check_state(v, s, vname, sname, device=None, rows=None, heads=None, dim=None):
    cv = _Checked(v, vname)
    if len(cv.shape) != 3:
        raise ValueError(f"{vname} must be [seq_len, num_heads, head_dim], got {cv.shape}")
    device = device or cv.info["device"]
    rows = cv.shape[0] if rows is None else rows
    heads = cv.shape[1] if heads is None else heads
    dim = cv.shape[2] if dim is None else dim
    cv.expect(device, _V_DTYPES, [rows, heads, dim])
    _Checked(s, sname).expect(device, ("float32",), [rows, heads])
    if dim % 8:
        raise ValueError(f"{vname}: head_dim must be a multiple of 8, got {dim}")
    return cv, device


def _gpu_merge_state(v_a, s_a, v_b, s_b):
    ca, device = _check_state(v_a, s_a, "v_a", "s_a")
    rows, heads, dim = ca.shape
    cb, _ = _check_state(v_b, s_b, "v_b", "s_b", device, rows, heads, dim)
    if cb.info["dtype"] != ca.info["dtype"]:
        raise TypeError(f"v_b has dtype {cb.info['dtype']} but v_a {ca.info['dtype']}")
    fw = framework_of(v_a)
    ordinal = int(device.split(":")[1])
    dev, k = _merge_kernels(ca, ordinal)
    v = fw.empty_like(v_a) if fw else None
    s = fw.empty_f32(v_a, (rows, heads)) if fw else None
    if v is None:
        raise TypeError("merge_state allocates its outputs with torch or cupy; "
                        f"{type(v_a).__name__} is neither")
    dev.launch(k["merge_state"], {"v_a": v_a, "s_a": s_a, "v_b": v_b, "s_b": s_b,
                                  "v": v, "s": s}, {"num_tasks": rows * heads},
               _gpu.current_stream(v_a))
    return v, s


def _gpu_merge_state_in_place(v, s, v_other, s_other, mask):
    cv, device = _check_state(v, s, "v", "s")
    rows, heads, dim = cv.shape
    co, _ = _check_state(v_other, s_other, "v_other", "s_other", device, rows, heads, dim)
    if co.info["dtype"] != cv.info["dtype"]:
        raise TypeError(f"v_other has dtype {co.info['dtype']} but v {cv.info['dtype']}")
    dev, k = _merge_kernels(cv, int(device.split(":")[1]))
    buffers = {"v": v, "s": s, "v_other": v_other, "s_other": s_other}
    ints = {"num_tasks": rows * heads, "num_heads": heads}
    kernel = k["merge_state_in_place"]
    if mask is not None:
        cm = _Checked(mask, "mask").expect(device, ("bool", "uint8", "int8"), [rows],
                                           contiguous=False)
        stride = cm.info["strides"][0] if rows else 1
        if stride < 1:
            raise ValueError(f"mask must have a positive stride, got {stride}")
        buffers["mask"] = (mask, (rows - 1) * stride + 1 if rows else 0)
        ints["mask_stride"] = stride
        kernel = k["merge_state_in_place_mask"]
    dev.launch(kernel, buffers, ints, _gpu.current_stream(v))


def _gpu_merge_states(v, s):
    cv = _Checked(v, "v")
    if len(cv.shape) != 4:
        raise ValueError(f"v must be [seq_len, num_states, num_heads, head_dim], got {cv.shape}")
    device = cv.info["device"]
    rows, n, heads, dim = cv.shape
    cv.expect(device, _V_DTYPES, [rows, n, heads, dim])
    _Checked(s, "s").expect(device, ("float32",), [rows, n, heads])
    if dim % 8:
        raise ValueError(f"v: head_dim must be a multiple of 8, got {dim}")
    fw = framework_of(v)
    dev, k = _merge_kernels(cv, int(device.split(":")[1]))
    if fw is None:
        raise TypeError("merge_states allocates its outputs with torch or cupy; "
                        f"{type(v).__name__} is neither")
    vo = fw.empty_shaped(v, (rows, heads, dim))
    so = fw.empty_f32(v, (rows, heads))
    dev.launch(k["merge_states"], {"v_in": v, "s_in": s, "v": vo, "s": so},
               {"num_tasks": rows * heads, "num_states": n, "num_heads": heads},
               _gpu.current_stream(v))
    return vo, so


# --- merges ---------------------------------------------------------------------

def merge_state(v_a: Any, s_a: Any, v_b: Any, s_b: Any) -> Tuple[Any, Any]:
    """Merges the states of two disjoint KV segments.

    v_a, v_b: [seq_len, num_heads, head_dim]; s_a, s_b: [seq_len, num_heads]
    (fp32, base-2 log-sum-exp). Returns (V, S) of the union.
    """
    fast = _gpu.MERGES.merge_state(v_a, s_a, v_b, s_b)
    if fast is not None:
        return fast
    if is_cuda(v_a):
        return _gpu_merge_state(v_a, s_a, v_b, s_b)
    va, sa = _to_numpy(v_a, "v_a"), _to_numpy(s_a, "s_a")
    vb, sb = _to_numpy(v_b, "v_b"), _to_numpy(s_b, "s_b")
    v, s = _runtime.ref_merge_state(va, sa, vb, sb)
    return _like(v, v_a), _lse_out(s, s_a)


def merge_state_in_place(v: Any, s: Any, v_other: Any, s_other: Any,
                         mask: Any = None) -> None:
    """Merges (v_other, s_other) into (v, s) in place.

    mask: optional [seq_len] bool/uint8 (strides honoured); rows where it is
    False are left untouched.
    """
    if _gpu.MERGES.merge_state_in_place(v, s, v_other, s_other, mask) is not None:
        return
    if is_cuda(v):
        _gpu_merge_state_in_place(v, s, v_other, s_other, mask)
        return
    vn, sn = _to_numpy(v, "v"), _to_numpy(s, "s")
    vo, so = _to_numpy(v_other, "v_other"), _to_numpy(s_other, "s_other")
    v64 = vn.astype(np.float64)
    s64 = sn.astype(np.float64)
    m = None
    if mask is not None:
        m = _to_numpy(mask, "mask")
        if m.dtype not in (np.bool_, np.uint8, np.int8):
            raise TypeError(f"mask must be bool or uint8, got {m.dtype}")
        m = m.view(np.uint8)
    _runtime.ref_merge_state_in_place(v64, s64, vo, so, m)
    if _is_torch(v):
        import torch
        v.copy_(torch.from_numpy(v64).to(v.dtype))
        s.copy_(torch.from_numpy(s64).to(s.dtype))
    else:
        vn[...] = v64.astype(vn.dtype)
        sn[...] = s64.astype(sn.dtype)


def merge_states(v: Any, s: Any) -> Tuple[Any, Any]:
    """Merges N states per row: v [seq_len, N, H, D], s [seq_len, N, H].

    N = 0 gives the empty state (0, -inf).
    """
    fast = _gpu.MERGES.merge_states(v, s)
    if fast is not None:
        return fast
    if is_cuda(v):
        return _gpu_merge_states(v, s)
    vn, sn = _to_numpy(v, "v"), _to_numpy(s, "s")
    vo, so = _runtime.ref_merge_states(vn, sn)
    return _like(vo, v), _lse_out(so, s)
