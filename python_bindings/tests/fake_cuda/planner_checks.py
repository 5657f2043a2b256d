"""The stand-in driver's scenarios of the planner's choices (see
fake_device_checks.py, which runs them): plan(..., auto_cascade=...) and an
explicit cascade that would not pay run as the launches of the levels or of
the plain batch the planner chose."""
import os
import sys

import numpy as np

import cascade_mlir as cm

# The test helpers of python_bindings/tests (run as a script from here).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from page_batches import grouped_pages  # noqa: E402

from stand_in import Dev, aligned, arg, check, launches, manifest_params, read_i32  # noqa: E402


def grouped_decode_batch(groups, own=2):
    """Requests in groups sharing `shared` leading pages, `own` pages each
    after them; page ids in order of first use."""
    return grouped_pages(groups, own, last_page_len=9)


def scenario_auto():
    """plan(..., auto_cascade=...) of the decode wrapper: the runtime's
    levels are the launches' index arrays; without sharing, the launches of
    the plain plan; in CUDA-graph mode, fixed levels that replay after
    replans with other sharing."""
    ws = Dev(aligned((128 << 20,), np.uint8))
    eager = {"level_overhead_us": 0.0, "group_overhead_us": 0.0, "level_row_bytes": 0.0,
             "l2_hidden_fraction": 0.0}
    kp, ki, kl, npages = grouped_decode_batch([(3, 40), (1, 0), (4, 25)])
    q = Dev(aligned((kp.size - 1, 32, 128), np.float16))
    cache = Dev(aligned((npages, 2, 16, 8, 128), np.float16))
    w = cm.BatchDecodeWithPagedKVCacheWrapper(ws)
    w.plan(kp, ki, kl, 32, 8, 128, 16, auto_cascade=eager)
    st = w.auto_cascade_stats
    check(st["num_levels"] == 2 and st["pages_saved"] == 2 * 40 + 3 * 25, st)
    w.run(q, cache)
    rec = launches()
    names = [r["name"] for r in rec]
    check(names[0].startswith("cascade_prefill") and "causal" not in names[0],
          f"shared level: non-causal prefill: {names}")
    check("decode" in names[-1] and "_acc" in names[-1] or
          "merge" in names[-1], f"the requests' level accumulates: {names}")
    levels = w.auto_cascade_levels
    first_att = rec[0]
    last_att = next(r for r in reversed(rec) if "decode" in r["name"])
    for lvl, r in ((0, first_att), (1, last_att)):
        for name in ("kv_indptr", "kv_indices", "kv_last_page_len"):
            ptr, _ = arg(r, name)
            host = levels[lvl][name]
            check(np.array_equal(read_i32(ptr, host.size), host), f"level {lvl} {name}")
    # No sharing that pays (defaults): one level, the plain plan's launches.
    kp2, ki2, kl2, n2 = grouped_decode_batch([(1, 3)] * 6)
    q2 = Dev(aligned((6, 32, 128), np.float16))
    cache2 = Dev(aligned((n2, 2, 16, 8, 128), np.float16))
    w.plan(kp2, ki2, kl2, 32, 8, 128, 16, auto_cascade=True)
    check(w.auto_cascade_stats["num_levels"] == 1, w.auto_cascade_stats)
    w.run(q2, cache2)
    auto = launches()
    w.plan(kp2, ki2, kl2, 32, 8, 128, 16)
    w.run(q2, cache2)
    plain = launches()
    check([(r["name"], r["grid"]) for r in auto] == [(r["name"], r["grid"]) for r in plain],
          f"no sharing: the plain launches ({[r['name'] for r in auto]})")
    # CUDA-graph mode: always max_levels levels of fixed sizes.
    # One output for every replay (as a captured graph needs): its address
    # is then the caller's, not wherever the allocator puts a new one.
    out = Dev(aligned(q.shape, np.float16))
    g = cm.BatchDecodeWithPagedKVCacheWrapper(ws, use_cuda_graph=True)
    g.plan(kp, ki, kl, 32, 8, 128, 16, auto_cascade=eager)
    check(g.auto_cascade_stats["num_levels"] == 3, g.auto_cascade_stats)
    g.run(q, cache, out=out)
    first = launches()
    for groups in ([(8, 3)], [(1, 0)] * 8, [(2, 5), (2, 6), (4, 1)]):
        kp3, ki3, kl3, n3 = grouped_decode_batch(groups)
        g.plan(kp3, ki3, kl3, 32, 8, 128, 16, auto_cascade=eager)
        g.run(q, cache if n3 <= npages else Dev(aligned((n3, 2, 16, 8, 128), np.float16)),
              out=out)
        again = launches()
        check([(r["name"], r["grid"]) for r in first] ==
              [(r["name"], r["grid"]) for r in again], f"graph mode: same launches {groups}")
        for a, b in zip(first, again):
            for name in ("q", "o", "kv_indptr", "kv_indices", "request_indices"):
                if name in manifest_params(a["name"])[0]:
                    check(arg(a, name)[0] == arg(b, name)[0], f"{name} did not move")
        lv = g.auto_cascade_levels
        att = [r for r in again if "merge" not in r["name"]]
        check(len(att) >= 3, [r["name"] for r in again])
        # Level 0's page list is in the wrapper's own buffer, refilled.
        ptr, cap = arg(att[0], "kv_indices")
        check(cap >= 65536, f"level-0 page list room: {cap}")
        got = read_i32(ptr, lv[0]["kv_indices"].size)
        check(np.array_equal(got, lv[0]["kv_indices"]), "level-0 page list uploaded")
    try:
        kp4, ki4, kl4, _ = grouped_decode_batch([(3, 2)])
        g.plan(kp4, ki4, kl4, 32, 8, 128, 16, auto_cascade=eager)
        check(False, "a replan with another batch size must fail in graph mode")
    except ValueError as e:
        check("CUDA-graph mode" in str(e), str(e))


def scenario_explicit_plain():
    """MultiLevelCascadeAttentionWrapper over a one-page shared prefix
    (8 decode requests): the cascade would not pay, so plan() runs the plain
    batch (runs_plain) with the launches and page list of the decode
    wrapper over the concatenated pages; plain_when_cheaper = False keeps
    the levels; a 4096-page prefix pays and keeps them too."""
    ws = Dev(aligned((128 << 20,), np.uint8))
    b, own = 8, 3
    for prefix, pays in ((1, False), (4096, True)):
        total = prefix + b * own
        arrays = ([np.array([0, b], np.int32), np.arange(b + 1, dtype=np.int32)],
                  [np.array([0, prefix], np.int32),
                   np.arange(0, own * b + 1, own, dtype=np.int32)],
                  [np.arange(prefix, dtype=np.int32),
                   np.arange(prefix, total, dtype=np.int32)],
                  [np.array([16], np.int32), np.full(b, 5, np.int32)])
        q = Dev(aligned((b, 32, 128), np.float16))
        cache = Dev(aligned((total, 2, 16, 8, 128), np.float16))
        w = cm.MultiLevelCascadeAttentionWrapper(2, ws, "NHD")
        w.plan(*arrays, 32, 8, 128, 16)
        check(w.runs_plain is not pays, f"prefix {prefix}: runs_plain {w.runs_plain}")
        w.run(q, cache)
        rec = launches()
        flat_ip = np.arange(0, (prefix + own) * b + 1, prefix + own, dtype=np.int32)
        flat_ids = np.concatenate([np.tile(arrays[2][0], (b, 1)),
                                   arrays[2][1].reshape(b, own)], axis=1).reshape(-1)
        d = cm.BatchDecodeWithPagedKVCacheWrapper(ws)
        d.plan(flat_ip, flat_ids, np.full(b, 5, np.int32), 32, 8, 128, 16)
        d.run(q, cache)
        plain = launches()
        shape = [(r["name"], r["grid"]) for r in rec]
        if pays:
            check(shape != [(r["name"], r["grid"]) for r in plain],
                  f"a cascade that pays keeps its levels: {shape}")
            continue
        check(shape == [(r["name"], r["grid"]) for r in plain],
              f"the plain decode launches: {shape}")
        att = next(r for r in rec if "decode" in r["name"])
        ptr, _ = arg(att, "kv_indices")
        check(np.array_equal(read_i32(ptr, flat_ids.size), flat_ids), "the concatenated pages")
        w.plain_when_cheaper = False
        w.plan(*arrays, 32, 8, 128, 16)
        check(not w.runs_plain, "plain_when_cheaper = False keeps the levels")
        w.run(q, cache)
        check(len(launches()) > len(plain), "the cascade's launches")
