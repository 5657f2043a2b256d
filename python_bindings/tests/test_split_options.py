"""FlashInfer's plan options fixed_split_size (a fixed split-KV chunk in
pages: batch-invariant plans) and disable_split_kv (never split) through
_runtime.plan / auto_cascade and the batch decode / prefill wrappers (CPU
reference path)."""
import numpy as np
import pytest

import cascade_mlir as cm
from cascade_mlir import _runtime

PAGE = 16


def chunks_per_request(plan):
    """KV chunks of every request (o_indptr / rows, rows = 1 in decode)."""
    n = np.zeros(plan["batch_size"], np.int64)
    for w in range(plan["num_work_items"]):
        if plan["qo_tile_indices"][w] == 0:
            n[plan["request_indices"][w]] += 1
    return n


def decode_plan(pages, **opts):
    kp = np.concatenate([[0], np.cumsum(pages)]).astype(np.int32)
    kl = np.full(len(pages), PAGE, np.int32)
    return _runtime.plan("decode", kp, kl, num_qo_heads=8, num_kv_heads=2, head_dim=64,
                         page_size=PAGE, num_sms=4, occupancy=2, **opts)


def test_runtime_plan_fixed_chunk_is_batch_invariant():
    # Alone or with others, request 0 (23 pages) is cut into ceil(23 / 5) = 5
    # chunks of 5 pages; the automatic chunk depends on the batch.
    automatic = set()
    for pages in ([23], [23, 1], [23, 40, 2], [23, 3, 3, 3]):
        p = decode_plan(pages, fixed_split_pages=5)
        assert p["split_kv"] and p["kv_chunk_size_pages"] == 5
        assert p["kv_chunk_size"] == 5 * PAGE
        expect = [-(-x // 5) for x in pages]
        assert list(chunks_per_request(p)) == expect
        assert list(p["o_indptr"]) == list(np.concatenate([[0], np.cumsum(expect)]))
        automatic.add(decode_plan(pages)["kv_chunk_size_pages"])
    assert len(automatic) > 1


def test_runtime_plan_disable_split_kv_and_graph_mode():
    p = decode_plan([23, 1], disable_split_kv=True, cuda_graph=1)
    assert not p["split_kv"] and p["padded_batch_size"] == 2
    assert decode_plan([23, 1], cuda_graph=1)["split_kv"]  # automatic: split


@pytest.mark.parametrize("opts, match", [
    ({"fixed_split_pages": -2}, "fixed_split_pages must be >= 0"),
    ({"fixed_split_pages": 3, "disable_split_kv": True}, "exclusive"),
    ({"fixed_split_pages": 1, "cuda_graph": 1}, "fixed_split_size"),
])
def test_runtime_plan_rejects_bad_split_options(opts, match):
    with pytest.raises(ValueError, match=match):
        decode_plan([23, 1], **opts)


def test_auto_cascade_takes_the_split_options():
    # Two requests sharing 8 pages, 6 unique pages each.
    kp = np.array([0, 14, 28], np.int32)
    ki = np.concatenate([np.arange(14), np.arange(8), np.arange(14, 20)]).astype(np.int32)
    kl = np.full(2, PAGE, np.int32)
    res = _runtime.auto_cascade("decode", kp, kl, kv_indices=ki, num_qo_heads=8,
                                num_kv_heads=2, head_dim=64, page_size=PAGE,
                                bandwidth_bytes_per_us=1.0, fixed_split_pages=2)
    for lv in res["levels"]:
        assert lv["plan"]["kv_chunk_size_pages"] == 2
    with pytest.raises(ValueError, match="fixed_split_pages must be >= 0"):
        _runtime.auto_cascade("decode", kp, kl, kv_indices=ki, num_qo_heads=8,
                              num_kv_heads=2, head_dim=64, page_size=PAGE,
                              fixed_split_pages=-1)


def decode_case(rng, pages):
    kp = np.concatenate([[0], np.cumsum(pages)]).astype(np.int32)
    ki = rng.permutation(int(kp[-1])).astype(np.int32)
    kl = rng.integers(1, PAGE + 1, len(pages)).astype(np.int32)
    pool = rng.standard_normal((int(kp[-1]), 2, PAGE, 2, 16)).astype(np.float32)
    q = rng.standard_normal((len(pages), 8, 16)).astype(np.float32)
    return kp, ki, kl, pool, q


def test_decode_wrapper_fixed_split_size(rng):
    kp, ki, kl, pool, q = decode_case(rng, [9, 2, 5])
    outs = []
    for opts in ({}, {"fixed_split_size": 2}, {"disable_split_kv": True}):
        w = cm.BatchDecodeWithPagedKVCacheWrapper(None)
        w.plan(kp, ki, kl, 8, 2, 16, PAGE, **opts)
        outs.append(w.run(q, pool, return_lse=True))
        plan = w._host_plan
        if "fixed_split_size" in opts:
            assert plan["split_kv"] and plan["kv_chunk_size_pages"] == 2
            assert list(chunks_per_request(plan)) == [5, 1, 3]
        if "disable_split_kv" in opts:
            assert not plan["split_kv"]
    for out, lse in outs[1:]:
        np.testing.assert_array_equal(out, outs[0][0])
        np.testing.assert_array_equal(lse, outs[0][1])


def test_minus_one_is_automatic_as_in_flashinfer(rng):
    """fixed_split_size=-1 (what vLLM passes; FlashInfer 0.5.3 turns None
    into -1) plans as None does: the automatic split."""
    kp, ki, kl, pool, q = decode_case(rng, [9, 2, 5])
    plans, outs = [], []
    for size in (None, -1):
        w = cm.BatchDecodeWithPagedKVCacheWrapper(None)
        w.plan(kp, ki, kl, 8, 2, 16, PAGE, fixed_split_size=size)
        plans.append(w._host_plan)
        outs.append(w.run(q, pool))
        p = cm.BatchPrefillWithPagedKVCacheWrapper(None)
        p.plan(np.arange(4, dtype=np.int32), kp, ki, kl, 8, 2, 16, PAGE,
               fixed_split_size=size)
        plans.append(p._host_plan)
    for a, b in ((plans[0], plans[2]), (plans[1], plans[3])):
        assert a.keys() == b.keys()
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])
    np.testing.assert_array_equal(outs[1], outs[0])


def test_prefill_wrapper_fixed_split_size(rng):
    kp, ki, kl, pool, _ = decode_case(rng, [9, 2, 5])
    qo = np.array([0, 3, 4, 9], np.int32)
    q = rng.standard_normal((9, 8, 16)).astype(np.float32)
    outs = []
    for opts in ({}, {"fixed_split_size": 3}, {"disable_split_kv": True}):
        w = cm.BatchPrefillWithPagedKVCacheWrapper(None)
        w.plan(qo, kp, ki, kl, 8, 2, 16, PAGE, causal=True, **opts)
        outs.append(w.run(q, pool))
        plan = w._host_plan
        if "fixed_split_size" in opts:
            assert plan["kv_chunk_size_pages"] == 3
            assert list(chunks_per_request(plan)) == [3, 1, 2]
        if "disable_split_kv" in opts:
            assert not plan["split_kv"]
    for out in outs[1:]:
        np.testing.assert_array_equal(out, outs[0])


@pytest.mark.parametrize("opts, match", [
    ({"fixed_split_size": 0}, "fixed_split_size must be a positive"),
    ({"fixed_split_size": -2}, "fixed_split_size must be a positive"),
    ({"fixed_split_size": 2.5}, "fixed_split_size must be a positive"),
    ({"fixed_split_size": True}, "fixed_split_size must be a positive"),
    ({"fixed_split_size": 4, "disable_split_kv": True}, "exclusive"),
    ({"disable_split_kv": "yes"}, "disable_split_kv must be a bool"),
])
def test_wrappers_reject_bad_split_options(rng, opts, match):
    kp, ki, kl, _, _ = decode_case(rng, [9, 2])
    w = cm.BatchDecodeWithPagedKVCacheWrapper(None)
    with pytest.raises(ValueError, match=match):
        w.plan(kp, ki, kl, 8, 2, 16, PAGE, **opts)
    p = cm.BatchPrefillWithPagedKVCacheWrapper(None)
    with pytest.raises(ValueError, match=match):
        p.plan(np.array([0, 1, 2], np.int32), kp, ki, kl, 8, 2, 16, PAGE, **opts)
