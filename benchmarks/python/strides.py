#!/usr/bin/env python3
"""Contiguous against strided q / out, same plan, same process (issue 41):
q sliced from a packed QKV projection, out a view of a larger buffer; and a
contiguous paged cache against one layer of a two-layer allocation
([pages, 2 layers, 2, page, heads, dim][:, 1]: its page stride doubled),
f16 and fp8 (e4m3).

    python3 -m benchmarks.python.strides [--json FILE] [--label NAME]

Medians of CUDA-event timings of run() (one plan, warm; contiguous and
strided in alternating rounds), for decode (B=128
x 4K tokens, B=16 x 32K: split KV), causal and non-causal prefill (B=8 x 4K)
and a two-level cascade (B=128, shared prefix 4K, 256 own tokens), 32/8
heads, D=128, page 16, fp16; the cache rows: decode B=128 x 4K and B=16 x
32K, f16 and fp8, and causal prefill. Prints one row per shape: the contiguous time,
the strided time and their ratio, and the contiguous time as a fraction of
the measured copy bandwidth (decode, cascade) or in TFLOP/s (prefill).
Run it under two builds (e.g. two wheels, --label) to compare contiguous
speed across them.
"""
import argparse
import json

import torch

import cascade_mlir as cm
from benchmarks.common.timing import copy_bandwidth, cuda_time_us, interleaved_time_us

HQ, HKV, D, PAGE = 32, 8, 128, 16


def views(rows, dev):
    qkv = torch.randn(rows, (HQ + 2 * HKV) * D, device=dev).half()
    q = qkv[:, :HQ * D].view(rows, HQ, D)
    big = torch.empty(rows, HQ, 2 * D, device=dev).half()
    return q, big[:, :, D:]


def pages(batch, tokens, dev, first=0):
    per = (tokens + PAGE - 1) // PAGE
    indptr = torch.arange(batch + 1, dtype=torch.int32) * per
    indices = torch.arange(first, first + batch * per, dtype=torch.int32)
    last = torch.full((batch,), tokens - (per - 1) * PAGE, dtype=torch.int32)
    return indptr.to(dev), indices.to(dev), last.to(dev), batch * per


def measure(run, rows, dev):
    q, o = views(rows, dev)
    qc, oc = q.contiguous(), torch.empty_like(q.contiguous())
    return compare(lambda: run(qc, oc), lambda: run(q, o), oc, o)


def compare(tidy_run, strided_run, tidy_out, strided_out):
    """(tidy ms, strided ms) in alternating rounds; strided None where this
    build refuses the strided call."""
    try:
        strided_run()
    except ValueError as e:  # a build without strided views
        print(f"strided run refused: {e}")
        return cuda_time_us(tidy_run, reps=30, warmup=5) / 1e3, None
    tidy, strided = (t / 1e3 for t in interleaved_time_us([tidy_run, strided_run]))
    torch.cuda.synchronize()
    assert torch.equal(strided_out, tidy_out), "strided result differs from the contiguous one"
    return tidy, strided


def layer_view(n, dtype, dev):
    """(contiguous cache, a cache of the same contents that is layer 1 of a
    two-layer allocation)."""
    every = torch.randn(n, 2, 2, PAGE, HKV, D, device=dev).to(dtype)
    return every[:, 1].contiguous(), every[:, 1]


def cache_rows(ws, bw, dev):
    rows = []
    fp8 = torch.float8_e4m3fn
    for dtype, batch, tokens in ((torch.half, 128, 4096), (fp8, 128, 4096), (fp8, 16, 32768)):
        indptr, indices, last, n = pages(batch, tokens, dev)
        tidy_cache, view = layer_view(n, dtype, dev)
        w = cm.BatchDecodeWithPagedKVCacheWrapper(ws)
        w.plan(indptr, indices, last, HQ, HKV, D, PAGE, q_data_type=torch.half,
               kv_data_type=dtype)
        q = torch.randn(batch, HQ, D, device=dev).half()
        oc, ov = torch.empty_like(q), torch.empty_like(q)
        tidy, strided = compare(lambda: w.run(q, tidy_cache, out=oc),
                                lambda: w.run(q, view, out=ov), oc, ov)
        frac = tidy_cache.numel() * tidy_cache.element_size() / (tidy * 1e-3) / bw
        name = "fp8 e4m3" if dtype == fp8 else "f16"
        rows.append((f"decode B{batch} x {tokens}, {name} cache: one layer of two", tidy,
                     strided, f"{frac:.3f} of copy"))
        del tidy_cache, view
    batch, tokens = 8, 4096
    indptr, indices, last, n = pages(batch, tokens, dev)
    tidy_cache, view = layer_view(n, torch.half, dev)
    qo = (torch.arange(batch + 1, dtype=torch.int32) * tokens).to(dev)
    w = cm.BatchPrefillWithPagedKVCacheWrapper(ws)
    w.plan(qo, indptr, indices, last, HQ, HKV, D, PAGE, causal=True)
    q = torch.randn(batch * tokens, HQ, D, device=dev).half()
    oc, ov = torch.empty_like(q), torch.empty_like(q)
    tidy, strided = compare(lambda: w.run(q, tidy_cache, out=oc),
                            lambda: w.run(q, view, out=ov), oc, ov)
    flops = 4 * batch * HQ * tokens * tokens * D * 0.5
    rows.append((f"prefill causal B{batch} x {tokens}, cache: one layer of two", tidy, strided,
                 f"{flops / (tidy * 1e-3) / 1e12:.0f} TFLOP/s"))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--label", default="")
    args = ap.parse_args()
    dev = torch.device("cuda:0")
    bw = copy_bandwidth(dev)
    ws = torch.empty(512 << 20, dtype=torch.uint8, device=dev)
    rows = []

    for batch, tokens in ((128, 4096), (16, 32768)):
        indptr, indices, last, n = pages(batch, tokens, dev)
        cache = torch.randn(n, 2, PAGE, HKV, D, device=dev).half()
        w = cm.BatchDecodeWithPagedKVCacheWrapper(ws)
        w.plan(indptr, indices, last, HQ, HKV, D, PAGE)
        tidy, strided = measure(lambda q, o: w.run(q, cache, out=o), batch, dev)
        frac = cache.numel() * 2 / (tidy * 1e-3) / bw
        rows.append((f"decode B{batch} x {tokens}", tidy, strided, f"{frac:.3f} of copy"))
        del cache

    batch, tokens = 8, 4096
    indptr, indices, last, n = pages(batch, tokens, dev)
    cache = torch.randn(n, 2, PAGE, HKV, D, device=dev).half()
    qo = (torch.arange(batch + 1, dtype=torch.int32) * tokens).to(dev)
    for causal in (True, False):
        w = cm.BatchPrefillWithPagedKVCacheWrapper(ws)
        w.plan(qo, indptr, indices, last, HQ, HKV, D, PAGE, causal=causal)
        tidy, strided = measure(lambda q, o: w.run(q, cache, out=o), batch * tokens, dev)
        flops = 4 * batch * HQ * tokens * tokens * D * (0.5 if causal else 1.0)
        rows.append((f"prefill {'causal' if causal else 'non-causal'} B8 x 4096", tidy,
                     strided, f"{flops / (tidy * 1e-3) / 1e12:.0f} TFLOP/s"))
    del cache

    batch, shared, own = 128, 4096, 256
    sp = (shared + PAGE - 1) // PAGE
    uind, uidx, ulast, un = pages(batch, own, dev, first=sp)
    cache = torch.randn(sp + un, 2, PAGE, HKV, D, device=dev).half()
    w = cm.MultiLevelCascadeAttentionWrapper(2, ws, "NHD")
    i32 = dict(dtype=torch.int32, device=dev)
    w.plan([torch.tensor([0, batch], **i32), torch.arange(batch + 1, **i32)],
           [torch.tensor([0, sp], **i32), uind], [torch.arange(sp, **i32), uidx],
           [torch.tensor([PAGE], **i32), ulast], HQ, HKV, D, PAGE)
    tidy, strided = measure(lambda q, o: w.run(q, cache, out=o), batch, dev)
    frac = (sp + un) * 2 * PAGE * HKV * D * 2 / (tidy * 1e-3) / bw
    rows.append((f"cascade B{batch} prefix {shared} own {own}", tidy, strided,
                 f"{frac:.3f} of copy (bytes read once)"))

    rows += cache_rows(ws, bw, dev)

    print(f"{args.label} copy {bw / 1e9:.0f} GB/s, {torch.cuda.get_device_name()}")
    print("| shape | contiguous ms | strided ms | strided / contiguous | contiguous |")
    print("| --- | ---: | ---: | ---: | --- |")
    for name, t, s, what in rows:
        if s is None:
            print(f"| {name} | {t:.4f} | - | - | {what} |")
        else:
            print(f"| {name} | {t:.4f} | {s:.4f} | {s / t:.3f} | {what} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"label": args.label, "copy_gbps": bw / 1e9,
                       "device": torch.cuda.get_device_name(),
                       "rows": [dict(shape=n, contiguous_ms=t, strided_ms=s, note=w_)
                                for n, t, s, w_ in rows]}, f, indent=1)


if __name__ == "__main__":
    main()
