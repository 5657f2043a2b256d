"""An explicit cascade run as the plain batch it stands for, where a cascade
would not pay (docs/auto-cascade.md, "Explicit cascades").

A multi-level cascade computes, per request, attention over the
concatenation of the pages of every level that covers the request's rows.
Where that concatenation is itself a valid page list (every level but the
last ends on a full page) and the score options do not depend on a level's
own positions (no RoPE, ALiBi or window: each level places its queries at
its own `kv_len - qo_len + j`), one plain level over the concatenated pages
computes the same attention, with one launch (plus its split merge) instead
of a launch and a merge per level. Under causal masking (last level only)
it also needs every request's own tokens to number at least its query rows
less one, so that each query sees every shared token in the plain form too.

Whether the cascade pays is the automatic planner's question (one cost
model): makeAutoCascadePlan runs on the concatenated batch, and where it
keeps no shared level the plain level runs instead.
"""

from typing import Any, Dict, List, Optional

import dataclasses

import numpy as np

from . import _gpu, _runtime
from .config import AttentionConfig
from .kernels import state_inputs_of


def plain_level(levels: List["_gpu.Level"], cfg: AttentionConfig,
                causal: bool) -> Optional["_gpu.Level"]:
    """The one level that computes what `levels` (a multi-level cascade
    over one pool, last level per request) compute, or None where no plain
    level does (see the module's docstring)."""
    if len(levels) < 2 or cfg.pos_encoding != "none" or cfg.window_left >= 0:
        return None
    last = levels[-1]
    if any(lv.kv_slot != 0 or lv.custom_mask is not None for lv in levels):
        return None
    page = cfg.page_size
    qo = last.qo_indptr.astype(np.int64)
    begin, end = qo[:-1], qo[1:]
    b = begin.size
    counts, sources = [], []
    offset = 0
    for lv in levels:
        ip = lv.kv_indptr.astype(np.int64)
        if lv is last:
            entry = np.arange(b)
        else:
            lqo = lv.qo_indptr.astype(np.int64)
            entry = np.searchsorted(lqo, begin, side="right") - 1
            entry = np.minimum(entry, lqo.size - 2)
            if np.any((end > begin) & (end > lqo[entry + 1])):
                return None  # a level's entry splits a request's rows
            n_entry = ip[1:] - ip[:-1]
            if np.any((n_entry > 0) & (lv.kv_last_page_len != page)):
                return None  # a partial page before the last level's
        counts.append(ip[entry + 1] - ip[entry])
        sources.append(offset + ip[entry])
        offset += int(ip[-1])
    own = counts[-1]
    own_tokens = np.where(own > 0, (own - 1) * page + last.kv_last_page_len, 0)
    shared = sum(counts[:-1])
    if causal and not last.group.decode and \
            np.any((shared > 0) & (own_tokens < (end - begin) - 1)):
        return None  # a query would not see every shared token
    # Per request, its levels' page ranges in order: one gather.
    seg_len = np.stack(counts, axis=1).reshape(-1)
    seg_src = np.stack(sources, axis=1).reshape(-1)
    indptr = np.zeros(b + 1, dtype=np.int64)
    np.cumsum(seg_len.reshape(b, -1).sum(axis=1), out=indptr[1:])
    seg_out = np.concatenate(([0], np.cumsum(seg_len)[:-1]))
    total = int(seg_len.sum())
    gather = np.repeat(seg_src - seg_out, seg_len) + np.arange(total)
    ids = np.concatenate([lv.kv_indices[:int(lv.kv_indptr[-1])] for lv in levels])
    last_len = np.where(own > 0, last.kv_last_page_len, page).astype(np.int32)
    group = dataclasses.replace(last.group, accumulate=False,
                                state_inputs=state_inputs_of(lv.group for lv in levels))
    return _gpu.Level(last.qo_indptr, indptr.astype(np.int32),
                      ids[gather].astype(np.int32), last_len, group)


def auto_cascade(cfg: AttentionConfig, decode: bool, qo_indptr: np.ndarray,
                 kv_indptr: np.ndarray, kv_indices: np.ndarray,
                 kv_last_page_len: np.ndarray, causal: bool, **options: Any) -> Dict[str, Any]:
    """makeAutoCascadePlan (`_runtime.auto_cascade`) over one plain batch of
    configuration `cfg`; `options`: the planner's and plan()'s keywords."""
    return _runtime.auto_cascade(
        "decode" if decode else "prefill", kv_indptr, kv_last_page_len,
        qo_indptr=None if decode else qo_indptr, kv_indices=kv_indices,
        num_qo_heads=cfg.num_qo_heads, num_kv_heads=cfg.num_kv_heads,
        head_dim=cfg.head_dim, head_dim_vo=cfg.v_dim, page_size=cfg.page_size,
        num_sms=1, q_dtype=cfg.q_dtype, kv_dtype=cfg.kv_dtype, causal=causal, **options)


def cascade_pays(flat: "_gpu.Level", cfg: AttentionConfig, causal: bool,
                 max_levels: int) -> bool:
    """Whether the automatic planner, over the plain batch `flat`, keeps a
    shared level (the cost model of docs/auto-cascade.md)."""
    res = auto_cascade(cfg, flat.group.decode, flat.qo_indptr, flat.kv_indptr,
                       flat.kv_indices, flat.kv_last_page_len, causal, max_levels=max_levels)
    return len(res["levels"]) > 1
