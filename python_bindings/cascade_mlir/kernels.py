"""Where the GPU kernels come from: kernel bundles, their keys and the cache.

A kernel bundle (docs/kernel-bundle.md) holds the kernels of one *group* of
one attention configuration: the unsplit and the split-KV kernel of one
kind of level (decode or prefill, causal or not, writing or accumulating)
plus the merge of the split kernel's partial states; or, for the state
merges, merge_state / merge_state_in_place / merge_states of one dtype and
head_dim. Each bundle lives in a directory named by its *key*, a stable,
readable spelling of everything the kernels were specialised on
(``decode.f16-f16.d128.h32x8.p16.nhd.pool``), under a chip directory
(``sm_90``).

Lookup order for a key (first hit wins):

1. the directories of ``$CASCADE_MLIR_KERNEL_PATH`` (``:``-separated);
2. the bundles shipped in the package (``cascade_mlir/bundles``), built
   ahead of time for the default set below;
3. the on-disk cache of bundles compiled on first use
   (``$CASCADE_MLIR_CACHE_DIR``, default ``~/.cache/cascade_mlir``, one
   sub-directory per compiler build).

When none has it and the package was built with the compiler, the bundle is
compiled in-process into the cache; otherwise the error names the
configuration and the command that builds its bundle elsewhere.
"""

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple,
                    Union)

from .config import FP8_DTYPES, AttentionConfig, dtype_code, f32

#: What parse_key returns: (config, group) or ('merge', v_dtype, head_dim).
ParsedKey = Union[Tuple[AttentionConfig, "Group"], Tuple[str, str, int]]

__all__ = [
    "AttentionConfig",
    "KernelConfig",
    "Group",
    "MissingKernelsError",
    "attention_key",
    "merge_key",
    "parse_key",
    "search_roots",
    "find_bundle",
    "ensure_bundle",
    "ensure_bundles",
    "build_with_executable",
    "compiler_executable",
    "build_bundle",
    "cache_dir",
    "DEFAULT_MODELS",
    "kernel_set",
]

#: The configuration kernels are specialised on (one dataclass,
#: cascade_mlir.config); the old name stays.
KernelConfig = AttentionConfig


@dataclass(frozen=True)
class Group:
    """One kind of attention level: decode (one query per request) or
    prefill, causal or not, writing its output or accumulating into it (a
    cascade level after the first), with FlashInfer's custom mask or not
    (prefill only; it replaces the causal mask), and with the state inputs
    its kernels take, by name (docs/semantics.md, "State inputs": one f32
    per query head acting on its softmax state; a cascade gives them to one
    level, its base)."""

    decode: bool
    causal: bool = False
    accumulate: bool = False
    custom_mask: bool = False
    state_inputs: Tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return ("decode" if self.decode else "prefill") + \
            ("-causal" if self.causal else "") + ("-acc" if self.accumulate else "") + \
            ("-mask" if self.custom_mask else "") + \
            "".join("-" + name for name in self.state_inputs)

    def as_dict(self) -> Dict[str, Any]:
        return {"decode": self.decode, "causal": self.causal,
                "accumulate": self.accumulate, "custom_mask": self.custom_mask,
                "state_inputs": list(self.state_inputs)}


#: The state inputs the compiler implements (docs/semantics.md, "State
#: inputs"; CascadeOps.td lists them, common/StateInputs.cpp folds them): a
#: key naming another is refused here, before a compile.
STATE_INPUTS = ("sinks",)


def state_inputs_of(groups: Iterable[Group]) -> Tuple[str, ...]:
    """The state inputs of some levels' groups, each once, in order: what
    the one level that takes them for a cascade (its base) takes."""
    names: List[str] = []
    for g in groups:
        names += [n for n in g.state_inputs if n not in names]
    return tuple(names)


def check_group(cfg: AttentionConfig, group: Group) -> None:
    """ValueError for a group the configuration has no kernels of: decode
    where v has a head_dim of its own (head_dim_vo is prefill's, as
    FlashInfer's decode wrappers take one head_dim)."""
    if group.decode and cfg.split_head_dims:
        raise ValueError(f"head_dim_vo ({cfg.v_dim}) differs from head_dim "
                         f"({cfg.head_dim}): only prefill levels take a head_dim of v "
                         "of its own, not decode (FlashInfer's decode takes one head_dim)")


def attention_key(cfg: AttentionConfig, group: Group) -> str:
    """The bundle key of one group of a configuration:
    `<group>.<cfg.key()>`, e.g. decode.f16-f16.d128.h32x8.p16.nhd.pool."""
    check_group(cfg, group)
    return f"{group.name}.{cfg.key()}"


def merge_key(v_dtype: str, head_dim: int) -> str:
    return f"merge.{v_dtype}.d{head_dim}"


def parse_key(key: str) -> ParsedKey:
    """The inverse of attention_key / merge_key: (AttentionConfig, Group) or
    ('merge', v_dtype, head_dim). ValueError for anything else."""
    parts = key.split(".")
    try:
        if parts[0] == "merge" and len(parts) == 3 and parts[2].startswith("d"):
            return ("merge", dtype_code(parts[1], "key", allow_f32=True), int(parts[2][1:]))
        kind = parts[0].split("-")
        group = Group(decode=kind[0] == "decode", causal="causal" in kind,
                      accumulate="acc" in kind, custom_mask="mask" in kind,
                      state_inputs=tuple(k for k in kind[1:]
                                         if k not in ("causal", "acc", "mask")))
        if kind[0] not in ("decode", "prefill") or group.name != parts[0] or \
                len(set(group.state_inputs)) != len(group.state_inputs) or \
                not all(n in STATE_INPUTS for n in group.state_inputs):
            raise ValueError
        cfg = AttentionConfig.from_key(".".join(parts[1:]))
    except (ValueError, IndexError, TypeError):
        raise ValueError(f"{key!r} is not a kernel bundle key (e.g. "
                         "'decode.f16-f16.d128.h32x8.p16.nhd.pool' or 'merge.f16.d128')")
    check_group(cfg, group)
    return cfg, group


# --- the default set ------------------------------------------------------------

#: (num_qo_heads, num_kv_heads, head_dim) of common open models (full
#: attention heads, no tensor parallelism), page size 16, NHD, 5-D pool.
DEFAULT_MODELS = {
    "llama-3-8b, mistral-7b, qwen2.5-32b-ish (32/8, D128)": (32, 8, 128),
    "llama-2-7b (32/32, D128)": (32, 32, 128),
    "llama-3-70b (64/8, D128)": (64, 8, 128),
    "qwen2.5-7b (28/4, D128)": (28, 4, 128),
    "llama-3.2-1b (32/8, D64)": (32, 8, 64),
}
#: The groups a serving engine uses: plain decode, causal prefill, the
#: shared-prefix level of a cascade, the accumulating suffix levels, and a
#: middle shared level (a prefix nested in another: automatic cascades with
#: three levels, and every CUDA-graph auto cascade, run it).
DEFAULT_GROUPS = (Group(decode=True), Group(decode=False, causal=True),
                  Group(decode=False), Group(decode=True, accumulate=True),
                  Group(decode=False, causal=True, accumulate=True),
                  Group(decode=False, accumulate=True))


def _attention_set(models: Iterable[Tuple[int, int, int]],
                   dtypes: Sequence[str] = ("f16", "bf16"),
                   groups: Sequence[Group] = DEFAULT_GROUPS, page_size: int = 16,
                   layout: str = "nhd", form: str = "pool", **options: Any) -> List[str]:
    keys = []
    for hq, hkv, d in models:
        for dt in dtypes:
            cfg = AttentionConfig(hq, hkv, d, page_size, q_dtype=dt, kv_dtype=dt,
                                  kv_layout=layout, kv_form=form, **options)
            keys += [attention_key(cfg, g) for g in groups]
    return keys


#: The groups of the default set with an fp8 KV cache: what a decode
#: cascade over an fp8 cache runs (plain decode, the shared-prefix level,
#: the accumulating suffix level, and the accumulating shared-prefix level
#: of a cascade whose suffix level is the base: docs/runtime.md); other
#: groups compile on first use.
FP8_GROUPS = (Group(decode=True), Group(decode=False), Group(decode=True, accumulate=True),
              Group(decode=False, accumulate=True))


def _fp8_set(models: Iterable[Tuple[int, int, int]]) -> List[str]:
    """The FP8_GROUPS with an e4m3 or e5m2 cache and f16 or bf16 queries."""
    keys = []
    for hq, hkv, d in models:
        for q in ("f16", "bf16"):
            for kv in ("f8e4m3", "f8e5m2"):
                cfg = AttentionConfig(hq, hkv, d, 16, q_dtype=q, kv_dtype=kv)
                keys += [attention_key(cfg, g) for g in FP8_GROUPS]
    return keys


def _gpu_test_set() -> List[str]:
    """What python_bindings/tests/gpu, examples/python and
    benchmarks/python run (the GPU machine has no compiler)."""
    keys = []
    decode = Group(decode=True)
    keys += _attention_set([(32, 8, 128)], form="pair")
    keys += _attention_set([(32, 8, 128)], layout="hnd")
    keys += _attention_set([(32, 32, 128)], dtypes=("f16",), form="pair")
    keys += _attention_set([(8, 8, 64), (16, 4, 256)], dtypes=("f16",))
    keys += _attention_set([(32, 4, 64)], dtypes=("bf16",), page_size=1,
                           layout="hnd", form="pair")
    option_sets: List[Dict[str, Any]] = [
        dict(logits_soft_cap=30.0, window_left=40), dict(pos_encoding="rope_llama"),
        dict(pos_encoding="alibi"), dict(sm_scale=f32(0.1))]
    for opts in option_sets:
        keys += _attention_set([(32, 8, 128)], dtypes=("f16",),
                               groups=(decode, Group(decode=False, causal=True),
                                       Group(decode=False)),
                               **opts)
    # Shared-prefix wrappers: the contiguous prefix is a pair-form level.
    keys += _attention_set([(64, 8, 128), (64, 16, 128)], dtypes=("f16",),
                           groups=(Group(decode=False),), form="pair")
    keys += _attention_set([(64, 16, 128)], dtypes=("f16",))
    # ... and in the HND layout (prefix as pair pages, suffixes in the pool).
    keys += _attention_set([(64, 8, 128)], dtypes=("f16",), groups=(Group(decode=False),),
                           layout="hnd", form="pair")
    keys += _attention_set([(64, 8, 128)], dtypes=("f16",), layout="hnd")
    # fp8 caches (tests/gpu/test_gpu_fp8.py): the shared-prefix decode
    # wrapper's prefix level (pair form; its suffix level is in the default
    # set).
    keys.append(attention_key(AttentionConfig(64, 8, 128, 16, kv_dtype="f8e4m3",
                                              kv_form="pair"), Group(decode=False)))
    # Contiguous K/V (single-request attention, the ragged wrapper): one
    # token per page of a pair pool; page-size-1 pools (CUDA-graph decode).
    prefill_groups = (Group(decode=False), Group(decode=False, causal=True))
    # fp8 queries over fp8 caches of their type, writing bf16 (prefill on
    # fp8 tensor cores, sm_90a; tests/gpu/test_gpu_fp8.py).
    for f8 in FP8_DTYPES:
        cfg = AttentionConfig(32, 8, 128, 16, q_dtype=f8, kv_dtype=f8)
        keys += [attention_key(cfg, g) for g in prefill_groups]
    keys += _attention_set([(32, 8, 128)], page_size=1, form="pair",
                           groups=(decode,) + prefill_groups)
    keys += _attention_set([(32, 8, 128)], dtypes=("f16",), page_size=1, form="pair",
                           groups=prefill_groups, pos_encoding="rope_llama")
    keys += _attention_set([(32, 8, 128)], dtypes=("f16",), page_size=1, groups=(decode,))
    # Custom masks (tests/gpu/test_gpu_custom_mask.py, the ragged benchmark):
    # prefill over page-1 pairs (ragged, single-request) and page-16 pools.
    masked = (Group(decode=False, custom_mask=True),)
    keys += _attention_set([(32, 8, 128), (32, 8, 64)], page_size=1, form="pair",
                           groups=masked)
    keys += _attention_set([(32, 8, 128), (32, 8, 64)], groups=masked)
    # The ragged wrapper: the same page-1 pairs without a page table.
    keys += _attention_set([(32, 8, 128)], page_size=1, form="ragged",
                           groups=prefill_groups + masked)
    keys += _attention_set([(32, 8, 64)], page_size=1, form="ragged", groups=masked)
    keys += _attention_set([(32, 8, 128)], dtypes=("f16",), page_size=1, form="ragged",
                           groups=prefill_groups, pos_encoding="rope_llama")
    # Views (tests/gpu/test_gpu_strides.py): q / out views at every head_dim
    # in the pool and pair forms (run() binds the form it is given), the
    # ragged wrapper's page-1 pool, and caches that are one layer of a
    # larger allocation (bf16, both layouts).
    for form in ("pool", "pair"):
        keys += _attention_set([(32, 8, 64), (32, 8, 128), (32, 8, 256)], form=form,
                               groups=(decode,) + prefill_groups)
        keys += _attention_set([(32, 8, 128)], dtypes=("bf16",), layout="hnd", form=form,
                               groups=(decode, Group(decode=False, causal=True)))
    keys += _attention_set([(32, 8, 128)], page_size=1, groups=prefill_groups)
    # The engine loop (tests/gpu/test_gpu_engine_loop.py) at 28/4 heads:
    # decode and prefill over page-16 pools and pairs, the ragged wrapper's
    # page-1 levels.
    for form in ("pool", "pair"):
        keys += _attention_set([(28, 4, 128)], form=form, groups=(decode,) + prefill_groups)
    for form in ("pool", "pair", "ragged"):
        keys += _attention_set([(28, 4, 128)], page_size=1, form=form, groups=prefill_groups)
    # Attention sinks (tests/gpu/test_gpu_sinks.py): decode and prefill
    # levels that add them.
    sinks = ("sinks",)
    sink_groups = (Group(decode=True, state_inputs=sinks),
                   Group(decode=False, state_inputs=sinks),
                   Group(decode=False, causal=True, state_inputs=sinks))
    keys += _attention_set([(32, 8, 128)], dtypes=("f16",), groups=sink_groups)
    keys += _attention_set([(32, 4, 64)], dtypes=("bf16",), groups=sink_groups + (decode,))
    # head_dim_vo (tests/gpu/test_gpu_head_dim_vo.py): prefill over (k, v)
    # pairs (the paged wrapper, single-request prefill) and ragged K/V
    # whose v has a head_dim of its own.
    for layout in ("nhd", "hnd"):
        for page in (16, 1):
            keys += _attention_set([(16, 4, 192)], page_size=page, layout=layout,
                                   form="pair", groups=prefill_groups, head_dim_vo=128)
    for hq, hkv, d, dv in ((16, 4, 192, 128), (16, 4, 128, 64), (16, 4, 96, 64),
                           (16, 16, 192, 128)):
        keys += _attention_set([(hq, hkv, d)], page_size=1, form="ragged",
                               groups=prefill_groups, head_dim_vo=dv)
    for d, dv in ((128, 64), (96, 64)):
        keys += _attention_set([(16, 4, d)], dtypes=("f16",), page_size=1, form="pair",
                               groups=prefill_groups, head_dim_vo=dv)
    return keys


def _merge_set(dtypes: Sequence[str] = ("f16", "bf16", "f32"),
               dims: Sequence[int] = (64, 128, 256)) -> List[str]:
    return [merge_key(dt, d) for dt in dtypes for d in dims]


def kernel_set(name: str) -> List[str]:
    """Bundle keys of a named set: 'default' (shipped in the package),
    'minimal' (one model, quick to build), 'gpu-tests' (everything the GPU
    tests, the example and the benchmarks use)."""
    if name == "default":
        return _attention_set(DEFAULT_MODELS.values()) + _fp8_set(DEFAULT_MODELS.values()) + \
            _merge_set()
    if name == "minimal":
        return _attention_set([(32, 8, 128)], dtypes=("f16",)) + \
            _merge_set(("f16",), (128,))
    if name == "gpu-tests":
        return list(dict.fromkeys(kernel_set("default") + _gpu_test_set()))
    raise ValueError(f"unknown kernel set {name!r}: default, minimal or gpu-tests")


def builds_on(key: str, chip: str) -> bool:
    """Whether `chip` has kernels for `key`: fp8 queries run on the wgmma
    family's fp8 tensor cores, sm_90a's only; everything else on every
    chip."""
    parts = key.split(".")
    q = parts[1].split("-")[0] if len(parts) > 1 and "-" in parts[1] else ""
    return q not in FP8_DTYPES or chip == "sm_90a"


# --- finding and building bundles ----------------------------------------------

class MissingKernelsError(ValueError):
    """No bundle for a configuration, and no compiler to build it here."""


def _package_kernels() -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bundles")


def _compiler() -> Any:
    """The in-process compiler module (a build against the system's LLVM),
    None where the package has none."""
    try:
        from . import _compiler
        return _compiler
    except ImportError:
        return None


def compiler_executable() -> Optional[str]:
    """The self-contained compiler (`cascade-compile`, linked statically: it
    needs only the C library, and serves every Python): CASCADE_MLIR_COMPILER,
    else the one the package carries (cascade_mlir/bin); None without."""
    env = os.environ.get("CASCADE_MLIR_COMPILER")
    cands = [env] if env else [os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                            "bin", "cascade-compile")]
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def compiler_id() -> str:
    """Identifies the compiler build (version + the module or executable
    file), so that a rebuilt compiler does not reuse kernels of another."""
    from . import __version__
    comp = _compiler()
    path = comp.__file__ if comp is not None else compiler_executable()
    if path is None:
        return f"{__version__}-runtime"
    st = os.stat(path)
    h = hashlib.sha1(f"{__version__}:{st.st_size}:{st.st_mtime_ns}".encode())
    return f"{__version__}-{h.hexdigest()[:12]}"


def cache_dir() -> str:
    root = os.environ.get("CASCADE_MLIR_CACHE_DIR")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
            os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "cascade_mlir")
    return os.path.join(root, compiler_id())


def search_roots() -> List[str]:
    roots = [p for p in os.environ.get("CASCADE_MLIR_KERNEL_PATH", "").split(os.pathsep) if p]
    return roots + [_package_kernels(), cache_dir()]


def _chips_for(chip: str) -> List[str]:
    """The chip's own bundles first, then the PTX of chips it runs (the
    driver compiles PTX for newer GPUs): sm_90a (the Hopper kernels, which
    run on compute capability 9.0 only) falls back to sm_90, then to older
    chips."""
    try:
        cc = int(chip.split("_")[1].rstrip("a"))
    except (IndexError, ValueError):
        return [chip]
    older = [c for c in (90, 89, 86, 80) if c < cc or (c == cc and chip.endswith("a"))]
    return [chip] + [f"sm_{c}" for c in older]


def find_bundle(key: str, chip: str = "sm_90", own_chip_only: bool = False) -> Optional[str]:
    """The directory of bundle `key` for `chip` under the search roots: the
    chip's own bundles in every root first, then its fallback chips' (none
    with `own_chip_only`)."""
    chips = [chip] if own_chip_only else _chips_for(chip)
    for c in chips:
        for root in search_roots():
            d = os.path.join(root, c, key)
            if os.path.isfile(os.path.join(d, "manifest.json")):
                return d
    return None


def _features(chip: str) -> str:
    try:
        cc = int(chip.split("_")[1].rstrip("a"))
    except (IndexError, ValueError):
        cc = 90
    return "+ptx86" if cc >= 100 else "+ptx80"


def _ptxas() -> Optional[str]:
    for cand in (os.environ.get("CASCADE_PTXAS"),
                 os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "ptxas"),
                 shutil.which("ptxas")):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


def _ptx_files(bundle: str) -> List[str]:
    """The bundle's PTX files: kernels.ptx, or one <kernel>.ptx per kernel
    (cascade-compile's layout, docs/kernel-bundle.md)."""
    return sorted(os.path.join(bundle, f) for f in os.listdir(bundle) if f.endswith(".ptx"))


def _assemble(ptxas: str, ptx: str, chip: str) -> None:
    """<stem>.<chip>.cubin beside `ptx` (what the runtime loads instead of
    having the driver JIT the PTX). Written under a temporary name and
    renamed: the bundle may already be visible to other processes, which
    must see no cubin or a whole one."""
    cubin = f"{ptx[:-len('.ptx')]}.{chip}.cubin"
    tmp = f"{cubin}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        subprocess.run([ptxas, f"-arch={chip}", ptx, "-o", tmp], check=True,
                       capture_output=True)
        os.replace(tmp, cubin)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _cubins(ptxas: Optional[str], bundles: Sequence[str], chip: str) -> None:
    """A cubin beside every PTX file of `bundles`, one ptxas process per
    file, all at once (the kernels of a plan's groups)."""
    if not ptxas:
        return
    exe: str = ptxas
    files = [f for b in bundles for f in _ptx_files(b)]
    if len(files) == 1:
        _assemble(exe, files[0], chip)
        return
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max(1, min(len(files), os.cpu_count() or 1))) as pool:
        list(pool.map(lambda f: _assemble(exe, f, chip), files))


def _cubin(ptxas: Optional[str], bundle: str, chip: str) -> None:
    """A cubin beside each of the bundle's PTX files (the driver then need
    not JIT them)."""
    _cubins(ptxas, [bundle], chip)


@contextlib.contextmanager
def _key_lock(dest: str) -> Iterator[None]:
    """An exclusive lock on .KEY.lock beside DEST (the one cascade-compile
    takes; hidden, as the temporary build directories are, from whatever
    lists a root's bundles): processes and threads building the same bundle
    build it once."""
    head, key = os.path.split(dest)
    fd = os.open(os.path.join(head, f".{key}.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def build_bundle(key: str, out_root: str, chip: str = "sm_90",
                 cubin: bool = True) -> str:
    """Compiles bundle `key` into OUT_ROOT/CHIP/KEY: with the in-process
    compiler where the package has it, else with the self-contained
    executable (and, with ptxas available, a cubin next to the PTX so the
    driver need not JIT it). Under an exclusive lock on the key and written
    to a temporary directory first and renamed, so concurrent builders (threads
    or processes) build it once and never see half a bundle."""
    parsed = parse_key(key)
    dest = os.path.join(out_root, chip, key)
    comp = _compiler()
    if comp is None:
        if compiler_executable() is None:
            raise MissingKernelsError(
                f"cannot build kernel bundle {key}: this cascade_mlir has no compiler "
                "(runtime only)")
        build_with_executable([key], out_root, chip, cubin=cubin)
        return dest
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with _key_lock(dest):
        if os.path.isfile(os.path.join(dest, "manifest.json")):
            return dest
        tmp = tempfile.mkdtemp(prefix=".build-", dir=os.path.dirname(dest))
        os.chmod(tmp, 0o755)
        try:
            if isinstance(parsed[0], str):
                comp.compile_merge_bundle(parsed[1], parsed[2], tmp, chip, _features(chip))
            else:
                cfg, group = parsed
                comp.compile_attention_bundle(cfg.as_dict(), [group.as_dict()], tmp, chip,
                                              _features(chip))
            _cubin(_ptxas() if cubin else None, tmp, chip)
            if os.path.isdir(dest):  # a stale partial copy
                shutil.rmtree(dest, ignore_errors=True)
            os.rename(tmp, dest)
        finally:
            if os.path.isdir(tmp):
                shutil.rmtree(tmp, ignore_errors=True)
    return dest


def build_with_executable(keys: Sequence[str], out_root: str, chip: str = "sm_90",
                          jobs: int = 0, cubin: bool = True) -> List[Tuple[str, float]]:
    """Compiles `keys` into OUT_ROOT/CHIP/ with cascade-compile, in
    parallel (one process, `jobs` threads; 0: one per core); returns (key,
    seconds) of those it built. MissingKernelsError with the compiler's
    diagnostics if any fails."""
    exe = compiler_executable()
    if exe is None:
        raise MissingKernelsError("no cascade-compile executable here")
    keys = list(dict.fromkeys(keys))
    for k in keys:
        parse_key(k)  # names a bad key before any compiling
    r = subprocess.run([exe, "--out", out_root, "--chip", chip, f"-j={jobs}", *keys],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise MissingKernelsError(f"cascade-compile failed for {chip} {' '.join(keys)}:\n"
                                  f"{r.stderr.strip()}")
    built = []
    for line in r.stdout.splitlines():
        status, _, key, secs = line.split()
        if status == "built":
            built.append((key, float(secs)))
    ptxas = _ptxas() if cubin else None
    if ptxas and built:
        # One ptxas process per PTX file (cascade-compile writes one per
        # kernel), all of the plan's groups at once.
        _cubins(ptxas, [os.path.join(out_root, chip, k) for k, _ in built], chip)
    return built


def describe_key(key: str) -> str:
    parsed = parse_key(key)
    if isinstance(parsed[0], str):
        return f"state merges of {parsed[1]} states with head_dim={parsed[2]}"
    cfg, group = parsed
    return f"{group.name} attention, {cfg.describe()}"


def can_compile() -> bool:
    """Whether a missing bundle would be compiled on demand here."""
    return (_compiler() is not None or compiler_executable() is not None) and \
        os.environ.get("CASCADE_MLIR_NO_JIT") != "1"


def ensure_bundles(keys: Iterable[str], chip: str = "sm_90") -> None:
    """Compiles, at once and in parallel where the self-contained compiler
    serves, every bundle of `keys` that is missing (a plan's kernel groups);
    ensure_bundle then finds them."""
    if not can_compile():
        return
    missing = [k for k in dict.fromkeys(keys) if not find_bundle(k, chip, own_chip_only=True)]
    if len(missing) > 1 and _compiler() is None:
        build_with_executable(missing, cache_dir(), chip)


def ensure_bundle(key: str, chip: str = "sm_90") -> str:
    """The directory of bundle `key`: found, or compiled into the cache.
    Where the compiler is here, a bundle of the chip itself is preferred to
    a fallback chip's (an sm_90 bundle on an sm_90a device lacks the Hopper
    kernels): the fallback serves only where nothing can be compiled."""
    can_build = can_compile()
    found = find_bundle(key, chip, own_chip_only=can_build)
    if found:
        return found
    if can_build:
        return build_bundle(key, cache_dir(), chip)
    why = ("this cascade_mlir has no compiler (neither its compiler module nor "
           "the cascade-compile executable)" if not (_compiler() or compiler_executable())
           else "CASCADE_MLIR_NO_JIT=1")
    raise MissingKernelsError(
        f"no GPU kernels for {describe_key(key)} (bundle key {key}, {chip}).\n"
        f"Searched: {', '.join(search_roots())}.\n"
        f"They cannot be compiled here: {why}.\n"
        "Build the bundle on a machine where cascade_mlir has its compiler:\n"
        f"    python -m cascade_mlir.aot --key {key} --chip {chip} --out DIR\n"
        "then copy DIR here and set CASCADE_MLIR_KERNEL_PATH=DIR (or rebuild "
        "the package with -DCASCADE_PYTHON_PREBUILT_KERNELS=DIR).")


def build_keys(keys: Iterable[str], out_root: str, chip: str = "sm_90",
               jobs: int = 1,
               progress: Optional[Callable[[int, int, Tuple[str, float]], None]] = None
               ) -> List[Tuple[str, float]]:
    """Builds every key missing under OUT_ROOT; returns (key, seconds)."""
    todo = [(k, out_root, chip) for k in dict.fromkeys(keys)
            if not os.path.isfile(os.path.join(out_root, chip, k, "manifest.json"))]
    done: List[Tuple[str, float]] = []
    if todo and _compiler() is None and compiler_executable() is not None:
        # One cascade-compile process compiles them all, on `jobs` threads.
        done = build_with_executable([k for k, _, _ in todo], out_root, chip, jobs)
        for i, r in enumerate(done):
            if progress:
                progress(i + 1, len(done), r)
        return done
    if jobs > 1 and len(todo) > 1:
        from concurrent.futures import ProcessPoolExecutor
        pool = ProcessPoolExecutor(jobs)
        results = pool.map(_build_one, todo)
    else:
        pool, results = None, map(_build_one, todo)
    try:
        for r in results:
            done.append(r)
            if progress:
                progress(len(done), len(todo), r)
    finally:
        if pool:
            pool.shutdown()
    return done


def _build_one(args: Tuple[str, str, str]) -> Tuple[str, float]:
    import time
    key, root, chip = args
    t = time.time()
    build_bundle(key, root, chip)
    return key, time.time() - t
