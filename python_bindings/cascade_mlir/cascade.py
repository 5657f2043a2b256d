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

This module holds the multi-level cascade wrapper; the merges (_merge.py),
the CPU reference (_reference.py) and the deprecated shared-prefix wrappers
(_legacy.py) live beside it and are exported from here.
"""

from typing import Any, Dict, List, Optional, Sequence

from . import _gpu, _plain, _runtime
from ._gpu import NotPlannedError
from ._legacy import (  # noqa: F401
    BatchDecodeWithSharedPrefixPagedKVCacheWrapper,
    BatchPrefillWithSharedPrefixPagedKVCacheWrapper,
    _paged_view,
    _SharedPrefixBase,
)
from ._merge import (  # noqa: F401
    _V_DTYPES,
    _check_state,
    _Checked,
    _gpu_merge_state,
    _gpu_merge_state_in_place,
    _gpu_merge_states,
    _merge_kernels,
    merge_state,
    merge_state_in_place,
    merge_states,
)
from ._reference import (  # noqa: F401
    RunResult,
    _is_torch,
    _like,
    _lse_out,
    _reference_outputs,
    _reference_run,
    _to_numpy,
)
from ._signatures import flashinfer_signature
from .config import AttentionConfig, ScoreArgs, kv_scales

__all__ = [
    "merge_state",
    "merge_state_in_place",
    "merge_states",
    "MultiLevelCascadeAttentionWrapper",
    "BatchDecodeWithSharedPrefixPagedKVCacheWrapper",
    "BatchPrefillWithSharedPrefixPagedKVCacheWrapper",
    "NotPlannedError",
]


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

    Outside CUDA-graph mode, a cascade that the cost model says would not
    pay (a short shared prefix) runs as the plain batch it stands for, where
    one exists (`plain_when_cheaper`, `runs_plain`; docs/auto-cascade.md).
    """

    #: Run a cascade that would not pay as one plain level (outside
    #: CUDA-graph mode, where the plain level computes the same attention).
    #: False always runs the levels as given.
    plain_when_cheaper: bool = True

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
        self._runs_plain = False

    @property
    def num_levels(self) -> int:
        return self._num_levels

    @property
    def runs_plain(self) -> bool:
        """Whether the last plan() runs the cascade as one plain level
        (`plain_when_cheaper`)."""
        return self._runs_plain

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

    @flashinfer_signature("MultiLevelCascadeAttentionWrapper.plan")
    def plan(self, qo_indptr_arr: Sequence, paged_kv_indptr_arr: Sequence,
             paged_kv_indices_arr: Sequence, paged_kv_last_page_len: Sequence,
             num_qo_heads: int, num_kv_heads: int, head_dim: int, page_size: int,
             causal: bool = False, use_fp16_qk_reduction: bool = False,
             q_data_type: Any = "float16", kv_data_type: Any = None, *,
             score: ScoreArgs) -> None:
        """Plans every level (on the host) and uploads the plan; reused by
        every run() until the next plan(). FlashInfer's signature
        (_signatures.py: the score options arrive as `score`)."""
        cfg = AttentionConfig.make(
            q_dtype=q_data_type, kv_dtype=kv_data_type, head_dim=head_dim,
            num_qo_heads=num_qo_heads, num_kv_heads=num_kv_heads, page_size=page_size,
            kv_layout=self._kv_layout, **score)
        levels = _gpu.levels_from_arrays(qo_indptr_arr, paged_kv_indptr_arr,
                                         paged_kv_indices_arr, paged_kv_last_page_len,
                                         self._num_levels, causal)
        self._config, self._causal = cfg, bool(causal)
        self._host_levels = levels
        self._runs_plain = False
        if self._engine is not None:
            run_levels, buffers = levels, self._buffers
            if self.plain_when_cheaper and not self._use_cuda_graph:
                flat = _plain.plain_level(levels, cfg, bool(causal))
                if flat is not None and not _plain.cascade_pays(
                        flat, cfg, bool(causal), len(levels)):
                    run_levels, buffers, self._runs_plain = [flat], None, True
            self._engine.plan(cfg, run_levels, buffers)
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
