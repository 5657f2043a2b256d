"""The deprecated shared-prefix wrappers of the cascade API
(cascade_mlir.cascade): BatchDecodeWithSharedPrefixPagedKVCacheWrapper and
BatchPrefillWithSharedPrefixPagedKVCacheWrapper, two-level cascades over a
contiguous shared prefix, on the GPU only.
"""

from typing import Any, Optional, Tuple

import numpy as np

from . import _gpu
from ._frameworks import framework_of, host_int32
from ._gpu import NotPlannedError
from .config import AttentionConfig, kv_scales
from .kernels import Group


def _paged_view(x: Any, name: str, page: int, hnd: bool) -> Tuple[Any, int]:
    """A contiguous shared prefix ([len, Hkv, D] NHD / [Hkv, len, D] HND) as
    a (k or v) page pool of `page`-token pages: a view when possible (NHD,
    len a multiple of the page size), else a padded copy (torch only)."""
    fw = framework_of(x)
    if fw is None or fw.cuda_ordinal(x) is None:
        raise ValueError(f"{name} must be a CUDA tensor")
    if len(x.shape) != 3:
        raise ValueError(f"{name} must be 3-D ([len, num_kv_heads, head_dim] for NHD, "
                         f"[num_kv_heads, len, head_dim] for HND), got {list(x.shape)}")
    length = x.shape[1] if hnd else x.shape[0]
    pages = -(-length // page)
    if not hnd and length % page == 0:
        return x.reshape(pages, page, x.shape[1], x.shape[2]), length
    if fw.name != "torch":
        raise TypeError(f"{name}: an HND shared prefix, or one whose length is not a "
                        "multiple of the page size, needs a torch tensor (it is copied "
                        "into pages)")
    import torch
    if hnd:
        h, _, d = x.shape
        padded = torch.zeros((h, pages * page, d), dtype=x.dtype, device=x.device)
        padded[:, :length] = x
        return padded.view(h, pages, page, d).permute(1, 0, 2, 3).contiguous(), length
    _, h, d = x.shape
    padded = torch.zeros((pages * page, h, d), dtype=x.dtype, device=x.device)
    padded[:length] = x
    return padded.view(pages, page, h, d), length


class _SharedPrefixBase:
    """Two levels: the contiguous shared prefix (k_shared, v_shared), read
    once by all queries, and each request's pages; planned when forward()
    first sees a prefix length (and again when it changes)."""

    _decode = True

    def __init__(self, float_workspace_buffer: Any, kv_layout: str = "NHD"):
        if kv_layout not in ("NHD", "HND"):
            raise ValueError(f"kv_layout must be 'NHD' or 'HND', got {kv_layout!r}")
        if _gpu.workspace_device(float_workspace_buffer) is None:
            raise ValueError("float_workspace_buffer must be a CUDA tensor: the "
                             "shared-prefix wrappers run on the GPU only")
        self._kv_layout = kv_layout
        self._engine = _gpu.Engine(float_workspace_buffer)
        self._unique: Optional[Tuple[Any, ...]] = None
        self._planned_for: Optional[Tuple[Any, ...]] = None
        self._dtype: Any = "float16"
        self._kv_dtype: Any = None

    def reset_workspace_buffer(self, float_workspace_buffer: Any,
                               int_workspace_buffer: Any = None) -> None:
        self._engine.reset_workspace_buffer(float_workspace_buffer, int_workspace_buffer)
        self._planned_for = None

    def _begin(self, qo: Any, kv_indptr: Any, kv_indices: Any, last: Any,
               num_qo_heads: int, num_kv_heads: int, head_dim: int, page_size: int,
               dtype: Any, kv_dtype: Any = None) -> None:
        kp = host_int32(kv_indptr, "paged_kv_indptr")
        ki = _gpu.host_kv_indices(kv_indices, kp, "paged_kv_indices")  # the used prefix
        kl = host_int32(last, "paged_kv_last_page_len")
        qo = np.arange(kp.size, dtype=np.int32) if qo is None else host_int32(qo, "qo_indptr")
        _gpu.check_csr(qo, kp, ki, kl, "the unique level", decode=self._decode)
        AttentionConfig.make(q_dtype=dtype, kv_dtype=kv_dtype, head_dim=head_dim,
                             num_qo_heads=num_qo_heads, num_kv_heads=num_kv_heads,
                             page_size=page_size,
                             kv_layout=self._kv_layout)  # checks the arguments now
        self._unique = (qo, kp, ki, kl, num_qo_heads, num_kv_heads, head_dim, page_size)
        self._dtype, self._kv_dtype = dtype, kv_dtype
        self._planned_for = None

    def end_forward(self) -> None:
        """Deprecated in FlashInfer; does nothing."""

    def _forward(self, q: Any, k_shared: Any, v_shared: Any, unique_kv_cache: Any,
                 causal: bool = False, sm_scale: Optional[float] = None,
                 rope_scale: Optional[float] = None, rope_theta: Optional[float] = None,
                 dtype: Any = None, k_scale: Optional[float] = None,
                 v_scale: Optional[float] = None) -> Any:
        if self._unique is None:
            raise NotPlannedError("forward() before begin_forward()")
        qo, kp, ki, kl, hq, hkv, d, page = self._unique
        hnd = self._kv_layout == "HND"
        k_pages, length = _paged_view(k_shared, "k_shared", page, hnd)
        v_pages, v_len = _paged_view(v_shared, "v_shared", page, hnd)
        if v_len != length:
            raise ValueError(f"k_shared covers {length} tokens but v_shared {v_len}")
        key = (length, bool(causal), sm_scale, rope_scale, rope_theta, dtype)
        if self._planned_for != key:
            pages = -(-length // page)
            rows = int(qo[-1])
            shared = _gpu.Level(np.array([0, rows], np.int32), np.array([0, pages], np.int32),
                                np.arange(pages, dtype=np.int32),
                                np.array([length - (pages - 1) * page if pages else 1], np.int32),
                                Group(decode=False), kv_slot=1)
            unique = _gpu.Level(qo, kp, ki, kl, Group(decode=self._decode,
                                                      causal=bool(causal) and not self._decode,
                                                      accumulate=True))
            cfg = AttentionConfig.make(q_dtype=dtype, kv_dtype=self._kv_dtype, head_dim=d,
                                       num_qo_heads=hq, num_kv_heads=hkv, page_size=page,
                                       kv_layout=self._kv_layout, sm_scale=sm_scale,
                                       rope_scale=rope_scale, rope_theta=rope_theta)
            self._engine.plan(cfg, [shared, unique])
            self._planned_for = key
        assert self._engine.cfg is not None
        ks, vs = kv_scales(self._engine.cfg, k_scale, v_scale)
        return self._engine.run(q, unique_kv_cache, kv_shared=(k_pages, v_pages),
                                k_scale=ks, v_scale=vs)


class BatchDecodeWithSharedPrefixPagedKVCacheWrapper(_SharedPrefixBase):
    """Deprecated in FlashInfer (use MultiLevelCascadeAttentionWrapper):
    batch decode over a contiguous shared prefix plus each request's pages."""

    _decode = True

    def begin_forward(self, unique_kv_indptr: Any, unique_kv_indices: Any,
                      unique_kv_last_page_len: Any, num_qo_heads: int, num_kv_heads: int,
                      head_dim: int, page_size: int, data_type: Any = "float16",
                      kv_data_type: Any = None) -> None:
        """kv_data_type (an extension; None: data_type): the dtype of the
        shared prefix and the pages, e.g. torch.float8_e4m3fn."""
        self._begin(None, unique_kv_indptr, unique_kv_indices, unique_kv_last_page_len,
                    num_qo_heads, num_kv_heads, head_dim, page_size, data_type, kv_data_type)

    def forward(self, q: Any, k_shared: Any, v_shared: Any, unique_kv_cache: Any,
                k_scale: Optional[float] = None, v_scale: Optional[float] = None) -> Any:
        return self._forward(q, k_shared, v_shared, unique_kv_cache, dtype=self._dtype,
                             k_scale=k_scale, v_scale=v_scale)


class BatchPrefillWithSharedPrefixPagedKVCacheWrapper(_SharedPrefixBase):
    """Deprecated in FlashInfer (use MultiLevelCascadeAttentionWrapper):
    batch prefill/append over a contiguous shared prefix (seen by every
    query, not causal) plus each request's pages (causal if asked)."""

    _decode = False

    def begin_forward(self, qo_indptr: Any, paged_kv_indptr: Any, paged_kv_indices: Any,
                      paged_kv_last_page_len: Any, num_qo_heads: int, num_kv_heads: int,
                      head_dim: int, page_size: int, kv_data_type: Any = None) -> None:
        """kv_data_type (an extension; None: q's dtype): the dtype of the
        shared prefix and the pages, e.g. torch.float8_e4m3fn."""
        self._begin(qo_indptr, paged_kv_indptr, paged_kv_indices, paged_kv_last_page_len,
                    num_qo_heads, num_kv_heads, head_dim, page_size, "float16", kv_data_type)

    def forward(self, q: Any, k_shared: Any, v_shared: Any, unique_kv_cache: Any,
                causal: bool = False,
                use_fp16_qk_reduction: bool = False, sm_scale: Optional[float] = None,
                rope_scale: Optional[float] = None,
                rope_theta: Optional[float] = None, k_scale: Optional[float] = None,
                v_scale: Optional[float] = None) -> Any:
        dtype = str(getattr(q, "dtype", "float16")).replace("torch.", "")
        return self._forward(q, k_shared, v_shared, unique_kv_cache, causal=causal,
                             sm_scale=sm_scale, rope_scale=rope_scale,
                             rope_theta=rope_theta, dtype=dtype, k_scale=k_scale,
                             v_scale=v_scale)
