"""FlashInfer 0.5.3's signatures of the entry points that take score options.

FlashInfer's plan() methods and single-request functions list the score
options (config.SCORE_OPTIONS: pos_encoding_mode, window_left,
logits_soft_cap, sm_scale, rope_scale, rope_theta) between their other
parameters, in an order that differs from entry point to entry point, and
callers pass some of them positionally. A wrapper here declares only its own
parameters and takes the score options as one keyword, `score` (a
config.ScoreArgs dict, handed whole to AttentionConfig.make); the decorator
`flashinfer_signature` gives it FlashInfer's full signature (positional
order, defaults, `inspect.signature` / `help()`), from the table below. So a
new score option is a line in config.SCORE_OPTIONS and a name in the tables
of the entry points that take it, not a parameter in every wrapper.

A name in a table that is neither the function's parameter nor a score
option is one of FlashInfer's parameters the package accepts only at its
default: it takes FlashInfer's default and reaches the function's `**kwargs` (which
then rejects it with a named limitation, _unsupported.py).
"""

import functools
import inspect
from typing import Any, Callable, Dict, Tuple, TypeVar

from .config import SCORE_OPTIONS

__all__ = ["flashinfer_signature", "SIGNATURES"]

_DECODE_PLAN = ("indptr", "indices", "last_page_len", "num_qo_heads", "num_kv_heads",
                "head_dim", "page_size", "pos_encoding_mode", "window_left",
                "logits_soft_cap", "q_data_type", "kv_data_type", "data_type", "sm_scale",
                "rope_scale", "rope_theta", "non_blocking")

#: The deprecated forward() / forward_return_lse() (one signature each pair).
_DECODE_FORWARD = ("q", "paged_kv_cache", "pos_encoding_mode", "q_scale", "k_scale",
                   "v_scale", "window_left", "logits_soft_cap", "sm_scale", "rope_scale",
                   "rope_theta")
_PREFILL_FORWARD = ("q", "paged_kv_cache", "causal", "pos_encoding_mode",
                    "use_fp16_qk_reduction", "k_scale", "v_scale", "window_left",
                    "logits_soft_cap", "sm_scale", "rope_scale", "rope_theta")
_RAGGED_FORWARD = ("q", "k", "v", "causal", "pos_encoding_mode", "use_fp16_qk_reduction",
                   "window_left", "logits_soft_cap", "sm_scale", "rope_scale", "rope_theta")

#: Parameter names in FlashInfer 0.5.3's order (after `self`), per entry point.
SIGNATURES: Dict[str, Tuple[str, ...]] = {
    "BatchDecodeWithPagedKVCacheWrapper.forward": _DECODE_FORWARD,
    "BatchDecodeWithPagedKVCacheWrapper.forward_return_lse": _DECODE_FORWARD,
    "BatchPrefillWithPagedKVCacheWrapper.forward": _PREFILL_FORWARD,
    "BatchPrefillWithPagedKVCacheWrapper.forward_return_lse": _PREFILL_FORWARD,
    "BatchPrefillWithRaggedKVCacheWrapper.forward": _RAGGED_FORWARD,
    "BatchPrefillWithRaggedKVCacheWrapper.forward_return_lse": _RAGGED_FORWARD,
    "BatchDecodeWithPagedKVCacheWrapper.plan": _DECODE_PLAN + (
        "block_tables", "seq_lens", "fixed_split_size", "disable_split_kv"),
    "fast_decode_plan": _DECODE_PLAN + (
        "fixed_split_size", "disable_split_kv", "global_override_indptr_cpu"),
    "BatchPrefillWithPagedKVCacheWrapper.plan": (
        "qo_indptr", "paged_kv_indptr", "paged_kv_indices", "paged_kv_last_page_len",
        "num_qo_heads", "num_kv_heads", "head_dim_qk", "page_size", "head_dim_vo",
        "custom_mask", "packed_custom_mask", "causal", "pos_encoding_mode",
        "use_fp16_qk_reduction", "sm_scale", "window_left", "logits_soft_cap",
        "rope_scale", "rope_theta", "q_data_type", "kv_data_type", "non_blocking",
        "prefix_len_ptr", "token_pos_in_items_ptr", "token_pos_in_items_len",
        "max_item_len_ptr", "seq_lens", "seq_lens_q", "block_tables",
        "max_token_per_sequence", "max_sequence_kv", "fixed_split_size",
        "disable_split_kv"),
    "BatchPrefillWithRaggedKVCacheWrapper.plan": (
        "qo_indptr", "kv_indptr", "num_qo_heads", "num_kv_heads", "head_dim_qk",
        "head_dim_vo", "custom_mask", "packed_custom_mask", "causal", "pos_encoding_mode",
        "use_fp16_qk_reduction", "window_left", "logits_soft_cap", "sm_scale",
        "rope_scale", "rope_theta", "q_data_type", "kv_data_type", "non_blocking",
        "prefix_len_ptr", "token_pos_in_items_ptr", "token_pos_in_items_len",
        "max_item_len_ptr", "fixed_split_size", "disable_split_kv"),
    "BatchAttentionWithAttentionSinkWrapper.__init__": (
        "float_workspace_buffer", "kv_layout", "use_cuda_graph", "qo_indptr_buf",
        "paged_kv_indptr_buf", "paged_kv_indices_buf", "paged_kv_last_page_len_buf",
        "custom_mask_buf", "mask_indptr_buf", "backend", "pos_encoding_mode",
        "use_fp16_qk_reduction", "q_data_type", "kv_data_type", "head_dim_qk",
        "head_dim_vo", "window_left"),
    "MultiLevelCascadeAttentionWrapper.plan": (
        "qo_indptr_arr", "paged_kv_indptr_arr", "paged_kv_indices_arr",
        "paged_kv_last_page_len", "num_qo_heads", "num_kv_heads", "head_dim", "page_size",
        "causal", "pos_encoding_mode", "use_fp16_qk_reduction", "sm_scale", "window_left",
        "logits_soft_cap", "rope_scale", "rope_theta", "q_data_type", "kv_data_type"),
    "single_decode_with_kv_cache": (
        "q", "k", "v", "kv_layout", "pos_encoding_mode", "use_tensor_cores", "q_scale",
        "k_scale", "v_scale", "window_left", "logits_soft_cap", "sm_scale", "rope_scale",
        "rope_theta", "return_lse"),
    "single_prefill_with_kv_cache": (
        "q", "k", "v", "scale_q", "scale_k", "scale_v", "o_dtype", "custom_mask",
        "packed_custom_mask", "causal", "kv_layout", "pos_encoding_mode",
        "use_fp16_qk_reduction", "sm_scale", "window_left", "logits_soft_cap",
        "rope_scale", "rope_theta", "backend", "return_lse"),
}

#: FlashInfer's defaults of its parameters the package takes only at their
#: defaults, where not None.
_OTHER_DEFAULTS: Dict[str, Any] = {"token_pos_in_items_len": 0}

F = TypeVar("F", bound=Callable[..., Any])
_P = inspect.Parameter


def _flashinfer_parameters(entry: str, own: inspect.Signature) -> Tuple[
        list, str]:
    """FlashInfer's parameter list of `entry` with the function's own
    parameters and defaults in place, and the name of the function's
    `**kwargs` ('' without)."""
    order = SIGNATURES[entry]
    params = list(own.parameters.values())
    var_kw = next((p.name for p in params if p.kind is _P.VAR_KEYWORD), "")
    if "score" not in own.parameters or own.parameters["score"].kind is not _P.KEYWORD_ONLY:
        raise TypeError(f"{entry}: the function must take a keyword-only `score`")
    named = [p for p in params if p.kind is _P.POSITIONAL_OR_KEYWORD]
    lead = [p for p in named if p.name == "self"]
    missing = [p.name for p in named if p.name != "self" and p.name not in order]
    if missing:
        raise TypeError(f"{entry}: {missing} are not FlashInfer's parameters")
    out = list(lead)
    for name in order:
        if name in own.parameters:
            p = own.parameters[name]
            out.append(p.replace(kind=_P.POSITIONAL_OR_KEYWORD))
        elif name in SCORE_OPTIONS:
            out.append(_P(name, _P.POSITIONAL_OR_KEYWORD, default=SCORE_OPTIONS[name]))
        elif var_kw:
            out.append(_P(name, _P.POSITIONAL_OR_KEYWORD,
                          default=_OTHER_DEFAULTS.get(name)))
        else:
            raise TypeError(f"{entry}: FlashInfer's {name!r} has no place in the function")
    out += [p for p in params if p.kind is _P.KEYWORD_ONLY and p.name != "score"]
    if var_kw:
        out.append(own.parameters[var_kw])
    return out, var_kw


def flashinfer_signature(entry: str) -> Callable[[F], F]:
    """Gives the decorated function FlashInfer's signature of `entry`
    (SIGNATURES): it is called with its own parameters by keyword, the
    score options in one dict `score` (those the caller left out at their
    FlashInfer defaults), and FlashInfer's other parameters that it does not
    declare in its `**kwargs`."""

    def wrap(fn: F) -> F:
        params, var_kw = _flashinfer_parameters(entry, inspect.signature(fn))
        sig = inspect.Signature(params, return_annotation=inspect.signature(fn)
                                .return_annotation)
        scores = tuple(n for n in SCORE_OPTIONS if n in sig.parameters)
        own = set(inspect.signature(fn).parameters)

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            bound = sig.bind(*args, **kwargs)
            given = bound.arguments
            score = {n: given.pop(n) for n in scores if n in given}
            rest: Dict[str, Any] = dict(given.pop(var_kw, {})) if var_kw else {}
            for name in [n for n in given if n not in own]:
                rest[name] = given.pop(name)
            return fn(**given, **rest, score={n: score.get(n, SCORE_OPTIONS[n])
                                              for n in scores})

        call.__signature__ = sig  # type: ignore[attr-defined]
        return call  # type: ignore[return-value]

    return wrap
