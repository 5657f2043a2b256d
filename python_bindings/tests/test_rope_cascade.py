"""RoPE in a two-level decode cascade, issue 40's shape, on the CPU reference.

B = 100 requests share one 8-token page (level 0, qo_indptr [0, B]); each
has at most one own page of up to 8 tokens (level 1, one query per request).
bf16 values, D = 64, 12 query / 2 KV heads, page 8, HND (k, v) pair,
ROPE_LLAMA. Every level places its queries at kv_len - qo_len + j of that
level and its keys at their position within the level (docs/semantics.md),
as FlashInfer's levels do: the shared level's queries sit at 8 - 100 + j,
-92 .. 7. The float64 CPU reference must compute exactly that; a flat
formulation (each request's levels concatenated, positions running through
them) is far away, so a change of convention fails here.

The numpy model of the kernels' rounding rule ("Where RoPE rounds": q' and
k' computed in f32, angle f32(pos) * f32(inv_freq), rounded once to bf16,
round to nearest even) lives here too, with tests of its own; the GPU check
(test/Integration/gpu/check.py, check_rope_cascade) holds the kernels to it.
"""
import numpy as np
import pytest

import cascade_mlir as cm

B, PAGE, HQO, HKV, D = 100, 8, 12, 2, 64
GROUP = HQO // HKV
THETA = 1e4
SM_SCALE = 1.0 / np.sqrt(D)
LOG2E = 1.0 / np.log(2.0)


# ---------------------------------------------------------------------------
# bf16 and the RoPE rounding rule, in numpy
# ---------------------------------------------------------------------------

def to_bf16(x):
    """Round to the nearest bf16 value (ties to even), returned as float32."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    odd = (bits >> np.uint32(16)) & np.uint32(1)
    rounded = (bits + np.uint32(0x7FFF) + odd) & np.uint32(0xFFFF0000)
    return rounded.view(np.float32)


def is_bf16(x):
    return bool((np.asarray(x, np.float32).view(np.uint32) & np.uint32(0xFFFF) == 0).all())


def inv_freq(theta=THETA):
    """f_c = theta^(-2c / D), c < D/2, in float64."""
    return 1.0 / theta ** (2.0 * np.arange(D // 2) / D)


def rotate_half(x, cos, sin):
    h = x.shape[-1] // 2
    a, b = x[..., :h], x[..., h:]
    return np.concatenate([a * cos - b * sin, b * cos + a * sin], -1)


def rope_exact(x, pos, theta=THETA):
    """The float64 rotation (the reference's): x [..., D] at positions pos
    (x.shape[:-1] or broadcastable to it)."""
    ang = np.asarray(pos, np.float64)[..., None] * inv_freq(theta)
    return rotate_half(np.asarray(x, np.float64), np.cos(ang), np.sin(ang))


def rope_f32(x, pos, theta=THETA):
    """The kernels' rotation before rounding: angle f32(pos) * f32(f_c) in
    f32, cos / sin of that angle, rotate-half in f32 arithmetic."""
    ang = np.float32(np.asarray(pos))[..., None] * np.float32(inv_freq(theta))
    ang = ang.astype(np.float64)
    cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    return rotate_half(np.asarray(x, np.float32), cos, sin)


def rope_rule(x, pos, theta=THETA):
    """The rounding rule's model: the f32 rotation, rounded once to bf16."""
    return to_bf16(rope_f32(x, pos, theta))


def test_bf16_rounds_to_nearest_even():
    ulp = 2.0 ** -7  # of values in [1, 2)
    x = np.array([1 + ulp / 2,               # tie, 1 is even -> 1
                  1 + 3 * ulp / 2,           # tie, 1 + 2 ulp is even
                  1 + ulp / 2 + 2.0 ** -20,  # above the tie -> 1 + ulp
                  1 + ulp / 2 - 2.0 ** -20,  # below the tie -> 1
                  -(1 + 3 * ulp / 2), 3.0, 0.0], np.float32)
    want = np.array([1, 1 + 2 * ulp, 1 + ulp, 1, -(1 + 2 * ulp), 3.0, 0.0], np.float32)
    np.testing.assert_array_equal(to_bf16(x), want)
    assert is_bf16(want) and not is_bf16(x[:4])


def test_rope_rule_rounds_once_after_the_f32_rotation():
    rng = np.random.default_rng(40)
    x = to_bf16(rng.standard_normal((61, HKV, D)))
    pos = np.arange(-30, 31)[:, None]  # a shared level's queries are negative
    y = rope_rule(x, pos)
    unrounded = rope_f32(x, pos)
    assert y.dtype == np.float32 and is_bf16(y)
    # Position 0 rotates by nothing: bf16 inputs come back exactly.
    np.testing.assert_array_equal(y[30], x[30])
    # Elsewhere the rotation of bf16 values leaves bf16, and the one rounding
    # moves each element by at most u = 2^-8 of its value ...
    moved = np.delete(np.abs(y - unrounded), 30, axis=0)
    assert (moved > 0).mean() > 0.9
    assert (np.abs(y - unrounded) <= 2.0 ** -8 * np.abs(unrounded)).all()
    # ... so that leaving it out is a different formulation, by about the
    # rounding's size (a few 1e-3 of the values), not by the f32 rotation's.
    assert np.abs(rope_exact(x, pos) - unrounded).max() < 1e-5
    assert np.abs(rope_exact(x, pos) - y).max() > 1e-3


# ---------------------------------------------------------------------------
# The cascade: inputs, the wrapper on the CPU, independent numpy references
# ---------------------------------------------------------------------------

def make_case(seed):
    """Inputs of the cascade (bf16 values held in float32) and its levels in
    FlashInfer's arrays over a shuffled HND (k, v) page pair."""
    rng = np.random.default_rng(seed)
    q = to_bf16(rng.standard_normal((B, HQO, D)))
    shared = to_bf16(rng.standard_normal((2, PAGE, HKV, D)))
    own_len = rng.integers(0, PAGE + 1, B)  # 0: no own page
    own = to_bf16(rng.standard_normal((B, 2, PAGE, HKV, D)))
    with_page = np.flatnonzero(own_len > 0)
    pool_pages = 1 + len(with_page) + 3
    page_id = rng.permutation(pool_pages)[:1 + len(with_page)].astype(np.int32)
    k_cache = np.zeros((pool_pages, HKV, PAGE, D), np.float32)  # HND
    v_cache = np.zeros_like(k_cache)
    k_cache[page_id[0]] = shared[0].transpose(1, 0, 2)
    v_cache[page_id[0]] = shared[1].transpose(1, 0, 2)
    for n, i in enumerate(with_page):
        k_cache[page_id[1 + n]] = own[i, 0].transpose(1, 0, 2)
        v_cache[page_id[1 + n]] = own[i, 1].transpose(1, 0, 2)
    levels = (
        [np.array([0, B], np.int32), np.arange(B + 1, dtype=np.int32)],
        [np.array([0, 1], np.int32),
         np.concatenate([[0], np.cumsum(own_len > 0)]).astype(np.int32)],
        [page_id[:1], page_id[1:]],
        [np.array([PAGE], np.int32), np.where(own_len > 0, own_len, 1).astype(np.int32)],
    )
    keys = dict(shared=shared, own=own, own_len=own_len)
    return q, (k_cache, v_cache), levels, keys


def attend(q, k, v, q_pos, k_pos, rope):
    """The state (o, base-2 lse) of q [R, HQO, D] over k, v [L, HKV, D],
    queries and keys rotated by rope(x, pos); float64."""
    R = q.shape[0]
    if k.shape[0] == 0:
        return np.zeros((R, HQO, D)), np.full((R, HQO), -np.inf)
    qr = np.asarray(rope(q, np.asarray(q_pos)[:, None]), np.float64)
    kr = np.repeat(np.asarray(rope(k, np.asarray(k_pos)[:, None]), np.float64), GROUP, 1)
    vr = np.repeat(np.asarray(v, np.float64), GROUP, 1)
    x = np.einsum("rhd,thd->rht", qr, kr) * SM_SCALE * LOG2E  # base 2
    m = x.max(-1)
    w = np.exp2(x - m[..., None])
    d = w.sum(-1)
    return np.einsum("rht,thd->rhd", w, vr) / d[..., None], m + np.log2(d)


def merge(states):
    """docs/semantics.md, "Merging states" (base 2)."""
    s = np.stack([st for _, st in states])
    m = s.max(0)
    mm = np.where(np.isneginf(m), 0.0, m)
    w = np.where(np.isneginf(s), 0.0, np.exp2(s - mm))
    d = w.sum(0)
    v = sum(wi[..., None] * vi for wi, (vi, _) in zip(w, states))
    with np.errstate(divide="ignore", invalid="ignore"):
        return (np.where(d[..., None] > 0, v / np.where(d > 0, d, 1)[..., None], 0.0),
                np.where(d > 0, mm + np.log2(np.where(d > 0, d, 1)), -np.inf))


def per_level(q, keys, rope_q=rope_exact, rope_k=rope_exact, shift0=0):
    """Each level on its own: level 0 (one request of B query rows over the
    8 shared tokens) puts query j at kv_len - qo_len + j = 8 - 100 + j and
    key t at t; level 1 (request i's own L tokens, one query) puts its query
    at L - 1 and key t at t. The two states merged. shift0 moves level 0's
    queries and keys together (nothing in exact arithmetic: RoPE scores
    depend on q_pos - t only)."""
    sh, own, own_len = keys["shared"], keys["own"], keys["own_len"]
    q_pos0 = PAGE - B + np.arange(B)
    assert q_pos0[0] == -92 and q_pos0[-1] == 7
    rope = lambda x, pos: rope_q(x, pos) if x.shape[1] == HQO else rope_k(x, pos)
    level0 = attend(q, sh[0], sh[1], q_pos0 + shift0, np.arange(PAGE) + shift0, rope)
    o1, s1 = np.zeros((B, HQO, D)), np.full((B, HQO), -np.inf)
    for i in range(B):
        L = own_len[i]
        if L:
            o, s = attend(q[i:i + 1], own[i, 0, :L], own[i, 1, :L], [L - 1], np.arange(L), rope)
            o1[i], s1[i] = o[0], s[0]
    return merge([level0, (o1, s1)])


def flat(q, keys, rope=rope_exact):
    """The convention the cascade does not have: request i's levels
    concatenated (8 shared tokens, then its own L), keys at 0 .. 8 + L - 1
    and its query at 8 + L - 1, as if the request had no levels."""
    sh, own, own_len = keys["shared"], keys["own"], keys["own_len"]
    o, s = np.zeros((B, HQO, D)), np.full((B, HQO), -np.inf)
    for i in range(B):
        L = own_len[i]
        k = np.concatenate([sh[0], own[i, 0, :L]])
        v = np.concatenate([sh[1], own[i, 1, :L]])
        oi, si = attend(q[i:i + 1], k, v, [PAGE + L - 1], np.arange(PAGE + L), rope)
        o[i], s[i] = oi[0], si[0]
    return o, s


def run_wrapper(q, kv, levels):
    w = cm.MultiLevelCascadeAttentionWrapper(2, None, kv_layout="HND")
    w.plan(*levels, HQO, HKV, D, PAGE, pos_encoding_mode="ROPE_LLAMA",
           q_data_type="bfloat16", kv_data_type="bfloat16")
    o, lse = w.run(q, kv, return_lse=True)
    return np.asarray(o, np.float64), np.asarray(lse, np.float64)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cpu_reference_rotates_each_level_at_its_own_positions(seed):
    q, kv, levels, keys = make_case(seed)
    o, lse = run_wrapper(q, kv, levels)
    o_ref, lse_ref = per_level(q, keys)
    assert np.isfinite(lse).all()  # every request sees the shared page
    np.testing.assert_allclose(lse, lse_ref, rtol=0, atol=1e-6)
    np.testing.assert_allclose(o, o_ref, rtol=0, atol=1e-6 * np.abs(o_ref).max())
    # The flat convention is far from it: a future change of convention
    # (in the reference, the planner or the IR) fails here.
    o_flat, lse_flat = flat(q, keys)
    assert np.abs(lse - lse_flat).max() > 0.1
    # Without RoPE the two conventions agree (positions do not matter), so
    # the distance above is the positions' alone.
    none = lambda x, pos: np.asarray(x, np.float64)
    np.testing.assert_allclose(per_level(q, keys, none, none)[1], flat(q, keys, none)[1],
                               rtol=0, atol=1e-9)


def test_rule_model_costs_and_what_a_gpu_check_can_tell_apart():
    """What docs/semantics.md quotes for this shape: the rounding rule itself
    moves the base-2 LSE by a few 1e-3 from float64 (max over rows), and the
    formulations a kernel could wrongly compute (no rounding, q' or k' alone
    rounded, the level-0 queries shifted to non-negative positions) are
    >= 3e-4 away from the rule on average, well above the GPU check's
    mean bound of 5e-5 for a kernel against the rule model."""
    q, kv, levels, keys = make_case(7)
    _, exact = per_level(q, keys)
    _, rule = per_level(q, keys, rope_rule, rope_rule)
    cost = np.abs(rule - exact)
    assert 1e-3 < cost.max() < 3e-2 and 1e-4 < cost.mean() < 5e-3
    wrong = {
        "no rounding": per_level(q, keys, rope_f32, rope_f32)[1],
        "q' rounded only": per_level(q, keys, rope_rule, rope_f32)[1],
        "k' rounded only": per_level(q, keys, rope_f32, rope_rule)[1],
        "level 0 at j, keys at t + 92": per_level(q, keys, rope_rule, rope_rule,
                                                  shift0=B - PAGE)[1],
    }
    for name, lse in wrong.items():
        assert np.abs(lse - rule).mean() > 3e-4, name
