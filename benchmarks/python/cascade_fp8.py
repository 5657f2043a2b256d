#!/usr/bin/env python3
"""The two-level decode cascade through the wrapper, fp16 against fp8 KV.

    python3 -m benchmarks.python.cascade_fp8 [--kv f16,f8e4m3,f8e5m2] [--reps 15]

(from the repository root, on the GPU machine, cascade_mlir importable.)
The benchmarks' cascade (benchmarks.common.cascade_case: B=128 requests
sharing a 32768-token prefix, 256 own tokens each, 32/8 heads, D=128, page
16) through MultiLevelCascadeAttentionWrapper: plan() once, then
run(q, kv_cache, out=, k_scale=, v_scale=) as a serving step calls it
(fp8: k_scale 0.5, v_scale 2). Before timing, the output is compared with
exact float64 attention over the same (dequantized) cache. Two times per
cache (us per call, benchmarks.common.timing):
- "5 calls": the median of `reps` timings of 5 back-to-back calls (the
  first call's host time included, as in benchmarks.python.bench);
- "device": 20 calls queued behind a spin kernel (ahead=True), the device
  time alone.
With FlashInfer importable (`. .fi/env.sh`), its MultiLevelCascadeAttention-
Wrapper on the same inputs, timed the same way, for the cache dtypes of
--flashinfer-kv (default f16: the prebuilt FlashInfer modules carried to the
GPU machine have no fp8 prefill, which its cascade's shared level runs, and
building one there takes minutes).
Prints a markdown table and each fp8 row's ratio to the f16 row.
"""
import argparse
import sys

import torch

import cascade_mlir as cm
from benchmarks.common.cascade_case import DecodeCascade, relerr
from benchmarks.common.timing import cuda_time_us

TOL = 2e-3


def times(call, reps):
    return (cuda_time_us(call, reps=reps, warmup=3, inner=5),
            cuda_time_us(call, reps=reps, warmup=1, inner=20, ahead=True))


def ours(case, ws, reps):
    w = cm.MultiLevelCascadeAttentionWrapper(2, ws, "NHD")
    w.plan(*case.plan_args(), kv_data_type=case.kernel_cache.dtype)
    ks, vs = (1.0, 1.0) if case.kv == "f16" else (0.5, 2.0)
    out = torch.empty_like(case.q)
    err = relerr(w.run(case.q, case.kernel_cache, k_scale=ks, v_scale=vs),
                 case.reference(ks, vs))
    prog = w._engine.program
    t = times(lambda: w.run(case.q, case.kernel_cache, out=out, k_scale=ks, v_scale=vs),
              reps)
    return t, err, f"base level {prog.base_level}, {prog.num_launches(0)} launches"


def theirs(case, ws, reps):
    import flashinfer as fi
    w = fi.MultiLevelCascadeAttentionWrapper(2, ws, "NHD")
    w.plan(*case.plan_args(), kv_data_type=case.kernel_cache.dtype)
    ks, vs = (1.0, 1.0) if case.kv == "f16" else (0.5, 2.0)
    kw = {} if case.kv == "f16" else dict(k_scale=ks, v_scale=vs)
    err = relerr(w.run(case.q, case.kernel_cache, **kw), case.reference(ks, vs))
    return times(lambda: w.run(case.q, case.kernel_cache, **kw), reps), err


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kv", default="f16,f8e4m3,f8e5m2")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--flashinfer-kv", default="f16")
    a = ap.parse_args()
    try:
        import flashinfer  # noqa: F401
        have_fi = True
    except Exception as e:  # noqa: BLE001 - report why, measure ours
        have_fi = False
        print(f"(FlashInfer not importable: {e!r})")
    ws = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    fws = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    rows, ok, f16 = [], True, None
    for kv in a.kv.split(","):
        case = DecodeCascade(kv=kv)
        (t5, tdev), err, what = ours(case, ws, a.reps)
        good = err <= TOL
        ok &= good
        f16 = (t5, tdev) if kv == "f16" else f16
        fi5 = fidev = fierr = "-"
        if have_fi and kv in a.flashinfer_kv.split(","):
            try:
                (f5, fdev), e = theirs(case, fws, a.reps)
                fi5, fidev, fierr = f"{f5:.1f}", f"{fdev:.1f}", f"{e:.1e}"
            except Exception as e:  # noqa: BLE001 - a row, not a crash
                fi5 = f"error: {type(e).__name__}: {str(e)[:60]}"
        ratio = "" if f16 is None or kv == "f16" else \
            f"{t5 / f16[0]:.3f} / {tdev / f16[1]:.3f}"
        rows.append((kv, f"{t5:.1f}", f"{tdev:.1f}", f"{err:.1e}" + ("" if good else " FAIL"),
                     what, ratio, fi5, fidev, fierr))
        print(" | ".join(rows[-1]), flush=True)
        del case
        torch.cuda.empty_cache()
    print()
    print("| cache | ours, 5 calls (us) | ours, device (us) | error vs float64 | plan | "
          "ratio to f16 (5 calls / device) | FlashInfer, 5 calls | FlashInfer, device | "
          "FlashInfer error |")
    print("| --- | ---: | ---: | --- | --- | --- | ---: | ---: | --- |")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print("ALL OK" if ok else "SOME FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
