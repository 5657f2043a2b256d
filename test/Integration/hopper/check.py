"""GPU check of the Hopper building blocks (GPUCodegen/Wgmma.h) on an sm_90a
chip: the test kernels of -test-cascade-hopper-codegen, built by
`tools/cascade-dev gpu prepare hopper`,
run on fresh random inputs against a float64 reference.

- wgmma f16 / bf16: D[64x64] = A B^T (f32 accumulate) on one warpgroup, A and
  B staged in the 128-byte swizzle, read by wgmma through the shared-memory
  matrix descriptors, four k16 steps (scale-d 0, then 1), D written through
  the warpgroup accumulator layout. A wrong descriptor field, swizzle, k-step
  or fragment map gives a wrong D; D is poisoned with NaN first, so an
  element the layout misses fails too.
- mbarrier: init, arrive.expect_tx(0), try_wait.parity; every thread writes
  its id after the wait.

  python3 test/Integration/hopper/check.py [DIR]   (default .carry/hopper)
"""
import sys

import cupy as cp
import numpy as np

from common import SEED, is_sm90, kernel, memref, report


def run_wgmma(name, ptx, dtype, rng):
    kern = kernel(ptx, name)
    a = rng.standard_normal((64, 64))
    b = rng.standard_normal((64, 64))
    if dtype == "bf16":
        # bf16 = the high 16 bits of f32 (round to nearest even).
        def to_bf16(x):
            u = x.astype(np.float32).view(np.uint32)
            u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
            return u
        ab, bb = to_bf16(a), to_bf16(b)
        a = (ab.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        b = (bb.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        da, db = cp.asarray(ab.ravel()), cp.asarray(bb.ravel())
    else:
        a16, b16 = a.astype(np.float16), b.astype(np.float16)
        a, b = a16.astype(np.float64), b16.astype(np.float64)
        da, db = cp.asarray(a16.ravel()), cp.asarray(b16.ravel())
    d = cp.full(64 * 64, np.nan, dtype=cp.float32)
    kern((1,), (128,), (*memref(da), *memref(db), *memref(d)), shared_mem=2 * 64 * 64 * 2)
    cp.cuda.runtime.deviceSynchronize()
    got = cp.asnumpy(d).reshape(64, 64).astype(np.float64)
    ref = a @ b.T
    err = np.abs(got - ref).max() / np.abs(ref).max()
    ok = np.isfinite(got).all() and err < 1e-4
    return ok, f"{name}: max |D - A B^T| / max |A B^T| = {err:.2e}" + (
        "" if np.isfinite(got).all() else f" ({np.isnan(got).sum()} NaN)")


def run_mbarrier():
    kern = kernel("mbarrier.ptx", "mbarrier")
    out = cp.full(128, np.nan, dtype=cp.float32)
    kern((1,), (128,), tuple(memref(out)))
    cp.cuda.runtime.deviceSynchronize()
    ok = np.array_equal(cp.asnumpy(out), np.arange(128, dtype=np.float32))
    return ok, "mbarrier: every thread passed the wait" if ok else "mbarrier: wrong output"


def main():
    if not is_sm90("these kernels (wgmma) are"):
        return 0
    rng = np.random.default_rng(SEED)
    results = []
    for _ in range(3):  # fresh inputs each time
        results.append(run_wgmma("wgmma_f16", "wgmma.ptx", "f16", rng))
        results.append(run_wgmma("wgmma_bf16", "wgmma-bf16.ptx", "bf16", rng))
    results.append(run_mbarrier())
    return report(results)


if __name__ == "__main__":
    sys.exit(main())
