"""The caller's array framework: where its tensors live, its current CUDA
stream, and how to allocate outputs with it (torch, cupy), plus host copies
of index arrays (torch, cupy, numpy, sequences)."""

from typing import Any, Dict, List

import numpy as np

from . import _runtime


class _Torch:
    name = "torch"

    def __init__(self, torch):
        self.torch = torch
        _runtime._register_torch(torch)

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
