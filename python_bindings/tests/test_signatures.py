"""The score options as one unit: FlashInfer's signatures (_signatures.py)
route them, positional or by keyword, into AttentionConfig; run() checks
the ones it repeats. CPU only (the wrappers plan on the host without a
GPU)."""

import inspect

import numpy as np
import pytest

import cascade_mlir as cm
from cascade_mlir import _signatures
from cascade_mlir.config import SCORE_OPTIONS, AttentionConfig

HQ, HKV, D, PAGE = 8, 2, 64, 4

ENTRY_POINTS = {
    "BatchDecodeWithPagedKVCacheWrapper.plan": cm.BatchDecodeWithPagedKVCacheWrapper.plan,
    "fast_decode_plan": cm.fast_decode_plan,
    "BatchPrefillWithPagedKVCacheWrapper.plan": cm.BatchPrefillWithPagedKVCacheWrapper.plan,
    "BatchPrefillWithRaggedKVCacheWrapper.plan":
        cm.BatchPrefillWithRaggedKVCacheWrapper.plan,
    "BatchAttentionWithAttentionSinkWrapper.__init__":
        cm.BatchAttentionWithAttentionSinkWrapper.__init__,
    "MultiLevelCascadeAttentionWrapper.plan": cm.MultiLevelCascadeAttentionWrapper.plan,
    "single_decode_with_kv_cache": cm.single_decode_with_kv_cache,
    "single_prefill_with_kv_cache": cm.single_prefill_with_kv_cache,
    **{f"{cls.__name__}.{name}": getattr(cls, name)
       for cls in (cm.BatchDecodeWithPagedKVCacheWrapper,
                   cm.BatchPrefillWithPagedKVCacheWrapper,
                   cm.BatchPrefillWithRaggedKVCacheWrapper)
       for name in ("forward", "forward_return_lse")},
}


def batch():
    kp = np.array([0, 2, 5], np.int32)
    ki = np.arange(5, dtype=np.int32)
    kl = np.array([3, PAGE], np.int32)
    return kp, ki, kl


def test_every_table_entry_is_an_entry_point():
    assert set(ENTRY_POINTS) == set(_signatures.SIGNATURES)


@pytest.mark.parametrize("entry", sorted(_signatures.SIGNATURES))
def test_signature_is_flashinfers_order(entry):
    sig = inspect.signature(ENTRY_POINTS[entry])
    positional = [p.name for p in sig.parameters.values()
                  if p.kind is p.POSITIONAL_OR_KEYWORD and p.name != "self"]
    assert positional == list(_signatures.SIGNATURES[entry])
    assert "score" not in sig.parameters
    for name, default in SCORE_OPTIONS.items():
        if name in sig.parameters:
            assert sig.parameters[name].default == default


def test_positional_score_options_reach_the_config():
    kp, ki, kl = batch()
    w = cm.BatchDecodeWithPagedKVCacheWrapper(None)
    # FlashInfer's order: ..., page_size, pos_encoding_mode, window_left,
    # logits_soft_cap, q_data_type, kv_data_type, data_type, sm_scale.
    w.plan(kp, ki, kl, HQ, HKV, D, PAGE, "ROPE_LLAMA", 6, 20.0, "float16", None, None,
           0.25, rope_theta=5e5)
    cfg = w._config
    assert (cfg.pos_encoding, cfg.window_left, cfg.logits_soft_cap, cfg.sm_scale,
            cfg.rope_theta) == ("rope_llama", 6, 20.0, 0.25, 5e5)
    p = cm.BatchPrefillWithPagedKVCacheWrapper(None)
    qo = np.array([0, 1, 3], np.int32)
    # ..., causal, pos_encoding_mode, use_fp16_qk_reduction, sm_scale,
    # window_left, logits_soft_cap.
    p.plan(qo, kp, ki, kl, HQ, HKV, D, PAGE, None, None, None, True, "NONE", False, 0.5,
           3, 7.0)
    assert (p._config.sm_scale, p._config.window_left, p._config.logits_soft_cap,
            p._causal) == (0.5, 3, 7.0, True)


def test_defaults_give_the_default_config():
    kp, ki, kl = batch()
    w = cm.BatchDecodeWithPagedKVCacheWrapper(None)
    w.plan(kp, ki, kl, HQ, HKV, D, PAGE)
    assert w._config == AttentionConfig(HQ, HKV, D, PAGE)


def test_unknown_keywords_are_type_errors():
    kp, ki, kl = batch()
    w = cm.BatchDecodeWithPagedKVCacheWrapper(None)
    with pytest.raises(TypeError, match="window_lft"):
        w.plan(kp, ki, kl, HQ, HKV, D, PAGE, window_lft=3)
    with pytest.raises(TypeError, match="unexpected score option"):
        AttentionConfig.make(head_dim=D, num_qo_heads=HQ, num_kv_heads=HKV,
                             page_size=PAGE, soft_cap=3.0)


def test_run_checks_the_repeated_options():
    kp, ki, kl = batch()
    w = cm.BatchDecodeWithPagedKVCacheWrapper(None)
    w.plan(kp, ki, kl, HQ, HKV, D, PAGE, window_left=5)
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, HQ, D)).astype(np.float16)
    kv = rng.standard_normal((5, 2, PAGE, HKV, D)).astype(np.float16)
    o = w.run(q, kv)
    np.testing.assert_array_equal(w.run(q, kv, window_left=5), o)
    np.testing.assert_array_equal(w.run(q, kv, window_left=None), o)
    with pytest.raises(ValueError, match="window_left=4 differs from plan"):
        w.run(q, kv, window_left=4)
    with pytest.raises(TypeError, match="logits_soft_cap"):
        w.run(q, kv, logits_soft_cap=2.0)


def test_score_args_round_trip():
    cfg = AttentionConfig(HQ, HKV, D, PAGE, sm_scale=0.3, logits_soft_cap=15.0,
                          window_left=9, pos_encoding="rope_llama", rope_scale=2.0,
                          rope_theta=5e5)
    again = AttentionConfig.make(head_dim=D, num_qo_heads=HQ, num_kv_heads=HKV,
                                 page_size=PAGE, **cfg.score_args())
    assert again == cfg
    assert set(cfg.score_args()) == set(SCORE_OPTIONS)
