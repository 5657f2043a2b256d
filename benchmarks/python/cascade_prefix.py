#!/usr/bin/env python3
"""When does a cascade pay? Plain decode over each request's concatenated
pages against the explicit two-level cascade and the automatic one, by
shared-prefix length (issue 43: "a cascade that never loses"), same
process.

    python3 -m benchmarks.python.cascade_prefix [--json FILE] [--kv-heads 8|32]
        [--overheads 6,12]

B=128 requests of 256 own tokens behind one shared prefix of 16 .. 1024
tokens, 32/8 heads (32/32 with --kv-heads 32), D=128, page 16, fp16. run()
of each wrapper (one plan, CUDA-graph launch), medians of CUDA-event
timings in alternating rounds. "cascade" is MultiLevelCascadeAttentionWrapper
as shipped (a cascade that would not pay runs as its plain batch:
`plain_when_cheaper`), "levels kept" the same with plain_when_cheaper =
False. The automatic cascade is planned with the runtime's cost model, at
its default `level_overhead_us` and at each of --overheads
(docs/auto-cascade.md). Marks: (c) a cascade ran, (p) the plain plan. Every
output is checked against the plain one.
"""
import argparse
import json

import torch

import cascade_mlir as cm
from benchmarks.common.timing import interleaved_time_us

B, OWN, HQ, D, PAGE = 128, 256, 32, 128, 16
PREFIXES = (16, 32, 64, 128, 256, 512, 1024)


def row(prefix, ws, dev, hkv, overheads):
    i32 = dict(dtype=torch.int32, device=dev)
    sp, own = prefix // PAGE, OWN // PAGE
    pool = torch.randn(sp + B * own, 2, PAGE, hkv, D, device=dev).half()
    q = torch.randn(B, HQ, D, device=dev).half()
    shared = torch.arange(sp, **i32)
    mine = torch.arange(sp, sp + B * own, **i32).view(B, own)
    indices = torch.cat([shared.expand(B, sp), mine], 1).reshape(-1)
    indptr = torch.arange(B + 1, **i32) * (sp + own)
    last = torch.full((B,), PAGE, **i32)

    plain = cm.BatchDecodeWithPagedKVCacheWrapper(ws)
    plain.plan(indptr, indices, last, HQ, hkv, D, PAGE)
    want = plain.run(q, pool)
    runs = {"plain": lambda: plain.run(q, pool)}
    outs = {}

    chose = {}
    for name, plain_ok in (("cascade", True), ("levels kept", False)):
        casc = cm.MultiLevelCascadeAttentionWrapper(2, ws, "NHD")
        casc.plain_when_cheaper = plain_ok
        casc.plan([torch.tensor([0, B], **i32), torch.arange(B + 1, **i32)],
                  [torch.tensor([0, sp], **i32), torch.arange(B + 1, **i32) * own],
                  [shared, mine.reshape(-1)],
                  [torch.tensor([PAGE], **i32), last], HQ, hkv, D, PAGE)
        chose[name] = not casc.runs_plain
        runs[name] = (lambda w_: lambda: w_.run(q, pool))(casc)
        outs[name] = casc.run(q, pool)

    for ov in (None,) + tuple(overheads):
        w = cm.BatchDecodeWithPagedKVCacheWrapper(ws)
        w.plan(indptr, indices, last, HQ, hkv, D, PAGE,
               auto_cascade=True if ov is None else {"level_overhead_us": ov})
        name = f"auto {'default' if ov is None else ov}"
        chose[name] = w.auto_cascade_stats["num_levels"] > 1
        runs[name] = (lambda w_: lambda: w_.run(q, pool))(w)
        outs[name] = w.run(q, pool)
    for name, o in outs.items():
        err = (o.float() - want.float()).abs().max().item()
        assert err < 2e-2, f"prefix {prefix}: {name} differs from plain by {err}"
    times = dict(zip(runs, (t / 1e3 for t in interleaved_time_us(list(runs.values()),
                                                                  rounds=7))))
    return dict(prefix=prefix, times_ms=times, cascaded=chose)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--kv-heads", type=int, default=8, choices=(8, 32))
    ap.add_argument("--overheads", default="",
                    help="comma-separated level_overhead_us values besides the default")
    args = ap.parse_args()
    overheads = [float(x) for x in args.overheads.split(",") if x]
    dev = torch.device("cuda:0")
    ws = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    rows = [row(p, ws, dev, args.kv_heads, overheads) for p in PREFIXES]
    names = list(rows[0]["times_ms"])
    print(torch.cuda.get_device_name(),
          f"B={B}, own {OWN}, {HQ}/{args.kv_heads} heads, D={D}, fp16")
    print("| prefix | plain us | " + " | ".join(f"{n} / plain" for n in names[1:]) + " |")
    print("| ---: | ---: |" + " ---: |" * (len(names) - 1))
    for r in rows:
        t = r["times_ms"]
        cells = []
        for n in names[1:]:
            mark = " (c)" if r["cascaded"][n] else " (p)"
            cells.append(f"{t[n] / t['plain']:.2f}{mark}")
        print(f"| {r['prefix']} | {t['plain'] * 1e3:.1f} | " + " | ".join(cells) + " |")
    print("(c): a cascade ran, (p): the plain plan")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "kv_heads": args.kv_heads,
                       "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
