"""`flashinfer.page` over Cascade-MLIR: the page utilities of a paged KV
cache, for torch, cupy and numpy arrays.

Each is a few vectorised array operations in the arrays' own framework (on
the GPU: a handful of kernel launches, no host synchronisation, no loop over
requests): `append_paged_kv_cache` is one gather of page ids and one scatter
per K and V, the data movement FlashInfer's append kernel does.
"""

from typing import Any, Tuple

import numpy as np

from ._frameworks import framework_of

__all__ = ["append_paged_kv_cache", "append_paged_mla_kv_cache",
           "get_batch_indices_positions", "get_seq_lens"]


def _is_torch(x: Any) -> bool:
    fw = framework_of(x)
    return fw is not None and fw.name == "torch"


def _xp(x: Any) -> Any:
    fw = framework_of(x)
    if fw is not None and fw.name == "cupy":
        import cupy
        return cupy
    return np


def _arange(n: int, like: Any) -> Any:
    if _is_torch(like):
        import torch
        return torch.arange(n, dtype=torch.int64, device=like.device)
    return _xp(like).arange(n, dtype=np.int64)


def _i64(x: Any, like: Any = None) -> Any:
    """x as int64 (torch: on `like`'s device when given)."""
    if _is_torch(x):
        import torch
        return x.to(device=x.device if like is None else like.device, dtype=torch.int64)
    return x.astype(np.int64)


def _i32(x: Any) -> Any:
    return x.int() if _is_torch(x) else x.astype(np.int32)


def get_seq_lens(kv_indptr: Any, kv_last_page_len: Any, page_size: int) -> Any:
    """The KV length of each request: (pages - 1) * page_size + last page
    length, 0 for a request without pages' contribution clamped as
    FlashInfer (max(pages - 1, 0) * page_size + kv_last_page_len)."""
    pages = kv_indptr[1:] - kv_indptr[:-1]
    return (pages - 1).clip(min=0) * page_size + kv_last_page_len


def get_batch_indices_positions(append_indptr: Any, seq_lens: Any, nnz: int
                                ) -> Tuple[Any, Any]:
    """For each of the `nnz` appended tokens (request i's are append_indptr[i]
    .. append_indptr[i+1] - 1): its request and its position in that
    request's KV after the append (seq_lens: the lengths after it; the
    appended tokens are the last). int32, on append_indptr's device."""
    if len(getattr(append_indptr, "shape", ())) != 1 or int(append_indptr.shape[0]) < 1:
        raise ValueError("append_indptr must be 1-D with batch_size + 1 >= 1 entries")
    if int(seq_lens.shape[0]) != int(append_indptr.shape[0]) - 1:
        raise ValueError(f"seq_lens has {int(seq_lens.shape[0])} entries, expected "
                         f"batch_size = {int(append_indptr.shape[0]) - 1}")
    ip = _i64(append_indptr)
    lens = _i64(seq_lens, ip if _is_torch(ip) else None)
    j = _arange(int(nnz), ip)
    if _is_torch(ip):
        import torch
        batch = torch.searchsorted(ip[1:].contiguous(), j, right=True)
    else:
        batch = _xp(ip).searchsorted(ip[1:], j, side="right")
    count = ip[1:] - ip[:-1]
    pos = j - ip[batch] + lens[batch] - count[batch]
    return _i32(batch), _i32(pos)


def _check_rows(first: str, rows: Any, others: Tuple[Tuple[str, Any], ...]) -> None:
    """ValueError unless every array of `others` has as many entries as
    `rows` (the appended tokens, named `first`)."""
    nnz = int(rows.shape[0])
    for name, x in others:
        if int(x.shape[0]) != nnz:
            raise ValueError(f"{name} has {int(x.shape[0])} entries, {first} {nnz}")


def _pages_and_slots(batch_indices: Any, positions: Any, kv_indices: Any, kv_indptr: Any,
                     page_size: int, cache: Any) -> Tuple[Any, Any]:
    """The page id and slot of each appended token (int64 arrays; torch: on
    the cache's device): page kv_indices[kv_indptr[b] + pos // page_size],
    slot pos % page_size."""
    b = _i64(batch_indices, cache if _is_torch(cache) else None)
    pos = _i64(positions, b if _is_torch(b) else None)
    like = b if _is_torch(b) else None
    page = _i64(kv_indices, like)[_i64(kv_indptr, like)[b] + pos // page_size]
    return page, pos % page_size


def append_paged_kv_cache(append_key: Any, append_value: Any, batch_indices: Any,
                          positions: Any, paged_kv_cache: Any, kv_indices: Any,
                          kv_indptr: Any, kv_last_page_len: Any,
                          kv_layout: str = "NHD") -> None:
    """Writes appended keys and values ([nnz, num_kv_heads, head_dim]) into
    the paged cache (a 5-D pool or a (k_cache, v_cache) pair, NHD or HND) at
    the pages and slots of their (request, position): page
    kv_indices[kv_indptr[b] + pos // page_size], slot pos % page_size."""
    if kv_layout not in ("NHD", "HND"):
        raise ValueError(f"kv_layout must be 'NHD' or 'HND', got {kv_layout!r}")
    pair = isinstance(paged_kv_cache, (tuple, list))
    if pair and len(paged_kv_cache) != 2:
        raise ValueError("paged_kv_cache must be one 5-D tensor or a (k_cache, v_cache) pair")
    k_cache, v_cache = (paged_kv_cache if pair
                        else (paged_kv_cache[:, 0], paged_kv_cache[:, 1]))
    if len(k_cache.shape) != 4:
        raise ValueError("paged_kv_cache must be [pages, 2, page_size, heads, dim] (NHD) / "
                         "[pages, 2, heads, page_size, dim] (HND), or a pair of 4-D "
                         f"caches; got a {len(k_cache.shape) + (0 if pair else 1)}-D one")
    page_size = int(k_cache.shape[2 if kv_layout == "HND" else 1])
    _check_rows("append_key", append_key, (("append_value", append_value),
                                           ("batch_indices", batch_indices),
                                           ("positions", positions)))
    page, slot = _pages_and_slots(batch_indices, positions, kv_indices, kv_indptr,
                                  page_size, k_cache)
    if kv_layout == "NHD":
        k_cache[page, slot] = append_key
        v_cache[page, slot] = append_value
    else:
        k_cache[page, :, slot] = append_key
        v_cache[page, :, slot] = append_value
    del kv_last_page_len  # implied by positions (FlashInfer's kernel reads it too)


def append_paged_mla_kv_cache(append_ckv: Any, append_kpe: Any, batch_indices: Any,
                              positions: Any, ckv_cache: Any, kpe_cache: Any,
                              kv_indices: Any, kv_indptr: Any, kv_last_page_len: Any) -> None:
    """Writes appended latent vectors ([nnz, head_dim_ckv]) and rotary keys
    ([nnz, head_dim_kpe]) into an MLA cache (ckv_cache [pages, page_size,
    head_dim_ckv], kpe_cache [pages, page_size, head_dim_kpe]; cascade_mlir.mla)
    at the page and slot of their (request, position), as
    append_paged_kv_cache does. Any head dims (FlashInfer's kernel: 512 / 64)."""
    for name, c in (("ckv_cache", ckv_cache), ("kpe_cache", kpe_cache)):
        if len(c.shape) != 3:
            raise ValueError(f"{name} must be [pages, page_size, dim], got {list(c.shape)}")
    if tuple(ckv_cache.shape[:2]) != tuple(kpe_cache.shape[:2]):
        raise ValueError(f"ckv_cache {list(ckv_cache.shape)} and kpe_cache "
                         f"{list(kpe_cache.shape)} must have the same pages and page_size")
    _check_rows("append_ckv", append_ckv, (("append_kpe", append_kpe),
                                           ("batch_indices", batch_indices),
                                           ("positions", positions)))
    page, slot = _pages_and_slots(batch_indices, positions, kv_indices, kv_indptr,
                                  int(ckv_cache.shape[1]), ckv_cache)
    ckv_cache[page, slot] = append_ckv
    kpe_cache[page, slot] = append_kpe
    del kv_last_page_len  # implied by positions, as for append_paged_kv_cache
