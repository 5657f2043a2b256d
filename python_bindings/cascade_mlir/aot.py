"""Builds kernel bundles ahead of time (docs/python.md, "Kernels").

    python -m cascade_mlir.aot --set default --out DIR      # a named set
    python -m cascade_mlir.aot --key decode.f16-f16.d128.h32x8.p16.nhd.pool --out DIR
    python -m cascade_mlir.aot --list default               # keys of a set

Needs the package's compiler (a build with LLVM/MLIR 22). DIR gets one
directory per chip and key (DIR/sm_90/<key>/manifest.json, kernels.ptx and,
where ptxas is found, kernels.sm_90.cubin); `--chip sm_90,sm_90a` builds both
(sm_90a: prefill on the Hopper wgmma kernels, what H100/H200 run first); point CASCADE_MLIR_KERNEL_PATH at
DIR, or build the package with -DCASCADE_PYTHON_PREBUILT_KERNELS=DIR.
"""

import argparse
import os
import sys
from typing import List, Optional, Tuple

from . import kernels


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cascade_mlir.aot",
                                 description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--set", action="append", default=[],
                    help="a named set: default, minimal, gpu-tests (repeatable)")
    ap.add_argument("--key", action="append", default=[],
                    help="one bundle key (repeatable)")
    ap.add_argument("--out", help="output directory")
    ap.add_argument("--chip", default="sm_90",
                    help="target chip(s), comma-separated (sm_90,sm_90a: both, "
                         "sm_90a with the Hopper kernels)")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--list", metavar="SET", help="print the keys of a set")
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(kernels.kernel_set(args.list)))
        return 0
    keys = [k for s in args.set for k in kernels.kernel_set(s)]
    for k in args.key:
        kernels.parse_key(k)  # ValueError for a malformed key
        keys.append(k)
    if not keys or not args.out:
        ap.error("give --out and at least one --set or --key")

    def progress(i: int, n: int, result: Tuple[str, float]) -> None:
        print(f"[{i}/{n}] {result[0]} ({result[1]:.1f} s)", flush=True)

    for chip in [c for c in args.chip.split(",") if c]:
        # (Keys of fp8 queries: sm_90a only, kernels.builds_on.)
        chip_keys = [k for k in keys if kernels.builds_on(k, chip)]
        done = kernels.build_keys(chip_keys, args.out, chip, args.jobs, progress)
        print(f"{len(done)} bundle(s) built, {len(set(chip_keys)) - len(done)} already "
              f"present, in {os.path.join(args.out, chip)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
