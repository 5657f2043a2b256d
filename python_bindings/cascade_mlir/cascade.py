"""The `flashinfer.cascade` API, over Cascade-MLIR.

Same names, arguments and conventions as FlashInfer (base-2 LSE, empty state
(0, -inf), paged KV cache in NHD or HND layout, plan once per step and run per
layer).

- CUDA tensors (torch, or any DLPack producer such as cupy): the compiled
  kernels run on the caller's current stream, reading and writing the
  caller's tensors in place; outputs are allocated with the caller's
  framework unless given (`out=`, `lse=`).
- numpy arrays, CPU tensors, or a wrapper whose float_workspace_buffer is on
  the host (or None): the float64 CPU reference of the runtime computes the
  result (for tests and for checking the GPU).
"""

from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _gpu, _runtime
from ._frameworks import framework_of, host_int32, is_cuda
from ._gpu import NotPlannedError
from .config import AttentionConfig, dtype_code, kv_scales
from .kernels import Group, merge_key

#: What run() returns: the output, or (output, lse) with return_lse=True.
RunResult = Union[Any, Tuple[Any, Any]]

__all__ = [
    "merge_state",
    "merge_state_in_place",
    "merge_states",
    "MultiLevelCascadeAttentionWrapper",
    "BatchDecodeWithSharedPrefixPagedKVCacheWrapper",
    "BatchPrefillWithSharedPrefixPagedKVCacheWrapper",
    "NotPlannedError",
]


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


# --- multi-level cascade -----------------------------------------------------

def _buffer_arrays(num_levels, **arrays):
    """The per-level CUDA-graph index buffers, as the runtime takes them."""
    given = {k: v for k, v in arrays.items() if v is not None}
    if not given:
        return None
    for name, arr in given.items():
        if len(arr) != num_levels:
            raise ValueError(f"{name} has {len(arr)} entries, expected one per level "
                             f"({num_levels})")
    keys = {"qo_indptr_buf_arr": "qo_indptr", "paged_kv_indptr_buf_arr": "kv_indptr",
            "paged_kv_indices_buf_arr": "kv_indices",
            "paged_kv_last_page_len_buf_arr": "kv_last_page_len"}
    return [{keys[name]: arr[lvl] for name, arr in given.items()}
            for lvl in range(num_levels)]


class MultiLevelCascadeAttentionWrapper:
    """Attention over a multi-level cascade of one paged KV cache.

    As FlashInfer's wrapper: construct once, `plan()` once per step with the
    index arrays of every level, then `run(q, paged_kv_cache)` for every
    layer. Level `l` with qo_indptr `[0, B]` is a shared prefix read once for
    all B queries; a level whose qo_indptr is `arange(B + 1)` runs the decode
    kernels; `causal` applies to the last level only.

    With `float_workspace_buffer` on a CUDA device the kernels run there
    (CUDA-graph capture of run() works with `use_cuda_graph=True`: replan
    with new lengths and replay); with None or a host buffer the float64 CPU
    reference computes every call.
    """

    def __init__(self, num_levels: int, float_workspace_buffer: Any = None,
                 kv_layout: str = "NHD", use_cuda_graph: bool = False,
                 qo_indptr_buf_arr: Optional[Sequence[Any]] = None,
                 paged_kv_indptr_buf_arr: Optional[Sequence[Any]] = None,
                 paged_kv_indices_buf_arr: Optional[Sequence[Any]] = None,
                 paged_kv_last_page_len_buf_arr: Optional[Sequence[Any]] = None,
                 num_sms: int = 132):
        if not isinstance(num_levels, int) or isinstance(num_levels, bool) or num_levels < 1:
            raise ValueError(f"num_levels must be an int >= 1, got {num_levels!r}")
        if kv_layout not in ("NHD", "HND"):
            raise ValueError(f"kv_layout must be 'NHD' or 'HND', got {kv_layout!r}")
        self._num_levels = num_levels
        self._kv_layout = kv_layout
        self._use_cuda_graph = use_cuda_graph
        self._num_sms = num_sms
        self._buffers = _buffer_arrays(
            num_levels, qo_indptr_buf_arr=qo_indptr_buf_arr,
            paged_kv_indptr_buf_arr=paged_kv_indptr_buf_arr,
            paged_kv_indices_buf_arr=paged_kv_indices_buf_arr,
            paged_kv_last_page_len_buf_arr=paged_kv_last_page_len_buf_arr)
        self._engine: Optional[_gpu.Engine] = None
        if _gpu.workspace_device(float_workspace_buffer) is not None:
            self._engine = _gpu.Engine(float_workspace_buffer, use_cuda_graph)
        elif use_cuda_graph:
            raise ValueError("use_cuda_graph needs a CUDA float_workspace_buffer")
        self._levels: Optional[List[Any]] = None
        self._plans: Optional[List[Dict[str, Any]]] = None
        self._config: Optional[AttentionConfig] = None
        self._causal = False
        self._host_levels: List[_gpu.Level] = []

    @property
    def num_levels(self) -> int:
        return self._num_levels

    @property
    def is_cuda(self) -> bool:
        """True when the kernels run on a GPU (a CUDA workspace buffer)."""
        return self._engine is not None

    def reset_workspace_buffer(self, float_workspace_buffer: Any,
                               int_workspace_buffers: Optional[Sequence[Any]] = None) -> None:
        if self._engine is None:
            raise ValueError("this wrapper computes on the host (CPU reference); "
                             "construct it with a CUDA float_workspace_buffer")
        ints = int_workspace_buffers[0] if int_workspace_buffers else None
        self._engine.reset_workspace_buffer(float_workspace_buffer, ints)
        self.__dict__.pop("run", None)
        self.__dict__.pop("forward", None)
        _gpu.one_call_run(self, None)

    def plan(self, qo_indptr_arr: Sequence, paged_kv_indptr_arr: Sequence,
             paged_kv_indices_arr: Sequence, paged_kv_last_page_len: Sequence,
             num_qo_heads: int, num_kv_heads: int, head_dim: int, page_size: int,
             causal: bool = False, pos_encoding_mode: str = "NONE",
             use_fp16_qk_reduction: bool = False, sm_scale: Optional[float] = None,
             window_left: int = -1, logits_soft_cap: Optional[float] = None,
             rope_scale: Optional[float] = None, rope_theta: Optional[float] = None,
             q_data_type: Any = "float16", kv_data_type: Any = None) -> None:
        """Plans every level (on the host) and uploads the plan; reused by
        every run() until the next plan()."""
        cfg = AttentionConfig.make(
            q_dtype=q_data_type, kv_dtype=kv_data_type, head_dim=head_dim,
            num_qo_heads=num_qo_heads, num_kv_heads=num_kv_heads, page_size=page_size,
            kv_layout=self._kv_layout, sm_scale=sm_scale, logits_soft_cap=logits_soft_cap,
            window_left=window_left, pos_encoding_mode=pos_encoding_mode,
            rope_scale=rope_scale, rope_theta=rope_theta)
        levels = _gpu.levels_from_arrays(qo_indptr_arr, paged_kv_indptr_arr,
                                         paged_kv_indices_arr, paged_kv_last_page_len,
                                         self._num_levels, causal)
        self._config, self._causal = cfg, bool(causal)
        self._host_levels = levels
        if self._engine is not None:
            self._engine.plan(cfg, levels, self._buffers)
            # From now on run() is the runtime's (no Python frame in between).
            self.__dict__["run"] = self.__dict__["forward"] = self._engine.program.run
            _gpu.one_call_run(self, self._engine.program)
            return
        plans = []
        for lv in levels:
            plans.append(_runtime.plan(
                "prefill", lv.kv_indptr, lv.kv_last_page_len, qo_indptr=lv.qo_indptr,
                kv_indices=lv.kv_indices, num_qo_heads=num_qo_heads,
                num_kv_heads=num_kv_heads, head_dim=head_dim, page_size=page_size,
                num_sms=self._num_sms, cuda_graph=int(self._use_cuda_graph)))
        self._levels = [_runtime.Level(lv.qo_indptr, lv.kv_indptr, lv.kv_indices,
                                       lv.kv_last_page_len) for lv in levels]
        self._plans = plans

    begin_forward = plan

    @property
    def plans(self) -> List[Dict[str, Any]]:
        """The per-level plans of the CPU reference (request_indices, ...)."""
        if self._plans is None:
            raise NotPlannedError("plan() has not been called (or runs on a GPU)")
        return self._plans

    @property
    def config(self) -> AttentionConfig:
        if self._config is None:
            raise NotPlannedError("plan() has not been called")
        return self._config

    def run(self, q: Any, paged_kv_cache: Any, out: Any = None, lse: Any = None,
            return_lse: bool = False, k_scale: Optional[float] = None,
            v_scale: Optional[float] = None) -> RunResult:
        """Attention of q [rows, num_qo_heads, head_dim] over the cascade.

        paged_kv_cache: one [P, 2, page, Hkv, D] (NHD) / [P, 2, Hkv, page, D]
        (HND) tensor, or a (k, v) pair of 4-D tensors. Returns o (and the
        base-2 lse when return_lse=True); `out` / `lse` receive the results
        when given. k_scale / v_scale: the per-tensor dequantization scales
        of an fp8 cache (docs/semantics.md).
        """
        if self._config is None:
            raise NotPlannedError("plan() must be called before run()")
        ks, vs = kv_scales(self._config, k_scale, v_scale)
        if self._engine is not None:
            return self._engine.run(q, paged_kv_cache, out, lse, return_lse,
                                    k_scale=ks, v_scale=vs)
        if self._levels is None:
            raise NotPlannedError("plan() must be called before run()")
        return _reference_outputs(self.config, self._causal, self._levels, q,
                                  paged_kv_cache, out, lse, return_lse, ks, vs)

    forward = run

    def end_forward(self) -> None:
        """Deprecated in FlashInfer; does nothing."""

    def ir(self) -> str:
        """The cascade IR of the planned configuration (dynamic sizes)."""
        from .ir import multi_level_attention
        if self._config is None:
            raise NotPlannedError("plan() has not been called")
        shared = [i for i, lv in enumerate(self._host_levels) if lv.kv_indptr.size == 2]
        return multi_level_attention(self.config, self._num_levels,
                                     shared_prefix_levels=shared, causal=self._causal)


def _reference_run(cfg: AttentionConfig, causal: bool, levels: List[Any], q: Any,
                   paged_kv_cache: Any, k_scale: float = 1.0,
                   v_scale: float = 1.0) -> Tuple[np.ndarray, np.ndarray]:
    qn = _to_numpy(q, "q")
    if qn.ndim != 3 or qn.shape[1] != cfg.num_qo_heads or qn.shape[2] != cfg.head_dim:
        raise ValueError(f"q must be [rows, {cfg.num_qo_heads}, {cfg.head_dim}], "
                         f"got {list(qn.shape)}")
    if isinstance(paged_kv_cache, (tuple, list)):
        kv = [np.asarray(_to_numpy(t, "paged_kv_cache"), dtype=np.float32)
              for t in paged_kv_cache]
    else:
        kv = [np.asarray(_to_numpy(paged_kv_cache, "paged_kv_cache"), dtype=np.float32)]
    o, lse = _runtime.ref_attention(
        np.asarray(qn, dtype=np.float32), kv, levels, cfg.page_size,
        cfg.kv_layout.upper(), causal=causal, sm_scale=cfg.sm_scale,
        logits_soft_cap=cfg.logits_soft_cap, window_left=cfg.window_left,
        pos_encoding_mode=cfg.pos_encoding.upper(), rope_scale=cfg.rope_scale,
        rope_theta=cfg.rope_theta, k_scale=k_scale, v_scale=v_scale)
    return o, lse


def _reference_outputs(cfg: AttentionConfig, causal: bool, levels: List[Any], q: Any,
                       paged_kv_cache: Any, out: Any, lse: Any,
                       return_lse: bool, k_scale: float = 1.0,
                       v_scale: float = 1.0) -> RunResult:
    """run() without a GPU: the float64 reference, in q's framework and
    dtype, written into `out` / `lse` when given."""
    o, l = _reference_run(cfg, causal, levels, q, paged_kv_cache, k_scale, v_scale)
    o, l = _like(o, q), _lse_out(l, q)
    if out is not None:
        out[...] = o
        o = out
    if lse is not None:
        lse[...] = l
        l = lse
    return (o, l) if return_lse else o


# --- the deprecated shared-prefix wrappers ----------------------------------------

def _paged_view(x: Any, name: str, page: int, hnd: bool) -> Tuple[Any, int]:
    """A contiguous shared prefix ([len, Hkv, D] NHD / [Hkv, len, D] HND) as
    a (k or v) page pool of `page`-token pages: a view when possible (NHD,
    len a multiple of the page size), else a padded copy (torch only)."""
    fw = framework_of(x)
    if fw is None or fw.cuda_ordinal(x) is None:
        raise ValueError(f"{name} must be a CUDA tensor")
    if len(x.shape) != 3:
        raise ValueError(f"{name} must be 3-D ([len, num_kv_heads, head_dim] for NHD, "
                         f"[num_kv_heads, len, head_dim] for HND), got {list(x.shape)}")
    length = x.shape[1] if hnd else x.shape[0]
    pages = -(-length // page)
    if not hnd and length % page == 0:
        return x.reshape(pages, page, x.shape[1], x.shape[2]), length
    if fw.name != "torch":
        raise TypeError(f"{name}: an HND shared prefix, or one whose length is not a "
                        "multiple of the page size, needs a torch tensor (it is copied "
                        "into pages)")
    import torch
    if hnd:
        h, _, d = x.shape
        padded = torch.zeros((h, pages * page, d), dtype=x.dtype, device=x.device)
        padded[:, :length] = x
        return padded.view(h, pages, page, d).permute(1, 0, 2, 3).contiguous(), length
    _, h, d = x.shape
    padded = torch.zeros((pages * page, h, d), dtype=x.dtype, device=x.device)
    padded[:length] = x
    return padded.view(pages, page, h, d), length


class _SharedPrefixBase:
    """Two levels: the contiguous shared prefix (k_shared, v_shared), read
    once by all queries, and each request's pages; planned when forward()
    first sees a prefix length (and again when it changes)."""

    _decode = True

    def __init__(self, float_workspace_buffer: Any, kv_layout: str = "NHD"):
        if kv_layout not in ("NHD", "HND"):
            raise ValueError(f"kv_layout must be 'NHD' or 'HND', got {kv_layout!r}")
        if _gpu.workspace_device(float_workspace_buffer) is None:
            raise ValueError("float_workspace_buffer must be a CUDA tensor: the "
                             "shared-prefix wrappers run on the GPU only")
        self._kv_layout = kv_layout
        self._engine = _gpu.Engine(float_workspace_buffer)
        self._unique: Optional[Tuple[Any, ...]] = None
        self._planned_for: Optional[Tuple[Any, ...]] = None
        self._dtype: Any = "float16"
        self._kv_dtype: Any = None

    def reset_workspace_buffer(self, float_workspace_buffer: Any,
                               int_workspace_buffer: Any = None) -> None:
        self._engine.reset_workspace_buffer(float_workspace_buffer, int_workspace_buffer)
        self._planned_for = None

    def _begin(self, qo: Any, kv_indptr: Any, kv_indices: Any, last: Any,
               num_qo_heads: int, num_kv_heads: int, head_dim: int, page_size: int,
               dtype: Any, kv_dtype: Any = None) -> None:
        kp = host_int32(kv_indptr, "paged_kv_indptr")
        ki = host_int32(kv_indices, "paged_kv_indices")
        kl = host_int32(last, "paged_kv_last_page_len")
        qo = np.arange(kp.size, dtype=np.int32) if qo is None else host_int32(qo, "qo_indptr")
        _gpu.check_csr(qo, kp, ki, kl, "the unique level", decode=self._decode)
        AttentionConfig.make(q_dtype=dtype, kv_dtype=kv_dtype, head_dim=head_dim,
                             num_qo_heads=num_qo_heads, num_kv_heads=num_kv_heads,
                             page_size=page_size,
                             kv_layout=self._kv_layout)  # checks the arguments now
        self._unique = (qo, kp, ki, kl, num_qo_heads, num_kv_heads, head_dim, page_size)
        self._dtype, self._kv_dtype = dtype, kv_dtype
        self._planned_for = None

    def end_forward(self) -> None:
        """Deprecated in FlashInfer; does nothing."""

    def _forward(self, q: Any, k_shared: Any, v_shared: Any, unique_kv_cache: Any,
                 causal: bool = False, sm_scale: Optional[float] = None,
                 rope_scale: Optional[float] = None, rope_theta: Optional[float] = None,
                 dtype: Any = None, k_scale: Optional[float] = None,
                 v_scale: Optional[float] = None) -> Any:
        if self._unique is None:
            raise NotPlannedError("forward() before begin_forward()")
        qo, kp, ki, kl, hq, hkv, d, page = self._unique
        hnd = self._kv_layout == "HND"
        k_pages, length = _paged_view(k_shared, "k_shared", page, hnd)
        v_pages, v_len = _paged_view(v_shared, "v_shared", page, hnd)
        if v_len != length:
            raise ValueError(f"k_shared covers {length} tokens but v_shared {v_len}")
        key = (length, bool(causal), sm_scale, rope_scale, rope_theta, dtype)
        if self._planned_for != key:
            pages = -(-length // page)
            rows = int(qo[-1])
            shared = _gpu.Level(np.array([0, rows], np.int32), np.array([0, pages], np.int32),
                                np.arange(pages, dtype=np.int32),
                                np.array([length - (pages - 1) * page if pages else 1], np.int32),
                                Group(decode=False), kv_slot=1)
            unique = _gpu.Level(qo, kp, ki, kl, Group(decode=self._decode,
                                                      causal=bool(causal) and not self._decode,
                                                      accumulate=True))
            cfg = AttentionConfig.make(q_dtype=dtype, kv_dtype=self._kv_dtype, head_dim=d,
                                       num_qo_heads=hq, num_kv_heads=hkv, page_size=page,
                                       kv_layout=self._kv_layout, sm_scale=sm_scale,
                                       rope_scale=rope_scale, rope_theta=rope_theta)
            self._engine.plan(cfg, [shared, unique])
            self._planned_for = key
        assert self._engine.cfg is not None
        ks, vs = kv_scales(self._engine.cfg, k_scale, v_scale)
        return self._engine.run(q, unique_kv_cache, kv_shared=(k_pages, v_pages),
                                k_scale=ks, v_scale=vs)


class BatchDecodeWithSharedPrefixPagedKVCacheWrapper(_SharedPrefixBase):
    """Deprecated in FlashInfer (use MultiLevelCascadeAttentionWrapper):
    batch decode over a contiguous shared prefix plus each request's pages."""

    _decode = True

    def begin_forward(self, unique_kv_indptr: Any, unique_kv_indices: Any,
                      unique_kv_last_page_len: Any, num_qo_heads: int, num_kv_heads: int,
                      head_dim: int, page_size: int, data_type: Any = "float16",
                      kv_data_type: Any = None) -> None:
        """kv_data_type (an extension; None: data_type): the dtype of the
        shared prefix and the pages, e.g. torch.float8_e4m3fn."""
        self._begin(None, unique_kv_indptr, unique_kv_indices, unique_kv_last_page_len,
                    num_qo_heads, num_kv_heads, head_dim, page_size, data_type, kv_data_type)

    def forward(self, q: Any, k_shared: Any, v_shared: Any, unique_kv_cache: Any,
                k_scale: Optional[float] = None, v_scale: Optional[float] = None) -> Any:
        return self._forward(q, k_shared, v_shared, unique_kv_cache, dtype=self._dtype,
                             k_scale=k_scale, v_scale=v_scale)


class BatchPrefillWithSharedPrefixPagedKVCacheWrapper(_SharedPrefixBase):
    """Deprecated in FlashInfer (use MultiLevelCascadeAttentionWrapper):
    batch prefill/append over a contiguous shared prefix (seen by every
    query, not causal) plus each request's pages (causal if asked)."""

    _decode = False

    def begin_forward(self, qo_indptr: Any, paged_kv_indptr: Any, paged_kv_indices: Any,
                      paged_kv_last_page_len: Any, num_qo_heads: int, num_kv_heads: int,
                      head_dim: int, page_size: int, kv_data_type: Any = None) -> None:
        """kv_data_type (an extension; None: q's dtype): the dtype of the
        shared prefix and the pages, e.g. torch.float8_e4m3fn."""
        self._begin(qo_indptr, paged_kv_indptr, paged_kv_indices, paged_kv_last_page_len,
                    num_qo_heads, num_kv_heads, head_dim, page_size, "float16", kv_data_type)

    def forward(self, q: Any, k_shared: Any, v_shared: Any, unique_kv_cache: Any,
                causal: bool = False,
                use_fp16_qk_reduction: bool = False, sm_scale: Optional[float] = None,
                rope_scale: Optional[float] = None,
                rope_theta: Optional[float] = None, k_scale: Optional[float] = None,
                v_scale: Optional[float] = None) -> Any:
        dtype = str(getattr(q, "dtype", "float16")).replace("torch.", "")
        return self._forward(q, k_shared, v_shared, unique_kv_cache, causal=causal,
                             sm_scale=sm_scale, rope_scale=rope_scale,
                             rope_theta=rope_theta, dtype=dtype, k_scale=k_scale,
                             v_scale=v_scale)
