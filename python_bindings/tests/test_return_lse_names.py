"""FlashInfer 0.5.3's lse-returning method names (run_return_lse, and the
deprecated forward_return_lse) on the decode, paged-prefill, ragged and
sink wrappers: the same (o, lse) as run(..., return_lse=True). CPU only."""

import numpy as np
import pytest

import cascade_mlir as cm

HQ, HKV, D, PAGE = 8, 2, 64, 4


@pytest.fixture
def inputs():
    rng = np.random.default_rng(7)
    kp = np.array([0, 2, 5], np.int32)
    ki = np.array([4, 0, 1, 3, 2], np.int32)
    kl = np.array([3, PAGE], np.int32)
    kv = rng.standard_normal((5, 2, PAGE, HKV, D)).astype(np.float16)
    return rng, kp, ki, kl, kv


def check_same(w, call_args, causal=None, **kw):
    """run_return_lse and forward_return_lse against run(return_lse=True);
    `causal`: plan()'s mask, which FlashInfer's forward_return_lse() sets
    again (its default: False)."""
    o, lse = w.run(*call_args, return_lse=True, **kw)
    fwd = {} if causal is None else {"causal": causal}
    for name in ("run_return_lse", "forward_return_lse"):
        o2, lse2 = getattr(w, name)(*call_args, **kw, **(fwd if name[0] == "f" else {}))
        np.testing.assert_array_equal(o2, o)
        np.testing.assert_array_equal(lse2, lse)
    assert np.isfinite(lse).all()


def test_decode(inputs):
    rng, kp, ki, kl, kv = inputs
    w = cm.BatchDecodeWithPagedKVCacheWrapper(None)
    w.plan(kp, ki, kl, HQ, HKV, D, PAGE)
    check_same(w, (rng.standard_normal((2, HQ, D)).astype(np.float16), kv))


def test_paged_prefill(inputs):
    rng, kp, ki, kl, kv = inputs
    w = cm.BatchPrefillWithPagedKVCacheWrapper(None)
    w.plan(np.array([0, 3, 4], np.int32), kp, ki, kl, HQ, HKV, D, PAGE, causal=True)
    check_same(w, (rng.standard_normal((4, HQ, D)).astype(np.float16), kv), causal=True)


def test_sink_wrapper_takes_sinks_positionally(inputs):
    rng, kp, ki, kl, kv = inputs
    w = cm.BatchAttentionWithAttentionSinkWrapper(None)
    w.plan(np.array([0, 1, 2], np.int32), kp, ki, kl, HQ, HKV, D, PAGE)
    sinks = rng.standard_normal(HQ).astype(np.float32)
    check_same(w, (rng.standard_normal((2, HQ, D)).astype(np.float16), kv, sinks))


def test_ragged(inputs):
    rng = inputs[0]
    w = cm.BatchPrefillWithRaggedKVCacheWrapper(None)
    qo, kvp = np.array([0, 2, 5], np.int32), np.array([0, 6, 9], np.int32)
    w.plan(qo, kvp, HQ, HKV, D, causal=True)
    q = rng.standard_normal((5, HQ, D)).astype(np.float16)
    k = rng.standard_normal((9, HKV, D)).astype(np.float16)
    v = rng.standard_normal((9, HKV, D)).astype(np.float16)
    check_same(w, (q, k, v), causal=True)
