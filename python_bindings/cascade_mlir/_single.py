"""The batch decode / prefill wrappers' shared machinery: FlashInfer's
plan()/run() arguments, one attention level (or, with plan(...,
auto_cascade=True), the levels of the cascade the runtime finds in the page
tables, docs/auto-cascade.md), GPU kernels or the CPU reference."""

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import numpy as np

from . import _gpu, _runtime
from ._frameworks import host_int32
from ._gpu import NotPlannedError
from .config import AttentionConfig, ScoreArgs, kv_scales
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
    in pages, batch-invariant; None = automatic) and `disable_split_kv`
    (never split) as the runtime's (fixed_split_pages, disable_split_kv)."""
    if not isinstance(disable_split_kv, (bool, np.bool_)):
        raise ValueError(f"disable_split_kv must be a bool, got {disable_split_kv!r}")
    if fixed_split_size is None:
        return 0, bool(disable_split_kv)
    if isinstance(fixed_split_size, (bool, np.bool_)) or \
            not isinstance(fixed_split_size, (int, np.integer)) or fixed_split_size <= 0:
        raise ValueError("fixed_split_size must be a positive number of pages (or "
                         f"None = automatic), got {fixed_split_size!r}")
    if disable_split_kv:
        raise ValueError(f"fixed_split_size={fixed_split_size} and "
                         "disable_split_kv=True are exclusive: a fixed chunk splits KV")
    return int(fixed_split_size), False


#: What `plan(..., auto_cascade={...})` may set (AutoCascadeOptions,
#: docs/auto-cascade.md); `causal` comes from plan()'s own argument.
AUTO_CASCADE_OPTIONS = ("max_levels", "graph_group_capacity", "shared_qo_tile_size",
                        "bandwidth_bytes_per_us", "level_overhead_us",
                        "group_overhead_us", "level_row_bytes")


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
        #: Whether plan() plans the kernels with attention sinks: set by the
        #: last run() (sinks given or not), which replans once when it
        #: changes, so that an engine passing sinks every step plans them
        #: directly from the second step on.
        self._sinks = False
        self._replan: Optional[Callable[[], None]] = None

    @property
    def is_cuda(self) -> bool:
        return self._engine is not None

    def reset_workspace_buffer(self, float_workspace_buffer: Any,
                               int_workspace_buffer: Any = None) -> None:
        if self._engine is None:
            raise ValueError("this wrapper computes on the host (CPU reference)")
        self._engine.reset_workspace_buffer(float_workspace_buffer, int_workspace_buffer)
        self._fast_run = None
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
        self._replan = lambda: self._plan(cfg, qo_indptr, kv_indptr, kv_indices,
                                          last_page_len, causal=causal, options=options,
                                          custom_mask=custom_mask)
        auto, split = options.auto_cascade, options.split
        kp = host_int32(kv_indptr, "indptr" if self._decode else "paged_kv_indptr")
        ki = _gpu.host_kv_indices(kv_indices, kp,
                                  "indices" if self._decode else "paged_kv_indices")
        kl = host_int32(last_page_len,
                        "last_page_len" if self._decode else "paged_kv_last_page_len")
        qo = np.arange(kp.size, dtype=np.int32) if qo_indptr is None \
            else host_int32(qo_indptr, "qo_indptr")
        _gpu.check_csr(qo, kp, ki, kl, "plan()", decode=self._decode)
        causal = bool(causal) and not self._decode
        if auto is not None and not cfg.position_free:
            raise ValueError("auto_cascade needs score options that do not depend on "
                             "absolute positions (no RoPE, no window): a cascade level "
                             "does not see them (apply RoPE before the call); plan() "
                             f"has {cfg.describe()}")
        self._config, self._causal = cfg, causal
        buffers: Optional[List[Dict[str, Any]]]
        if auto is not None:
            levels, buffers = self._auto_levels(cfg, qo, kp, ki, kl, causal, auto, split)
        else:
            self._auto = None
            masked = custom_mask is not None
            levels = [_gpu.Level(qo, kp, ki, kl,
                                 Group(decode=self._decode, causal=causal and not masked,
                                       custom_mask=masked, sinks=self._sinks),
                                 custom_mask=custom_mask, **split)]
            buffers = [self._buffers] if self._buffers else None
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
                head_dim=cfg.head_dim, page_size=cfg.page_size, num_sms=1, **split)
        mask = {} if custom_mask is None else \
            {"custom_mask": custom_mask[0], "mask_indptr": custom_mask[1]}
        self._levels = [_runtime.Level(lv.qo_indptr, lv.kv_indptr, lv.kv_indices,
                                       lv.kv_last_page_len, **mask) for lv in levels]

    def _auto_levels(self, cfg: AttentionConfig, qo: np.ndarray, kp: np.ndarray,
                     ki: np.ndarray, kl: np.ndarray, causal: bool,
                     options: Dict[str, Union[int, float]], split: Dict[str, Any]
                     ) -> Tuple[List[_gpu.Level], Optional[List[Dict[str, Any]]]]:
        """The levels of an automatic cascade: the runtime's
        makeAutoCascadePlan over the batch (shared levels are non-causal
        prefill levels, the last keeps the batch's mode and mask); one level,
        the plain batch, when no sharing pays."""
        graph = self._use_cuda_graph
        res = _runtime.auto_cascade(
            "decode" if self._decode else "prefill", kp, kl,
            qo_indptr=None if self._decode else qo, kv_indices=ki,
            num_qo_heads=cfg.num_qo_heads, num_kv_heads=cfg.num_kv_heads,
            head_dim=cfg.head_dim, page_size=cfg.page_size, num_sms=1,
            cuda_graph=int(graph), q_dtype=cfg.q_dtype, kv_dtype=cfg.kv_dtype,
            causal=causal, **split, **options)
        self._auto = res
        n = len(res["levels"])
        levels = []
        for i, lv in enumerate(res["levels"]):
            last = i == n - 1
            group = Group(decode=self._decode and last, causal=causal and last,
                          accumulate=i > 0, sinks=self._sinks and i == 0)
            lqo = lv["qo_indptr"] if lv["qo_indptr"] is not None else qo
            levels.append(_gpu.Level(lqo, lv["kv_indptr"], lv["kv_indices"],
                                     lv["kv_last_page_len"], group, **split))
        if n == 1:  # the plain batch: the caller's buffers, as without auto
            return levels, [self._buffers] if self._buffers else None
        if not graph or self._engine is None:
            return levels, None
        # CUDA-graph mode: the levels' sizes are fixed (B, the group
        # capacity); their page lists get buffers that hold every page of a
        # batch as large as the caller's buffer (or twice the first), so a
        # replan may move pages between levels freely.
        own = {k: v for k, v in (self._buffers or {}).items() if v is not None}
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

    def _run(self, q: Any, paged_kv_cache: Any, out: Any, lse: Any, return_lse: bool,
             planned: ScoreArgs, k_scale: Optional[float] = None,
             v_scale: Optional[float] = None, sinks: Any = None) -> Any:
        """run() past its fast path; `planned`: the score options run() was
        given again (checked against plan()'s)."""
        if self._config is None:
            raise NotPlannedError("run() before plan(): call plan() first")
        ks, vs = kv_scales(self._config, k_scale, v_scale)
        self._config.check_planned(planned)
        if (sinks is not None) != self._sinks:
            self._sinks = sinks is not None
            if self._engine is not None:
                # The kernels with sinks differ from those without: plan again.
                assert self._replan is not None
                self._replan()
        if self._engine is not None:
            return self._engine.run(q, paged_kv_cache, out, lse, return_lse,
                                    k_scale=ks, v_scale=vs, sinks=sinks)
        from .cascade import _reference_outputs
        assert self._levels is not None
        return _reference_outputs(self._config, self._causal, self._levels, q,
                                  paged_kv_cache, out, lse, return_lse, ks, vs, sinks)

    def _run_checked(self, q: Any, paged_kv_cache: Any, args: Tuple[Any, ...], out: Any,
                     lse: Any, return_lse: bool, planned: ScoreArgs,
                     k_scale: Optional[float] = None, v_scale: Optional[float] = None,
                     sinks: Any = None, **unsupported: Any) -> Any:
        if args:
            raise TypeError("run() takes q and paged_kv_cache positionally; pass the "
                            "rest by keyword")
        for name, value in unsupported.items():
            reject(name, value)
        return self._run(q, paged_kv_cache, out, lse, return_lse, planned,
                         k_scale, v_scale, sinks)

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
