"""GPU check of the TMA building block (GPUCodegen/Tma.h) on an sm_90 chip:
the `tma` and `tma-3d` kernels of -test-cascade-hopper-codegen, built by
`tools/cascade-dev gpu prepare hopper`.

Each block of 128 threads loads one 64x64 f16 box of a row-major global
tensor through a tensor map (128-byte swizzle) into shared memory on an
mbarrier, waits, and copies the box un-swizzled to its output tile
(blockIdx.y * gridDim.x + blockIdx.x, row-major 64x64). The map is encoded
here with the driver's cuTensorMapEncodeTiled (libcuda through ctypes, the
call the runtime's encodeTiledTensorMap makes), with the arguments the runtime's
encodeTiledTensorMap passes, and copied to device memory; the kernel gets its
address. The output (poisoned with NaN first) must equal the input tiles bit
for bit: a wrong coordinate order, swizzle, byte count or barrier shows. A
tensor whose height is not a multiple of 64 checks that the rows past its
end read as zero (out-of-bounds fill). The 3-D kernel loads 1x64x64 boxes of
a [pages][rows][cols] tensor, the page (blockIdx.z) the outermost
coordinate, as a paged KV pool would be read.

  python3 test/Integration/hopper/tma_check.py [DIR]   (default .carry/hopper)
"""
import ctypes
import sys

import cupy as cp
import numpy as np

from common import SEED, is_sm90, kernel, report

BOX = 64
# cuda.h values (the runtime's TensorMap.h uses the same).
F16, INTERLEAVE_NONE, SWIZZLE_128B, L2_NONE, OOB_ZERO = 6, 0, 3, 0, 0


def encode(addr, dims, strides, box):
    """The 128-byte CUtensorMap of a row-major f16 tensor, 128B swizzle, from
    libcuda's cuTensorMapEncodeTiled (the call the runtime makes)."""
    lib = ctypes.CDLL("libcuda.so.1")
    fn = lib.cuTensorMapEncodeTiled
    u64p, u32p = ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32)
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p,
                   u64p, u64p, u32p, u32p, ctypes.c_int, ctypes.c_int,
                   ctypes.c_int, ctypes.c_int]
    fn.restype = ctypes.c_int
    raw = ctypes.create_string_buffer(128 + 64)  # CUtensorMap is 64-byte aligned
    base = (ctypes.addressof(raw) + 63) // 64 * 64
    rank = len(dims)
    r = fn(ctypes.c_void_p(base), F16, rank, ctypes.c_void_p(addr),
           (ctypes.c_uint64 * rank)(*dims), (ctypes.c_uint64 * max(rank - 1, 1))(*strides),
           (ctypes.c_uint32 * rank)(*box), (ctypes.c_uint32 * rank)(*([1] * rank)),
           INTERLEAVE_NONE, SWIZZLE_128B, L2_NONE, OOB_ZERO)
    if r != 0:
        raise RuntimeError(f"cuTensorMapEncodeTiled returned {r}")
    return ctypes.string_at(base, 128)


def run_tma(kern, pages, rows, cols, rng):
    """pages = 0: the 2-D kernel on a rows x cols tensor; else the 3-D one on
    pages x rows x cols."""
    shape = (pages, rows, cols) if pages else (rows, cols)
    x = rng.standard_normal(shape).astype(np.float16)
    dx = cp.asarray(x)
    # dims / strides / box innermost first; strides in bytes.
    dims, strides, box = [cols, rows], [cols * 2], [BOX, BOX]
    if pages:
        dims, strides, box = dims + [pages], strides + [rows * cols * 2], box + [1]
    tmap = encode(dx.data.ptr, dims, strides, box)
    dmap = cp.asarray(np.frombuffer(tmap, dtype=np.uint8))
    gx, gy, gz = cols // BOX, -(-rows // BOX), max(pages, 1)
    out = cp.full(gx * gy * gz * BOX * BOX, np.nan, dtype=cp.float16)
    kern((gx, gy, gz), (128,), (np.uint64(dmap.data.ptr), out, out, np.int64(0),
                                np.int64(out.size), np.int64(1)),
         shared_mem=BOX * BOX * 2)
    cp.cuda.runtime.deviceSynchronize()
    padded = np.zeros((gz, gy * BOX, cols), dtype=np.float16)
    padded[:, :rows] = x.reshape(gz, rows, cols)
    ref = padded.reshape(gz, gy, BOX, gx, BOX).transpose(0, 1, 3, 2, 4).ravel()
    got = cp.asnumpy(out)
    bad = int((got.view(np.uint16) != ref.view(np.uint16)).sum())
    name = f"tma-3d {pages}x{rows}x{cols}" if pages else f"tma {rows}x{cols}"
    return bad == 0, (f"{name} ({gz}x{gy}x{gx} boxes): "
                      f"{bad} of {got.size} elements differ")


def main():
    if not is_sm90("the kernel is"):
        return 0
    k2 = kernel("tma.ptx", "tma")
    k3 = kernel("tma-3d.ptx", "tma_3d")
    rng = np.random.default_rng(SEED)
    results = []
    for rows, cols in [(64, 64), (192, 320), (160, 128), (128, 448)]:
        results.append(run_tma(k2, 0, rows, cols, rng))
    for pages, rows, cols in [(1, 64, 64), (7, 64, 128), (5, 96, 64)]:
        results.append(run_tma(k3, pages, rows, cols, rng))
    return report(results)


if __name__ == "__main__":
    sys.exit(main())
