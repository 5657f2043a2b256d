"""The GPU path of cascade_mlir on a stand-in CUDA driver (fake_cuda.c):
plan, upload, kernel binding and run() go through the real runtime and
bindings; "device memory" is host memory, so the test reads back what was
uploaded, and every launch is recorded with its parameters, so the test
checks which kernels would run with which addresses and sizes.

Run by test_fake_device.py as `python fake_device_checks.py SCENARIO` with
CASCADE_CUDA_DRIVER pointing at the compiled stand-in (the driver is loaded
once per process) and CASCADE_MLIR_KERNEL_PATH at PTX-only bundles.
"""
import ctypes
import functools
import gc
import os
import sys
import weakref

import numpy as np

import cascade_mlir as cm
from cascade_mlir import _gpu, kernels

from stand_in import (FAKE, Dev, aligned, arg, check, launches,  # noqa: E402
                      manifest_params, read_i32)
# The planner's scenarios (automatic and explicit cascades) live beside.
from planner_checks import scenario_auto, scenario_explicit_plain  # noqa: E402,F401


# --- scenarios ----------------------------------------------------------------

def seed_levels(batch=7, shared=512, unique=(17, 12, 15, 4, 18, 34, 28),
                last=(1, 7, 14, 4, 3, 1, 16)):
    u = np.concatenate([[0], np.cumsum(unique)]).astype(np.int32)
    total = shared + int(u[-1])
    return total, ([np.array([0, batch], np.int32), np.arange(batch + 1, dtype=np.int32)],
                   [np.array([0, shared], np.int32), u],
                   [np.arange(shared, dtype=np.int32), np.arange(shared, total, dtype=np.int32)],
                   [np.array([16], np.int32), np.array(last, np.int32)])


def scenario_cascade():
    total, levels = seed_levels()
    ws = Dev(aligned((128 << 20,), np.uint8))
    w = cm.MultiLevelCascadeAttentionWrapper(2, ws, "NHD")
    check(w.is_cuda, "a CUDA workspace makes a GPU wrapper")
    w.plan(*levels, 64, 8, 128, 16)
    launches()  # none yet: plan only uploads
    q = Dev(aligned((7, 64, 128), np.float16))
    cache = Dev(aligned((total, 2, 16, 8, 128), np.float16))
    o = w.run(q, cache)
    check(FAKE.fake_cuda_num_graph_launches() == 1, "run() is one graph launch")
    check(w._engine.program.last_run_used_graph, "the program reports its graph launch")
    rec = launches()
    # FlashInfer's run() defaults, k_scale = v_scale = None (1), on the run()
    # that plan() bound to the runtime; a scale on an f16 cache is refused.
    w.run(q, cache, k_scale=None, v_scale=None)
    check(len(launches()) == len(rec), "run(k_scale=None, v_scale=None) runs the cascade")
    try:
        w.run(q, cache, k_scale=2.0)
        check(False, "k_scale on an f16 cache must be refused")
    except ValueError as e:
        check("fp8" in str(e), str(e))
    names = [r["name"] for r in rec]
    check(len(rec) in (2, 3, 4), f"2 to 4 launches for a fused 2-level cascade: {names}")
    # Level 0 splits KV, so level 1 is the base level (docs/runtime.md): level
    # 0's split prefill comes first and waits for nothing, level 1 writes the
    # output, and level 0's merge accumulates into it last. The stand-in is
    # compute capability 9.0: the split prefill runs on the Hopper family
    # where its sm_90a bundle was compiled, else on mma_sync.
    check(w._engine.program.base_level == 1, "the last level is the base")
    check(names[0].startswith(("cascade_prefill_split_acc_wgmma",
                               "cascade_prefill_split_acc_mma")),
          f"level 0 split prefill first: {names}")
    check(all("decode" in n and "_acc" not in n for n in names[1:-1]
              if "merge" not in n), f"level 1 writes the output: {names}")
    check("merge_states_indptr" in names[-1] and "byrow_acc" in names[-1],
          f"level 0's merge accumulates, last: {names}")
    check(isinstance(o, Dev) and o.shape == (7, 64, 128), "o from the caller's framework")
    for r in rec:
        slots, k = manifest_params(r["name"])
        if "q" in slots:
            check(arg(r, "q") == (q.ptr, q.a.size), f"{r['name']}: q bound")
        if "kv_cache" in slots:
            check(arg(r, "kv_cache") == (cache.ptr, cache.a.size), f"{r['name']}: kv_cache")
        check(arg(r, "o")[0] == o.ptr, f"{r['name']}: o is the output")
    # The index arrays the kernels read are the plan's, uploaded.
    for lvl, r in ((0, rec[0]), (1, next(r for r in rec if "decode" in r["name"]))):
        if "kv_indptr" not in manifest_params(r["name"])[0]:
            continue
        for name, host in (("kv_indptr", levels[1][lvl]), ("kv_indices", levels[2][lvl]),
                           ("kv_last_page_len", levels[3][lvl])):
            ptr, _ = arg(r, name)
            check(np.array_equal(read_i32(ptr, host.size), host), f"level {lvl} {name} uploaded")
    # The lse scratch lives in the float workspace; the caller's lse replaces it.
    lse_ptr = arg(rec[-1], "lse")[0]
    check(ws.ptr <= lse_ptr < ws.ptr + ws.a.size, "lse scratch inside the float workspace")
    out = Dev(aligned((7, 64, 128), np.float16))
    lse = Dev(aligned((7, 64), np.float32))
    res = w.run(q, cache, out=out, lse=lse, return_lse=True)
    rec2 = launches()
    check(res[0] is out and res[1] is lse, "out= and lse= are returned")
    check(arg(rec2[-1], "lse")[0] == lse.ptr and arg(rec2[-1], "o")[0] == out.ptr,
          "out/lse bound")
    check([r["name"] for r in rec2] == names, "the same launches every run")
    # Kernel by kernel, the same kernels get the same arguments as the
    # graph's nodes (whose parameters followed out= and lse= above).
    w._engine.program.graph_launch = False
    w.run(q, cache, out=out, lse=lse, return_lse=True)
    check(FAKE.fake_cuda_num_graph_launches() == 0, "no graph launch when turned off")
    check(launches() == rec2, "graph nodes == direct launches (names, grids, arguments)")
    w._engine.program.graph_launch = True
    w.run(q, cache, out=out, lse=lse, return_lse=True)
    check(launches() == rec2, "graph launch again, same arguments")
    # A (k, v) pair binds the pair kernels (compiled or found on first use).
    k_cache = Dev(aligned((total, 16, 8, 128), np.float16))
    v_cache = Dev(aligned((total, 16, 8, 128), np.float16))
    w.run(q, (k_cache, v_cache))
    rec3 = launches()
    check(all("pair" in r["name"] for r in rec3 if "merge" not in r["name"]), "pair kernels")
    check(arg(rec3[0], "k_cache") == (k_cache.ptr, k_cache.a.size), "k_cache bound")
    check(arg(rec3[0], "v_cache") == (v_cache.ptr, v_cache.a.size), "v_cache bound")
    # Bad input: nothing launched.
    for bad in (lambda: w.run(Dev(aligned((7, 32, 128), np.float16)), cache),
                lambda: w.run(q.a, cache),
                lambda: w.run(q, Dev(aligned((100, 2, 16, 8, 128), np.float16)))):
        try:
            bad()
            check(False, "bad input accepted")
        except (ValueError, TypeError):
            pass
    check(FAKE.fake_cuda_num_launches() == 0, "no launch for bad input")


def scenario_graph():
    total, levels = seed_levels()
    ws = Dev(aligned((128 << 20,), np.uint8))
    bufs = dict(paged_kv_indices_buf_arr=[Dev(aligned((600,), np.int32)),
                                          Dev(aligned((400,), np.int32))])
    w = cm.MultiLevelCascadeAttentionWrapper(2, ws, "NHD", use_cuda_graph=True, **bufs)
    w.plan(*levels, 64, 8, 128, 16)
    q = Dev(aligned((7, 64, 128), np.float16))
    cache = Dev(aligned((total, 2, 16, 8, 128), np.float16))
    w.run(q, cache)
    first = launches()
    # Replan with other lengths: same launches, same addresses; the new page
    # lists are in the caller's buffers.
    _, levels2 = seed_levels(shared=300, unique=(1, 2, 30, 4, 5, 6, 7))
    w.plan(*levels2, 64, 8, 128, 16)
    w.run(q, cache)
    second = launches()
    check([r["name"] for r in first] == [r["name"] for r in second], "same kernels")
    check([r["grid"] for r in first] == [r["grid"] for r in second], "same grids")
    ptr, cap = arg(second[0], "kv_indices")
    check(ptr == bufs["paged_kv_indices_buf_arr"][0].ptr and cap == 600, "level-0 buffer bound")
    check(np.array_equal(bufs["paged_kv_indices_buf_arr"][1].a[:levels2[2][1].size],
                         levels2[2][1]), "level-1 page list copied into the caller's buffer")
    for a, b in zip(first, second):
        for name in ("q", "o", "tmp_v", "request_indices", "kv_indptr"):
            if name in manifest_params(a["name"])[0]:
                check(arg(a, name)[0] == arg(b, name)[0], f"{name} did not move")
    try:
        _, bad = seed_levels(batch=6, unique=(1, 2, 3, 4, 5, 6), last=(1,) * 6)
        w.plan(*bad, 64, 8, 128, 16)
        check(False, "a replan with another batch size must fail in graph mode")
    except ValueError as e:
        check("CUDA-graph mode" in str(e), str(e))


def scenario_single_and_merges():
    ws = Dev(aligned((64 << 20,), np.uint8))
    d = cm.BatchDecodeWithPagedKVCacheWrapper(ws)
    indptr = np.array([0, 3, 3, 10], np.int32)
    d.plan(indptr, np.arange(10, dtype=np.int32), np.array([5, 1, 16], np.int32),
           32, 8, 128, 16)
    q = Dev(aligned((3, 32, 128), np.float16))
    cache = Dev(aligned((10, 2, 16, 8, 128), np.float16))
    o, lse = d.run(q, cache, return_lse=True)
    rec = launches()
    check(rec and "decode" in rec[0]["name"] and "_acc" not in rec[0]["name"], rec)
    check(arg(rec[-1], "lse")[0] == lse.ptr, "returned lse is the one written")
    p = cm.BatchPrefillWithPagedKVCacheWrapper(ws, "NHD")
    qo = np.array([0, 5, 6, 40], np.int32)
    p.plan(qo, indptr, np.arange(10, dtype=np.int32), np.array([5, 1, 16], np.int32),
           32, 8, 128, 16, causal=True)
    p.run(Dev(aligned((40, 32, 128), np.float16)), cache)
    rec = launches()
    check("prefill" in rec[0]["name"] and "causal" in rec[0]["name"], rec)
    va, vb = (Dev(aligned((9, 4, 128), np.float16)) for _ in range(2))
    sa, sb = (Dev(aligned((9, 4), np.float32)) for _ in range(2))
    v, s = cm.merge_state(va, sa, vb, sb)
    rec = launches()
    check(len(rec) == 1 and "merge_state_f16_d128" in rec[0]["name"], rec)
    check(arg(rec[0], "num_tasks") == 36 and arg(rec[0], "v")[0] == v.ptr, "merge args")
    mask_backing = Dev(aligned((18,), np.uint8, 1))
    cm.merge_state_in_place(va, sa, vb, sb, mask=mask_backing[::2])
    rec = launches()
    check("mask" in rec[0]["name"] and arg(rec[0], "mask_stride") == 2, rec)
    vs = Dev(aligned((9, 3, 4, 128), np.float16))
    ss = Dev(aligned((9, 3, 4), np.float32))
    cm.merge_states(vs, ss)
    rec = launches()
    check(arg(rec[0], "num_states") == 3 and arg(rec[0], "num_heads") == 4, rec)
    # Zero states per row: the empty inputs (any strides) are accepted and
    # the merge writes the empty state (found on the H200: an empty tensor
    # was rejected as non-contiguous).
    v0, s0 = cm.merge_states(Dev(aligned((9, 0, 4, 128), np.float16)),
                             Dev(aligned((9, 0, 4), np.float32)))
    check(tuple(v0.shape) == (9, 4, 128) and tuple(s0.shape) == (9, 4), "zero-state shapes")
    launches()


def scenario_split_options():
    """fixed_split_size / disable_split_kv reach the runtime's plan through
    the GPU path: the attention launch's grid is the plan's work items."""
    ws = Dev(aligned((64 << 20,), np.uint8))
    indptr = np.array([0, 3, 3, 10], np.int32)
    last = np.array([5, 1, 16], np.int32)
    q = Dev(aligned((3, 32, 128), np.float16))
    cache = Dev(aligned((10, 2, 16, 8, 128), np.float16))
    grids = {}
    for name, opts in (("fixed", {"fixed_split_size": 2}),
                       ("none", {"disable_split_kv": True})):
        d = cm.BatchDecodeWithPagedKVCacheWrapper(ws)
        d.plan(indptr, np.arange(10, dtype=np.int32), last, 32, 8, 128, 16, **opts)
        d.run(q, cache)
        rec = launches()
        grids[name] = [(r["name"], r["grid"][0]) for r in rec]
    print(grids)
    # Chunks of 2 pages: 2 + 1 + 4 = 7 split items, then their merge.
    fixed = grids["fixed"]
    check(len(fixed) == 2 and fixed[0][1] == 7 and "merge" in fixed[1][0], fixed)
    none = grids["none"]
    check(len(none) == 1 and none[0][1] == 3, none)


def scenario_parity():
    """single_decode/single_prefill run the page-size-1 pair kernels on the
    caller's K/V (no copy: the kernel's k_cache is k's address) with the
    identity page table, the ragged wrapper the ragged kernels (no page
    table: kv_indptr's token offsets are the page offsets); the CUDA-graph
    decode wrapper
    binds the buffers given at construction and keeps its launches across
    replans; fast_decode_plan replans it."""
    k = Dev(aligned((45, 8, 128), np.float16))
    v = Dev(aligned((45, 8, 128), np.float16))
    cm.single_decode_with_kv_cache(Dev(aligned((32, 128), np.float16)), k, v)
    rec = launches()
    check("decode" in rec[0]["name"] and "_p1_" in rec[0]["name"], rec)
    check(arg(rec[0], "k_cache")[0] == k.ptr and arg(rec[0], "v_cache")[0] == v.ptr,
          "single decode reads k and v in place")
    # A workspace too small for the plan is replaced by one that fits.
    from cascade_mlir import single_request
    single_request.clear_cache()
    single_request.SINGLE_WORKSPACE_BYTES = 256
    o, lse = cm.single_prefill_with_kv_cache(Dev(aligned((9, 32, 128), np.float16)), k, v,
                                             causal=True, return_lse=True)
    grown = single_request._wrappers[("fake", 0, "prefill")]._engine.float_ws
    check(grown.a.nbytes > 256, f"workspace grown to {grown.a.nbytes} bytes")
    rec = launches()
    check("prefill" in rec[0]["name"] and "causal" in rec[0]["name"], rec)
    check(tuple(o.shape) == (9, 32, 128) and tuple(lse.shape) == (9, 32), "shapes")
    ws = Dev(aligned((64 << 20,), np.uint8))
    w = cm.BatchPrefillWithRaggedKVCacheWrapper(ws)
    kv_indptr = np.array([0, 30, 30, 45], np.int32)
    w.plan(np.array([0, 4, 5, 9], np.int32), kv_indptr, 32, 8, 128, causal=True)
    w.run(Dev(aligned((9, 32, 128), np.float16)), k, v)
    rec = launches()
    check(arg(rec[0], "k_cache")[0] == k.ptr, "ragged K read in place")
    check("_pair_ragged_" in rec[0]["name"], f"the ragged kernels: {rec[0]['name']}")
    check("kv_indices" not in manifest_params(rec[0]["name"])[0],
          "the ragged kernel takes no page table")
    check(np.array_equal(read_i32(arg(rec[0], "kv_indptr")[0], 4), kv_indptr),
          "request token offsets are the page offsets")
    # Nor is one uploaded: the int workspace's image (its first 64 KiB hold
    # the plan's arrays) has no run 0, 1, .., 44 (the identity table).
    image = read_i32(w._engine.int_ws.ptr, 16384)
    runs = np.lib.stride_tricks.sliding_window_view(image, 45) == np.arange(45)
    check(not runs.all(axis=1).any(), "the ragged plan uploads no page table")
    # Custom masks: the masked prefill kernel (causal dropped: the mask
    # replaces it) reads the packed bytes and their offsets from the int
    # workspace, as 32-bit words.
    rng = np.random.default_rng(7)
    bits = rng.random(4 * 30 + 4 * 15) < 0.5
    w.plan(np.array([0, 4, 5, 9], np.int32), kv_indptr, 32, 8, 128,
           custom_mask=bits, causal=True)
    w.run(Dev(aligned((9, 32, 128), np.float16)), k, v)
    rec = launches()
    # A tensor-core family (wgmma from sm_90a bundles on the stand-in's
    # compute capability 9.0, mma_sync from sm_90's).
    check(("prefill_wgmma" in rec[0]["name"] or "prefill_mma" in rec[0]["name"])
          and "_cmask_" in rec[0]["name"]
          and "causal" not in rec[0]["name"], rec)
    packed, want_indptr = cm.masks.request_masks(bits, None, np.array([4, 0, 4]),
                                                 np.array([30, 0, 15]))
    mask_ptr, nbytes = arg(rec[0], "custom_mask")
    check(mask_ptr % 4 == 0 and nbytes >= packed.size, (mask_ptr, nbytes))
    check(np.array_equal(np.frombuffer(ctypes.string_at(mask_ptr, packed.size), np.uint8),
                         packed), "the packed mask in the int workspace")
    check(np.array_equal(read_i32(arg(rec[0], "mask_indptr")[0], 4), want_indptr),
          "mask_indptr: the requests' byte offsets")
    try:  # CUDA-graph mode has no custom masks
        g0 = cm.BatchPrefillWithRaggedKVCacheWrapper(ws, use_cuda_graph=True,
                                                     custom_mask_buf=np.zeros(8, np.uint8))
        check(False, f"a CUDA-graph custom mask buffer must be refused: {g0}")
    except cm.UnsupportedFeatureError as e:
        check("CUDA-graph" in str(e), str(e))
    # CUDA-graph decode wrapper: fixed buffers, replans keep every address.
    bufs = [Dev(aligned((4,), np.int32)), Dev(aligned((64,), np.int32)),
            Dev(aligned((3,), np.int32))]
    g = cm.CUDAGraphBatchDecodeWithPagedKVCacheWrapper(ws, *bufs)
    cache = Dev(aligned((64, 2, 16, 8, 128), np.float16))
    q = Dev(aligned((3, 32, 128), np.float16))
    g.plan(np.array([0, 1, 2, 3], np.int32), np.arange(3, dtype=np.int32),
           np.array([16, 16, 16], np.int32), 32, 8, 128, 16)
    g.run(q, cache)
    first = launches()
    g.plan = functools.partial(cm.fast_decode_plan, g)
    g.plan(np.array([0, 20, 21, 40], np.int32), np.arange(40, dtype=np.int32)[::-1].copy(),
           np.array([3, 1, 16], np.int32), 32, 8, 128, 16)
    g.run(q, cache)
    second = launches()
    check([r["grid"] for r in first] == [r["grid"] for r in second], "same grids")
    for name in ("kv_indices", "kv_indptr", "kv_last_page_len", "q", "o"):
        check(arg(first[0], name)[0] == arg(second[0], name)[0], f"{name} did not move")
    check(arg(second[0], "kv_indices")[0] == bufs[1].ptr, "indices_buffer bound")
    check(np.array_equal(bufs[1].a[:40], np.arange(40)[::-1]), "page table in the buffer")
    try:
        g.plan(np.array([0, 1, 2], np.int32), np.arange(2, dtype=np.int32),
               np.array([1, 1], np.int32), 32, 8, 128, 16)
        check(False, "another batch size must fail")
    except ValueError as e:
        check("fixed at 3" in str(e), str(e))


def scenario_missing_kernels():
    os.environ["CASCADE_MLIR_NO_JIT"] = "1"
    ws = Dev(aligned((64 << 20,), np.uint8))
    d = cm.BatchDecodeWithPagedKVCacheWrapper(ws)
    try:
        d.plan(np.array([0, 1]), np.array([0]), np.array([1]), 24, 8, 64, 4)
        check(False, "a configuration without a bundle must fail")
    except kernels.MissingKernelsError as e:
        check("heads=24/8" in str(e) and "python -m cascade_mlir.aot --key" in str(e), str(e))


def scenario_index_buffers():
    """A page-index buffer of the largest size passed whole (vLLM's and
    SGLang's FlashInfer backends): only its first kv_indptr[-1] entries are
    read. Its tail holds ids past the cache and negative ids, which plan()
    or run()'s cache-size check would refuse were they read; the launches
    are the exact array's, and the page lists uploaded are the used ones."""
    ws = Dev(aligned((64 << 20,), np.uint8))
    indptr = np.array([0, 3, 3, 10], np.int32)
    last = np.array([5, 1, 16], np.int32)
    exact = np.arange(10, dtype=np.int32)[::-1].copy()
    buf = np.full(4096, 1 << 20, np.int32)
    buf[:10] = exact
    buf[11::2] = -3
    q = Dev(aligned((3, 32, 128), np.float16))
    cache = Dev(aligned((10, 2, 16, 8, 128), np.float16))

    def shape(rec):
        return [(r["name"], r["grid"]) for r in rec]

    def page_list(rec):
        ptr, n = arg(next(r for r in rec if "kv_indices" in manifest_params(r["name"])[0]),
                     "kv_indices")
        return read_i32(ptr, 10), n

    # Decode from a host buffer, prefill from a device one.
    for make, plan_args, rows in (
            (cm.BatchDecodeWithPagedKVCacheWrapper, (), 3),
            (cm.BatchPrefillWithPagedKVCacheWrapper, (np.array([0, 5, 6, 40], np.int32),), 40)):
        qq = Dev(aligned((rows, 32, 128), np.float16))
        recs = []
        for indices in (exact, buf if rows == 3 else Dev(aligned((4096,), np.int32, buf))):
            w = make(ws)
            w.plan(*plan_args, indptr, indices, last, 32, 8, 128, 16)
            w.run(qq, cache)
            recs.append(launches())
            got, n = page_list(recs[-1])
            check(np.array_equal(got, exact) and n == 10,
                  f"{make.__name__}: the used page ids uploaded ({n} entries)")
        check(shape(recs[0]) == shape(recs[1]), f"{make.__name__}: the exact array's launches")

    # The deprecated shared-prefix decode wrapper: its unique level keeps the
    # used ids only (the tail is not even copied to the host).
    shared_kv = [Dev(aligned((32, 8, 128), np.float16)) for _ in range(2)]
    sp = cm.BatchDecodeWithSharedPrefixPagedKVCacheWrapper(ws)
    sp.begin_forward(indptr, Dev(aligned((4096,), np.int32, buf)), last, 64, 8, 128, 16)
    check(np.array_equal(sp._unique[2], exact), "shared-prefix wrapper: the used ids")
    sp.forward(Dev(aligned((3, 64, 128), np.float16)), *shared_kv, cache)
    check(len(launches()) >= 2, "shared-prefix wrapper: both levels run")

    # The CUDA-graph decode wrapper, its own buffer passed whole every step.
    ind_buf = Dev(aligned((4096,), np.int32, buf))
    g = cm.CUDAGraphBatchDecodeWithPagedKVCacheWrapper(
        ws, Dev(aligned((4,), np.int32)), ind_buf, Dev(aligned((3,), np.int32)))
    out = Dev(aligned(q.shape, np.float16))
    g.plan(indptr, ind_buf, last, 32, 8, 128, 16)
    g.run(q, cache, out=out)
    first = launches()
    ptr, cap = arg(next(r for r in first if "decode" in r["name"]), "kv_indices")
    check(ptr == ind_buf.ptr and cap == 4096, "the caller's indices buffer is bound")
    check(np.array_equal(ind_buf.a[:10], exact) and (ind_buf.a[11::2] == -3).all(),
          "the used entries rewritten in place, the tail untouched")
    indptr2 = np.array([0, 1, 5, 7], np.int32)
    ind_buf.a[:7] = [9, 0, 1, 2, 3, 8, 4]
    g.plan(indptr2, ind_buf, last, 32, 8, 128, 16)
    g.run(q, cache, out=out)
    check(shape(launches()) == shape(first), "a replan from the same buffer: same launches")

    # A CUDA-graph cascade whose levels' page lists are the caller's
    # paged_kv_indices_buf_arr buffers, passed whole.
    total, levels = seed_levels()
    bufs = [Dev(aligned((600,), np.int32, -1)), Dev(aligned((400,), np.int32, 1 << 20))]
    for b, ids in zip(bufs, levels[2]):
        b.a[:ids.size] = ids
    qc = Dev(aligned((7, 64, 128), np.float16))
    cc = Dev(aligned((total, 2, 16, 8, 128), np.float16))
    recs = []
    for arrays in (levels[2], bufs):
        w = cm.MultiLevelCascadeAttentionWrapper(2, ws, "NHD", use_cuda_graph=True,
                                                 paged_kv_indices_buf_arr=bufs)
        w.plan(levels[0], levels[1], arrays, levels[3], 64, 8, 128, 16)
        w.run(qc, cc)
        recs.append(launches())
        for b, ids in zip(bufs, levels[2]):
            check(np.array_equal(b.a[:ids.size], ids), "a level's page list in its buffer")
    check(shape(recs[0]) == shape(recs[1]), "cascade: the exact arrays' launches")


def scenario_strides():
    """q sliced from a packed QKV projection and `out` a view of a larger
    buffer (how vLLM's and SGLang's backends call run()): the kernels get
    the views' own addresses and their row and head strides, no copy is
    made, and every other argument is the contiguous call's."""
    ws = Dev(aligned((64 << 20,), np.uint8))
    hq, hkv, d = 32, 8, 128
    indptr = np.array([0, 3, 3, 10], np.int32)
    last = np.array([5, 1, 16], np.int32)
    cache = Dev(aligned((10, 2, 16, hkv, d), np.float16))
    for make, plan_args, rows in (
            (cm.BatchDecodeWithPagedKVCacheWrapper, (), 3),
            (cm.BatchPrefillWithPagedKVCacheWrapper, (np.array([0, 5, 6, 40], np.int32),), 40)):
        # [rows, (hq + 2 hkv) * d]: q is the first hq * d columns.
        qkv = aligned((rows, (hq + 2 * hkv) * d), np.float16)
        q_view = Dev(qkv[:, :hq * d].reshape(rows, hq, d))
        # out: every other 128-column block of [rows, hq, 2 d].
        big = aligned((rows, hq, 2 * d), np.float16)
        o_view = Dev(big[:, :, d:])
        check(not q_view.a.flags.c_contiguous and not o_view.a.flags.c_contiguous,
              "the views are strided")
        w = make(ws)
        w.plan(*plan_args, indptr, np.arange(10, dtype=np.int32), last, hq, hkv, d, 16)
        w.run(Dev(aligned((rows, hq, d), np.float16)), cache,
              out=Dev(aligned((rows, hq, d), np.float16)))
        tidy = launches()
        w.run(q_view, cache, out=o_view)
        strided = launches()
        name = make.__name__
        check([r["name"] for r in tidy] == [r["name"] for r in strided],
              f"{name}: the same kernels")
        check(w._engine.program.copy_fallbacks == 0, f"{name}: no copy of q or out")
        saw_q = saw_o = False
        for t, r in zip(tidy, strided):
            slots, _ = manifest_params(r["name"])
            if "q" in slots:
                saw_q = True
                check(arg(r, "q")[0] == q_view.ptr, f"{name}: q is the view itself")
                check((arg(r, "q_stride_n"), arg(r, "q_stride_h")) == ((hq + 2 * hkv) * d, d),
                      f"{name}: q's strides")
                check((arg(t, "q_stride_n"), arg(t, "q_stride_h")) == (hq * d, d),
                      f"{name}: contiguous q's strides")
            if "o_stride_n" in slots and arg(r, "o")[0] == o_view.ptr:
                saw_o = True
                check((arg(r, "o_stride_n"), arg(r, "o_stride_h")) == (hq * 2 * d, 2 * d),
                      f"{name}: out's strides")
            # Everything but q, o and their strides is the tidy call's.
            skip = set()
            for p in ("q", "o"):
                if p in slots:
                    skip |= {slots[p], slots[p] + 1, slots[p] + 3}
                for h in ("_stride_n", "_stride_h"):
                    if p + h in slots:
                        skip.add(slots[p + h])
            diff = [i for i, (a, b) in enumerate(zip(t["params"], r["params"]))
                    if a != b and i not in skip]
            check(not diff, f"{name}: {r['name']}: only q and o's slots differ ({diff})")
        check(saw_q and saw_o, f"{name}: a launch reads q and one writes the out view")
        # The (k, v) halves of the 5-D pool are the pool: the same launches.
        w.run(q_view, (cache[:, 0], cache[:, 1]), out=o_view)
        check(launches() == strided, f"{name}: (pool[:, 0], pool[:, 1]) runs as the pool")
        # A view whose head_dim is not contiguous, and an out whose heads
        # overlap, are refused with the reason.
        for bad_q, bad_o, what in (
                (Dev(qkv[:, :hq * d].reshape(rows, hq, d)[:, :, ::-1]), None, "q has strides"),
                (q_view, Dev(np.lib.stride_tricks.as_strided(
                    big, (rows, hq, d), (big.strides[0], 2 * 64, 2))), "out has strides")):
            try:
                w.run(bad_q, cache, out=bad_o)
            except ValueError as e:
                check(what in str(e) and "contiguous" in str(e), f"{name}: {e}")
            else:
                raise AssertionError(f"{name}: {what} accepted")
        launches()

    # Ragged K and V sliced from the same packed projection (SGLang's
    # extend), NHD, and an HND K/V ([heads, tokens, dim]): the ragged
    # kernels read them in place at their token and head strides.
    qo = np.array([0, 5, 6, 40], np.int32)
    rows = 40
    qkv = aligned((rows, (hq + 2 * hkv) * d), np.float16)
    q_view = Dev(qkv[:, :hq * d].reshape(rows, hq, d))
    k_view = Dev(qkv[:, hq * d:(hq + hkv) * d].reshape(rows, hkv, d))
    v_view = Dev(qkv[:, (hq + hkv) * d:].reshape(rows, hkv, d))
    k_hnd = Dev(aligned((hkv, rows, d), np.float16))
    v_hnd = Dev(aligned((hkv, rows, d), np.float16))
    for layout, k, v, strides in (
            ("NHD", k_view, v_view, ((hq + 2 * hkv) * d, d)),
            ("HND", k_hnd, v_hnd, (d, rows * d))):
        w = cm.BatchPrefillWithRaggedKVCacheWrapper(ws, layout)
        w.plan(qo, qo, hq, hkv, d, causal=True)
        w.run(q_view, k, v)
        rec = launches()
        att = [r for r in rec if "kv_stride_n" in manifest_params(r["name"])[0]]
        check(att, f"ragged {layout}: the attention kernel takes K/V strides")
        for r in att:
            check(arg(r, "k_cache")[0] == k.ptr and arg(r, "v_cache")[0] == v.ptr,
                  f"ragged {layout}: K and V are the views themselves")
            check((arg(r, "kv_stride_n"), arg(r, "kv_stride_h")) == strides,
                  f"ragged {layout}: K/V strides {strides}")
        check(w._engine.program.copy_fallbacks == 0, f"ragged {layout}: no copy")

    # torch's k[:, None] gives the one-token axis the stride of a token's
    # heads (numpy's is 0): K and V views of the packed projection, V right
    # after K, as torch passes them to the engine, still run on the ragged
    # kernels (reading them as one pool of K and V halves would need a page
    # table the ragged plan does not have).
    def one_token_pages(x):
        a = x.a
        return Dev(np.lib.stride_tricks.as_strided(
            a, (a.shape[0], 1) + a.shape[1:], (a.strides[0], a.strides[1] * a.shape[1]) + a.strides[1:]))

    w = cm.BatchPrefillWithRaggedKVCacheWrapper(ws, "NHD")
    w.plan(qo, qo, hq, hkv, d, causal=True)
    w._engine.run(q_view, (one_token_pages(k_view), one_token_pages(v_view)))
    att = [r for r in launches() if "kv_stride_n" in manifest_params(r["name"])[0]]
    check(att and all(arg(r, "k_cache")[0] == k_view.ptr and arg(r, "v_cache")[0] == v_view.ptr
                      for r in att), "packed ragged K/V with torch's strides run as ragged K/V")


def scenario_page_strides():
    """A paged cache that is one layer of a cache of every layer
    ([pages, layers, 2, page, heads, dim][:, l], as an engine keeps one
    allocation for all layers): the kernels read the view in place at its
    page stride (kv_stride_page), as a 5-D pool, as its (k, v) halves and
    as a pair of per-layer K and V caches; nothing is copied, and every
    other argument is the contiguous call's. A view whose pages are not
    contiguous inside is refused, saying so."""
    ws = Dev(aligned((64 << 20,), np.uint8))
    hq, hkv, d, page, layers, pages = 32, 8, 128, 16, 3, 10
    indptr = np.array([0, 3, 3, 10], np.int32)
    indices = np.arange(pages, dtype=np.int32)[::-1].copy()
    last = np.array([5, 1, 16], np.int32)
    inner = page * hkv * d
    every = aligned((pages, layers, 2, page, hkv, d), np.float16)
    k_every = aligned((pages, layers, page, hkv, d), np.float16)
    v_every = aligned((pages, layers, page, hkv, d), np.float16)
    for make, plan_args, rows in (
            (cm.BatchDecodeWithPagedKVCacheWrapper, (), 3),
            (cm.BatchPrefillWithPagedKVCacheWrapper, (np.array([0, 5, 6, 40], np.int32),), 40)):
        name = make.__name__
        w = make(ws)
        w.plan(*plan_args, indptr, indices, last, hq, hkv, d, page)
        q = Dev(aligned((rows, hq, d), np.float16))
        out = Dev(aligned((rows, hq, d), np.float16))
        for kind, tidy_kv, view_kv, key, stride in (
                ("pool", Dev(aligned((pages, 2, page, hkv, d), np.float16)),
                 Dev(every[:, 1]), "kv_cache", layers * 2 * inner),
                ("pool halves", Dev(aligned((pages, 2, page, hkv, d), np.float16)),
                 (Dev(every[:, 2, 0]), Dev(every[:, 2, 1])), "kv_cache", layers * 2 * inner),
                ("pair", (Dev(aligned((pages, page, hkv, d), np.float16)),
                          Dev(aligned((pages, page, hkv, d), np.float16))),
                 (Dev(k_every[:, 1]), Dev(v_every[:, 1])), "k_cache", layers * inner)):
            w.run(q, tidy_kv, out=out)
            tidy = launches()
            w.run(q, view_kv, out=out)
            viewed = launches()
            check([r["name"] for r in tidy] == [r["name"] for r in viewed],
                  f"{name} {kind}: the same kernels")
            check(w._engine.program.copy_fallbacks == 0, f"{name} {kind}: no copy")
            first = view_kv[0] if isinstance(view_kv, tuple) else view_kv
            saw = False
            for t, r in zip(tidy, viewed):
                slots, _ = manifest_params(r["name"])
                if key not in slots:
                    continue
                saw = True
                check("kv_stride_page" in slots, f"{name} {kind}: {r['name']} takes kv_stride_page")
                check(arg(r, key)[0] == first.ptr, f"{name} {kind}: the view itself")
                check(arg(t, "kv_stride_page") == (2 * inner if "pool" in kind else inner),
                      f"{name} {kind}: the contiguous cache's page stride")
                check(arg(r, "kv_stride_page") == stride,
                      f"{name} {kind}: the view's page stride {stride}")
                # Everything but the cache, its memref size and its page
                # stride is the contiguous call's.
                skip = {slots[key], slots[key] + 1, slots[key] + 3, slots["kv_stride_page"]}
                if "v_cache" in slots:
                    skip |= {slots["v_cache"], slots["v_cache"] + 1, slots["v_cache"] + 3}
                diff = [i for i, (a, b) in enumerate(zip(t["params"], r["params"]))
                        if a != b and i not in skip]
                check(not diff, f"{name} {kind}: {r['name']}: only the cache's slots differ ({diff})")
            check(saw, f"{name} {kind}: an attention kernel reads the cache")
        # Heads sliced out of a wider cache: a page is not contiguous inside.
        wide = aligned((pages, 2, page, 2 * hkv, d), np.float16)
        try:
            w.run(q, Dev(wide[:, :, :, :hkv]), out=out)
        except ValueError as e:
            check("contiguous layout inside" in str(e), f"{name}: {e}")
        else:
            raise AssertionError(f"{name}: a cache strided inside its pages was accepted")
        launches()


def _leak_cycle(kind):
    """Constructs, plans, runs and returns one wrapper of `kind` with a fresh
    float workspace, and the objects whose lifetime the test follows."""
    ws = Dev(aligned((8 << 20,), np.uint8))
    indptr = np.array([0, 3, 3, 10], np.int32)
    indices = np.arange(10, dtype=np.int32)
    last = np.array([5, 1, 16], np.int32)
    cache = Dev(aligned((10, 2, 16, 8, 128), np.float16))
    if kind == "decode":
        w = cm.BatchDecodeWithPagedKVCacheWrapper(ws)
        w.plan(indptr, indices, last, 32, 8, 128, 16)
        w.run(Dev(aligned((3, 32, 128), np.float16)), cache)
    elif kind == "prefill":
        w = cm.BatchPrefillWithPagedKVCacheWrapper(ws)
        w.plan(np.array([0, 5, 6, 40], np.int32), indptr, indices, last, 32, 8, 128, 16,
               causal=True)
        w.run(Dev(aligned((40, 32, 128), np.float16)), cache)
    elif kind == "multi_level":
        total, levels = seed_levels(shared=20, unique=(3, 2, 1, 4, 2, 1, 3))
        w = cm.MultiLevelCascadeAttentionWrapper(2, ws)
        w.plan(*levels, 64, 8, 128, 16)
        w.run(Dev(aligned((7, 64, 128), np.float16)),
              Dev(aligned((total, 2, 16, 8, 128), np.float16)))
    elif kind in ("shared_decode", "shared_prefill"):
        k_shared = Dev(aligned((32, 8, 128), np.float16))
        v_shared = Dev(aligned((32, 8, 128), np.float16))
        if kind == "shared_decode":
            w = cm.BatchDecodeWithSharedPrefixPagedKVCacheWrapper(ws)
            w.begin_forward(indptr, indices, last, 64, 8, 128, 16)
            q = Dev(aligned((3, 64, 128), np.float16))
            w.forward(q, k_shared, v_shared, cache)
        else:
            w = cm.BatchPrefillWithSharedPrefixPagedKVCacheWrapper(ws)
            w.begin_forward(np.array([0, 2, 3, 7], np.int32), indptr, indices, last,
                            64, 8, 128, 16)
            w.forward(Dev(aligned((7, 64, 128), np.float16)), k_shared, v_shared, cache)
    elif kind == "ragged":
        w = cm.BatchPrefillWithRaggedKVCacheWrapper(ws)
        w.plan(np.array([0, 5, 6, 40], np.int32), np.array([0, 30, 30, 45], np.int32),
               32, 8, 128, causal=True)
        k = Dev(aligned((45, 8, 128), np.float16))
        w.run(Dev(aligned((40, 32, 128), np.float16)), k, k)
    elif kind == "cuda_graph_decode":
        w = cm.CUDAGraphBatchDecodeWithPagedKVCacheWrapper(
            ws, Dev(aligned((4,), np.int32)), Dev(aligned((10,), np.int32)),
            Dev(aligned((3,), np.int32)))
        w.plan(indptr, indices, last, 32, 8, 128, 16)
        w.run(Dev(aligned((3, 32, 128), np.float16)), cache)
    else:
        raise ValueError(kind)
    launches()
    check(w._engine.int_ws is not None, f"{kind}: planned (an int workspace)")
    return w, [ws, w._engine.int_ws, w._engine, w]


def scenario_no_leak():
    """200 wrappers of each kind constructed, planned, run and deleted: every
    workspace, engine and wrapper is freed, and what the driver allocated
    for them (staging, graphs, device memory) returns to its baseline."""
    for kind in ("decode", "prefill", "multi_level", "shared_decode", "shared_prefill",
                 "ragged", "cuda_graph_decode"):
        w, _ = _leak_cycle(kind)  # loads the kernels (kept by the device)
        del w, _
        gc.collect()
        baseline = FAKE.fake_cuda_live_objects()
        alive = []
        for _ in range(200):
            w, objs = _leak_cycle(kind)
            alive += [weakref.ref(o) for o in objs]
            del w, objs
        gc.collect()
        left = sum(r() is not None for r in alive)
        check(left == 0, f"{kind}: {left} of {len(alive)} workspaces, engines and "
                         "wrappers outlive their wrapper")
        now = FAKE.fake_cuda_live_objects()
        check(now == baseline, f"{kind}: {now - baseline} driver allocations left "
                               "after 200 wrappers were deleted")


if __name__ == "__main__":
    globals()["scenario_" + sys.argv[1]]()
    print("OK", sys.argv[1])
