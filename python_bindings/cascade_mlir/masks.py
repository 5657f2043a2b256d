"""FlashInfer's bit-packed custom masks: `packbits` / `segment_packbits`
(numpy.packbits semantics, per segment for a batch) and the unpacking the
reference uses, for torch, cupy and numpy arrays.

A batch's custom mask is, per request i, a [qo_len_i, kv_len_i] bool matrix
(True: the query sees the key) flattened row-major and concatenated;
`segment_packbits(mask, mask_indptr, bitorder="little")` packs each
request's bits into whole bytes and returns the bytes' per-request offsets.
`request_masks` turns plan()'s `custom_mask` / `packed_custom_mask` into
that layout, which the float64 CPU reference and the tensor-core prefill
kernels take (the kernels read it as aligned 32-bit words from the int
workspace, where plan() uploads it). CUDA-graph mode does not take custom
masks (their size changes with every plan): plan() raises
UnsupportedFeatureError there.
"""

from typing import Any, List, Literal, Optional, Tuple

import numpy as np

from ._frameworks import framework_of, host_int32
from ._unsupported import UnsupportedFeatureError

__all__ = ["packbits", "segment_packbits", "unpack_segments", "request_masks",
           "paged_request_masks",
           "check_no_custom_mask", "check_custom_mask_supported"]


BitOrder = Literal["big", "little"]


def _check_bitorder(bitorder: str) -> BitOrder:
    if bitorder == "big":
        return "big"
    if bitorder == "little":
        return "little"
    raise ValueError(f"bitorder must be 'big' or 'little', got {bitorder!r}")


def _torch_pack(bits: Any, starts: Any, lengths: Any, out_starts: Any, total: int,
                bitorder: str) -> Any:
    """Bytes of `total` packed bytes: byte j of segment s holds bits
    starts[s] + 8 (j - out_starts[s]) + b, b < 8, of those < lengths[s]."""
    import torch
    dev = bits.device
    j = torch.arange(total, device=dev)
    seg = torch.searchsorted(out_starts[1:].contiguous(), j, right=True)
    first = starts[seg] + 8 * (j - out_starts[seg])
    end = starts[seg] + lengths[seg]
    b = torch.arange(8, device=dev)
    pos = first[:, None] + b[None, :]
    valid = pos < end[:, None]
    vals = torch.where(valid, bits[pos.clamp(max=max(bits.numel() - 1, 0))],
                       torch.zeros((), dtype=torch.bool, device=dev))
    weight = (2 ** (7 - b)) if bitorder == "big" else (2 ** b)
    return (vals.to(torch.int32) * weight[None, :].to(torch.int32)).sum(1).to(torch.uint8)


def packbits(x: Any, bitorder: str = "big") -> Any:
    """numpy.packbits of a 1-D binary array, in x's framework: uint8 of
    ceil(len / 8) bytes, the last padded with zeros."""
    order = _check_bitorder(bitorder)
    if len(getattr(x, "shape", ())) != 1:
        raise ValueError(f"packbits: x must be 1-D, got shape {list(getattr(x, 'shape', []))}")
    fw = framework_of(x)
    if fw is not None and fw.name == "torch":
        import torch
        n = int(x.shape[0])
        z = torch.zeros(1, dtype=torch.int64, device=x.device)
        return _torch_pack(x.reshape(-1) != 0, z, z + n,
                           torch.tensor([0, (n + 7) // 8], device=x.device),
                           (n + 7) // 8, order)
    if fw is not None and fw.name == "cupy":
        import cupy
        return cupy.packbits(x != 0, bitorder=order)
    return np.packbits(np.asarray(x) != 0, bitorder=order)


def segment_packbits(x: Any, indptr: Any, bitorder: str = "big") -> Tuple[Any, Any]:
    """packbits of each segment x[indptr[i]:indptr[i+1]] on its own (each
    starts a new byte): the concatenated bytes and their int32 indptr."""
    order = _check_bitorder(bitorder)
    ip = host_int32(indptr, "indptr")
    if ip.size == 0 or ip[0] != 0 or np.any(np.diff(ip) < 0):
        raise ValueError("segment_packbits: indptr must start at 0 and not decrease")
    if int(x.shape[0]) < int(ip[-1]):
        raise ValueError(f"segment_packbits: x has {int(x.shape[0])} entries, indptr[-1] "
                         f"= {int(ip[-1])}")
    lengths = np.diff(ip)
    new = np.zeros(ip.size, np.int32)
    new[1:] = np.cumsum((lengths + 7) // 8)
    fw = framework_of(x)
    if fw is not None and fw.name == "torch":
        import torch
        dev = x.device
        t = lambda a: torch.as_tensor(a, device=dev)  # noqa: E731
        y = _torch_pack(x.reshape(-1) != 0, t(ip[:-1].astype(np.int64)),
                        t(lengths.astype(np.int64)), t(new.astype(np.int64)),
                        int(new[-1]), order)
        return y, t(new)
    host = fw.to_host(x) if fw is not None else np.asarray(x)
    parts = [np.packbits(host[ip[i]:ip[i + 1]] != 0, bitorder=order)
             for i in range(ip.size - 1)]
    y = np.concatenate(parts).astype(np.uint8) if parts else np.zeros(0, np.uint8)
    if fw is not None and fw.name == "cupy":
        import cupy
        return cupy.asarray(y), cupy.asarray(new)
    return y, new


def unpack_segments(packed: Any, mask_indptr: Any, shapes: List[Tuple[int, int]],
                    bitorder: str = "little") -> List[np.ndarray]:
    """The [qo_len, kv_len] bool masks of a batch from its packed bytes and
    their per-request byte offsets (host copies), checking the sizes."""
    order = _check_bitorder(bitorder)
    fw = framework_of(packed)
    p = fw.to_host(packed) if fw is not None else np.asarray(packed)
    p = np.ascontiguousarray(p).reshape(-1).view(np.uint8)
    ip = host_int32(mask_indptr, "mask_indptr")
    if ip.size != len(shapes) + 1:
        raise ValueError(f"mask_indptr has {ip.size} entries, expected batch_size + 1 = "
                         f"{len(shapes) + 1}")
    masks = []
    for i, (rows, cols) in enumerate(shapes):
        need = (rows * cols + 7) // 8
        if ip[i + 1] - ip[i] != need or ip[i + 1] > p.size:
            raise ValueError(f"request {i}: its packed mask has {ip[i + 1] - ip[i]} bytes "
                             f"at {ip[i]}, expected {need} (qo_len {rows} x kv_len {cols} "
                             f"bits) within the {p.size} given")
        bits = np.unpackbits(p[ip[i]:ip[i + 1]], bitorder=order)[:rows * cols]
        masks.append(bits.reshape(rows, cols).astype(bool))
    return masks


_NOT_IN_GRAPHS = ("custom masks are not supported in CUDA-graph mode (docs/python.md, "
                  "FlashInfer parity: the mask's size changes with every plan; plan "
                  "a wrapper without use_cuda_graph)")


def check_no_custom_mask(custom_mask: Any, packed_custom_mask: Any, name: str) -> None:
    """The fixed mask buffers of CUDA-graph mode: a clear error."""
    if custom_mask is not None or packed_custom_mask is not None:
        raise UnsupportedFeatureError(f"{name}: {_NOT_IN_GRAPHS}")


def check_custom_mask_supported(cuda_graph: bool, auto_cascade: bool) -> None:
    if cuda_graph:
        raise UnsupportedFeatureError(f"custom_mask: {_NOT_IN_GRAPHS}")
    if auto_cascade:
        raise UnsupportedFeatureError("custom_mask with auto_cascade: a shared level "
                                      "has no per-request mask")


def paged_request_masks(custom_mask: Any, packed_custom_mask: Any, qo_indptr: Any,
                        kv_indptr: Any, kv_last_page_len: Any, page_size: int
                        ) -> Optional[Tuple[np.ndarray, np.ndarray]]:
    """request_masks for a paged batch (kv_len from its pages)."""
    if custom_mask is None and packed_custom_mask is None:
        return None
    qo = host_int32(qo_indptr, "qo_indptr")
    kp = host_int32(kv_indptr, "paged_kv_indptr")
    kl = host_int32(kv_last_page_len, "paged_kv_last_page_len")
    pages = np.diff(kp)
    if qo.size != kp.size or kl.size != pages.size:
        raise ValueError(f"qo_indptr ({qo.size}), paged_kv_indptr ({kp.size}) and "
                         f"paged_kv_last_page_len ({kl.size}) disagree on the batch size")
    kv_lens = np.where(pages > 0, (pages.astype(np.int64) - 1) * page_size + kl, 0)
    return request_masks(custom_mask, packed_custom_mask, np.diff(qo), kv_lens)


def request_masks(custom_mask: Any, packed_custom_mask: Any, qo_lens: np.ndarray,
                  kv_lens: np.ndarray) -> Optional[Tuple[np.ndarray, np.ndarray]]:
    """A batch's custom mask as FlashInfer's plan() takes it (`custom_mask`:
    the requests' [qo_len, kv_len] bool masks flattened and concatenated,
    or `packed_custom_mask`: their segment_packbits(..., "little") bytes) as
    host (packed bytes, byte offsets per request); None without a mask."""
    if custom_mask is None and packed_custom_mask is None:
        return None
    bits = qo_lens.astype(np.int64) * kv_lens.astype(np.int64)
    nbytes = (bits + 7) // 8
    mask_indptr = np.zeros(bits.size + 1, np.int64)
    mask_indptr[1:] = np.cumsum(nbytes)
    if packed_custom_mask is None:
        fw = framework_of(custom_mask)
        flat = (fw.to_host(custom_mask) if fw is not None
                else np.asarray(custom_mask)).reshape(-1)
        if flat.size != int(bits.sum()):
            raise ValueError(f"custom_mask has {flat.size} entries; the batch's "
                             f"sum(qo_len * kv_len) is {int(bits.sum())}")
        qk = np.zeros(bits.size + 1, np.int64)
        qk[1:] = np.cumsum(bits)
        packed, _ = segment_packbits(flat, qk, "little")
    else:
        fw = framework_of(packed_custom_mask)
        packed = (fw.to_host(packed_custom_mask) if fw is not None
                  else np.asarray(packed_custom_mask)).reshape(-1)
        if packed.dtype != np.uint8:
            raise TypeError(f"packed_custom_mask must be uint8, got {packed.dtype}")
        if packed.size < int(mask_indptr[-1]):
            raise ValueError(f"packed_custom_mask has {packed.size} bytes; the batch's "
                             f"masks need {int(mask_indptr[-1])} (per request "
                             "ceil(qo_len * kv_len / 8))")
    if mask_indptr[-1] > np.iinfo(np.int32).max:
        raise ValueError("custom mask larger than 2 GiB")
    return np.ascontiguousarray(packed, np.uint8), mask_indptr.astype(np.int32)
