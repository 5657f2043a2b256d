#!/usr/bin/env python3
"""Batch decode by batch size and KV length, against FlashInfer 0.5.3 in the
same process (issue 43: decode at every size at least FlashInfer's speed).

    python3 -m benchmarks.python.decode_sweep [--batches 1,8,32,128,256]
        [--lengths 256,1024,4096,16384,32768] [--json FILE]

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


def point(B, L):
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
    nbytes = B * L * HKV * D * 2 * 2 + 2 * q.numel() * 2
    del pool
    return med, errs, nbytes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", default="1,8,32,128,256")
    ap.add_argument("--lengths", default="256,1024,4096,16384,32768")
    ap.add_argument("--json")
    a = ap.parse_args()
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
            med, errs, nbytes = point(B, L)
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
            rows.append(dict(B=B, L=L, times=med, errs=errs, bytes=nbytes))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(dict(copy_gbs=bw, device=torch.cuda.get_device_name(), rows=rows), fh)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
