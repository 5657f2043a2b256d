"""Host time per call of every run()/merge entry point on the stand-in CUDA
driver (fake_cuda.c), with a stand-in torch: tensors that answer what the
bindings read from a torch tensor (data_ptr(), dtype, is_cuda, get_device(),
shape, is_contiguous(), stride()) as plain Python attributes, registered
as "torch" with the runtime. What is timed is the package's own host work (argument checks,
output allocation through the framework, argument packing, the driver call);
the stand-in driver records a launch in ~0.1 us where CUDA's cuLaunchKernel
takes 2-4 us, and the stand-in's allocation is a Python object.

    CASCADE_CUDA_DRIVER=libfakecuda.so CASCADE_MLIR_KERNEL_PATH=bundles \
      python host_cost.py [--calls N] [--budget-us US]

Prints one line per entry point (the fastest of 7 repetitions of N
back-to-back calls); exit status 1 if one exceeds the budget.
"""
import argparse
import ctypes
import os
import sys
import time
import types

import numpy as np

FAKE = ctypes.CDLL(os.environ["CASCADE_CUDA_DRIVER"])


class _DType:
    def __init__(self, name, np_dtype):
        self.name, self.np = name, np.dtype(np_dtype)

    def __repr__(self):
        return "faketorch." + self.name


_ALIGN = 256


class Tensor:
    """A host array posing as a CUDA torch tensor on device 0."""

    is_cuda = True

    def __init__(self, a, dtype):
        self._a = a
        self.dtype = dtype
        self.shape = a.shape
        info = _info.get(id(a))
        if info is None or info[0] is not a:
            info = _info[id(a)] = (a, a.ctypes.data,
                                   tuple(s // a.itemsize for s in a.strides),
                                   a.flags.c_contiguous)
        self._ptr, self._stride, self._contiguous = info[1], info[2], info[3]

    def data_ptr(self):
        return self._ptr

    def get_device(self):
        return 0

    def stride(self):
        return self._stride

    def is_contiguous(self):
        return self._contiguous

    def numel(self):
        return self._a.size

    def element_size(self):
        return self._a.itemsize

    def __getitem__(self, i):
        return Tensor(self._a[i], self.dtype)

    def new_empty(self, shape):
        return Tensor(_aligned(tuple(shape), self.dtype.np), self.dtype)


_pool = {}
_info = {}  # id(array) -> (array, address, strides, contiguous): numpy's are slow


def _aligned(shape, np_dtype):
    """256-byte aligned host memory; one buffer per (shape, dtype), reused
    like torch's caching allocator reuses freed blocks (allocation cost
    is then the Python object's, not a page-zeroing memset)."""
    np_dtype = np.dtype(np_dtype)
    key = (tuple(shape), np_dtype.str)
    if key in _pool:
        return _pool[key]
    n = int(np.prod(shape)) * np_dtype.itemsize
    raw = np.empty(n + _ALIGN, np.uint8)
    off = (-raw.ctypes.data) % _ALIGN
    a = _pool[key] = raw[off:off + n].view(np_dtype).reshape(shape)
    return a


def make_torch():
    """The stand-in torch module: what registerTorch reads."""
    t = types.ModuleType("faketorch")
    names = {"float16": np.float16, "bfloat16": np.uint16, "float32": np.float32,
             "float64": np.float64, "int32": np.int32, "int64": np.int64,
             "uint8": np.uint8, "int8": np.int8, "bool": np.bool_}
    for n, d in names.items():
        setattr(t, n, _DType(n, d))
    t.Tensor = Tensor

    def empty(shape, dtype=None, device=None):
        dtype = dtype or t.float32
        return Tensor(_aligned(tuple(shape), dtype.np), dtype)

    def empty_like(x):
        return Tensor(_aligned(x.shape, x.dtype.np), x.dtype)

    def empty_strided(shape, strides, dtype=None, device=None):
        a = empty(shape, dtype, device)
        assert a.stride() == tuple(strides), "the stand-in allocates contiguous"
        return a

    t.empty, t.empty_like, t.empty_strided = empty, empty_like, empty_strided
    t._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda device: 0)
    return t


faketorch = make_torch()


class Adapter:
    """The package's framework adapter for the stand-in (as _Torch)."""
    name = "torch"

    def is_tensor(self, x):
        return isinstance(x, Tensor)

    def cuda_ordinal(self, x):
        return 0

    def device_object(self, ordinal):
        return None

    def stream_for(self, x, ordinal):
        return 0

    def current_stream(self, ordinal):
        return 0

    def empty_bytes(self, nbytes, ordinal):
        return faketorch.empty((int(nbytes),), faketorch.uint8)

    def empty_i32(self, n, ordinal):
        return faketorch.empty((int(n),), faketorch.int32)

    def empty_like(self, x):
        return faketorch.empty_like(x)

    def nbytes(self, x):
        return x.numel() * x.element_size()

    def empty_shaped(self, x, shape):
        return faketorch.empty(shape, x.dtype)

    def empty_f32(self, x, shape):
        return faketorch.empty(shape, faketorch.float32)

    def to_host(self, x):
        return x._a.copy()


def tensor(shape, dtype):
    return faketorch.empty(shape, getattr(faketorch, dtype))


def host_us(fn, calls, reps=7):
    """The fastest of reps repetitions (the build machine is shared: the
    minimum is the least disturbed), us per call."""
    res = []
    for _ in range(reps):
        FAKE.fake_cuda_reset()
        t = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        res.append((time.perf_counter_ns() - t) / calls / 1e3)
    FAKE.fake_cuda_reset()
    return min(res)


def entry_points():
    """(name, zero-argument callable) for every run()/merge entry point, on
    the sizes of the issue (merges: L=8192, H=32, D=128, fp16)."""
    import cascade_mlir as cm
    from cascade_mlir import _frameworks, _runtime
    _runtime._register_torch(faketorch)
    _frameworks.register_framework(Adapter())
    L, H, D, HKV, PAGE, B = 8192, 32, 128, 8, 16, 64
    va, vb = tensor((L, H, D), "float16"), tensor((L, H, D), "float16")
    sa, sb = tensor((L, H), "float32"), tensor((L, H), "float32")
    vs, ss = tensor((1024, 4, H, D), "float16"), tensor((1024, 4, H), "float32")
    mask = tensor((L,), "bool")
    ws = faketorch.empty((128 << 20,), faketorch.uint8)
    cache = tensor((4096, 2, PAGE, HKV, D), "float16")
    q = tensor((B, H, D), "float16")
    out, lse = tensor((B, H, D), "float16"), tensor((B, H), "float32")
    i32 = np.int32
    own = np.full(B, 4, i32)
    indptr = np.concatenate([[0], np.cumsum(own)]).astype(i32)
    w = cm.MultiLevelCascadeAttentionWrapper(2, ws, "NHD")
    w.plan([np.array([0, B], i32), np.arange(B + 1, dtype=i32)],
           [np.array([0, 512], i32), indptr],
           [np.arange(512, dtype=i32), 512 + np.arange(indptr[-1], dtype=i32)],
           [np.array([PAGE], i32), np.full(B, 5, i32)], H, HKV, D, PAGE)
    d = cm.BatchDecodeWithPagedKVCacheWrapper(ws)
    d.plan(indptr, np.arange(indptr[-1], dtype=i32), np.full(B, 5, i32), H, HKV, D, PAGE)
    p = cm.BatchPrefillWithPagedKVCacheWrapper(ws)
    qo = (np.arange(B + 1) * 4).astype(i32)
    p.plan(qo, indptr, np.arange(indptr[-1], dtype=i32), np.full(B, 5, i32), H, HKV, D,
           PAGE, causal=True)
    qp = tensor((4 * B, H, D), "float16")
    return [
        ("merge_state", lambda: cm.merge_state(va, sa, vb, sb)),
        ("merge_state_in_place", lambda: cm.merge_state_in_place(va, sa, vb, sb)),
        ("merge_state_in_place(mask)",
         lambda: cm.merge_state_in_place(va, sa, vb, sb, mask=mask)),
        ("merge_states", lambda: cm.merge_states(vs, ss)),
        ("cascade run", lambda: w.run(q, cache)),
        ("cascade run(out, lse)", lambda: w.run(q, cache, out=out, lse=lse)),
        ("cascade run(return_lse)", lambda: w.run(q, cache, return_lse=True)),
        ("decode run", lambda: d.run(q, cache)),
        ("prefill run", lambda: p.run(qp, cache)),
    ]


def check_fast_merges():
    """The merges' one-call path (MergeOps) on stand-in torch tensors: the
    kernel and arguments it launches, and that a bad argument falls back to
    the checked path's error naming it."""
    import cascade_mlir as cm
    from fake_device_checks import arg, check, launches
    L, H, D = 37, 4, 128
    va, vb = tensor((L, H, D), "float16"), tensor((L, H, D), "float16")
    sa, sb = tensor((L, H), "float32"), tensor((L, H), "float32")
    launches()
    v, s = cm.merge_state(va, sa, vb, sb)
    rec = launches()
    check(len(rec) == 1 and "merge_state_f16_d128" in rec[0]["name"], rec)
    check(arg(rec[0], "v") == (v.data_ptr(), L * H * D) and
          arg(rec[0], "s") == (s.data_ptr(), L * H) and
          arg(rec[0], "v_b")[0] == vb.data_ptr() and arg(rec[0], "num_tasks") == L * H,
          "merge_state arguments")
    check(isinstance(v, Tensor) and v.dtype is faketorch.float16 and v.shape == (L, H, D),
          "merge_state output")
    cm.merge_state_in_place(va, sa, vb, sb)
    check(FAKE.fake_cuda_num_graph_launches() == 1, "a merge is one graph launch")
    rec = launches()
    check(len(rec) == 1 and "in_place" in rec[0]["name"] and "mask" not in rec[0]["name"]
          and arg(rec[0], "v")[0] == va.data_ptr() and arg(rec[0], "num_heads") == H, rec)
    backing = tensor((2 * L,), "bool")
    cm.merge_state_in_place(va, sa, vb, sb, mask=backing[::2])
    rec = launches()
    check(len(rec) == 1 and arg(rec[0], "mask_stride") == 2 and
          arg(rec[0], "mask") == (backing.data_ptr(), 2 * L - 1), rec)
    vs, ss = tensor((L, 3, H, D), "float16"), tensor((L, 3, H), "float32")
    vo, so = cm.merge_states(vs, ss)
    rec = launches()
    check(len(rec) == 1 and "merge_states_f16_d128" in rec[0]["name"] and
          arg(rec[0], "num_states") == 3 and arg(rec[0], "v")[0] == vo.data_ptr() and
          vo.shape == (L, H, D) and so.shape == (L, H), rec)
    # Sizes that bind once each: no rows (nothing launched), no states (the
    # kernel writes the empty state), and the first size again (cached).
    e, _ = cm.merge_state(*(tensor((0, H, D), "float16"), tensor((0, H), "float32")) * 2)
    check(e.shape == (0, H, D) and not launches(), "an empty merge launches nothing")
    cm.merge_states(tensor((9, 0, H, D), "float16"), tensor((9, 0, H), "float32"))
    rec = launches()
    check(len(rec) == 1 and arg(rec[0], "num_states") == 0 and
          arg(rec[0], "num_tasks") == 9 * H, rec)
    v2, s2 = cm.merge_state(vb, sb, va, sa)
    rec = launches()
    check(arg(rec[0], "v_a")[0] == vb.data_ptr() and
          arg(rec[0], "v") == (v2.data_ptr(), L * H * D) and
          arg(rec[0], "s_b") == (sa.data_ptr(), L * H), "rebound addresses")
    for bad, what in (((va, tensor((L, H), "float16"), vb, sb), "s_a has dtype float16"),
                      ((va, sa, tensor((L, H, 64), "float16"), sb), "v_b has shape"),
                      ((va, sa, vb, tensor((L + 1, H), "float32")), "s_b has shape")):
        try:
            cm.merge_state(*bad)
        except (TypeError, ValueError) as e:
            check(what in str(e), f"{what!r} not in {e}")
        else:
            raise AssertionError(f"no error for {what}")
    check(not launches(), "a rejected call launched something")
    print("OK fast merges")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=500)
    ap.add_argument("--check", action="store_true",
                    help="check the merges' one-call path's launches first")
    ap.add_argument("--budget-us", type=float, default=0,
                    help="fail if an entry point's host time exceeds this")
    args = ap.parse_args()
    eps = entry_points()
    if args.check:
        check_fast_merges()
    worst = 0.0
    for name, fn in eps:
        fn()
        us = host_us(fn, args.calls)
        worst = max(worst, us)
        print(f"{name:30s} {us:7.2f} us/call")
    if args.budget_us and worst > args.budget_us:
        print(f"FAIL: {worst:.2f} us > budget {args.budget_us} us")
        return 1
    print("OK host_cost")
    return 0


if __name__ == "__main__":
    sys.exit(main())
