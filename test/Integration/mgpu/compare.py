#!/usr/bin/env python3
"""Issue 17's "Done when" comparisons, on the GPU machine, after the mgpu test.

    python3 test/Integration/mgpu/compare.py MGPU_LOG [--results RESULTS.md]

(from the repository root; `tools/cascade-dev gpu check mgpu` runs it.)

MGPU_LOG is the output of cascade-mgpu-test, whose "mgpu key" lines give the
key cascade (B=128 decode requests over a shared prefix of 32768 tokens, 256
own tokens each, page 16, fp16, 32/8 and 32/32 heads) compiled from IR by
cascade-opt and run as compiled host code: `planned` (the planned example,
both levels planned by the runtime shim on every call), `auto` (the
automatic-cascade example on the same batch written as a plain decode
batch), `graph run` (CUDA-graph mode: planned once, the run function called
again and again) and `graph replay` (the run function's launches captured
into a CUDA graph and replayed). Their `device_us` is the median over calls
of the summed device-event time of the call's launches (the host code
synchronises after every launch, so the gaps between launches are host
time, reported as host_us).

On the same shapes (its own random values) this script times, in this
process, benchmarks/python/bench.py's cascade row at these heads:
- the Python package's planned path: cascade_mlir's
  MultiLevelCascadeAttentionWrapper (plan once, run() per call; needs
  cascade_mlir with the kernels of these shapes);
- FlashInfer's MultiLevelCascadeAttentionWrapper when `import flashinfer`
  works (`. .fi/env.sh`);
(median of 15 CUDA-event timings of 5 back-to-back calls), their outputs
checked against float32 attention over each request's whole KV.

Prints one PASS / FAIL line per target: compiled planned within 10% of the
Python wrapper, faster than FlashInfer, the automatic cascade finds the
shared prefix (it launches the prefix level's prefill) and runs within 10%
of the explicit cascade. With --results, appends a dated section with the
rows to that markdown file. Exit status 1 if a measured target failed or the
log has no key lines; a comparison that could not be measured prints
NOT MEASURED and says why.
"""
import argparse
import datetime
import re
import sys

KEY = re.compile(r"^mgpu key (\d+)/(\d+) (planned|auto|graph run|graph replay)\s+"
                 r"device_us=([0-9.]+|nan) host_us=([0-9.]+|nan) launches=(\d+) kernels=(\S*)")
B, S, U, D, PAGE = 128, 32768, 256, 128, 16


def parse_log(path):
    """{(hq, hkv): {what: (device_us, host_us, kernels)}} of the key lines."""
    out = {}
    with open(path) as f:
        for line in f:
            m = KEY.match(line.strip())
            if m:
                heads = (int(m[1]), int(m[2]))
                kernels = [k for k in m[7].split(",") if k]
                out.setdefault(heads, {})[m[3]] = (float(m[4]), float(m[5]), kernels)
    return out


def short(kernels):
    """cascade_prefill_split_mma_f16_..._w4x1_q128 -> prefill_split_mma."""
    return " + ".join(re.sub(r"^cascade_|_(f16|bf16|f32).*$", "", k) for k in kernels)


def measure(hq, hkv):
    """(python_us, flashinfer_us, notes) for the key cascade at hq/hkv: the
    cascade row of benchmarks/python/bench.py (plan once, run() timed; FlashInfer
    when importable; outputs checked against float32 attention over each
    request's whole KV) at these heads."""
    try:
        from benchmarks.python import bench
    except Exception as ex:  # noqa: BLE001 - reported, not fatal
        return None, None, [f"Python wrapper and FlashInfer not measured: "
                            f"{type(ex).__name__}: {ex}"]
    import torch
    torch.manual_seed(0)
    try:
        res, errs = bench.cascade_row(B, S, U, HQ=hq, HKV=hkv)
    except Exception as ex:  # noqa: BLE001
        return None, None, [f"not measured: {type(ex).__name__}: {ex}"]
    notes = [f"errors vs float32 attention: {bench.fmt_err(errs)}, torch composition "
             f"{res['torch']:.1f} us",
             "FlashInfer: " + (bench.flashinfer.__version__ if bench.flashinfer
                               else f"not importable ({bench.FI_ERR})")]
    bad = [k for k, v in errs.items() if not v <= bench.TOL]
    if bad:
        notes.append(f"FAIL outputs disagree (> {bench.TOL}): {', '.join(bad)}")
    return res.get("ours"), res.get("FlashInfer"), notes


def verdict(ok, text):
    if ok is None:
        line = f"NOT MEASURED {text}"
    else:
        line = f"{'PASS' if ok else 'FAIL'} {text}"
    print(line, flush=True)
    return line


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("--results", help="markdown file to append a dated section to")
    a = ap.parse_args()
    keys = parse_log(a.log)
    with open(a.log) as f:
        lines = f.read().splitlines()
    # The test's own verdict ("N passed, M failed") and its step times.
    summary = [ln for ln in lines if re.match(r"^\d+ passed, \d+ failed$", ln)]
    steps = [ln[len("mgpu step "):] for ln in lines if ln.startswith("mgpu step ")]
    if not keys and any(line.startswith("SKIP") for line in lines):
        print(f"SKIP: the mgpu test skipped (no GPU), nothing to compare ({a.log})")
        return 0
    if not keys:
        print(f"FAIL no 'mgpu key' lines in {a.log}")
        return 1
    try:
        import torch
        gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else None
        why = None if gpu else "torch sees no CUDA device"
    except ImportError as ex:
        gpu, why = None, f"no torch ({ex})"
    rows, verdicts, failed = [], [], False
    for (hq, hkv), res in sorted(keys.items(), key=lambda kv: -kv[0][1]):
        heads = f"{hq}/{hkv}"
        need = ("planned", "auto", "graph run", "graph replay")
        if any(k not in res for k in need):
            print(f"FAIL {heads}: the log lacks {[k for k in need if k not in res]}")
            failed = True
            continue
        plan_us, auto_us = res["planned"][0], res["auto"][0]
        py_us = fi_us = None
        notes = [why] if why else []
        if gpu:
            py_us, fi_us, more = measure(hq, hkv)
            notes += more
        for n in notes:
            print(f"  {heads}: {n}", flush=True)
        failed |= any(n.startswith("FAIL") for n in notes)
        checks = [
            (None if py_us is None else plan_us <= 1.10 * py_us,
             f"{heads} compiled planned {plan_us:.1f} us within 10% of the Python wrapper "
             f"{'n/a' if py_us is None else f'{py_us:.1f} us (ratio {plan_us / py_us:.3f})'}"),
            (None if fi_us is None else plan_us < fi_us,
             f"{heads} compiled planned {plan_us:.1f} us faster than FlashInfer "
             f"{'n/a' if fi_us is None else f'{fi_us:.1f} us ({fi_us / plan_us:.2f}x)'}"),
            (any("prefill" in k for k in res["auto"][2]),
             f"{heads} auto cascade finds the shared prefix (launches "
             f"{short(res['auto'][2])})"),
            (auto_us <= 1.10 * plan_us,
             f"{heads} auto {auto_us:.1f} us within 10% of the explicit cascade "
             f"{plan_us:.1f} us (ratio {auto_us / plan_us:.3f})"),
        ]
        for ok, text in checks:
            verdicts.append(verdict(ok, text))
            failed |= ok is False
        if py_us is not None:
            # The same kernels as one CUDA graph (gaps between launches
            # included, as in the wrapper's back-to-back timing).
            replay = res["graph replay"][0]
            print(f"NOTE {heads} compiled graph replay {replay:.1f} us / Python wrapper "
                  f"{py_us:.1f} us = {replay / py_us:.3f}", flush=True)
        fmt = lambda x: "n/a" if x is None else f"{x:.1f}"  # noqa: E731
        rows.append(f"| {heads} | {plan_us:.1f} ({res['planned'][1]:.0f}) | "
                    f"{auto_us:.1f} ({res['auto'][1]:.0f}) | "
                    f"{res['graph run'][0]:.1f} ({res['graph run'][1]:.0f}) | "
                    f"{res['graph replay'][0]:.1f} | {fmt(py_us)} | {fmt(fi_us)} | "
                    f"{'n/a' if py_us is None else f'{plan_us / py_us:.3f}'} | "
                    f"{'n/a' if fi_us is None else f'{fi_us / plan_us:.2f}x'} | "
                    f"{short(res['planned'][2])} |")
    header = ("| heads q/KV | compiled planned us (host us) | compiled auto us (host us) | "
              "graph run us (host us) | graph replay us | Python wrapper us | FlashInfer us | "
              "planned / Python | FlashInfer / planned | planned launches |\n"
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    table = header + "\n" + "\n".join(rows)
    print("\n" + table, flush=True)
    if a.results and rows:
        today = datetime.date.today().isoformat()
        with open(a.results, "a") as f:
            f.write(f"\n## {today}: the key cascade compiled from IR (issue 17, "
                    "tools/cascade-dev gpu check mgpu, "
                    f"{gpu or 'GPU not seen by torch'})\n\n"
                    "B=128, shared prefix 32768, 256 own tokens each, D=128, page 16, fp16, "
                    "compiled by cascade-opt and run as compiled host code through the runtime "
                    "shim's plans (cascade-mgpu-test): device us = median over calls of the "
                    "summed device-event time of a call's launches (host us: the whole call, "
                    "plan and per-launch synchronisation included); graph replay: the run "
                    "function's launches captured into a CUDA graph. Python wrapper and "
                    "FlashInfer 0.5.3: MultiLevelCascadeAttentionWrapper, plan once, run() timed "
                    "by CUDA events (benchmarks/python/bench.py's cascade row: median of 15 "
                    "timings of 5 calls), same shapes, in the same session (compare.py).\n\n"
                    + table + "\n\n" + "\n".join(f"- {v}" for v in verdicts) + "\n"
                    + f"- cascade-mgpu-test: {summary[-1] if summary else 'no summary line'}"
                    f" (float64 checks; steps: {'; '.join(' '.join(x.split()) for x in steps)})\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
