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

With --torch, the same with real torch and cascade_mlir._torch_bridge
instead of the stand-in torch: host torch tensors stand for CUDA ones
(_runtime._stand_in_device(0)), and the torch ops' C++ kernels are
registered for the CPU dispatch key, so that `torch.ops.cascade_mlir.*`
runs them here. --check then checks that run / run_out launch what the
wrapper's run() launches, with the same arguments, that the merges' ops
launch what the functions do, and that what the kernels must not take
(no runner, grad, bad arguments) goes to the Python kernels with their
errors. Needs torch and the bridge (exit status 3 without them).
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
    from stand_in import arg, check, launches
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


# --- real torch through the torch bridge ----------------------------------------

def torch_on_stand_in(torch):
    """The package's framework adapter for host torch tensors standing for
    tensors on cuda:0 (the runtime reads them as on cuda:0): _Torch on its
    torch, with the device answers of Adapter."""
    from cascade_mlir._frameworks import _Torch

    class TorchOnStandIn(_Torch):
        cuda_ordinal = Adapter.cuda_ordinal
        device_object = Adapter.device_object
        stream_for = Adapter.stream_for
        current_stream = Adapter.current_stream

        def __init__(self):  # no bridge loading: the package did that
            self.torch = torch

        def empty_bytes(self, nbytes, ordinal):
            return torch_bytes(torch, nbytes)

        def empty_i32(self, n, ordinal):
            return torch.empty(int(n), dtype=torch.int32)

        def empty_f32(self, x, shape):
            return torch.empty(tuple(shape), dtype=torch.float32)

        def to_host(self, x):
            return x.numpy().copy()

    return TorchOnStandIn()


def torch_bytes(torch, nbytes):
    """A uint8 host tensor 256-byte aligned, as CUDA allocations are (the
    float workspace must be)."""
    raw = torch.empty(int(nbytes) + _ALIGN, dtype=torch.uint8)
    off = (-raw.data_ptr()) % _ALIGN
    return raw[off:off + int(nbytes)]


def torch_setup():
    """torch with the bridge, the ops' C++ kernels on the CPU key and host
    tensors standing for cuda:0; exits with status 3 without torch or the
    bridge."""
    try:
        import torch
    except ImportError:
        print("SKIP: torch is not installed")
        sys.exit(3)
    from cascade_mlir import _frameworks, _runtime, torch_ops
    if _frameworks.TORCH_BRIDGE is None:
        print("SKIP: cascade_mlir._torch_bridge is " + _frameworks.TORCH_BRIDGE_STATUS)
        sys.exit(3)
    print(torch_ops._register_cpp_kernels("CPU"))
    _runtime._stand_in_device(0)
    _frameworks.register_framework(torch_on_stand_in(torch))
    return torch, _frameworks.TORCH_BRIDGE


def torch_wrappers(torch):
    """The entry points' wrappers, planned on torch tensors: (cascade, decode,
    prefill, their (q, kv cache) inputs)."""
    import cascade_mlir as cm
    H, D, HKV, PAGE, B = 32, 128, 8, 16, 64
    i32 = np.int32
    ws = [torch_bytes(torch, 128 << 20) for _ in range(3)]
    own = np.full(B, 4, i32)
    indptr = np.concatenate([[0], np.cumsum(own)]).astype(i32)
    w = cm.MultiLevelCascadeAttentionWrapper(2, ws[0], "NHD")
    w.plan([np.array([0, B], i32), np.arange(B + 1, dtype=i32)],
           [np.array([0, 512], i32), indptr],
           [np.arange(512, dtype=i32), 512 + np.arange(indptr[-1], dtype=i32)],
           [np.array([PAGE], i32), np.full(B, 5, i32)], H, HKV, D, PAGE)
    d = cm.BatchDecodeWithPagedKVCacheWrapper(ws[1])
    d.plan(indptr, np.arange(indptr[-1], dtype=i32), np.full(B, 5, i32), H, HKV, D, PAGE)
    p = cm.BatchPrefillWithPagedKVCacheWrapper(ws[2])
    p.plan((np.arange(B + 1) * 4).astype(i32), indptr, np.arange(indptr[-1], dtype=i32),
           np.full(B, 5, i32), H, HKV, D, PAGE, causal=True)
    cache = torch.empty(4096, 2, PAGE, HKV, D, dtype=torch.float16)
    q = torch.empty(B, H, D, dtype=torch.float16)
    qp = torch.empty(4 * B, H, D, dtype=torch.float16)
    return w, d, p, q, qp, cache


def torch_entry_points(torch):
    """(name, zero-argument callable): the torch ops next to the calls they
    stand for, on the sizes of entry_points()."""
    import cascade_mlir as cm
    from cascade_mlir import torch_ops
    w, d, p, q, qp, cache = torch_wrappers(torch)
    hw, hd, hp = (torch_ops.register(x) for x in (w, d, p))
    # 1024 rows, not the 8192: host allocations of 64 MB would be
    # mmap'd and unmapped every call, which CUDA's caching allocator is not.
    L, H, D = 1024, 32, 128
    va, vb = (torch.empty(L, H, D, dtype=torch.float16) for _ in range(2))
    sa, sb = (torch.empty(L, H) for _ in range(2))
    vs, ss = torch.empty(1024, 4, H, D, dtype=torch.float16), torch.empty(1024, 4, H)
    out, lse = torch.empty_like(q), torch.empty(q.shape[0], H)
    ops = torch.ops.cascade_mlir
    _keep.append((w, d, p))
    return [
        ("decode run", lambda: d.run(q, cache)),
        ("torch.ops run (cascade)", lambda: ops.run(hw, q, cache, None)),
        ("torch.ops run (decode)", lambda: ops.run(hd, q, cache, None)),
        ("torch.ops run (prefill)", lambda: ops.run(hp, qp, cache, None)),
        ("torch.ops run_out (decode)", lambda: ops.run_out(hd, q, cache, None, out, lse)),
        ("torch.ops run (decode), Python kernel",
         without_runner(hd, lambda: ops.run(hd, q, cache, None))),
        ("merge_state", lambda: cm.merge_state(va, sa, vb, sb)),
        ("torch.ops merge_state", lambda: ops.merge_state(va, sa, vb, sb)),
        ("torch.ops merge_state_in_place",
         lambda: ops.merge_state_in_place(va, sa, vb, sb, None)),
        ("merge_states", lambda: cm.merge_states(vs, ss)),
        ("torch.ops merge_states", lambda: ops.merge_states(vs, ss)),
    ]


_keep = []  # the timed wrappers (the registry holds them weakly)


class without_runner:
    """A call of the run ops' handle `h`, timed with its runner unbound (the
    Python kernel then runs): what the op cost before its C++ kernel."""

    def __init__(self, h, fn):
        self.h, self.fn = h, fn

    def __call__(self):
        return self.fn()

    def timed(self, time_it):
        from cascade_mlir import torch_ops
        with torch_ops._without_runner(self.h):
            return time_it(self.fn)


def python_frames(fn):
    """fn()'s result and the names of the package's Python functions that
    ran during it (none: the C++ kernels took the call)."""
    import cascade_mlir
    root = os.path.dirname(cascade_mlir.__file__)
    seen = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(root):
            seen.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        r = fn()
    finally:
        sys.setprofile(None)
    return r, seen


def same_launches(got, want, ptrs, what):
    """got's launches are want's, the addresses `ptrs` (got's: want's, the
    outputs each side allocated) mapped."""
    from stand_in import check
    mapped = [dict(r, params=[ptrs.get(v, v) for v in r["params"]]) for r in got]
    check(len(got) == len(want) and len(want) > 0, f"{what}: {len(got)} launches, "
          f"expected {len(want)}")
    for g, w in zip(mapped, want):
        check(g["name"] == w["name"] and g["grid"] == w["grid"], f"{what}: {g['name']}")
        check(g["params"] == w["params"], f"{what}: the arguments of {g['name']}")


def error_of(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - compared below
        return type(e), str(e)
    raise AssertionError("no error")


def check_torch_ops(torch, bridge):
    """The torch ops' C++ kernels on the stand-in driver, against the calls
    they stand for (see the module's docstring)."""
    import gc
    import cascade_mlir as cm
    from cascade_mlir import torch_ops
    from stand_in import check, launches
    ops = torch.ops.cascade_mlir
    w, d, p, q, qp, cache = torch_wrappers(torch)
    launches()
    for name, wr, qq in (("cascade", w, q), ("decode", d, q), ("prefill", p, qp)):
        h = torch_ops.register(wr)
        check(h in bridge.bound_runners(), f"{name}: a runner is bound at register()")
        (o, lse), frames = python_frames(lambda: ops.run(h, qq, cache, None))
        check(not frames, f"{name}: the op ran Python: {frames}")
        got = launches()
        o2, lse2 = wr.run(qq, cache, return_lse=True)
        want = launches()
        same_launches(got, want, {o.data_ptr(): o2.data_ptr(),
                                  lse.data_ptr(): lse2.data_ptr()}, f"{name} run")
        check((o.shape, o.dtype, lse.shape, lse.dtype, lse.stride()) ==
              (o2.shape, o2.dtype, lse2.shape, lse2.dtype, lse2.stride()), f"{name} outputs")
        out, lse3 = torch.empty_like(qq), torch.empty(qq.shape[0], qq.shape[1])
        versions = (out._version, lse3._version)
        _, frames = python_frames(lambda: ops.run_out(h, qq, cache, None, out, lse3))
        check(not frames, f"{name}: run_out ran Python: {frames}")
        check((out._version, lse3._version) == (versions[0] + 1, versions[1] + 1),
              f"{name}: run_out bumps the versions of out and lse")
        got = launches()
        wr.run(qq, cache, out=out, lse=lse3)
        same_launches(got, launches(), {}, f"{name} run_out")
        ops.run_out(h, qq, cache, None, out, None)
        got = launches()
        wr.run(qq, cache, out=out)
        same_launches(got, launches(), {}, f"{name} run_out without lse")
        # The (k, v) pair form: its kernels are prepared by the Python
        # kernel's first call, then the C++ kernel takes the calls.
        k, v = (torch.empty(cache[:, i].shape, dtype=cache.dtype) for i in range(2))
        for first in (True, False):
            (o, lse), frames = python_frames(lambda: ops.run(h, qq, k, v))
            check(bool(frames) == first, f"{name} pair form: {frames}")
            got = launches()
            o2, lse2 = wr.run(qq, (k, v), return_lse=True)
            same_launches(got, launches(), {o.data_ptr(): o2.data_ptr(),
                                            lse.data_ptr(): lse2.data_ptr()},
                          f"{name} pair form")
    # What the kernels do not take: the Python kernels' errors, nothing launched.
    hd = torch_ops.register(d)
    bad = {"q dtype": (q.float(), cache), "q rows": (q[:5], cache),
           # Strided views are taken; a head_dim that is not contiguous is not.
           "q strides": (q.transpose(0, 2).contiguous().transpose(0, 2), cache),
           "pages": (q, cache[:10]), "2-D q": (q[0], cache)}
    for what, (qq, kv) in bad.items():
        want = error_of(lambda: d.run(qq, kv, return_lse=True))
        check(error_of(lambda: ops.run(hd, qq, kv, None)) == want, f"run, {what}")
        check(not launches(), f"run, {what}: launched")
    for what, o in {"out dtype": torch.empty(q.shape), "out shape": q[:5].clone()}.items():
        want = error_of(lambda: d.run(q, cache, out=o))
        check(error_of(lambda: ops.run_out(hd, q, cache, None, o, None)) == want,
              f"run_out, {what}")
    check(error_of(lambda: ops.run(10 ** 9, q, cache, None))[1].startswith(
        "no live wrapper has handle"), "an unknown handle")
    # Inputs that require grad: the Python kernel, whose outputs refuse
    # backward.
    qg = q.float().half().requires_grad_()
    (o, _), frames = python_frames(lambda: ops.run(hd, qg, cache, None))
    check(frames and o.requires_grad, "grad: the Python kernel")
    check("no autograd formula" in error_of(lambda: o.float().sum().backward())[1],
          "grad: backward refused")
    with torch.no_grad():
        _, frames = python_frames(lambda: ops.run(hd, qg, cache, None))
    check(not frames, "no_grad: the C++ kernel")
    launches()
    # A wrapper without a one-call run (ragged K/V) has no runner.
    r = cm.BatchPrefillWithRaggedKVCacheWrapper(torch_bytes(torch, 64 << 20))
    kv_indptr = np.array([0, 30, 30, 45], np.int32)
    r.plan(np.array([0, 4, 5, 9], np.int32), kv_indptr, 32, 8, 128, causal=True)
    hr = torch_ops.register(r)
    check(hr not in bridge.bound_runners(), "the ragged wrapper has no runner")
    kr, vr = torch.empty(45, 8, 128, dtype=torch.float16), torch.empty(45, 8, 128,
                                                                        dtype=torch.float16)
    qr = torch.empty(9, 32, 128, dtype=torch.float16)
    (o, lse), frames = python_frames(lambda: ops.run(hr, qr, kr, vr))
    check(frames, "ragged: the Python kernel")
    got = launches()
    o2, lse2 = r.run(qr, kr, vr, return_lse=True)
    same_launches(got, launches(), {o.data_ptr(): o2.data_ptr(),
                                    lse.data_ptr(): lse2.data_ptr()}, "ragged run")
    # reset_workspace_buffer() unbinds; plan() binds the new program; a dead
    # wrapper's runner goes with it.
    d.reset_workspace_buffer(torch_bytes(torch, 128 << 20))
    check(hd not in bridge.bound_runners(), "reset_workspace_buffer() unbinds")
    i32 = np.int32
    d.plan(np.array([0, 3, 3, 10], i32), np.arange(10, dtype=i32), np.array([5, 1, 16], i32),
           32, 8, 128, 16)
    check(hd in bridge.bound_runners(), "plan() binds again")
    q3 = torch.empty(3, 32, 128, dtype=torch.float16)
    (o, lse), frames = python_frames(lambda: ops.run(hd, q3, cache, None))
    check(not frames, "the replanned program's runner")
    got = launches()
    o2, lse2 = d.run(q3, cache, return_lse=True)
    same_launches(got, launches(), {o.data_ptr(): o2.data_ptr(),
                                    lse.data_ptr(): lse2.data_ptr()}, "replanned run")
    del d, w, p
    gc.collect()
    check(not bridge.bound_runners() or max(bridge.bound_runners()) < hd or
          hd not in bridge.bound_runners(), "a dead wrapper's runner is unbound")
    check_torch_merges(torch)
    print("OK torch ops")


def check_torch_merges(torch):
    """The merges' ops launch what the functions launch, in C++."""
    import cascade_mlir as cm
    from stand_in import check, launches
    ops = torch.ops.cascade_mlir
    L, H, D = 37, 4, 128
    va, vb = (torch.empty(L, H, D, dtype=torch.float16) for _ in range(2))
    sa, sb = (torch.empty(L, H) for _ in range(2))
    vs, ss = torch.empty(L, 3, H, D, dtype=torch.float16), torch.empty(L, 3, H)
    mask = torch.ones(2 * L, dtype=torch.bool)[::2]
    cm.merge_state(va, sa, vb, sb)  # loads the merge kernels (Python, once)
    launches()
    for name, op_call, call in (
            ("merge_state", lambda: ops.merge_state(va, sa, vb, sb),
             lambda: cm.merge_state(va, sa, vb, sb)),
            ("merge_states", lambda: ops.merge_states(vs, ss), lambda: cm.merge_states(vs, ss))):
        (v, s), frames = python_frames(op_call)
        check(not frames, f"{name}: the op ran Python: {frames}")
        got = launches()
        v2, s2 = call()
        same_launches(got, launches(), {v.data_ptr(): v2.data_ptr(),
                                        s.data_ptr(): s2.data_ptr()}, name)
        check((v.shape, v.dtype, s.shape, s.dtype) == (v2.shape, v2.dtype, s2.shape, s2.dtype),
              f"{name} outputs")
    for m in (None, mask):
        before = (va._version, sa._version)
        _, frames = python_frames(lambda: ops.merge_state_in_place(va, sa, vb, sb, m))
        check(not frames and (va._version, sa._version) == (before[0] + 1, before[1] + 1),
              f"merge_state_in_place: {frames}")
        got = launches()
        cm.merge_state_in_place(va, sa, vb, sb, mask=m)
        same_launches(got, launches(), {}, "merge_state_in_place")
    want = error_of(lambda: cm.merge_state(va, sa.half(), vb, sb))
    check(error_of(lambda: ops.merge_state(va, sa.half(), vb, sb)) == want, "merge error")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=500)
    ap.add_argument("--check", action="store_true",
                    help="check the merges' one-call path's launches first")
    ap.add_argument("--torch", action="store_true",
                    help="real torch and the torch bridge (the torch ops)")
    ap.add_argument("--budget-us", type=float, default=0,
                    help="fail if an entry point's host time exceeds this")
    args = ap.parse_args()
    if args.torch:
        torch, bridge = torch_setup()
        if args.check:
            check_torch_ops(torch, bridge)
        eps = torch_entry_points(torch)
    else:
        eps = entry_points()
        if args.check:
            check_fast_merges()
    worst = 0.0
    for name, fn in eps:
        fn()
        timed = getattr(fn, "timed", None)
        us = timed(lambda f: host_us(f, args.calls)) if timed else host_us(fn, args.calls)
        worst = max(worst, us)
        print(f"{name:40s} {us:7.2f} us/call")
    if args.budget_us and worst > args.budget_us:
        print(f"FAIL: {worst:.2f} us > budget {args.budget_us} us")
        return 1
    print("OK host_cost")
    return 0


if __name__ == "__main__":
    sys.exit(main())
