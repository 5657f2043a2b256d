"""head_dim_qk != head_dim_vo (DeepSeek's prefill before MLA absorption: q
and k of head_dim 192, v and the output of 128), on the host: the
configuration (the dataclass against contract::AttentionConfig: key,
dict, refusals), the plan inputs, run()'s checks (the code the GPU runs,
here against host arrays), the float64 reference of every prefill entry
point against a direct numpy computation, and what stays refused (a 5-D
pool, head_dim_vo > head_dim, decode)."""
import dataclasses
import json
import os

import numpy as np
import pytest

import cascade_mlir as cm
from cascade_mlir import kernels as K
from cascade_mlir.config import AttentionConfig

PREFILL = K.Group(decode=False)
CAUSAL = K.Group(decode=False, causal=True)


def direct(q, k, v, causal=False, sm_scale=None, logits_soft_cap=0.0):
    """(o, lse base 2) in float64 of one request: q [rows, Hq, D] over k
    [T, Hkv, D] and v [T, Hkv, Dv] (GQA: query head h reads KV head
    h // (Hq / Hkv)); causal aligns the queries with the last keys; the
    default scale is 1 / sqrt(D), q's and k's head_dim."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    rows, hq, d = q.shape
    t, hkv = k.shape[:2]
    g = hq // hkv
    k, v = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
    scale = d ** -0.5 if sm_scale is None else sm_scale
    x = np.einsum("rhd,thd->hrt", q, k) * scale
    if logits_soft_cap:
        x = logits_soft_cap * np.tanh(x / logits_soft_cap)
    if causal:
        seen = np.arange(t)[None, :] <= (t - rows + np.arange(rows))[:, None]
        x = np.where(seen[None], x, -np.inf)
    m = x.max(-1, keepdims=True)
    ok = np.isfinite(m)
    w = np.where(ok, np.exp(x - np.where(ok, m, 0)), 0)
    den = w.sum(-1)
    o = np.einsum("hrt,thd->rhd", w, v) / np.maximum(den, 1e-300).T[..., None]
    lse = np.where(ok[..., 0], m[..., 0] + np.log(np.maximum(den, 1e-300)), -np.inf).T
    return o, lse / np.log(2)


def randn(rng, *shape):
    return rng.standard_normal(shape).astype(np.float16)


# --- the configuration ------------------------------------------------------------

def test_key_spells_dv_after_the_score_options_and_before_the_output_dtype():
    cfg = AttentionConfig(16, 16, 192, 1, q_dtype="bf16", kv_form="ragged", head_dim_vo=128)
    assert cfg.key() == "bf16-bf16.d192.h16x16.p1.nhd.ragged.dv128"
    assert K.attention_key(cfg, CAUSAL) == \
        "prefill-causal.bf16-bf16.d192.h16x16.p1.nhd.ragged.dv128"
    odd = AttentionConfig(16, 4, 192, 16, kv_form="pair", head_dim_vo=128, sm_scale=0.1,
                          pos_encoding="alibi", o_dtype="f32", lse_base="e")
    assert odd.key() == "f16-f16.d192.h16x4.p16.nhd.pair.sm3dcccccd.alibi.dv128.of32.lsee"
    for c in (cfg, odd):
        assert AttentionConfig.from_key(c.key()) == c
        assert K.parse_key(K.attention_key(c, PREFILL)) == (c, PREFILL)
        assert c.v_dim == 128 and c.split_head_dims


def test_head_dim_vo_equal_to_head_dim_is_no_option():
    # One kernel, one key: head_dim_vo = head_dim is the configuration without it.
    same = AttentionConfig(32, 8, 128, 16, head_dim_vo=128)
    assert same == AttentionConfig(32, 8, 128, 16) and same.head_dim_vo is None
    assert same.key() == "f16-f16.d128.h32x8.p16.nhd.pool"
    assert same.v_dim == 128 and not same.split_head_dims
    made = AttentionConfig.make(head_dim=128, head_dim_vo=128, num_qo_heads=32,
                                num_kv_heads=8, page_size=16)
    assert made == same


def test_the_default_scale_is_that_of_head_dim_qk():
    cfg = AttentionConfig(16, 16, 192, 1, kv_form="pair", head_dim_vo=128)
    assert cfg.effective_sm_scale == pytest.approx(192 ** -0.5)
    # 1 / sqrt(192) given explicitly is the default; 1 / sqrt(128) is not.
    assert dataclasses.replace(cfg, sm_scale=192 ** -0.5).key() == cfg.key()
    assert ".sm" in dataclasses.replace(cfg, sm_scale=128 ** -0.5).key()


def test_as_dict_carries_head_dim_vo_and_cpp_reads_it_back():
    cfg = AttentionConfig(16, 4, 192, 16, kv_form="pair", head_dim_vo=128)
    d = cfg.as_dict()
    assert d["head_dim"] == 192 and d["head_dim_vo"] == 128
    assert AttentionConfig(32, 8, 128, 16).as_dict()["head_dim_vo"] == 128
    back = cm.runtime._attention_config(d)
    assert back["head_dim"] == 192 and back["head_dim_vo"] == 128
    # Absent: head_dim's (the configuration without it).
    plain = AttentionConfig(16, 4, 192, 16, kv_form="pair")
    without = {k: v for k, v in plain.as_dict().items() if k != "head_dim_vo"}
    assert cm.runtime._attention_config(without)["head_dim_vo"] == 192
    assert cm.runtime._attention_config_key(without) == plain.key()


@pytest.mark.parametrize("cfg", [
    AttentionConfig(16, 16, 192, 1, q_dtype="bf16", kv_form="ragged", head_dim_vo=128),
    AttentionConfig(16, 4, 192, 16, kv_form="pair", head_dim_vo=128, kv_layout="hnd"),
    AttentionConfig(16, 4, 128, 1, kv_form="pair", head_dim_vo=64, logits_soft_cap=30.0,
                    window_left=7, o_dtype="f32"),
    AttentionConfig(8, 8, 96, 16, kv_form="pair", head_dim_vo=64, pos_encoding="rope_llama",
                    rope_theta=5e5, kv_scale="per_tensor", lse_base="e"),
])
def test_python_and_cpp_spell_the_same_key(cfg):
    assert cm.runtime._attention_config_key(cfg.as_dict()) == cfg.key()
    back = cm.runtime._attention_config(cfg.as_dict())
    sizes = ("num_qo_heads", "num_kv_heads", "head_dim", "page_size")
    again = AttentionConfig(*(back[k] for k in sizes),
                            **{k: v for k, v in back.items() if k not in sizes})
    assert again == cfg


@pytest.mark.parametrize("kw, match", [
    (dict(head_dim_vo=128), r"head_dim_vo \(128\) differs from head_dim \(192\): k and v "
                            r"need a cache each \(a pair or ragged K/V\), not one pool"),
    (dict(head_dim_vo=256, kv_form="pair"),
     r"head_dim_vo \(256\) larger than head_dim \(192\) is not supported"),
    (dict(head_dim_vo=100, kv_form="pair"), "head_dim_vo must be a multiple of 8, got 100"),
    (dict(head_dim_vo=0, kv_form="pair"), "head_dim_vo must be a positive int"),
    (dict(head_dim_vo=-64, kv_form="pair"), "head_dim_vo must be a positive int"),
    (dict(head_dim_vo=128.0, kv_form="pair"), "head_dim_vo must be a positive int"),
])
def test_python_refusals(kw, match):
    with pytest.raises(ValueError, match=match):
        AttentionConfig(16, 16, 192, 16, **kw)


@pytest.mark.parametrize("over, match", [
    (dict(head_dim_vo=128), r"attention configuration: head_dim_vo \(128\) differs from "
                            r"head_dim \(192\): k and v need a cache each"),
    (dict(head_dim_vo=256, kv_form="pair"),
     r"head_dim_vo \(256\) larger than head_dim \(192\) is not supported"),
    (dict(head_dim_vo=-1, kv_form="pair"), "head_dim_vo must be positive"),
])
def test_cpp_refusals_are_the_same(over, match):
    d = dict(AttentionConfig(16, 16, 192, 16).as_dict(), **over)
    with pytest.raises(ValueError, match=match):
        cm.runtime._attention_config(d)


def test_decode_groups_have_no_head_dim_vo():
    cfg = AttentionConfig(16, 16, 192, 16, kv_form="pair", head_dim_vo=128)
    with pytest.raises(ValueError, match=r"only prefill levels take a head_dim of v of its "
                                         r"own, not decode"):
        K.attention_key(cfg, K.Group(decode=True))
    with pytest.raises(ValueError, match="not decode"):
        K.parse_key("decode.f16-f16.d192.h16x16.p16.nhd.pair.dv128")
    for bad in ("prefill.f16-f16.d192.h16x16.p16.nhd.pool.dv128",   # a pool
                "prefill.f16-f16.d192.h16x16.p16.nhd.pair.dv192",   # not normalised
                "prefill.f16-f16.d192.h16x16.p16.nhd.pair.dv256",   # larger
                "prefill.f16-f16.d192.h16x16.p16.nhd.pair.of32.dv128"):  # out of order
        with pytest.raises(ValueError, match="not a kernel bundle key"):
            K.parse_key(bad)


# --- plan inputs -------------------------------------------------------------------

def test_plan_takes_head_dim_vo():
    # One request split over many KV chunks: the float workspace holds the
    # partial outputs, whose rows have v's head_dim.
    kw = dict(qo_indptr=np.array([0, 64], np.int32), kv_indices=np.arange(256, dtype=np.int32),
              num_qo_heads=16, num_kv_heads=16, head_dim=192, page_size=16, num_sms=132,
              fixed_split_pages=8)
    args = ("prefill", np.array([0, 256], np.int32), np.array([16], np.int32))
    wide = cm.runtime.plan(*args, **kw)
    narrow = cm.runtime.plan(*args, head_dim_vo=128, **kw)
    assert wide["split_kv"] and narrow["split_kv"]
    assert narrow["float_workspace_bytes"] < wide["float_workspace_bytes"]
    assert cm.runtime.plan(*args, head_dim_vo=192, **kw)["float_workspace_bytes"] == \
        wide["float_workspace_bytes"]
    res = cm.runtime.auto_cascade(*args, head_dim_vo=128, **kw)
    assert res["levels"]


# --- run()'s checks (host arrays) ----------------------------------------------------

SPLIT = AttentionConfig(16, 4, 192, 16, kv_form="pair", head_dim_vo=128)


def check(q, kv, out=None, lse=None, cfg=SPLIT, rows=7, max_page_id=9):
    cm.runtime._check_call(q, kv, out, lse, cfg.as_dict(), rows, max_page_id, -1)


@pytest.fixture
def split_args():
    return (np.zeros((7, 16, 192), np.float16), np.zeros((10, 16, 4, 192), np.float16),
            np.zeros((10, 16, 4, 128), np.float16))


def test_run_checks_take_q_k_of_head_dim_and_v_out_of_head_dim_vo(split_args):
    q, k, v = split_args
    check(q, (k, v), out=np.zeros((7, 16, 128), np.float16), lse=np.zeros((7, 16), np.float32))
    hnd = dataclasses.replace(SPLIT, kv_layout="hnd")
    check(q, (k.transpose(0, 2, 1, 3).copy(), v.transpose(0, 2, 1, 3).copy()), cfg=hnd)
    # Ragged K/V: token pages of one token, views of [tokens, Hkv, D].
    ragged = dataclasses.replace(SPLIT, page_size=1, kv_form="ragged")
    check(q, (np.zeros((10, 4, 192), np.float16)[:, None],
              np.zeros((10, 4, 128), np.float16)[:, None]), cfg=ragged)


@pytest.mark.parametrize("mutate, exc, match", [
    (lambda q, k, v: (q[:, :, :128], (k, v)), ValueError,
     r"q has shape \[7, 16, 128\], expected \[7, 16, 192\]"),
    (lambda q, k, v: (q, (k, k)), ValueError,
     r"paged_kv_cache\[1\] has shape \[10, 16, 4, 192\], expected \[\*, 16, 4, 128\] "
     r"\(\[max_num_pages, page_size, num_kv_heads, head_dim_vo\] for NHD\)"),
    (lambda q, k, v: (q, (v, v)), ValueError,
     r"paged_kv_cache\[0\] has shape \[10, 16, 4, 128\], expected \[\*, 16, 4, 192\] "
     r"\(\[max_num_pages, page_size, num_kv_heads, head_dim\] for NHD\)"),
    (lambda q, k, v: (q, np.zeros((10, 2, 16, 4, 192), np.float16)), ValueError,
     r"paged_kv_cache is one tensor, but the plan's head_dim_vo \(128\) differs from "
     r"head_dim \(192\): pass a \(k_cache, v_cache\) pair"),
    # The halves of one pool are not taken as the pool (no pool holds head_dim_vo).
    (lambda q, k, v: (q, tuple(np.zeros((10, 2, 16, 4, 192), np.float16)[:, i]
                               for i in range(2))), ValueError,
     r"paged_kv_cache\[1\] has shape \[10, 16, 4, 192\]"),
    (lambda q, k, v: (q, (k, v[:5])), ValueError, "different numbers of pages"),
])
def test_run_checks_name_the_dim(split_args, mutate, exc, match):
    q, kv = mutate(*split_args)
    with pytest.raises(exc, match=match):
        check(q, kv)


def test_out_is_checked_against_head_dim_vo(split_args):
    q, k, v = split_args
    with pytest.raises(ValueError, match=r"out has shape \[7, 16, 192\], expected "
                                         r"\[7, 16, 128\] \(\[rows of q, num_qo_heads, "
                                         r"head_dim_vo\]"):
        check(q, (k, v), out=np.zeros((7, 16, 192), np.float16))
    with pytest.raises(ValueError, match="lse has shape"):
        check(q, (k, v), lse=np.zeros((7, 4), np.float32))


# --- the float64 reference of the wrappers ---------------------------------------------

def pages_of(x, page, layout):
    """[T, Hkv, D] as pages [ceil(T / page), page, Hkv, D] (NHD) or [.., Hkv,
    page, D] (HND), zero-padded, and the last page's length."""
    t = x.shape[0]
    n = -(-t // page)
    p = np.zeros((n * page,) + x.shape[1:], x.dtype)
    p[:t] = x
    p = p.reshape(n, page, *x.shape[1:])
    if layout == "HND":
        p = np.ascontiguousarray(p.transpose(0, 2, 1, 3))
    return p, t - (n - 1) * page


@pytest.mark.parametrize("layout", ["NHD", "HND"])
@pytest.mark.parametrize("page", [16, 1])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("hq, hkv, d, dv", [(16, 4, 192, 128), (8, 8, 128, 64)])
def test_paged_prefill_reference(rng, layout, page, causal, hq, hkv, d, dv):
    qo_lens, kv_lens = [5, 1, 12], [37, 9, 12]
    ks = [randn(rng, n, hkv, d) for n in kv_lens]
    vs = [randn(rng, n, hkv, dv) for n in kv_lens]
    # Pages of the requests in a shuffled order in one pair of caches.
    kp, vp, last, counts = [], [], [], []
    for k, v in zip(ks, vs):
        a, n_last = pages_of(k, page, layout)
        b, _ = pages_of(v, page, layout)
        kp.append(a)
        vp.append(b)
        last.append(n_last)
        counts.append(a.shape[0])
    k_cache, v_cache = np.concatenate(kp), np.concatenate(vp)
    order = rng.permutation(k_cache.shape[0])
    inv = np.argsort(order)
    k_cache, v_cache = k_cache[order], v_cache[order]
    indices = inv.astype(np.int32)
    kv_indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    qo_indptr = np.concatenate([[0], np.cumsum(qo_lens)]).astype(np.int32)
    q = randn(rng, int(qo_indptr[-1]), hq, d)
    w = cm.BatchPrefillWithPagedKVCacheWrapper(None, layout)
    w.plan(qo_indptr, kv_indptr, indices, np.array(last, np.int32), hq, hkv, d, page,
           head_dim_vo=dv, causal=causal)
    o, lse = w.run(q, (k_cache, v_cache), return_lse=True)
    assert o.shape == (q.shape[0], hq, dv) and o.dtype == np.float16
    for i in range(len(qo_lens)):
        rows = slice(qo_indptr[i], qo_indptr[i + 1])
        eo, el = direct(q[rows], ks[i], vs[i], causal)
        np.testing.assert_allclose(o[rows], eo, atol=2e-3)
        np.testing.assert_allclose(lse[rows], el, rtol=1e-5, atol=1e-5)
    out = np.empty((q.shape[0], hq, dv), np.float16)
    assert w.run(q, (k_cache, v_cache), out=out) is out
    np.testing.assert_array_equal(out, o)


@pytest.mark.parametrize("layout", ["NHD", "HND"])
@pytest.mark.parametrize("causal", [False, True])
def test_ragged_prefill_reference(rng, layout, causal):
    hq, hkv, d, dv = 16, 16, 192, 128
    qo_indptr = np.array([0, 3, 3, 11], np.int32)
    kv_indptr = np.array([0, 20, 24, 35], np.int32)
    k, v = randn(rng, 35, hkv, d), randn(rng, 35, hkv, dv)
    q = randn(rng, 11, hq, d)
    kk, vv = (np.ascontiguousarray(x.transpose(1, 0, 2)) if layout == "HND" else x
              for x in (k, v))
    w = cm.BatchPrefillWithRaggedKVCacheWrapper(None, layout)
    w.plan(qo_indptr, kv_indptr, hq, hkv, d, head_dim_vo=dv, causal=causal,
           logits_soft_cap=20.0)
    o, lse = w.run_return_lse(q, kk, vv)
    assert o.shape == (11, hq, dv)
    for i in range(3):
        rows = slice(qo_indptr[i], qo_indptr[i + 1])
        keys = slice(kv_indptr[i], kv_indptr[i + 1])
        eo, el = direct(q[rows], k[keys], v[keys], causal, logits_soft_cap=20.0)
        np.testing.assert_allclose(o[rows], eo, atol=2e-3)
        np.testing.assert_allclose(lse[rows], el, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("layout", ["NHD", "HND"])
@pytest.mark.parametrize("d, dv", [(192, 128), (96, 64)])
def test_single_prefill_infers_the_dims_from_the_shapes(rng, layout, d, dv):
    q, k, v = randn(rng, 9, 8, d), randn(rng, 30, 2, d), randn(rng, 30, 2, dv)
    kk, vv = (np.ascontiguousarray(x.transpose(1, 0, 2)) if layout == "HND" else x
              for x in (k, v))
    o, lse = cm.single_prefill_with_kv_cache(q, kk, vv, causal=True, kv_layout=layout,
                                             sm_scale=0.07, return_lse=True)
    eo, el = direct(q, k, v, causal=True, sm_scale=0.07)
    assert o.shape == (9, 8, dv)
    np.testing.assert_allclose(o, eo, atol=2e-3)
    np.testing.assert_allclose(lse, el, rtol=1e-5, atol=1e-5)


def test_automatic_cascade_reference(rng):
    # Four requests sharing 8 pages: a shared prefill level and the
    # requests' own (accumulating, causal) level, both of v's head_dim.
    hq, hkv, d, dv, page = 8, 2, 192, 128, 16
    idx = np.array(sum([list(range(8)) + [8 + 2 * i, 9 + 2 * i] for i in range(4)], []),
                   np.int32)
    kp, qo = np.arange(0, 41, 10, dtype=np.int32), np.arange(0, 13, 3, dtype=np.int32)
    k_cache, v_cache = randn(rng, 16, page, hkv, d), randn(rng, 16, page, hkv, dv)
    q = randn(rng, 12, hq, d)
    w = cm.BatchPrefillWithPagedKVCacheWrapper(None)
    w.plan(qo, kp, idx, np.full(4, page, np.int32), hq, hkv, d, page, head_dim_vo=dv,
           causal=True, auto_cascade={"level_overhead_us": 0, "group_overhead_us": 0,
                                      "bandwidth_bytes_per_us": 1.0,
                                      "l2_hidden_fraction": 0.0})
    assert w.auto_cascade_stats["shared_levels"] == 1
    o, lse = w.run(q, (k_cache, v_cache), return_lse=True)
    assert o.shape == (12, hq, dv)
    for i in range(4):
        pages = idx[kp[i]:kp[i + 1]]
        eo, el = direct(q[qo[i]:qo[i + 1]], k_cache[pages].reshape(-1, hkv, d),
                        v_cache[pages].reshape(-1, hkv, dv), causal=True)
        np.testing.assert_allclose(o[qo[i]:qo[i + 1]], eo, atol=2e-3)
        np.testing.assert_allclose(lse[qo[i]:qo[i + 1]], el, rtol=1e-5, atol=1e-5)


def test_reference_refuses_what_the_kernels_refuse(rng):
    hq, hkv, d, dv = 8, 8, 192, 128
    qo, kp = np.array([0, 4], np.int32), np.array([0, 2], np.int32)
    w = cm.BatchPrefillWithPagedKVCacheWrapper(None)
    w.plan(qo, kp, np.arange(2, dtype=np.int32), np.array([16], np.int32), hq, hkv, d, 16,
           head_dim_vo=dv)
    q = randn(rng, 4, hq, d)
    with pytest.raises(ValueError, match=r"paged_kv_cache is one tensor, but the plan's "
                                         r"head_dim_vo \(128\) differs"):
        w.run(q, randn(rng, 2, 2, 16, hkv, d))
    with pytest.raises(ValueError, match=r"paged_kv_cache\[1\] has shape \[2, 16, 8, 192\], "
                                         r"expected 4-D pages whose last dim is head_dim_vo"):
        w.run(q, (randn(rng, 2, 16, hkv, d), randn(rng, 2, 16, hkv, d)))
    with pytest.raises(ValueError, match=r"out has shape \[4, 8, 192\], expected "
                                         r"\[4, 8, 128\]"):
        w.run(q, (randn(rng, 2, 16, hkv, d), randn(rng, 2, 16, hkv, dv)),
              out=np.empty((4, hq, d), np.float16))


def test_wrapper_refusals(rng):
    qo, kp = np.array([0, 4], np.int32), np.array([0, 2], np.int32)
    w = cm.BatchPrefillWithPagedKVCacheWrapper(None)
    args = (qo, kp, np.arange(2, dtype=np.int32), np.array([16], np.int32), 8, 8)
    with pytest.raises(ValueError, match=r"head_dim_vo \(256\) larger than head_dim \(192\)"):
        w.plan(*args, 192, 16, head_dim_vo=256)
    with pytest.raises(ValueError, match="head_dim_vo must be a multiple of 8"):
        w.plan(*args, 192, 16, head_dim_vo=120 + 4)
    r = cm.BatchPrefillWithRaggedKVCacheWrapper(None)
    with pytest.raises(ValueError, match=r"head_dim_vo \(256\) larger than head_dim \(128\)"):
        r.plan(qo, np.array([0, 9], np.int32), 8, 8, 128, head_dim_vo=256)
    r.plan(qo, np.array([0, 9], np.int32), 8, 8, 128, head_dim_vo=64)
    with pytest.raises(ValueError, match=r"k has shape \[9, 8, 128\] but v \[9, 4, 64\]: they "
                                         r"must agree in tokens and heads"):
        r.run(randn(rng, 4, 8, 128), randn(rng, 9, 8, 128), randn(rng, 9, 4, 64))
    # Decode takes one head_dim, as FlashInfer's decode.
    with pytest.raises(ValueError, match=r"v's head_dim \(64\) differs from k's \(128\): "
                                         r"decode takes one head_dim"):
        cm.single_decode_with_kv_cache(randn(rng, 8, 128), randn(rng, 9, 8, 128),
                                       randn(rng, 9, 8, 64))
    with pytest.raises(ValueError, match="head_dim_vo"):
        cm.single_prefill_with_kv_cache(randn(rng, 4, 8, 64), randn(rng, 9, 8, 64),
                                        randn(rng, 9, 8, 128))


# --- bundles (where the package has a compiler) ----------------------------------------

def test_a_ragged_prefill_bundle_compiles(tmp_path):
    if not K.can_compile():
        pytest.skip("this cascade_mlir has no compiler (runtime only)")
    cfg = AttentionConfig(16, 16, 192, 1, q_dtype="bf16", kv_form="ragged", head_dim_vo=128)
    key = K.attention_key(cfg, CAUSAL)
    path = K.build_bundle(key, str(tmp_path), "sm_90a", cubin=False)
    with open(os.path.join(path, "manifest.json")) as f:
        manifest = json.load(f)
    statics = [k["static"] for k in manifest["kernels"] if k["op"].startswith("prefill")]
    assert statics, manifest
    for s in statics:
        assert s["head_dim"] == 192 and s["head_dim_vo"] == 128, s


# --- the GPU path on the stand-in driver (tests/fake_cuda) ------------------------------

FAKE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_cuda")
STAND_IN_KEYS = [
    K.attention_key(AttentionConfig(16, 4, 192, 1, kv_form="ragged", head_dim_vo=128), CAUSAL),
    K.attention_key(AttentionConfig(16, 4, 192, 16, kv_form="pair", head_dim_vo=128), PREFILL),
    K.attention_key(AttentionConfig(16, 4, 192, 1, kv_form="pair", head_dim_vo=128), PREFILL),
]

STAND_IN_SCRIPT = r'''
import sys

import numpy as np

sys.path.insert(0, sys.argv[1])
from stand_in import Dev, aligned, arg, check, launches  # noqa: E402

import cascade_mlir as cm  # noqa: E402

ws = Dev(aligned((64 << 20,), np.uint8))
hq, hkv, d, dv = 16, 4, 192, 128
qo = np.array([0, 5, 5, 40], np.int32)
q = Dev(aligned((40, hq, d), np.float16))

# Ragged K/V, NHD: contiguous k [tokens, Hkv, 192] and v [tokens, Hkv, 128].
r = cm.BatchPrefillWithRaggedKVCacheWrapper(ws, "NHD")
r.plan(qo, np.array([0, 37, 40, 90], np.int32), hq, hkv, d, head_dim_vo=dv, causal=True)
o, lse = r.run(q, Dev(aligned((90, hkv, d), np.float16)), Dev(aligned((90, hkv, dv), np.float16)),
               return_lse=True)
check(tuple(o.shape) == (40, hq, dv) and tuple(lse.shape) == (40, hq), f"shapes {o.shape}")
rec = launches()
check(rec and all("d192v128" in x["name"] for x in rec), [x["name"] for x in rec])
check(arg(rec[0], "o") == (o.ptr, 40 * hq * dv), "o is the [rows, heads, 128] output")

# HND: k and v are transposed views with strides of their own (v's head_dim
# differs, so its token and head strides are v's own parameters).
r = cm.BatchPrefillWithRaggedKVCacheWrapper(ws, "HND")
r.plan(qo, np.array([0, 37, 40, 90], np.int32), hq, hkv, d, head_dim_vo=dv, causal=True)
k_hnd, v_hnd = Dev(aligned((hkv, 90, d), np.float16)), Dev(aligned((hkv, 90, dv), np.float16))
o = r.run(q, k_hnd, v_hnd)
rec = launches()
check(tuple(o.shape) == (40, hq, dv), f"HND output {o.shape}")
check(r._engine.program.copy_fallbacks == 0, "HND k and v read in place")
check((arg(rec[0], "kv_stride_n"), arg(rec[0], "kv_stride_h")) == (d, 90 * d), "k's strides")
check((arg(rec[0], "v_stride_n"), arg(rec[0], "v_stride_h")) == (dv, 90 * dv), "v's strides")
check(arg(rec[0], "k_cache")[0] == k_hnd.ptr and arg(rec[0], "v_cache")[0] == v_hnd.ptr,
      "the views themselves")

# Paged (k_cache, v_cache) pair, page 16.
p = cm.BatchPrefillWithPagedKVCacheWrapper(ws, "NHD")
p.plan(qo, np.array([0, 3, 3, 10], np.int32), np.arange(10, dtype=np.int32),
       np.array([5, 1, 16], np.int32), hq, hkv, d, 16, head_dim_vo=dv)
kc, vc = Dev(aligned((10, 16, hkv, d), np.float16)), Dev(aligned((10, 16, hkv, dv), np.float16))
out = Dev(aligned((40, hq, dv), np.float16))
check(p.run(q, (kc, vc), out=out) is out, "out= is returned")
rec = launches()
check(rec and "d192v128" in rec[0]["name"] and arg(rec[-1], "o")[0] == out.ptr, rec)
for bad, what in (((q, Dev(aligned((10, 2, 16, hkv, d), np.float16))), "is one tensor"),
                  ((q, (kc, kc)), "paged_kv_cache[1] has shape"),
                  ((q, (kc, vc), Dev(aligned((40, hq, d), np.float16))), "out has shape")):
    try:
        p.run(*bad[:2], out=bad[2] if len(bad) > 2 else None)
    except ValueError as e:
        check(what in str(e), str(e))
    else:
        raise AssertionError(f"no error for {what}")
check(not launches(), "nothing launched by a refused call")

# single_prefill_with_kv_cache infers head_dim_vo from v.
o = cm.single_prefill_with_kv_cache(Dev(aligned((7, hq, d), np.float16)),
                                    Dev(aligned((30, hkv, d), np.float16)),
                                    Dev(aligned((30, hkv, dv), np.float16)))
check(tuple(o.shape) == (7, hq, dv), f"single prefill output {o.shape}")
check(all("d192v128" in x["name"] for x in launches()), "single prefill kernels")
print("OK head_dim_vo")
'''


def test_gpu_path_on_a_stand_in_driver(tmp_path):
    """The wrappers' GPU path (plan, binding, run()'s checks, the outputs
    allocated [rows, heads, head_dim_vo], v's own strides) on the stand-in
    driver, with the bundles compiled here."""
    import shutil
    import subprocess
    import sys
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler here to build the stand-in CUDA driver")
    if cm.compiler is None:
        pytest.skip("this cascade_mlir has no compiler module to build the bundles with")
    lib = tmp_path / "libfakecuda.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(lib),
                    os.path.join(FAKE_DIR, "fake_cuda.c")], check=True)
    root = tmp_path / "bundles"
    for key in STAND_IN_KEYS:  # PTX only: the stand-in reads it
        K.build_bundle(key, str(root), "sm_90a", cubin=False)
    script = tmp_path / "check.py"
    script.write_text(STAND_IN_SCRIPT)
    env = dict(os.environ, CASCADE_CUDA_DRIVER=str(lib), CASCADE_MLIR_KERNEL_PATH=str(root),
               CASCADE_MLIR_CACHE_DIR=str(tmp_path / "cache"), CASCADE_MLIR_NO_JIT="1")
    r = subprocess.run([sys.executable, str(script), FAKE_DIR], env=env, capture_output=True,
                       text=True)
    assert r.returncode == 0 and "OK head_dim_vo" in r.stdout, r.stdout + r.stderr
