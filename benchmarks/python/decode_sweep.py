#!/usr/bin/env python3
"""Batch decode by batch size and KV length, against FlashInfer 0.5.3 in the
same process (issue 43: decode at every size at least FlashInfer's speed).

    python3 -m benchmarks.python.decode_sweep [--batches 1,8,32,128,256]
        [--lengths 256,1024,4096,16384,32768] [--json FILE]
        [--split-pages 8,16,32,64] [--breakdown]

(from the repository root; FlashInfer when `. .fi/env.sh` makes it
importable, else only our column.) 32 query / 8 KV heads, head_dim 128,
page 16, fp16, NHD pool, pages in random order: the configuration of
FlashInfer's prebuilt decode module. Each point plans once with both
wrappers on the same inputs, checks both outputs against a float32
reference of the gathered KV (max |a - b| / max |b| <= 4e-3), then times
run(out=) both ways in alternating rounds (benchmarks.common.timing):

- `b2b`: 5 back-to-back calls per event pair, run()'s host time included
  (what a serving loop pays);
- `device`: the same calls queued behind a ~1 ms spin kernel, so only the
  device time counts.

`of copy` divides the bytes read (the KV once, q and o) by the device time
and by this card's copy bandwidth (a device-to-device copy of 1 GiB).
`--split-pages`: ours also planned with each fixed split-KV chunk (pages,
FlashInfer's `fixed_split_size`) and without a split, device time each (where
the automatic chunk stands among them). `--breakdown`: each kernel's device
time per call (torch.profiler over 10 calls) for both wrappers: where a
small point's time goes (attention, merge, launch gaps).
Exit status 1 if an output is off.
"""
import argparse
import json
import statistics
import sys

import torch

import cascade_mlir as cm

from benchmarks.common.timing import copy_bandwidth, cuda_time_us
from benchmarks.python.bench import D, DT, HKV, HQ, PAGE, TOL, decode_inputs, flashinfer

MAX_TOKENS = 1 << 23  # 8M cached tokens (34 GB of fp16 KV at 32/8 x 128)


def kernel_breakdown(fn, calls=10):
    """{kernel name: device us per call} of `calls` calls of fn, and the
    span from the first kernel's start to the last one's end per call."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    per, starts, ends = {}, [], []
    for e in prof.events():
        if e.device_type.name != "CUDA" or e.name.startswith("Memcpy") or \
                e.name.startswith("Memset"):
            continue
        per[e.name] = per.get(e.name, 0.0) + e.time_range.elapsed_us() / calls
        starts.append(e.time_range.start)
        ends.append(e.time_range.end)
    span = (max(ends) - min(starts)) / calls if starts else 0.0
    return per, span


def split_times(w, q, pool, out, indptr, perm, last, pages):
    """Device us of ours planned with each fixed chunk of `pages` and with
    no split (key 0)."""
    res = {}
    for sp in list(pages) + [0]:
        opts = dict(fixed_split_size=sp) if sp else dict(disable_split_kv=True)
        w.plan(indptr, perm, last, HQ, HKV, D, PAGE, q_data_type=DT, kv_data_type=DT,
               **opts)
        res[sp] = cuda_time_us(lambda: w.run(q, pool, out=out), reps=5, warmup=1,
                               inner=5, ahead=True)
    w.plan(indptr, perm, last, HQ, HKV, D, PAGE, q_data_type=DT, kv_data_type=DT)
    return res


def point(B, L, split_pages=(), breakdown=False):
    pool, perm, indptr, last, q, npg = decode_inputs(B, L)
    # float32 reference on a slice of the batch (the gather of every request
    # would double the memory at the largest points).
    rb = min(B, 8)
    ids = perm.long().view(B, npg)[:rb]
    k = pool[ids, 0].reshape(rb, npg * PAGE, HKV, D)[:, :L].float()
    v = pool[ids, 1].reshape(rb, npg * PAGE, HKV, D)[:, :L].float()
    qf = q[:rb].float().view(rb, HKV, HQ // HKV, D)
    s = torch.einsum("bhgd,bthd->bhgt", qf, k) / D ** 0.5
    ref = torch.einsum("bhgt,bthd->bhgd", s.softmax(-1), v).reshape(rb, HQ, D)
    del k, v, s
    out = torch.empty_like(q)
    runs, errs = {}, {}
    w = cm.BatchDecodeWithPagedKVCacheWrapper(torch.empty(256 << 20, dtype=torch.uint8,
                                                          device="cuda"), "NHD")
    w.plan(indptr, perm, last, HQ, HKV, D, PAGE, q_data_type=DT, kv_data_type=DT)
    runs["ours"] = lambda: w.run(q, pool, out=out)
    if flashinfer is not None:
        fw = flashinfer.BatchDecodeWithPagedKVCacheWrapper(
            torch.empty(256 << 20, dtype=torch.uint8, device="cuda"), "NHD")
        fw.plan(indptr, perm, last, HQ, HKV, D, PAGE, q_data_type=DT, kv_data_type=DT)
        runs["FlashInfer"] = lambda: fw.run(q, pool, out=out)
    for name, fn in runs.items():
        fn()
        torch.cuda.synchronize()
        errs[name] = float((out[:rb].float() - ref).abs().max() / ref.abs().max())
    times = {name: {"b2b": [], "device": []} for name in runs}
    for _ in range(3):  # alternating rounds: drift falls on both alike
        for name, fn in runs.items():
            times[name]["b2b"].append(cuda_time_us(fn, reps=3, warmup=1, inner=5))
            times[name]["device"].append(cuda_time_us(fn, reps=3, warmup=1, inner=5,
                                                      ahead=True))
    med = {n: {k: statistics.median(v) for k, v in t.items()} for n, t in times.items()}
    if split_pages:
        med["ours"]["splits"] = split_times(w, q, pool, out, indptr, perm, last,
                                            split_pages)
    if breakdown:
        for name, fn in runs.items():
            med[name]["kernels"], med[name]["span"] = kernel_breakdown(fn)
    nbytes = B * L * HKV * D * 2 * 2 + 2 * q.numel() * 2
    del pool
    return med, errs, nbytes


def print_details(B, L, med):
    """The --split-pages and --breakdown lines of one point."""
    sp = med["ours"].get("splits")
    if sp:
        print(f"#   B{B} L{L} ours by fixed split (pages: device us; 0 = no split): " +
              ", ".join(f"{k}: {v:.1f}" for k, v in sp.items()))
    for name, m in med.items():
        if "kernels" not in m:
            continue
        ks = sorted(m["kernels"].items(), key=lambda kv: -kv[1])
        print(f"#   B{B} L{L} {name}: span {m['span']:.1f} us; " +
              "; ".join(f"{k[:60]} {v:.1f}" for k, v in ks))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", default="1,8,32,128,256")
    ap.add_argument("--lengths", default="256,1024,4096,16384,32768")
    ap.add_argument("--json")
    ap.add_argument("--split-pages", default="",
                    help="also time ours at these fixed split chunks (pages)")
    ap.add_argument("--breakdown", action="store_true",
                    help="per-kernel device time of both wrappers")
    a = ap.parse_args()
    split_pages = [int(x) for x in a.split_pages.split(",") if x]
    bw = copy_bandwidth(ahead=True) / 1e9  # GB/s
    print(f"# {torch.cuda.get_device_name()}: copy {bw:.0f} GB/s; FlashInfer "
          f"{'0.5.3 in this process' if flashinfer is not None else 'not importable'}")
    print("| B | L | ours b2b us | ours device us | of copy | FI b2b us | FI device us "
          "| FI of copy | FI / ours (b2b, device) |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    rows, bad = [], 0
    for B in (int(x) for x in a.batches.split(",")):
        for L in (int(x) for x in a.lengths.split(",")):
            if B * L > MAX_TOKENS:
                continue
            med, errs, nbytes = point(B, L, split_pages, a.breakdown)
            bad += sum(e > TOL for e in errs.values())
            o = med["ours"]
            cells = [f"{o['b2b']:.1f}", f"{o['device']:.1f}",
                     f"{nbytes / o['device'] / 1e3 / bw:.2f}"]
            f = med.get("FlashInfer")
            if f:
                cells += [f"{f['b2b']:.1f}", f"{f['device']:.1f}",
                          f"{nbytes / f['device'] / 1e3 / bw:.2f}",
                          f"{f['b2b'] / o['b2b']:.2f}, {f['device'] / o['device']:.2f}"]
            else:
                cells += ["", "", "", ""]
            flag = "" if all(e <= TOL for e in errs.values()) else f" FAIL {errs}"
            print(f"| {B} | {L} | " + " | ".join(cells) + f" |{flag}", flush=True)
            print_details(B, L, med)
            rows.append(dict(B=B, L=L, times=med, errs=errs, bytes=nbytes))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(dict(copy_gbs=bw, device=torch.cuda.get_device_name(), rows=rows), fh)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
