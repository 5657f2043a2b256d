#!/usr/bin/env python3
"""Prefill with v narrower than q and k (head_dim_vo, issue 41): DeepSeek's
prefill before MLA absorption (q/k 192, v/o 128), against the same shape
with one head_dim and against torch SDPA, same process.

    python3 -m benchmarks.python.head_dim_vo [--json FILE]

Ragged (contiguous) K/V, causal, bf16, B=8 x 4096 tokens, 16 and 128 heads
(DeepSeek-V2-Lite / V3). Medians of CUDA-event timings of run() (one plan,
warm); TFLOP/s counts 2 * rows * keys * (Dqk + Dvo) per head (halved by the
causal mask). Each output is checked against torch SDPA's (float32 math on
the same bf16 inputs) before it is timed.
"""
import argparse
import json

import torch
import torch.nn.functional as F

import cascade_mlir as cm
from benchmarks.common.timing import cuda_time_us

B, L = 8, 4096


def sdpa(q, k, v):
    """Causal attention per request: [B*L, H, D] -> [B*L, H, Dv]."""
    shape = lambda x: x.view(B, L, x.shape[1], x.shape[2]).transpose(1, 2)  # noqa: E731
    o = F.scaled_dot_product_attention(shape(q), shape(k), shape(v), is_causal=True)
    return o.transpose(1, 2).reshape(B * L, q.shape[1], v.shape[2])


def case(heads, dqk, dvo, ws, dev):
    g = torch.Generator(device=dev).manual_seed(heads * 1000 + dqk + dvo)
    rnd = lambda *s: torch.randn(*s, device=dev, generator=g).to(torch.bfloat16)  # noqa: E731
    q, k, v = rnd(B * L, heads, dqk), rnd(B * L, heads, dqk), rnd(B * L, heads, dvo)
    indptr = (torch.arange(B + 1, dtype=torch.int32) * L).to(dev)
    w = cm.BatchPrefillWithRaggedKVCacheWrapper(ws)
    w.plan(indptr, indptr, heads, heads, dqk, head_dim_vo=dvo, causal=True,
           q_data_type=torch.bfloat16)
    out = w.run(q, k, v)
    # The first request against SDPA in float32 (the rest is the same kernel
    # on other rows).
    sub = lambda x: x[: L].view(1, L, x.shape[1], x.shape[2]).transpose(1, 2).float()  # noqa: E731
    want = F.scaled_dot_product_attention(sub(q), sub(k), sub(v), is_causal=True)
    err = (out[:L].float() - want.transpose(1, 2)[0]).abs().max().item()
    assert err < 2e-2, f"{heads}h {dqk}/{dvo}: max error {err} against SDPA"
    ours = cuda_time_us(lambda: w.run(q, k, v, out=out)) / 1e3
    try:
        ref = cuda_time_us(lambda: sdpa(q, k, v)) / 1e3
    except RuntimeError as e:  # no SDPA backend for this shape
        print(f"torch SDPA: {e}")
        ref = None
    flops = 2 * B * heads * L * L * (dqk + dvo) * 0.5
    return dict(shape=f"H{heads} {dqk}/{dvo}", ms=ours, tflops=flops / (ours * 1e-3) / 1e12,
                sdpa_ms=ref, err=err)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    args = ap.parse_args()
    dev = torch.device("cuda:0")
    ws = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    rows = [case(h, dqk, dvo, ws, dev)
            for h in (16, 128) for dqk, dvo in ((192, 128), (192, 192), (128, 128))]
    print(torch.cuda.get_device_name())
    print("| heads, Dqk/Dvo | ms | TFLOP/s | torch SDPA ms | SDPA / ours | max err |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        s = r["sdpa_ms"]
        sdpa_ms = "-" if s is None else f"{s:.3f}"
        ratio = "-" if s is None else f"{s / r['ms']:.2f}"
        print(f"| {r['shape']} | {r['ms']:.3f} | {r['tflops']:.0f} | {sdpa_ms} | {ratio} | "
              f"{r['err']:.1e} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
