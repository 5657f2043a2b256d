"""`flashinfer.prefill`'s batch prefill/append wrapper over Cascade-MLIR:
ragged queries over a paged KV cache (see cascade.py for the conventions)."""

from typing import Any, Dict, Optional, Union

from ._signatures import flashinfer_signature
from ._single import SingleLevelWrapper, _is_one, reject, split_form
from ._unsupported import MULTI_ITEM_ARGS, reject_multi_item_scoring
from .config import AttentionConfig, ScoreArgs
from .masks import check_no_custom_mask, paged_request_masks

__all__ = ["BatchAttentionWithAttentionSinkWrapper", "BatchPrefillWithPagedKVCacheWrapper"]


class BatchPrefillWithPagedKVCacheWrapper(SingleLevelWrapper):
    """Batch prefill/append attention over a paged KV cache: plan() once per
    step, run() per layer. Custom masks (`custom_mask` / `packed_custom_mask`,
    FlashInfer's layout) replace the causal mask and run on the tensor-core
    prefill kernels (not in CUDA-graph mode, nor with auto_cascade:
    UnsupportedFeatureError); `backend` and the JIT arguments are accepted
    and ignored (the compiler picks the kernel)."""

    _decode = False

    def __init__(self, float_workspace_buffer: Any, kv_layout: str = "NHD",
                 use_cuda_graph: bool = False, qo_indptr_buf: Any = None,
                 paged_kv_indptr_buf: Any = None, paged_kv_indices_buf: Any = None,
                 paged_kv_last_page_len_buf: Any = None, custom_mask_buf: Any = None,
                 mask_indptr_buf: Any = None, backend: str = "auto", jit_args: Any = None,
                 jit_kwargs: Any = None) -> None:
        check_no_custom_mask(custom_mask_buf, mask_indptr_buf, "custom_mask_buf")
        super().__init__(float_workspace_buffer, kv_layout, use_cuda_graph,
                         {"qo_indptr": qo_indptr_buf, "kv_indptr": paged_kv_indptr_buf,
                          "kv_indices": paged_kv_indices_buf,
                          "kv_last_page_len": paged_kv_last_page_len_buf})

    @flashinfer_signature("BatchPrefillWithPagedKVCacheWrapper.plan")
    def plan(self, qo_indptr: Any, paged_kv_indptr: Any, paged_kv_indices: Any,
             paged_kv_last_page_len: Any, num_qo_heads: int, num_kv_heads: int,
             head_dim_qk: int, page_size: int, head_dim_vo: Optional[int] = None,
             custom_mask: Any = None, packed_custom_mask: Any = None,
             causal: bool = False, use_fp16_qk_reduction: bool = False,
             q_data_type: Any = "float16", kv_data_type: Any = None,
             non_blocking: bool = True, fixed_split_size: Optional[int] = None,
             disable_split_kv: bool = False, *,
             auto_cascade: Union[bool, Dict[str, float]] = False,
             score: ScoreArgs, **unsupported: Any) -> None:
        """FlashInfer's plan() (its signature, _signatures.py: the score
        options arrive as `score`). `auto_cascade=True` (keyword-only; or a dict
        of cost-model options, docs/auto-cascade.md) finds the page prefixes
        that adjacent requests share and runs them as the shared levels of a
        cascade (non-causal; `causal` masks the last level, and only pages
        that every query of a request sees are shared); without worthwhile
        sharing the plan is the plain one. `auto_cascade_stats` reports what
        was found. `fixed_split_size` (pages; None = automatic) splits every
        request's KV into chunks of that many pages whatever the rest of the
        batch (batch-invariant); `disable_split_kv` never splits."""
        mask = paged_request_masks(custom_mask, packed_custom_mask, qo_indptr,
                                   paged_kv_indptr, paged_kv_last_page_len, page_size)
        reject_multi_item_scoring(*(unsupported.pop(k, d) for k, d in MULTI_ITEM_ARGS))
        for name, value in unsupported.items():
            reject(name, value)
        options = self._plan_options(auto_cascade, fixed_split_size, disable_split_kv,
                                     mask)
        # head_dim_vo other than head_dim_qk (DeepSeek's 192 / 128): the
        # cache is a (k_cache, v_cache) pair, a 5-D pool cannot hold it.
        cfg = AttentionConfig.make(
            q_dtype=q_data_type, kv_dtype=kv_data_type, head_dim=head_dim_qk,
            head_dim_vo=head_dim_vo, num_qo_heads=num_qo_heads,
            num_kv_heads=num_kv_heads, page_size=page_size, kv_layout=self._kv_layout,
            kv_form=split_form(head_dim_qk, head_dim_vo, "pair"), **score)
        self._plan(cfg, qo_indptr, paged_kv_indptr, paged_kv_indices,
                   paged_kv_last_page_len, causal=causal, options=options,
                   custom_mask=mask)

    begin_forward = plan

    def run(self, q: Any, paged_kv_cache: Any, *args: Any, q_scale: Optional[float] = None,
            k_scale: Optional[float] = None, v_scale: Optional[float] = None,
            out: Any = None, lse: Any = None, return_lse: bool = False,
            enable_pdl: Optional[bool] = None, sinks: Any = None, **planned: Any) -> Any:
        """FlashInfer's run(); `planned`: the score options FlashInfer's
        run() repeats (config.RUN_SCORE_OPTIONS), checked against plan()'s."""
        if (self._fast_run is not None and not self._state_inputs and not args and not planned
                and _is_one(q_scale) and _is_one(k_scale) and _is_one(v_scale)
                and sinks is None):
            return self._fast_run(q, paged_kv_cache, out, lse, return_lse)  # host cost
        return self._run_checked(q, paged_kv_cache, args, out, lse, return_lse, planned,
                                 q_scale=q_scale, k_scale=k_scale, v_scale=v_scale,
                                 state_inputs={"sinks": sinks})

    @flashinfer_signature("BatchPrefillWithPagedKVCacheWrapper.forward")
    def forward(self, q: Any, paged_kv_cache: Any, causal: bool = False,
                use_fp16_qk_reduction: bool = False, k_scale: Optional[float] = None,
                v_scale: Optional[float] = None, *, score: ScoreArgs) -> Any:
        """FlashInfer's deprecated forward(): sets `causal` and the score
        options it takes for this and later run() calls (until plan(); those
        not passed at their defaults, pos_encoding_mode excepted: plan()'s),
        then runs (SingleLevelWrapper._forward)."""
        return self._forward(False, q, (paged_kv_cache,), causal, score, k_scale=k_scale,
                             v_scale=v_scale)

    @flashinfer_signature("BatchPrefillWithPagedKVCacheWrapper.forward_return_lse")
    def forward_return_lse(self, q: Any, paged_kv_cache: Any,  # type: ignore[override]
                           causal: bool = False, use_fp16_qk_reduction: bool = False,
                           k_scale: Optional[float] = None, v_scale: Optional[float] = None,
                           *, score: ScoreArgs) -> Any:
        """forward() returning (o, lse)."""
        return self._forward(True, q, (paged_kv_cache,), causal, score, k_scale=k_scale,
                             v_scale=v_scale)


class BatchAttentionWithAttentionSinkWrapper(BatchPrefillWithPagedKVCacheWrapper):
    """FlashInfer's batch attention with attention sinks (gpt-oss-class
    models): the paged prefill/append wrapper whose run() takes one float32
    sink logit per query head, `run(q, paged_kv_cache, sinks, sm_scale)`
    (FlashInfer passes them as the JIT variant's extra arguments) or
    `run(..., sinks=...)`. Each sink joins its head's softmax denominator
    (docs/semantics.md, "Attention sinks"); the returned lse includes it.
    The JIT-module arguments of the constructor (dtypes, head dims, score
    options, use_fp16_qk_reduction, backend) are accepted; plan() decides
    the configuration, as for the base wrapper.
    `sm_scale` given to run() must be plan()'s (the kernels are compiled
    for it)."""

    @flashinfer_signature("BatchAttentionWithAttentionSinkWrapper.__init__")
    def __init__(self, float_workspace_buffer: Any, kv_layout: str = "NHD",
                 use_cuda_graph: bool = False, qo_indptr_buf: Any = None,
                 paged_kv_indptr_buf: Any = None, paged_kv_indices_buf: Any = None,
                 paged_kv_last_page_len_buf: Any = None, custom_mask_buf: Any = None,
                 mask_indptr_buf: Any = None, backend: str = "auto",
                 use_fp16_qk_reduction: bool = False, q_data_type: Any = None,
                 kv_data_type: Any = None, head_dim_qk: int = 128, head_dim_vo: int = 128,
                 *, score: ScoreArgs) -> None:
        if head_dim_vo != head_dim_qk:
            raise ValueError(f"head_dim_vo={head_dim_vo} must equal head_dim_qk="
                             f"{head_dim_qk}")
        super().__init__(float_workspace_buffer, kv_layout, use_cuda_graph, qo_indptr_buf,
                         paged_kv_indptr_buf, paged_kv_indices_buf,
                         paged_kv_last_page_len_buf, custom_mask_buf, mask_indptr_buf,
                         backend)
        self._state_inputs = ("sinks",)  # plan() plans the kernels with sinks

    def run(self, q: Any, paged_kv_cache: Any, *args: Any, **kwargs: Any) -> Any:
        if len(args) > 2:
            raise TypeError("run() takes q, paged_kv_cache and at most sinks and "
                            "sm_scale positionally")
        if args:
            if kwargs.get("sinks") is not None:
                raise TypeError("sinks given twice (positionally and by keyword)")
            kwargs["sinks"] = args[0]
        if len(args) == 2 and self._config is not None:
            planned = self._config.effective_sm_scale
            if abs(float(args[1]) - planned) > 1e-6 * planned:
                raise ValueError(f"sm_scale={args[1]} differs from plan()'s {planned}: "
                                 "the kernels are compiled for the planned scale")
        if kwargs.get("sinks") is None:
            raise ValueError("run() needs the attention sinks ([num_qo_heads] float32)")
        return super().run(q, paged_kv_cache, **kwargs)

    # FlashInfer's sink wrapper inherits forward() from the paged wrapper,
    # which cannot pass the sinks: here they are run()'s.
    forward = run
    forward_return_lse = SingleLevelWrapper.forward_return_lse
