"""The stand-in CUDA device of the fake-driver checks (fake_cuda.c): the
driver's handle, a DLPack producer whose host arrays claim to live on
cuda:0 (`Dev`, registered as a cascade_mlir framework on import), and the
readers of the driver's record of launches (`launches`, `arg`, by the
parameter names of the bundles' manifests). Shared by fake_device_checks.py
and host_cost.py; CASCADE_CUDA_DRIVER names the compiled stand-in.
"""
import ctypes
import json
import os

import numpy as np

from cascade_mlir import _frameworks

FAKE = ctypes.CDLL(os.environ["CASCADE_CUDA_DRIVER"])
FAKE.fake_cuda_launch_name.restype = ctypes.c_char_p
FAKE.fake_cuda_launch_param.restype = ctypes.c_uint64
FAKE.fake_cuda_live_objects.restype = ctypes.c_long


# --- a DLPack producer whose arrays claim to live on cuda:0 --------------------

class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_CODES = {"f": 2, "i": 0, "u": 1, "b": 6}


def aligned(shape, dtype, fill=0):
    """A numpy array whose data is 256-byte aligned (like device memory)."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape)) * dtype.itemsize
    raw = np.zeros(n + 256, np.uint8)
    off = (-raw.ctypes.data) % 256
    a = raw[off:off + n].view(dtype).reshape(shape)
    a[...] = fill
    return a


class Dev:
    """An array "on cuda:0" (host memory the stand-in driver uses as device
    memory), exported through DLPack."""

    def __init__(self, a):
        self.a = a
        self.shape = a.shape
        self.dtype = a.dtype

    @property
    def ptr(self):
        return self.a.ctypes.data

    def __getitem__(self, i):
        return Dev(self.a[i])

    def reshape(self, *shape):
        return Dev(self.a.reshape(*shape))

    def swapaxes(self, a, b):
        return Dev(self.a.swapaxes(a, b))

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None):
        # DLPack: stream 0 is ambiguous and not allowed (1 = legacy default).
        if stream == 0:
            raise ValueError("__dlpack__(stream=0) violates the DLPack protocol")
        a = self.a
        code = 4 if a.dtype.name == "bfloat16" else _CODES[a.dtype.kind]
        shape = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
        strides = (ctypes.c_int64 * max(a.ndim, 1))(*(s // a.itemsize for s in a.strides))
        m = DLManagedTensor()
        m.dl_tensor = DLTensor(a.ctypes.data, DLDevice(2, 0), a.ndim,
                               DLDataType(code, a.itemsize * 8, 1), shape, strides, 0)
        self._keep = (m, shape, strides)
        return _capsule_new(ctypes.addressof(m), b"dltensor", None)


class DevFramework:
    name = "fake"

    def is_tensor(self, x):
        return isinstance(x, Dev)

    def cuda_ordinal(self, x):
        return 0

    def device_object(self, ordinal):
        return None

    def current_stream(self, ordinal):
        return 0

    def stream_for(self, x, ordinal):
        return 0

    def empty_bytes(self, nbytes, ordinal):
        return Dev(aligned((int(nbytes),), np.uint8))

    def empty_i32(self, n, ordinal):
        return Dev(aligned((int(n),), np.int32, -7))

    def empty_like(self, x):
        return Dev(aligned(x.shape, x.dtype, np.nan if x.dtype.kind == "f" else 0))

    def empty_f32(self, x, shape):
        return Dev(aligned(tuple(shape), np.float32, np.nan))

    def empty_shaped(self, x, shape):
        return Dev(aligned(tuple(shape), x.dtype, np.nan))

    def nbytes(self, x):
        return x.a.nbytes

    def to_host(self, x):
        return x.a.copy()


_frameworks.register_framework(DevFramework())


# --- reading the record of launches -------------------------------------------

def launches():
    out = []
    for i in range(FAKE.fake_cuda_num_launches()):
        out.append({"name": FAKE.fake_cuda_launch_name(i).decode(),
                    "grid": [FAKE.fake_cuda_launch_grid(i, d) for d in range(3)],
                    "params": [FAKE.fake_cuda_launch_param(i, p)
                               for p in range(FAKE.fake_cuda_launch_nparams(i))]})
    FAKE.fake_cuda_reset()
    return out


def manifest_params(name):
    """Parameter name -> first PTX slot of a kernel (from its bundle)."""
    for root in os.environ["CASCADE_MLIR_KERNEL_PATH"].split(os.pathsep):
        for chip in os.listdir(root):
            for key in os.listdir(os.path.join(root, chip)):
                manifest = os.path.join(root, chip, key, "manifest.json")
                if not os.path.isfile(manifest):  # a lock or temporary entry
                    continue
                with open(manifest) as f:
                    for k in json.load(f)["kernels"]:
                        if k["name"] == name:
                            slots, i = {}, 0
                            for p in k["params"]:
                                slots[p["name"]] = i
                                i += 5 if p["kind"] == "memref" else 1
                            return slots, k
    raise KeyError(name)


def arg(launch, name):
    """(pointer, element count) of a memref parameter, or a scalar."""
    slots, k = manifest_params(launch["name"])
    i = slots[name]
    kind = next(p["kind"] for p in k["params"] if p["name"] == name)
    if kind == "memref":
        assert launch["params"][i] == launch["params"][i + 1], "allocated != aligned"
        return launch["params"][i + 1], launch["params"][i + 3]
    return launch["params"][i]


def read_i32(ptr, n):
    return np.frombuffer(ctypes.string_at(ptr, 4 * n), np.int32)


def check(cond, what):
    if not cond:
        raise AssertionError(what)
