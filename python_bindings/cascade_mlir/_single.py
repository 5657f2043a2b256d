"""The batch decode / prefill wrappers' shared machinery: FlashInfer's
plan()/run() arguments, one attention level (or, with plan(...,
auto_cascade=True), the levels of the cascade the runtime finds in the page
tables, docs/auto-cascade.md), GPU kernels or the CPU reference."""

import copy
from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import numpy as np

from . import _gpu, _plain, _runtime
from ._frameworks import host_int32
from ._gpu import NotPlannedError
from .config import FP8_DTYPES, AttentionConfig, ScoreArgs, run_scale
from .kernels import Group
from .masks import check_custom_mask_supported


def reject(name: str, value: Any, default: Any = None) -> None:
    """FlashInfer arguments this implementation does not support: accepted
    at their defaults, rejected otherwise."""
    if value is not default and value != default:
        raise ValueError(f"{name}={value!r} is not supported by cascade_mlir "
                         f"(only {default!r})")


def split_options(fixed_split_size: Optional[int], disable_split_kv: bool
                  ) -> Tuple[int, bool]:
    """FlashInfer's plan options `fixed_split_size` (a fixed split-KV chunk
    in pages, batch-invariant; None or -1 = automatic, as FlashInfer 0.5.3
    spells it: vLLM passes -1) and `disable_split_kv` (never split) as the
    runtime's (fixed_split_pages, disable_split_kv)."""
    if not isinstance(disable_split_kv, (bool, np.bool_)):
        raise ValueError(f"disable_split_kv must be a bool, got {disable_split_kv!r}")
    is_int = isinstance(fixed_split_size, (int, np.integer)) and \
        not isinstance(fixed_split_size, (bool, np.bool_))
    if fixed_split_size is None or (is_int and fixed_split_size == -1):
        return 0, bool(disable_split_kv)
    if not is_int or fixed_split_size <= 0:  # type: ignore[operator]
        raise ValueError("fixed_split_size must be a positive number of pages (or "
                         f"None / -1 = automatic), got {fixed_split_size!r}")
    if disable_split_kv:
        raise ValueError(f"fixed_split_size={fixed_split_size} and "
                         "disable_split_kv=True are exclusive: a fixed chunk splits KV")
    return int(fixed_split_size), False


def split_form(head_dim_qk: int, head_dim_vo: Optional[int], form: str) -> str:
    """The KV form of a plan's configuration: 'pool' (run() binds the
    kernels of the form it is given), or `form` ('pair', 'ragged') where v
    and the output have a head_dim of their own (head_dim_vo), which a 5-D
    pool cannot hold (AttentionConfig refuses it)."""
    return "pool" if head_dim_vo is None or head_dim_vo == head_dim_qk else form


#: What `plan(..., auto_cascade={...})` may set (AutoCascadeOptions,
#: docs/auto-cascade.md); `causal` comes from plan()'s own argument.
AUTO_CASCADE_OPTIONS = ("max_levels", "graph_group_capacity", "shared_qo_tile_size",
                        "bandwidth_bytes_per_us", "level_overhead_us",
                        "group_overhead_us", "level_row_bytes", "l2_hidden_fraction")


def auto_cascade_options(auto_cascade: Union[bool, None, Dict[str, float]]
                         ) -> Optional[Dict[str, Union[int, float]]]:
    """plan()'s `auto_cascade` argument: False (off), True (the runtime's
    defaults) or a dict of AutoCascadeOptions fields; None when off."""
    if auto_cascade is False or auto_cascade is None:
        return None
    if auto_cascade is True:
        return {}
    if not isinstance(auto_cascade, dict):
        raise TypeError("auto_cascade must be True, False or a dict of options "
                        f"({', '.join(AUTO_CASCADE_OPTIONS)}), got "
                        f"{type(auto_cascade).__name__}")
    for key, value in auto_cascade.items():
        if key not in AUTO_CASCADE_OPTIONS:
            raise ValueError(f"auto_cascade: unknown option {key!r} (known: "
                             f"{', '.join(AUTO_CASCADE_OPTIONS)}; causal is plan()'s "
                             "own argument)")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"auto_cascade[{key!r}] must be a number, got {value!r}")
        if key in ("max_levels", "graph_group_capacity", "shared_qo_tile_size") \
                and not float(value).is_integer():
            raise TypeError(f"auto_cascade[{key!r}] must be an int, got {value!r}")
    return {k: (int(v) if k in ("max_levels", "graph_group_capacity",
                                "shared_qo_tile_size") else float(v))
            for k, v in auto_cascade.items()}


@dataclass(frozen=True)
class PlanOptions:
    """plan()'s options beside the configuration and the index arrays,
    checked: the automatic cascade (None: off; else the AutoCascadeOptions
    fields given, docs/auto-cascade.md) and the split-KV options as the
    runtime takes them (fixed_split_pages: 0 = automatic)."""

    auto_cascade: Optional[Dict[str, Union[int, float]]] = None
    fixed_split_pages: int = 0
    disable_split_kv: bool = False

    @property
    def split(self) -> Dict[str, Any]:
        """The runtime's split keywords (plan, auto_cascade, Level)."""
        return {"fixed_split_pages": self.fixed_split_pages,
                "disable_split_kv": self.disable_split_kv}


@dataclass(frozen=True)
class PlanInputs:
    """plan()'s index arrays on the host (kv_indptr rebased to start at 0,
    kv_indices from the old kv_indptr[0] on; qo_indptr None in decode) and
    the caller's index buffers the GPU plan binds (None: none)."""

    qo: Optional[np.ndarray]
    kv_indptr: np.ndarray
    kv_indices: np.ndarray
    last_page_len: np.ndarray
    buffers: Optional[Dict[str, Any]] = None


def data_ptr(x: Any) -> Optional[int]:
    """The address of a device array's first element (torch, cupy, or an
    array with an integer `ptr`); None for anything else."""
    get = getattr(x, "data_ptr", None)
    if callable(get):
        return int(get())
    mem = getattr(getattr(x, "data", None), "ptr", None)
    if isinstance(mem, int):
        return mem
    ptr = getattr(x, "ptr", None)
    return ptr if isinstance(ptr, int) else None


def scale_in_place(o: Any, factor: float) -> None:
    """o *= factor in o's own storage and dtype (run()'s v_scale on a
    f16/bf16 KV cache, as FlashInfer applies it: no new tensor)."""
    mul = getattr(o, "mul_", None)
    if callable(mul):  # torch
        mul(factor)
    else:  # numpy, cupy
        o *= factor


#: Score-option variants of one plan that a wrapper keeps planned
#: (forward()'s options, k_scale / q_scale folded into sm_scale); the
#: least recently used goes first (outside CUDA-graph mode).
MAX_VARIANTS = 8


def _is_one(x: Any) -> bool:
    """None or the number 1 (run()'s q/k/v scales that change nothing)."""
    return x is None or (type(x) in (float, int) and x == 1)


class SingleLevelWrapper:
    _decode = True
    #: run() takes contiguous (k, v) whose page table is the identity (the
    #: ragged wrapper): a plain plan runs the ragged kernels, which compute
    #: a key's address instead of loading its page id.
    _contiguous_kv = False
    #: FlashInfer's run(), defined by each wrapper.
    run: Callable[..., Any]

    def __init__(self, float_workspace_buffer: Any, kv_layout: str = "NHD",
                 use_cuda_graph: bool = False,
                 buffers: Optional[Dict[str, Any]] = None):
        if kv_layout not in ("NHD", "HND"):
            raise ValueError(f"kv_layout must be 'NHD' or 'HND', got {kv_layout!r}")
        self._kv_layout = kv_layout
        self._use_cuda_graph = use_cuda_graph
        self._buffers = buffers if buffers and any(v is not None for v in buffers.values()) \
            else None
        self._engine: Optional[_gpu.Engine] = None
        if _gpu.workspace_device(float_workspace_buffer) is not None:
            self._engine = _gpu.Engine(float_workspace_buffer, use_cuda_graph)
        elif use_cuda_graph:
            raise ValueError("use_cuda_graph needs a CUDA float_workspace_buffer")
        #: The planned program's run (C++) once planned on a GPU: run() calls
        #: it directly when no FlashInfer-only option is passed.
        self._fast_run: Optional[Callable[..., Any]] = None
        self._levels: Optional[List[Any]] = None
        self._config: Optional[AttentionConfig] = None
        self._causal = False
        self._auto: Optional[Dict[str, Any]] = None
        self._auto_buffers: Optional[List[Dict[str, Any]]] = None
        #: The host plan of the last plain plan() on the CPU reference path
        #: (_runtime.plan's dict, num_sms=1); None otherwise.
        self._host_plan: Optional[Dict[str, Any]] = None
        #: The state inputs plan() plans the kernels with (names): set by the
        #: last run() (those it was given), which replans once when they
        #: change, so that an engine passing them every step plans them
        #: directly from the second step on.
        self._state_inputs: Tuple[str, ...] = ()
        self._replan: Optional[Callable[[], None]] = None
        #: The last plan() (its options, custom mask and host inputs) and its
        #: own score configuration and mask (_plan_key), for the variants.
        self._planned: Optional[Tuple[PlanOptions, Any, PlanInputs]] = None
        self._plan_key: Optional[Tuple[AttentionConfig, bool]] = None
        self._plan_gen = 0
        #: (config, causal) -> a wrapper planned over the same inputs with
        #: other score options (forward()'s, or sm_scale * k_scale); each
        #: re-plans once per plan() of this one, when first used.
        self._variants: Dict[Tuple[AttentionConfig, bool], "SingleLevelWrapper"] = {}
        #: The variant that forward() made current (None: plan()'s own), as
        #: FlashInfer's forward() sets the options run() uses until plan().
        self._active: Optional[Tuple[AttentionConfig, bool]] = None
        #: CUDA-graph mode: the offset into the caller's kv_indices buffer
        #: that the first plan bound (the captured launches read there).
        self._graph_kv_offset: Optional[int] = None

    @property
    def is_cuda(self) -> bool:
        return self._engine is not None

    def reset_workspace_buffer(self, float_workspace_buffer: Any,
                               int_workspace_buffer: Any = None) -> None:
        if self._engine is None:
            raise ValueError("this wrapper computes on the host (CPU reference)")
        self._engine.reset_workspace_buffer(float_workspace_buffer, int_workspace_buffer)
        self._fast_run = None
        self._variants.clear()
        self._active = None
        self.__dict__.pop("run", None)
        self.__dict__.pop("forward", None)
        _gpu.one_call_run(self, None)

    @property
    def auto_cascade_stats(self) -> Optional[Dict[str, Any]]:
        """What the last plan(..., auto_cascade=...) found (a copy):
        num_levels, shared_levels, candidate_groups, shared_groups, pages_in,
        pages_read, pages_saved, saved_us, overhead_us (docs/auto-cascade.md);
        None when the last plan() did not ask for an automatic cascade."""
        return None if self._auto is None else dict(self._auto["stats"])

    @property
    def auto_cascade_levels(self) -> Optional[List[Dict[str, Any]]]:
        """The levels of the last automatic cascade (copies of their index
        arrays: mode, qo_indptr (None in decode), kv_indptr, kv_indices,
        kv_last_page_len, num_page_groups); None without one."""
        if self._auto is None:
            return None
        keys = ("mode", "qo_indptr", "kv_indptr", "kv_indices", "kv_last_page_len",
                "num_page_groups")
        return [{k: (v.copy() if isinstance(v, np.ndarray) else v)
                 for k, v in lv.items() if k in keys} for lv in self._auto["levels"]]

    def _plan_options(self, auto_cascade: Union[bool, None, Dict[str, float]],
                      fixed_split_size: Optional[int], disable_split_kv: bool,
                      custom_mask: Optional[Tuple[np.ndarray, np.ndarray]] = None
                      ) -> PlanOptions:
        """plan()'s `auto_cascade`, `fixed_split_size` and `disable_split_kv`,
        checked (and `custom_mask`, when given, against CUDA-graph mode and
        auto_cascade)."""
        auto = auto_cascade_options(auto_cascade)
        if custom_mask is not None:
            check_custom_mask_supported(self._use_cuda_graph, auto is not None)
        fixed_pages, no_split = split_options(fixed_split_size, disable_split_kv)
        return PlanOptions(auto, fixed_pages, no_split)

    def _plan(self, cfg: AttentionConfig, qo_indptr: Any, kv_indptr: Any,
              kv_indices: Any, last_page_len: Any, *, causal: bool,
              options: PlanOptions,
              custom_mask: Optional[Tuple[np.ndarray, np.ndarray]] = None) -> None:
        """Plans `cfg` over the index arrays (qo_indptr None: decode, one
        query per request). `options` from _plan_options; `custom_mask`:
        (packed bytes, byte offsets per request) of FlashInfer's custom mask;
        it replaces the causal mask (FlashInfer's MaskMode.CUSTOM)."""
        inputs = self._plan_inputs(qo_indptr, kv_indptr, kv_indices, last_page_len)
        causal = bool(causal) and not self._decode
        self._active = None
        self._plan_state(cfg, causal, options, custom_mask, inputs)
        self._planned = (options, custom_mask, inputs)
        self._plan_key = (cfg, causal)
        self._plan_gen += 1
        if self._use_cuda_graph:
            # Captured launches of a variant replay its plan without a call
            # that could re-plan it: every variant follows plan() now.
            for (vcfg, vcausal), v in self._variants.items():
                v._plan_state(vcfg, vcausal, options, custom_mask, inputs)
                v._plan_gen = self._plan_gen

    def _plan_inputs(self, qo_indptr: Any, kv_indptr: Any, kv_indices: Any,
                     last_page_len: Any) -> PlanInputs:
        """plan()'s index arrays on the host, checked. A kv_indptr that does
        not start at 0 (vLLM's prefill plan of a mixed batch gets
        paged_kv_indptr[num_decodes:] and the step's whole kv_indices) is
        rebased as FlashInfer reads it: request i's pages are
        kv_indices[kv_indptr[i]:kv_indptr[i+1]], so the plan takes
        kv_indptr - kv_indptr[0] over kv_indices[kv_indptr[0]:] (a view of a
        device array: only the pages used are copied to the host)."""
        ip_name = "indptr" if self._decode else "paged_kv_indptr"
        kp = host_int32(kv_indptr, ip_name)
        base = int(kp[0]) if kp.size else 0
        if base < 0:
            raise ValueError(f"plan(): {ip_name}[0] = {base} is negative")
        used_indices = kv_indices[base:] if base else kv_indices
        kp = kp - np.int32(base) if base else kp
        ki = _gpu.host_kv_indices(used_indices, kp,
                                  "indices" if self._decode else "paged_kv_indices")
        kl = host_int32(last_page_len,
                        "last_page_len" if self._decode else "paged_kv_last_page_len")
        qo = None if qo_indptr is None else host_int32(qo_indptr, "qo_indptr")
        if qo is not None and qo.size and qo[0] != 0:
            # FlashInfer's planner takes it, but its kernels then read q and
            # write o at rows qo_indptr[i] of the whole q while its split-KV
            # merge writes rows from 0: no consistent meaning to copy.
            raise ValueError(f"plan(): qo_indptr[0] must be 0, got {int(qo[0])}: pass "
                             "qo_indptr - qo_indptr[0] and run() on "
                             f"q[{int(qo[0])}:] (as vLLM plans a mixed batch's prefills)")
        _gpu.check_csr(np.arange(kp.size, dtype=np.int32) if qo is None else qo,
                       kp, ki, kl, "plan()", decode=self._decode)
        buffers = self._buffers
        if self._engine is not None and buffers:
            buffers = self._rebased_buffers(base, kv_indptr, kv_indices)
        return PlanInputs(qo, kp, ki, kl, buffers)

    def _rebased_buffers(self, base: int, kv_indptr: Any, kv_indices: Any
                         ) -> Dict[str, Any]:
        """The caller's index buffers (constructor) for a plan whose
        kv_indptr starts at `base`. The plan uploads the rebased arrays into
        them, so: a kv_indices argument that starts where the kv_indices
        buffer starts (an engine passing its own buffer, whole or a prefix)
        binds the buffer from entry `base` on (its pages stay where they
        are: the upload rewrites them with themselves); any other argument
        is copied to the buffer's start, as FlashInfer copies it into its
        buffer. A kv_indptr argument that is the kv_indptr buffer itself is
        not overwritten with the rebased values: outside CUDA-graph mode the
        plan keeps them in its workspace instead; in CUDA-graph mode (whose
        captured launches read the buffers) that is refused, as is a
        kv_indices binding that moves after the first plan."""
        assert self._buffers is not None
        out = dict(self._buffers)
        graph = self._use_cuda_graph
        buf = out.get("kv_indices")
        if buf is not None:
            offset = 0
            if base and data_ptr(kv_indices) is not None and \
                    data_ptr(kv_indices) == data_ptr(buf):
                out["kv_indices"] = buf[base:]
                offset = base
            if graph:
                if self._graph_kv_offset is None:
                    self._graph_kv_offset = offset
                elif offset != self._graph_kv_offset:
                    raise ValueError(
                        f"CUDA-graph mode: this plan (paged_kv_indptr[0] = {base}) would "
                        f"read the kv_indices buffer from entry {offset}, which moves the "
                        "page list the captured launches read (the first plan read it "
                        f"from entry {self._graph_kv_offset}); over the wrapper's own "
                        "kv_indices buffer keep paged_kv_indptr[0] fixed")
        ibuf = out.get("kv_indptr")
        if base and ibuf is not None and data_ptr(kv_indptr) is not None and \
                data_ptr(kv_indptr) == data_ptr(ibuf):
            if graph:
                raise ValueError(
                    f"CUDA-graph mode: paged_kv_indptr starts at {base} and is the wrapper's "
                    "own kv_indptr buffer: the kernels read it rebased to 0, which would "
                    "overwrite the caller's values; pass a separate indptr array")
            out["kv_indptr"] = None
        return out

    def _plan_state(self, cfg: AttentionConfig, causal: bool, options: PlanOptions,
                    custom_mask: Optional[Tuple[np.ndarray, np.ndarray]],
                    inputs: PlanInputs) -> None:
        """Plans this wrapper's kernels (or CPU reference) for `cfg` and the
        mask over plan()'s checked inputs."""
        self._replan = lambda: self._plan_state(cfg, causal, options, custom_mask, inputs)
        auto, split = options.auto_cascade, options.split
        kp, ki, kl = inputs.kv_indptr, inputs.kv_indices, inputs.last_page_len
        qo = np.arange(kp.size, dtype=np.int32) if inputs.qo is None else inputs.qo
        if auto is not None and not cfg.position_free:
            raise ValueError("auto_cascade needs score options that do not depend on "
                             "absolute positions (no RoPE, no window): a cascade level "
                             "does not see them (apply RoPE before the call); plan() "
                             f"has {cfg.describe()}")
        self._config, self._causal = cfg, causal
        buffers: Optional[List[Dict[str, Any]]]
        if auto is not None:
            levels, buffers = self._auto_levels(cfg, qo, kp, ki, kl, causal, auto, split,
                                                inputs.buffers)
        else:
            self._auto = None
            masked = custom_mask is not None
            levels = [_gpu.Level(qo, kp, ki, kl,
                                 Group(decode=self._decode, causal=causal and not masked,
                                       custom_mask=masked,
                                       state_inputs=self._state_inputs),
                                 custom_mask=custom_mask, **split)]
            buffers = [inputs.buffers] if inputs.buffers else None
        if self._engine is not None:
            # An automatic cascade's levels index the tokens through tables.
            self._engine.pair_form = "ragged" if self._contiguous_kv and auto is None \
                else "pair"
            self._engine.plan(cfg, levels, buffers)
            self._fast_run = self._engine.program.run
            self.__dict__.pop("run", None)
            _gpu.one_call_run(self, self._engine.program)
            return
        self._host_plan = None
        if auto is None:  # checks the inputs; the CPU reference needs no plan
            self._host_plan = _runtime.plan(
                "decode" if self._decode else "prefill", kp, kl,
                qo_indptr=None if self._decode else qo, kv_indices=ki,
                num_qo_heads=cfg.num_qo_heads, num_kv_heads=cfg.num_kv_heads,
                head_dim=cfg.head_dim, head_dim_vo=cfg.v_dim, page_size=cfg.page_size,
                num_sms=1, **split)
        mask = {} if custom_mask is None else \
            {"custom_mask": custom_mask[0], "mask_indptr": custom_mask[1]}
        self._levels = [_runtime.Level(lv.qo_indptr, lv.kv_indptr, lv.kv_indices,
                                       lv.kv_last_page_len, **mask) for lv in levels]

    def _auto_levels(self, cfg: AttentionConfig, qo: np.ndarray, kp: np.ndarray,
                     ki: np.ndarray, kl: np.ndarray, causal: bool,
                     options: Dict[str, Union[int, float]], split: Dict[str, Any],
                     user_buffers: Optional[Dict[str, Any]] = None
                     ) -> Tuple[List[_gpu.Level], Optional[List[Dict[str, Any]]]]:
        """The levels of an automatic cascade: the runtime's
        makeAutoCascadePlan over the batch (shared levels are non-causal
        prefill levels, the last keeps the batch's mode and mask); one level,
        the plain batch, when no sharing pays."""
        graph = self._use_cuda_graph
        res = _plain.auto_cascade(cfg, self._decode, qo, kp, ki, kl, causal,
                                  cuda_graph=int(graph), **split, **options)
        self._auto = res
        n = len(res["levels"])
        levels = []
        for i, lv in enumerate(res["levels"]):
            last = i == n - 1
            group = Group(decode=self._decode and last, causal=causal and last,
                          accumulate=i > 0,
                          state_inputs=self._state_inputs if i == 0 else ())
            lqo = lv["qo_indptr"] if lv["qo_indptr"] is not None else qo
            levels.append(_gpu.Level(lqo, lv["kv_indptr"], lv["kv_indices"],
                                     lv["kv_last_page_len"], group, **split))
        if n == 1:  # the plain batch: the caller's buffers, as without auto
            return levels, [user_buffers] if user_buffers else None
        if not graph or self._engine is None:
            return levels, None
        # CUDA-graph mode: the levels' sizes are fixed (B, the group
        # capacity); their page lists get buffers that hold every page of a
        # batch as large as the caller's buffer (or twice the first), so a
        # replan may move pages between levels freely.
        own = {k: v for k, v in (user_buffers or {}).items() if v is not None}
        if self._auto_buffers is None or len(self._auto_buffers) != n - 1:
            empty_i32 = getattr(self._engine.fw, "empty_i32", None)
            if empty_i32 is None:  # a framework adapter without int32 tensors
                empty: List[Dict[str, Any]] = [{} for _ in range(n - 1)]
                return levels, empty + [own]
            user = own.get("kv_indices")
            cap = int(user.shape[0]) if user is not None else max(2 * int(kp[-1]), 65536)
            self._auto_buffers = [{"kv_indices": empty_i32(cap, self._engine.ordinal)}
                                  for _ in range(n - 1)]
        return levels, self._auto_buffers + [own]

    # --- score-option variants: forward()'s options, k_scale / q_scale ------

    def _variant(self, cfg: AttentionConfig, causal: bool) -> "SingleLevelWrapper":
        """The wrapper that runs the last plan() with `cfg`'s score options and
        the mask `causal`: this one for plan()'s own, else a variant planned
        over plan()'s inputs (once per plan(), when first used; kept for the
        next plans, MAX_VARIANTS at most)."""
        key = (cfg, causal)
        if key == self._plan_key:
            return self
        if self._planned is None:
            raise NotPlannedError("run() before plan(): call plan() first")
        v = self._variants.pop(key, None)
        if v is None:
            # (Not in CUDA-graph mode: captured launches may read any of them.)
            while len(self._variants) >= MAX_VARIANTS and not self._use_cuda_graph:
                self._variants.pop(next(iter(self._variants)))
            v = self._new_variant()
        self._variants[key] = v  # the most recently used last
        if v._plan_gen != self._plan_gen:
            options, mask, inputs = self._planned
            v._plan_gen = -1
            v._plan_state(cfg, causal, options, mask, inputs)
            v._plan_gen = self._plan_gen
        return v

    def _new_variant(self) -> "SingleLevelWrapper":
        """A copy of this wrapper to plan with other score options: its own
        engine (program and int workspace) on the same float workspace, no
        variants of its own, not registered with the torch ops."""
        v = copy.copy(self)
        for name in ("run", "forward", "_torch_op_handle"):
            v.__dict__.pop(name, None)
        v._variants, v._active, v._auto_buffers = {}, None, None
        v._fast_run, v._replan, v._levels, v._host_plan, v._auto = None, None, None, None, None
        v._plan_gen = -1
        if self._engine is not None:
            v._engine = _gpu.Engine(self._engine.float_ws, self._use_cuda_graph)
        return v

    def _set_active(self, cfg: AttentionConfig, causal: bool) -> None:
        """Makes (cfg, causal) the options run() uses until the next plan()
        (FlashInfer's forward() sets them on the wrapper); run()'s one-call
        path is the program's run only for plan()'s own options."""
        key = (cfg, causal)
        active = None if key == self._plan_key else key
        if active == self._active:
            return
        self._active = active
        program = getattr(self._engine, "program", None)
        if program is not None:
            self._fast_run = program.run if active is None else None
            _gpu.one_call_run(self, program if active is None else None)

    def _forward(self, return_lse: bool, q: Any, kv: Tuple[Any, ...],
                 causal: bool, score: ScoreArgs, **scales: Any) -> Any:
        """FlashInfer 0.5.3's deprecated forward() / forward_return_lse(): it
        sets the mask and the score options it takes (those not passed at
        forward()'s defaults) for this and later run() calls until the next
        plan(), then runs. pos_encoding_mode (and use_fp16_qk_reduction)
        choose FlashInfer's kernel at plan() and forward() does not change
        it: plan()'s applies. Options other than plan()'s run on a variant
        planned over plan()'s inputs (_variant)."""
        if self._plan_key is None:
            raise NotPlannedError("forward() before plan(): call plan() first")
        planned_cfg = self._plan_key[0]
        cfg = replace(planned_cfg, sm_scale=score["sm_scale"],
                      logits_soft_cap=score["logits_soft_cap"] or 0.0,
                      window_left=score["window_left"],
                      rope_scale=score["rope_scale"], rope_theta=score["rope_theta"])
        self._set_active(cfg, bool(causal) and not self._decode)
        given = {k: v for k, v in scales.items() if v is not None}
        if return_lse:
            return self.run_return_lse(q, *kv, **given)
        return self.run(q, *kv, **given)

    def _run(self, q: Any, paged_kv_cache: Any, out: Any, lse: Any, return_lse: bool,
             planned: ScoreArgs, k_scale: Optional[float] = None,
             v_scale: Optional[float] = None,
             state_inputs: Optional[Dict[str, Any]] = None,
             q_scale: Optional[float] = None) -> Any:
        """run() past its fast path; `planned`: the score options run() was
        given again (checked against plan()'s, or forward()'s). q_scale and
        k_scale multiply the softmax scale, as FlashInfer folds them into
        sm_scale (an fp8 KV cache's kernels take k_scale themselves); v_scale
        multiplies the output (the fp8 kernels take it), in place."""
        if self._config is None or self._plan_key is None:
            raise NotPlannedError("run() before plan(): call plan() first")
        target = self if self._active is None else self._variant(*self._active)
        cfg = target._config
        assert cfg is not None
        cfg.check_planned(planned)
        qs = run_scale("q_scale", q_scale)
        ks = run_scale("k_scale", k_scale)
        vs = run_scale("v_scale", v_scale, positive=False)
        fp8 = cfg.kv_dtype in FP8_DTYPES
        fold = qs if fp8 else qs * ks
        if fold != 1.0:
            target = self._variant(replace(cfg, sm_scale=cfg.effective_sm_scale * fold),
                                   target._causal)
        result = target._launch(q, paged_kv_cache, out, lse, return_lse,
                                ks if fp8 else 1.0, vs if fp8 else 1.0, state_inputs)
        if not fp8 and vs != 1.0:
            scale_in_place(result[0] if return_lse else result, vs)
        return result

    def _launch(self, q: Any, paged_kv_cache: Any, out: Any, lse: Any, return_lse: bool,
                k_scale: float, v_scale: float,
                state_inputs: Optional[Dict[str, Any]]) -> Any:
        """The kernels (or the CPU reference) of this wrapper's plan;
        `state_inputs`: {name: tensor} (None values are not given)."""
        given = {k: v for k, v in (state_inputs or {}).items() if v is not None}
        if tuple(given) != self._state_inputs:
            self._state_inputs = tuple(given)
            if self._engine is not None:
                # Kernels that take other state inputs: plan again.
                assert self._replan is not None
                self._replan()
        if self._engine is not None:
            return self._engine.run(q, paged_kv_cache, out, lse, return_lse,
                                    k_scale=k_scale, v_scale=v_scale,
                                    state_inputs=given or None)
        from .cascade import _reference_outputs
        assert self._levels is not None and self._config is not None
        return _reference_outputs(self._config, self._causal, self._levels, q,
                                  paged_kv_cache, out, lse, return_lse, k_scale, v_scale,
                                  given or None)

    def _run_checked(self, q: Any, paged_kv_cache: Any, args: Tuple[Any, ...], out: Any,
                     lse: Any, return_lse: bool, planned: ScoreArgs,
                     q_scale: Optional[float] = None, k_scale: Optional[float] = None,
                     v_scale: Optional[float] = None,
                     state_inputs: Optional[Dict[str, Any]] = None,
                     **unsupported: Any) -> Any:
        if args:
            raise TypeError("run() takes q and paged_kv_cache positionally; pass the "
                            "rest by keyword")
        for name, value in unsupported.items():
            reject(name, value)
        return self._run(q, paged_kv_cache, out, lse, return_lse, planned,
                         k_scale, v_scale, state_inputs, q_scale)

    def run_return_lse(self, q: Any, paged_kv_cache: Any, *args: Any, **kwargs: Any) -> Any:
        """run(..., return_lse=True): (o, lse), as FlashInfer's
        `functools.partialmethod(run, return_lse=True)` (through the
        instance's run, which plan() may have made the program's)."""
        return self.run(q, paged_kv_cache, *args, return_lse=True, **kwargs)

    def forward_return_lse(self, q: Any, paged_kv_cache: Any, *args: Any,
                           **kwargs: Any) -> Any:
        """FlashInfer's deprecated name of run_return_lse."""
        return self.run(q, paged_kv_cache, *args, return_lse=True, **kwargs)

    def end_forward(self) -> None:
        """Deprecated in FlashInfer; does nothing."""
