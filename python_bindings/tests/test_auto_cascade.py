"""plan(..., auto_cascade=True) of the batch decode / prefill wrappers on the
host: argument errors, the statistics and levels (equal to what the
runtime's makeAutoCascadePlan gives, here through the binding and through
the cascade-plan tool), and results of the float64 CPU reference against a
numpy float64 attention and against the plain plan. The GPU path is in
gpu/test_gpu_auto_cascade.py and fake_cuda/fake_device_checks.py."""
import inspect
import json
import os
import shutil
import subprocess

import numpy as np
import pytest

import cascade_mlir as cm
from cascade_mlir import _runtime

HQ, HKV, D, PAGE = 8, 2, 64, 4
#: A cost model under which any sharing of two requests pays (the tiny
#: batches here save far less than one launch costs on a GPU).
EAGER = {"level_overhead_us": 0.0, "group_overhead_us": 0.0, "level_row_bytes": 0.0,
         "l2_hidden_fraction": 0.0}


def grouped_batch(rng, groups=((3, 6), (1, 0), (4, 9)), unique=(1, 4), num_pages=None,
                  shuffle=True):
    """Requests in groups: each group's members start with the same
    `shared` page ids, then have their own 1-3 pages. Page ids are a random
    permutation of the pool (any order is fine)."""
    lists = []
    for members, shared in groups:
        prefix = [None] * shared
        for _ in range(members):
            own = int(rng.integers(unique[0], unique[1]))
            lists.append((prefix, own))
    total = sum(s for _, s in groups) + sum(o for _, o in lists) + 8
    pool = rng.permutation(num_pages or total) if shuffle else np.arange(num_pages or total)
    nxt = iter(pool.tolist())
    ids, indptr = [], [0]
    prefixes = {}
    for prefix, own in lists:
        key = id(prefix)
        if key not in prefixes:
            prefixes[key] = [next(nxt) for _ in prefix]
        ids += prefixes[key] + [next(nxt) for _ in range(own)]
        indptr.append(len(ids))
    b = len(lists)
    last = rng.integers(1, PAGE + 1, size=b).astype(np.int32)
    return (np.array(indptr, np.int32), np.array(ids, np.int32), last,
            int(pool.size))


def attention64(q, kv, qo, kp, ki, kl, causal=False):
    """Plain float64 attention of every request over its pages (NHD pool)."""
    g = HQ // HKV
    out = np.zeros(q.shape, np.float64)
    for r in range(kp.size - 1):
        pages = ki[kp[r]:kp[r + 1]]
        if pages.size == 0:
            continue
        n = (pages.size - 1) * PAGE + int(kl[r])
        k = kv[pages, 0].reshape(-1, HKV, D)[:n].astype(np.float64)
        v = kv[pages, 1].reshape(-1, HKV, D)[:n].astype(np.float64)
        rows = range(qo[r], qo[r + 1])
        for i, row in enumerate(rows):
            visible = n - (len(rows) - 1 - i) if causal else n
            for h in range(HQ):
                s = k[:visible, h // g] @ q[row, h].astype(np.float64) / np.sqrt(D)
                p = np.exp(s - s.max())
                out[row, h] = p @ v[:visible, h // g] / p.sum()
    return out


def run_both(rng, wrapper_cls, qo, kp, ki, kl, num_pages, auto, causal=None):
    kw = {} if causal is None else {"causal": causal}
    rows = int(qo[-1])
    q = rng.standard_normal((rows, HQ, D)).astype(np.float32)
    kv = rng.standard_normal((num_pages, 2, PAGE, HKV, D)).astype(np.float32)
    results = []
    for setting in (auto, False):
        w = wrapper_cls(np.empty(1 << 20, np.uint8))
        args = (kp, ki, kl) if wrapper_cls is cm.BatchDecodeWithPagedKVCacheWrapper \
            else (qo, kp, ki, kl)
        w.plan(*args, HQ, HKV, D, PAGE, **kw, auto_cascade=setting)
        results.append((w, w.run(q, kv)))
    return q, kv, results


def test_decode_grouped_sharing_equals_plain_attention(rng):
    kp, ki, kl, n = grouped_batch(rng)
    qo = np.arange(kp.size, dtype=np.int32)
    q, kv, ((w, o), (plain, o_plain)) = run_both(
        rng, cm.BatchDecodeWithPagedKVCacheWrapper, qo, kp, ki, kl, n, EAGER)
    st = w.auto_cascade_stats
    # Groups of 3 and 4 requests sharing 6 and 9 pages: two groups, one level.
    assert st["num_levels"] == 2 and st["shared_levels"] == 1
    assert st["shared_groups"] == 2
    assert st["pages_in"] == int(kp[-1])
    assert st["pages_saved"] == 2 * 6 + 3 * 9
    assert st["pages_read"] == st["pages_in"] - st["pages_saved"]
    assert plain.auto_cascade_stats is None and plain.auto_cascade_levels is None
    ref = attention64(q, kv, qo, kp, ki, kl)
    np.testing.assert_allclose(o, ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(o, o_plain, rtol=1e-5, atol=1e-5)


def test_levels_cover_each_request_pages_exactly(rng):
    kp, ki, kl, _ = grouped_batch(rng)
    w = cm.BatchDecodeWithPagedKVCacheWrapper(None)
    w.plan(kp, ki, kl, HQ, HKV, D, PAGE, auto_cascade=EAGER)
    levels = w.auto_cascade_levels
    assert [lv["mode"] for lv in levels] == ["prefill", "decode"]
    shared, own = levels
    assert shared["qo_indptr"].tolist() == [0, 3, 4, 8]  # the loner: a group of no pages
    assert shared["kv_last_page_len"].tolist() == [PAGE] * 3
    assert own["qo_indptr"] is None and own["kv_last_page_len"].tolist() == kl.tolist()
    for r in range(kp.size - 1):
        g = int(np.searchsorted(shared["qo_indptr"], r, side="right") - 1)
        pages = shared["kv_indices"][shared["kv_indptr"][g]:shared["kv_indptr"][g + 1]]
        pages = np.concatenate([pages, own["kv_indices"][own["kv_indptr"][r]:
                                                         own["kv_indptr"][r + 1]]])
        assert pages.tolist() == ki[kp[r]:kp[r + 1]].tolist()
    # The levels are copies: changing them changes nothing planned.
    levels[0]["kv_indices"][:] = -1
    assert (w.auto_cascade_levels[0]["kv_indices"] >= 0).all()


def test_no_worthwhile_sharing_is_the_plain_plan(rng):
    # Defaults: two requests sharing 6 small pages save far less than a
    # launch costs, so the plan is the plain batch, untouched.
    kp, ki, kl, n = grouped_batch(rng, groups=((2, 6), (3, 0)))
    w = cm.BatchDecodeWithPagedKVCacheWrapper(None)
    w.plan(kp, ki, kl, HQ, HKV, D, PAGE, auto_cascade=True)
    st = w.auto_cascade_stats
    assert st["num_levels"] == 1 and st["shared_groups"] == 0 and st["pages_saved"] == 0
    (lv,) = w.auto_cascade_levels
    assert lv["kv_indptr"].tolist() == kp.tolist() and lv["kv_indices"].tolist() == ki.tolist()


def test_everything_shared_and_duplicated_pages(rng):
    # One page list for every request (so also the same page id in several
    # requests, and page ids repeated inside a list).
    ids = rng.integers(0, 5, size=12).astype(np.int32)
    b = 6
    kp = np.arange(0, 12 * (b + 1), 12, dtype=np.int32)
    ki = np.tile(ids, b)
    kl = np.full(b, 3, np.int32)
    qo = np.arange(b + 1, dtype=np.int32)
    q, kv, ((w, o), (_, o_plain)) = run_both(
        rng, cm.BatchDecodeWithPagedKVCacheWrapper, qo, kp, ki, kl, 5, EAGER)
    st = w.auto_cascade_stats
    # Every request keeps its last page; the 11 before it are shared by all.
    assert st["num_levels"] == 2 and st["shared_groups"] == 1
    assert st["pages_saved"] == (b - 1) * 11
    ref = attention64(q, kv, qo, kp, ki, kl)
    np.testing.assert_allclose(o, ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(o, o_plain, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("causal", [False, True])
def test_prefill_sharing_causal_or_not(rng, causal):
    kp, ki, kl, n = grouped_batch(rng, groups=((3, 8), (3, 7)))
    lens = (np.diff(kp) - 1) * PAGE + kl
    qo_lens = np.minimum(rng.integers(1, 9, size=kl.size), lens)
    qo = np.concatenate([[0], np.cumsum(qo_lens)]).astype(np.int32)
    q, kv, ((w, o), (_, o_plain)) = run_both(
        rng, cm.BatchPrefillWithPagedKVCacheWrapper, qo, kp, ki, kl, n, EAGER,
        causal=causal)
    st = w.auto_cascade_stats
    assert st["shared_groups"] == 2 and st["pages_saved"] > 0
    ref = attention64(q, kv, qo, kp, ki, kl, causal=causal)
    np.testing.assert_allclose(o, ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(o, o_plain, rtol=1e-5, atol=1e-5)


def test_causal_prefill_shares_only_pages_every_query_sees(rng):
    # Two requests of 6 pages (24 tokens), 4 pages shared. Causal: the
    # first of q queries sees 24 - q + 1 tokens, and only pages every query
    # sees in full are shared: 20 queries see >= 5 tokens (1 page), 22
    # queries >= 3 (none). Not causal: all 4 shared pages.
    kp = np.array([0, 6, 12], np.int32)
    ki = np.array([0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 6, 7], np.int32)
    kl = np.array([PAGE, PAGE], np.int32)
    w = cm.BatchPrefillWithPagedKVCacheWrapper(None)
    for q_len, causal, saved in ((20, True, 1), (22, True, 0), (22, False, 4)):
        qo = np.array([0, q_len, 2 * q_len], np.int32)
        w.plan(qo, kp, ki, kl, HQ, HKV, D, PAGE, causal=causal, auto_cascade=EAGER)
        assert w.auto_cascade_stats["pages_saved"] == saved, (q_len, causal)


def test_equals_the_runtime_result(rng):
    kp, ki, kl, n = grouped_batch(rng, groups=((4, 5), (2, 3), (5, 7)))
    opts = dict(EAGER, max_levels=2)
    w = cm.BatchDecodeWithPagedKVCacheWrapper(None)
    w.plan(kp, ki, kl, HQ, HKV, D, PAGE, auto_cascade=opts)
    direct = _runtime.auto_cascade("decode", kp, kl, kv_indices=ki, num_qo_heads=HQ,
                                   num_kv_heads=HKV, head_dim=D, page_size=PAGE,
                                   causal=False, **opts)
    assert w.auto_cascade_stats == direct["stats"]
    for got, want in zip(w.auto_cascade_levels, direct["levels"]):
        for key in ("qo_indptr", "kv_indptr", "kv_indices", "kv_last_page_len"):
            assert (got[key] is None) == (want[key] is None)
            if got[key] is not None:
                assert got[key].tolist() == want[key].tolist(), key


def _cascade_plan_tool():
    exe = os.environ.get("CASCADE_PLAN")
    if not exe:
        pkg = os.path.dirname(os.path.dirname(os.path.abspath(cm.__file__)))
        exe = os.path.join(os.path.dirname(pkg), "bin", "cascade-plan")
    return exe if os.path.isfile(exe) else shutil.which("cascade-plan")


@pytest.mark.parametrize("graph", [False, True])
def test_levels_and_plans_equal_the_cascade_plan_tool(rng, graph):
    exe = _cascade_plan_tool()
    if exe is None:
        pytest.skip("no cascade-plan binary (set CASCADE_PLAN; a build tree has it in bin/)")
    kp, ki, kl, n = grouped_batch(rng, groups=((4, 5), (2, 3), (5, 7), (1, 2)))
    desc = {"mode": "decode", "kv_indptr": kp.tolist(), "kv_indices": ki.tolist(),
            "kv_last_page_len": kl.tolist(), "num_qo_heads": HQ, "num_kv_heads": HKV,
            "head_dim": D, "page_size": PAGE, "num_sms": 1, "occupancy": 1,
            "cuda_graph": graph, "causal": False, "auto_cascade": EAGER}
    out = subprocess.run([exe, "-"], input=json.dumps(desc), capture_output=True,
                         text=True)
    if out.returncode != 0:
        out = subprocess.run([exe], input=json.dumps(desc), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    tool = json.loads(out.stdout)
    direct = _runtime.auto_cascade("decode", kp, kl, kv_indices=ki, num_qo_heads=HQ,
                                   num_kv_heads=HKV, head_dim=D, page_size=PAGE, num_sms=1,
                                   cuda_graph=int(graph), causal=False, **EAGER)
    for key, value in tool["auto_cascade"].items():
        if key.endswith("_us"):  # the tool prints the times to the ns
            assert direct["stats"][key] == pytest.approx(value, abs=1e-3), key
        else:
            assert direct["stats"][key] == value, key
    assert len(tool["levels"]) == len(direct["levels"])
    for tl, dl in zip(tool["levels"], direct["levels"]):
        for key in ("kv_indptr", "kv_indices", "kv_last_page_len", "num_page_groups"):
            want = tl["inputs"][key]
            got = dl[key].tolist() if isinstance(dl[key], np.ndarray) else dl[key]
            assert got == want, key
        for key in ("batch_size", "num_work_items", "kv_chunk_size", "qo_tile_size",
                    "request_indices", "kv_tile_indices", "qo_tile_indices",
                    "o_indptr", "merge_indptr"):
            got = dl["plan"][key]
            got = got.tolist() if isinstance(got, np.ndarray) else got
            assert got == tl[key], key


def test_graph_mode_levels_are_padded_and_fixed(rng):
    kp, ki, kl, _ = grouped_batch(rng)
    b = kp.size - 1
    shapes = []
    for groups in (((3, 6), (1, 0), (4, 9)), ((8, 2),), ((1, 0),) * 8):
        kp, ki, kl, _ = grouped_batch(rng, groups=groups)
        res = _runtime.auto_cascade("decode", kp, kl, kv_indices=ki, num_qo_heads=HQ,
                                    num_kv_heads=HKV, head_dim=D, page_size=PAGE,
                                    cuda_graph=1, causal=False, **EAGER)
        shapes.append([(None if lv["qo_indptr"] is None else lv["qo_indptr"].size,
                        lv["kv_indptr"].size) for lv in res["levels"]])
    # max_levels (3) levels, every shared level B groups: the same shapes
    # whatever the sharing, so a captured graph stays valid.
    assert shapes[0] == shapes[1] == shapes[2] == [(b + 1, b + 1)] * 2 + [(None, b + 1)]


@pytest.mark.parametrize("bad, exc, match", [
    ("yes", TypeError, "auto_cascade must be True, False or a dict"),
    (1, TypeError, "auto_cascade must be True, False or a dict"),
    ({"causal": True}, ValueError, "unknown option 'causal'"),
    ({"max_level": 2}, ValueError, "unknown option 'max_level'"),
    ({"max_levels": "2"}, TypeError, r"auto_cascade\['max_levels'\] must be a number"),
    ({"max_levels": 2.5}, TypeError, r"auto_cascade\['max_levels'\] must be an int"),
    ({"max_levels": 0}, ValueError, "max_levels must be in"),
    ({"bandwidth_bytes_per_us": -1.0}, ValueError, "bandwidth must be positive"),
])
def test_bad_auto_cascade_arguments(rng, bad, exc, match):
    kp, ki, kl, _ = grouped_batch(rng)
    w = cm.BatchDecodeWithPagedKVCacheWrapper(None)
    with pytest.raises(exc, match=match):
        w.plan(kp, ki, kl, HQ, HKV, D, PAGE, auto_cascade=bad)


def test_auto_cascade_is_keyword_only_and_rejects_position_dependent_options(rng):
    kp, ki, kl, _ = grouped_batch(rng)
    w = cm.BatchDecodeWithPagedKVCacheWrapper(None)
    with pytest.raises(TypeError):
        w.plan(kp, ki, kl, HQ, HKV, D, PAGE, "NONE", -1, None, "float16", None, None,
               None, None, None, True, None, None, None, False, True)
    for kw in ({"pos_encoding_mode": "ROPE_LLAMA"}, {"window_left": 8}):
        with pytest.raises(ValueError, match="auto_cascade needs score options that "
                           "do not depend on absolute positions"):
            w.plan(kp, ki, kl, HQ, HKV, D, PAGE, auto_cascade=True, **kw)
    # Bad page tables get the runtime's plan errors, naming the problem.
    bad = ki.copy()
    bad[3] = -2
    with pytest.raises(ValueError, match="kv_indices"):
        w.plan(kp, bad, kl, HQ, HKV, D, PAGE, auto_cascade=True)
    p = cm.BatchPrefillWithPagedKVCacheWrapper(None)
    qo = np.arange(kp.size, dtype=np.int32)
    # FlashInfer's positional parameters all given, auto_cascade one more.
    n = sum(1 for a in inspect.signature(p.plan).parameters.values()
            if a.kind is a.POSITIONAL_OR_KEYWORD)
    with pytest.raises(TypeError):
        p.plan(qo, kp, ki, kl, HQ, HKV, D, PAGE, *([None] * (n - 8)), True)


def test_binding_rejects_unknown_options(rng):
    kp, ki, kl, _ = grouped_batch(rng)
    with pytest.raises(TypeError, match="unexpected keyword argument 'max_level'"):
        _runtime.auto_cascade("decode", kp, kl, kv_indices=ki, num_qo_heads=HQ,
                              num_kv_heads=HKV, head_dim=D, page_size=PAGE, max_level=2)
    with pytest.raises(ValueError, match="needs kv_indices"):
        _runtime.auto_cascade("decode", kp, kl, num_qo_heads=HQ, num_kv_heads=HKV,
                              head_dim=D, page_size=PAGE)
