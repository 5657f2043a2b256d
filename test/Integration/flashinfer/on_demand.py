#!/usr/bin/env python3
"""The conformance run's on-demand mode (`KERNELS=on-demand
tools/cascade-dev gpu flashinfer`): no prebuilt kernel anywhere, every
bundle compiled on demand by the package's own path (the wheel's
cascade-compile, into the on-disk cache).

    python3 on_demand.py check [TESTS_DIR] [--json OUT]
    python3 on_demand.py warm (TESTS_DIR | --set NAME) [--chip CHIP] [--first-use N]
                              [--json OUT]
    python3 on_demand.py count [--warm WARM_JSON] [--json OUT]

check   fails (exit 1, naming what) unless: cascade_mlir has no in-process
        compiler module (which links the system's LLVM) and compiles with its
        own cascade-compile (the package's bin/, CASCADE_MLIR_COMPILER unset),
        that executable needs no LLVM / MLIR / z3 / libedit library,
        CASCADE_MLIR_KERNEL_PATH and CASCADE_MLIR_NO_JIT are unset, the
        package holds no bundle (its default set removed), the kernel cache
        (CASCADE_MLIR_CACHE_DIR) holds none, and find_bundle finds none of the
        keys the test files in TESTS_DIR need (keys.py), for sm_90a and its
        fallback chips.
warm    compiles the test files' bundles (or those of the package's kernel
        set NAME: gpu-tests for its GPU tests) for CHIP (default: the
        device's, sm_90a on an H100 / H200) with kernels.ensure_bundles, the
        path a plan() takes for its kernel groups (one cascade-compile
        process on every core, then ptxas on every core): what the tests
        would compile on first use, at once. With --first-use N, first N of them one at a
        time as a new configuration's first call pays it: ensure_bundle +
        the module load (compile + cubin + load; compile + cubin without a
        GPU), the distribution printed.
count   the bundles in the kernel cache per chip: all of them were compiled
        on demand in this run (check saw an empty cache); with --warm, those
        the tests compiled themselves (warm did not foresee them).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from typing import Any, Dict, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from keys import all_keys  # noqa: E402

import cascade_mlir  # noqa: E402
from cascade_mlir import kernels  # noqa: E402

PACKAGE = os.path.dirname(os.path.abspath(cascade_mlir.__file__))
#: Libraries a self-contained compiler must not need.
FOREIGN = ("libLLVM", "libMLIR", "libmlir", "libz3", "libedit", "libclang")


def _manifests(root: str) -> List[str]:
    """Bundle directories (with a manifest.json) under ROOT."""
    out = []
    for d, _, files in os.walk(root):
        if "manifest.json" in files:
            out.append(d)
    return out


def _cache_root() -> str:
    return os.path.dirname(kernels.cache_dir())


def _write(path: str, data: Dict[str, Any]) -> None:
    if path:
        with open(path, "w") as f:
            json.dump(data, f, indent=1)


def check(args: argparse.Namespace) -> int:
    bad: List[str] = []
    facts: Dict[str, Any] = {"package": PACKAGE, "version": cascade_mlir.__version__}
    for var in ("CASCADE_MLIR_KERNEL_PATH", "CASCADE_MLIR_NO_JIT", "CASCADE_MLIR_COMPILER"):
        if os.environ.get(var):
            bad.append(f"{var} is set ({os.environ[var]}): on demand means the package's "
                       "own compiler and no other kernel folder")
    mods = [f for f in os.listdir(PACKAGE) if f.startswith("_compiler") and
            not f.endswith((".pyi", ".py"))]
    if mods:
        bad.append(f"the package has an in-process compiler module ({', '.join(mods)}), "
                   "which links the system's LLVM: not the wheel")
    exe = kernels.compiler_executable()
    facts["compiler"] = exe
    if not exe:
        bad.append("no cascade-compile executable in the package")
    elif os.path.dirname(os.path.dirname(os.path.abspath(exe))) != PACKAGE:
        bad.append(f"cascade-compile {exe} is not the package's own")
    if exe and shutil.which("ldd"):
        r = subprocess.run(["ldd", exe], capture_output=True, text=True)
        libs = [ln.split()[0] for ln in (r.stdout + r.stderr).splitlines() if ln.strip()]
        facts["compiler_libs"] = libs
        foreign = [lib for lib in libs if lib.startswith(FOREIGN)]
        if foreign:
            bad.append(f"cascade-compile needs {', '.join(foreign)}")
    facts["llvm_tools_on_path"] = [t for t in ("llvm-config", "mlir-opt", "llc")
                                   if shutil.which(t)]
    if not kernels.can_compile():
        bad.append("kernels.can_compile() is False")
    facts["compiler_id"] = kernels.compiler_id()
    facts["cache_dir"] = kernels.cache_dir()
    facts["search_roots"] = kernels.search_roots()
    shipped = _manifests(PACKAGE)
    if shipped:
        bad.append(f"the package holds {len(shipped)} bundle(s), e.g. {shipped[0]}: "
                   "its default kernel set was not removed")
    cached = _manifests(_cache_root()) if os.path.isdir(_cache_root()) else []
    if cached:
        bad.append(f"the kernel cache {_cache_root()} holds {len(cached)} bundle(s), "
                   f"e.g. {cached[0]}: not empty")
    keys = all_keys(args.tests_dir) if args.tests_dir else []
    facts["keys"] = len(keys)
    found = [k for k in keys if kernels.find_bundle(k, "sm_90a")]  # and its fallbacks
    if found:
        bad.append(f"find_bundle finds {len(found)} of the {len(keys)} keys, e.g. {found[0]}")
    facts["problems"] = bad
    _write(args.json, facts)
    print(f"cascade_mlir {facts['version']} at {PACKAGE}")
    print(f"compiler: {exe} (id {facts['compiler_id']}); needs: "
          f"{' '.join(facts.get('compiler_libs', ['(ldd not found)']))}")
    print(f"LLVM tools on PATH: {' '.join(facts['llvm_tools_on_path']) or 'none'}")
    print(f"search roots: {' '.join(facts['search_roots'])}")
    if bad:
        for b in bad:
            print(f"NOT ON DEMAND: {b}")
        return 1
    print("on demand: no bundle in the package or the cache" +
          (f", none of the {len(keys)} keys of the test files found" if keys else ""))
    return 0


def _device_chip() -> Any:
    from cascade_mlir import _gpu
    return _gpu.device(0)


def _dist(xs: List[float]) -> str:
    if not xs:
        return "none"
    xs = sorted(xs)
    p90 = xs[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))]
    return (f"n={len(xs)} median {statistics.median(xs):.3f} s, p90 {p90:.3f} s, "
            f"min {xs[0]:.3f} s, max {xs[-1]:.3f} s")


def warm(args: argparse.Namespace) -> int:
    dev = None
    chip = args.chip
    if not chip:
        try:
            dev = _device_chip()
            chip = dev.chip
        except Exception as e:  # noqa: BLE001 - said, with the way out
            print(f"no GPU to read the chip from ({e}); pass --chip (FI_CHIP)")
            return 1
    keys = kernels.kernel_set(args.set) if args.set else all_keys(args.tests_dir)
    missing = [k for k in keys if not kernels.find_bundle(k, chip, own_chip_only=True)]
    data: Dict[str, Any] = {"chip": chip, "keys": len(keys), "missing": len(missing),
                            "cache_dir": kernels.cache_dir()}
    # A new configuration's first call, one at a time: bundles spread over the
    # key list (every kind of group), each found-or-compiled then loaded.
    first: Dict[str, float] = {}
    n = min(args.first_use, len(missing))
    for k in (missing[i * len(missing) // n] for i in range(n)) if n else ():
        t = time.perf_counter()
        if dev is not None:
            from cascade_mlir import _gpu
            _gpu.load_bundle(dev, k)
        else:
            kernels.ensure_bundle(k, chip)
        first[k] = time.perf_counter() - t
    data["first_use"] = first
    what = "compile + cubin + module load" if dev is not None else "compile + cubin, no GPU"
    if first:
        print(f"first use, one bundle at a time ({what}): {_dist(list(first.values()))}")
    rest = [k for k in missing if k not in first]
    t = time.perf_counter()
    kernels.ensure_bundles(rest, chip)
    data["warm_s"] = time.perf_counter() - t
    data["warm_bundles"] = len(rest)
    built = [k for k in missing if kernels.find_bundle(k, chip, own_chip_only=True)]
    data["compiled"] = built
    def has_cubins(bundle):
        """A cubin beside every PTX file (kernels.ptx, or one per kernel)."""
        if not bundle:
            return False
        ptx = [f[:-len(".ptx")] for f in os.listdir(bundle) if f.endswith(".ptx")]
        return bool(ptx) and all(os.path.isfile(os.path.join(bundle, f"{p}.{chip}.cubin"))
                                 for p in ptx)

    cubins = [k for k in built if has_cubins(kernels.find_bundle(k, chip, own_chip_only=True))]
    data["cubins"] = len(cubins)
    _write(args.json, data)
    rate = len(rest) / data["warm_s"] if data["warm_s"] > 0 else 0.0
    print(f"warm: {len(rest)} bundle(s) for {chip} by kernels.ensure_bundles "
          f"({kernels.compiler_executable()}, {os.cpu_count()} cores) in "
          f"{data['warm_s']:.1f} s ({rate:.1f} bundles/s); {len(built)} of {len(missing)} "
          f"missing keys now in the cache, {len(cubins)} with a cubin")
    return 0 if len(built) == len(missing) else 1


def count(args: argparse.Namespace) -> int:
    root = _cache_root()
    per_chip: Dict[str, List[str]] = {}
    for d in _manifests(root) if os.path.isdir(root) else []:
        chip_dir, key = os.path.split(d)
        per_chip.setdefault(os.path.basename(chip_dir), []).append(key)
    total = sum(len(v) for v in per_chip.values())
    data: Dict[str, Any] = {"cache_root": root, "bundles": total,
                            "per_chip": {c: len(v) for c, v in per_chip.items()}}
    chips = ", ".join(f"{len(v)} {c}" for c, v in sorted(per_chip.items())) or "none"
    print(f"bundles compiled on demand in this run (the kernel cache {root}, empty at the "
          f"start): {total} ({chips})")
    if args.warm and os.path.isfile(args.warm):
        with open(args.warm) as f:
            w = json.load(f)
        foreseen = set(w.get("compiled", []))
        extra = sorted(k for k in per_chip.get(w["chip"], []) if k not in foreseen)
        data["by_tests"] = extra
        print(f"  {len(foreseen)} compiled before the tests (warm), {len(extra)} by the tests "
              "themselves on first use" + (f": {' '.join(extra[:12])}"
                                           f"{' ...' if len(extra) > 12 else ''}"
                                           if extra else ""))
    _write(args.json, data)
    return 0


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    c.add_argument("tests_dir", nargs="?", default="")
    c.add_argument("--json", default="")
    w = sub.add_parser("warm")
    w.add_argument("tests_dir", nargs="?", default="")
    w.add_argument("--set", default="", help="a kernel set of the package instead")
    w.add_argument("--chip", default="", help="default: the device's (sm_90a on an H100)")
    w.add_argument("--first-use", type=int, default=0, metavar="N")
    w.add_argument("--json", default="")
    n = sub.add_parser("count")
    n.add_argument("--warm", default="", help="warm's --json, to tell the tests' own")
    n.add_argument("--json", default="")
    args = ap.parse_args(argv)
    if args.cmd == "warm" and bool(args.tests_dir) == bool(args.set):
        ap.error("warm takes TESTS_DIR or --set NAME")
    return {"check": check, "warm": warm, "count": count}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
