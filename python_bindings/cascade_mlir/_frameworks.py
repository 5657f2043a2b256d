"""The caller's array framework: where its tensors live, its current CUDA
stream, and how to allocate outputs with it (torch, cupy), plus host copies
of index arrays (torch, cupy, numpy, sequences).

torch tensors are read and allocated by the runtime in C++ through the
optional extension `cascade_mlir._torch_bridge` when the package has one
built for the running torch (docs/python.md); otherwise through torch's
Python API. `TORCH_BRIDGE` is the bridge in use (None without one) and
`TORCH_BRIDGE_STATUS` says why; CASCADE_MLIR_NO_TORCH_BRIDGE=1 turns it off.
"""

import importlib
import os
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from . import _runtime

#: cascade_mlir._torch_bridge once torch is in use and the bridge loaded
#: (None: torch tensors go through torch's Python API).
TORCH_BRIDGE: Optional[Any] = None
#: Why TORCH_BRIDGE is what it is (for docs, tests and bug reports).
TORCH_BRIDGE_STATUS = "torch has not been used yet"


def load_torch_bridge(torch_version: str) -> Tuple[Optional[Any], str]:
    """The bridge module for a torch of version `torch_version`, or None,
    and why. The bridge is refused unless it was built for exactly that
    version (its functions read torch's C++ objects): nothing of it is
    called before that check, and nothing here raises."""
    if os.environ.get("CASCADE_MLIR_NO_TORCH_BRIDGE", "") not in ("", "0"):
        return None, "turned off (CASCADE_MLIR_NO_TORCH_BRIDGE is set)"
    try:
        bridge = importlib.import_module(__package__ + "._torch_bridge")
    except ImportError as e:
        if isinstance(e, ModuleNotFoundError) and e.name == __package__ + "._torch_bridge":
            return None, "not built (no torch was found when the package was built)"
        return None, f"cannot be loaded ({type(e).__name__}: {e})"
    built = getattr(bridge, "TORCH_VERSION", None)
    if built != str(torch_version):
        return None, (f"built for torch {built}, but torch {torch_version} is running "
                      "(rebuild the package against this torch)")
    return bridge, f"in use (built for torch {built})"


class _Torch:
    name = "torch"

    def __init__(self, torch):
        global TORCH_BRIDGE, TORCH_BRIDGE_STATUS
        self.torch = torch
        bridge, status = load_torch_bridge(torch.__version__)
        if bridge is not None:
            try:
                _runtime._register_torch(torch, bridge.CAPSULE)
            except (TypeError, ValueError) as e:  # the runtime's own checks
                bridge, status = None, f"refused by the runtime ({e})"
        if bridge is None:
            _runtime._register_torch(torch, None)
        TORCH_BRIDGE, TORCH_BRIDGE_STATUS = bridge, status

    def is_tensor(self, x):
        return isinstance(x, self.torch.Tensor)

    def cuda_ordinal(self, x):
        return x.get_device() if x.is_cuda else None

    def device_object(self, ordinal):
        return self.torch.device("cuda", ordinal)

    def stream_for(self, x, ordinal):
        return self.torch.cuda.current_stream(ordinal).cuda_stream

    def current_stream(self, ordinal):
        return self.torch.cuda.current_stream(ordinal).cuda_stream

    def empty_bytes(self, nbytes, ordinal):
        return self.torch.empty(int(nbytes), dtype=self.torch.uint8,
                                device=self.device_object(ordinal))

    def empty_i32(self, n, ordinal):
        return self.torch.empty(int(n), dtype=self.torch.int32,
                                device=self.device_object(ordinal))

    def empty_like(self, x):
        return self.torch.empty_like(x)

    def nbytes(self, x):
        return x.numel() * x.element_size()

    def empty_shaped(self, x, shape):
        return x.new_empty(tuple(shape))

    def empty_f32(self, x, shape):
        return self.torch.empty(tuple(shape), dtype=self.torch.float32, device=x.device)

    def to_host(self, x):
        return x.detach().cpu().numpy()


class _Cupy:
    name = "cupy"

    def __init__(self, cupy):
        self.cupy = cupy

    def is_tensor(self, x):
        return isinstance(x, self.cupy.ndarray)

    def cuda_ordinal(self, x):
        return x.device.id

    def device_object(self, ordinal):
        return self.cupy.cuda.Device(ordinal)

    def stream_for(self, x, ordinal):
        with self.cupy.cuda.Device(ordinal):
            return self.cupy.cuda.get_current_stream().ptr

    def current_stream(self, ordinal):
        with self.cupy.cuda.Device(ordinal):
            return self.cupy.cuda.get_current_stream().ptr

    def empty_bytes(self, nbytes, ordinal):
        with self.cupy.cuda.Device(ordinal):
            return self.cupy.empty(int(nbytes), dtype=self.cupy.uint8)

    def empty_i32(self, n, ordinal):
        with self.cupy.cuda.Device(ordinal):
            return self.cupy.empty(int(n), dtype=self.cupy.int32)

    def empty_like(self, x):
        with x.device:
            return self.cupy.empty_like(x)

    def nbytes(self, x):
        return x.nbytes

    def empty_shaped(self, x, shape):
        with x.device:
            return self.cupy.empty(tuple(shape), dtype=x.dtype)

    def empty_f32(self, x, shape):
        with x.device:
            return self.cupy.empty(tuple(shape), dtype=self.cupy.float32)

    def to_host(self, x):
        return self.cupy.asnumpy(x)


_adapters: Dict[str, Any] = {}
_registered: List[Any] = []


def register_framework(adapter: Any) -> None:
    """Adds the adapter of another array framework (the interface of _Torch:
    is_tensor, cuda_ordinal, current_stream, stream_for, empty_bytes,
    empty_like, empty_shaped, empty_f32, nbytes, to_host, device_object).
    Its arrays must support DLPack."""
    _registered.insert(0, adapter)


def framework_of(x: Any) -> Any:
    """The adapter of x's framework, or None (numpy, lists, unknown)."""
    for adapter in _registered:
        if adapter.is_tensor(x):
            return adapter
    mod = type(x).__module__.split(".")[0]
    if mod not in ("torch", "cupy", "cupy_backends"):
        return None
    mod = "cupy" if mod.startswith("cupy") else mod
    if mod not in _adapters:
        if mod == "torch":
            import torch
            _adapters[mod] = _Torch(torch)
        else:
            import cupy
            _adapters[mod] = _Cupy(cupy)
    adapter = _adapters[mod]
    return adapter if adapter.is_tensor(x) else None


def is_cuda(x: Any) -> bool:
    fw = framework_of(x)
    return fw is not None and fw.cuda_ordinal(x) is not None


def host_int32(x: Any, name: str) -> np.ndarray:
    """A 1-D int32 host copy of an index array (a device tensor is copied
    to the host: plan() is a synchronisation point, as in FlashInfer)."""
    fw = framework_of(x)
    a = fw.to_host(x) if fw is not None else np.asarray(x)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {list(a.shape)}")
    if a.size and a.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, got {a.dtype}")
    if a.size and (a.max() > np.iinfo(np.int32).max or a.min() < np.iinfo(np.int32).min):
        raise ValueError(f"{name} has values outside int32")
    return np.ascontiguousarray(a, dtype=np.int32)
