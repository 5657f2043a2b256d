#!/usr/bin/env python3
"""Benchmarks of the Python package against FlashInfer and torch, on the GPU.

    python3 -m benchmarks.python.bench [--results benchmarks/RESULTS.md]
                                       [--plots benchmarks/python/plots] [--quick]

(from the repository root.)

Every row runs through `cascade_mlir` (what a user calls: the wrappers'
plan() once, then run() on torch CUDA tensors), FlashInfer 0.5.3 when it is
importable (`. .fi/env.sh`; the same wrapper class, same inputs) and torch,
in one process on the same inputs. Before timing, the three outputs are
compared (max |a - b| / max |b| against torch <= 4e-3 for fp16); a row whose
outputs disagree is reported as FAIL and the exit status is 1.

Rows (32 query / 8 KV heads, head_dim 128, page 16, fp16, NHD pool):
- decode: BatchDecodeWithPagedKVCacheWrapper, batch 16 / 64 / 256, KV length
  1024 / 4096 / 16384 per request, pages in random order; GB/s counts the
  KV read once plus q and o. torch: SDPA (GQA) over K/V gathered into
  contiguous tensors beforehand (gather not timed).
- cascade: MultiLevelCascadeAttentionWrapper, 2 levels, batch 64 decode
  requests sharing a prefix of 1024 / 4096 / 16384 / 65536 tokens, 256 own
  tokens each. torch: SDPA over the prefix once (the G query heads of a KV
  head packed as query rows), SDPA over the suffixes, merged with their
  log-sum-exps (the cheapest torch formulation; plain attention over each
  request's concatenated KV is what the outputs are checked against).
Times (us): benchmarks.common.timing, the median of 15 CUDA-event timings of
5 back-to-back calls each (run()'s host time included, as a serving engine
pays it), after warm-up.

Writes a markdown table (appended as a dated section to --results) and PNG
plots into --plots: decode GB/s against KV length per batch size, and
cascade time against shared-prefix length (ours, FlashInfer, torch).
"""
import argparse
import datetime
import math
import os
import sys

import torch

import cascade_mlir as cm

from benchmarks.common.timing import cuda_time_us

try:
    import flashinfer
    FI_ERR = None
except Exception as e:  # noqa: BLE001 - any import failure means "not measured"
    flashinfer = None
    FI_ERR = f"{type(e).__name__}: {e}"

HQ, HKV, D, PAGE = 32, 8, 128, 16
DT = torch.float16
TOL = 4e-3


def timed(fn):
    return cuda_time_us(fn, reps=15, warmup=3, inner=5)


def relerr(a, ref):
    a, ref = a.double(), ref.double()
    return float((a - ref).abs().max() / ref.abs().max().clamp_min(1e-30))


def ws():
    return torch.empty(256 << 20, dtype=torch.uint8, device="cuda")


def decode_inputs(B, L):
    """A decode batch of B requests of L tokens each, pages in random
    order: (pool, kv_indices, kv_indptr, kv_last_page_len, q, pages a
    request)."""
    npg = -(-L // PAGE)
    P = B * npg
    pool = torch.randn(P, 2, PAGE, HKV, D, device="cuda", dtype=DT)
    perm = torch.randperm(P, device="cuda").int()
    indptr = (torch.arange(B + 1, device="cuda") * npg).int()
    last = torch.full((B,), L - (npg - 1) * PAGE, device="cuda", dtype=torch.int32)
    q = torch.randn(B, HQ, D, device="cuda", dtype=DT)
    return pool, perm, indptr, last, q, npg


def decode_row(B, L):
    pool, perm, indptr, last, q, npg = decode_inputs(B, L)
    ids = perm.long().view(B, npg)
    kk = pool[ids, 0].reshape(B, npg * PAGE, HKV, D)[:, :L].transpose(1, 2).contiguous()
    vv = pool[ids, 1].reshape(B, npg * PAGE, HKV, D)[:, :L].transpose(1, 2).contiguous()
    qt = q.view(B, HQ, 1, D)
    sdpa = torch.nn.functional.scaled_dot_product_attention
    ref = sdpa(qt, kk, vv, enable_gqa=True).view(B, HQ, D)
    res = {"torch": timed(lambda: sdpa(qt, kk, vv, enable_gqa=True))}
    del kk, vv
    errs = {}
    w = cm.BatchDecodeWithPagedKVCacheWrapper(ws(), "NHD")
    w.plan(indptr, perm, last, HQ, HKV, D, PAGE, q_data_type=DT, kv_data_type=DT)
    out = torch.empty_like(q)
    errs["ours"] = relerr(w.run(q, pool), ref)
    res["ours"] = timed(lambda: w.run(q, pool, out=out))
    if flashinfer is not None:
        fw = flashinfer.BatchDecodeWithPagedKVCacheWrapper(ws(), "NHD")
        fw.plan(indptr, perm, last, HQ, HKV, D, PAGE, q_data_type=DT, kv_data_type=DT)
        errs["FlashInfer"] = relerr(fw.run(q, pool), ref)
        res["FlashInfer"] = timed(lambda: fw.run(q, pool, out=out))
    nbytes = B * L * HKV * D * 2 * 2 + 2 * q.numel() * 2
    return res, errs, nbytes


def cascade_row(B, S, U, HQ=HQ, HKV=HKV):
    """The cascade row at heads HQ/HKV (test/Integration/mgpu/compare.py times
    other heads)."""
    G = HQ // HKV
    sp, up = -(-S // PAGE), -(-U // PAGE)
    P = sp + B * up
    cache = torch.randn(P, 2, PAGE, HKV, D, device="cuda", dtype=DT)
    q = torch.randn(B, HQ, D, device="cuda", dtype=DT)
    idx = torch.randperm(P, device="cuda").int()
    shared_idx, uniq_idx = idx[:sp].contiguous(), idx[sp:].contiguous()
    i32 = dict(device="cuda", dtype=torch.int32)
    qo = [torch.tensor([0, B], **i32), torch.arange(B + 1, **i32)]
    kvp = [torch.tensor([0, sp], **i32), torch.arange(B + 1, **i32) * up]
    ind = [shared_idx, uniq_idx]
    last = [torch.tensor([PAGE], **i32), torch.full((B,), PAGE, **i32)]
    Kp, Vp = cache[idx.long(), 0], cache[idx.long(), 1]
    Ks = Kp[:sp].reshape(1, S, HKV, D).transpose(1, 2)
    Vs = Vp[:sp].reshape(1, S, HKV, D).transpose(1, 2)
    Ku = Kp[sp:].reshape(B, U, HKV, D).transpose(1, 2)
    Vu = Vp[sp:].reshape(B, U, HKV, D).transpose(1, 2)
    scale = 1 / math.sqrt(D)
    flash = torch.ops.aten._scaled_dot_product_flash_attention

    def compose():
        qs = q.reshape(B, HKV, G, D).permute(1, 0, 2, 3).reshape(1, HKV, B * G, D)
        o1, l1 = flash(qs, Ks, Vs, scale=scale)[:2]
        o2, l2 = flash(q.reshape(B, HKV, G, D), Ku, Vu, scale=scale)[:2]
        o1 = o1.reshape(HKV, B, G, D).permute(1, 0, 2, 3)
        l1 = l1.reshape(HKV, B, G).permute(1, 0, 2)
        m = torch.maximum(l1, l2)
        w1, w2 = torch.exp(l1 - m), torch.exp(l2 - m)
        o = (o1.float() * w1[..., None] + o2.float() * w2[..., None]) / (w1 + w2)[..., None]
        return o.to(DT).reshape(B, HQ, D)

    # Plain attention over each request's concatenated KV (prefix + own),
    # in chunks of requests to bound the memory of the copies.
    ref = torch.empty(B, HQ, D, device="cuda", dtype=torch.float32)
    step = max(1, (1 << 28) // ((S + U) * HKV * D * 2))
    for b0 in range(0, B, step):
        b1 = min(B, b0 + step)
        n = b1 - b0
        Kf = torch.cat([Ks.expand(n, -1, -1, -1), Ku[b0:b1]], 2).float()
        Vf = torch.cat([Vs.expand(n, -1, -1, -1), Vu[b0:b1]], 2).float()
        ref[b0:b1] = torch.nn.functional.scaled_dot_product_attention(
            q[b0:b1].float().reshape(n, HQ, 1, D), Kf, Vf, enable_gqa=True).reshape(n, HQ, D)
        del Kf, Vf
    errs = {"torch": relerr(compose(), ref)}
    res = {"torch": timed(compose)}
    w = cm.MultiLevelCascadeAttentionWrapper(2, ws(), "NHD")
    w.plan(qo, kvp, ind, last, HQ, HKV, D, PAGE)
    errs["ours"] = relerr(w.run(q, cache), ref)
    res["ours"] = timed(lambda: w.run(q, cache))  # as FlashInfer: output allocated
    if flashinfer is not None:
        fw = flashinfer.MultiLevelCascadeAttentionWrapper(2, ws(), "NHD")
        fw.plan(qo, kvp, ind, last, HQ, HKV, D, PAGE)
        errs["FlashInfer"] = relerr(fw.run(q, cache), ref)
        res["FlashInfer"] = timed(lambda: fw.run(q, cache))  # it takes no out=
    return res, errs


def fmt_err(errs):
    return " / ".join(f"{k} {v:.1e}" for k, v in errs.items())


def plots(dec, cas, outdir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(outdir, exist_ok=True)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    styles = {"ours": "-o", "FlashInfer": "--s", "torch": ":^"}
    for B in sorted({b for b, _ in dec}):
        Ls = sorted(L for b, L in dec if b == B)
        for who, style in styles.items():
            ys = [dec[(B, L)][0].get(who) for L in Ls]
            if all(y is not None for y in ys):
                gbs = [dec[(B, L)][2] / (y * 1e-6) / 1e9 for L, y in zip(Ls, ys)]
                ax.plot(Ls, gbs, style, label=f"{who} B={B}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("KV length per request (tokens)")
    ax.set_ylabel("GB/s (KV + q + o)")
    ax.set_title(f"decode {HQ}/{HKV} heads, D{D}, page {PAGE}, fp16 (H200)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    p1 = os.path.join(outdir, "decode_gbps.png")
    fig.savefig(p1, dpi=120)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    Ss = sorted(cas)
    for who, style in styles.items():
        ys = [cas[S][0].get(who) for S in Ss]
        if all(y is not None for y in ys):
            ax.plot(Ss, ys, style, label=who)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("shared prefix length (tokens)")
    ax.set_ylabel("time per call (us)")
    ax.set_title(f"2-level cascade, batch 64, 256 own tokens, {HQ}/{HKV} D{D} fp16 (H200)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    p2 = os.path.join(outdir, "cascade_time.png")
    fig.savefig(p2, dpi=120)
    return [p1, p2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", help="markdown file to append a dated section to")
    ap.add_argument("--plots", help="directory for the PNG plots")
    ap.add_argument("--quick", action="store_true", help="two rows of each kind")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: the benchmarks run on a GPU")
        return 2
    torch.manual_seed(0)
    dec_rows = [(B, L) for B in (16, 64, 256) for L in (1024, 4096, 16384)]
    cas_rows = [1024, 4096, 16384, 65536]
    if args.quick:
        dec_rows, cas_rows = dec_rows[:2], cas_rows[:2]
    total = len(dec_rows) + len(cas_rows)
    gpu = torch.cuda.get_device_name()
    print(f"{gpu}; cascade_mlir {cm.__version__}; torch {torch.__version__}; FlashInfer "
          + (flashinfer.__version__ if flashinfer else f"not available ({FI_ERR})"), flush=True)
    lines = ["| row | ours us | FlashInfer us | torch us | ours GB/s | FI / ours | "
             "torch / ours | errors (vs torch SDPA / float32 plain) |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    failed = []
    dec, cas = {}, {}
    i = 0
    for B, L in dec_rows:
        i += 1
        res, errs, nbytes = decode_row(B, L)
        dec[(B, L)] = (res, errs, nbytes)
        bad = [k for k, v in errs.items() if not v <= TOL]
        failed += [f"decode B={B} L={L} {k}" for k in bad]
        fi = res.get("FlashInfer")
        fi_us = f"{fi:.1f}" if fi else "n/a"
        fi_ratio = f"{fi / res['ours']:.2f}" if fi else "n/a"
        line = (f"| decode B={B} L={L} | {res['ours']:.1f} | "
                f"{fi_us} | {res['torch']:.1f} | "
                f"{nbytes / res['ours'] / 1e3:.0f} | {fi_ratio} | "
                f"{res['torch'] / res['ours']:.2f} | {fmt_err(errs)}{' FAIL' if bad else ''} |")
        lines.append(line)
        print(f"[{i}/{total}] {line}", flush=True)
        torch.cuda.empty_cache()
    for S in cas_rows:
        i += 1
        B, U = 64, 256
        res, errs = cascade_row(B, S, U)
        cas[S] = (res, errs)
        bad = [k for k, v in errs.items() if not v <= TOL]
        failed += [f"cascade prefix {S} {k}" for k in bad]
        fi = res.get("FlashInfer")
        fi_us = f"{fi:.1f}" if fi else "n/a"
        fi_ratio = f"{fi / res['ours']:.2f}" if fi else "n/a"
        nbytes = (S + B * U) * HKV * D * 2 * 2
        line = (f"| cascade B={B} prefix={S} unique={U} | {res['ours']:.1f} | "
                f"{fi_us} | {res['torch']:.1f} | "
                f"{nbytes / res['ours'] / 1e3:.0f} | {fi_ratio} | "
                f"{res['torch'] / res['ours']:.2f} | {fmt_err(errs)}{' FAIL' if bad else ''} |")
        lines.append(line)
        print(f"[{i}/{total}] {line}", flush=True)
        torch.cuda.empty_cache()
    table = "\n".join(lines)
    print("\n" + table)
    made = []
    if args.plots:
        made = plots(dec, cas, args.plots)
        print("plots:", ", ".join(made))
    if args.results:
        today = datetime.date.today().isoformat()
        with open(args.results, "a") as f:
            f.write(f"\n## {today}: Python package vs FlashInfer 0.5.3 and torch "
                    f"(benchmarks/python/bench.py, {gpu})\n\n"
                    "Through `cascade_mlir`'s wrappers (plan once, run() per call, host "
                    "time included); FlashInfer's same wrappers on the same tensors; torch "
                    "SDPA. Median of 15 CUDA-event timings of 5 back-to-back calls. "
                    "FI / ours and torch / ours > 1 mean ours is faster. Decode GB/s counts "
                    "the KV once plus q and o; cascade GB/s counts the prefix once plus the "
                    "suffixes.\n\n" + table + "\n")
            if made:
                f.write("\nPlots: " + ", ".join(
                    os.path.relpath(p, os.path.dirname(os.path.abspath(args.results)))
                    for p in made) + ".\n")
    if failed:
        print("FAIL: outputs disagree:", ", ".join(failed))
        return 1
    print(f"all {total} rows: outputs agree (<= {TOL})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
