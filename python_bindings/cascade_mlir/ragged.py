"""`flashinfer.prefill`'s ragged-KV prefill wrapper over Cascade-MLIR:
ragged queries over contiguous ragged K/V (the prompt before it is paged).

K/V of [kv_indptr[-1], num_kv_heads, head_dim] run on the ragged form of
the prefill kernels: a page-size-1 pair pool without a page table (no copy;
the kernels compute a key's address from kv_indptr; _contiguous.py). V may
have a head_dim of its own (plan(..., head_dim_vo=), DeepSeek's 192 / 128)."""

from typing import Any, Dict, Optional, Union

import numpy as np

from ._contiguous import identity_table, token_pages
from ._frameworks import host_int32
from ._signatures import flashinfer_signature
from ._single import SingleLevelWrapper, reject, split_form
from ._unsupported import reject_multi_item_scoring
from .config import AttentionConfig, ScoreArgs
from .masks import check_no_custom_mask, request_masks

__all__ = ["BatchPrefillWithRaggedKVCacheWrapper"]


class BatchPrefillWithRaggedKVCacheWrapper(SingleLevelWrapper):
    """Batch prefill/append attention over ragged (contiguous) K/V: plan()
    once per step, run(q, k, v) per layer. `backend` and the JIT arguments
    are accepted and ignored. With use_cuda_graph, qo_indptr_buf and
    kv_indptr_buf are the fixed index buffers (batch size fixed by them)."""

    _decode = False
    _contiguous_kv = True

    def __init__(self, float_workspace_buffer: Any, kv_layout: str = "NHD",
                 use_cuda_graph: bool = False, qo_indptr_buf: Any = None,
                 kv_indptr_buf: Any = None, custom_mask_buf: Any = None,
                 mask_indptr_buf: Any = None, backend: str = "auto", jit_args: Any = None,
                 jit_kwargs: Any = None) -> None:
        if kv_layout not in ("NHD", "HND"):
            raise ValueError(f"kv_layout must be 'NHD' or 'HND', got {kv_layout!r}")
        check_no_custom_mask(custom_mask_buf, mask_indptr_buf, "custom_mask_buf")
        # The kernels see NHD token pages (HND input is transposed at run()).
        super().__init__(float_workspace_buffer, "NHD", use_cuda_graph,
                         {"qo_indptr": qo_indptr_buf, "kv_indptr": kv_indptr_buf})
        self._ragged_layout = kv_layout
        self._num_tokens = 0

    @flashinfer_signature("BatchPrefillWithRaggedKVCacheWrapper.plan")
    def plan(self, qo_indptr: Any, kv_indptr: Any, num_qo_heads: int, num_kv_heads: int,
             head_dim_qk: int, head_dim_vo: Optional[int] = None, custom_mask: Any = None,
             packed_custom_mask: Any = None, causal: bool = False,
             use_fp16_qk_reduction: bool = False, q_data_type: Any = "float16",
             kv_data_type: Any = None, non_blocking: bool = True,
             prefix_len_ptr: Any = None, token_pos_in_items_ptr: Any = None,
             token_pos_in_items_len: int = 0, max_item_len_ptr: Any = None,
             fixed_split_size: Optional[int] = None, disable_split_kv: bool = False, *,
             auto_cascade: Union[bool, Dict[str, float]] = False,
             score: ScoreArgs) -> None:
        """FlashInfer's plan() (its signature, _signatures.py: the score
        options arrive as `score`): request i has queries qo_indptr[i] ..
        qo_indptr[i+1] - 1 and keys kv_indptr[i] .. kv_indptr[i+1] - 1 of
        the K/V given to run(); `causal` aligns each request's queries with
        its last keys. `custom_mask` / `packed_custom_mask` (FlashInfer's
        layout) replace the causal mask (not in CUDA-graph mode, nor with
        auto_cascade); multi-item scoring is not supported (both:
        UnsupportedFeatureError)."""
        reject_multi_item_scoring(prefix_len_ptr, token_pos_in_items_ptr,
                                  token_pos_in_items_len, max_item_len_ptr)
        kp = host_int32(kv_indptr, "kv_indptr")
        if kp.size == 0:
            raise ValueError("plan(): kv_indptr must have batch_size + 1 >= 1 entries")
        if np.any(np.diff(kp) < 0) or kp[0] != 0:
            raise ValueError("plan(): kv_indptr must start at 0 and not decrease")
        qo = host_int32(qo_indptr, "qo_indptr")
        if qo.size != kp.size:
            raise ValueError(f"plan(): qo_indptr has {qo.size} entries, kv_indptr "
                             f"{kp.size}: they must agree (batch_size + 1)")
        mask = request_masks(custom_mask, packed_custom_mask, np.diff(qo), np.diff(kp))
        indices, last = identity_table(kp)
        self._num_tokens = int(kp[-1])
        options = self._plan_options(auto_cascade, fixed_split_size, disable_split_kv,
                                     mask)
        # One-token pages: the identity page table over the ragged K/V.
        cfg = AttentionConfig.make(
            q_dtype=q_data_type, kv_dtype=kv_data_type, head_dim=head_dim_qk,
            head_dim_vo=head_dim_vo, num_qo_heads=num_qo_heads,
            num_kv_heads=num_kv_heads, page_size=1, kv_layout=self._kv_layout,
            kv_form=split_form(head_dim_qk, head_dim_vo, "ragged"), **score)
        self._plan(cfg, qo, kp, indices, last, causal=causal, options=options,
                   custom_mask=mask)

    begin_forward = plan

    def run(self, q: Any, k: Any, v: Any, *args: Any, q_scale: Optional[float] = None,
            k_scale: Optional[float] = None, v_scale: Optional[float] = None,
            out: Any = None, lse: Any = None, return_lse: bool = False,
            enable_pdl: Optional[bool] = None, **planned: Any) -> Any:
        """Attention of q [qo_indptr[-1], num_qo_heads, head_dim_qk] over k
        [kv_indptr[-1], num_kv_heads, head_dim_qk] and v [kv_indptr[-1],
        num_kv_heads, head_dim_vo] (NHD; HND: [num_kv_heads, kv_indptr[-1],
        ...]); the output is [qo_indptr[-1], num_qo_heads, head_dim_vo].
        `planned`: score options repeated from plan()
        (config.RUN_SCORE_OPTIONS), checked against it."""
        if args:
            raise TypeError("run() takes q, k and v positionally; pass the rest by keyword")
        for name, value in (("q_scale", q_scale), ("k_scale", k_scale),
                            ("v_scale", v_scale)):
            reject(name, value)
        kv, n = token_pages(k, v, self._ragged_layout)
        if self._config is not None and n < self._num_tokens:
            raise ValueError(f"k and v hold {n} tokens; plan()'s kv_indptr[-1] is "
                             f"{self._num_tokens}")
        return self._run(q, kv, out, lse, return_lse, planned)

    @flashinfer_signature("BatchPrefillWithRaggedKVCacheWrapper.forward")
    def forward(self, q: Any, k: Any, v: Any, causal: bool = False,
                use_fp16_qk_reduction: bool = False, *, score: ScoreArgs) -> Any:
        """FlashInfer's deprecated forward(): sets `causal` and the score
        options it takes for this and later run() calls (until plan(); those
        not passed at their defaults, pos_encoding_mode excepted: plan()'s),
        then runs (SingleLevelWrapper._forward)."""
        return self._forward(False, q, (k, v), causal, score)

    # FlashInfer's ragged signature (q, k, v), not the paged one.
    def run_return_lse(self, q: Any, k: Any, v: Any,  # type: ignore[override]
                       *args: Any, **kwargs: Any) -> Any:
        """run(q, k, v, return_lse=True): (o, lse)."""
        return self.run(q, k, v, *args, return_lse=True, **kwargs)

    @flashinfer_signature("BatchPrefillWithRaggedKVCacheWrapper.forward_return_lse")
    def forward_return_lse(self, q: Any, k: Any, v: Any,  # type: ignore[override]
                           causal: bool = False, use_fp16_qk_reduction: bool = False, *,
                           score: ScoreArgs) -> Any:
        """forward() returning (o, lse)."""
        return self._forward(True, q, (k, v), causal, score)
