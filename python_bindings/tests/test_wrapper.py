"""MultiLevelCascadeAttentionWrapper: a cascade equals attention over the
concatenated KV, the shared prefix is one level, and bad plans are rejected
with clear errors (FlashInfer's usage, on the CPU reference)."""
import numpy as np
import pytest

import cascade_mlir as cm


def softmax_attention(q, k, v, sm_scale):
    """Plain float64 attention of q [Hq, D] over k, v [T, Hkv, D] (GQA)."""
    hq, hkv = q.shape[0], k.shape[1]
    g = hq // hkv
    out = np.zeros_like(q)
    lse = np.zeros(hq)
    for h in range(hq):
        kh, vh = k[:, h // g], v[:, h // g]
        x = (kh @ q[h]) * sm_scale * np.log2(np.e)
        m = x.max()
        w = np.exp2(x - m)
        out[h] = w @ vh / w.sum()
        lse[h] = m + np.log2(w.sum())
    return out, lse


def build_case(rng, batch, page, hq, hkv, d, shared_pages, unique_pages, last):
    total = shared_pages + sum(unique_pages)
    pool = rng.standard_normal((total, 2, page, hkv, d)).astype(np.float32)
    q = rng.standard_normal((batch, hq, d)).astype(np.float32)
    shared_idx = np.arange(shared_pages, dtype=np.int32)
    uniq_idx = np.arange(shared_pages, total, dtype=np.int32)
    uniq_indptr = np.concatenate([[0], np.cumsum(unique_pages)]).astype(np.int32)
    levels = (
        [np.array([0, batch], np.int32), np.arange(batch + 1, dtype=np.int32)],
        [np.array([0, shared_pages], np.int32), uniq_indptr],
        [shared_idx, uniq_idx],
        [np.array([page], np.int32), np.asarray(last, np.int32)],
    )
    return pool, q, levels


def test_two_level_decode_equals_flat_attention(rng):
    batch, page, hq, hkv, d = 5, 4, 8, 2, 16
    unique_pages = [3, 1, 2, 4, 1]
    last = [2, 4, 1, 3, 4]
    pool, q, levels = build_case(rng, batch, page, hq, hkv, d, 6, unique_pages, last)
    w = cm.MultiLevelCascadeAttentionWrapper(2, kv_layout="NHD")
    w.plan(*levels, hq, hkv, d, page)
    o, lse = w.run(q, pool, return_lse=True)

    sm = 1 / np.sqrt(d)
    start = 6
    for b in range(batch):
        pages = list(range(6)) + list(range(start, start + unique_pages[b]))
        start += unique_pages[b]
        k = pool[pages, 0].reshape(-1, hkv, d)[: 6 * page + (unique_pages[b] - 1) * page + last[b]]
        v = pool[pages, 1].reshape(-1, hkv, d)[: k.shape[0]]
        eo, el = softmax_attention(q[b].astype(np.float64), k, v, sm)
        np.testing.assert_allclose(o[b], eo, rtol=2e-5, atol=2e-6)
        np.testing.assert_allclose(lse[b], el, rtol=1e-5)
    assert o.dtype == np.float32 and lse.dtype == np.float32


def test_plans_split_work_and_shared_prefix_is_one_group(rng):
    pool, q, levels = build_case(rng, 4, 16, 8, 8, 64, 64, [2, 2, 2, 2], [1, 2, 3, 16])
    w = cm.MultiLevelCascadeAttentionWrapper(2, num_sms=8)
    w.plan(*levels, 8, 8, 64, 16)
    shared, unique = w.plans
    assert shared["batch_size"] == 1 and unique["batch_size"] == 4
    # The shared level's single request is split across work items.
    assert shared["num_work_items"] >= 1
    assert list(shared["o_indptr"])[-1] >= 1


def test_ir_of_planned_wrapper_verifies(rng):
    if cm.compiler is None:
        pytest.skip("runtime-only build: no compiler module")
    pool, q, levels = build_case(rng, 3, 16, 32, 8, 128, 4, [1, 2, 3], [5, 6, 7])
    w = cm.MultiLevelCascadeAttentionWrapper(2)
    w.plan(*levels, 32, 8, 128, 16, causal=True, pos_encoding_mode="ROPE_LLAMA")
    text = w.ir()
    assert "tensor<2xi32>" in text  # the shared prefix level
    printed = cm.compiler.verify(text)
    assert "cascade.multi_level_attention" in printed
    # By default the level merge is fused: the second level accumulates
    # into the first one's state.
    lowered = cm.compiler.run_pipeline(text, "builtin.module(cascade-decompose-levels)")
    assert lowered.count("cascade.paged_attention") == 2
    assert lowered.count("accumulate") == 1
    assert "cascade.merge_state_in_place" not in lowered
    unfused = cm.compiler.run_pipeline(
        text, "builtin.module(cascade-decompose-levels{fuse-merges=false})")
    assert unfused.count("cascade.paged_attention") == 2
    assert "accumulate" not in unfused
    assert "cascade.merge_state_in_place" in unfused


def test_plan_rejects_levels_with_different_rows(rng):
    pool, q, levels = build_case(rng, 3, 4, 4, 4, 8, 2, [1, 1, 1], [1, 1, 1])
    levels[0][1] = np.arange(3, dtype=np.int32)  # covers 2 rows, level 0 covers 3
    levels[1][1] = np.array([0, 1, 2], np.int32)
    levels[2][1] = np.array([2, 3], np.int32)
    levels[3][1] = np.array([1, 1], np.int32)
    w = cm.MultiLevelCascadeAttentionWrapper(2)
    with pytest.raises(ValueError, match="same rows"):
        w.plan(*levels, 4, 4, 8, 4)


def test_plan_rejects_bad_last_page_len(rng):
    pool, q, levels = build_case(rng, 2, 4, 4, 4, 8, 2, [1, 1], [1, 5])
    w = cm.MultiLevelCascadeAttentionWrapper(2)
    with pytest.raises(ValueError, match="(?i)last_page_len"):
        w.plan(*levels, 4, 4, 8, 4)


def test_run_before_plan_and_wrong_level_count(rng):
    w = cm.MultiLevelCascadeAttentionWrapper(2)
    with pytest.raises(RuntimeError, match="plan"):
        w.run(np.zeros((1, 4, 8), np.float32), np.zeros((1, 2, 4, 4, 8), np.float32))
    with pytest.raises(ValueError, match="one per level"):
        w.plan([np.array([0, 1])], [np.array([0, 1])], [np.array([0])], [np.array([1])], 4, 4, 8, 4)


@pytest.mark.parametrize("kwargs, q, kv", [
    ({"data_type": "bfloat16"}, "f16", "bf16"),  # q_data_type keeps its default
    ({"data_type": "bfloat16", "q_data_type": None}, "bf16", "bf16"),
    ({"data_type": "bfloat16", "q_data_type": "bfloat16"}, "bf16", "bf16"),
    ({"data_type": "float16", "kv_data_type": "bfloat16"}, "f16", "bf16"),
    ({"q_data_type": None}, "f16", "f16"),
    ({}, "f16", "f16"),
])
def test_decode_plan_data_type_fills_only_unset_dtypes(kwargs, q, kv):
    # FlashInfer 0.5.3's BatchDecodeWithPagedKVCacheWrapper.plan: data_type
    # sets q_data_type / kv_data_type only where they are None.
    w = cm.BatchDecodeWithPagedKVCacheWrapper(None)
    kp = np.array([0, 2, 3], np.int32)
    w.plan(kp, np.arange(3, dtype=np.int32), np.array([5, 16], np.int32),
           8, 2, 64, 16, **kwargs)
    assert (w._config.q_dtype, w._config.kv_dtype) == (q, kv)
