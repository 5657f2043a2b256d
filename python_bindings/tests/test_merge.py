"""merge_state / merge_state_in_place / merge_states against an independent
numpy formulation of docs/semantics.md, plus the empty-state rules."""
import numpy as np
import pytest

import cascade_mlir as cm
from conftest import random_state


def numpy_merge(vs, ss):
    """Independent base-2 merge of states stacked on axis 1."""
    m = np.max(ss, axis=1, keepdims=True)
    safe_m = np.where(np.isneginf(m), 0.0, m)
    w = np.where(np.isneginf(ss), 0.0, np.exp2(ss - safe_m))
    d = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        v = np.einsum("lnh,lnhd->lhd", w, vs) / d[..., None]
        s = safe_m[:, 0] + np.log2(d)
    v = np.where(d[..., None] == 0, 0.0, v)
    s = np.where(d == 0, -np.inf, s)
    return v, s


def test_merge_state_matches_formula(rng):
    va, sa = random_state(rng, 7, 5, 64)
    vb, sb = random_state(rng, 7, 5, 64)
    v, s = cm.merge_state(va, sa, vb, sb)
    ev, es = numpy_merge(np.stack([va, vb], 1), np.stack([sa, sb], 1))
    np.testing.assert_allclose(v, ev, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s, es.astype(np.float32), rtol=1e-6)
    assert v.dtype == va.dtype and s.dtype == np.float32


def test_merge_with_empty_state_is_exact(rng):
    va, sa = random_state(rng, 3, 2, 16)
    vb = np.zeros_like(va)
    sb = np.full_like(sa, -np.inf)
    v, s = cm.merge_state(va, sa, vb, sb)
    assert np.array_equal(v, va)
    assert np.array_equal(s, sa.astype(np.float32))


def test_two_empty_states_give_empty_not_nan():
    v0 = np.zeros((2, 3, 8))
    s0 = np.full((2, 3), -np.inf)
    v, s = cm.merge_state(v0, s0, v0, s0)
    assert not np.isnan(v).any() and not np.isnan(s).any()
    assert np.all(v == 0) and np.all(np.isneginf(s))


def test_merge_in_place_with_strided_mask(rng):
    v, s = random_state(rng, 6, 4, 32)
    vo, so = random_state(rng, 6, 4, 32)
    backing = np.array([1, 9, 0, 9, 1, 9, 0, 9, 1, 9, 1, 9], dtype=np.uint8)
    mask = backing[::2]  # strided: [1, 0, 1, 0, 1, 1]
    expect_v, expect_s = numpy_merge(np.stack([v, vo], 1), np.stack([s, so], 1))
    v_before, s_before = v.copy(), s.copy()
    cm.merge_state_in_place(v, s, vo, so, mask=mask)
    for row, keep in enumerate(mask):
        if keep:
            np.testing.assert_allclose(v[row], expect_v[row], rtol=1e-12)
            np.testing.assert_allclose(s[row], expect_s[row], rtol=1e-12)
        else:
            assert np.array_equal(v[row], v_before[row])
            assert np.array_equal(s[row], s_before[row])


def test_merge_in_place_bool_mask_and_float16(rng):
    v, s = random_state(rng, 4, 2, 8)
    v = v.astype(np.float16)
    s = s.astype(np.float32)
    vo, so = random_state(rng, 4, 2, 8)
    mask = np.array([True, False, True, False])
    untouched = v[1].copy()
    cm.merge_state_in_place(v, s, vo, so, mask=mask)
    assert v.dtype == np.float16
    assert np.array_equal(v[1], untouched)


@pytest.mark.parametrize("n", [1, 2, 5, 16])
def test_merge_states(rng, n):
    vs = rng.standard_normal((9, n, 3, 16))
    ss = rng.standard_normal((9, n, 3)) * 8
    ss[0, :, 0] = -np.inf  # a fully empty row/head
    v, s = cm.merge_states(vs, ss)
    ev, es = numpy_merge(vs, ss)
    np.testing.assert_allclose(v, ev, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s, es.astype(np.float32), rtol=1e-6)
    assert np.all(v[0, 0] == 0) and np.isneginf(s[0, 0])


def test_merge_states_zero_states_is_empty():
    v, s = cm.merge_states(np.zeros((3, 0, 2, 8)), np.zeros((3, 0, 2)))
    assert v.shape == (3, 2, 8) and np.all(v == 0) and np.all(np.isneginf(s))


def test_merge_order_does_not_matter(rng):
    states = [random_state(rng, 5, 2, 8) for _ in range(3)]
    v1, s1 = cm.merge_state(*states[0], *states[1])
    v1, s1 = cm.merge_state(v1, s1, *states[2])
    v2, s2 = cm.merge_state(*states[2], *states[0])
    v2, s2 = cm.merge_state(v2, s2, *states[1])
    # s is stored as fp32 between merges (the contract), so compare at fp32.
    np.testing.assert_allclose(v1, v2, rtol=1e-6)
    np.testing.assert_allclose(s1, s2, rtol=1e-6)


def test_bad_shapes_raise_value_error(rng):
    va, sa = random_state(rng, 3, 2, 8)
    with pytest.raises(ValueError, match="s_b"):
        cm.merge_state(va, sa, va, sa[:2])
    with pytest.raises(ValueError, match="mask"):
        cm.merge_state_in_place(va.copy(), sa.copy(), va, sa, mask=np.ones(2, np.uint8))
    with pytest.raises(TypeError):
        cm.merge_state([1], sa, va, sa)
