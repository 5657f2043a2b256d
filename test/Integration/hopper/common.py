"""What the Hopper GPU checks (check.py, tma_check.py) share: the kernel
folder, the seed, the flat-memref kernel parameters, the sm_90 gate and the
PASS/FAIL report."""
import os
import sys

import cupy as cp
import numpy as np

DIR = sys.argv[1] if len(sys.argv) > 1 else ".carry/hopper"
SEED = int(os.environ.get("CASCADE_TEST_SEED", np.random.SeedSequence().entropy % 2**31))


def memref(a):
    """The five kernel parameters of a flat memref<?xT>: allocated and
    aligned pointers, offset, size, stride."""
    return [a, a, np.int64(0), np.int64(a.size), np.int64(1)]


def kernel(ptx, name):
    return cp.RawModule(path=os.path.join(DIR, ptx)).get_function(name)


def is_sm90(what):
    """Prints the seed and the device; False (with a SKIP line saying why)
    on a chip other than sm_90."""
    cc = cp.cuda.Device().compute_capability
    print(f"seed {SEED}; device compute capability {cc}")
    if cc != "90":
        print(f"SKIP: {what} sm_90a; this device is sm_{cc}")
        return False
    return True


def report(results):
    """Prints each (ok, message) and the closing count; the exit status."""
    for ok, msg in results:
        print(("PASS " if ok else "FAIL ") + msg)
    failed = sum(not ok for ok, _ in results)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0
