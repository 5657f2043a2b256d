"""The plain (non-cascade) wrappers' shared machinery: one attention level,
FlashInfer's plan()/run() arguments, GPU kernels or the CPU reference."""

import numpy as np

from . import _gpu, _runtime
from ._frameworks import host_int32
from ._gpu import NotPlannedError
from .ir import AttentionConfig
from .kernels import Group, KernelConfig


def reject(name: str, value, default=None):
    """FlashInfer arguments this implementation does not support: accepted
    at their defaults, rejected otherwise."""
    if value is not default and value != default:
        raise ValueError(f"{name}={value!r} is not supported by cascade_mlir "
                         f"(only {default!r})")


class SingleLevelWrapper:
    _decode = True

    def __init__(self, float_workspace_buffer, kv_layout: str = "NHD",
                 use_cuda_graph: bool = False, buffers=None):
        if kv_layout not in ("NHD", "HND"):
            raise ValueError(f"kv_layout must be 'NHD' or 'HND', got {kv_layout!r}")
        self._kv_layout = kv_layout
        self._use_cuda_graph = use_cuda_graph
        self._buffers = buffers if buffers and any(v is not None for v in buffers.values()) \
            else None
        self._engine = None
        if _gpu.workspace_device(float_workspace_buffer) is not None:
            self._engine = _gpu.Engine(float_workspace_buffer, use_cuda_graph)
        elif use_cuda_graph:
            raise ValueError("use_cuda_graph needs a CUDA float_workspace_buffer")
        self._level = None
        self._config = None

    @property
    def is_cuda(self) -> bool:
        return self._engine is not None

    def reset_workspace_buffer(self, float_workspace_buffer, int_workspace_buffer=None) -> None:
        if self._engine is None:
            raise ValueError("this wrapper computes on the host (CPU reference)")
        self._engine.reset_workspace_buffer(float_workspace_buffer, int_workspace_buffer)
        self.__dict__.pop("run", None)
        self.__dict__.pop("forward", None)

    def _plan(self, qo_indptr, kv_indptr, kv_indices, last_page_len, num_qo_heads,
              num_kv_heads, head_dim, page_size, causal, pos_encoding_mode, sm_scale,
              window_left, logits_soft_cap, rope_scale, rope_theta, q_data_type,
              kv_data_type):
        cfg = KernelConfig.make(
            q_dtype=q_data_type, kv_dtype=kv_data_type, head_dim=head_dim,
            num_qo_heads=num_qo_heads, num_kv_heads=num_kv_heads, page_size=page_size,
            kv_layout=self._kv_layout, sm_scale=sm_scale, logits_soft_cap=logits_soft_cap,
            window_left=window_left, pos_encoding_mode=pos_encoding_mode,
            rope_scale=rope_scale, rope_theta=rope_theta)
        kp = host_int32(kv_indptr, "indptr" if self._decode else "paged_kv_indptr")
        ki = host_int32(kv_indices, "indices" if self._decode else "paged_kv_indices")
        kl = host_int32(last_page_len,
                        "last_page_len" if self._decode else "paged_kv_last_page_len")
        qo = np.arange(kp.size, dtype=np.int32) if qo_indptr is None \
            else host_int32(qo_indptr, "qo_indptr")
        _gpu.check_csr(qo, kp, ki, kl, "plan()", decode=self._decode)
        level = _gpu.Level(qo, kp, ki, kl, Group(decode=self._decode,
                                                 causal=bool(causal) and not self._decode))
        self._config = AttentionConfig(
            num_qo_heads=num_qo_heads, num_kv_heads=num_kv_heads, head_dim=head_dim,
            page_size=page_size, q_dtype=q_data_type, kv_dtype=kv_data_type,
            kv_layout=self._kv_layout, causal=bool(causal) and not self._decode,
            pos_encoding_mode=pos_encoding_mode, sm_scale=sm_scale,
            window_left=window_left, logits_soft_cap=logits_soft_cap,
            rope_scale=rope_scale, rope_theta=rope_theta)
        if self._engine is not None:
            self._engine.plan(cfg, [level], [self._buffers] if self._buffers else None)
            self.__dict__.pop("run", None)
            return
        _runtime.plan("prefill", kp, kl, qo_indptr=qo, kv_indices=ki,
                      num_qo_heads=num_qo_heads, num_kv_heads=num_kv_heads,
                      head_dim=head_dim, page_size=page_size, num_sms=1)
        self._level = _runtime.Level(qo, kp, ki, kl)

    def _run(self, q, paged_kv_cache, out, lse, return_lse, window_left):
        if self._config is None:
            raise NotPlannedError("run() before plan(): call plan() first")
        if window_left is not None and window_left != self._config.window_left:
            raise ValueError(f"window_left={window_left} differs from plan()'s "
                             f"{self._config.window_left}: the kernels are compiled for "
                             "the planned window")
        if self._engine is not None:
            return self._engine.run(q, paged_kv_cache, out, lse, return_lse)
        from .cascade import _like, _lse_out, _reference_run
        o, l = _reference_run(self._config, [self._level], q, paged_kv_cache)
        o, l = _like(o, q), _lse_out(l, q)
        if out is not None:
            out[...] = o
            o = out
        if lse is not None:
            lse[...] = l
            l = lse
        return (o, l) if return_lse else o

    def _run_checked(self, q, paged_kv_cache, args, out, lse, return_lse, window_left,
                     **unsupported):
        if args:
            raise TypeError("run() takes q and paged_kv_cache positionally; pass the "
                            "rest by keyword")
        for name, value in unsupported.items():
            reject(name, value)
        return self._run(q, paged_kv_cache, out, lse, return_lse, window_left)

    def forward_return_lse(self, q, paged_kv_cache, **kwargs):
        return self.run(q, paged_kv_cache, return_lse=True, **kwargs)

    def end_forward(self) -> None:
        """Deprecated in FlashInfer; does nothing."""
