"""Host overhead of run() for a pre-planned 2-level cascade, and CUDA-graph
capture + replay after replans with new lengths (docs/python.md).

The configuration is the one of FlashInfer's MultiLevelCascadeAttentionWrapper
example (64 query / 8 KV heads, head_dim 128, page 16, fp16, batch 7, a
512-page shared prefix). plan() runs once; then N back-to-back run() calls
are timed on the host with time.perf_counter_ns and no synchronisation (the
GPU keeps up: N * launches stays below the launch queue's depth). What one
call costs is broken down by timing its parts on their own: the Python call
into the bound method, torch.empty_like for the output, the argument checks,
and the launches (the same call with out= given, so no allocation).

CUDA graphs: run() is captured once with use_cuda_graph=True, then plan() is
called again with new lengths (shared prefix and per-request pages) and the
graph replayed; every replay is checked against a float64 reference.

    python3 -m benchmarks.python.host_overhead [--calls 200] [--flashinfer]

(from the repository root). GPU times: benchmarks.common.timing, the median
of 7 CUDA-event timings of N back-to-back calls after warm-up, per call (us).
The every-entry-point table takes the entry points and torch's own ops in
turn within each of its repetitions, so that a slower phase of the host
weighs on all of them alike, and gives each entry point's ratio to
torch.ops.aten.add.out (pin the process to one core, `taskset -c N`, for
steadier numbers).
The torch tensors are read and allocated through cascade_mlir._torch_bridge
where the package has one for this torch (the first lines say; set
CASCADE_MLIR_NO_TORCH_BRIDGE=1 to measure without it).
"""
import argparse
import contextlib
import math
import statistics
import sys
import time

import torch

import cascade_mlir as cm

from benchmarks.common.timing import cuda_time_us

HQ, HKV, D, PAGE, B = 64, 8, 128, 16, 7


def levels(shared_pages, unique_counts, last, base=0):
    unique_counts = list(unique_counts)
    indptr = [0]
    for c in unique_counts:
        indptr.append(indptr[-1] + c)
    return ([torch.tensor([0, B], dtype=torch.int32), torch.arange(B + 1, dtype=torch.int32)],
            [torch.tensor([0, shared_pages], dtype=torch.int32),
             torch.tensor(indptr, dtype=torch.int32)],
            [torch.arange(shared_pages, dtype=torch.int32) + base,
             torch.arange(indptr[-1], dtype=torch.int32) + base + shared_pages],
            [torch.tensor([PAGE], dtype=torch.int32), torch.tensor(last, dtype=torch.int32)])


def reference(q, cache, lv):
    """float64 attention over the concatenated KV of each request."""
    qo, kv_indptr, kv_indices, last = lv
    group = HQ // HKV
    c = cache.double()
    out = torch.empty(B, HQ, D, dtype=torch.float64, device=q.device)
    shared = kv_indices[0].long()
    ind = kv_indptr[1].tolist()
    for b in range(B):
        pages = torch.cat([shared, kv_indices[1][ind[b]:ind[b + 1]].long()]).to(q.device)
        n_unique = ind[b + 1] - ind[b]
        n = shared.numel() * PAGE - (PAGE - int(last[0][0])) if n_unique == 0 else \
            (pages.numel() - 1) * PAGE + int(last[1][b])
        k = c[pages, 0].reshape(-1, HKV, D)[:n].repeat_interleave(group, 1)
        v = c[pages, 1].reshape(-1, HKV, D)[:n].repeat_interleave(group, 1)
        s = torch.einsum("hd,thd->ht", q[b].double(), k) / math.sqrt(D)
        out[b] = torch.einsum("ht,thd->hd", torch.softmax(s, -1), v)
    return out


def rel_err(got, ref):
    return ((got.double() - ref).abs().max() / ref.abs().max()).item()


def host_us(fn, calls, reps=7):
    """Median over reps of the host time per call of `calls` back-to-back
    calls, no synchronisation inside (the GPU drains between reps)."""
    res = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        res.append((time.perf_counter_ns() - t) / calls / 1e3)
    torch.cuda.synchronize()
    return statistics.median(res)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--flashinfer", action="store_true",
                    help="also time FlashInfer's run() on the same inputs")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: this measures GPU launches")
        return 2
    dev = torch.device("cuda:0")
    torch.manual_seed(int(time.time()))
    unique = [17, 12, 15, 4, 18, 34, 28]
    last = [1, 7, 14, 4, 3, 1, 16]
    total = 512 + sum(unique)
    cache = torch.randn(4096, 2, PAGE, HKV, D, device=dev).half()
    q = torch.randn(B, HQ, D, device=dev).half()
    ws = torch.empty(128 << 20, dtype=torch.uint8, device=dev)
    w = cm.MultiLevelCascadeAttentionWrapper(2, ws, "NHD")
    lv = levels(512, unique, last)
    w.plan(*lv, HQ, HKV, D, PAGE)
    o = w.run(q, cache)
    torch.cuda.synchronize()
    err = rel_err(o, reference(q, cache, lv))
    launches = w._engine.program.num_launches(0)
    print(f"2-level cascade {HQ}/{HKV} D{D} page {PAGE} B{B}, {total} pages, "
          f"{launches} kernel launches per run(); error vs float64 {err:.2e}")
    from cascade_mlir import _frameworks
    print(f"torch bridge (cascade_mlir._torch_bridge): {_frameworks.TORCH_BRIDGE_STATUS}")

    out = torch.empty_like(q)
    lse = torch.empty(B, HQ, device=dev)
    prog = w._engine.program
    print(f"run() launches its kernels as one CUDA graph: {prog.last_run_used_graph}")

    # The graph's kernel nodes follow the caller's tensors: alternate two
    # queries and two outputs, graph launch and kernel by kernel.
    qs = [q, torch.randn_like(q)]
    refs = [reference(x, cache, lv) for x in qs]
    ok = True
    for graph in (True, False):
        prog.graph_launch = graph
        outs = [torch.full_like(q, math.nan), torch.full_like(q, math.nan)]
        for i in range(4):
            w.run(qs[i % 2], cache, out=outs[i % 2])
        torch.cuda.synchronize()
        errs = [rel_err(outs[i], refs[i]) for i in range(2)]
        good = max(errs) <= 2e-3 and prog.last_run_used_graph == graph
        ok &= good
        print(f"  {'graph launch' if graph else 'one by one  '}: alternating q/out, "
              f"errors {errs[0]:.2e} / {errs[1]:.2e} {'ok' if good else 'FAIL'}")
    prog.graph_launch = True
    outs = [torch.empty_like(q), torch.empty_like(q)]
    flip = [0]

    def alternate():
        flip[0] ^= 1
        w.run(qs[flip[0]], cache, out=outs[flip[0]])

    def one_by_one():
        prog.graph_launch = False
        w.run(q, cache, out=out)
        prog.graph_launch = True
    probe = cm.runtime._probe
    cur_stream = torch._C._cuda_getCurrentRawStream
    n = args.calls
    rows = [
        ("run(q, kv)  (output allocated by torch)", lambda: w.run(q, cache)),
        ("run(q, kv, out=out)", lambda: w.run(q, cache, out=out)),
        ("run(q, kv, out=out, lse=lse)", lambda: w.run(q, cache, out=out, lse=lse)),
        ("run(q, kv, out=out), q and out alternating (nodes updated)", alternate),
        ("run(q, kv, out=out), kernels one by one (no graph)", one_by_one),
        ("  part: the launches alone (Program._relaunch, no checks)", prog._relaunch),
        ("  part: probing one torch tensor (_runtime._probe, + its dict)", lambda: probe(q)),
        ("  part: the same through torch's Python API (bridge=False)",
         lambda: probe(q, "q", False)),
        ("  part: torch's current stream (_cuda_getCurrentRawStream)",
         lambda: cur_stream(0)),
        ("  part: torch.empty_like(q)", lambda: torch.empty_like(q)),
        ("  part: a Python call of a no-op", lambda: None),
        ("  reference: one torch launch, torch.add(a, b, out=c)",
         lambda: torch.add(out, out, out=out)),
    ]
    print(f"\nhost time per call, median of 7 x {n} back-to-back calls, no sync:")
    results = {}
    for name, fn in rows:
        w.run(q, cache, out=out)  # _relaunch repeats this call's launches
        for _ in range(20):
            fn()
        results[name] = host_us(fn, n)
        print(f"  {name:<56} {results[name]:7.2f} us")
    del prog
    if args.flashinfer:
        try:
            import flashinfer
            fw = flashinfer.MultiLevelCascadeAttentionWrapper(2, torch.empty_like(ws), "NHD")
            fw.plan(*[[t.to(dev) for t in x] for x in lv], HQ, HKV, D, PAGE)
            fo = fw.run(q, cache)
            torch.cuda.synchronize()
            print(f"  FlashInfer 0.5.3 run(q, kv) {'':<28} "
                  f"{host_us(lambda: fw.run(q, cache), n):7.2f} us"
                  f"  (its output vs ours: {rel_err(fo, o.double()):.2e})")
        except Exception as e:  # noqa: BLE001 - report and go on
            print(f"  FlashInfer: not measured ({type(e).__name__}: {e})")

    # GPU time per run() for scale (CUDA events, back to back).
    t_run = cuda_time_us(lambda: w.run(q, cache, out=out), reps=7, inner=n)
    print(f"  GPU time per run() (CUDA events, back to back){'':<10} {t_run:7.2f} us")

    # --- CUDA graph: capture, replan with new lengths, replay ----------------
    print("\nCUDA graph: capture run(), then plan() with new lengths and replay")
    gw = cm.MultiLevelCascadeAttentionWrapper(2, torch.empty_like(ws), "NHD", use_cuda_graph=True)
    gw.plan(*levels(512, unique, last), HQ, HKV, D, PAGE)
    gw.run(q, cache, out=out, lse=lse)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        gw.run(q, cache, out=out, lse=lse)
    captured_direct = not gw._engine.program.last_run_used_graph
    ok &= captured_direct
    print(f"  run() under capture launched kernel by kernel: {captured_direct}")
    worst = 0.0
    for shared, uniq, lst in ((300, [40, 1, 2, 90, 0, 7, 33], [16, 1, 5, 9, 1, 2, 3]),
                              (700, [3, 3, 3, 3, 3, 3, 3], [2, 2, 2, 2, 2, 2, 2]),
                              (64, [100, 90, 80, 70, 60, 50, 40], [8, 9, 10, 11, 12, 13, 14])):
        nlv = levels(shared, uniq, lst, base=1000)
        gw.plan(*nlv, HQ, HKV, D, PAGE)
        q.copy_(torch.randn_like(q))
        out.fill_(math.nan)
        g.replay()
        torch.cuda.synchronize()
        err = rel_err(out, reference(q, cache, nlv))
        worst = max(worst, err)
        good = err <= 2e-3
        ok &= good
        print(f"  replan shared={shared} pages, unique={uniq}: replay error "
              f"{err:.2e} {'ok' if good else 'FAIL'}")
    t_replay = cuda_time_us(g.replay, reps=7, inner=n)
    print(f"  replay GPU time {t_replay:.2f} us; "
          f"graph replay after replan: {'PASS' if ok else 'FAIL'} (worst {worst:.2e})")
    launch = results["  part: the launches alone (Program._relaunch, no checks)"]
    print(f"  -> {launches} kernels in one graph launch: {launch:.2f} us; "
          f"checks, probing and the stream: "
          f"{results['run(q, kv, out=out)'] - launch:.2f} us")
    target = results["run(q, kv, out=out)"]
    ok &= entry_points(dev, n)
    print(f"\nrun() host overhead (out= given): {target:.2f} us "
          f"(target <= 10 us: {'met' if target <= 10 else 'NOT met'}); "
          f"without out=: {results['run(q, kv)  (output allocated by torch)']:.2f} us")
    return 0 if ok else 1


def entry_points(dev, n):
    """Host time of every other run()/merge entry point, back to back, next
    to the GPU time of the same call (CUDA events): the merges at the
    issue's size (L=8192, H=32, D=128, fp16), batch decode / prefill and
    the torch custom ops. An entry point is GPU-bound back to back when
    its host time is below its GPU time; the target is <= 10 us each."""
    L, H, D = 8192, 32, 128
    va, vb = torch.randn(L, H, D, device=dev).half(), torch.randn(L, H, D, device=dev).half()
    sa, sb = torch.randn(L, H, device=dev), torch.randn(L, H, device=dev)
    mask = torch.rand(L, device=dev) > 0.5
    vs, ss = torch.randn(L, 2, H, D, device=dev).half(), torch.randn(L, 2, H, device=dev)
    ws = torch.empty(128 << 20, dtype=torch.uint8, device=dev)
    cache = torch.randn(4096, 2, PAGE, HKV, D, device=dev).half()
    b = 64
    indptr = torch.arange(b + 1, dtype=torch.int32) * 16
    last = torch.full((b,), 5, dtype=torch.int32)
    d = cm.BatchDecodeWithPagedKVCacheWrapper(ws)
    d.plan(indptr, torch.arange(int(indptr[-1]), dtype=torch.int32), last, HQ, HKV, D, PAGE)
    qd = torch.randn(b, HQ, D, device=dev).half()
    p = cm.BatchPrefillWithPagedKVCacheWrapper(torch.empty_like(ws))
    p.plan(torch.arange(b + 1, dtype=torch.int32) * 4, indptr,
           torch.arange(int(indptr[-1]), dtype=torch.int32), last, HQ, HKV, D, PAGE,
           causal=True)
    qp = torch.randn(4 * b, HQ, D, device=dev).half()
    od = torch.empty_like(qd)
    rows = [
        ("merge_state (L=8192 H=32 D=128)", lambda: cm.merge_state(va, sa, vb, sb)),
        ("merge_state_in_place", lambda: cm.merge_state_in_place(va, sa, vb, sb)),
        ("merge_state_in_place(mask)",
         lambda: cm.merge_state_in_place(va, sa, vb, sb, mask=mask)),
        ("merge_states (2 states)", lambda: cm.merge_states(vs, ss)),
        ("decode run (B=64, 256 tokens)", lambda: d.run(qd, cache)),
        ("prefill run (B=64 x 4 rows, causal)", lambda: p.run(qp, cache)),
    ]
    try:
        from cascade_mlir import torch_ops
        h, hp = torch_ops.register(d), torch_ops.register(p)
        print(f"  torch ops' C++ kernels: {torch_ops.CPP_KERNELS}")
        rows += [
            ("torch.ops.cascade_mlir.run (decode)",
             lambda: torch.ops.cascade_mlir.run(h, qd, cache, None)),
            ("torch.ops.cascade_mlir.run (prefill)",
             lambda: torch.ops.cascade_mlir.run(hp, qp, cache, None)),
            ("  the same (decode), its Python kernel",
             PythonKernel(h, lambda: torch.ops.cascade_mlir.run(h, qd, cache, None))),
            ("torch.ops.cascade_mlir.merge_state",
             lambda: torch.ops.cascade_mlir.merge_state(va, sa, vb, sb)),
            ("torch.ops.cascade_mlir.run_out (decode)",
             lambda: torch.ops.cascade_mlir.run_out(h, qd, cache, None, od, None)),
            ("torch.ops.cascade_mlir.merge_state_in_place",
             lambda: torch.ops.cascade_mlir.merge_state_in_place(va, sa, vb, sb, None)),
            ("torch.ops.cascade_mlir.merge_states",
             lambda: torch.ops.cascade_mlir.merge_states(vs, ss)),
        ]
    except Exception as e:  # noqa: BLE001 - report and go on
        print(f"  torch ops: not measured ({type(e).__name__}: {e})")
    refs = dispatcher_refs(va, sa)
    reps = 15
    host = interleaved_host_us(rows + refs, n, reps)
    floor = host[refs[0][0]]
    print(f"\nevery entry point: host us per call (median of {reps} x {n}, no sync; "
          "entry points and torch's own ops interleaved, so that a slower phase of the "
          "host weighs on all of them) | GPU us | ratio to torch.ops.aten.add.out")
    over = []
    for name, fn in rows:
        with timing_context(fn):
            gpu = cuda_time_us(fn, reps=7, inner=n)
        us = statistics.median(host[name])
        ratio = statistics.median(a / b for a, b in zip(host[name], floor))
        bound = "GPU-bound" if us < gpu else "HOST-BOUND"
        if us > 10 and not name.startswith(" "):  # not the references
            over.append(f"{name} {us:.2f} us")
        print(f"  {name:<42} {us:7.2f} | {gpu:8.2f}  {bound:<10} | {ratio:5.2f}"
              f"{'' if us <= 10 else '  (over 10 us)'}")
    print("every entry point's host time <= 10 us: "
          + ("met" if not over else "NOT met (" + "; ".join(over) + ")"))
    print(f"\nreference: torch's dispatcher from Python, host us per call "
          f"(median of {reps} x {n}, no sync, interleaved with the above)")
    for name, _ in refs:
        print(f"  {name:<58} {statistics.median(host[name]):7.2f}")
    allocation_parts(va, sa, n)
    return not over


def interleaved_host_us(rows, calls, reps):
    """Per row, `reps` host times per call of `calls` back-to-back calls (no
    synchronisation inside; the GPU drains between them), the rows taken in
    turn within each repetition."""
    res = {name: [] for name, _ in rows}
    for name, fn in rows:  # warm-up
        with timing_context(fn):
            for _ in range(10):
                fn()
    for _ in range(reps):
        for name, fn in rows:
            with timing_context(fn):
                torch.cuda.synchronize()
                t = time.perf_counter_ns()
                for _ in range(calls):
                    fn()
                res[name].append((time.perf_counter_ns() - t) / calls / 1e3)
    torch.cuda.synchronize()
    return res


def timing_context(fn):
    """What `fn` is timed inside: a PythonKernel row itself, else nothing."""
    return fn if isinstance(fn, PythonKernel) else contextlib.nullcontext()


class PythonKernel:
    """A torch.ops run call of handle `h`, timed inside `with` it: with the
    handle's runner unbound, the op's Python kernel (what it cost before its
    C++ kernel)."""

    def __init__(self, h, fn):
        self.h, self.fn = h, fn

    def __call__(self):
        return self.fn()

    def __enter__(self):
        from cascade_mlir import torch_ops
        self.ctx = torch_ops._without_runner(self.h)
        return self.ctx.__enter__()

    def __exit__(self, *exc):
        return self.ctx.__exit__(*exc)


def dispatcher_refs(va, sa):
    """What a torch.ops call costs whatever its kernel: torch's own ops
    called the way the cascade_mlir ops are (torch.ops.<ns>.<op>(...) from
    Python, through the dispatcher), one launching a kernel (the first: the
    ratios' unit), one allocating its output too, one launching nothing."""
    out = torch.empty_like(sa)
    return [
        ("torch.ops.aten.add.out (one kernel launch)",
         lambda: torch.ops.aten.add.out(sa, sa, out=out)),
        ("torch.ops.aten.add.Tensor (+ its output allocation)",
         lambda: torch.ops.aten.add.Tensor(sa, sa)),
        ("torch.ops.aten.alias.default (no launch)", lambda: torch.ops.aten.alias.default(va)),
    ]


def allocation_parts(va, sa, n):
    """What the merges' output allocation costs, and the alternative of one
    allocation for both outputs (a float32 buffer seen as v and s: three
    views), to weigh it on this machine's host."""
    L, H, D = va.shape
    f32 = torch.float32

    def one_buffer():
        buf = torch.empty(L * H * D // 2 + L * H, dtype=f32, device=va.device)
        return (buf.view(va.dtype).as_strided((L, H, D), (H * D, D, 1)),
                buf.as_strided((L, H), (H, 1), L * H * D // 2))

    parts = [
        ("merge_state's outputs: empty_like(v_a), empty_like(s_a)",
         lambda: (torch.empty_like(va), torch.empty_like(sa))),
        ("one float32 buffer viewed as v and s (1 alloc + 3 views)", one_buffer),
        ("torch.empty_strided((L, H), (H, 1), float32)",
         lambda: torch.empty_strided((L, H), (H, 1), dtype=f32, device=va.device)),
        ("torch.empty((L, H), dtype=float32, device=)",
         lambda: torch.empty((L, H), dtype=f32, device=va.device)),
        ("one view (as_strided)", lambda: va.as_strided((L, H, D), (H * D, D, 1))),
    ]
    print(f"\nallocation parts: host us per call (median of 7 x {n}, no sync)")
    for name, fn in parts:
        for _ in range(10):
            fn()
        print(f"  {name:<58} {host_us(fn, n):7.2f}")


if __name__ == "__main__":
    sys.exit(main())
