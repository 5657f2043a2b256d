"""Attention sinks (FlashInfer's `sinks`): one logit per query head joins
the softmax's denominator. On the CPU reference through the wrappers and the
runtime's reference, against float64 written out here; the kernel groups
and keys that carry them; the errors."""
import numpy as np
import pytest

import cascade_mlir as cm
from cascade_mlir import _runtime
from cascade_mlir.kernels import Group, attention_key, parse_key


def sink_attention(q, k, v, sm_scale, sinks):
    """float64: o = sum e^x v / (e^sink + sum e^x), lse (base 2) with the
    sink; q [Hq, D], k, v [T, Hkv, D], sinks [Hq] in natural-log units."""
    hq, hkv = q.shape[0], k.shape[1]
    g = hq // hkv
    out = np.zeros((hq, q.shape[1]))
    lse = np.zeros(hq)
    for h in range(hq):
        x = (k[:, h // g] @ q[h]) * sm_scale if len(k) else np.zeros(0)
        m = max(x.max(initial=-np.inf), float(sinks[h]))
        w = np.exp(x - m)
        denom = w.sum() + np.exp(float(sinks[h]) - m)
        out[h] = (w @ v[:, h // g]) / denom if len(k) else 0.0
        lse[h] = (m + np.log(denom)) / np.log(2.0)
    return out, lse


def paged_batch(rng, lens, page, hkv, d):
    pages = [-(-n // page) for n in lens]
    total = sum(pages)
    pool = rng.standard_normal((total, 2, page, hkv, d)).astype(np.float32)
    indptr = np.concatenate([[0], np.cumsum(pages)]).astype(np.int32)
    indices = rng.permutation(total).astype(np.int32)
    last = np.array([(n - 1) % page + 1 if n else 1 for n in lens], np.int32)
    return pool, indptr, indices, last


def request_kv(pool, indptr, indices, lens, i, hkv, d):
    ids = indices[indptr[i]:indptr[i + 1]]
    k = pool[ids, 0].reshape(-1, hkv, d)[:lens[i]].astype(np.float64)
    v = pool[ids, 1].reshape(-1, hkv, d)[:lens[i]].astype(np.float64)
    return k, v


@pytest.mark.parametrize("wrapper", ["decode", "sink"])
def test_wrapper_run_with_sinks_equals_float64(rng, wrapper):
    hq, hkv, d, page = 8, 2, 32, 4
    lens = [9, 0, 4, 13]  # one request without keys: only its sinks
    pool, indptr, indices, last = paged_batch(rng, lens, page, hkv, d)
    q = rng.standard_normal((len(lens), hq, d)).astype(np.float32)
    sinks = rng.uniform(-3, 3, hq).astype(np.float32)
    if wrapper == "decode":
        w = cm.BatchDecodeWithPagedKVCacheWrapper(None)
        w.plan(indptr, indices, last, hq, hkv, d, page)
        o, lse = w.run(q, pool, sinks=sinks, return_lse=True)
    else:
        w = cm.BatchAttentionWithAttentionSinkWrapper(None)
        qo = np.arange(len(lens) + 1, dtype=np.int32)
        w.plan(qo, indptr, indices, last, hq, hkv, d, page)
        o, lse = w.run(q, pool, sinks, 1 / np.sqrt(d), return_lse=True)
    for i in range(len(lens)):
        k, v = request_kv(pool, indptr, indices, lens, i, hkv, d)
        eo, el = sink_attention(q[i].astype(np.float64), k, v, 1 / np.sqrt(d), sinks)
        np.testing.assert_allclose(o[i], eo, rtol=2e-5, atol=2e-6)
        np.testing.assert_allclose(lse[i], el, rtol=1e-5, atol=1e-6)
    # Without keys the state is the sinks' own: (0, sink * log2(e)).
    assert (o[1] == 0).all()
    np.testing.assert_allclose(lse[1], sinks / np.log(2.0), rtol=1e-6)


def test_sinks_change_the_output_and_run_without_them_still_works(rng):
    hq, hkv, d, page = 4, 4, 16, 8
    lens = [5, 11]
    pool, indptr, indices, last = paged_batch(rng, lens, page, hkv, d)
    q = rng.standard_normal((2, hq, d)).astype(np.float32)
    w = cm.BatchDecodeWithPagedKVCacheWrapper(None)
    w.plan(indptr, indices, last, hq, hkv, d, page)
    plain, plain_lse = w.run(q, pool, return_lse=True)
    big = np.full(hq, 4.0, np.float32)
    with_sinks, sink_lse = w.run(q, pool, sinks=big, return_lse=True)
    assert np.all(sink_lse > plain_lse)  # the denominator only grows
    assert np.all(np.abs(with_sinks) < np.abs(plain) + 1e-7)
    again = w.run(q, pool)
    np.testing.assert_array_equal(again, plain)


def test_cascade_reference_applies_sinks_once(rng):
    """A two-level cascade over a shared prefix with sinks equals flat
    attention with sinks: the sinks join once, not once per level."""
    hq, hkv, d, page = 4, 2, 16, 4
    b = 3
    shared, own = 2, [1, 3, 2]
    total = shared + sum(own)
    pool = rng.standard_normal((total, 2, page, hkv, d)).astype(np.float32)
    q = rng.standard_normal((b, hq, d)).astype(np.float32)
    sinks = rng.uniform(-2, 2, hq).astype(np.float32)
    own_indptr = np.concatenate([[0], np.cumsum(own)]).astype(np.int32)
    own_idx = np.arange(shared, total, dtype=np.int32)
    last = np.array([3, 4, 1], np.int32)
    levels = [
        _runtime.Level(np.array([0, b], np.int32), np.array([0, shared], np.int32),
                       np.arange(shared, dtype=np.int32), np.array([page], np.int32)),
        _runtime.Level(np.arange(b + 1, dtype=np.int32), own_indptr, own_idx, last),
    ]
    o, lse = _runtime.ref_attention(q, [pool], levels, page,
                                    state_inputs={"sinks": sinks})
    for i in range(b):
        ids = list(range(shared)) + list(own_idx[own_indptr[i]:own_indptr[i + 1]])
        n = shared * page + (own[i] - 1) * page + last[i]
        k = pool[ids, 0].reshape(-1, hkv, d)[:n].astype(np.float64)
        v = pool[ids, 1].reshape(-1, hkv, d)[:n].astype(np.float64)
        eo, el = sink_attention(q[i].astype(np.float64), k, v, 1 / np.sqrt(d), sinks)
        np.testing.assert_allclose(o[i], eo, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(lse[i], el, rtol=1e-9, atol=1e-12)


def test_sink_groups_have_their_own_keys():
    cfg = cm.AttentionConfig(8, 2, 64, 16)
    for group in (Group(decode=True, state_inputs=("sinks",)),
                  Group(decode=False, causal=True, accumulate=True,
                        state_inputs=("sinks",))):
        key = attention_key(cfg, group)
        assert "-sinks." in key
        assert parse_key(key) == (cfg, group)
        assert key != attention_key(cfg, Group(decode=group.decode, causal=group.causal,
                                                accumulate=group.accumulate))


def test_bad_sinks_are_refused(rng):
    hq, hkv, d, page = 4, 2, 16, 4
    pool, indptr, indices, last = paged_batch(rng, [5], page, hkv, d)
    q = rng.standard_normal((1, hq, d)).astype(np.float32)
    w = cm.BatchDecodeWithPagedKVCacheWrapper(None)
    w.plan(indptr, indices, last, hq, hkv, d, page)
    with pytest.raises(ValueError, match=r"sinks must be \[num_qo_heads\] = \[4\]"):
        w.run(q, pool, sinks=np.zeros(3, np.float32))
    s = cm.BatchAttentionWithAttentionSinkWrapper(None)
    s.plan(np.array([0, 1], np.int32), indptr, indices, last, hq, hkv, d, page)
    with pytest.raises(ValueError, match="needs the attention sinks"):
        s.run(q, pool)
    with pytest.raises(ValueError, match="sm_scale=0.5 differs from plan"):
        s.run(q, pool, np.zeros(hq, np.float32), 0.5)


def test_state_inputs_are_named(rng):
    """The reference takes state inputs by name and refuses one it does not
    know; a key spells each after the group's flags."""
    hq, hkv, d, page = 4, 2, 16, 4
    pool, indptr, indices, last = paged_batch(rng, [5], page, hkv, d)
    q = rng.standard_normal((1, hq, d)).astype(np.float32)
    levels = [_runtime.Level(np.array([0, 1], np.int32), indptr, indices, last)]
    with pytest.raises(ValueError, match="'bias' is not a state input"):
        _runtime.ref_attention(q, [pool], levels, page,
                               state_inputs={"bias": np.zeros(hq, np.float32)})
    with pytest.raises(ValueError, match=r"sinks must be \[num_qo_heads\] = \[4\]"):
        _runtime.ref_attention(q, [pool], levels, page,
                               state_inputs={"sinks": np.zeros(3, np.float32)})
    cfg = cm.AttentionConfig(8, 2, 64, 16)
    for bad in ("decode-sinks-sinks", "decode-Sinks", "decode-sink2"):
        with pytest.raises(ValueError, match="is not a kernel bundle key"):
            parse_key(f"{bad}.{cfg.key()}")
