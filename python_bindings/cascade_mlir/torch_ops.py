"""torch custom ops (`torch.library`) over the wrappers' run() and the
merges, with fake implementations, so that `torch.compile(fullgraph=True)`
traces a model that calls them and CUDA-graph capture (`torch.compile(mode=
"reduce-overhead")`, `torch.cuda.graph`) records their launches.

    import cascade_mlir.torch_ops as ops
    w = cascade_mlir.MultiLevelCascadeAttentionWrapper(2, ws, "NHD",
                                                       use_cuda_graph=True)
    h = ops.register(w)          # an int the compiled graph holds
    w.plan(...)                  # eager, once per step (host work)
    o, lse = torch.ops.cascade_mlir.run(h, q, kv_cache, None)  # per layer

A wrapper is named by an integer handle (custom ops take tensors and
scalars, not Python objects): `register(wrapper)` returns it and keeps only
a weak reference. plan() stays outside the compiled region (it copies index
arrays to the host); run() is the op. The fake implementations need the
planned configuration (the output dtype), so plan() before tracing.

With cascade_mlir._torch_bridge, run, run_out and the merges have C++
kernels for CUDA (_register_cpp_kernels, docs/python.md): run / run_out call
the runner that plan() binds to the handle of a cascade, batch decode or
batch prefill wrapper; anything else goes to the Python kernels below.

Ops (namespace `cascade_mlir`):
  run(handle, q, paged_kv_cache, v_cache?) -> (out, lse)
      any planned wrapper (MultiLevelCascadeAttentionWrapper, batch decode,
      batch prefill, ragged prefill); paged_kv_cache is the 5-D pool, or the
      k pool with v_cache the v pool (the ragged wrapper: its contiguous k
      and v, v_cache required). lse is base-2, float32 [rows, num_qo_heads].
  run_out(handle, q, paged_kv_cache, v_cache?, out, lse?) -> ()
      the same into caller-owned out / lse (mutated).
  shared_prefix_forward(handle, q, k_shared, v_shared, unique_kv_cache,
                        v_unique?) -> out
      the deprecated shared-prefix wrappers' forward().
  merge_state(v_a, s_a, v_b, s_b) -> (v, s)
  merge_state_in_place(v, s, v_other, s_other, mask?) -> ()  (mutates v, s)
  merge_states(v, s) -> (v, s)
"""

import contextlib
import itertools
import weakref
from typing import Any, Dict, Iterator, List, Optional, Tuple

import torch
from torch import Tensor

from . import cascade as _cascade
from .decode import BatchDecodeWithPagedKVCacheWrapper
from .prefill import BatchPrefillWithPagedKVCacheWrapper
from .ragged import BatchPrefillWithRaggedKVCacheWrapper

__all__ = ["register", "wrapper_of", "run", "run_out", "shared_prefix_forward",
           "merge_state", "merge_state_in_place", "merge_states"]

_wrappers: Dict[int, "weakref.ref[Any]"] = {}
_next_handle = itertools.count(1)
_FAST_RUN = (BatchDecodeWithPagedKVCacheWrapper, BatchPrefillWithPagedKVCacheWrapper)
_DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}


def register(wrapper: Any) -> int:
    """The handle the ops take for `wrapper` (the same one every call); the
    registry holds the wrapper weakly."""
    h = wrapper.__dict__.get("_torch_op_handle")
    if h is None:
        h = next(_next_handle)
        wrapper.__dict__["_torch_op_handle"] = h
        _wrappers[h] = weakref.ref(wrapper, _forget(h))
        _bind_runner(h, wrapper, _one_call_program(wrapper))
    return h


def _forget(handle: int) -> Any:
    """The weakref callback that drops a dead wrapper's handle (and the
    runner of its program)."""
    def drop(_ref: Any) -> None:
        _wrappers.pop(handle, None)
        if _RUN_BRIDGE is not None:
            _RUN_BRIDGE.bind_runner(handle, None)
    return drop


# --- the C++ kernels' runners ---------------------------------------------------
#
# The torch bridge's C++ kernels of run and run_out (registered below) call,
# per handle, the planned program of the wrapper as a C function (its
# "runner", Program._runner()): the wrapper's run(q, kv, ...) with no
# options is that program's run for the multi-level cascade (plan() puts
# program.run in its place) and the batch decode / prefill wrappers (their
# run() calls it), unless a subclass replaces run(). plan() and
# reset_workspace_buffer() tell _gpu.ONE_CALL_LISTENERS when that program
# changes; a handle without a runner (other wrappers, the CPU reference, not
# planned yet) runs the Python kernel.

#: The bridge whose run kernels are registered (None: no C++ run kernels).
_RUN_BRIDGE: Optional[Any] = None


def _runs_in_one_call(w: Any) -> bool:
    """Whether w.run(q, kv, ...) with no options is its program's run."""
    if isinstance(w, _cascade.MultiLevelCascadeAttentionWrapper):
        return True
    return getattr(type(w), "run", None) in (BatchDecodeWithPagedKVCacheWrapper.run,
                                             BatchPrefillWithPagedKVCacheWrapper.run)


def _one_call_program(w: Any) -> Any:
    """The program whose run w.run is now (None: not a one-call run)."""
    program = getattr(w.__dict__.get("_engine"), "program", None)
    if program is None:
        return None
    run = w.__dict__.get("run" if isinstance(w, _cascade.MultiLevelCascadeAttentionWrapper)
                         else "_fast_run")
    return program if run is not None and run == program.run else None


def _bind_runner(handle: int, w: Any, program: Any) -> None:
    if _RUN_BRIDGE is not None:
        runner = program._runner() if program is not None and _runs_in_one_call(w) \
            else None
        _RUN_BRIDGE.bind_runner(handle, runner)


@contextlib.contextmanager
def _without_runner(handle: int) -> Iterator[None]:
    """Inside it, run / run_out of `handle` take the Python kernel (the
    handle's runner unbound): what the op costs without its C++ kernel
    (benchmarks/python/host_overhead.py, the host-cost tests)."""
    if _RUN_BRIDGE is not None:
        _RUN_BRIDGE.bind_runner(handle, None)
    try:
        yield
    finally:
        w = wrapper_of(handle)
        _bind_runner(handle, w, _one_call_program(w))


def _one_call_run_changed(w: Any, program: Any) -> None:
    """_gpu.ONE_CALL_LISTENERS' entry: rebinds a registered wrapper's runner."""
    h = w.__dict__.get("_torch_op_handle")
    if h is not None:
        _bind_runner(h, w, program)


def wrapper_of(handle: int) -> Any:
    ref = _wrappers.get(int(handle))
    w = ref() if ref is not None else None
    if w is None:
        raise ValueError(f"no live wrapper has handle {handle}: register(wrapper) "
                         "returns it, and it lives as long as the wrapper")
    return w


def _out_dtype(w: Any, q: Tensor) -> torch.dtype:
    cfg = w.__dict__.get("_config")
    if cfg is None:
        raise ValueError("the wrapper has not been planned: plan() before tracing "
                         "or running the op (the output dtype is the plan's)")
    return _DTYPES.get(cfg.o_dtype, q.dtype)


def _kv(paged_kv_cache: Tensor, v_cache: Optional[Tensor]) -> Any:
    return paged_kv_cache if v_cache is None else (paged_kv_cache, v_cache)


# --- registration ---------------------------------------------------------------
#
# The ops are declared with torch.library.Library (schema, one kernel for
# every backend, a fake kernel) rather than torch.library.custom_op: a call
# then goes from torch's dispatcher straight to the kernel. custom_op adds
# Python-level autograd and ADInplaceOrView kernels (and output alias checks)
# to every call, several us of host time each (benchmarks/python/
# host_overhead.py). What they did is kept at less cost: the schemas are the
# same, mutated tensors get their version counters bumped, and a call whose
# inputs require grad (grad mode on) returns outputs whose backward raises
# "no autograd formula" as custom_op's did; the autograd key falls through
# (no Python frame there) and the check is in the kernel.

_LIB = torch.library.Library("cascade_mlir", "FRAGMENT")
_SCHEMAS = {
    "run": "run(SymInt handle, Tensor q, Tensor paged_kv_cache, Tensor? v_cache=None) "
           "-> (Tensor, Tensor)",
    "run_out": "run_out(SymInt handle, Tensor q, Tensor paged_kv_cache, Tensor? v_cache, "
               "Tensor(a4!) out, Tensor(a5!)? lse=None) -> ()",
    "shared_prefix_forward": "shared_prefix_forward(SymInt handle, Tensor q, "
                             "Tensor k_shared, Tensor v_shared, Tensor unique_kv_cache, "
                             "Tensor? v_unique=None) -> Tensor",
    "merge_state": "merge_state(Tensor v_a, Tensor s_a, Tensor v_b, Tensor s_b) "
                   "-> (Tensor, Tensor)",
    "merge_state_in_place": "merge_state_in_place(Tensor(a0!) v, Tensor(a1!) s, "
                            "Tensor v_other, Tensor s_other, Tensor? mask=None) -> ()",
    "merge_states": "merge_states(Tensor v, Tensor s) -> (Tensor, Tensor)",
}
_bump_versions = torch._C._increment_version  # what ADInplaceOrView does
_grad_enabled = torch.is_grad_enabled
#: Each op's Python kernel (with its grad check), by name.
_PY_KERNELS: Dict[str, Any] = {}


class _NoAutogradFormula(torch.autograd.Function):
    """Outputs of an op called on inputs that require grad: computed
    without grad, their backward raises."""

    @staticmethod
    def forward(ctx: Any, name: str, kernel: Any, args: Tuple[Any, ...],
                *needs_grad: Tensor) -> Any:
        ctx.name = name
        return kernel(*args)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        raise RuntimeError(f"cascade_mlir::{ctx.name} has no autograd formula (the "
                           "kernels are inference-only): run it under torch.no_grad() "
                           "or torch.inference_mode(), or detach its inputs")


def _requiring_grad(args: Tuple[Any, ...]) -> List[Tensor]:
    return [a for a in args if isinstance(a, Tensor) and a.requires_grad]


def _op(name: str, kernel: Any, fake: Any, mutates: bool = False) -> Any:
    """Defines cascade_mlir::name with `kernel` for every backend and `fake`
    for fake tensors; returns the op (its default overload)."""
    def with_grad_check(*args: Any) -> Any:
        if _grad_enabled():
            grad = _requiring_grad(args)
            if grad and mutates:
                raise RuntimeError(f"cascade_mlir::{name} writes its arguments in place "
                                   "and has no autograd formula: call it under "
                                   "torch.no_grad() or on tensors that do not require grad")
            if grad:
                return _NoAutogradFormula.apply(name, kernel, args, *grad)
        return kernel(*args)

    _PY_KERNELS[name] = with_grad_check
    # pt2_compliant: works with torch.compile (the opcheck tests check it).
    _LIB.define(_SCHEMAS[name], tags=(torch.Tag.pt2_compliant_tag,))
    _LIB.impl(name, with_grad_check, "CompositeExplicitAutograd")
    _LIB.impl(name, torch.library.fallthrough_kernel, "Autograd")
    torch.library.register_fake("cascade_mlir::" + name, fake, lib=_LIB)
    return getattr(torch.ops.cascade_mlir, name).default


# --- wrappers' run ----------------------------------------------------------------

def _wrapper_run(w: Any, q: Tensor, paged_kv_cache: Tensor, v_cache: Optional[Tensor],
                 **kwargs: Any) -> Any:
    """w.run in the wrapper's own signature: run(q, k, v, ...) for the ragged
    wrapper (v_cache required), run(q, kv, ...) for the others."""
    if not isinstance(w, BatchPrefillWithRaggedKVCacheWrapper):
        return w.run(q, _kv(paged_kv_cache, v_cache), **kwargs)
    if v_cache is None:
        raise ValueError("a BatchPrefillWithRaggedKVCacheWrapper runs on contiguous k and "
                         "v: pass k as paged_kv_cache and v as v_cache")
    return w.run(q, paged_kv_cache, v_cache, **kwargs)


def _run(handle: int, q: Tensor, paged_kv_cache: Tensor,
         v_cache: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
    w = wrapper_of(handle)
    # Batch decode / prefill planned on a GPU: the checked one-call run()
    # their run() takes when given no options (as here), without its frame.
    fast = w.__dict__.get("_fast_run") if type(w) in _FAST_RUN else None
    if fast is not None:
        return fast(q, _kv(paged_kv_cache, v_cache), None, None, True)
    return _wrapper_run(w, q, paged_kv_cache, v_cache, return_lse=True)


def _run_fake(handle: int, q: Tensor, paged_kv_cache: Tensor,
              v_cache: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
    w = wrapper_of(handle)
    dtype = _out_dtype(w, q)
    # [rows, num_qo_heads, head_dim_vo]: q's shape unless v has its own head_dim.
    return (q.new_empty((q.shape[0], q.shape[1], w._config.v_dim), dtype=dtype),
            q.new_empty((q.shape[0], q.shape[1]), dtype=torch.float32))


def _run_out(handle: int, q: Tensor, paged_kv_cache: Tensor, v_cache: Optional[Tensor],
             out: Tensor, lse: Optional[Tensor] = None) -> None:
    _wrapper_run(wrapper_of(handle), q, paged_kv_cache, v_cache, out=out, lse=lse)
    _bump_versions((out,) if lse is None else (out, lse))


def _run_out_fake(handle: int, q: Tensor, paged_kv_cache: Tensor,
                  v_cache: Optional[Tensor], out: Tensor,
                  lse: Optional[Tensor] = None) -> None:
    return None


def _shared_prefix_forward(handle: int, q: Tensor, k_shared: Tensor, v_shared: Tensor,
                           unique_kv_cache: Tensor,
                           v_unique: Optional[Tensor] = None) -> Tensor:
    # forward() returns a new q-shaped output sharing nothing with the
    # inputs (an op must not return an input or a view of one).
    return wrapper_of(handle).forward(q, k_shared, v_shared, _kv(unique_kv_cache, v_unique))


def _shared_prefix_forward_fake(handle: int, q: Tensor, k_shared: Tensor,
                                v_shared: Tensor, unique_kv_cache: Tensor,
                                v_unique: Optional[Tensor] = None) -> Tensor:
    wrapper_of(handle)
    return torch.empty_like(q)


run = _op("run", _run, _run_fake)
run_out = _op("run_out", _run_out, _run_out_fake, mutates=True)
shared_prefix_forward = _op("shared_prefix_forward", _shared_prefix_forward,
                            _shared_prefix_forward_fake)


# --- merges ---------------------------------------------------------------------

def _merge_state_in_place(v: Tensor, s: Tensor, v_other: Tensor, s_other: Tensor,
                          mask: Optional[Tensor] = None) -> None:
    _cascade.merge_state_in_place(v, s, v_other, s_other, mask)
    _bump_versions((v, s))


def _merge_state_fake(v_a: Tensor, s_a: Tensor, v_b: Tensor,
                      s_b: Tensor) -> Tuple[Tensor, Tensor]:
    return torch.empty_like(v_a), s_a.new_empty(s_a.shape, dtype=torch.float32)


def _merge_state_in_place_fake(v: Tensor, s: Tensor, v_other: Tensor, s_other: Tensor,
                               mask: Optional[Tensor] = None) -> None:
    return None


def _merge_states_fake(v: Tensor, s: Tensor) -> Tuple[Tensor, Tensor]:
    if v.dim() != 4:
        raise ValueError(f"v must be [seq_len, num_states, num_heads, head_dim], got "
                         f"{list(v.shape)}")
    return (v.new_empty((v.shape[0], v.shape[2], v.shape[3])),
            s.new_empty((s.shape[0], s.shape[2]), dtype=torch.float32))


# cascade.merge_state / merge_states return new (v, s) tuples: the kernels.
merge_state = _op("merge_state", _cascade.merge_state, _merge_state_fake)
merge_state_in_place = _op("merge_state_in_place", _merge_state_in_place,
                           _merge_state_in_place_fake, mutates=True)
merge_states = _op("merge_states", _cascade.merge_states, _merge_states_fake)


_MERGE_OPS = ("merge_state", "merge_state_in_place", "merge_states")


def _register_cpp_kernels(dispatch_key: str = "CUDA") -> str:
    """The torch bridge's C++ kernels of the ops on `dispatch_key` (CUDA; CPU
    in tests): run and run_out over the runner of the handle's planned
    program, the merges over the runtime's one-call merges (_gpu.MERGES),
    called from torch's dispatcher on tensors and outputs the bridge reads
    and allocates in C++, without the Python kernels' frames and argument
    boxing; what they do not take (no runner bound, bad arguments, inputs
    that require grad) goes to the Python kernels above. Returns what was
    done, and why."""
    global _RUN_BRIDGE
    from . import _frameworks, _gpu
    _frameworks.framework_of(torch.empty(0))  # loads the bridge, or says why not
    bridge = _frameworks.TORCH_BRIDGE
    if bridge is None:
        return "not registered: cascade_mlir._torch_bridge is " + \
            _frameworks.TORCH_BRIDGE_STATUS
    bridge.register_merge_kernels(_gpu.MERGES._capsule(),
                                  tuple(_PY_KERNELS[n] for n in _MERGE_OPS), dispatch_key)
    bridge.register_run_kernels((_PY_KERNELS["run"], _PY_KERNELS["run_out"]), dispatch_key)
    if _RUN_BRIDGE is None:
        _RUN_BRIDGE = bridge
        _gpu.ONE_CALL_LISTENERS.append(_one_call_run_changed)
    return f"registered for {dispatch_key} by cascade_mlir._torch_bridge"


#: Whether the ops run C++ kernels on CUDA tensors (run / run_out where the
#: handle's wrapper has a runner, the merges), and why.
CPP_KERNELS = _register_cpp_kernels()


def op_names() -> List[str]:
    """The registered ops (for tests and docs)."""
    return ["cascade_mlir::" + n for n in (
        "run", "run_out", "shared_prefix_forward", "merge_state",
        "merge_state_in_place", "merge_states")]
