"""The `flashinfer.cascade` API, over Cascade-MLIR.

Same names, arguments and conventions as FlashInfer (base-2 LSE, empty state
(0, -inf), paged KV cache in NHD or HND layout, plan once per step and run per
layer). Inputs are numpy arrays or CPU torch tensors; results come back in the
same kind and dtype. They are computed by the runtime's float64 reference;
arrays on a GPU are rejected with a clear error until the GPU execution path
of the bindings lands (use the runtime's launcher from C/C++ meanwhile).
"""

from typing import List, Optional, Sequence

import numpy as np

from . import _runtime
from .ir import AttentionConfig

__all__ = [
    "merge_state",
    "merge_state_in_place",
    "merge_states",
    "MultiLevelCascadeAttentionWrapper",
]


# --- array plumbing ----------------------------------------------------------

def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch")


def _to_numpy(x, name: str) -> np.ndarray:
    if _is_torch(x):
        if x.device.type != "cpu":
            raise NotImplementedError(
                f"{name} is on {x.device}: GPU execution from Python is not "
                "available yet; pass CPU tensors or numpy arrays")
        if str(x.dtype) == "torch.bfloat16":
            x = x.float()
        return x.detach().numpy()
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{name} must be a numpy array or a torch tensor, got {type(x).__name__}")
    return x


def _like(result: np.ndarray, template):
    """Returns `result` in the kind (numpy/torch) and dtype of `template`."""
    if _is_torch(template):
        import torch
        return torch.from_numpy(np.ascontiguousarray(result)).to(template.dtype)
    return result.astype(template.dtype)


def _lse_out(result: np.ndarray, template):
    if _is_torch(template):
        import torch
        return torch.from_numpy(np.ascontiguousarray(result, dtype=np.float32))
    return result.astype(np.float32)


# --- merges ------------------------------------------------------------------

def merge_state(v_a, s_a, v_b, s_b):
    """Merges the states of two disjoint KV segments.

    v_a, v_b: [seq_len, num_heads, head_dim]; s_a, s_b: [seq_len, num_heads]
    (fp32, base-2 log-sum-exp). Returns (V, S) of the union.
    """
    va, sa = _to_numpy(v_a, "v_a"), _to_numpy(s_a, "s_a")
    vb, sb = _to_numpy(v_b, "v_b"), _to_numpy(s_b, "s_b")
    v, s = _runtime.ref_merge_state(va, sa, vb, sb)
    return _like(v, v_a), _lse_out(s, s_a)


def merge_state_in_place(v, s, v_other, s_other, mask=None) -> None:
    """Merges (v_other, s_other) into (v, s) in place.

    mask: optional [seq_len] bool/uint8 (strides honoured); rows where it is
    False are left untouched.
    """
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


def merge_states(v, s):
    """Merges N states per row: v [seq_len, N, H, D], s [seq_len, N, H].

    N = 0 gives the empty state (0, -inf).
    """
    vn, sn = _to_numpy(v, "v"), _to_numpy(s, "s")
    vo, so = _runtime.ref_merge_states(vn, sn)
    return _like(vo, v), _lse_out(so, s)


# --- multi-level cascade -----------------------------------------------------

class MultiLevelCascadeAttentionWrapper:
    """Attention over a multi-level cascade of one paged KV cache.

    As FlashInfer's wrapper: construct once, `plan()` once per step with the
    host index arrays of every level, then `run(q, paged_kv_cache)` for every
    layer. Level `l` with qo_indptr `[0, B]` is a shared prefix read once for
    all B queries; `causal` applies to the last level only.
    """

    def __init__(self, num_levels: int, float_workspace_buffer=None,
                 kv_layout: str = "NHD", use_cuda_graph: bool = False,
                 qo_indptr_buf_arr=None, paged_kv_indptr_buf_arr=None,
                 paged_kv_indices_buf_arr=None, paged_kv_last_page_len_buf_arr=None,
                 num_sms: int = 132):
        if num_levels < 1:
            raise ValueError(f"num_levels must be >= 1, got {num_levels}")
        if kv_layout not in ("NHD", "HND"):
            raise ValueError(f"kv_layout must be 'NHD' or 'HND', got {kv_layout!r}")
        self._num_levels = num_levels
        self._kv_layout = kv_layout
        self._use_cuda_graph = use_cuda_graph
        self._num_sms = num_sms
        self._levels = None
        self._plans = None
        self._config = None

    @property
    def num_levels(self) -> int:
        return self._num_levels

    def plan(self, qo_indptr_arr: Sequence, paged_kv_indptr_arr: Sequence,
             paged_kv_indices_arr: Sequence, paged_kv_last_page_len: Sequence,
             num_qo_heads: int, num_kv_heads: int, head_dim: int, page_size: int,
             causal: bool = False, pos_encoding_mode: str = "NONE",
             use_fp16_qk_reduction: bool = False, sm_scale: Optional[float] = None,
             window_left: int = -1, logits_soft_cap: Optional[float] = None,
             rope_scale: Optional[float] = None, rope_theta: Optional[float] = None,
             q_data_type="float16", kv_data_type=None) -> None:
        """Validates the levels and computes one plan per level."""
        arrays = [qo_indptr_arr, paged_kv_indptr_arr, paged_kv_indices_arr,
                  paged_kv_last_page_len]
        for name, arr in zip(("qo_indptr_arr", "paged_kv_indptr_arr",
                              "paged_kv_indices_arr", "paged_kv_last_page_len"), arrays):
            if len(arr) != self._num_levels:
                raise ValueError(f"{name} has {len(arr)} entries, expected one per "
                                 f"level ({self._num_levels})")
        levels, plans = [], []
        rows = None
        for lvl in range(self._num_levels):
            qo, kp, ki, kl = (np.asarray(_to_numpy(a[lvl], "index array"), dtype=np.int32)
                              for a in arrays)
            if qo.ndim != 1 or qo.size < 2:
                raise ValueError(f"level {lvl}: qo_indptr must be 1-D with B+1 >= 2 entries")
            if rows is None:
                rows = int(qo[-1])
            elif int(qo[-1]) != rows:
                raise ValueError(f"level {lvl} covers {int(qo[-1])} query rows but level 0 "
                                 f"covers {rows}: every level must cover the same rows")
            plans.append(_runtime.plan(
                "prefill", kp, kl, qo_indptr=qo, kv_indices=ki,
                num_qo_heads=num_qo_heads, num_kv_heads=num_kv_heads,
                head_dim=head_dim, page_size=page_size, num_sms=self._num_sms,
                cuda_graph=int(self._use_cuda_graph)))
            levels.append(_runtime.Level(qo, kp, ki, kl))
        self._levels, self._plans = levels, plans
        self._config = AttentionConfig(
            num_qo_heads=num_qo_heads, num_kv_heads=num_kv_heads, head_dim=head_dim,
            page_size=page_size, q_dtype=q_data_type,
            kv_dtype=kv_data_type, kv_layout=self._kv_layout, causal=causal,
            pos_encoding_mode=pos_encoding_mode, sm_scale=sm_scale,
            window_left=window_left, logits_soft_cap=logits_soft_cap,
            rope_scale=rope_scale, rope_theta=rope_theta)

    @property
    def plans(self) -> List[dict]:
        """The per-level plans (request_indices, kv_tile_indices, ...)."""
        if self._plans is None:
            raise RuntimeError("plan() has not been called")
        return self._plans

    @property
    def config(self) -> AttentionConfig:
        if self._config is None:
            raise RuntimeError("plan() has not been called")
        return self._config

    def run(self, q, paged_kv_cache, return_lse: bool = False):
        """Attention of q [rows, num_qo_heads, head_dim] over the cascade.

        paged_kv_cache: one [P, 2, page, Hkv, D] (NHD) / [P, 2, Hkv, page, D]
        (HND) array, or a (k, v) pair of 4-D arrays. Returns o (and the base-2
        lse when return_lse=True).
        """
        if self._levels is None:
            raise RuntimeError("plan() must be called before run()")
        cfg = self._config
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
            np.asarray(qn, dtype=np.float32), kv, self._levels, cfg.page_size,
            cfg.kv_layout, causal=cfg.causal, sm_scale=cfg.sm_scale,
            logits_soft_cap=cfg.logits_soft_cap, window_left=cfg.window_left,
            pos_encoding_mode=cfg.pos_encoding_mode, rope_scale=cfg.rope_scale,
            rope_theta=cfg.rope_theta)
        out = _like(o, q)
        return (out, _lse_out(lse, q)) if return_lse else out

    def ir(self) -> str:
        """The cascade IR of the planned configuration (dynamic sizes)."""
        from .ir import multi_level_attention
        shared = [lvl for lvl, p in enumerate(self._levels_qo_sizes()) if p == 2]
        return multi_level_attention(self.config, self._num_levels,
                                     shared_prefix_levels=shared)

    def _levels_qo_sizes(self):
        if self._plans is None:
            raise RuntimeError("plan() has not been called")
        return [p["batch_size"] + 1 for p in self._plans]
