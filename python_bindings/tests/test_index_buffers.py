"""Preallocated page-index buffers (issue 41): serving engines (vLLM's and
SGLang's FlashInfer backends, CUDA-graph wrappers) keep one kv_indices
buffer of the largest size and pass it whole; FlashInfer 0.5.3 reads only
its first kv_indptr[-1] entries, and so do the runtime and the wrappers.
Here, on the host: the runtime's plans and automatic cascades, and the
decode, prefill and multi-level cascade wrappers on the float64 CPU
reference, with a buffer whose tail holds garbage (ids past the cache,
negative ids) give exactly what the exact array gives; too short a buffer
is still an error. The GPU path (upload, the cache-size check of run(), the
CUDA-graph wrapper's own buffer) is checked on the stand-in driver
(fake_cuda/fake_device_checks.py, scenario index_buffers) and on a GPU
(gpu/test_gpu_index_buffers.py)."""
import numpy as np
import pytest

import cascade_mlir as cm
from cascade_mlir import _runtime
from page_batches import grouped_pages

HQ, HKV, D, PAGE = 8, 2, 64, 4
EAGER = {"level_overhead_us": 0.0, "group_overhead_us": 0.0, "level_row_bytes": 0.0,
         "l2_hidden_fraction": 0.0}


def padded(indices, size, num_pages, rng):
    """`indices` at the start of a buffer of `size` entries whose tail is
    garbage: stale ids, ids past the pool, negative ids."""
    buf = np.empty(size, np.int32)
    buf[:indices.size] = indices
    tail = size - indices.size
    buf[indices.size:] = rng.choice(np.array([num_pages, num_pages + 7, -1, 2**31 - 1,
                                              -2**31, 0], np.int32), size=tail)
    return buf


def batch(rng, pages=(3, 0, 5, 1, 7), num_pages=40):
    kp = np.concatenate([[0], np.cumsum(pages)]).astype(np.int32)
    ki = rng.permutation(num_pages)[:kp[-1]].astype(np.int32)
    kl = np.array([int(rng.integers(1, PAGE + 1)) if p else 1 for p in pages], np.int32)
    return kp, ki, kl


def grouped(groups=((3, 6), (1, 0), (4, 9)), own=2):
    """Requests in groups sharing their leading pages, `own` pages each."""
    return grouped_pages(groups, own, last_page_len=3)


def assert_same_dict(a, b):
    assert a.keys() == b.keys()
    for k in a:
        if isinstance(a[k], np.ndarray):
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)
        elif isinstance(a[k], dict):
            assert_same_dict(a[k], b[k])
        elif isinstance(a[k], list):
            assert len(a[k]) == len(b[k]), k
            for x, y in zip(a[k], b[k]):
                if isinstance(x, dict):
                    assert_same_dict(x, y)
                else:
                    np.testing.assert_array_equal(x, y, err_msg=k)
        else:
            assert a[k] == b[k], k


# --- the runtime (binding) -----------------------------------------------------

@pytest.mark.parametrize("mode", ["decode", "prefill"])
@pytest.mark.parametrize("cuda_graph", [0, 1])
def test_runtime_plan_reads_only_kv_indptr_b_entries(rng, mode, cuda_graph):
    kp, ki, kl = batch(rng)
    qo = None if mode == "decode" else \
        np.concatenate([[0], np.cumsum(rng.integers(1, 6, size=kl.size))]).astype(np.int32)
    kw = dict(qo_indptr=qo, num_qo_heads=HQ, num_kv_heads=HKV, head_dim=D,
              page_size=PAGE, num_sms=8, num_pages=40, cuda_graph=cuda_graph)
    want = _runtime.plan(mode, kp, kl, kv_indices=ki, **kw)
    # The shape: a buffer of 12288 entries where the batch uses 16.
    for size in (ki.size + 1, 12288):
        got = _runtime.plan(mode, kp, kl, kv_indices=padded(ki, size, 40, rng), **kw)
        assert_same_dict(got, want)


def test_runtime_still_rejects_too_short_and_bad_used_ids(rng):
    kp, ki, kl = batch(rng)
    kw = dict(num_qo_heads=HQ, num_kv_heads=HKV, head_dim=D, page_size=PAGE,
              num_sms=8, num_pages=40)
    with pytest.raises(ValueError, match=r"kv_indices has 15 entries but kv_indptr\[5\] = 16 "
                                         r"\(it needs at least kv_indptr\[batch_size\] "
                                         r"entries; entries beyond are ignored\)"):
        _runtime.plan("decode", kp, kl, kv_indices=ki[:-1], **kw)
    bad = padded(ki, 64, 40, rng)
    bad[7] = 40  # among the used entries: reported as with the exact array
    with pytest.raises(ValueError, match=r"kv_indices\[7\] = 40 is outside the page pool"):
        _runtime.plan("decode", kp, kl, kv_indices=bad, **kw)


@pytest.mark.parametrize("mode", ["decode", "prefill"])
def test_runtime_auto_cascade_ignores_the_tail(rng, mode):
    kp, ki, kl, n = grouped()
    qo = None if mode == "decode" else np.arange(kp.size, dtype=np.int32) * 2
    kw = dict(qo_indptr=qo, num_qo_heads=HQ, num_kv_heads=HKV, head_dim=D,
              page_size=PAGE, num_sms=8, num_pages=n, causal=False, **EAGER)
    want = _runtime.auto_cascade(mode, kp, kl, kv_indices=ki, **kw)
    got = _runtime.auto_cascade(mode, kp, kl, kv_indices=padded(ki, 4 * ki.size, n, rng),
                                **kw)
    assert want["stats"]["shared_groups"] == 2
    assert_same_dict(got, want)


# --- the wrappers on the CPU reference -----------------------------------------

def cache(rng, num_pages):
    return rng.standard_normal((num_pages, 2, PAGE, HKV, D)).astype(np.float32)


@pytest.mark.parametrize("auto", [False, True])
def test_decode_wrapper(rng, auto):
    kp, ki, kl, n = grouped()
    kv = cache(rng, n)
    q = rng.standard_normal((kp.size - 1, HQ, D)).astype(np.float32)
    opts = {"auto_cascade": EAGER} if auto else {}
    outs, plans = [], []
    for indices in (ki, padded(ki, 12288, n, rng)):
        w = cm.BatchDecodeWithPagedKVCacheWrapper(None)
        w.plan(kp, indices, kl, HQ, HKV, D, PAGE, **opts)
        outs.append(w.run(q, kv, return_lse=True))
        plans.append(w.auto_cascade_levels if auto else w._host_plan)
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)
    if auto:
        assert len(plans[0]) == 2
        for a, b in zip(*plans):
            assert_same_dict(a, b)
    else:
        assert_same_dict(plans[0], plans[1])


@pytest.mark.parametrize("causal", [False, True])
def test_prefill_wrapper(rng, causal):
    kp, ki, kl = batch(rng)
    lens = np.where(np.diff(kp) > 0, (np.diff(kp) - 1) * PAGE + kl, 0)
    qo_lens = np.minimum(rng.integers(1, 6, size=kl.size), np.maximum(lens, 1))
    qo = np.concatenate([[0], np.cumsum(qo_lens)]).astype(np.int32)
    kv = cache(rng, 40)
    q = rng.standard_normal((int(qo[-1]), HQ, D)).astype(np.float32)
    outs = []
    for indices in (ki, padded(ki, 1000, 40, rng)):
        w = cm.BatchPrefillWithPagedKVCacheWrapper(None)
        w.plan(qo, kp, indices, kl, HQ, HKV, D, PAGE, causal=causal)
        outs.append(w.run(q, kv, return_lse=True))
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)


def test_multi_level_cascade_wrapper(rng):
    batch_size, shared = 5, 6
    unique = np.array([3, 1, 2, 4, 1])
    total = shared + int(unique.sum())
    levels = ([np.array([0, batch_size], np.int32),
               np.arange(batch_size + 1, dtype=np.int32)],
              [np.array([0, shared], np.int32),
               np.concatenate([[0], np.cumsum(unique)]).astype(np.int32)],
              [np.arange(shared, dtype=np.int32),
               np.arange(shared, total, dtype=np.int32)],
              [np.array([PAGE], np.int32), np.array([2, 4, 1, 3, 4], np.int32)])
    kv = cache(rng, total)
    q = rng.standard_normal((batch_size, HQ, D)).astype(np.float32)
    # Both levels' page lists in buffers of the largest size, as
    # paged_kv_indices_buf_arr holds them.
    buffers = [padded(levels[2][0], 256, total, rng), padded(levels[2][1], 256, total, rng)]
    outs, plans = [], []
    for indices in (levels[2], buffers):
        w = cm.MultiLevelCascadeAttentionWrapper(2, kv_layout="NHD")
        w.plan(levels[0], levels[1], indices, levels[3], HQ, HKV, D, PAGE)
        outs.append(w.run(q, kv, return_lse=True))
        plans.append(w.plans)
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(*plans):
        assert_same_dict(a, b)


def test_wrappers_reject_too_short_page_indices(rng):
    kp, ki, kl = batch(rng)
    w = cm.BatchDecodeWithPagedKVCacheWrapper(None)
    with pytest.raises(ValueError, match=r"kv_indices has 15 entries but kv_indptr\[-1\] = 16 "
                                         r"\(it needs at least"):
        w.plan(kp, ki[:-1], kl, HQ, HKV, D, PAGE)
    c = cm.MultiLevelCascadeAttentionWrapper(1)
    with pytest.raises(ValueError, match=r"level 0: kv_indices has 15 entries"):
        c.plan([np.arange(kp.size, dtype=np.int32)], [kp], [ki[:-1]], [kl], HQ, HKV, D, PAGE)


# --- a kv_indptr that does not start at 0 (vLLM's mixed batches) -------------------
#
# vLLM plans the decodes of a step on paged_kv_indptr[:num_decodes + 1] and
# the prefills on paged_kv_indptr[num_decodes:] (first entry not 0), both
# over the step's whole kv_indices: FlashInfer reads request i's pages at
# kv_indices[kv_indptr[i]:kv_indptr[i+1]]. The wrappers rebase (indptr -
# indptr[0] over kv_indices[indptr[0]:]).

def mixed_step(rng, decodes=(2, 5, 1), prefills=(3, 0, 4), num_pages=40):
    """One page table over decodes then prefills; the prefill queries."""
    kp, ki, kl = batch(rng, decodes + prefills, num_pages)
    nd = len(decodes)
    lens = np.where(np.diff(kp) > 0, (np.diff(kp) - 1) * PAGE + kl, 0)[nd:]
    qo_lens = np.minimum(rng.integers(1, 6, size=len(prefills)), np.maximum(lens, 1))
    qo = np.concatenate([[0], np.cumsum(qo_lens)]).astype(np.int32)
    return kp, ki, kl, nd, qo


@pytest.mark.parametrize("causal", [False, True])
def test_prefill_tail_of_a_mixed_page_table(rng, causal):
    kp, ki, kl, nd, qo = mixed_step(rng)
    assert kp[nd] != 0
    kv = cache(rng, 40)
    q = rng.standard_normal((int(qo[-1]), HQ, D)).astype(np.float32)
    rebased = cm.BatchPrefillWithPagedKVCacheWrapper(None)
    rebased.plan(qo, kp[nd:] - kp[nd], ki[kp[nd]:], kl[nd:], HQ, HKV, D, PAGE,
                 causal=causal)
    want = rebased.run(q, kv, return_lse=True)
    for indices in (ki, padded(ki, 1000, 40, rng)):
        w = cm.BatchPrefillWithPagedKVCacheWrapper(None)
        w.plan(qo, kp[nd:], indices, kl[nd:], HQ, HKV, D, PAGE, causal=causal)
        assert_same_dict(w._host_plan, rebased._host_plan)
        for a, b in zip(w.run(q, kv, return_lse=True), want):
            np.testing.assert_array_equal(a, b)


def test_decode_slice_of_a_page_table(rng):
    """A decode plan over the middle of a step's table (indptr[1:4])."""
    kp, ki, kl = batch(rng, (2, 5, 1, 3, 4))
    kv = cache(rng, 40)
    q = rng.standard_normal((3, HQ, D)).astype(np.float32)
    rebased = cm.BatchDecodeWithPagedKVCacheWrapper(None)
    rebased.plan(kp[1:5] - kp[1], ki[kp[1]:], kl[1:4], HQ, HKV, D, PAGE)
    w = cm.BatchDecodeWithPagedKVCacheWrapper(None)
    w.plan(kp[1:5], ki, kl[1:4], HQ, HKV, D, PAGE)
    for a, b in zip(w.run(q, kv, return_lse=True), rebased.run(q, kv, return_lse=True)):
        np.testing.assert_array_equal(a, b)


def test_mixed_page_table_on_torch_tensors(rng):
    """The same with torch CPU tensors (the slice of kv_indices is a view)."""
    torch = pytest.importorskip("torch")
    kp, ki, kl, nd, qo = mixed_step(rng)
    kv = cache(rng, 40)
    q = rng.standard_normal((int(qo[-1]), HQ, D)).astype(np.float32)
    want = cm.BatchPrefillWithPagedKVCacheWrapper(None)
    want.plan(qo, kp[nd:] - kp[nd], ki[kp[nd]:], kl[nd:], HQ, HKV, D, PAGE, causal=True)
    w = cm.BatchPrefillWithPagedKVCacheWrapper(None)
    t = torch.from_numpy
    w.plan(t(qo), t(kp)[nd:], t(padded(ki, 200, 40, rng)), t(kl)[nd:], HQ, HKV, D, PAGE,
           causal=True)
    o = w.run(t(q), t(kv))
    np.testing.assert_array_equal(o.numpy(), want.run(q, kv))


def test_offset_indptr_errors(rng):
    kp, ki, kl, nd, qo = mixed_step(rng)
    w = cm.BatchPrefillWithPagedKVCacheWrapper(None)
    # The rebased indptr still needs its pages.
    with pytest.raises(ValueError, match="kv_indices has"):
        w.plan(qo, kp[nd:], ki[:-1], kl[nd:], HQ, HKV, D, PAGE)
    with pytest.raises(ValueError, match=r"paged_kv_indptr\[0\] = -3 is negative"):
        w.plan(qo, kp[nd:] - kp[nd] - 3, ki, kl[nd:], HQ, HKV, D, PAGE)
    # qo_indptr must start at 0 (FlashInfer's split-KV merge writes rows
    # from 0 while its kernels read q at qo_indptr): named, with the fix.
    with pytest.raises(ValueError, match=r"qo_indptr\[0\] must be 0, got 5.*q\[5:\]"):
        w.plan(qo + 5, kp[nd:], ki, kl[nd:], HQ, HKV, D, PAGE)


class FakeDeviceArray:
    """A stand-in for a device int32 array: an address (`ptr`) and views."""

    def __init__(self, n, ptr=1 << 20):
        self.n, self.ptr = n, ptr

    def __getitem__(self, s):
        start = s.start or 0
        stop = self.n if s.stop is None else s.stop
        return FakeDeviceArray(stop - start, self.ptr + 4 * start)

    def __len__(self):
        return self.n


@pytest.mark.parametrize("graph", [False, True])
def test_rebased_caller_buffers(graph):
    """Which caller buffers a plan with kv_indptr[0] = base binds (the GPU
    path's choice, _single.SingleLevelWrapper._rebased_buffers): the
    wrapper's own kv_indices buffer passed as kv_indices is bound from entry
    base on (the kernels read the caller's pages where they are); another
    array goes to the buffer's start; an indptr that is the wrapper's own
    indptr buffer is not overwritten with rebased values."""
    w = cm.BatchDecodeWithPagedKVCacheWrapper(None)
    ix, ip = FakeDeviceArray(100), FakeDeviceArray(9, ptr=1 << 24)
    w._buffers = {"kv_indptr": ip, "kv_indices": ix, "kv_last_page_len": None}
    w._use_cuda_graph = graph
    got = w._rebased_buffers(0, ip, ix)  # base 0: as given
    assert got["kv_indices"] is ix and got["kv_indptr"] is ip
    if graph:
        with pytest.raises(ValueError, match="from entry 27, which moves the page list"):
            w._rebased_buffers(27, ip[2:], ix)
        with pytest.raises(ValueError, match="own kv_indptr buffer"):
            w._rebased_buffers(27, ip, FakeDeviceArray(50, ptr=1 << 28))
        w._graph_kv_offset = None
    got = w._rebased_buffers(27, ip[2:], ix[:60])
    assert got["kv_indices"].ptr == ix.ptr + 4 * 27 and len(got["kv_indices"]) == 73
    assert got["kv_indptr"] is ip
    other = FakeDeviceArray(50, ptr=1 << 28)
    if graph:  # the first plan bound entry 27 on: other arrays cannot move it
        with pytest.raises(ValueError, match="from entry 27"):
            w._rebased_buffers(27, ip[2:], other)
        return
    got = w._rebased_buffers(27, ip[2:], other)
    assert got["kv_indices"] is ix
    got = w._rebased_buffers(27, ip, other)
    assert got["kv_indptr"] is None and got["kv_indices"] is ix
