"""Score options given at run time, as FlashInfer 0.5.3 takes them (issue
41): run()'s q_scale / k_scale / v_scale on an f16/bf16 KV cache (q_scale
and k_scale multiply the softmax scale, v_scale the output; vLLM passes
k_scale=1.0, v_scale=1.0 on every call), and the deprecated forward() /
forward_return_lse(), which set the mask and the score options for this and
later run() calls until the next plan() (SGLang calls forward(q, kv,
causal=, sm_scale=, logits_soft_cap=) on wrappers planned without them).
Options other than plan()'s run on variants of the plan, planned once per
plan() and kept. CPU only (the float64 reference; the GPU engine test,
gpu/test_gpu_engine_loop.py, runs them on the kernels)."""
import numpy as np
import pytest

import cascade_mlir as cm
from cascade_mlir._single import SingleLevelWrapper

HQ, HKV, D, PAGE = 8, 2, 64, 4


@pytest.fixture
def paged(rng):
    kp = np.array([0, 3, 5, 9], np.int32)
    ki = rng.permutation(12)[:9].astype(np.int32)
    kl = np.array([2, PAGE, 1], np.int32)
    qo = np.array([0, 4, 5, 12], np.int32)
    kv = rng.standard_normal((12, 2, PAGE, HKV, D)).astype(np.float16)
    q = rng.standard_normal((12, HQ, D)).astype(np.float16)
    return qo, kp, ki, kl, kv, q


@pytest.fixture
def plans(monkeypatch):
    """Counts the plans of wrappers and their variants (_plan_state calls)."""
    calls = []
    orig = SingleLevelWrapper._plan_state

    def counted(self, cfg, causal, *args):
        calls.append((cfg, causal))
        return orig(self, cfg, causal, *args)

    monkeypatch.setattr(SingleLevelWrapper, "_plan_state", counted)
    return calls


def close(a, b, tol=2e-3):
    for x, y in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
        np.testing.assert_allclose(np.asarray(x, np.float32), np.asarray(y, np.float32),
                                   atol=tol, rtol=tol)


def prefill(paged, **plan_kw):
    qo, kp, ki, kl, _, _ = paged
    w = cm.BatchPrefillWithPagedKVCacheWrapper(None)
    w.plan(qo, kp, ki, kl, HQ, HKV, D, PAGE, **plan_kw)
    return w


# --- run()'s q_scale / k_scale / v_scale on an f16 cache --------------------------

def test_scales_are_flashinfers_on_f16(paged):
    """FlashInfer's test_kv_scale_forwarding_math_property: k_scale scales
    the logits as q * k_scale does, v_scale the output."""
    _, _, _, _, kv, q = paged
    w = prefill(paged, causal=True)
    o, lse = w.run(q, kv, return_lse=True)
    o_q, lse_q = w.run(q * np.float16(0.5), kv, return_lse=True)  # exact
    close(w.run(q, kv, k_scale=0.5, return_lse=True), (o_q, lse_q), 1e-3)
    np.testing.assert_array_equal(w.run(q, kv, v_scale=2.0), o * np.float16(2))
    close(w.run(q, kv, k_scale=0.5, v_scale=2.0), o_q * np.float16(2), 1e-3)
    # Unit scales change nothing (vLLM passes them on every call).
    for kw in ({"k_scale": 1.0, "v_scale": 1.0}, {"q_scale": 1.0}, {"k_scale": 1}):
        np.testing.assert_array_equal(w.run(q, kv, **kw), o)
    d = cm.BatchDecodeWithPagedKVCacheWrapper(None)
    _, kp, ki, kl, _, _ = paged
    d.plan(kp, ki, kl, HQ, HKV, D, PAGE)
    qd = q[:3]
    close(d.run(qd, kv, q_scale=0.5, k_scale=0.5), d.run(qd * np.float16(0.25), kv), 1e-3)


def test_v_scale_scales_out_in_place(paged):
    _, _, _, _, kv, q = paged
    w = prefill(paged)
    want = w.run(q, kv) * np.float16(-1.5)
    out = np.empty_like(q)
    assert w.run(q, kv, out=out, v_scale=-1.5) is out
    np.testing.assert_array_equal(out, want)


def test_scale_variants_are_planned_once_per_plan(paged, plans):
    _, _, _, _, kv, q = paged
    w = prefill(paged)
    assert len(plans) == 1
    for _ in range(3):  # layers alternating between scales
        w.run(q, kv, k_scale=0.5)
        w.run(q, kv)
        w.run(q, kv, k_scale=0.25)
    assert len(plans) == 3 and len(w._variants) == 2
    assert plans[1][0].sm_scale == pytest.approx(0.5 * D ** -0.5)
    qo, kp, ki, kl, _, _ = paged
    w.plan(qo, kp, ki, kl, HQ, HKV, D, PAGE)  # the next step
    w.run(q, kv, k_scale=0.5)
    w.run(q, kv, k_scale=0.5)
    assert len(plans) == 5 and len(w._variants) == 2


# --- forward() / forward_return_lse() ----------------------------------------

def test_forward_options_are_plans_options(paged):
    """forward(..., causal=, sm_scale=, logits_soft_cap=, window_left=) on a
    wrapper planned without them computes what a plan with them does."""
    _, _, _, _, kv, q = paged
    opts = {"sm_scale": 0.3, "logits_soft_cap": 7.0, "window_left": 5}
    w = prefill(paged)
    for causal in (True, False):
        want = prefill(paged, causal=causal, **opts).run(q, kv, return_lse=True)
        close(w.forward_return_lse(q, kv, causal=causal, **opts), want)
        np.testing.assert_array_equal(w.forward(q, kv, causal=causal, **opts), want[0])
    # Positionally, in FlashInfer's order (causal, pos_encoding_mode,
    # use_fp16_qk_reduction, k_scale, v_scale, window_left, logits_soft_cap,
    # sm_scale).
    want = prefill(paged, causal=True, **opts).run(q, kv)
    np.testing.assert_array_equal(w.forward(q, kv, True, "NONE", False, None, None, 5, 7.0,
                                            0.3), want)


def test_forward_sets_the_options_until_plan(paged):
    _, _, _, _, kv, q = paged
    causal = prefill(paged, causal=True).run(q, kv)
    plain = prefill(paged).run(q, kv)
    w = prefill(paged, causal=True)
    # FlashInfer's forward() sets causal=False unless passed, as it does.
    np.testing.assert_array_equal(w.forward(q, kv), plain)
    np.testing.assert_array_equal(w.run(q, kv), plain)
    np.testing.assert_array_equal(w.forward(q, kv, causal=True), causal)
    np.testing.assert_array_equal(w.run(q, kv), causal)
    w.forward(q, kv, causal=False, window_left=3)
    w.run(q, kv, window_left=3)  # run() repeats forward()'s window
    with pytest.raises(ValueError, match="window_left=-1 differs"):
        w.run(q, kv, window_left=-1)
    qo, kp, ki, kl, _, _ = paged
    w.plan(qo, kp, ki, kl, HQ, HKV, D, PAGE, causal=True)  # plan()'s options again
    np.testing.assert_array_equal(w.run(q, kv), causal)


def test_forward_alternating_layers_plan_once_per_step(paged, plans):
    """SGLang's layers: forward() with the same options each layer plans
    nothing; two option sets alternating plan each once per plan()."""
    _, _, _, _, kv, q = paged
    w = prefill(paged)
    for _ in range(4):
        w.forward(q, kv, causal=True, sm_scale=D ** -0.5, logits_soft_cap=0.0)
        w.forward(q, kv, causal=True, sm_scale=0.2, logits_soft_cap=0.0)
    assert len(plans) == 3  # plan(), then one variant each
    d = cm.BatchDecodeWithPagedKVCacheWrapper(None)
    _, kp, ki, kl, _, _ = paged
    d.plan(kp, ki, kl, HQ, HKV, D, PAGE)
    for _ in range(4):  # the plan's own options: no variant
        d.forward(q[:3], kv, sm_scale=D ** -0.5, logits_soft_cap=0.0, k_scale=1.0,
                  v_scale=1.0)
    assert len(plans) == 4 and not d._variants


def test_forward_keeps_plans_pos_encoding(paged):
    """pos_encoding_mode picks FlashInfer's kernel at plan(): forward()'s is
    accepted and plan()'s applies (rope_scale / rope_theta are forward()'s,
    as FlashInfer passes them at run)."""
    _, _, _, _, kv, q = paged
    rope = prefill(paged, causal=True, pos_encoding_mode="ROPE_LLAMA")
    want = rope.run(q, kv)
    np.testing.assert_array_equal(rope.forward(q, kv, causal=True), want)
    np.testing.assert_array_equal(
        rope.forward(q, kv, causal=True, pos_encoding_mode="NONE"), want)
    theta = prefill(paged, causal=True, pos_encoding_mode="ROPE_LLAMA", rope_theta=5e5)
    np.testing.assert_array_equal(rope.forward(q, kv, causal=True, rope_theta=5e5),
                                  theta.run(q, kv))


def test_ragged_and_decode_forward(paged, rng):
    qo, kp, ki, kl, kv, q = paged
    kvp = np.array([0, 9, 10, 20], np.int32)
    k = rng.standard_normal((20, HKV, D)).astype(np.float16)
    v = rng.standard_normal((20, HKV, D)).astype(np.float16)
    want = cm.BatchPrefillWithRaggedKVCacheWrapper(None)
    want.plan(qo, kvp, HQ, HKV, D, causal=True, sm_scale=0.2)
    w = cm.BatchPrefillWithRaggedKVCacheWrapper(None)
    w.plan(qo, kvp, HQ, HKV, D)
    close(w.forward_return_lse(q, k, v, causal=True, sm_scale=0.2, window_left=-1),
          want.run(q, k, v, return_lse=True))
    np.testing.assert_array_equal(w.forward(q, k, v, True, sm_scale=0.2),
                                  want.run(q, k, v))
    d = cm.BatchDecodeWithPagedKVCacheWrapper(None)
    d.plan(kp, ki, kl, HQ, HKV, D, PAGE)
    dw = cm.BatchDecodeWithPagedKVCacheWrapper(None)
    dw.plan(kp, ki, kl, HQ, HKV, D, PAGE, logits_soft_cap=5.0, sm_scale=0.25)
    close(d.forward_return_lse(q[:3], kv, logits_soft_cap=5.0, sm_scale=0.25),
          dw.run(q[:3], kv, return_lse=True))


def test_forward_before_plan_and_bad_options(paged):
    _, _, _, _, kv, q = paged
    w = cm.BatchPrefillWithPagedKVCacheWrapper(None)
    with pytest.raises(cm.NotPlannedError):
        w.forward(q, kv, causal=True)
    w = prefill(paged)
    with pytest.raises(TypeError, match="out"):
        w.forward(q, kv, out=q)  # FlashInfer's forward() has no out=
    with pytest.raises(ValueError, match="window_left"):
        w.forward(q, kv, window_left=-3)
