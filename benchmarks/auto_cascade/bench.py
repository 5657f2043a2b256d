#!/usr/bin/env python3
"""Automatic cascades on the GPU: checks and benchmark (docs/auto-cascade.md).

  python3 -m benchmarks.auto_cascade.bench BUNDLE_DIR [--what check,bench]
  python3 -m benchmarks.auto_cascade.bench --dry-run

(from the repository root.) BUNDLE_DIR: kernels of
test/Integration/gpu/kernels.mlir + mma_kernels.mlir
(`tools/cascade-dev gpu prepare integration`). The runtime's Python module
plans every
batch here: plain (one level, cascade_mlir._runtime.plan), automatic cascade
(_runtime.auto_cascade), hand-built cascade (_runtime.plan per level). The
launches of a plan
follow its levels: level 0 writes o/lse, level l >= 1 accumulates into them
(the fused merge of cascade-decompose-levels): decode or tensor-core prefill,
in split mode the split kernel plus merge_states_indptr.

check: float32 torch reference (each request's pages gathered, softmax over
its keys, causal where asked) vs our launches of the auto cascade on fresh
random inputs: grouped sharing (B=128 in 8 groups of 16, 8192-token prefix,
200-256 unique tokens), no sharing, everything shared, shuffled and
duplicated page ids with nested prefixes (3 levels), causal prefill with
groups; 32/8 heads, D=128, page 16, fp16.

bench: medians of CUDA-event timings (us, benchmarks.common.timing) of the
launches captured in CUDA graphs:
B=128 in 8 groups of 16 (8192 shared + 256 unique tokens): plain paged decode
vs auto cascade vs hand-built cascade; B=128 without sharing (8448 tokens
each): plain vs auto (the same plan, so the same launches).

--dry-run: no GPU; plans every batch and checks the plan structures only.
"""
import argparse
import math
import sys

import numpy as np

from cascade_mlir import _runtime

HQ, HKV, D, PS = 32, 8, 128, 16
G = HQ // HKV


# ---------------------------------------------------------------------------
# Batches (host side, numpy): page-id lists per request
# ---------------------------------------------------------------------------

class PagedBatch:
    """Requests as page-id lists into a pool of `num_pages` pages."""

    def __init__(self, pages, last, qo_lens=None, num_pages=None):
        self.pages = [np.asarray(p, np.int32) for p in pages]
        self.last = np.asarray(last, np.int32)
        self.qo_lens = qo_lens
        self.B = len(self.pages)
        self.kv_indptr = np.zeros(self.B + 1, np.int32)
        self.kv_indptr[1:] = np.cumsum([len(p) for p in self.pages])
        self.kv_indices = (np.concatenate(self.pages) if self.B else
                           np.zeros(0, np.int32)).astype(np.int32)
        self.num_pages = int(num_pages if num_pages is not None else
                             self.kv_indices.max() + 1)
        if qo_lens is None:
            self.qo_indptr = np.arange(self.B + 1, dtype=np.int32)
        else:
            self.qo_indptr = np.zeros(self.B + 1, np.int32)
            self.qo_indptr[1:] = np.cumsum(qo_lens)
        self.rows = int(self.qo_indptr[-1])
        self.mode = "decode" if qo_lens is None else "prefill"

    def inputs(self):
        d = dict(kv_indptr=self.kv_indptr.tolist(), kv_indices=self.kv_indices.tolist(),
                 kv_last_page_len=self.last.tolist())
        if self.mode == "prefill":
            d["qo_indptr"] = self.qo_indptr.tolist()
        return d


def grouped(rng, groups, per, prefix_tokens, unique_tokens, shuffle=True):
    """`groups` groups of `per` requests, each group sharing prefix_tokens
    (whole pages); unique_tokens: an int or a (lo, hi) range per request."""
    sp = prefix_tokens // PS
    lens = []
    for _ in range(groups * per):
        u = unique_tokens if isinstance(unique_tokens, int) else int(rng.integers(*unique_tokens))
        lens.append(u)
    total = groups * sp + sum(-(-u // PS) for u in lens)
    ids = rng.permutation(total).astype(np.int32) if shuffle else np.arange(total, dtype=np.int32)
    nxt = 0
    pages, last = [], []
    for g in range(groups):
        pre = ids[nxt:nxt + sp]
        nxt += sp
        for r in range(per):
            u = lens[g * per + r]
            n = -(-u // PS)
            pages.append(np.concatenate([pre, ids[nxt:nxt + n]]))
            nxt += n
            last.append(u - (n - 1) * PS)
    return PagedBatch(pages, last, num_pages=total)


def no_sharing(rng, B, tokens):
    n = -(-tokens // PS)
    ids = rng.permutation(B * n).astype(np.int32)
    return PagedBatch([ids[i * n:(i + 1) * n] for i in range(B)],
                      [tokens - (n - 1) * PS] * B, num_pages=B * n)


def everything_shared(rng, B, tokens):
    n = -(-tokens // PS)
    ids = rng.permutation(n).astype(np.int32)
    return PagedBatch([ids] * B, [tokens - (n - 1) * PS] * B, num_pages=n)


def nested_duplicated(rng):
    """2 top groups of 24 requests sharing 1024 tokens; inside each, 3
    subgroups of 8 sharing 512 more; 17-150 own tokens. Page ids are drawn
    with replacement from a small pool: shuffled, and repeated within and
    across requests."""
    pool = 600
    draw = lambda n: rng.integers(0, pool, n).astype(np.int32)  # noqa: E731
    pages, last = [], []
    for _ in range(2):
        top = draw(1024 // PS)
        for _ in range(3):
            sub = np.concatenate([top, draw(512 // PS)])
            for _ in range(8):
                u = int(rng.integers(17, 151))
                n = -(-u // PS)
                pages.append(np.concatenate([sub, draw(n)]))
                last.append(u - (n - 1) * PS)
    return PagedBatch(pages, last, num_pages=pool)


def groups_and_loners(rng):
    """3 groups of 10 requests sharing 2048 tokens (50-300 own tokens), with
    10 requests that share nothing placed before, between and after them:
    the shared level has groups without pages."""
    g = grouped(rng, 3, 10, 2048, (50, 300))
    lone = no_sharing(rng, 10, 700)
    off = g.num_pages
    order = [("l", 0), ("l", 1)] + [("g", i) for i in range(10)] + [("l", 2)] + \
        [("g", i) for i in range(10, 20)] + [("l", i) for i in range(3, 7)] + \
        [("g", i) for i in range(20, 30)] + [("l", i) for i in range(7, 10)]
    pages = [g.pages[i] if k == "g" else lone.pages[i] + off for k, i in order]
    last = [g.last[i] if k == "g" else lone.last[i] for k, i in order]
    return PagedBatch(pages, last, num_pages=off + lone.num_pages)


def causal_prefill(rng):
    """4 groups of 8 requests sharing 2048 tokens, 300 own tokens each (the
    last of which are 1-64 new queries): causal prefill."""
    b = grouped(rng, 4, 8, 2048, 300)
    qo = [int(x) for x in rng.integers(1, 65, b.B)]
    return PagedBatch(b.pages, b.last, qo_lens=qo, num_pages=b.num_pages)


def hand_built_levels(b, groups, per, prefix_tokens):
    """The two levels of `grouped` written by hand."""
    sp = prefix_tokens // PS
    qo0 = [g * per for g in range(groups + 1)]
    kv0 = [g * sp for g in range(groups + 1)]
    idx0 = np.concatenate([b.pages[g * per][:sp] for g in range(groups)])
    own = [p[sp:] for p in b.pages]
    kv1 = np.zeros(b.B + 1, np.int32)
    kv1[1:] = np.cumsum([len(p) for p in own])
    return [dict(mode="prefill", qo_indptr=qo0, kv_indptr=kv0, kv_indices=idx0.tolist(),
                 kv_last_page_len=[PS] * groups, qo_tile_size=128),
            dict(mode="decode", qo_indptr=list(range(b.B + 1)), kv_indptr=kv1.tolist(),
                 kv_indices=np.concatenate(own).tolist(),
                 kv_last_page_len=b.last.tolist())]


# ---------------------------------------------------------------------------
# Planning through the runtime's Python module
# ---------------------------------------------------------------------------

def options(b, num_sms, occupancy, graph=False):
    return dict(page_size=PS, num_qo_heads=HQ, num_kv_heads=HKV, head_dim=D,
                num_sms=num_sms, occupancy=occupancy, num_pages=b.num_pages,
                cuda_graph=int(graph))


def plan_level(mode, inp, opts):
    kw = {k: np.asarray(v, np.int32) for k, v in inp.items()
          if k in ("kv_indptr", "kv_last_page_len", "kv_indices")}
    if mode == "prefill":
        kw["qo_indptr"] = np.asarray(inp["qo_indptr"], np.int32)
    return _runtime.plan(mode, **kw, **dict(opts, **{k: v for k, v in inp.items()
                                                     if k == "qo_tile_size"}))


def plan_plain(b, num_sms, occ):
    """(levels' plans and statistics, levels' inputs) of the batch as one level."""
    return dict(levels=[plan_level(b.mode, b.inputs(), options(b, num_sms, occ))]), \
        [b.inputs()]


def plan_auto(b, num_sms, occ, causal=False, graph=False, **auto):
    """The runtime's automatic cascade of the batch."""
    inp = b.inputs()
    kw = {k: np.asarray(v, np.int32) for k, v in inp.items()}
    r = _runtime.auto_cascade(b.mode, causal=causal, shared_qo_tile_size=128, **kw,
                              **options(b, num_sms, occ, graph), **auto)
    levels = r["levels"]
    inputs = [{k: lv[k] for k in ("qo_indptr", "kv_indptr", "kv_indices", "kv_last_page_len")}
              for lv in levels]
    return dict(levels=[lv["plan"] for lv in levels], auto_cascade=r["stats"]), inputs


def plan_levels(b, levels, num_sms, occ):
    """Hand-built levels, each planned by the runtime."""
    opts = options(b, num_sms, occ)
    return dict(levels=[plan_level(lv["mode"], lv, opts) for lv in levels]), levels


def same_plan(p, q, skip=("int_workspace_bytes", "float_workspace_bytes")):
    keys = set(p) | set(q)
    return all(k in p and k in q and np.array_equal(np.asarray(p[k]), np.asarray(q[k]))
               for k in keys if k not in skip)


# ---------------------------------------------------------------------------
# GPU side
# ---------------------------------------------------------------------------

def load_gpu():
    global cp, torch, BL, timing
    import cupy as cp  # noqa: F401
    import torch  # noqa: F401
    import benchmarks.common.bundle as BL  # noqa: F401
    import benchmarks.common.timing as timing  # noqa: F401


def relerr(a, ref):
    a = a.float()
    ref = ref.float()
    return float((a - ref).abs().max() / ref.abs().max().clamp_min(1e-30))


def graph_timed(b, launch_list):
    return timing.graph_time_us(BL.launch_all(b, launch_list))


def timed(fn):
    return timing.cuda_time_us(fn, reps=20, warmup=3, inner=5)


class Kernels:
    """The kernels of every level kind, 32/8 heads, D=128, page 16, fp16."""

    def __init__(self, b):
        none = dict(pos_encoding="none", logits_soft_cap=0.0, window_left=-1, head_dim=D,
                    num_qo_heads=HQ, num_kv_heads=HKV, page_size=PS, kv_layout="nhd",
                    kv_form="pool", q_dtype="f16")
        mma = dict(kernel_family="mma_sync", qo_tile_size=128, **none)
        self.b = b
        self.dec = {a: b.find("decode", kernel_family="rows", accumulate=a, **none)
                    for a in (False, True)}
        self.dec_split = b.find("decode_split", kernel_family="rows", accumulate=False,
                                **none)
        merge = dict(head_dim=D, num_qo_heads=HQ, v_dtype="f16", lse_base=2)
        self.merge_req = {a: b.find("merge_states_indptr", accumulate=a, indptr="o_indptr",
                                    **merge) for a in (False, True)}
        self.merge_row = {a: b.find("merge_states_indptr", accumulate=a,
                                    indptr="merge_indptr", **merge) for a in (False, True)}
        self.pre = {(c, a): b.find("prefill", causal=c, accumulate=a, **mma)
                    for c in (False, True) for a in (False, True)}
        self.pre_split = {c: b.find("prefill_split", causal=c, accumulate=False, **mma)
                          for c in (False, True)}

    def occupancy(self):
        return BL.occupancy(self.b, self.pre_split[False])


def launches(K, cj, inputs, q, cache, o, lse, causal=False):
    """(kernel, buffers) of every level of a plan, in order."""
    out = []
    n = len(cj["levels"])
    for lvl, (p, inp) in enumerate(zip(cj["levels"], inputs)):
        acc = lvl > 0
        cz = causal and lvl == n - 1
        # Partial-state rows of this plan (a CUDA-graph plan's padded work
        # items write none).
        prc = max(p["num_partial_rows"], 1)
        bufs = dict(q=BL.cpa(q), kv_cache=BL.cpa(cache), o=BL.cpa(o), lse=BL.cpa(lse),
                    kv_indptr=BL.dev_i32(inp["kv_indptr"]),
                    kv_indices=BL.dev_i32(inp["kv_indices"]),
                    kv_last_page_len=BL.dev_i32(inp["kv_last_page_len"]),
                    tmp_v=cp.empty(prc * HQ * D, cp.float32), tmp_s=cp.empty(prc * HQ, cp.float32),
                    **BL.plan_buffers(p))
        if p["mode"] == "prefill":
            bufs["qo_indptr"] = BL.dev_i32(inp["qo_indptr"])
            if p["split_kv"]:
                out += [(K.pre_split[cz], bufs), (K.merge_row[acc], bufs)]
            else:
                out += [(K.pre[(cz, acc)], bufs)]
        else:
            if p["split_kv"]:
                out += [(K.dec_split, bufs), (K.merge_req[acc], bufs)]
            else:
                out += [(K.dec[acc], bufs)]
    return out


def make_tensors(b, seed):
    g = torch.Generator(device="cuda")
    g.manual_seed(seed)
    cache = torch.randn(b.num_pages, 2, PS, HKV, D, device="cuda", dtype=torch.float16,
                        generator=g)
    q = torch.randn(b.rows, HQ, D, device="cuda", dtype=torch.float16, generator=g)
    return q, cache


def reference(b, q, cache, causal):
    """float32 attention over each request's pages: o [rows, HQ, D], lse
    (base 2) [rows, HQ]."""
    o = torch.empty(b.rows, HQ, D, device="cuda", dtype=torch.float32)
    lse = torch.empty(b.rows, HQ, device="cuda", dtype=torch.float32)
    scale = 1 / math.sqrt(D)
    for i in range(b.B):
        r0, r1 = int(b.qo_indptr[i]), int(b.qo_indptr[i + 1])
        m = r1 - r0
        if m == 0:
            continue
        pg = torch.as_tensor(b.pages[i].astype(np.int64), device="cuda")
        kvlen = (len(b.pages[i]) - 1) * PS + int(b.last[i])
        k = cache[pg, 0].reshape(-1, HKV, D)[:kvlen].float()
        v = cache[pg, 1].reshape(-1, HKV, D)[:kvlen].float()
        qi = q[r0:r1].float().reshape(m, HKV, G, D)
        s = torch.einsum("mhgd,lhd->hgml", qi, k) * scale
        if causal:
            qpos = kvlen - m + torch.arange(m, device="cuda")
            vis = torch.arange(kvlen, device="cuda")[None, :] <= qpos[:, None]
            s = s.masked_fill(~vis, float("-inf"))
        lse_e = torch.logsumexp(s, -1)  # [h, g, m]
        p = torch.exp(s - lse_e[..., None])
        oi = torch.einsum("hgml,lhd->mhgd", p, v)
        o[r0:r1] = oi.reshape(m, HQ, D)
        lse[r0:r1] = (lse_e / math.log(2)).permute(2, 0, 1).reshape(m, HQ)
    return o, lse


def run_once(K, launch_list):
    for name, bufs in launch_list:
        K.b.launch(name, bufs)
    torch.cuda.synchronize()


# ---------------------------------------------------------------------------
# check / bench
# ---------------------------------------------------------------------------

def structure(cj):
    lv = cj["levels"]
    return f"{len(lv)} levels, groups {[x['batch_size'] for x in lv]}"


def check_cases(rng):
    """(name, batch, causal, CUDA-graph options or None, expected levels)."""
    return [
        ("grouped 8x16 prefix 8192 unique 200-256", grouped(rng, 8, 16, 8192, (200, 257)),
         False, None, 2),
        ("no sharing B=128 2304 tokens", no_sharing(rng, 128, 2304), False, None, 1),
        ("everything shared B=64 4100 tokens", everything_shared(rng, 64, 4100), False,
         None, 2),
        ("nested + duplicated page ids B=48", nested_duplicated(rng), False, None, 3),
        ("3 groups of 10 + 10 loners", groups_and_loners(rng), False, None, 2),
        ("causal prefill 4x8 prefix 2048", causal_prefill(rng), True, None, 2),
        ("grouped 4x8, CUDA-graph mode (3 levels, 12 groups)",
         grouped(rng, 4, 8, 1024, (1, 200)), False,
         dict(max_levels=3, graph_group_capacity=12), 3),
    ]


def do_check(args, K, num_sms, occ):
    rng = np.random.default_rng(7)
    fails = 0
    for seed, (name, b, causal, graph, want_levels) in enumerate(check_cases(rng)):
        cj, inputs = plan_auto(b, num_sms, occ, causal, graph is not None,
                               **(graph or {}))
        st = cj["auto_cascade"]
        q, cache = make_tensors(b, 100 + seed)
        o = torch.full((b.rows, HQ, D), float("nan"), device="cuda", dtype=torch.float16)
        lse = torch.full((b.rows, HQ), float("nan"), device="cuda", dtype=torch.float32)
        ls = launches(K, cj, inputs, q, cache, o, lse, causal)
        run_once(K, ls)
        ro, rl = reference(b, q, cache, causal)
        eo = relerr(o, ro)
        el = float((lse - rl).abs().max())
        ok = (eo < 1e-2 and el < 1e-2 and not torch.isnan(o).any().item()
              and len(cj["levels"]) == want_levels)
        fails += not ok
        print(f"{'PASS' if ok else 'FAIL'} {name}: {structure(cj)}, pages saved "
              f"{st['pages_saved']}/{st['pages_in']}, {len(ls)} launches "
              f"({', '.join(n.split('_')[1] for n, _ in ls)}), o rel err {eo:.1e}, "
              f"lse abs err {el:.1e}", flush=True)
        if seed == 0:  # the hand-built cascade of the same batch, same check
            hj, hin = plan_levels(b, hand_built_levels(b, 8, 16, 8192),
                                  num_sms, occ)
            o.fill_(float("nan"))
            run_once(K, launches(K, hj, hin, q, cache, o, lse))
            eo2 = relerr(o, ro)
            ok2 = eo2 < 1e-2
            fails += not ok2
            print(f"{'PASS' if ok2 else 'FAIL'} {name} (hand-built levels): o rel err "
                  f"{eo2:.1e}", flush=True)
    print(f"auto cascade GPU check: {len(check_cases(np.random.default_rng(7))) + 1 - fails} "
          f"passed, {fails} failed", flush=True)
    return fails


def do_bench(args, K, num_sms, occ):
    rng = np.random.default_rng(11)
    rows = []
    b = grouped(rng, 8, 16, 8192, 256)
    q, cache = make_tensors(b, 1)
    o = torch.empty(b.rows, HQ, D, device="cuda", dtype=torch.float16)
    lse = torch.empty(b.rows, HQ, device="cuda", dtype=torch.float32)
    ro, _ = reference(b, q, cache, False)
    variants = [("plain paged decode", plan_plain(b, num_sms, occ)),
                ("auto cascade", plan_auto(b, num_sms, occ)),
                ("hand-built cascade", plan_levels(b,
                                                   hand_built_levels(b, 8, 16, 8192),
                                                   num_sms, occ))]
    t_plain = None
    for name, (cj, inputs) in variants:
        ls = launches(K, cj, inputs, q, cache, o, lse)
        o.fill_(float("nan"))
        run_once(K, ls)
        err = relerr(o, ro)
        t = graph_timed(K.b, ls)
        t_plain = t_plain or t
        pages = sum(len(i["kv_indices"]) for i in inputs)
        parts = " + ".join(f"{graph_timed(K.b, [x]):.0f}" for x in ls)
        rows.append((f"B128 8 groups x16, prefix 8192 + unique 256: {name}", f"{t:.1f}",
                     f"{t_plain / t:.2f}x", f"{len(cj['levels'])}",
                     f"{len(ls)} ({parts} us)", f"{pages}", f"{err:.1e}"))
        print(" | ".join(rows[-1]), flush=True)
    # FlashInfer 0.5.3 (when importable): plain decode and its
    # MultiLevelCascadeAttentionWrapper over the hand-built levels.
    try:
        import flashinfer
        t_ = lambda a: torch.as_tensor(np.asarray(a, np.int32), device="cuda")  # noqa: E731
        ws = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
        w = flashinfer.BatchDecodeWithPagedKVCacheWrapper(ws, "NHD")
        w.plan(t_(b.kv_indptr), t_(b.kv_indices), t_(b.last), HQ, HKV, D, PS,
               q_data_type=torch.float16, kv_data_type=torch.float16)
        err = relerr(w.run(q, cache), ro)
        t = timed(lambda: w.run(q, cache))
        rows.append(("B128 8 groups x16: FlashInfer 0.5.3 batch decode", f"{t:.1f}",
                     f"{t_plain / t:.2f}x", "1", "", f"{len(b.kv_indices)}", f"{err:.1e}"))
        print(" | ".join(rows[-1]), flush=True)
        lv = hand_built_levels(b, 8, 16, 8192)
        wc = flashinfer.MultiLevelCascadeAttentionWrapper(2, ws, "NHD")
        wc.plan([t_(x["qo_indptr"]) for x in lv], [t_(x["kv_indptr"]) for x in lv],
                [t_(x["kv_indices"]) for x in lv], [t_(x["kv_last_page_len"]) for x in lv],
                HQ, HKV, D, PS)
        err = relerr(wc.run(q, cache), ro)
        t = timed(lambda: wc.run(q, cache))
        rows.append(("B128 8 groups x16: FlashInfer 0.5.3 cascade (hand-built levels)",
                     f"{t:.1f}", f"{t_plain / t:.2f}x", "2", "",
                     f"{sum(len(x['kv_indices']) for x in lv)}", f"{err:.1e}"))
        print(" | ".join(rows[-1]), flush=True)
    except Exception as e:  # noqa: BLE001
        print(f"FlashInfer rows skipped: {e!r}", flush=True)
    del cache
    torch.cuda.empty_cache()
    b = no_sharing(rng, 128, 8448)
    q, cache = make_tensors(b, 2)
    o = torch.empty(b.rows, HQ, D, device="cuda", dtype=torch.float16)
    lse = torch.empty(b.rows, HQ, device="cuda", dtype=torch.float32)
    pj, pin = plan_plain(b, num_sms, occ)
    aj, ain = plan_auto(b, num_sms, occ)
    same = len(aj["levels"]) == 1 and same_plan(aj["levels"][0], pj["levels"][0])
    print(f"no sharing: auto plan == plain plan: {same}", flush=True)
    ts = {}
    for name, (cj, inputs) in (("plain paged decode", (pj, pin)), ("auto cascade", (aj, ain))):
        ls = launches(K, cj, inputs, q, cache, o, lse)
        # Interleave the two variants' timings to share clock drift.
        ts[name] = (ls, [])
    for _ in range(5):
        for name in ts:
            ts[name][1].append(graph_timed(K.b, ts[name][0]))
    t0 = float(np.median(ts["plain paged decode"][1]))
    for name in ts:
        t = float(np.median(ts[name][1]))
        rows.append((f"B128 no sharing, 8448 tokens each: {name}", f"{t:.1f}",
                     f"{t / t0:.3f} of plain", f"{len(ts[name][0])} launch(es)", "", "", ""))
        print(" | ".join(rows[-1]), flush=True)
    print()
    print("| batch: variant | us | vs plain | levels | launches | pages read | max rel err |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    return 0 if same else 1


def dry_run(args):
    rng = np.random.default_rng(7)
    for name, b, causal, graph, want in check_cases(rng):
        cj, inputs = plan_auto(b, 132, 1, causal, graph is not None,
                               **(graph or {}))
        print(f"{name}: {structure(cj)} (want {want}), saved "
              f"{cj['auto_cascade']['pages_saved']}/{cj['auto_cascade']['pages_in']}")
        assert len(cj["levels"]) == want, name
    b = grouped(rng, 8, 16, 8192, 256)
    hj, _ = plan_levels(b, hand_built_levels(b, 8, 16, 8192), 132, 1)
    aj, _ = plan_auto(b, 132, 1)
    assert len(hj["levels"]) == len(aj["levels"])
    for x, y in zip(hj["levels"], aj["levels"]):
        assert same_plan(x, y)
    print("hand-built and auto plans of the grouped batch agree")
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bundle", nargs="?")
    ap.add_argument("--what", default="check,bench")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args()
    if args.dry_run:
        return dry_run(args)
    if not args.bundle:
        ap.error("BUNDLE_DIR is needed (except with --dry-run)")
    load_gpu()
    b = BL.Bundle(args.bundle)
    K = Kernels(b)
    num_sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    occ = K.occupancy()
    print(torch.cuda.get_device_name(), f"SMs {num_sms}, occupancy {occ}", flush=True)
    rc = 0
    if "check" in args.what:
        rc |= do_check(args, K, num_sms, occ) != 0
    if "bench" in args.what:
        rc |= do_bench(args, K, num_sms, occ) != 0
    return rc


if __name__ == "__main__":
    sys.exit(main())
