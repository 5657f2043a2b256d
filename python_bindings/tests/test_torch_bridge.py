"""cascade_mlir._torch_bridge on CPU tensors: what it reads from a torch
tensor agrees field by field with what the runtime reads through torch's
Python API (every dtype the runtime knows; strided, sliced, expanded,
zero-size and 0-d tensors), what it allocates has the asked shape, strides,
dtype and device, and what it does not take (subclasses, sparse, other
devices, non-tensors) goes the Python way with the same answer or error.
The loader refuses a bridge built for another torch (and the runtime a
capsule of another ABI or torch) without calling into it.

The bridge is optional: these tests skip, saying why, where the package was
built without it (no torch with headers at build time), unless
CASCADE_EXPECT_TORCH_BRIDGE=1 (CI builds it: .ci/run), where they fail.
CUDA tensors: gpu/test_gpu_torch_bridge.py."""
import contextlib
import ctypes
import os
import re
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="torch is not installed: the bridge reads torch tensors")

from cascade_mlir import _frameworks, _runtime  # noqa: E402
from cascade_mlir.config import AttentionConfig  # noqa: E402

DTYPES = ["float16", "bfloat16", "float32", "float64", "int32", "int64", "uint8",
          "int8", "bool", "float8_e4m3fn", "float8_e5m2"]


def require_bridge():
    """The bridge in use, once torch is registered with the runtime as the
    package does it (on the first torch tensor it sees); skips the test
    without one, or fails it with CASCADE_EXPECT_TORCH_BRIDGE=1."""
    _frameworks.framework_of(torch.zeros(1))
    if _frameworks.TORCH_BRIDGE is None:
        why = "cascade_mlir._torch_bridge is " + _frameworks.TORCH_BRIDGE_STATUS
        if os.environ.get("CASCADE_EXPECT_TORCH_BRIDGE") == "1":
            pytest.fail(why + " (CASCADE_EXPECT_TORCH_BRIDGE=1)")
        pytest.skip(why)
    return _frameworks.TORCH_BRIDGE


@pytest.fixture
def bridge():
    return require_bridge()


@contextlib.contextmanager
def without_bridge():
    """The runtime with torch through Python, the bridge restored after."""
    _runtime._register_torch(torch, None)
    try:
        yield
    finally:
        if _frameworks.TORCH_BRIDGE is not None:
            _runtime._register_torch(torch, _frameworks.TORCH_BRIDGE.CAPSULE)


def layouts(dtype):
    """Tensors of one dtype in the layouts the probe distinguishes."""
    base = torch.arange(4 * 6 * 8).reshape(4, 6, 8).to(getattr(torch, dtype))
    return {
        "contiguous": base,
        "transposed": base.transpose(0, 2),
        "strided slice": base[:, ::2, 1:],
        "storage offset": base[2:, 3],
        "expanded": base[:, :1, :].expand(4, 5, 8),
        "size-1 odd stride": base.as_strided((4, 1, 8), (48, 99, 1)),
        "zero-size": base[:, :0],
        "zero-size offset": base[1:, 2:2],
        "0-d": base[1, 2, 3],
        "1-d": base.view(-1)[5:40],
        "8-d": base.reshape(2, 2, 1, 6, 1, 2, 2, 2),
    }


@pytest.mark.parametrize("dtype", DTYPES)
def test_probe_agrees_with_the_python_path(bridge, dtype):
    for what, t in layouts(dtype).items():
        fast = _runtime._probe(t, what)
        slow = _runtime._probe(t, what, bridge=False)
        assert fast.pop("bridged") and not slow.pop("bridged"), what
        assert fast == slow, (what, fast, slow)
        assert fast["dtype"] == dtype and fast["device"] == "cpu"
        assert fast["ptr"] == t.data_ptr() and fast["shape"] == list(t.shape), what


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")
def test_probe_leaves_what_it_does_not_take_to_python(bridge):
    class Sub(torch.Tensor):
        pass

    taken = {"parameter": torch.nn.Parameter(torch.zeros(2, 3)),
             "requires grad": torch.zeros(3, requires_grad=True)}
    for what, t in taken.items():
        assert _runtime._probe(t, what)["bridged"], what
    left = {"subclass": torch.zeros(3, 4).as_subclass(Sub),
            "meta": torch.zeros(3, device="meta"),
            "9-d": torch.zeros((1,) * 9),
            "complex": torch.zeros(3, dtype=torch.complex64)}
    for what, t in left.items():
        try:
            slow = _runtime._probe(t, what, bridge=False)
        except Exception as e:  # noqa: BLE001 - the same error both ways
            with pytest.raises(type(e), match=re.escape(str(e)[:40])):
                _runtime._probe(t, what)
            continue
        fast = _runtime._probe(t, what)
        assert fast.pop("bridged") == (what == "complex") and not slow.pop("bridged")
        assert fast == slow, what
    # Errors of torch itself come back as torch raises them.
    for t in (torch.zeros(3, 3).to_sparse(), torch.nested.nested_tensor(
            [torch.zeros(2), torch.zeros(3)])):
        with pytest.raises(RuntimeError) as slow:
            _runtime._probe(t, bridge=False)
        with pytest.raises(RuntimeError, match=re.escape(str(slow.value)[:30])):
            _runtime._probe(t)
    # Not a tensor: DLPack, or the runtime's TypeError.
    a = np.zeros((2, 3), np.float32)
    assert not _runtime._probe(a)["torch"]
    with pytest.raises(TypeError, match="x must be a torch tensor or support DLPack"):
        _runtime._probe([1, 2])


@pytest.mark.parametrize("dtype", DTYPES)
def test_allocations_have_the_asked_layout(bridge, dtype):
    for shape, strides in (((3, 4, 8), (32, 8, 1)), ((3, 4), (1, 3)), ((), ()),
                           ((0, 5), (5, 1)), ((2, 1, 3), (3, 7, 1))):
        t, ptr = _runtime._torch_empty_strided(list(shape), list(strides), dtype, -1)
        assert type(t) is torch.Tensor and t.dtype == getattr(torch, dtype)
        assert t.shape == shape and t.stride() == strides and t.device.type == "cpu"
        assert ptr == t.data_ptr() and not t.requires_grad
    for what, like in layouts(dtype).items():
        t, ptr = _runtime._torch_empty_like(like)
        want = torch.empty_like(like)
        assert (t.shape, t.stride(), t.dtype, t.device) == \
            (want.shape, want.stride(), want.dtype, want.device), what
        assert ptr == t.data_ptr(), what


def test_allocations_agree_with_the_python_path(bridge):
    like = torch.zeros(5, 4, 8, dtype=torch.bfloat16)[:, ::2]
    fast = _runtime._torch_empty_like(like)[0]
    with without_bridge():
        slow = _runtime._torch_empty_like(like)[0]
        slow_strided = _runtime._torch_empty_strided([3, 4], [1, 3], "float32", -1)[0]
    fast_strided = _runtime._torch_empty_strided([3, 4], [1, 3], "float32", -1)[0]
    for a, b in ((fast, slow), (fast_strided, slow_strided)):
        assert (a.shape, a.stride(), a.dtype, a.device) == \
            (b.shape, b.stride(), b.dtype, b.device)
    with pytest.raises(TypeError, match="a dtype torch does not have"):
        _runtime._torch_empty_strided([3], [1], "complex64", -1)


def test_checks_name_the_argument_with_the_bridge(bridge):
    """run()'s checks (here on host tensors, device -1) say the same with
    the bridge as through Python."""
    cfg = AttentionConfig(4, 2, 16, 4).as_dict()
    q = torch.zeros(3, 4, 16, dtype=torch.float16)
    kv = torch.zeros(6, 2, 4, 2, 16, dtype=torch.float16)
    bad = {"q dtype": (q.float(), kv, None, "q has dtype float32"),
           "q shape": (q[:2], kv, None, r"q has shape \[2, 4, 16\]"),
           "kv pages": (q, kv[:2], None, "has 2 pages but the plan reads page 5"),
           # A strided out is taken unless its heads overlap (head stride 8
           # < head_dim 16).
           "out strides": (q, kv, torch.zeros(128, dtype=torch.float16)
                           .as_strided((3, 4, 16), (16, 8, 1)),
                           "out has strides .*do not overlap")}
    _runtime._check_call(q, kv, torch.empty_like(q), None, cfg, 3, 5)
    for what, (qq, kk, out, msg) in bad.items():
        errors = []
        for ctx in (contextlib.nullcontext(), without_bridge()):
            with ctx, pytest.raises((TypeError, ValueError), match=msg) as e:
                _runtime._check_call(qq, kk, out, None, cfg, 3, 5)
            errors.append((type(e.value), str(e.value)))
        assert errors[0] == errors[1], what


def test_wrong_torch_version_is_refused(monkeypatch):
    """The loader compares the bridge's torch with the running one before it
    uses anything of the bridge (the wrong version is simulated)."""
    monkeypatch.delenv("CASCADE_MLIR_NO_TORCH_BRIDGE", raising=False)
    bridge, why = _frameworks.load_torch_bridge("0.0.0+not-this-torch")
    if bridge is None and why.startswith("not built"):
        pytest.skip(f"the torch bridge is {why}: no version to compare")
    assert bridge is None and "0.0.0+not-this-torch" in why, why
    assert "built for torch" in why, why


def test_missing_bridge_falls_back(monkeypatch):
    monkeypatch.delenv("CASCADE_MLIR_NO_TORCH_BRIDGE", raising=False)
    monkeypatch.setitem(sys.modules, "cascade_mlir._torch_bridge", None)
    bridge, why = _frameworks.load_torch_bridge(torch.__version__)
    assert bridge is None and "not built" in why, why


def _capsule(abi, size, version):
    """A capsule with the bridge's name holding a table whose function
    pointers are null: the runtime must refuse it before calling one."""
    class Table(ctypes.Structure):
        _fields_ = [("abi", ctypes.c_uint32), ("size", ctypes.c_uint32),
                    ("torch_version", ctypes.c_char_p)] + \
                   [(f, ctypes.c_void_p) for f in ("probe", "empty_like", "empty_strided")]
    table = Table(abi, size, version.encode(), None, None, None)
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    return table, new(ctypes.addressof(table), b"cascade_mlir._torch_bridge.v1", None)


def test_runtime_refuses_a_foreign_capsule(bridge):
    before = _runtime._torch_bridge_version()
    size = ctypes.sizeof(ctypes.c_void_p) * 4 + 8
    refused = {"another torch": (1, size, "0.0.0+not-this-torch", "built for torch 0.0.0"),
               "another ABI": (2, size, torch.__version__, "has ABI 2"),
               "a smaller table": (1, 8, torch.__version__, "has ABI 1")}
    for what, (abi, sz, version, msg) in refused.items():
        table, capsule = _capsule(abi, sz, version)
        with pytest.raises(ValueError, match=msg):
            _runtime._register_torch(torch, capsule)
        del table
        assert _runtime._torch_bridge_version() == before, what
    with pytest.raises(TypeError, match="capsule named cascade_mlir._torch_bridge.v1"):
        _runtime._register_torch(torch, object())
    x = torch.zeros(2, 3)[:, 1:]
    assert _runtime._probe(x)["bridged"]  # the real bridge still in use


def _status_in_subprocess(env_extra):
    code = ("import torch\nfrom cascade_mlir import _frameworks, _runtime\n"
            "_frameworks.framework_of(torch.zeros(1))\n"
            "print(_frameworks.TORCH_BRIDGE is None, _runtime._torch_bridge_version())\n"
            "print(_frameworks.TORCH_BRIDGE_STATUS)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), **env_extra)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def test_environment_variable_turns_it_off(bridge):
    off = _status_in_subprocess({"CASCADE_MLIR_NO_TORCH_BRIDGE": "1"})
    assert off[0] == "True None" and "CASCADE_MLIR_NO_TORCH_BRIDGE" in off[1], off
    on = _status_in_subprocess({"CASCADE_MLIR_NO_TORCH_BRIDGE": ""})
    assert on[0] == f"False {torch.__version__}" and "in use" in on[1], on


_CPU_KERNELS_SESSION = """
import re
import sys
import pytest
import torch
from cascade_mlir import torch_ops
print(torch_ops._register_cpp_kernels("CPU"))
for op in torch_ops.op_names():
    if op.endswith("shared_prefix_forward"):
        continue
    dump = torch._C._dispatch_dump(op)
    assert "CPU: registered at" in dump and "TorchBridge.cpp" in dump, dump
# Errors come back as the Python kernels raise them.
v, s = torch.randn(5, 4, 16).half(), torch.randn(5, 4)
for args in ((v[:3], s, v, s), (v, s, v, s[:, :2])):
    with pytest.raises(Exception) as want:
        torch_ops._PY_KERNELS["merge_state"](*args)
    with pytest.raises(type(want.value), match=re.escape(str(want.value)[:30])):
        torch.ops.cascade_mlir.merge_state(*args)
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", sys.argv[1]]))
"""


def test_cpp_kernels_through_the_cpu_key(bridge):
    """The bridge's C++ kernels of the torch ops (torch_ops registers them
    for CUDA) registered for CPU too, in a subprocess, so that they run
    here: host tensors are not the merges' fast path's, and the wrappers of
    test_torch_ops.py compute on the CPU reference (no runner), so every
    call crosses the kernel into its fallback, the op's Python kernel. The
    tests of test_torch_ops.py (opcheck, results, the autograd refusal,
    version bumps, fullgraph compile) pass through them, and errors are the
    Python kernels'. The fast paths on the stand-in CUDA driver:
    test_host_cost.py."""
    from cascade_mlir import torch_ops
    assert torch_ops.CPP_KERNELS.startswith("registered for CUDA"), torch_ops.CPP_KERNELS
    here = os.path.dirname(os.path.abspath(__file__))
    r = subprocess.run([sys.executable, "-c", _CPU_KERNELS_SESSION,
                        os.path.join(here, "test_torch_ops.py")],
                       env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "registered for CPU" in r.stdout and " passed" in r.stdout, r.stdout
