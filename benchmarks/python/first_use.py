#!/usr/bin/env python3
"""Time to the first kernel of configurations that no kernel set has, on
the GPU, compiled on first use (issue 42), and their results against float64.

    python3 -m benchmarks.python.first_use [--json FILE]

(from the repository root, with python_bindings/tests/gpu on sys.path for
the float64 reference.) Each configuration gets an empty kernel cache
(CASCADE_MLIR_CACHE_DIR), no prebuilt bundle (CASCADE_MLIR_KERNEL_PATH and
the package's own set hidden), and is timed three ways:

- cold: plan() that compiles every kernel group of the plan (the package's
  compiler module, or the self-contained bin/cascade-compile), assembles the
  cubin (ptxas, where the toolkit is) and loads the module, then one run();
- disk: the same in a fresh device context of this process (the bundle found
  in the cache, loaded again);
- hot: plan() again with the kernels already loaded.

The compiler used is reported (module / executable). Exit status 1 if an
output differs from the float64 reference beyond the dtype's tolerance.

`--breakdown [--repeat N] [--json FILE]` (the self-contained compiler and
ptxas needed) times the parts of a cold start per configuration instead
(medians of N): cascade-compile of the bundle (one PTX file per kernel, the
kernels on parallel threads), one ptxas per PTX file at once, the module
load of the cubins, and the load of the PTX alone (the driver's JIT: what a
machine without the toolkit pays); beside them the single-file layout
(--ptx-per-kernel=false: one thread, one ptxas), the one before issue 42's
per-kernel split.
"""
import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import torch

import cascade_mlir as cm
from cascade_mlir import _gpu, _runtime, kernels

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python_bindings",
                                "tests", "gpu"))
from gpu_support import TOL, attention_ref, merge_ref, random_batch, rel_err  # noqa: E402

#: Configurations outside every kernel set (issue 42's examples).
CONFIGS = [
    dict(name="prefill causal bf16 RoPE D128 32/8 p16", decode=False, causal=True,
         q="bfloat16", kv="bfloat16", hq=32, hkv=8, d=128, page=16,
         score=dict(pos_encoding_mode="ROPE_LLAMA", rope_theta=5e5)),
    dict(name="prefill causal f16 D256 16/4 p16", decode=False, causal=True,
         q="float16", kv="float16", hq=16, hkv=4, d=256, page=16, score={}),
    dict(name="decode bf16 fp8-KV D96 40/8 p32 window cap sink", decode=True, causal=False,
         q="bfloat16", kv="float8_e4m3fn", hq=40, hkv=8, d=96, page=32,
         score=dict(window_left=200, logits_soft_cap=30.0), sinks=True),
    dict(name="prefill bf16 fp8-KV D96 40/8 p32 window cap sink", decode=False,
         causal=True, q="bfloat16", kv="float8_e4m3fn", hq=40, hkv=8, d=96, page=32,
         score=dict(window_left=200, logits_soft_cap=30.0), sinks=True),
]


def fresh_device():
    """Forget every loaded bundle (the next plan loads them again)."""
    _gpu._groups.clear()
    _gpu._devices.clear()


def one(cfg, dev):
    B = 24
    qd, kd = getattr(torch, cfg["q"]), getattr(torch, cfg["kv"])
    num_pages = 1024
    indptr, indices, last = random_batch(B, cfg["page"], 12, num_pages, empty=(3,))
    cache = torch.randn(num_pages, 2, cfg["page"], cfg["hkv"], cfg["d"], device=dev)
    cache = (cache * 0.5).to(kd)
    if cfg["decode"]:
        qo = torch.arange(B + 1, dtype=torch.int32)
    else:
        lens = torch.randint(1, 9, (B,))
        kv_len = torch.tensor([(int(indptr[i + 1] - indptr[i]) - 1) * cfg["page"] +
                               int(last[i]) if indptr[i + 1] > indptr[i] else 0
                               for i in range(B)])
        lens = torch.minimum(lens, kv_len.clamp_min(1))
        qo = torch.cat([torch.zeros(1, dtype=torch.int64), lens.cumsum(0)]).int()
    q = torch.randn(int(qo[-1]), cfg["hq"], cfg["d"], device=dev).to(qd)
    sinks = (torch.rand(cfg["hq"], device=dev) * 4 - 2).float() if cfg.get("sinks") else None
    ws = torch.empty(128 << 20, dtype=torch.uint8, device=dev)

    def plan_run():
        if cfg["decode"]:
            w = cm.BatchDecodeWithPagedKVCacheWrapper(ws)
            w.plan(indptr.to(dev), indices.to(dev), last.to(dev), cfg["hq"], cfg["hkv"],
                   cfg["d"], cfg["page"], q_data_type=qd, kv_data_type=kd, **cfg["score"])
        else:
            w = cm.BatchPrefillWithPagedKVCacheWrapper(ws)
            w.plan(qo.to(dev), indptr.to(dev), indices.to(dev), last.to(dev), cfg["hq"],
                   cfg["hkv"], cfg["d"], cfg["page"], causal=cfg["causal"],
                   q_data_type=qd, kv_data_type=kd, **cfg["score"])
        out = w.run(q, cache, sinks=sinks, return_lse=True)
        torch.cuda.synchronize()
        return out

    times = {}
    for phase in ("cold", "disk", "hot"):
        if phase == "disk":
            fresh_device()
        t = time.perf_counter()
        o, lse = plan_run()
        times[phase] = time.perf_counter() - t
    s = cfg["score"]
    eo, el = attention_ref(q, cache, "NHD", qo, indptr, indices, last, cfg["page"],
                           causal=cfg["causal"],
                           logits_soft_cap=s.get("logits_soft_cap", 0.0),
                           window_left=s.get("window_left", -1),
                           pos_encoding=s.get("pos_encoding_mode", "NONE"),
                           rope_theta=s.get("rope_theta", 1e4))
    if sinks is not None:
        s2 = (sinks.double() / math.log(2.0))[None, :].expand_as(el)
        eo, el = merge_ref([(eo, el), (torch.zeros_like(eo), s2)])
    err = max(rel_err(o, eo), rel_err(lse, el))
    return times, err, TOL[cfg["q"]]


def key_of(cfg):
    """The bundle key of a configuration's (only) kernel group."""
    c = cm.AttentionConfig.make(
        q_dtype=cfg["q"], kv_dtype=cfg["kv"], head_dim=cfg["d"], num_qo_heads=cfg["hq"],
        num_kv_heads=cfg["hkv"], page_size=cfg["page"], **cfg["score"])
    group = kernels.Group(decode=cfg["decode"], causal=cfg["causal"],
                          state_inputs=("sinks",) if cfg.get("sinks") else ())
    return kernels.attention_key(c, group)


def _timed(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - t


def _ptxas_all(ptxas, files, chip):
    """Wall time of one ptxas per file, all at once (as kernels.py runs
    them), and each file's own time in that run."""
    t = time.perf_counter()
    procs = [(f, time.perf_counter(), subprocess.Popen(
        [ptxas, f"-arch={chip}", f, "-o", f[:-len(".ptx")] + f".{chip}.cubin"]))
        for f in files]
    own = {}
    for f, start, p in procs:
        if p.wait() != 0:
            raise RuntimeError(f"ptxas failed on {f}")
        own[os.path.basename(f)] = time.perf_counter() - start
    return time.perf_counter() - t, own


def breakdown(chip="sm_90a", repeat=3):
    """Per configuration, the medians of `repeat` cold starts: the old
    layout (every kernel in kernels.ptx, compiled and assembled as one) and
    the per-kernel one (each kernel lowered on its own thread, one ptxas per
    kernel at once), the cubins' module load and the PTX's (driver JIT)."""
    exe, ptxas = kernels.compiler_executable(), kernels._ptxas()
    if exe is None or ptxas is None:
        print("--breakdown needs cascade-compile and ptxas")
        return 1
    print(f"{os.cpu_count()} CPUs; medians of {repeat}; first use = compile + ptxas + load")
    rows = []
    for cfg in CONFIGS:
        key = key_of(cfg)
        runs = []
        for _ in range(repeat):
            r = {}
            with tempfile.TemporaryDirectory() as root:
                r["compile_one"] = _timed([exe, "--out", os.path.join(root, "one"), "--chip",
                                           chip, "-j=1", "--ptx-per-kernel=false", key])
                one = os.path.join(root, "one", chip, key)
                r["ptxas_one"] = _timed([ptxas, f"-arch={chip}", os.path.join(one, "kernels.ptx"),
                                         "-o", os.path.join(one, f"kernels.{chip}.cubin")])
                r["compile"] = _timed([exe, "--out", root, "--chip", chip, "-j=1", key])
                b = os.path.join(root, chip, key)
                ptx = kernels._ptx_files(b)
                r["ptxas"], own = _ptxas_all(ptxas, ptx, chip)
                r["ptxas_max_file"] = max(own.values())
                r["kernels"] = len(ptx)
                t = time.perf_counter()
                _runtime.Device(0).add_bundle(b, key + "#cubin")
                r["load"] = time.perf_counter() - t
                ptx_only = os.path.join(root, "ptx-only")
                shutil.copytree(b, ptx_only, ignore=shutil.ignore_patterns("*.cubin"))
                t = time.perf_counter()
                _runtime.Device(0).add_bundle(ptx_only, key + "#ptx")
                r["jit"] = time.perf_counter() - t
                r["first_use"] = r["compile"] + r["ptxas"] + r["load"]
                r["first_use_one"] = r["compile_one"] + r["ptxas_one"] + r["load"]
            runs.append(r)
        m = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        rows.append(dict(config=cfg["name"], key=key, **m))
        print(f"{cfg['name']:<50} first use {m['first_use']:.3f} s (kernels.ptx layout "
              f"{m['first_use_one']:.3f} s): compile {m['compile']:.3f} s "
              f"(one file {m['compile_one']:.3f}), ptxas {m['ptxas']:.3f} s for "
              f"{m['kernels']:.0f} files (largest {m['ptxas_max_file']:.3f}; one file "
              f"{m['ptxas_one']:.3f}), load {m['load'] * 1e3:.1f} ms, "
              f"driver JIT instead {m['jit']:.3f} s")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    ap.add_argument("--breakdown", action="store_true")
    ap.add_argument("--repeat", type=int, default=3, help="--breakdown: cold starts per "
                    "configuration (medians)")
    args = ap.parse_args()
    if args.breakdown:
        rows = breakdown(repeat=args.repeat)
        if rows == 1:
            return 1
        if args.json:
            with open(args.json, "w") as f:
                json.dump(dict(gpu=torch.cuda.get_device_name(0), cpus=os.cpu_count(),
                               rows=rows), f, indent=1)
        return 0
    dev = torch.device("cuda:0")
    which = "module" if kernels._compiler() is not None else \
        f"executable {kernels.compiler_executable()}"
    print(f"compiler: {which}; GPU: {torch.cuda.get_device_name(0)}")
    rows, bad = [], 0
    for cfg in CONFIGS:
        with tempfile.TemporaryDirectory() as cache:
            os.environ["CASCADE_MLIR_CACHE_DIR"] = cache
            os.environ["CASCADE_MLIR_KERNEL_PATH"] = ""
            kernels._package_kernels = lambda: os.path.join(cache, "none")  # type: ignore
            fresh_device()
            times, err, tol = one(cfg, dev)
        ok = err <= tol
        bad += not ok
        rows.append(dict(config=cfg["name"], **{k: round(v, 4) for k, v in times.items()},
                         rel_err=err, tol=tol, ok=ok))
        print(f"{cfg['name']:<50} cold {times['cold']:6.2f} s  disk "
              f"{times['disk'] * 1e3:7.1f} ms  hot {times['hot'] * 1e3:6.1f} ms  "
              f"err {err:.2e} (tol {tol:.0e}) {'ok' if ok else 'FAIL'}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(compiler=which, gpu=torch.cuda.get_device_name(0), rows=rows),
                      f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
