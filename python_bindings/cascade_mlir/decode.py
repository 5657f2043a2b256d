"""`flashinfer.decode`'s batch decode wrapper over Cascade-MLIR: one query
per request over a paged KV cache (see cascade.py for the conventions)."""

from typing import Any, Dict, Optional, Union

from ._signatures import flashinfer_signature
from ._single import SingleLevelWrapper, _is_one, reject
from .config import AttentionConfig, ScoreArgs

__all__ = ["BatchDecodeWithPagedKVCacheWrapper"]


class BatchDecodeWithPagedKVCacheWrapper(SingleLevelWrapper):
    """Batch decode over a paged KV cache: plan() once per step, run() per
    layer. Tensor-core use, backends and JIT arguments are chosen by the
    compiler (`use_tensor_cores`, `backend`, `jit_args` are accepted and
    ignored)."""

    _decode = True

    def __init__(self, float_workspace_buffer: Any, kv_layout: str = "NHD",
                 use_cuda_graph: bool = False, use_tensor_cores: bool = False,
                 paged_kv_indptr_buffer: Any = None, paged_kv_indices_buffer: Any = None,
                 paged_kv_last_page_len_buffer: Any = None, backend: str = "auto",
                 jit_args: Any = None) -> None:
        super().__init__(float_workspace_buffer, kv_layout, use_cuda_graph,
                         {"kv_indptr": paged_kv_indptr_buffer,
                          "kv_indices": paged_kv_indices_buffer,
                          "kv_last_page_len": paged_kv_last_page_len_buffer})

    @flashinfer_signature("BatchDecodeWithPagedKVCacheWrapper.plan")
    def plan(self, indptr: Any, indices: Any, last_page_len: Any, num_qo_heads: int,
             num_kv_heads: int, head_dim: int, page_size: int,
             q_data_type: Any = "float16", kv_data_type: Any = None, data_type: Any = None,
             non_blocking: bool = True, block_tables: Any = None, seq_lens: Any = None,
             fixed_split_size: Optional[int] = None, disable_split_kv: bool = False, *,
             auto_cascade: Union[bool, Dict[str, float]] = False,
             score: ScoreArgs) -> None:
        """FlashInfer's plan() (its signature, _signatures.py: the score
        options arrive as `score`). `auto_cascade=True` (keyword-only; or a dict
        of cost-model options, docs/auto-cascade.md) finds the page prefixes
        that adjacent requests share and runs them as the shared levels of a
        cascade; without worthwhile sharing the plan is the plain one.
        `auto_cascade_stats` reports what was found. `fixed_split_size`
        (pages; None = automatic) splits every request's KV into chunks of
        that many pages whatever the rest of the batch (batch-invariant);
        `disable_split_kv` never splits."""
        reject("block_tables", block_tables)
        reject("seq_lens", seq_lens)
        # As FlashInfer 0.5.3: data_type fills only the dtypes left unset
        # (q_data_type defaults to float16, so alone it sets the KV dtype).
        if data_type is not None:
            if q_data_type is None:
                q_data_type = data_type
            if kv_data_type is None:
                kv_data_type = data_type
        if q_data_type is None:
            q_data_type = "float16"
        options = self._plan_options(auto_cascade, fixed_split_size, disable_split_kv)
        cfg = AttentionConfig.make(
            q_dtype=q_data_type, kv_dtype=kv_data_type, head_dim=head_dim,
            num_qo_heads=num_qo_heads, num_kv_heads=num_kv_heads, page_size=page_size,
            kv_layout=self._kv_layout, **score)
        self._plan(cfg, None, indptr, indices, last_page_len, causal=False,
                   options=options)

    begin_forward = plan

    def run(self, q: Any, paged_kv_cache: Any, *args: Any, q_scale: Optional[float] = None,
            k_scale: Optional[float] = None, v_scale: Optional[float] = None,
            out: Any = None, lse: Any = None, return_lse: bool = False,
            enable_pdl: Optional[bool] = None, sinks: Any = None,
            q_len_per_req: Optional[int] = 1, **planned: Any) -> Any:
        """FlashInfer's run(); `planned`: the score options FlashInfer's
        run() repeats (config.RUN_SCORE_OPTIONS), checked against plan()'s."""
        if (self._fast_run is not None and not self._state_inputs and not args and not planned
                and _is_one(q_scale) and _is_one(k_scale) and _is_one(v_scale)
                and sinks is None and q_len_per_req == 1):
            return self._fast_run(q, paged_kv_cache, out, lse, return_lse)  # host cost
        reject("q_len_per_req", q_len_per_req, 1)
        return self._run_checked(q, paged_kv_cache, args, out, lse, return_lse, planned,
                                 q_scale=q_scale, k_scale=k_scale, v_scale=v_scale,
                                 state_inputs={"sinks": sinks})

    @flashinfer_signature("BatchDecodeWithPagedKVCacheWrapper.forward")
    def forward(self, q: Any, paged_kv_cache: Any, q_scale: Optional[float] = None,
                k_scale: Optional[float] = None, v_scale: Optional[float] = None, *,
                score: ScoreArgs) -> Any:
        """FlashInfer's deprecated forward(): sets the score options it
        takes for this and later run() calls (until plan(); those not passed
        at their defaults, pos_encoding_mode excepted: plan()'s), then runs
        (SingleLevelWrapper._forward)."""
        return self._forward(False, q, (paged_kv_cache,), False, score, q_scale=q_scale,
                             k_scale=k_scale, v_scale=v_scale)

    @flashinfer_signature("BatchDecodeWithPagedKVCacheWrapper.forward_return_lse")
    def forward_return_lse(self, q: Any, paged_kv_cache: Any,  # type: ignore[override]
                           q_scale: Optional[float] = None, k_scale: Optional[float] = None,
                           v_scale: Optional[float] = None, *, score: ScoreArgs) -> Any:
        """forward() returning (o, lse)."""
        return self._forward(True, q, (paged_kv_cache,), False, score, q_scale=q_scale,
                             k_scale=k_scale, v_scale=v_scale)
