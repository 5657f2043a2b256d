"""Contiguous (ragged) K/V as the paged kernels see it: every token its own
page of a page-size-1 (k, v) pair pool, whose page table is the identity.

A contiguous K of [tokens, num_kv_heads, head_dim] (NHD) reshaped to
[tokens, 1, num_kv_heads, head_dim] is, without a copy, a pair-form pool of
one-token pages; request i's pages are kv_indptr[i] .. kv_indptr[i+1] - 1.
The ragged wrapper runs the kernels' ragged form (kv_form "ragged": no
kv_indices, so a key's page is kv_indptr[i] + its position, computed, not
loaded); the single-request functions and automatic cascades over ragged
K/V pass the identity table below to the paged (pair) kernels, which look
up the page of every key row they load. HND input ([num_kv_heads, tokens,
head_dim]) and views (K and V sliced from a packed QKV projection) stay
views: the ragged kernels take K's and V's token and head strides
(kv_stride_n / kv_stride_h); run() makes contiguous copies, counted in
`program.copy_fallbacks`, only for kernels with a page table.
"""

from typing import Any, Tuple

import numpy as np


def nhd(x: Any, kv_layout: str, name: str) -> Any:
    """A 3-D K or V as an NHD view ([tokens, heads, dim]); HND input
    ([heads, tokens, dim]) is its transposed view (no copy)."""
    if len(getattr(x, "shape", ())) != 3:
        raise ValueError(f"{name} must be 3-D ([tokens, num_kv_heads, head_dim] for NHD, "
                         f"[num_kv_heads, tokens, head_dim] for HND), got "
                         f"{list(getattr(x, 'shape', []))}")
    if kv_layout == "HND":
        return x.swapaxes(0, 1)
    return x


def token_pages(k: Any, v: Any, kv_layout: str) -> Tuple[Tuple[Any, Any], int]:
    """(k, v) as a page-size-1 NHD pair pool (views of k and v: a new axis
    of one token a page) and the number of tokens. k and v agree in tokens
    and heads; their head_dims may differ (head_dim_qk and head_dim_vo,
    which the plan checks)."""
    k, v = nhd(k, kv_layout, "k"), nhd(v, kv_layout, "v")
    if tuple(k.shape[:2]) != tuple(v.shape[:2]):
        raise ValueError(f"k has shape {list(k.shape)} but v {list(v.shape)}: they must "
                         f"agree in tokens and heads ({kv_layout}; only their head_dims, "
                         "head_dim_qk and head_dim_vo, may differ)")
    return (k[:, None], v[:, None]), int(k.shape[0])


def identity_table(kv_indptr: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """kv_indices (one page per token, in order) and kv_last_page_len (1)
    of a ragged batch with token offsets kv_indptr."""
    n = int(kv_indptr[-1]) if kv_indptr.size else 0
    return np.arange(n, dtype=np.int32), np.ones(max(kv_indptr.size - 1, 0), np.int32)

