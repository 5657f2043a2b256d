"""An explicit cascade run as its plain batch (cascade_mlir._plain): the one
level plain_level() builds computes, on the float64 CPU reference, what the
levels compute; it is refused (None) wherever it would not; cascade_pays
follows the automatic planner's cost model."""
import dataclasses

import numpy as np
import pytest

import cascade_mlir as cm
from cascade_mlir import _gpu, _plain, _runtime
from cascade_mlir.config import AttentionConfig
from cascade_mlir.kernels import Group

PAGE, HQ, HKV, D = 4, 4, 2, 16


def make_cascade(rng, batch, groups, prefix, own_tokens, rows, causal, full=True):
    """Levels: one shared prefix over every request, `groups` group prefixes
    (requests split evenly), own pages. Returns (levels, total pages)."""
    next_page = [0]

    def pages(n):
        ids = np.arange(next_page[0], next_page[0] + n, dtype=np.int32)
        next_page[0] += n
        return rng.permutation(ids)

    qo = np.concatenate([[0], np.cumsum(rows)]).astype(np.int32)
    decode = all(r == 1 for r in rows)
    levels = []
    # Level 0: every request.
    pref = pages(prefix)
    levels.append((np.array([0, qo[-1]], np.int32), np.array([0, prefix], np.int32), pref,
                   np.array([PAGE if full else PAGE - 1], np.int32)))
    # Level 1: groups of requests with a page prefix of their own each.
    if groups:
        bounds = np.linspace(0, batch, groups + 1).astype(int)
        gp = [pages(2) for _ in range(groups)]
        levels.append((qo[bounds].astype(np.int32),
                       np.arange(0, 2 * groups + 1, 2, dtype=np.int32),
                       np.concatenate(gp), np.full(groups, PAGE, np.int32)))
    # Last level: each request's own pages.
    own_pages = [(t + PAGE - 1) // PAGE for t in own_tokens]
    ids = np.concatenate([pages(n) for n in own_pages]) if sum(own_pages) else \
        np.zeros(0, np.int32)
    last = np.array([t - (n - 1) * PAGE if n else 0 for t, n in zip(own_tokens, own_pages)],
                    np.int32)
    levels.append((qo, np.concatenate([[0], np.cumsum(own_pages)]).astype(np.int32), ids,
                   last))
    out = []
    for i, (lqo, kp, ki, kl) in enumerate(levels):
        is_last = i == len(levels) - 1
        d = decode and np.array_equal(lqo, np.arange(lqo.size))
        out.append(_gpu.Level(lqo, kp, ki, kl, Group(decode=d, causal=causal and is_last
                                                      and not d, accumulate=i > 0)))
    return out, next_page[0]


def reference(cfg, causal, levels, q, cache):
    lv = [_runtime.Level(x.qo_indptr, x.kv_indptr, x.kv_indices, x.kv_last_page_len)
          for x in levels]
    return cm.cascade._reference_run(cfg, causal, lv, q, cache)


def random_inputs(rng, rows, pages):
    q = rng.standard_normal((rows, HQ, D)).astype(np.float32)
    cache = rng.standard_normal((pages, 2, PAGE, HKV, D)).astype(np.float32)
    return q, cache


CASES = {
    # name: (batch, groups, prefix pages, own tokens, rows per request, causal)
    "decode-2": (5, 0, 3, [1, 4, 7, 9, 2], [1] * 5, False),
    "decode-3": (6, 2, 2, [3, 8, 1, 5, 6, 4], [1] * 6, False),
    "decode-no-own": (3, 0, 2, [0, 5, 0], [1] * 3, False),
    "prefill-causal": (4, 0, 3, [6, 9, 3, 12], [3, 5, 2, 7], True),
    "prefill-causal-3": (4, 2, 2, [6, 9, 3, 12], [3, 5, 2, 7], True),
    "prefill": (3, 0, 2, [2, 9, 5], [4, 1, 6], False),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_plain_level_computes_the_cascade(name):
    batch, groups, prefix, own, rows, causal = CASES[name]
    rng = np.random.default_rng(7)
    levels, pages = make_cascade(rng, batch, groups, prefix, own, rows, causal)
    cfg = AttentionConfig(HQ, HKV, D, PAGE)
    flat = _plain.plain_level(levels, cfg, causal)
    assert flat is not None
    assert flat.group.accumulate is False and flat.group.decode == levels[-1].group.decode
    # Every request reads the prefix, its group's pages and its own.
    per_request = prefix + 2 * bool(groups) + np.diff(levels[-1].kv_indptr)
    assert np.diff(flat.kv_indptr).tolist() == per_request.tolist()
    q, cache = random_inputs(rng, int(levels[-1].qo_indptr[-1]), pages)
    o_c, s_c = reference(cfg, causal, levels, q, cache)
    o_p, s_p = reference(cfg, causal, [flat], q, cache)
    np.testing.assert_allclose(o_p, o_c, rtol=0, atol=1e-5)
    np.testing.assert_allclose(s_p, s_c, rtol=0, atol=1e-5)


def test_plain_level_page_lists():
    rng = np.random.default_rng(1)
    levels, _ = make_cascade(rng, 3, 0, 2, [5, 0, 4], [1] * 3, False)
    cfg = AttentionConfig(HQ, HKV, D, PAGE)
    flat = _plain.plain_level(levels, cfg, False)
    shared, own = levels[0].kv_indices, levels[1].kv_indices
    assert flat.kv_indptr.tolist() == [0, 4, 6, 9]
    assert flat.kv_indices.tolist() == list(shared) + list(own[:2]) + list(shared) + \
        list(shared) + list(own[2:])
    # A request without own pages ends on the prefix's full page.
    assert flat.kv_last_page_len.tolist() == [1, PAGE, 4]


def refused(levels, cfg, causal):
    return _plain.plain_level(levels, cfg, causal) is None


def test_plain_level_refusals():
    rng = np.random.default_rng(3)
    cfg = AttentionConfig(HQ, HKV, D, PAGE)
    levels, _ = make_cascade(rng, 4, 0, 2, [5, 6, 7, 8], [1] * 4, False)
    assert not refused(levels, cfg, False)
    # Positions are per level: RoPE, ALiBi and a window refuse.
    for opts in ({"pos_encoding": "rope_llama"}, {"pos_encoding": "alibi"},
                 {"window_left": 8}):
        assert refused(levels, dataclasses.replace(cfg, **opts), False), opts
    # One level is already plain.
    assert refused(levels[-1:], cfg, False)
    # A shared prefix ending on a partial page.
    partial, _ = make_cascade(rng, 4, 0, 2, [5, 6, 7, 8], [1] * 4, False, full=False)
    assert refused(partial, cfg, False)
    # Causal: a request with fewer own tokens than query rows less one would
    # not see the whole prefix in the plain form.
    ok, _ = make_cascade(rng, 2, 0, 2, [4, 5], [5, 3], True)
    assert not refused(ok, cfg, True)
    short, _ = make_cascade(rng, 2, 0, 2, [3, 5], [5, 3], True)
    assert refused(short, cfg, True)
    # A group boundary inside a request's rows.
    levels, _ = make_cascade(rng, 4, 2, 2, [5, 6, 7, 8], [2, 2, 2, 2], False)
    split = levels[1]
    split.qo_indptr = np.array([0, 3, 8], np.int32)
    assert refused(levels, cfg, False)
    # A shared pool in its own slot.
    levels, _ = make_cascade(rng, 4, 0, 2, [5, 6, 7, 8], [1] * 4, False)
    levels[0].kv_slot = 1
    assert refused(levels, cfg, False)


@pytest.mark.parametrize("prefix,pays", [(1, False), (8, False), (4096, True)])
def test_cascade_pays_follows_the_cost_model(prefix, pays):
    """128 decode requests of 256 own tokens (page 16, 32/8 heads, D 128,
    f16): a prefix of a page or eight does not pay for a level (the
    model's 20 us), one of 4096 pages does."""
    b, page = 128, 16
    own = [256] * b
    rng = np.random.default_rng(0)
    global PAGE
    saved, PAGE = PAGE, page
    try:
        levels, _ = make_cascade(rng, b, 0, prefix, own, [1] * b, False)
    finally:
        PAGE = saved
    cfg = AttentionConfig(32, 8, 128, page)
    flat = _plain.plain_level(levels, cfg, False)
    assert flat is not None
    assert _plain.cascade_pays(flat, cfg, False, len(levels)) is pays
