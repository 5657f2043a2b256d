#!/usr/bin/env python3
"""Decode + merge benchmark of the cascade kernels (GPU machine).

Usage, from the repository root, with the runtime's Python module
cascade_mlir importable (the split-KV decode plans are the runtime's):
  python3 -m benchmarks.decode_merge.bench BUNDLE_DIR [--reps N] [--fp8-bundle DIR]
      [--fp8-families rows,mma_sync] [--shapes 64x4096,16x32768,256x1024]
BUNDLE_DIR: kernels.ptx + manifest.json from
  cascade-opt test/Integration/gpu/kernels.mlir --cascade-to-ptx="bundle-dir=BUNDLE_DIR" -o /dev/null
--fp8-bundle (from test/Integration/gpu/fp8_kernels.mlir; `tools/cascade-dev
gpu prepare integration`'s fp8-bundle/) adds the decode rows with an fp8
e4m3 cache (k_scale 0.5,
v_scale 2), against FlashInfer's fp8 decode on the same cache, once per
kernel configuration that bundle holds for the shape: selection's (mma_sync,
64-key tiles over 4 warps, 4 stages) and each of gen_fp8_kernels.py's
FORCED_DECODE (rows and other mma_sync tiles and stages; --fp8-families
picks the families). A closing "fp8 summary" table puts, per
shape, the fraction of copy bandwidth of each (the faster of plain and
split-KV) next to FlashInfer's fp8 and f16 decode on the same caches.
Per row: median device-event time (us; benchmarks.common.timing, our
launches replayed from a CUDA graph of 10 copies), GB/s of (inputs read once + outputs
written once), and the fraction of a device-to-device copy's bandwidth
(read + write) measured in the same run. Where torch is importable the same
operation composed of torch ops is timed too (decode: SDPA over a contiguous
copy of each request's KV, made outside the timing), and with FlashInfer
importable (`. .fi/env.sh`) its decode wrapper / merge_state / merge_states on
the same inputs; the table gives our speed-up over each (their time / ours).
"""
import argparse
import re

import numpy as np
import cupy as cp

from cascade_mlir import _runtime

from benchmarks.common.bundle import Bundle, occupancy, plan_buffers
from benchmarks.common.timing import cuda_time_us, graph_time_us

try:
    import torch
except Exception:  # noqa: BLE001
    torch = None
try:
    import flashinfer
except Exception as ex:  # noqa: BLE001
    flashinfer = None
    FI_ERR = repr(ex)


def t_(a):
    """A cupy array as a torch tensor (no copy)."""
    return torch.as_tensor(a, device="cuda")


def torch_timed(fn, reps, inner=10):
    """Median per-call device time (us) of a torch-launched fn."""
    return cuda_time_us(fn, reps=reps, warmup=1, inner=inner)


def relerr(a, ref):
    a, ref = cp.asarray(a, cp.float32), cp.asarray(ref, cp.float32)
    return float(cp.abs(a - ref).max() / cp.maximum(cp.abs(ref).max(), 1e-30))


def timeit(fn, reps, inner=10):
    """Median per-launch time (us) of fn: `inner` launches captured in a CUDA
    graph, the graph replayed `reps` times between device events (so host
    launch overhead stays out)."""
    return graph_time_us(fn, inner=inner, reps=reps)


def copy_bw(reps):
    """Device-to-device copy of 2 GiB (cudaMemcpyAsync and a 16-byte
    element-wise kernel), bytes read + written per second; the larger."""
    n = 2 << 30
    src = cp.empty(n, dtype=cp.uint8)
    src[:] = 1
    dst = cp.empty_like(src)
    cp.cuda.runtime.deviceSynchronize()
    best = 0.0
    for fn in (lambda: dst.data.copy_from_device_async(src.data, n),
               lambda: cp.copyto(dst.view(cp.complex128), src.view(cp.complex128))):
        t = cuda_time_us(fn, reps=reps, warmup=1, stream=cp.cuda.get_current_stream())
        best = max(best, 2 * n / (t * 1e-6))
    del src, dst
    return best


def fp8_pool(shape):
    """A random e4m3 cache as uint8 codes of magnitudes 0.25 .. 3.75 (codes
    0x28 .. 0x47), either sign: the scale of an f16 cache of N(0, 1) data."""
    codes = cp.random.randint(0x28, 0x48, size=shape, dtype=cp.int32)
    sign = cp.random.randint(0, 2, size=shape, dtype=cp.int32) << 7
    return (codes | sign).astype(cp.uint8)


def decode_variants(b, kv):
    """(label, decode kernel, split-KV decode kernel or None) of every
    decode kernel configuration `b` holds for the benchmark's shape over a
    `kv` cache: the family and the configuration its name spells (rows
    first, then the tensor-core ones by KV tile)."""
    out = []
    for k in b.manifest["kernels"]:
        st = k["static"]
        if (k["op"] == "decode" and st.get("num_qo_heads") == 32
                and st.get("num_kv_heads") == 8 and st.get("head_dim") == 128
                and st.get("page_size") == 16 and st.get("kv_layout") == "nhd"
                and st.get("kv_form") == "pool" and st.get("q_dtype") == "f16"
                and st.get("kv_dtype", "f16") == kv and not st.get("accumulate")
                and st.get("pos_encoding") == "none" and st.get("window_left") == -1
                and not st.get("logits_soft_cap")):
            name = k["name"]
            tail = re.search(r"_([wt]\d+x\d+_.*)$", name).group(1)
            split = name.replace("cascade_decode_", "cascade_decode_split_", 1)
            out.append((f"{st['kernel_family']} {tail}", name,
                        split if split in b.kernels else None, st["kernel_family"],
                        st["tile_tokens"]))
    out.sort(key=lambda v: (v[3] != "rows", v[4], v[0]))
    return [v[:3] for v in out]


def bench_decode(b, rng, B, L, reps, split, sms, kv="f16", variant=None, compare=True,
                 forced_chunks=()):
    """kv: "f16", or "f8e4m3" (b then holds fp8_kernels.mlir's kernels; the
    cache is read with k_scale 0.5 and v_scale 2). variant: (label, decode
    kernel, split decode kernel or None) of decode_variants; default the
    rows kernels. compare: time torch / FlashInfer too (their results are
    checked either way). forced_chunks: chunk sizes in pages that a split
    plan is also timed at (fixed_split_pages), beside the planner's choice."""
    Hqo, Hkv, D, ps = 32, 8, 128, 16
    fp8 = kv != "f16"
    ks, vs = (0.5, 2.0) if fp8 else (1.0, 1.0)
    if variant is None:
        name = b.find("decode", kernel_family="rows", accumulate=False, head_dim=D,
                      num_qo_heads=Hqo, num_kv_heads=Hkv, page_size=ps,
                      kv_layout="nhd", kv_form="pool", q_dtype="f16", pos_encoding="none",
                      logits_soft_cap=0.0, window_left=-1)
        sname = b.find("decode_split", kernel_family="rows", accumulate=False, head_dim=D,
                       num_qo_heads=Hqo, num_kv_heads=Hkv, page_size=ps, kv_layout="nhd",
                       kv_form="pool", q_dtype="f16")
        variant = ("rows", name, sname)
    fam, name, sname = variant
    split = split and sname is not None
    mname = b.find("merge_states_indptr", head_dim=D, num_qo_heads=Hqo, v_dtype="f16",
                   lse_base=2, accumulate=False, indptr="o_indptr")
    npg = -(-L // ps)
    P = B * npg
    if fp8:
        pool = fp8_pool((P, 2, ps, Hkv, D))
    else:
        pool = cp.random.standard_normal((P, 2, ps, Hkv, D),
                                         dtype=cp.float32).astype(cp.float16)
    perm = cp.asarray(rng.permutation(P).astype(np.int32))
    indptr = cp.asarray((np.arange(B + 1) * npg).astype(np.int32))
    last = cp.full(B, L - (npg - 1) * ps, dtype=cp.int32)
    q = cp.random.standard_normal((B, Hqo, D), dtype=cp.float32).astype(cp.float16)
    o = cp.empty((B, Hqo, D), cp.float16)
    lse = cp.empty((B, Hqo), cp.float32)
    bufs = dict(q=q, kv_cache=pool, kv_indptr=indptr, kv_indices=perm, kv_last_page_len=last,
                o=o, lse=lse, batch_size=B, k_scale=ks, v_scale=vs)
    nbytes = B * L * Hkv * D * 2 * pool.itemsize + q.nbytes + o.nbytes + lse.nbytes
    rows = []
    t = timeit(lambda: b.launch(name, bufs), reps)
    others = {}
    if torch is not None:
        # torch: SDPA (GQA) over contiguous K/V gathered beforehand (an fp8
        # cache dequantized to f16 first: exact, the scales powers of two).
        pt = t_(pool).view(torch.float8_e4m3fn) if fp8 else t_(pool)
        ids = torch.as_tensor(cp.asnumpy(perm).astype(np.int64), device="cuda").view(B, npg)
        kk = pt[ids, 0].reshape(B, npg * ps, Hkv, D)[:, :L].transpose(1, 2).contiguous()
        vv = pt[ids, 1].reshape(B, npg * ps, Hkv, D)[:, :L].transpose(1, 2).contiguous()
        if fp8:
            kk, vv = kk.to(torch.float16) * ks, vv.to(torch.float16) * vs
        qt = t_(q).view(B, Hqo, 1, D)
        sdpa = torch.nn.functional.scaled_dot_product_attention
        ref = sdpa(qt, kk, vv, enable_gqa=True).view(B, Hqo, D)
        if not fp8 and compare:  # fp8 has no torch kernel to time
            others["torch"] = torch_timed(lambda: sdpa(qt, kk, vv, enable_gqa=True), reps)
        b.launch(name, bufs)
        cp.cuda.runtime.deviceSynchronize()
        err = relerr(o, cp.asarray(ref))
        assert err < 1e-2, f"decode B={B} L={L}: max rel err {err:.2e} vs torch"
        del kk, vv
    if flashinfer is not None:
        ws = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
        w = flashinfer.BatchDecodeWithPagedKVCacheWrapper(ws, "NHD")
        w.plan(t_(indptr), t_(perm), t_(last), Hqo, Hkv, D, ps, q_data_type=torch.float16,
               kv_data_type=torch.float8_e4m3fn if fp8 else torch.float16)
        qt, pt = t_(q), t_(pool)
        scales = {}
        if fp8:
            pt = pt.view(torch.float8_e4m3fn)
            scales = dict(k_scale=ks, v_scale=vs)
        fo = w.run(qt, pt, **scales)
        torch.cuda.synchronize()
        b.launch(name, bufs)
        cp.cuda.runtime.deviceSynchronize()
        err = relerr(o, cp.asarray(fo))
        assert err < 1e-2, f"decode B={B} L={L}: max rel err {err:.2e} vs FlashInfer"
        if compare:
            others["FlashInfer"] = torch_timed(lambda: w.run(qt, pt, **scales), reps)
    label = f"decode {'fp8 e4m3 ' if fp8 else ''}B={B} L={L} [{fam}]"
    rows.append((label, "no split", t, nbytes, others))
    # The runtime's decode plan for the split kernel's occupancy on this
    # device: split-KV only where B * Hkv blocks leave the device idle.
    def plan_of(**options):
        return _runtime.plan("decode", kv_indptr=cp.asnumpy(indptr),
                             kv_last_page_len=cp.asnumpy(last), num_qo_heads=Hqo,
                             num_kv_heads=Hkv, head_dim=D, page_size=ps, num_sms=sms,
                             occupancy=occupancy(b, sname), **options)
    plans = [("split", plan_of())] if split else []
    if plans and not plans[0][1]["split_kv"]:
        # The batch fills the grid: split anyway at the chunks asked for.
        plans += [("forced split", plan_of(fixed_split_pages=c)) for c in forced_chunks
                  if c < L // ps]
    for how, plan in plans:
        if not plan["split_kv"]:
            continue
        chunk = plan["kv_chunk_size"] // ps
        bufs.update(plan_buffers(plan))
        bufs.update(tmp_v=cp.empty((plan["num_partial_rows"], Hqo, D), cp.float32),
                    tmp_s=cp.empty((plan["num_partial_rows"], Hqo), cp.float32))

        def run():
            b.launch(sname, bufs)
            b.launch(mname, bufs)
        t = timeit(run, reps)
        rows.append((label, f"{how}: {chunk} pages/chunk, {plan['num_work_items']} items",
                     t, nbytes, others))
    del pool
    return rows


def bench_merge(b, reps):
    L, H, D = 8192, 32, 128
    rows = []
    ms = b.find("merge_state", head_dim=D, v_dtype="f16", lse_base=2)
    va = cp.random.standard_normal((L, H, D), dtype=cp.float32).astype(cp.float16)
    vb = cp.random.standard_normal((L, H, D), dtype=cp.float32).astype(cp.float16)
    sa = cp.random.uniform(-10, 10, (L, H), dtype=cp.float32)
    sb = cp.random.uniform(-10, 10, (L, H), dtype=cp.float32)
    v = cp.empty_like(va)
    s = cp.empty_like(sa)
    bufs = dict(v_a=va, s_a=sa, v_b=vb, s_b=sb, v=v, s=s, num_tasks=L * H)
    t = timeit(lambda: b.launch(ms, bufs), reps)
    others = {}
    if torch is not None:
        def compose():
            # base-2 LSE: weights 2^(s_x - max), merged LSE max + log2(sum).
            a_, b_ = t_(sa), t_(sb)
            m = torch.maximum(a_, b_)
            wa, wb = torch.exp2(a_ - m), torch.exp2(b_ - m)
            tot = wa + wb
            out = (t_(va).float() * (wa / tot)[..., None]
                   + t_(vb).float() * (wb / tot)[..., None]).half()
            return out, m + torch.log2(tot)
        others["torch"] = torch_timed(compose, reps)
    if flashinfer is not None:
        # FlashInfer's LSE is base 2 as well.
        b.launch(ms, bufs)
        cp.cuda.runtime.deviceSynchronize()
        fv, fs = flashinfer.merge_state(t_(va), t_(sa), t_(vb), t_(sb))
        err = relerr(v, cp.asarray(fv))
        assert err < 1e-2, f"merge_state: max rel err {err:.2e} vs FlashInfer"
        others["FlashInfer"] = torch_timed(
            lambda: flashinfer.merge_state(t_(va), t_(sa), t_(vb), t_(sb)), reps)
    rows.append((f"merge_state L={L} H={H} D={D}", "", t,
                 va.nbytes * 3 + sa.nbytes * 3, others))
    del va, vb
    mss = b.find("merge_states", head_dim=D, v_dtype="f16", lse_base=2)
    for N in (2, 16, 64):
        vin = cp.random.standard_normal((L, N, H, D), dtype=cp.float32).astype(cp.float16)
        sin = cp.random.uniform(-10, 10, (L, N, H), dtype=cp.float32)
        bufs = dict(v_in=vin, s_in=sin, v=v, s=s, num_tasks=L * H, num_states=N, num_heads=H)
        t = timeit(lambda: b.launch(mss, bufs), reps)
        others = {}
        if torch is not None:
            def compose():
                s_ = t_(sin)
                m = s_.amax(dim=1, keepdim=True)
                w_ = torch.exp2(s_ - m)
                tot = w_.sum(dim=1)
                out = (t_(vin).float() * w_[..., None]).sum(dim=1) / tot[..., None]
                return out.half(), m[:, 0] + torch.log2(tot)
            others["torch"] = torch_timed(compose, reps)
        if flashinfer is not None:
            b.launch(mss, bufs)
            cp.cuda.runtime.deviceSynchronize()
            fv, _ = flashinfer.merge_states(t_(vin), t_(sin))
            err = relerr(v, cp.asarray(fv))
            assert err < 1e-2, f"merge_states N={N}: max rel err {err:.2e} vs FlashInfer"
            others["FlashInfer"] = torch_timed(
                lambda: flashinfer.merge_states(t_(vin), t_(sin)), reps)
        rows.append((f"merge_states L={L} N={N} H={H} D={D}", "", t,
                     vin.nbytes + sin.nbytes + v.nbytes + s.nbytes, others))
        del vin, sin
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bundle")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--only", choices=["all", "decode", "merge"], default="all")
    ap.add_argument("--fp8-bundle", default=None,
                    help="fp8_kernels.mlir's bundle: adds the fp8 (e4m3) decode rows")
    ap.add_argument("--fp8-families", default="rows,mma_sync",
                    help="kernel families of the fp8 decode rows (of those the fp8 "
                         "bundle holds for the shape): rows, mma_sync or both")
    ap.add_argument("--split-pages", default="",
                    help="comma-separated chunk sizes (pages) at which split-KV decode "
                         "is also timed, beside the planner's choice (fixed_split_pages)")
    ap.add_argument("--shapes", default="64x4096,16x32768,256x1024",
                    help="comma-separated decode shapes BxL (batch x KV tokens each)")
    a = ap.parse_args()
    b = Bundle(a.bundle)
    b8 = Bundle(a.fp8_bundle) if a.fp8_bundle else None
    rng = np.random.default_rng(0)
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    sms = props["multiProcessorCount"]
    print(f"GPU: {props['name'].decode()} SMs={sms}")
    bw0 = copy_bw(a.reps)
    rows = []
    shapes = tuple(tuple(int(n) for n in sh.split("x")) for sh in a.shapes.split(","))
    forced = tuple(int(c) for c in a.split_pages.split(",") if c)
    fams = a.fp8_families.split(",")
    variants = [v for v in decode_variants(b8, "f8e4m3")
                if v[0].split()[0] in fams] if b8 else []
    if a.only in ("all", "decode"):
        for B, L in shapes:
            rows += bench_decode(b, rng, B, L, a.reps, True, sms, forced_chunks=forced)
            for i, v in enumerate(variants):
                rows += bench_decode(b8, rng, B, L, a.reps, True, sms, kv="f8e4m3",
                                     variant=v, compare=i == 0, forced_chunks=forced)
    if a.only in ("all", "merge"):
        rows += bench_merge(b, a.reps)
    bw1 = copy_bw(a.reps)
    bw = max(bw0, bw1)
    print(f"device-to-device copy: {bw0 / 1e9:.0f} / {bw1 / 1e9:.0f} GB/s (read+write; using max)")
    if flashinfer is None:
        print(f"FlashInfer not importable ({FI_ERR}): its columns are empty")
    print("| kernel | variant | median us | GB/s | fraction of copy "
          "| torch us (speed-up) | FlashInfer us (speed-up) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")

    def cell(others, key, t):
        if key not in others:
            return "-"
        return f"{others[key]:.1f} ({others[key] / t:.2f}x)"
    for name, var, t, nb, others in rows:
        print(f"| {name} | {var} | {t:.1f} | {nb / t / 1e3:.0f} | {nb / (t * 1e-6) / bw:.2f} "
              f"| {cell(others, 'torch', t)} | {cell(others, 'FlashInfer', t)} |")
    if variants and a.only in ("all", "decode"):
        print_fp8_summary(rows, shapes, variants, bw)


def print_fp8_summary(rows, shapes, variants, bw):
    """Per shape: decode bytes/s as a fraction of the copy bandwidth, the
    faster of plain and split-KV per kernel, FlashInfer's on the same cache."""
    cols = ["f16 [rows]"] + [f"fp8 e4m3 [{label}]" for label, _, _ in variants]
    print()
    print("| fp8 summary: shape | " + " | ".join(cols)
          + " | FlashInfer f16 | FlashInfer fp8 e4m3 |")
    print("| --- " * (len(cols) + 3) + "|")
    for B, L in shapes:
        best, fi = {}, {}
        for name, _, t, nb, others in rows:
            if not name.startswith("decode ") or f"B={B} L={L} " not in name:
                continue
            kvname = "fp8 e4m3" if "fp8" in name else "f16"
            col = f"{kvname} {name[name.index('['):]}"
            best[col] = min(best.get(col, (t, nb)), (t, nb))
            if "FlashInfer" in others:
                fi[kvname] = (others["FlashInfer"], nb)
        frac = lambda tn: f"{tn[1] / (tn[0] * 1e-6) / bw:.2f}" if tn else "-"
        print(f"| fp8 summary: B={B} L={L} | " + " | ".join(frac(best.get(c)) for c in cols)
              + f" | {frac(fi.get('f16'))} | {frac(fi.get('fp8 e4m3'))} |")


if __name__ == "__main__":
    main()
