#!/usr/bin/env python3
"""Ragged (contiguous) K/V prefill against the paged prefill, on the GPU.

    python3 -m benchmarks.python.ragged [--results benchmarks/RESULTS.md]

(from the repository root.) BatchPrefillWithRaggedKVCacheWrapper runs the
paged prefill kernels over the contiguous K/V as page-size-1 pages with the
identity page table (python_bindings/cascade_mlir/_contiguous.py); its
budget is 10% of the paged prefill's TFLOP/s on the same shapes (issue 21).
Rows: B=8 requests of qo = kv = 4096 tokens and B=64 of 512 (32 query /
8 KV heads, head_dim 128, fp16), causal and not; the paged wrapper reads
the same tokens from a page-16 pool in random page order. FlashInfer's
ragged wrapper is timed too when `import flashinfer` works (`. .fi/env.sh`).
Outputs are compared (ragged vs paged, max |a - b| / max |b| <= 4e-3)
before timing. Exit status 1 if a row disagrees or ragged < 0.9 of paged.

Custom-mask rows (same budget): the paged wrapper with `custom_mask` (an
all-ones mask, whose output must equal the unmasked prefill's, and a random
tree mask: each query sees its ancestors in a random tree over the
request's tokens, speculative decoding's tree attention) against the same
wrapper without a mask, non-causal, on the same shapes. Both count the
dense q.k pairs (a masked kernel computes every tile).
"""
import argparse
import datetime
import sys

import torch

import cascade_mlir as cm

from benchmarks.common.timing import cuda_time_us

try:
    import flashinfer
except Exception:  # noqa: BLE001 - any import failure means "not measured"
    flashinfer = None

HQ, HKV, D, PAGE = 32, 8, 128, 16
DT = torch.float16
BUDGET = 0.9


def ws():
    return torch.empty(256 << 20, dtype=torch.uint8, device="cuda")


def row(B, L, causal):
    i32 = dict(device="cuda", dtype=torch.int32)
    q = torch.randn(B * L, HQ, D, device="cuda", dtype=DT)
    k = torch.randn(B * L, HKV, D, device="cuda", dtype=DT)
    v = torch.randn(B * L, HKV, D, device="cuda", dtype=DT)
    indptr = torch.arange(B + 1, **i32) * L
    npg = L // PAGE
    perm = torch.randperm(B * npg, device="cuda")
    pool = torch.empty(B * npg, 2, PAGE, HKV, D, device="cuda", dtype=DT)
    pool[perm, 0] = k.view(B * npg, PAGE, HKV, D)
    pool[perm, 1] = v.view(B * npg, PAGE, HKV, D)
    paged = cm.BatchPrefillWithPagedKVCacheWrapper(ws())
    paged.plan(indptr, torch.arange(B + 1, **i32) * npg, perm.int(),
               torch.full((B,), PAGE, **i32), HQ, HKV, D, PAGE, causal=causal)
    ragged = cm.BatchPrefillWithRaggedKVCacheWrapper(ws())
    ragged.plan(indptr, indptr, HQ, HKV, D, causal=causal)
    out = torch.empty_like(q)
    ref = paged.run(q, pool)
    got = ragged.run(q, k, v)
    err = float((got.double() - ref.double()).abs().max() / ref.double().abs().max())
    res = {"paged": cuda_time_us(lambda: paged.run(q, pool, out=out), reps=15, warmup=3,
                                 inner=5),
           "ragged": cuda_time_us(lambda: ragged.run(q, k, v, out=out), reps=15, warmup=3,
                                  inner=5)}
    if flashinfer is not None:
        fi = flashinfer.prefill.BatchPrefillWithRaggedKVCacheWrapper(ws(), "NHD")
        fi.plan(indptr, indptr, HQ, HKV, D, causal=causal, q_data_type=DT)
        res["FlashInfer ragged"] = cuda_time_us(lambda: fi.run(q, k, v, out=out), reps=15,
                                                warmup=3, inner=5)
    pairs = L * (L + 1) / 2 if causal else L * L
    flops = 4 * B * HQ * D * pairs
    return {k: flops / t / 1e6 for k, t in res.items()}, res, err


def tree_masks(B, L):
    """Per request an [L, L] mask: query j sees j and its ancestors in a
    random tree (parent of j uniform below j)."""
    out = []
    for _ in range(B):
        parent = (torch.rand(L) * torch.arange(L)).long()
        m = torch.zeros(L, L, dtype=torch.bool)
        for j in range(L):
            if j:
                m[j] = m[parent[j]]
            m[j, j] = True
        out.append(m.reshape(-1))
    return torch.cat(out)


def masked_row(B, L, kind):
    """TFLOP/s of the paged prefill with a custom mask vs without, and the
    all-ones mask's error against the unmasked output."""
    i32 = dict(device="cuda", dtype=torch.int32)
    q = torch.randn(B * L, HQ, D, device="cuda", dtype=DT)
    npg = L // PAGE
    pool = torch.randn(B * npg, 2, PAGE, HKV, D, device="cuda", dtype=DT)
    args = (torch.arange(B + 1, **i32) * L, torch.arange(B + 1, **i32) * npg,
            torch.randperm(B * npg, device="cuda").int(), torch.full((B,), PAGE, **i32),
            HQ, HKV, D, PAGE)
    plain = cm.BatchPrefillWithPagedKVCacheWrapper(ws())
    plain.plan(*args)
    mask = torch.ones(B * L * L, dtype=torch.bool) if kind == "all-ones" else tree_masks(B, L)
    masked = cm.BatchPrefillWithPagedKVCacheWrapper(ws())
    masked.plan(*args, custom_mask=mask.to("cuda"))
    out = torch.empty_like(q)
    err = 0.0
    if kind == "all-ones":
        ref, got = plain.run(q, pool), masked.run(q, pool)
        err = float((got.double() - ref.double()).abs().max() / ref.double().abs().max())
    res = {"paged": cuda_time_us(lambda: plain.run(q, pool, out=out), reps=15, warmup=3,
                                 inner=5),
           "masked": cuda_time_us(lambda: masked.run(q, pool, out=out), reps=15, warmup=3,
                                  inner=5)}
    flops = 4 * B * HQ * D * L * L
    return {k: flops / t / 1e6 for k, t in res.items()}, err


def judge(name, err, ratio, what, failed):
    """A row's verdict: its problems appended to `failed` (outputs that
    disagree with the paged prefill's, TFLOP/s below BUDGET of it), and the
    mark its table line ends with."""
    bad = []
    if not err <= 4e-3:
        bad.append(f"{what} outputs disagree with paged")
    if ratio < BUDGET:
        bad.append(f"{what} below {BUDGET} of paged")
    failed += [f"{name}: {b}" for b in bad]
    return " FAIL" if bad else ""


def emit(table, line):
    """A table line, printed as it is measured."""
    table.append(line)
    print(line, flush=True)
    torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", help="markdown file to append a dated section to")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: the benchmarks run on a GPU")
        return 2
    torch.manual_seed(0)
    lines = ["| row | paged TFLOP/s | ragged TFLOP/s | ragged / paged | "
             "FlashInfer ragged TFLOP/s | ragged vs paged error |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    failed = []
    for B, L in ((8, 4096), (64, 512)):
        for causal in (True, False):
            tf, _, err = row(B, L, causal)
            ratio = tf["ragged"] / tf["paged"]
            fi = tf.get("FlashInfer ragged")
            name = f"B={B} qo=kv={L} {'causal' if causal else 'full'}"
            mark = judge(name, err, ratio, "ragged", failed)
            emit(lines, f"| {name} | {tf['paged']:.0f} | {tf['ragged']:.0f} | {ratio:.3f} | "
                 f"{f'{fi:.0f}' if fi else 'n/a'} | {err:.1e}{mark} |")
    mlines = ["| row | paged TFLOP/s | custom-mask TFLOP/s | masked / paged | "
              "all-ones vs unmasked error |", "| --- | ---: | ---: | ---: | ---: |"]
    for B, L in ((8, 4096), (64, 512)):
        for kind in ("all-ones", "tree"):
            tf, err = masked_row(B, L, kind)
            name, ratio = f"B={B} qo=kv={L} {kind} mask", tf["masked"] / tf["paged"]
            emit(mlines, f"| {name} | {tf['paged']:.0f} | {tf['masked']:.0f} | {ratio:.3f} | "
                 f"{err:.1e}{judge(name, err, ratio, 'custom mask', failed)} |")
    table = "\n".join(lines)
    mtable = "\n".join(mlines)
    if args.results:
        with open(args.results, "a") as f:
            f.write(f"\n## {datetime.date.today().isoformat()}: ragged K/V prefill vs paged "
                    f"(benchmarks/python/ragged.py, {torch.cuda.get_device_name()})\n\n"
                    "BatchPrefillWithRaggedKVCacheWrapper (contiguous K/V as page-size-1 "
                    "pages, identity page table) against BatchPrefillWithPagedKVCacheWrapper "
                    "(page 16, random page order) on the same tokens; 32/8 heads, D=128, "
                    "fp16; median of 15 CUDA-event timings of 5 calls.\n\n" + table + "\n"
                    "\nCustom masks: the paged wrapper (page 16, non-causal) with "
                    "plan(custom_mask=...) against itself without a mask; dense pairs "
                    "counted for both.\n\n" + mtable + "\n")
    print("FAIL: " + "; ".join(failed) if failed
          else f"ragged and custom-mask prefill within {BUDGET} of paged on every row")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
