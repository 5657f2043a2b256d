#!/usr/bin/env python3
"""GPU check of the cascade kernels (run on the GPU machine; no MLIR there).

Usage, from the repository root, with the runtime's Python module
(cascade_mlir, runtime-only is enough) and the repository root importable:
  PYTHONPATH=.:SITE python3 test/Integration/gpu/check.py BUNDLE_DIR [--small] [--seed N]
BUNDLE_DIR holds kernels.ptx + manifest.json produced by
  cascade-opt test/Integration/gpu/kernels.mlir --cascade-to-ptx="bundle-dir=BUNDLE_DIR" -o /dev/null
Every case draws fresh random inputs, poisons the outputs (NaN), launches the
kernel(s) and compares with a float64 reference. Error metric:
max|out - ref| / max|ref| for v/o, and max|lse - ref| / max(1, max|ref|) over
finite entries (the -inf entries must match exactly). Thresholds: f16/f32
1e-3, bf16 1e-2; a fused cascade of L levels, whose state is rounded to o's
dtype after every level, adds L - 1 units of that rounding (2^-11 for f16,
2^-8 for bf16) to the v/o bound (docs/semantics.md, "Fused cascades round
their state"); NaN never passes. Exit code 1 if any case fails.
Every plan (split-KV work items, partial-state layout, grid slack) is the
runtime's (cascade_mlir._runtime.plan; see plans.py); kernels are launched by
benchmarks.common.bundle, which binds parameters by name from the manifest.
"""
import argparse
import math
import re
import sys

import numpy as np
import cupy as cp

from benchmarks.common.bundle import TENSOR_CORE, Bundle, plan_buffers
from benchmarks.common.timing import finish_or_exit
from gpu_common import FP8_DTYPES, to_storage, from_storage, poison, alibi_slope
from plans import ROW_SLACK, paged_layout, request_lengths, row_capacity, split_plan

LN2 = math.log(2.0)
results = []


def thr(dtype):
    return 1e-2 if dtype == "bf16" else 1e-3


# The relative rounding of one store to a state dtype.
UNIT_ROUNDOFF = {"f16": 2.0 ** -11, "bf16": 2.0 ** -8, "f32": 2.0 ** -24}


# fp8 queries (both products on fp8 tensor cores) round P to e4m3 / e5m2
# before P V (3 / 2 significant bits after the leading one): the output's
# error is that rounding's, averaged over the keys. Bound on max|o - ref| /
# max|ref| (the lse keeps its dtype's bound: S is exact products of the
# stored q and k in f32).
FP8_OPERAND_TOL = {"f8e4m3": 4e-2, "f8e5m2": 8e-2}


def record(name, dtype, o, o_ref, s, s_ref, extra_ok=True, note="", state_roundings=1,
           o_tol=None):
    o = np.asarray(o, np.float64)
    s = np.asarray(s, np.float64)
    nan = bool(np.isnan(o).any() or np.isnan(s).any())
    denom = max(np.abs(o_ref).max(initial=0.0), 1e-30)
    eo = float(np.abs(o - o_ref).max(initial=0.0) / denom) if o.size else 0.0
    inf_ref = np.isneginf(s_ref)
    inf_ok = bool((np.isneginf(s) == inf_ref).all())
    fin = ~inf_ref
    if fin.any():
        es = float(np.abs(s[fin] - s_ref[fin]).max() /
                   max(1.0, np.abs(s_ref[fin]).max()))
    else:
        es = 0.0
    thr_o = thr(dtype) + (state_roundings - 1) * UNIT_ROUNDOFF[dtype]
    if o_tol is not None:
        thr_o = o_tol
    ok = (not nan) and inf_ok and eo <= thr_o and es <= thr(dtype) and extra_ok
    results.append((name, dtype, eo, es, nan, inf_ok and extra_ok, ok, note))
    print(f"{'PASS' if ok else 'FAIL'} {name:58s} {dtype:5s} v/o {eo:.2e} lse {es:.2e}"
          f" nan={nan} exact/-inf={inf_ok and extra_ok} {note}", flush=True)


def dev(a):
    return cp.asarray(np.ascontiguousarray(a))


# ---------------------------------------------------------------------------
# Merges
# ---------------------------------------------------------------------------

def rand_states(rng, shape_v, dtype, p_empty=0.15, scale=20.0):
    s = rng.uniform(-scale, scale, shape_v[:-1])
    s[rng.random(s.shape) < p_empty] = -np.inf
    v = rng.uniform(-1, 1, shape_v)
    v[np.isneginf(s)] = 0.0
    vs, v64 = to_storage(v, dtype)
    return vs, v64, s.astype(np.float32), s.astype(np.float32).astype(np.float64)


def merge_ref(vs, ss):
    """vs [..., N, D], ss [..., N] in base 2 -> (v, s)."""
    m = np.max(ss, axis=-1, initial=-np.inf)
    mm = np.where(np.isneginf(m), 0.0, m)
    w = np.where(np.isneginf(ss), 0.0, np.exp2(ss - mm[..., None]))
    d = w.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        v = np.where(d[..., None] > 0, (w[..., None] * vs).sum(-2) / np.where(d > 0, d, 1)[..., None], 0.0)
        s = np.where(d > 0, mm + np.log2(np.where(d > 0, d, 1)), -np.inf)
    return v, s


def check_merge_state(b, rng, dtype, D, H, L, base_e=False):
    name = b.find("merge_state", head_dim=D, v_dtype=dtype, lse_base="e" if base_e else 2)
    va, va64, sa, sa64 = rand_states(rng, (L, H, D), dtype)
    vb, vb64, sb, sb64 = rand_states(rng, (L, H, D), dtype)
    conv = (1.0 / LN2) if base_e else 1.0
    v_ref, s_ref = merge_ref(np.stack([va64, vb64], -2), np.stack([sa64 * conv, sb64 * conv], -1))
    if base_e:
        s_ref = s_ref * LN2
    v = poison((L, H, D), dtype)
    s = poison((L, H), "f32")
    b.launch(name, dict(v_a=dev(va), s_a=dev(sa), v_b=dev(vb), s_b=dev(sb), v=v, s=s,
                        num_tasks=L * H))
    finish_or_exit("the next case's kernels", backend="cupy")
    vh, sh = cp.asnumpy(v), cp.asnumpy(s)
    # exactness: one side empty -> the other state bit for bit
    ea, eb = np.isneginf(sa), np.isneginf(sb)
    ex = True
    oa = ~ea & eb
    ob = ea & ~eb
    ex &= bool((vh[oa] == va[oa]).all() and (sh[oa] == sa[oa]).all())
    ex &= bool((vh[ob] == vb[ob]).all() and (sh[ob] == sb[ob]).all())
    both = ea & eb
    ex &= bool((from_storage(vh[both], dtype) == 0).all())
    record(f"merge_state D={D} H={H} L={L}" + (" base_e" if base_e else ""), dtype,
           from_storage(vh, dtype), v_ref, sh, s_ref, ex,
           f"empty-exact={ex}")


def check_merge_states(b, rng, dtype, D, H, L, N):
    name = b.find("merge_states", head_dim=D, v_dtype=dtype, lse_base=2)
    vs, v64, ss, s64 = rand_states(rng, (L, N, H, D), dtype, p_empty=0.3)
    if N > 0:
        ss[: max(1, L // 5)] = -np.inf  # rows with every state empty
        s64[: max(1, L // 5)] = -np.inf
        v64[: max(1, L // 5)] = 0.0
        vs[: max(1, L // 5)] = to_storage(np.zeros_like(v64[: max(1, L // 5)]), dtype)[0]
    v_ref, s_ref = merge_ref(np.moveaxis(v64, 1, 2), np.moveaxis(s64, 1, 2))
    v = poison((L, H, D), dtype)
    s = poison((L, H), "f32")
    b.launch(name, dict(v_in=dev(vs.reshape(-1)) if vs.size else cp.zeros(0, vs.dtype),
                        s_in=dev(ss.reshape(-1)) if ss.size else cp.zeros(0, cp.float32),
                        v=v, s=s, num_tasks=L * H, num_states=N, num_heads=H))
    finish_or_exit("the next case's kernels", backend="cupy")
    record(f"merge_states D={D} H={H} L={L} N={N}", dtype,
           from_storage(cp.asnumpy(v), dtype), v_ref, cp.asnumpy(s), s_ref)


def check_merge_in_place(b, rng, dtype, D, H, L, masked, base_e):
    stat = dict(head_dim=D, v_dtype=dtype, lse_base="e" if base_e else 2,
                mask="u8" if masked else "none")
    name = b.find("merge_state_in_place", **stat)
    v0, v064, s0, s064 = rand_states(rng, (L, H, D), dtype)
    vo, vo64, so, so64 = rand_states(rng, (L, H, D), dtype)
    conv = (1.0 / LN2) if base_e else 1.0
    v_ref, s_ref = merge_ref(np.stack([v064, vo64], -2), np.stack([s064 * conv, so64 * conv], -1))
    if base_e:
        s_ref = s_ref * LN2
    bufs = dict(v=dev(v0), s=dev(s0), v_other=dev(vo), s_other=dev(so),
                num_tasks=L * H, num_heads=H)
    if masked:
        stride = 3
        mask_full = np.zeros(L * stride, np.uint8)
        mrow = (rng.random(L) < 0.6).astype(np.uint8)
        mask_full[::stride] = mrow
        mask_full[1::stride] = 7  # garbage between strided elements
        bufs["mask"] = dev(mask_full)
        bufs["mask_stride"] = stride
        keep = mrow == 0
        v_ref[keep] = v064[keep]
        s_ref[keep] = s064[keep]
    b.launch(name, bufs)
    finish_or_exit("the next case's kernels", backend="cupy")
    vh, sh = cp.asnumpy(bufs["v"]), cp.asnumpy(bufs["s"])
    ex = True
    if masked:
        ex = bool((vh[keep] == v0[keep]).all() and (sh[keep] == s0[keep]).all())
    record(f"merge_state_in_place D={D} H={H} L={L}" + (" mask(stride 3)" if masked else "")
           + (" base_e" if base_e else ""), dtype, from_storage(vh, dtype), v_ref, sh, s_ref,
           ex, f"masked-rows-untouched={ex}" if masked else "")


# ---------------------------------------------------------------------------
# Decode
# ---------------------------------------------------------------------------

def rope(x, pos, D, scale, theta):
    """x [..., D] at positions pos (broadcast over the leading axes)."""
    half = D // 2
    inv = 1.0 / (scale * theta ** (2.0 * np.arange(half) / D))
    ang = np.asarray(pos, np.float64)[..., None] * inv
    c, s = np.cos(ang), np.sin(ang)
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], -1)


def attention_ref(q, Kp, Vp, qo_indptr, indptr, indices, last, ps, opts):
    """Float64 reference: rows of q [rows, Hqo, D], request i owns rows
    qo_indptr[i]..qo_indptr[i+1]; query j of a request sits at position
    kv_len - qo_len + j (decode: kv_len - 1). Order on a score: scale, ALiBi
    bias, soft cap, then the causal / window masks (docs/semantics.md)."""
    rows, Hqo, D = q.shape
    Hkv, Dv = Kp.shape[2], Vp.shape[-1]
    G = Hqo // Hkv
    o = np.zeros((rows, Hqo, Dv))
    lse = np.full((rows, Hqo), -np.inf)
    sl = np.array([alibi_slope(h, Hqo) for h in range(Hqo)])
    for bi in range(len(last)):
        pages = indices[indptr[bi]:indptr[bi + 1]]
        n = len(pages)
        L = (n - 1) * ps + last[bi] if n else 0
        q0, q1 = qo_indptr[bi], qo_indptr[bi + 1]
        if L == 0 or q1 == q0:
            continue
        K = Kp[pages].reshape(-1, Hkv, D)[:L]
        V = Vp[pages].reshape(-1, Hkv, Dv)[:L]
        t = np.arange(L)
        pos = L - (q1 - q0) + np.arange(q1 - q0)           # [R]
        qb = q[q0:q1]                                       # [R, Hqo, D]
        if opts.get("rope"):
            K = rope(K, t[:, None] * np.ones((1, Hkv)), D, 1.0, opts["rope_theta"])
            qb = rope(qb, pos[:, None] * np.ones((1, Hqo)), D, 1.0, opts["rope_theta"])
        Kx = np.repeat(K, G, axis=1)
        Vx = np.repeat(V, G, axis=1)
        # [R, H, L] through BLAS (matmul over the head axis).
        x = np.matmul(qb.transpose(1, 0, 2), Kx.transpose(1, 2, 0)).transpose(1, 0, 2)
        x = x * opts["sm_scale"]
        if opts.get("alibi"):
            x = x + sl[None, :, None] * (t[None, None, :] - pos[:, None, None])
        if opts.get("soft_cap", 0) > 0:
            cap = opts["soft_cap"]
            x = cap * np.tanh(x / cap)
        vis = np.ones((q1 - q0, L), bool)
        if opts.get("causal"):
            vis &= t[None, :] <= pos[:, None]
        if opts.get("window", -1) >= 0:
            vis &= t[None, :] >= pos[:, None] - opts["window"]
        x = np.where(vis[:, None, :], x, -np.inf)
        m = x.max(-1)
        has = np.isfinite(m)
        mm = np.where(has, m, 0.0)
        pr = np.exp(x - mm[..., None])
        d = pr.sum(-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            ob = np.matmul(pr.transpose(1, 0, 2), Vx.transpose(1, 0, 2)).transpose(1, 0, 2)
            ob = ob / np.where(d > 0, d, 1)[..., None]
            lb = np.where(d > 0, (mm + np.log(np.where(d > 0, d, 1))) / LN2, -np.inf)
        o[q0:q1] = np.where(has[..., None], ob, 0.0)
        lse[q0:q1] = lb
    return o, lse


def decode_ref(q, Kp, Vp, indptr, indices, last, ps, opts):
    B = q.shape[0]
    return attention_ref(q, Kp, Vp, np.arange(B + 1), indptr, indices, last, ps, opts)


def check_decode(b, rng, *, dtype, D, Hqo, Hkv, ps, layout, form, B, max_len,
                 opts, static, split_chunk=None, pad=0, q_scale=1.0, label="",
                 kv_dtype=None, k_scale=1.0, v_scale=1.0, kernel=None, sinks=False):
    """sinks: the kernel takes attention sinks (random per head; the
    reference merges (0, sink) into every row). kv_dtype (default: q's): an fp8 cache (f8e4m3 / f8e5m2) is checked
    against the reference over its exact values times k_scale / v_scale
    (docs/semantics.md), with q's tolerance. The kernel: `kernel` (a name),
    else the op's rows kernel, else its tensor-core one (selection puts fp8
    decode with G >= 2 on mma_sync)."""
    op = "decode_split" if split_chunk else "decode"
    kv_dtype = kv_dtype or dtype
    if kv_dtype != dtype:
        static = dict(static, kv_dtype=kv_dtype)
    if sinks and not split_chunk:  # a split level's attention kernel has none
        static = dict(static, sinks=True)
    name = kernel
    for family in ("rows", TENSOR_CORE):
        try:
            name = name or b.find(op, kernel_family=family, accumulate=False, head_dim=D,
                                  num_qo_heads=Hqo, num_kv_heads=Hkv, page_size=ps,
                                  kv_layout=layout, kv_form=form, q_dtype=dtype, **static)
        except KeyError:
            if family != "rows":
                raise
    if b.kernels[name]["static"]["kernel_family"] != "rows":
        return check_mma(b, rng, dtype=dtype, D=D, Hqo=Hqo, Hkv=Hkv, ps=ps, layout=layout,
                         form=form, B=B, max_qo=1, max_len=max_len, opts=opts, static=static,
                         split=split_chunk, pad=pad, decode=True, label=label,
                         q_scale=q_scale, kv_dtype=kv_dtype, k_scale=k_scale,
                         v_scale=v_scale, kernel=name, sinks=sinks)
    lens = rng.integers(1, max_len + 1, B)
    lens[rng.random(B) < 0.15] = 0
    lens[0] = 0  # always one empty request
    if B > 1:
        lens[1] = max_len
    pages, last, perm, indptr, Kp_s, Kp, Vp_s, Vp = make_paged(rng, lens, ps, Hkv, D,
                                                               kv_dtype)
    q_s, q64 = to_storage(rng.standard_normal((B, Hqo, D)) * q_scale, dtype)
    o_ref, lse_ref = decode_ref(q64, Kp * k_scale, Vp * v_scale, indptr, perm, last, ps,
                                opts)
    sink_vals = random_sinks(rng, Hqo) if sinks else None
    if sinks:
        o_ref, lse_ref = with_sinks(o_ref, lse_ref, sink_vals)
    if opts.get("base_e"):
        lse_ref = lse_ref * LN2
    if layout == "hnd":
        Kl, Vl = Kp_s.transpose(0, 2, 1, 3), Vp_s.transpose(0, 2, 1, 3)
    else:
        Kl, Vl = Kp_s, Vp_s
    bufs = dict(q=dev(q_s), kv_indptr=dev(indptr), kv_indices=dev(perm),
                kv_last_page_len=dev(last), batch_size=B, k_scale=k_scale, v_scale=v_scale)
    if sinks:
        bufs["sinks"] = dev(sink_vals)
    if form == "pool":
        bufs["kv_cache"] = dev(np.stack([Kl, Vl], 1))
    else:
        bufs["k_cache"], bufs["v_cache"] = dev(Kl), dev(Vl)
    o = poison((B, Hqo, D), dtype)
    lse = poison((B, Hqo), "f32")
    bufs["o"], bufs["lse"] = o, lse
    note = ""
    if split_chunk:
        # The runtime's plan for a chunk of split_chunk pages, with `pad`
        # padded work items appended (plans.split_plan).
        plan = split_plan(decode=True, qo_indptr=None, kv_indptr=indptr, last=last, ps=ps,
                          Hqo=Hqo, Hkv=Hkv, D=D, chunk_pages=split_chunk, pad=pad,
                          dtype=dtype)
        # kv_chunk_size is a one-element device array (graph-safe); the grid
        # is the padded work-item count.
        bufs.update(plan_buffers(plan))
        rows = plan["num_partial_rows"]
        bufs["tmp_v"] = poison((rows, Hqo, D), "f32")
        bufs["tmp_s"] = poison((rows, Hqo), "f32")
        b.launch(name, bufs)
        mname = b.find("merge_states_indptr", head_dim=D, num_qo_heads=Hqo, v_dtype=dtype,
                       lse_base="e" if opts.get("base_e") else 2, accumulate=False,
                       indptr="o_indptr", **(dict(sinks=True) if sinks else {}))
        b.launch(mname, bufs)
        note = (f"work items {plan['num_work_items']} of {plan['padded_batch_size']} (pad {pad}) "
                f"chunk {plan['kv_chunk_size_pages']} pages partial rows {rows}")
    else:
        b.launch(name, bufs)
    finish_or_exit("the next case's kernels", backend="cupy")
    oh = from_storage(cp.asnumpy(o), dtype)
    lh = cp.asnumpy(lse).astype(np.float64)
    empty = lens == 0
    ex = empty_rows_exact(oh, lh, lse_ref, empty, sink_vals)
    kv_note = "" if kv_dtype == dtype else f" kv={kv_dtype} ks={k_scale:g} vs={v_scale:g}"
    record(f"{op} {label} D={D} G={Hqo // Hkv} Hkv={Hkv} p={ps} {layout} {form} B={B}"
           + kv_note + (" sinks" if sinks else ""), dtype, oh, o_ref, lh, lse_ref, ex,
           (note + f" empty->{'(0,sink)' if sinks else '(0,-inf)'}={ex}").strip())


def make_paged(rng, lens, ps, Hkv, D, dtype, identity=False, Dv=None):
    """identity: request i's pages are pool pages indptr[i] onwards (the
    ragged form, whose kernels take no page table). Dv: v's head_dim (a
    (k, v) pair whose v is narrower; default D)."""
    pages, last, indptr = paged_layout(lens, ps)
    total = sum(pages)
    P = total + 3
    perm = np.arange(total, dtype=np.int32) if identity else \
        rng.permutation(P)[:total].astype(np.int32)
    Kp_s, Kp = to_storage(rng.standard_normal((P, ps, Hkv, D)), dtype)
    Vp_s, Vp = to_storage(rng.standard_normal((P, ps, Hkv, Dv or D)), dtype)
    return pages, last, perm, indptr, Kp_s, Kp, Vp_s, Vp


def kv_bufs(layout, form, Kp_s, Vp_s):
    if layout == "hnd":
        Kl, Vl = Kp_s.transpose(0, 2, 1, 3), Vp_s.transpose(0, 2, 1, 3)
    else:
        Kl, Vl = Kp_s, Vp_s
    if form == "pool":
        return dict(kv_cache=dev(np.stack([Kl, Vl], 1)))
    return dict(k_cache=dev(Kl), v_cache=dev(Vl))


def run_prefill(b, name, q_s, qo_indptr, paged, layout, form, Hqo, D, dtype):
    pages, last, perm, indptr, Kp_s, Kp, Vp_s, Vp = paged
    rows = q_s.shape[0]
    Hkv = Kp_s.shape[2]
    bufs = dict(q=dev(q_s), qo_indptr=dev(qo_indptr), kv_indptr=dev(indptr),
                kv_indices=dev(perm), kv_last_page_len=dev(last),
                num_rows=rows, batch_size=len(last),
                # A CUDA-graph plan's grid covers more rows than are real
                # (ROW_SLACK more, plans.row_capacity); the kernel must leave
                # the rows past qo_indptr[-1] alone (o is sized to the real
                # rows: memcheck sees any write).
                row_capacity=row_capacity(qo_indptr, indptr, last, ps=Kp_s.shape[1],
                                          Hqo=Hqo, Hkv=Hkv, D=D))
    bufs.update(kv_bufs(layout, form, Kp_s, Vp_s))
    bufs["o"] = poison((rows, Hqo, D), dtype)
    bufs["lse"] = poison((rows, Hqo), "f32")
    b.launch(name, bufs)
    finish_or_exit("the next case's kernels", backend="cupy")
    return bufs


def check_prefill(b, rng, *, dtype, kv_dtype, D, Hqo, Hkv, ps, layout, form, B, max_qo,
                  max_len, opts, static, label=""):
    """The rows family's row-wise prefill, which serves q and KV of different
    dtypes (both are converted to f32 on CUDA cores)."""
    name = b.find("prefill", kernel_family="rows", head_dim=D, num_qo_heads=Hqo,
                  num_kv_heads=Hkv, page_size=ps, kv_layout=layout, kv_form=form,
                  q_dtype=dtype, kv_dtype=kv_dtype, causal=bool(opts.get("causal")), **static)
    qo_lens, lens = request_lengths(rng, B, max_qo, max_len, decode=False)
    qo_indptr = np.concatenate([[0], np.cumsum(qo_lens)]).astype(np.int32)
    paged = make_paged(rng, lens, ps, Hkv, D, kv_dtype)
    pages, last, perm, indptr, Kp_s, Kp, Vp_s, Vp = paged
    rows = int(qo_indptr[-1])
    q_s, q64 = to_storage(rng.standard_normal((rows, Hqo, D)), dtype)
    o_ref, lse_ref = attention_ref(q64, Kp, Vp, qo_indptr, indptr, perm, last, ps, opts)
    bufs = run_prefill(b, name, q_s, qo_indptr, paged, layout, form, Hqo, D, dtype)
    oh = from_storage(cp.asnumpy(bufs["o"]), dtype)
    lh = cp.asnumpy(bufs["lse"]).astype(np.float64)
    record(f"prefill(rows) {label} q {dtype} kv {kv_dtype} D={D} G={Hqo // Hkv} Hkv={Hkv} "
           f"p={ps} {layout} {form} B={B} rows={rows}", "bf16", oh, o_ref, lh, lse_ref)


# ---------------------------------------------------------------------------
# Tensor-core (mma_sync) attention: prefill/append, split-KV, accumulate,
# large-group decode, fused cascades
# ---------------------------------------------------------------------------

def prior_state(rng, rows, Hqo, D, dtype):
    """A random attention state (base 2) that an accumulating level merges
    into; a fifth of the (row, head) states are empty."""
    s = rng.uniform(-4.0, 12.0, (rows, Hqo))
    s[rng.random(s.shape) < 0.2] = -np.inf
    v = rng.uniform(-1, 1, (rows, Hqo, D))
    v[np.isneginf(s)] = 0.0
    vs, v64 = to_storage(v, dtype)
    return vs, v64, s.astype(np.float32), s.astype(np.float32).astype(np.float64)


def merge2(o1, s1, o2, s2):
    return merge_ref(np.stack([o1, o2], -2), np.stack([s1, s2], -1))


def random_sinks(rng, Hqo):
    """One sink logit per query head (natural-log units, as FlashInfer's
    `sinks`), spread so that some dominate their rows and some vanish."""
    return rng.uniform(-6.0, 6.0, Hqo).astype(np.float32)


def with_sinks(o_ref, lse_ref, sinks):
    """The reference state with attention sinks: merged with the state
    (0, sink * log2(e)) of each head (base 2, before any base-e output)."""
    s2 = np.broadcast_to(sinks.astype(np.float64) / LN2, lse_ref.shape)
    return merge2(o_ref, lse_ref, np.zeros_like(o_ref), s2)


def empty_rows_exact(oh, lh, lse_ref, empty, sinks):
    """Rows with no visible key: (0, -inf) exactly, or with sinks (0, the
    sink's lse) with o exactly 0."""
    if sinks is None:
        return bool((oh[empty] == 0).all() and np.isneginf(lh[empty]).all())
    return bool((oh[empty] == 0).all() and
                np.allclose(lh[empty], lse_ref[empty], rtol=1e-6, atol=1e-6))


def launch_level(b, name, merge_name, bufs, *, T, qo_indptr, kv_indptr, last, ps, split,
                 pad, decode, Hqo, Hkv, D, dtype, Dv=None):
    """Launches an attention level (and its partial-state merge when split)
    with the runtime's plan (plans.py), as the runtime does; returns a note."""
    B = len(last)
    rows = B if decode else int(qo_indptr[-1])
    shape = dict(ps=ps, Hqo=Hqo, Hkv=Hkv, D=D)
    bufs.update(batch_size=B, num_rows=rows,
                row_capacity=rows if decode else row_capacity(qo_indptr, kv_indptr, last,
                                                              **shape))
    if not split:
        b.launch(name, bufs)
        return ""
    # The runtime's plan for a chunk of `split` pages (the prefill one in
    # CUDA-graph mode for rows + ROW_SLACK rows), `pad` padded work items
    # appended.
    plan = split_plan(decode=decode, qo_indptr=qo_indptr, kv_indptr=kv_indptr, last=last,
                      chunk_pages=split, qo_tile=T, pad=pad, dtype=dtype,
                      max_num_rows=-1 if decode else rows + ROW_SLACK, **shape)
    bufs.update(plan_buffers(plan))
    prow = max(1, plan["num_partial_rows"])
    bufs["tmp_v"] = poison((prow, Hqo, Dv or D), "f32")
    bufs["tmp_s"] = poison((prow, Hqo), "f32")
    b.launch(name, bufs)
    b.launch(merge_name, bufs)
    return (f"work items {plan['num_work_items']} of {plan['padded_batch_size']} (pad {pad}) "
            f"chunk {plan['kv_chunk_size_pages']} pages partial rows "
            f"{plan['num_partial_rows']}")


# --head-dim: the tensor-core cases of that head_dim only (None: all).
ONLY_HEAD_DIM = None


def check_mma(b, rng, *, dtype, D, Hqo, Hkv, ps, layout, form, B, max_qo, max_len, opts,
              static=None, split=None, pad=0, accumulate=False, decode=False, label="",
              q_scale=1.0, kv_dtype=None, k_scale=1.0, v_scale=1.0, kernel=None,
              sinks=False, o_dtype=None, Dv=None):
    """kv_dtype, k_scale, v_scale, sinks: as check_decode's.
    Dv: v's and the output's head_dim (a narrower v; default D).
    kernel: the kernel's name (default: the op's tensor-core kernel).
    o_dtype: the output's dtype (default q's; fp8 queries write f16 or
    bf16), which the partial states' merge and the tolerance follow. fp8
    queries (dtype f8e4m3 / f8e5m2, the cache's) round P to their type
    before P V: their outputs are held to FP8_OPERAND_TOL, and the note
    gives the output's RMS error relative to the reference's RMS."""
    if ONLY_HEAD_DIM not in (None, D):
        return
    op = ("decode" if decode else "prefill") + ("_split" if split else "")
    kv_dtype = kv_dtype or dtype
    o_dtype = o_dtype or dtype
    Dv = Dv or D
    stat = dict(kernel_family=TENSOR_CORE, head_dim=D, num_qo_heads=Hqo, num_kv_heads=Hkv,
                page_size=ps, kv_layout=layout, kv_form=form, q_dtype=dtype,
                accumulate=accumulate)
    stat.update(static or {})
    if kv_dtype != dtype:
        stat["kv_dtype"] = kv_dtype
    if o_dtype != dtype:
        stat["o_dtype"] = o_dtype
    if not decode:
        stat["causal"] = bool(opts.get("causal"))
    if sinks and not split:  # a split level's attention kernel has none
        stat["sinks"] = True
    name = kernel or b.find(op, **stat)
    base_e = bool(opts.get("base_e"))
    merge_name = None
    if split:
        merge_stat = dict(sinks=True) if sinks else {}
        merge_name = b.find("merge_states_indptr", head_dim=Dv, num_qo_heads=Hqo, v_dtype=o_dtype,
                            lse_base="e" if base_e else 2, accumulate=accumulate,
                            indptr="o_indptr" if decode else "merge_indptr", **merge_stat)
    G = Hqo // Hkv
    T = b.kernels[name]["static"].get("qo_tile_size", 0)
    qo_lens, lens = request_lengths(rng, B, max_qo, max_len, decode)
    qo_indptr = np.concatenate([[0], np.cumsum(qo_lens)]).astype(np.int32)
    paged = make_paged(rng, lens, ps, Hkv, D, kv_dtype, identity=form == "ragged", Dv=Dv)
    pages, last, perm, indptr, Kp_s, Kp, Vp_s, Vp = paged
    rows = int(qo_indptr[-1])
    q_s, q64 = to_storage(q_scale * rng.standard_normal((rows, Hqo, D)), dtype)
    o_ref, lse_ref = attention_ref(q64, Kp * k_scale, Vp * v_scale, qo_indptr, indptr, perm,
                                   last, ps, opts)
    bufs = dict(q=dev(q_s), kv_indptr=dev(indptr), kv_indices=dev(perm),
                kv_last_page_len=dev(last), k_scale=k_scale, v_scale=v_scale)
    sink_vals = random_sinks(rng, Hqo) if sinks else None
    if sinks:
        empty_ref = np.isneginf(lse_ref)  # rows that see no key
        o_ref, lse_ref = with_sinks(o_ref, lse_ref, sink_vals)
        bufs["sinks"] = dev(sink_vals)
    if not decode:
        bufs["qo_indptr"] = dev(qo_indptr)
    bufs.update(kv_bufs(layout, form, Kp_s, Vp_s))
    if accumulate:
        v0, v064, s0, s064 = prior_state(rng, rows, Hqo, Dv, o_dtype)
        o_ref, lse_ref = merge2(v064, s064, o_ref, lse_ref)
        bufs["o"] = dev(v0)
        bufs["lse"] = dev((s0 * LN2) if base_e else s0)
    else:
        bufs["o"] = poison((rows, Hqo, Dv), o_dtype)
        bufs["lse"] = poison((rows, Hqo), "f32")
    if base_e:
        lse_ref = lse_ref * LN2
    note = launch_level(b, name, merge_name, bufs, T=T, qo_indptr=qo_indptr, kv_indptr=indptr,
                        last=last, ps=ps, split=split, pad=pad, decode=decode, Hqo=Hqo,
                        Hkv=Hkv, D=D, dtype=o_dtype, Dv=Dv)
    finish_or_exit("the next case's kernels", backend="cupy")
    oh = from_storage(cp.asnumpy(bufs["o"]), o_dtype)
    lh = cp.asnumpy(bufs["lse"]).astype(np.float64)
    ex = True
    if not accumulate:
        # Rows that see no key are exactly the empty state (with sinks: the
        # sinks' state).
        empty = empty_ref if sinks else np.isneginf(lse_ref)
        ex = empty_rows_exact(oh, lh, lse_ref, empty, sink_vals)
    kind = ("decode" if decode else "prefill") + (" split" if split else "") + \
        (" acc" if accumulate else "")
    fp8_operands = dtype in FP8_DTYPES
    if kv_dtype != dtype or fp8_operands:
        label = f"{label} kv={kv_dtype} ks={k_scale:g} vs={v_scale:g}".strip()
    if fp8_operands:
        label = f"{label} q={dtype} o={o_dtype}".strip()
        rms = float(np.sqrt(np.mean((oh - o_ref) ** 2)) /
                    max(np.sqrt(np.mean(o_ref ** 2)), 1e-30))
        note = f"{note} rms {rms:.2e}".strip()
    family = b.kernels[name]["static"]["kernel_family"]
    if sinks:
        label = f"{label} sinks".strip()
    dims = f"D={D}" if Dv == D else f"D={D}/{Dv}"
    record(f"{family} {kind} {label} {dims} G={G} Hkv={Hkv} p={ps} {layout} {form} B={B} rows={rows}",
           o_dtype, oh, o_ref, lh, lse_ref, ex,
           (note + (f" empty->{'(0,sink)' if sinks else '(0,-inf)'}={ex}"
                    if not accumulate else "")).strip(),
           o_tol=FP8_OPERAND_TOL[dtype] if fp8_operands else None)


def cascade_ref(q64, keys, G):
    """Float64 attention of each decode query q64[r] over the concatenation
    of its levels' keys: keys[r] = [(K, V) of a level, [L, Hkv, D]]."""
    B, Hqo, D = q64.shape
    o_ref = np.zeros((B, Hqo, D))
    lse_ref = np.full((B, Hqo), -np.inf)
    for r in range(B):
        K = np.concatenate([k for k, _ in keys[r]])
        V = np.concatenate([v for _, v in keys[r]])
        K = np.repeat(K, G, axis=1)
        V = np.repeat(V, G, axis=1)
        x = np.matmul(q64[r][:, None, :], K.transpose(1, 2, 0))[:, 0, :] / math.sqrt(D)
        m = x.max(-1)
        p = np.exp(x - m[:, None])
        d = p.sum(-1)
        o_ref[r] = np.matmul(p[:, None, :], V.transpose(1, 0, 2))[:, 0, :] / d[:, None]
        lse_ref[r] = (m + np.log(d)) / LN2
    return o_ref, lse_ref


def check_cascade_fused(b, rng, *, levels, B, prefix, D=128, Hqo=32, Hkv=8, ps=16,
                        split_prefix=None, split_last=None, max_suffix=256, dtype="f16"):
    """A 2- or 3-level cascade as the compiler lowers it with fused merges:
    level 0, the prefix shared by all B requests (qo_indptr [0, B]), on the
    tensor-core prefill (split-KV when split_prefix is a chunk in pages);
    for 3 levels, a middle level of 2 groups with their own shared prefixes
    (accumulating prefill); the last level, each request's suffix, an
    accumulating decode. Reference: plain attention of each query over the
    concatenation of its KV."""
    if ONLY_HEAD_DIM not in (None, D):
        return
    G = Hqo // Hkv
    none = dict(pos_encoding="none", logits_soft_cap=0.0, window_left=-1)
    lv = []  # (qo_indptr, lens per group)
    lv.append((np.array([0, B]), [prefix]))
    if levels == 3:
        h = B // 2
        lv.append((np.array([0, h, B]), [int(x) for x in rng.integers(1, 200, 2)]))
    suf = rng.integers(1, max_suffix + 1, B)
    suf[min(3, B - 1)] = 0  # a request with no suffix
    lv.append((np.arange(B + 1), [int(x) for x in suf]))
    q_s, q64 = to_storage(rng.standard_normal((B, Hqo, D)), dtype)
    o = poison((B, Hqo, D), dtype)
    lse = poison((B, Hqo), "f32")
    keys = [[] for _ in range(B)]
    launches = 0
    # One page pool for all levels.
    all_lens = [L for _, ls in lv for L in ls]
    pages, last, perm, indptr, Kp_s, Kp, Vp_s, Vp = make_paged(rng, all_lens, ps, Hkv, D, dtype)
    pool = kv_bufs("nhd", "pool", Kp_s, Vp_s)
    g0 = 0
    for li, (qo_indptr, ls) in enumerate(lv):
        ng = len(ls)
        ip = (indptr[g0:g0 + ng + 1]).astype(np.int32)
        for g in range(ng):
            tok = []
            for pg in perm[ip[g]:ip[g + 1]]:
                tok.append(pg)
            L = ls[g]
            Kt = Kp[perm[ip[g]:ip[g + 1]]].reshape(-1, Hkv, D)[:L]
            Vt = Vp[perm[ip[g]:ip[g + 1]]].reshape(-1, Hkv, D)[:L]
            for r in range(qo_indptr[g], qo_indptr[g + 1]):
                keys[r].append((Kt, Vt))
        last_level = li == len(lv) - 1
        decode = last_level
        split = split_last if last_level else (split_prefix if li == 0 else None)
        acc = li > 0
        if decode:
            stat = dict(kernel_family="rows", head_dim=D, num_qo_heads=Hqo, num_kv_heads=Hkv,
                        page_size=ps, kv_layout="nhd", kv_form="pool", q_dtype=dtype,
                        accumulate=True, **none)
            name = b.find("decode_split" if split else "decode", **stat)
        else:
            stat = dict(kernel_family=TENSOR_CORE, head_dim=D, num_qo_heads=Hqo,
                        num_kv_heads=Hkv, page_size=ps, kv_layout="nhd", kv_form="pool",
                        q_dtype=dtype, accumulate=acc, causal=False, **none)
            name = b.find("prefill_split" if split else "prefill", **stat)
        merge_name = None
        if split:
            merge_name = b.find("merge_states_indptr", head_dim=D, num_qo_heads=Hqo,
                                v_dtype=dtype, lse_base=2, accumulate=acc,
                                indptr="o_indptr" if decode else "merge_indptr")
        bufs = dict(q=dev(q_s), kv_indptr=dev(ip - ip[0]), kv_indices=dev(perm[ip[0]:]),
                    kv_last_page_len=dev(last[g0:g0 + ng]), o=o, lse=lse, **pool)
        if not decode:
            bufs["qo_indptr"] = dev(qo_indptr.astype(np.int32))
        T = b.kernels[name]["static"].get("qo_tile_size", 0)
        launch_level(b, name, merge_name, bufs, T=T, qo_indptr=qo_indptr.astype(np.int32),
                     kv_indptr=ip - ip[0], last=last[g0:g0 + ng], ps=ps, split=split, pad=0,
                     decode=decode, Hqo=Hqo, Hkv=Hkv, D=D, dtype=dtype)
        launches += 2 if split else 1
        g0 += ng
    finish_or_exit("the next case's kernels", backend="cupy")
    o_ref, lse_ref = cascade_ref(q64, keys, G)
    record(f"cascade {levels} levels fused prefix={prefix} B={B} Hqo/Hkv={Hqo}/{Hkv} D={D} "
           f"split={split_prefix}/{split_last}", dtype,
           from_storage(cp.asnumpy(o), dtype), o_ref, cp.asnumpy(lse), lse_ref, True,
           f"launches={launches}", state_roundings=levels)


# ---------------------------------------------------------------------------
# RoPE in a decode cascade (issue 40): float64 and the rounding rule
# ---------------------------------------------------------------------------

def rope_rule(x64, pos, D, theta, dtype):
    """docs/semantics.md, "Where RoPE rounds", as the kernels compute it:
    angle f32(pos) * f32(f_c), cos / sin and the rotation in f32, then one
    rounding (to nearest even) to the storage dtype."""
    half = D // 2
    inv = np.float32(1.0 / theta ** (2.0 * np.arange(half) / D))
    ang = (np.float32(np.asarray(pos))[..., None] * inv).astype(np.float64)
    c, s = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    x = np.asarray(x64, np.float32)
    x1, x2 = x[..., :half], x[..., half:]
    y = np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], -1)
    return to_storage(y.astype(np.float64), dtype)[1]


def rope_level_state(q64, K, V, q_pos, rot, sm_scale):
    """The state (o, base-2 lse) of rows q64 [R, Hqo, D], row r at position
    q_pos[r], over K, V [L, Hkv, D], key t at position t; q and K rotated by
    rot(x, pos). An empty level gives the empty state."""
    R, Hqo, D = q64.shape
    L, Hkv = K.shape[0], K.shape[1]
    if L == 0:
        return np.zeros((R, Hqo, D)), np.full((R, Hqo), -np.inf)
    G = Hqo // Hkv
    qr = rot(q64, np.asarray(q_pos)[:, None] * np.ones((1, Hqo)))
    kr = np.repeat(rot(K, np.arange(L)[:, None] * np.ones((1, Hkv))), G, axis=1)
    x = np.matmul(qr.transpose(1, 0, 2), kr.transpose(1, 2, 0)) * sm_scale  # [H, R, L]
    m = x.max(-1)
    p = np.exp(x - m[..., None])
    d = p.sum(-1)
    o = np.matmul(p, np.repeat(V, G, axis=1).transpose(1, 0, 2)) / d[..., None]
    return o.transpose(1, 0, 2), ((m + np.log(d)) / LN2).T


def rope_cascade_ref(q64, shared, own, rot, sm_scale):
    """Each level on its own, as docs/semantics.md places queries (kv_len -
    qo_len + j of the level) and keys (their position in the level): level
    0, the B rows over the shared prefix of S tokens, puts row j at S - B + j
    (negative when B > S); level 1, request j's own tokens, one query at
    L_j - 1. The two states merged."""
    B = q64.shape[0]
    S = shared[0].shape[0]
    o0, s0 = rope_level_state(q64, shared[0], shared[1], S - B + np.arange(B), rot,
                              sm_scale)
    o1, s1 = np.zeros_like(o0), np.full_like(s0, -np.inf)
    for j, (K, V) in enumerate(own):
        if K.shape[0]:
            o, s = rope_level_state(q64[j:j + 1], K, V, [K.shape[0] - 1], rot, sm_scale)
            o1[j], s1[j] = o[0], s[0]
    return merge2(o0, s0, o1, s1)


# The kernels against the rounding rule's model, base-2 LSE over every
# (row, head): measured on Hopper (mma_sync, wgmma and rows; 30 draws,
# docs/semantics.md) at means <= 1.1e-5 and maxima <= 1.4e-3 (bf16 values at
# a rounding boundary that the kernels' sin / cos.approx send the other
# way); formulations a kernel could wrongly compute (no rounding, q' or k'
# alone rounded, shifted positions) are at means >= 6.6e-4.
ROPE_RULE_MEAN, ROPE_RULE_MAX = 5e-5, 3e-3


def check_rope_cascade(b, rng, *, B=100, prefix=8, max_own=8, dtype="bf16", D=64, Hqo=12,
                       Hkv=2, ps=8, layout="hnd", form="pair", theta=1e4):
    """Issue 40's two-level decode cascade with RoPE: B requests share a
    prefix of `prefix` tokens (level 0 on the tensor-core prefill, its
    queries at prefix - B + j), each has up to `max_own` tokens of its own
    (level 1, the accumulating rows decode; some have none). Against the
    float64 per-level reference with the normwise bounds, and against the
    rounding rule's model with ROPE_RULE_MEAN / ROPE_RULE_MAX on the LSE."""
    if ONLY_HEAD_DIM not in (None, D):
        return
    static = dict(head_dim=D, num_qo_heads=Hqo, num_kv_heads=Hkv, page_size=ps,
                  kv_layout=layout, kv_form=form, q_dtype=dtype, pos_encoding="rope_llama",
                  rope_theta=theta, lse_base=2, logits_soft_cap=0.0, window_left=-1)
    name0 = b.find("prefill", kernel_family=TENSOR_CORE, accumulate=False, causal=False,
                   **static)
    name1 = b.find("decode", kernel_family="rows", accumulate=True, **static)
    own_lens = rng.integers(0, max_own + 1, B)
    pages, last, perm, indptr, Kp_s, Kp, Vp_s, Vp = make_paged(
        rng, [prefix] + [int(n) for n in own_lens], ps, Hkv, D, dtype)
    q_s, q64 = to_storage(rng.standard_normal((B, Hqo, D)), dtype)
    o = poison((B, Hqo, D), dtype)
    lse = poison((B, Hqo), "f32")
    shape = dict(Hqo=Hqo, Hkv=Hkv, D=D, dtype=dtype)
    kv = kv_bufs(layout, form, Kp_s, Vp_s)
    qo0, ip0 = np.array([0, B], np.int32), indptr[:2].astype(np.int32)
    launch_level(b, name0, None, dict(q=dev(q_s), qo_indptr=dev(qo0), kv_indptr=dev(ip0),
                                      kv_indices=dev(perm), kv_last_page_len=dev(last[:1]),
                                      o=o, lse=lse, **kv),
                 T=b.kernels[name0]["static"].get("qo_tile_size", 0), qo_indptr=qo0,
                 kv_indptr=ip0, last=last[:1], ps=ps, split=None, pad=0, decode=False, **shape)
    ip1 = (indptr[1:] - indptr[1]).astype(np.int32)
    launch_level(b, name1, None, dict(q=dev(q_s), kv_indptr=dev(ip1),
                                      kv_indices=dev(perm[indptr[1]:]),
                                      kv_last_page_len=dev(last[1:]), o=o, lse=lse, **kv),
                 T=0, qo_indptr=None, kv_indptr=ip1, last=last[1:], ps=ps, split=None, pad=0,
                 decode=True, **shape)
    finish_or_exit("the next case's kernels", backend="cupy")

    def tokens(r, n):
        idx = perm[indptr[r]:indptr[r + 1]]
        return Kp[idx].reshape(-1, Hkv, D)[:n], Vp[idx].reshape(-1, Hkv, D)[:n]
    shared = tokens(0, prefix)
    own = [tokens(1 + j, int(n)) for j, n in enumerate(own_lens)]
    sm_scale = 1.0 / math.sqrt(D)
    exact = lambda x, pos: rope(x, pos, D, 1.0, theta)
    rule = lambda x, pos: rope_rule(x, pos, D, theta, dtype)
    o_ref, lse_ref = rope_cascade_ref(q64, shared, own, exact, sm_scale)
    _, lse_rule = rope_cascade_ref(q64, shared, own, rule, sm_scale)
    oh = from_storage(cp.asnumpy(o), dtype)
    lh = cp.asnumpy(lse).astype(np.float64)
    d = np.abs(lh - lse_rule)
    rule_ok = bool(d.mean() <= ROPE_RULE_MEAN and d.max() <= ROPE_RULE_MAX)
    family = b.kernels[name0]["static"]["kernel_family"]
    record(f"cascade rope 2 levels {family} + rows acc prefix={prefix} B={B} "
           f"Hqo/Hkv={Hqo}/{Hkv} D={D} p={ps} {layout} {form}", dtype, oh, o_ref, lh, lse_ref,
           rule_ok, f"vs rounding rule: mean|dlse| {d.mean():.2e} max {d.max():.2e} "
           f"(<= {ROPE_RULE_MEAN:g}, {ROPE_RULE_MAX:g}): {rule_ok}", state_roundings=2)


def mma_cases(b, rng, small=False):
    none = dict(pos_encoding="none", logits_soft_cap=0.0, window_left=-1)
    sc = lambda D: 1.0 / math.sqrt(D)
    if small:
        check_mma(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, ps=16, layout="nhd", form="pool",
                  B=3, max_qo=40, max_len=90, opts=dict(sm_scale=sc(128), causal=True),
                  static=none)
        check_mma(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, ps=16, layout="nhd", form="pool",
                  B=3, max_qo=20, max_len=150, opts=dict(sm_scale=sc(128), causal=True),
                  static=none, split=3, pad=2)
        check_mma(b, rng, dtype="f16", D=128, Hqo=32, Hkv=2, ps=16, layout="nhd", form="pool",
                  B=3, max_qo=1, max_len=90, opts=dict(sm_scale=sc(128)), static=none,
                  decode=True)
        check_cascade_fused(b, rng, levels=2, B=5, prefix=200, split_prefix=4)
        ragged_cases(b, rng, sc, none, small=True)
        return
    ragged_cases(b, rng, sc, none)
    for dtype in ("f16", "bf16"):
        for B in (12, 17):
            check_mma(b, rng, dtype=dtype, D=128, Hqo=32, Hkv=8, ps=16, layout="nhd",
                      form="pool", B=B, max_qo=300, max_len=700,
                      opts=dict(sm_scale=sc(128), causal=True), static=none, label="causal")
    check_mma(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, ps=16, layout="nhd", form="pool",
              B=12, max_qo=200, max_len=500, opts=dict(sm_scale=sc(128)), static=none)
    # Scores spread over ~+-40 (log2 units): row maxima keep growing by more
    # than the lazy-rescale threshold (2^8) from tile to tile, so both the
    # rescale and the keep-the-max paths run, with exponents up to 2^8.
    for dtype in ("f16", "bf16"):
        check_mma(b, rng, dtype=dtype, D=128, Hqo=32, Hkv=8, ps=16, layout="nhd",
                  form="pool", B=9, max_qo=200, max_len=900,
                  opts=dict(sm_scale=sc(128), causal=True), static=none, q_scale=8.0,
                  label="causal large logits")
    check_mma(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, ps=16, layout="nhd", form="pool",
              B=12, max_qo=60, max_len=700, opts=dict(sm_scale=sc(128)), static=none,
              split=8, pad=3, q_scale=8.0, label="large logits")
    check_mma(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, ps=16, layout="nhd", form="pool",
              B=4, max_qo=1500, max_len=2000, opts=dict(sm_scale=sc(128), causal=True),
              static=none, label="long causal")
    check_mma(b, rng, dtype="bf16", D=64, Hqo=32, Hkv=4, ps=1, layout="hnd", form="pair",
              B=12, max_qo=100, max_len=300,
              opts=dict(sm_scale=1 / 8.0, causal=True, soft_cap=30.0, window=40),
              static=dict(logits_soft_cap=30.0, window_left=40), label="causal softcap30 window40")
    check_mma(b, rng, dtype="f16", D=96, Hqo=8, Hkv=8, ps=16, layout="nhd", form="pool",
              B=9, max_qo=150, max_len=300, opts=dict(sm_scale=sc(96)), static=none)
    check_mma(b, rng, dtype="f16", D=72, Hqo=8, Hkv=4, ps=16, layout="hnd", form="pool",
              B=9, max_qo=150, max_len=300, opts=dict(sm_scale=sc(72), causal=True),
              static=none, label="causal")
    check_mma(b, rng, dtype="bf16", D=192, Hqo=8, Hkv=4, ps=16, layout="hnd", form="pool",
              B=7, max_qo=150, max_len=400, opts=dict(sm_scale=sc(192), causal=True),
              static=none, label="causal")
    check_mma(b, rng, dtype="f16", D=256, Hqo=16, Hkv=4, ps=16, layout="nhd", form="pair",
              B=7, max_qo=150, max_len=400, opts=dict(sm_scale=sc(256), causal=True),
              static=none, label="causal")
    check_mma(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, ps=16, layout="nhd", form="pool",
              B=7, max_qo=100, max_len=300,
              opts=dict(sm_scale=sc(128), causal=True, rope=True, rope_theta=1e4, base_e=True),
              static=dict(pos_encoding="rope_llama", lse_base="e"), label="causal rope base_e")
    check_mma(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, ps=16, layout="nhd", form="pool",
              B=7, max_qo=100, max_len=300, opts=dict(sm_scale=0.1, alibi=True),
              static=dict(pos_encoding="alibi"), label="alibi")
    check_mma(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, ps=16, layout="nhd", form="pool",
              B=12, max_qo=150, max_len=900, opts=dict(sm_scale=sc(128), causal=True),
              static=none, split=5, pad=3, label="causal")
    check_mma(b, rng, dtype="bf16", D=64, Hqo=32, Hkv=4, ps=1, layout="hnd", form="pair",
              B=17, max_qo=60, max_len=500, opts=dict(sm_scale=sc(64)), static=none,
              split=97, pad=0)
    check_mma(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, ps=16, layout="nhd", form="pool",
              B=12, max_qo=150, max_len=500, opts=dict(sm_scale=sc(128), causal=True),
              static=none, accumulate=True, label="causal")
    check_mma(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, ps=16, layout="nhd", form="pool",
              B=12, max_qo=150, max_len=900, opts=dict(sm_scale=sc(128)), static=none,
              split=6, pad=2, accumulate=True)
    for dtype, Hqo, Hkv, D, layout, form in [("f16", 32, 2, 128, "nhd", "pool"),
                                              ("bf16", 64, 1, 128, "hnd", "pool"),
                                              ("f16", 17, 1, 64, "nhd", "pair"),
                                              ("bf16", 16, 4, 96, "nhd", "pool")]:
        check_mma(b, rng, dtype=dtype, D=D, Hqo=Hqo, Hkv=Hkv, ps=16, layout=layout, form=form,
                  B=13, max_qo=1, max_len=600, opts=dict(sm_scale=sc(D)), static=none,
                  decode=True)
    check_mma(b, rng, dtype="f16", D=128, Hqo=32, Hkv=2, ps=16, layout="nhd", form="pool",
              B=12, max_qo=1, max_len=2000, opts=dict(sm_scale=sc(128)), static=none,
              decode=True, split=16, pad=4)
    # Fused cascades: 2 and 3 levels, shared prefixes of 128 .. 32768 tokens,
    # GQA and not, head_dim 128 and 256, split and unsplit levels.
    for prefix, split_prefix in ((128, None), (1000, 8), (32768, 256)):
        check_cascade_fused(b, rng, levels=2, B=12, prefix=prefix, split_prefix=split_prefix)
    check_cascade_fused(b, rng, levels=2, B=17, prefix=4096, Hqo=32, Hkv=32,
                        split_prefix=64, split_last=8)
    check_cascade_fused(b, rng, levels=3, B=12, prefix=2000, split_prefix=16)
    check_cascade_fused(b, rng, levels=3, B=12, prefix=700, D=256, Hqo=16, Hkv=4,
                        split_prefix=8)
    check_cascade_fused(b, rng, levels=2, B=12, prefix=300, split_prefix=None, split_last=4)
    check_prefill(b, rng, dtype="f16", kv_dtype="bf16", D=128, Hqo=32, Hkv=8, ps=16,
                  layout="nhd", form="pool", B=7, max_qo=40, max_len=300,
                  opts=dict(sm_scale=sc(128), causal=True), static=none, label="causal")
    check_rope_cascade(b, rng)


def ragged_cases(b, rng, sc, none, small=False):
    """Ragged K/V (no page table: request i's one-token pages are
    kv_indptr[i] onwards): causal prefill, split prefill, tensor-core decode."""
    n = 3 if small else 1
    check_mma(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, ps=1, layout="nhd", form="ragged",
              B=9 // n, max_qo=300 // n, max_len=700 // n,
              opts=dict(sm_scale=sc(128), causal=True), static=none, label="causal")
    check_mma(b, rng, dtype="bf16", D=128, Hqo=32, Hkv=8, ps=1, layout="nhd", form="ragged",
              B=12 // n, max_qo=100 // n, max_len=900 // n, opts=dict(sm_scale=sc(128)),
              static=none, split=97, pad=2)
    check_mma(b, rng, dtype="f16", D=128, Hqo=32, Hkv=2, ps=1, layout="nhd", form="ragged",
              B=13 // n, max_qo=1, max_len=600 // n, opts=dict(sm_scale=sc(128)), static=none,
              decode=True)


def fp8_mma_cases(b, rng, sc):
    """The tensor-core kernels of fp8_kernels.mlir: the fp8 tiles converted
    to q's dtype in shared memory before the mma (mma_sync; on an sm_90a
    bundle the prefill cases run on wgmma, whose producer converts them)."""
    none = dict(pos_encoding="none", logits_soft_cap=0.0, window_left=-1)
    s = lambda D: 1.0 / math.sqrt(D)
    common = dict(ps=16, layout="nhd", form="pool", static=none)
    for dtype in ("f16",):
        check_mma(b, rng, dtype=dtype, D=128, Hqo=32, Hkv=8, B=12, max_qo=300, max_len=700,
                  opts=dict(sm_scale=s(128), causal=True), label="causal", **common, **sc)
    check_mma(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, B=12, max_qo=200, max_len=500,
              opts=dict(sm_scale=s(128)), **common, **sc)
    check_mma(b, rng, dtype="bf16", D=64, Hqo=32, Hkv=4, ps=1, layout="hnd", form="pair",
              B=12, max_qo=100, max_len=300,
              opts=dict(sm_scale=1 / 8.0, causal=True, soft_cap=30.0, window=40),
              static=dict(logits_soft_cap=30.0, window_left=40),
              label="causal softcap30 window40", **sc)
    check_mma(b, rng, dtype="f16", D=256, Hqo=16, Hkv=4, ps=16, layout="nhd", form="pair",
              B=7, max_qo=150, max_len=400, opts=dict(sm_scale=s(256), causal=True),
              static=none, label="causal", **sc)
    check_mma(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, ps=16, layout="nhd", form="pool",
              B=7, max_qo=100, max_len=300,
              opts=dict(sm_scale=s(128), causal=True, rope=True, rope_theta=1e4, base_e=True),
              static=dict(pos_encoding="rope_llama", lse_base="e"),
              label="causal rope base_e", **sc)
    check_mma(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, ps=16, layout="nhd", form="pool",
              B=7, max_qo=100, max_len=300, opts=dict(sm_scale=0.1, alibi=True),
              static=dict(pos_encoding="alibi"), label="alibi", **sc)
    check_mma(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, B=12, max_qo=150, max_len=900,
              opts=dict(sm_scale=s(128), causal=True), split=5, pad=3, label="causal",
              **common, **sc)
    check_mma(b, rng, dtype="bf16", D=64, Hqo=32, Hkv=4, ps=1, layout="hnd", form="pair",
              B=17, max_qo=60, max_len=500, opts=dict(sm_scale=s(64)), static=none,
              split=97, pad=0, **sc)
    check_mma(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, B=12, max_qo=150, max_len=500,
              opts=dict(sm_scale=s(128), causal=True), accumulate=True, label="causal",
              **common, **sc)
    check_mma(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, B=12, max_qo=150, max_len=900,
              opts=dict(sm_scale=s(128)), split=6, pad=2, accumulate=True, **common, **sc)
    check_mma(b, rng, dtype="f16", D=128, Hqo=32, Hkv=2, B=13, max_qo=1, max_len=600,
              opts=dict(sm_scale=s(128)), decode=True, **common, **sc)
    check_mma(b, rng, dtype="bf16", D=128, Hqo=64, Hkv=1, ps=16, layout="hnd", form="pool",
              B=13, max_qo=1, max_len=600, opts=dict(sm_scale=s(128)), static=none,
              decode=True, **sc)
    check_mma(b, rng, dtype="f16", D=128, Hqo=32, Hkv=2, B=12, max_qo=1, max_len=2000,
              opts=dict(sm_scale=s(128)), decode=True, split=16, pad=4, **common, **sc)


def bench_decode_kernels(b, op, kv):
    """The `op` kernels (decode / decode_split) of the decode benchmark's
    shape (32/8 heads, D=128, page 16, NHD pool, f16 q, no options) over a
    `kv` cache, in bundle order."""
    want = dict(num_qo_heads=32, num_kv_heads=8, head_dim=128, page_size=16, kv_layout="nhd",
                kv_form="pool", q_dtype="f16", kv_dtype=kv, accumulate=False,
                pos_encoding="none", window_left=-1, logits_soft_cap=0.0)
    return [k["name"] for k in b.manifest["kernels"]
            if k["op"] == op and all(k["static"].get(x) == v for x, v in want.items())]


def kernel_config_label(b, name):
    """The kernel configuration spelled in a kernel's name: its family and
    the tail from the threads (`_w<warps>` or `_t<threads>`) to the
    stages."""
    tail = re.search(r"_([wt]\d+x\d+_.*)$", name)
    fam = b.kernels[name]["static"]["kernel_family"]
    return f"{fam} {tail.group(1)}" if tail else fam


def fp8_cases(b, rng, small=False):
    """The rows decode kernels of fp8_kernels.mlir (kernels.mlir's with an
    e4m3 / e5m2 cache): every layout, form, option and split-KV, with
    k_scale / v_scale, against the float64 reference over the dequantized
    cache."""
    dflt = lambda D: dict(sm_scale=1.0 / math.sqrt(D))
    none = dict(pos_encoding="none", logits_soft_cap=0.0, window_left=-1)
    for kv in ("f8e4m3", "f8e5m2"):
        sc = dict(kv_dtype=kv, k_scale=0.37, v_scale=2.5)
        if small:
            check_decode(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, ps=16, layout="nhd",
                         form="pool", B=3, max_len=40, opts=dflt(128), static=none, **sc)
            check_decode(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, ps=16, layout="nhd",
                         form="pool", B=3, max_len=70, opts=dflt(128), static={},
                         split_chunk=2, pad=2, label="split", **sc)
            check_mma(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, ps=16, layout="nhd",
                      form="pool", B=3, max_qo=20, max_len=150,
                      opts=dict(dflt(128), causal=True), static=none, split=3, pad=2, **sc)
            check_mma(b, rng, dtype="f16", D=128, Hqo=32, Hkv=2, ps=16, layout="nhd",
                      form="pool", B=3, max_qo=1, max_len=90, opts=dflt(128), static=none,
                      decode=True, **sc)
            continue
        fp8_mma_cases(b, rng, sc)
        # The decode benchmark's shape at every kernel configuration the
        # bundle has for it (selection's and gen_fp8_kernels.py's
        # FORCED_DECODE), plain and split-KV.
        for op, split in (("decode", None), ("decode_split", 16)):
            for name in bench_decode_kernels(b, op, kv):
                check_decode(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, ps=16, layout="nhd",
                             form="pool", B=12 if split else 13,
                             max_len=2000 if split else 600, opts=dflt(128), static=none,
                             split_chunk=split, pad=4 if split else 0,
                             label=kernel_config_label(b, name), kernel=name, **sc)
        for dtype in ("f16", "bf16"):
            check_decode(b, rng, dtype=dtype, D=128, Hqo=32, Hkv=8, ps=16,
                         layout="nhd" if dtype == "f16" else "hnd", form="pool", B=13,
                         max_len=300, opts=dflt(128), static=none, **sc)
        check_decode(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, ps=16, layout="nhd",
                     form="pool", B=7, max_len=200, opts=dflt(128), static=none,
                     label="unscaled", kv_dtype=kv)
        check_decode(b, rng, dtype="f16", D=64, Hqo=8, Hkv=8, ps=1, layout="nhd", form="pair",
                     B=11, max_len=130, opts=dflt(64), static=none, **sc)
        check_decode(b, rng, dtype="f16", D=256, Hqo=16, Hkv=2, ps=16, layout="hnd",
                     form="pair", B=9, max_len=333, opts=dflt(256), static=none, **sc)
        check_decode(b, rng, dtype="bf16", D=256, Hqo=16, Hkv=2, ps=1, layout="hnd",
                     form="pool", B=5, max_len=77, opts=dflt(256), static=none, **sc)
        check_decode(b, rng, dtype="bf16", D=64, Hqo=32, Hkv=4, ps=16, layout="nhd",
                     form="pool", B=10, max_len=250,
                     opts=dict(sm_scale=1 / 8.0, soft_cap=30.0, window=40),
                     static=dict(logits_soft_cap=30.0, window_left=40),
                     label="softcap30 window40", **sc)
        check_decode(b, rng, dtype="f16", D=128, Hqo=8, Hkv=8, ps=16, layout="nhd",
                     form="pool", B=9, max_len=300,
                     opts=dict(sm_scale=1 / math.sqrt(128), rope=True, rope_theta=1e4,
                               base_e=True),
                     static=dict(pos_encoding="rope_llama", lse_base="e"),
                     label="rope base_e", **sc)
        check_decode(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, ps=16, layout="nhd",
                     form="pool", B=9, max_len=300, opts=dict(sm_scale=0.1, alibi=True),
                     static=dict(pos_encoding="alibi"), label="alibi", **sc)
        check_decode(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, ps=16, layout="nhd",
                     form="pool", B=13, max_len=700, opts=dflt(128), static={},
                     split_chunk=8, pad=5, label="split", **sc)
        check_decode(b, rng, dtype="bf16", D=64, Hqo=32, Hkv=4, ps=1, layout="hnd",
                     form="pair", B=6, max_len=500, opts=dflt(64), static={},
                     split_chunk=37, pad=0, label="split", **sc)


def sink_cases(b, rng, small=False):
    """The kernels of sink_kernels.mlir (gen_mma_kernels.py --sinks):
    attention sinks in every family, unsplit and split (the split merge
    adds them), writing and accumulating, against the float64 reference
    merged with each head's (0, sink) state. Kernels are found by their
    statics (the sink kernels carry sinks = true, split merges too)."""
    none = dict(pos_encoding="none", logits_soft_cap=0.0, window_left=-1)
    sc = lambda D: dict(sm_scale=1.0 / math.sqrt(D))
    n = 3 if small else 1
    rows, wg, mma = (dict(none, kernel_family=f) for f in ("rows", "wgmma", "mma_sync"))
    check_decode(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, ps=16, layout="nhd", form="pool",
                 B=13 // n, max_len=300 // n, opts=sc(128), static=none, sinks=True)
    check_decode(b, rng, dtype="bf16", D=64, Hqo=32, Hkv=4, ps=16, layout="hnd", form="pair",
                 B=9 // n, max_len=500 // n, opts=sc(64), static=none, split_chunk=3, pad=2,
                 label="split", sinks=True)
    check_mma(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, ps=16, layout="nhd", form="pool",
              B=12 // n, max_qo=1, max_len=300 // n, opts=sc(128), decode=True,
              accumulate=True, sinks=True, static=rows)
    check_decode(b, rng, dtype="f16", D=128, Hqo=8, Hkv=8, ps=16, layout="nhd", form="pool",
                 B=10 // n, max_len=250 // n,
                 opts=dict(sm_scale=1 / math.sqrt(128), soft_cap=30.0, window=40),
                 static=dict(logits_soft_cap=30.0, window_left=40),
                 label="softcap30 window40", sinks=True)
    check_decode(b, rng, dtype="f16", D=128, Hqo=32, Hkv=2, ps=16, layout="nhd", form="pool",
                 B=13 // n, max_len=600 // n, opts=sc(128), static=none, sinks=True)
    check_mma(b, rng, dtype="f16", D=128, Hqo=32, Hkv=2, ps=16, layout="nhd", form="pool",
              B=12 // n, max_qo=1, max_len=2000 // n, opts=sc(128), decode=True, split=16,
              pad=4, sinks=True, static=none)
    for dtype, base_e, family in (("f16", False, wg), ("bf16", True, wg), ("f16", False, mma)):
        check_mma(b, rng, dtype=dtype, D=128, Hqo=32, Hkv=8, ps=16, layout="nhd",
                  form="pool", B=9 // n, max_qo=200 // n, max_len=500 // n,
                  opts=dict(sc(128), causal=True, base_e=base_e), sinks=True, static=family,
                  label="causal" + (" base_e" if base_e else ""))
    for dtype, family in (("f16", wg), ("bf16", mma)):
        check_mma(b, rng, dtype=dtype, D=128, Hqo=32, Hkv=8, ps=16, layout="nhd",
                  form="pool", B=12 // n, max_qo=150 // n, max_len=900 // n, opts=sc(128),
                  split=6, pad=2, sinks=True, static=family)
    check_mma(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, ps=16, layout="nhd", form="pool",
              B=12 // n, max_qo=150 // n, max_len=500 // n, opts=dict(sc(128), causal=True),
              accumulate=True, sinks=True, static=wg, label="causal")
    check_mma(b, rng, dtype="f16", D=64, Hqo=32, Hkv=4, ps=16, layout="hnd", form="pair",
              B=12 // n, max_qo=100 // n, max_len=300 // n,
              opts=dict(sm_scale=1 / 8.0, causal=True, soft_cap=30.0, window=40),
              static=dict(wg, logits_soft_cap=30.0, window_left=40), sinks=True,
              label="causal softcap30 window40")


def fp8_operand_cases(b, rng, small=False):
    """fp8_operand_kernels.mlir: fp8 queries over an fp8 cache of their type
    on fp8 tensor cores (wgmma, head_dim 128), with k_scale / v_scale,
    against the float64 reference over the dequantized q, K and V."""
    sc = dict(k_scale=0.37, v_scale=2.5)
    none = dict(pos_encoding="none", logits_soft_cap=0.0, window_left=-1)
    d128 = dict(sm_scale=1.0 / math.sqrt(128))
    common = dict(D=128, Hqo=32, Hkv=8, ps=16, layout="nhd", form="pool", static=none, **sc)
    big = not small
    check_mma(b, rng, dtype="f8e4m3", kv_dtype="f8e4m3", o_dtype="f16", B=9 if big else 3,
              max_qo=300 if big else 40, max_len=1200 if big else 200,
              opts=dict(d128, causal=True), **common)
    check_mma(b, rng, dtype="f8e4m3", kv_dtype="f8e4m3", o_dtype="bf16", B=7 if big else 2,
              max_qo=200 if big else 30, max_len=900 if big else 150, opts=d128, **common)
    check_mma(b, rng, dtype="f8e5m2", kv_dtype="f8e5m2", o_dtype="bf16", D=128, Hqo=32, Hkv=4,
              ps=1, layout="hnd", form="pair", B=6 if big else 2, max_qo=150 if big else 30,
              max_len=700 if big else 120,
              opts=dict(d128, causal=True, soft_cap=30.0, window=40),
              static=dict(logits_soft_cap=30.0, window_left=40), label="softcap30 window40",
              **sc)
    check_mma(b, rng, dtype="f8e4m3", kv_dtype="f8e4m3", o_dtype="bf16", B=8 if big else 3,
              max_qo=160 if big else 30, max_len=1500 if big else 300,
              opts=dict(d128, causal=True), split=6, pad=2, **common)
    check_mma(b, rng, dtype="f8e5m2", kv_dtype="f8e5m2", o_dtype="f16", B=7 if big else 2,
              max_qo=120 if big else 20, max_len=800 if big else 150, opts=d128,
              accumulate=True, **common)


def shape_cases(b, rng, small=False, only=""):
    """wgmma_shape_tune.mlir (and wgmma_fp8_operand_tune.mlir): every
    prefill kernel of the bundle (each shape's default and its tuning
    variants: KV tiles, stages, split K/V rings, exp2_emulation) by name,
    causal or not by its manifest, on random pages against float64, then
    with logits spread over ~+-40 (the lazy rescale both ways, exponents up
    to 2^8 through the exp2 polynomial). fp8 queries (NHD pool caches of
    their type) take their output dtype from the manifest and k_scale /
    v_scale of 0.37 / 2.5."""
    none = dict(pos_encoding="none", logits_soft_cap=0.0, window_left=-1)
    for name, k in sorted(b.kernels.items()):
        st = k["static"]
        if k["op"] != "prefill" or (only and not re.search(only, name)):
            continue
        D, dtype, causal = st["head_dim"], st["q_dtype"], bool(st["causal"])
        opts = dict(sm_scale=1.0 / math.sqrt(D), causal=causal)
        fp8 = dict(kv_dtype=st.get("kv_dtype", dtype), o_dtype=st.get("o_dtype", dtype),
                   k_scale=0.37, v_scale=2.5) if dtype in FP8_DTYPES else {}
        common = dict(dtype=dtype, D=D, Hqo=st["num_qo_heads"], Hkv=st["num_kv_heads"],
                      ps=st["page_size"], layout="nhd", form="pool", opts=opts, static=none,
                      kernel=name, label=name[name.index("_w", name.index("_pool")) + 1:], **fp8)
        check_mma(b, rng, B=2 if small else 5, max_qo=40 if small else 200,
                  max_len=120 if small else 600, **common)
        if not small:
            check_mma(b, rng, B=3, max_qo=100, max_len=400, q_scale=8.0,
                      **dict(common, label=common["label"] + " large logits"))


def head_dim_vo_cases(b, rng, small=False):
    """head_dim_vo_kernels.mlir: every prefill kernel of the bundle whose v
    is narrower than q and k (head_dim_vo; DeepSeek's 192 / 128), by name,
    with its manifest's layout, form, heads, scale, causal mask, soft cap,
    window and accumulation (into a random prior state), on random pages
    against float64 (split-KV kernels through the runtime's plan and their
    merge, in chunks of 2 pages, or 48 tokens of a ragged cache), then with
    logits spread over ~+-40."""
    none = dict(pos_encoding="none", logits_soft_cap=0.0, window_left=-1)
    for name, k in sorted(b.kernels.items()):
        st = k["static"]
        if k["op"] not in ("prefill", "prefill_split") or "head_dim_vo" not in st:
            continue
        D, Dv = st["head_dim"], st["head_dim_vo"]
        ragged = st["kv_form"] == "ragged"
        split = (48 if ragged else 2) if k["op"] == "prefill_split" else None
        opts = dict(sm_scale=st["sm_scale"], causal=bool(st["causal"]))
        if st.get("logits_soft_cap"):
            opts["soft_cap"] = st["logits_soft_cap"]
        if st.get("window_left", -1) >= 0:
            opts["window"] = st["window_left"]
        common = dict(dtype=st["q_dtype"], D=D, Dv=Dv, Hqo=st["num_qo_heads"],
                      Hkv=st["num_kv_heads"], ps=st["page_size"], layout=st["kv_layout"],
                      form=st["kv_form"], split=split, static=none, kernel=name, opts=opts,
                      accumulate=bool(st.get("accumulate")),
                      label=name[name.rindex("_w") + 1:])
        check_mma(b, rng, B=2 if small else 5, max_qo=40 if small else 200,
                  max_len=120 if small else 600, **common)
        if not small:
            check_mma(b, rng, B=3, max_qo=100, max_len=400, q_scale=8.0,
                      **dict(common, label=common["label"] + " large logits"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bundle")
    ap.add_argument("--small", action="store_true", help="a few small cases (sanitizer)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--fp8", action="store_true",
                    help="the fp8 KV cases; BUNDLE built from fp8_kernels.mlir")
    ap.add_argument("--fp8-operands", action="store_true",
                    help="fp8 queries on fp8 tensor cores; BUNDLE built from "
                    "fp8_operand_kernels.mlir")
    ap.add_argument("--sinks", action="store_true",
                    help="the attention-sink cases; BUNDLE built from sink_kernels.mlir")
    ap.add_argument("--shapes", action="store_true",
                    help="every prefill kernel by name; BUNDLE built from "
                    "wgmma_shape_tune.mlir (or with wgmma_fp8_operand_tune.mlir)")
    ap.add_argument("--kernels", default="",
                    help="with --shapes: only the kernels whose name matches this regex")
    ap.add_argument("--head-dim-vo", action="store_true",
                    help="the kernels whose v is narrower than q and k, by name; BUNDLE "
                    "built from head_dim_vo_kernels.mlir")
    ap.add_argument("--tensor-core", action="store_true",
                    help="only the tensor-core (mma_sync / wgmma) cases")
    ap.add_argument("--head-dim", type=int, default=None,
                    help="with --tensor-core: only the cases of this head_dim")
    a = ap.parse_args()
    global ONLY_HEAD_DIM
    ONLY_HEAD_DIM = a.head_dim
    rng = np.random.default_rng(a.seed)
    b = Bundle(a.bundle)
    dflt = lambda D: dict(sm_scale=1.0 / math.sqrt(D))
    if a.fp8:
        fp8_cases(b, rng, small=a.small)
    elif a.fp8_operands:
        fp8_operand_cases(b, rng, small=a.small)
    elif a.sinks:
        sink_cases(b, rng, small=a.small)
    elif a.shapes:
        shape_cases(b, rng, small=a.small, only=a.kernels)
    elif a.head_dim_vo:
        head_dim_vo_cases(b, rng, small=a.small)
    elif a.tensor_core:
        mma_cases(b, rng, small=a.small)
    elif a.small:
        check_merge_state(b, rng, "f16", 128, 32, 5)
        check_merge_in_place(b, rng, "f16", 128, 32, 5, True, False)
        check_merge_states(b, rng, "f16", 128, 32, 5, 3)
        check_decode(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, ps=16, layout="nhd", form="pool",
                     B=3, max_len=40, opts=dflt(128), static=dict(pos_encoding="none", logits_soft_cap=0.0))
        check_decode(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, ps=16, layout="nhd", form="pool",
                     B=3, max_len=70, opts=dflt(128), static={}, split_chunk=2, pad=2, label="split")
        mma_cases(b, rng, small=True)
    else:
        for dtype, D, H in [("f16", 128, 32), ("bf16", 64, 8), ("f32", 256, 4)]:
            check_merge_state(b, rng, dtype, D, H, 37)
            for N in (0, 1, 3, 16):
                check_merge_states(b, rng, dtype, D, H, 29, N)
        check_merge_state(b, rng, "f16", 128, 32, 37, base_e=True)
        check_merge_in_place(b, rng, "f16", 128, 32, 37, True, False)
        check_merge_in_place(b, rng, "bf16", 64, 8, 37, False, True)
        none = dict(pos_encoding="none", logits_soft_cap=0.0, window_left=-1)
        for dtype in ("f16", "bf16"):
            check_decode(b, rng, dtype=dtype, D=128, Hqo=32, Hkv=8, ps=16,
                         layout="nhd" if dtype == "f16" else "hnd", form="pool", B=13, max_len=300,
                         opts=dflt(128), static=none)
        check_decode(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, ps=16, layout="nhd", form="pool",
                     B=7, max_len=200, opts=dflt(128), static=none, q_scale=5000.0,
                     label="extreme logits")
        check_decode(b, rng, dtype="f16", D=64, Hqo=8, Hkv=8, ps=1, layout="nhd", form="pair",
                     B=11, max_len=130, opts=dflt(64), static=none)
        check_decode(b, rng, dtype="f16", D=256, Hqo=16, Hkv=2, ps=16, layout="hnd", form="pair",
                     B=9, max_len=333, opts=dflt(256), static=none)
        check_decode(b, rng, dtype="bf16", D=256, Hqo=16, Hkv=2, ps=1, layout="hnd", form="pool",
                     B=5, max_len=77, opts=dflt(256), static=none)
        check_decode(b, rng, dtype="bf16", D=64, Hqo=32, Hkv=4, ps=16, layout="nhd", form="pool",
                     B=10, max_len=250, opts=dict(sm_scale=1 / 8.0, soft_cap=30.0, window=40),
                     static=dict(logits_soft_cap=30.0, window_left=40), label="softcap30 window40")
        check_decode(b, rng, dtype="f16", D=128, Hqo=8, Hkv=8, ps=16, layout="nhd", form="pool",
                     B=9, max_len=300, opts=dict(sm_scale=1 / math.sqrt(128), rope=True,
                                                 rope_theta=1e4, base_e=True),
                     static=dict(pos_encoding="rope_llama", lse_base="e"), label="rope base_e")
        check_decode(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, ps=16, layout="nhd", form="pool",
                     B=9, max_len=300, opts=dict(sm_scale=0.1, alibi=True),
                     static=dict(pos_encoding="alibi"), label="alibi")
        check_decode(b, rng, dtype="f16", D=128, Hqo=32, Hkv=8, ps=16, layout="nhd", form="pool",
                     B=13, max_len=700, opts=dflt(128), static={}, split_chunk=8, pad=5,
                     label="split")
        check_decode(b, rng, dtype="bf16", D=64, Hqo=32, Hkv=4, ps=1, layout="hnd", form="pair",
                     B=6, max_len=500, opts=dflt(64), static={}, split_chunk=37, pad=0,
                     label="split")
        mma_cases(b, rng)
    nfail = sum(1 for r in results if not r[6])
    print(f"\n{len(results) - nfail}/{len(results)} cases passed")
    print("| case | dtype | max rel err v/o | max rel err lse | NaN | exact rules | pass |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for n, d, eo, es, nan, ex, ok, note in results:
        print(f"| {n} | {d} | {eo:.2e} | {es:.2e} | {nan} | {ex} | {'yes' if ok else 'NO'} |")
    sys.exit(1 if nfail else 0)


if __name__ == "__main__":
    main()
