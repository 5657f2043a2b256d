"""GPU execution shared by the wrappers: devices, kernel loading and the
plan/run engine over the runtime's Program (python_bindings/src/ProgramHandle.cpp).

plan() runs on the host: index arrays are copied to the host (if they were
on the GPU), the runtime plans every level, and the plan plus the index
arrays go to the int workspace through page-locked staging on the caller's
current stream. run() does no host work beyond checking its arguments and
launching the kernels bound at plan time.
"""

import dataclasses
import json
import os
import weakref
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import _runtime, kernels
from ._frameworks import framework_of, host_int32
from .config import AttentionConfig
from .kernels import Group, state_inputs_of

_devices: Dict[int, Any] = {}
_groups: Dict[Tuple[int, str], Dict[str, str]] = {}

#: Bytes of the int workspace (plan arrays and index arrays), as FlashInfer.
INT_WORKSPACE_BYTES = 8 << 20


class NotPlannedError(ValueError, RuntimeError):
    """run() / forward() before plan() / begin_forward()."""


def device(ordinal: int) -> Any:
    dev = _devices.get(ordinal)
    if dev is None:
        dev = _devices[ordinal] = _runtime.Device(ordinal)
    return dev


def load_bundle(dev: Any, key: str) -> Dict[str, str]:
    """Loads bundle `key` into `dev` (finding or compiling it first) and
    returns its kernels by role: unsplit / split / merge for attention
    groups, the op names for merge bundles."""
    cached = _groups.get((dev.ordinal, key))
    if cached is not None:
        return cached
    path = kernels.ensure_bundle(key, dev.chip)
    dev.add_bundle(path, key)
    with open(os.path.join(path, "manifest.json")) as f:
        manifest = json.load(f)
    roles: Dict[str, str] = {}
    for k in manifest["kernels"]:
        op = k["op"]
        if op in ("decode", "prefill"):
            roles["unsplit"] = k["name"]
        elif op in ("decode_split", "prefill_split"):
            roles["split"] = k["name"]
        elif op == "merge_states_indptr":
            roles["merge"] = k["name"]
        elif op == "merge_state_in_place":
            mask = k["static"].get("mask", "none")
            roles["merge_state_in_place" + ("" if mask == "none" else "_mask")] = k["name"]
        else:
            roles[op] = k["name"]
    _groups[(dev.ordinal, key)] = roles
    return roles


def merge_kernels(ordinal: int, dtype: str, head_dim: int) -> Tuple[Any, Dict[str, str]]:
    """The device and merge kernels (by role) of a value dtype and head_dim:
    the resolver of the merges' one-call path (MERGES)."""
    from .config import dtype_code
    dev = device(ordinal)
    return dev, load_bundle(dev, kernels.merge_key(dtype_code(dtype, allow_f32=True),
                                                   head_dim))


#: merge_state / merge_state_in_place / merge_states on torch CUDA tensors in
#: one C++ call (checks, allocation, launch); each returns None when it does
#: not take the call, and _merge.py's checked path runs instead.
MERGES = _runtime.MergeOps(merge_kernels)


#: Told (wrapper, program) when a wrapper's run() becomes its planned
#: program's run in one call (plan() on a GPU), and (wrapper, None) when it
#: stops being that (reset_workspace_buffer()): cascade_mlir.torch_ops keeps
#: the torch bridge's C++ kernels of cascade_mlir::run bound to the program.
ONE_CALL_LISTENERS: List[Callable[[Any, Any], None]] = []


def one_call_run(wrapper: Any, program: Any) -> None:
    """Tells ONE_CALL_LISTENERS that `wrapper`'s run() is now `program.run`
    (None: no longer a program's run)."""
    for listener in ONE_CALL_LISTENERS:
        listener(wrapper, program)


def current_stream(x: Any) -> int:
    fw = framework_of(x)
    return fw.current_stream(fw.cuda_ordinal(x)) if fw is not None else 0


def workspace_device(buf: Any) -> Optional[int]:
    """The CUDA ordinal of a workspace buffer, None for a host buffer."""
    if buf is None:
        return None
    fw = framework_of(buf)
    if fw is None:
        if isinstance(buf, np.ndarray):
            return None
        raise TypeError("float_workspace_buffer must be a torch tensor or cupy "
                        f"array, got {type(buf).__name__}")
    return fw.cuda_ordinal(buf)


class Level:
    """One level of a plan: host index arrays, its kernel group and the plan
    options of its split-KV schedule (fixed_split_pages: a fixed chunk in
    pages, 0 = automatic; disable_split_kv: never split), which are not
    part of the kernels' configuration."""

    def __init__(self, qo_indptr: np.ndarray, kv_indptr: np.ndarray,
                 kv_indices: np.ndarray, kv_last_page_len: np.ndarray,
                 group: Group, kv_slot: int = 0, fixed_split_pages: int = 0,
                 disable_split_kv: bool = False,
                 custom_mask: Optional[Tuple[np.ndarray, np.ndarray]] = None):
        if (custom_mask is not None) != group.custom_mask:
            raise ValueError("a level has a custom mask exactly when its group says so")
        self.custom_mask = custom_mask
        self.qo_indptr, self.kv_indptr = qo_indptr, kv_indptr
        self.kv_indices, self.kv_last_page_len = kv_indices, kv_last_page_len
        self.group, self.kv_slot = group, kv_slot
        self.fixed_split_pages = fixed_split_pages
        self.disable_split_kv = disable_split_kv

    def as_dict(self) -> Dict[str, Any]:
        d = {"mode": "decode" if self.group.decode else "prefill",
             "kv_slot": self.kv_slot,
             "qo_indptr": None if self.group.decode else self.qo_indptr,
             "kv_indptr": self.kv_indptr, "kv_indices": self.kv_indices,
             "kv_last_page_len": self.kv_last_page_len,
             "fixed_split_pages": self.fixed_split_pages,
             "disable_split_kv": self.disable_split_kv}
        if self.custom_mask is not None:  # (packed bytes, byte offsets)
            d["custom_mask"], d["mask_indptr"] = self.custom_mask
        return d


def host_kv_indices(kv_indices: Any, kv_indptr: np.ndarray, name: str) -> np.ndarray:
    """The host copy of the page indices that `kv_indptr` (host) uses: the
    first kv_indptr[-1] entries. A serving engine passes its buffer of the
    largest size whole (FlashInfer reads only that prefix), so a device
    buffer's tail is not copied to the host. A shorter array stays whole, for
    check_csr to report."""
    used = int(kv_indptr[-1]) if kv_indptr.size else -1
    if used >= 0 and hasattr(kv_indices, "__getitem__") and \
            not isinstance(kv_indices, (str, bytes)):
        size: Optional[int]
        try:
            size = len(kv_indices)
        except TypeError:  # a tensor type without len(), or a 0-d array
            shape = getattr(kv_indices, "shape", None)
            size = int(shape[0]) if shape else None
        if size is not None and size > used:
            kv_indices = kv_indices[:used]
    return host_int32(kv_indices, name)


def check_csr(qo: Optional[np.ndarray], kv_indptr: np.ndarray, kv_indices: np.ndarray,
              last: np.ndarray, what: str, decode: bool) -> None:
    """Shape checks with argument names (the runtime's plan checks values)."""
    b = kv_indptr.size - 1
    if b < 0:
        raise ValueError(f"{what}: kv_indptr must have batch_size + 1 >= 1 entries")
    if last.size != b:
        raise ValueError(f"{what}: kv_last_page_len has {last.size} entries, "
                         f"expected batch_size = {b}")
    if qo is not None and qo.size != b + 1:
        raise ValueError(f"{what}: qo_indptr has {qo.size} entries, kv_indptr "
                         f"{kv_indptr.size}: they must agree (batch_size + 1)")
    # A longer kv_indices is a preallocated buffer (as FlashInfer takes it):
    # only its first kv_indptr[-1] entries are read.
    if kv_indptr.size and kv_indices.size < kv_indptr[-1]:
        raise ValueError(f"{what}: kv_indices has {kv_indices.size} entries but "
                         f"kv_indptr[-1] = {kv_indptr[-1]} (it needs at least "
                         "kv_indptr[-1] entries; entries beyond are ignored)")
    if decode and qo is not None and not np.array_equal(qo, np.arange(b + 1)):
        raise ValueError(f"{what}: a decode level has one query per request "
                         "(qo_indptr must be arange(batch_size + 1))")


class Engine:
    """plan/run over one CUDA device for one wrapper."""

    def __init__(self, float_workspace_buffer: Any, use_cuda_graph: bool = False):
        fw = framework_of(float_workspace_buffer)
        ordinal = workspace_device(float_workspace_buffer)
        if fw is None or ordinal is None:
            raise ValueError("float_workspace_buffer must be a CUDA tensor for GPU "
                             "execution")
        self.fw = fw
        self.ordinal = ordinal
        self.dev = device(ordinal)
        self.float_ws = float_workspace_buffer
        self.int_ws: Any = None
        self.use_cuda_graph = bool(use_cuda_graph)
        self.program: Any = None
        self.cfg: Optional[AttentionConfig] = None
        self.levels: List[Level] = []
        #: The kernels' form for a (k, v) pair given to run() at slot 0:
        #: "pair" (looked up in the plan's page table), or "ragged" (the
        #: ragged wrapper's contiguous K/V, whose page table is the identity:
        #: the kernels compute the address instead of loading a page id).
        self.pair_form = "pair"

    def reset_workspace_buffer(self, float_workspace_buffer: Any,
                               int_workspace_buffer: Any = None) -> None:
        if self.use_cuda_graph and self.program is not None:
            raise ValueError("CUDA-graph mode: the workspace buffers are part of the "
                             "captured launches and cannot be replaced")
        if workspace_device(float_workspace_buffer) != self.ordinal:
            raise ValueError("float_workspace_buffer must stay on cuda:"
                             f"{self.ordinal}")
        self.float_ws = float_workspace_buffer
        if int_workspace_buffer is not None:
            self.int_ws = int_workspace_buffer
        self.program = None  # replan

    def _keys(self, form_slot0: str, groups: Optional[List[Group]] = None) -> List[str]:
        assert self.cfg is not None
        if form_slot0 == "pair":
            form_slot0 = self.pair_form
        keys = []
        for lvl, lv in enumerate(self.levels):
            form = "pair" if lv.kv_slot == 1 else form_slot0
            group = lv.group if groups is None else groups[lvl]
            keys.append(kernels.attention_key(self.cfg.with_form(form), group))
        return keys

    def _plan_form(self) -> str:
        """The KV form whose kernels the plan is computed with: the pool,
        unless only pair bundles exist and nothing can be compiled (ragged
        K/V: the ragged kernels, the only ones it runs; a head_dim of v of
        its own, head_dim_vo: the pair's, since no pool holds it)."""
        assert self.cfg is not None
        pairs_only = self.pair_form == "ragged" or self.cfg.split_head_dims
        for form in ("pair",) if pairs_only else ("pool", "pair"):
            if all(kernels.find_bundle(k, self.dev.chip) for k in self._keys(form)):
                return form
        return "pair" if self.cfg.split_head_dims else "pool"

    def plan(self, cfg: AttentionConfig, levels: List[Level],
             index_buffers: Optional[List[Dict[str, Any]]] = None) -> None:
        self.cfg, self.levels = cfg, levels
        form = self._plan_form()
        kernels.ensure_bundles(self._keys(form), self.dev.chip)  # in parallel
        roles = [load_bundle(self.dev, k) for k in self._keys(form)]
        if self.program is None:
            self.program = _runtime.Program(self.dev)
        # The program keeps the resolver: a weak one, so that it does not
        # keep this engine (and the workspaces) alive through the C++ side,
        # which the garbage collector cannot see.
        self.program.set_signature(
            cfg.as_dict(), shared_slot=any(lv.kv_slot == 1 for lv in levels),
            resolver=_weak_resolver(self), framework=self.fw)
        dicts = [lv.as_dict() for lv in levels]
        if self.pair_form == "ragged":
            # The ragged kernels compute a key's address from kv_indptr: the
            # identity page table (one int32 a token) is not uploaded.
            for d, lv in zip(dicts, levels):
                if lv.kv_slot == 0:
                    d["kv_indices"] = None
        need_int, need_float = self.program.plan(
            dicts, [r["split"] for r in roles], self.use_cuda_graph, index_buffers,
            last_level_first=self._can_put_last_level_first(form))
        self._set_base_level(self.program.base_level)
        float_bytes = self.fw.nbytes(self.float_ws)
        if need_float > float_bytes:
            raise ValueError(f"float_workspace_buffer holds {float_bytes} bytes; this "
                             f"plan needs {need_float} (FlashInfer recommends 128 MB)")
        if self.int_ws is None or need_int > self.fw.nbytes(self.int_ws):
            if self.int_ws is not None and self.use_cuda_graph:
                raise ValueError("CUDA-graph mode: the plan needs a larger int "
                                 "workspace than the first plan")
            self.int_ws = self.fw.empty_bytes(max(INT_WORKSPACE_BYTES, need_int),
                                              self.ordinal)
        self.program.upload(self.int_ws, self.float_ws,
                            self.fw.current_stream(self.ordinal))
        self._prepare(1 if form == "pair" else 0)

    def _rebased(self, base: int) -> List[Group]:
        """The levels' groups when level `base` writes the output: every
        other level accumulates into it, and the state inputs (of whichever
        level has them) join the base level's softmax, once."""
        inputs = state_inputs_of(lv.group for lv in self.levels)
        return [dataclasses.replace(lv.group, accumulate=lvl != base,
                                    state_inputs=inputs if lvl == base else ())
                for lvl, lv in enumerate(self.levels)]

    def _can_put_last_level_first(self, form: str) -> bool:
        """Whether the plan may make the last level the base (the Program
        does when an earlier level splits KV: that level's split attention
        then runs beside the last level; docs/runtime.md): a cascade
        outside CUDA-graph mode whose kernels for that order are here or can
        be compiled, for this device's own chip (not a fallback chip's)."""
        n = len(self.levels)
        if n < 2 or self.use_cuda_graph:
            return False
        if kernels.can_compile():
            return True
        return all(kernels.find_bundle(k, self.dev.chip, own_chip_only=True)
                   for k in self._keys(form, self._rebased(n - 1)))

    def _set_base_level(self, base: int) -> None:
        """The kernel groups of the plan's base level (groups as built by the
        wrappers are base 0's)."""
        for lv, g in zip(self.levels, self._rebased(base)):
            if len(self.levels) > 1:
                lv.group = g

    def _prepare(self, variant: int) -> None:
        """Binds the kernels of one KV form (variant 0: a 5-D pool, 1: a
        (k, v) pair); run() calls it the first time it sees the form (and
        refuses a pool before that where v has a head_dim of its own)."""
        form = "pair" if variant == 1 else "pool"
        spec = []
        for lv, key in zip(self.levels, self._keys(form)):
            r = load_bundle(self.dev, key)
            spec.append((r["unsplit"], r.get("merge", ""), r["split"], r.get("merge", ""),
                         form == "pair" or lv.kv_slot == 1, lv.kv_slot))
        self.program.prepare(variant, spec, "")

    def run(self, q: Any, paged_kv_cache: Any, out: Any = None, lse: Any = None,
            return_lse: bool = False, kv_shared: Any = None, k_scale: float = 1.0,
            v_scale: float = 1.0, state_inputs: Optional[Dict[str, Any]] = None) -> Any:
        if self.program is None:
            raise NotPlannedError("run() before plan(): call plan() first")
        return self.program.run(q, paged_kv_cache, out, lse, return_lse, kv_shared,
                                k_scale, v_scale, state_inputs)


def _weak_resolver(engine: Engine) -> Callable[[int], None]:
    """engine._prepare, holding the engine only weakly."""
    ref = weakref.ref(engine)

    def resolve(variant: int) -> None:
        e = ref()
        if e is None:
            raise ValueError("run() after the wrapper that planned it was deleted")
        e._prepare(variant)

    return resolve


def levels_from_arrays(qo_arr: Sequence[Any], kv_indptr_arr: Sequence[Any],
                       kv_indices_arr: Sequence[Any], last_arr: Sequence[Any],
                       num_levels: int, causal: bool,
                       names: Tuple[str, str, str, str] = (
                           "qo_indptr_arr", "paged_kv_indptr_arr",
                           "paged_kv_indices_arr", "paged_kv_last_page_len")
                       ) -> List[Level]:
    """Host copies and groups of the levels of a multi-level cascade."""
    for name, arr in zip(names, (qo_arr, kv_indptr_arr, kv_indices_arr, last_arr)):
        if isinstance(arr, (str, bytes)) or not hasattr(arr, "__len__"):
            raise TypeError(f"{name} must be a list with one array per level")
        if len(arr) != num_levels:
            raise ValueError(f"{name} has {len(arr)} entries, expected one per level "
                             f"({num_levels})")
    levels: List[Level] = []
    rows: Optional[int] = None
    for lvl in range(num_levels):
        qo = host_int32(qo_arr[lvl], f"{names[0]}[{lvl}]")
        kp = host_int32(kv_indptr_arr[lvl], f"{names[1]}[{lvl}]")
        ki = host_kv_indices(kv_indices_arr[lvl], kp, f"{names[2]}[{lvl}]")
        kl = host_int32(last_arr[lvl], f"{names[3]}[{lvl}]")
        if qo.size < 2:
            raise ValueError(f"level {lvl}: qo_indptr must have batch_size + 1 >= 2 entries")
        check_csr(qo, kp, ki, kl, f"level {lvl}", decode=False)
        if rows is None:
            rows = int(qo[-1])
        elif int(qo[-1]) != rows:
            raise ValueError(f"level {lvl} covers {int(qo[-1])} query rows but level 0 "
                             f"covers {rows}: every level must cover the same rows")
        decode = np.array_equal(qo, np.arange(qo.size))
        group = Group(decode=decode, causal=bool(causal) and not decode and
                      lvl == num_levels - 1, accumulate=lvl > 0)
        levels.append(Level(qo, kp, ki, kl, group))
    return levels
