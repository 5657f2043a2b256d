#!/usr/bin/env python3
"""Tensor-core attention benchmarks on the GPU machine (no MLIR there).

  python3 -m benchmarks.attention.bench BUNDLE_DIR [--rows prefill,cascade,prefill-fp8,prefill-shapes,prefill-dvo]

(from the repository root, with the runtime's Python module cascade_mlir
importable: the split-KV plan of the cascade's prefix level is the runtime's)

BUNDLE_DIR: kernels.ptx + manifest.json of test/Integration/gpu/kernels.mlir
and mma_kernels.mlir (see test/Integration/gpu/README.md). With FlashInfer
importable (`. .fi/env.sh`) its rows are measured in the same process.

Rows (printed as a markdown table):
- prefill causal, B=8, qo = kv = 4096, 32 q / 8 KV heads, D=128, page 16,
  fp16 and bf16: TFLOP/s (causal FLOPs = 4 B Hq D L^2 / 2) of our default
  kernel and its tuning variants, torch SDPA on contiguous KV, FlashInfer's
  BatchPrefillWithPagedKVCacheWrapper, and an 8192^3 matmul;
- prefill-shapes (BUNDLE from test/Integration/gpu/wgmma_shape_tune.mlir):
  head_dim 64 / 128 / 256, causal and not, f16 and bf16, at --sizes (B8
  L4096 by default; 8x4096,2x16384 adds B2 L16384), every kernel of the bundle for the shape against
  SDPA (FlashInfer at head_dim 128);
- prefill-dvo (BUNDLE from test/Integration/gpu/head_dim_vo_kernels.mlir):
  every paged NHD prefill kernel whose v is narrower than q and k (192 /
  128) at --sizes, with its heads and mask, against SDPA;
- prefill-fp8 (BUNDLE from test/Integration/gpu/fp8_operand_kernels.mlir):
  q, K and V in e4m3 on fp8 tensor cores against the 16-bit kernel of the
  same shape, causal (f16 out) and non-causal (bf16 out);
- two-level decode cascade, shared prefix 32768, unique 256 per request,
  B=128, D=128, page 16, fp16, heads 32/8 and 32/32: total us of all our
  launches (split tensor-core prefill of the prefix + merge of its partial
  states + accumulating decode of the suffixes), vs plain torch SDPA over each
  request's full KV, vs a torch composition that reads the prefix once, vs
  FlashInfer's MultiLevelCascadeAttentionWrapper.
Prefill operands (--data): standard normal, or the same values rounded
through e4m3 (fewer mantissa bits set: less power at the same rate, so
higher clocks at a power-limited board); --clocks appends the median SM
clock and board power while each prefill row was timed (NVML).
Timings (us): benchmarks.common.timing, the median of 20 CUDA-event timings
after warm-up (5 back-to-back calls each; our cascade launches replayed from a
CUDA graph of 10 copies); outputs are compared with torch (max relative
error) before timing.
"""
import argparse
import math
import re

import torch

from cascade_mlir import _runtime

from benchmarks.common.bundle import (TENSOR_CORE, Bundle, cpa, launch_all, num_sms, occupancy,
                                      plan_buffers, static_matches)
from benchmarks.common.cascade_case import DecodeCascade
from benchmarks.common.timing import ClockSampler, cuda_time_us, finish_or_exit, graph_time_us

try:
    import flashinfer  # noqa: F401
    HAVE_FI = True
except Exception as e:  # noqa: BLE001
    HAVE_FI = False
    FI_ERR = repr(e)

DT = {"f16": torch.float16, "bf16": torch.bfloat16}
rows_out = []
# Prefill rows of these kernel families only (--family; empty: all).
FAMILIES = ()
KERNELS = ""
# Prefill operands (--data normal | e4m3) and the clock record (--clocks).
DATA = "normal"
CLOCKS = False


def timed(fn):
    """The per-call time (us) of fn: 20 timings of 5 back-to-back calls."""
    return cuda_time_us(fn, reps=20, warmup=3, inner=5)


def timed_at(fn):
    """timed(fn) and, with --clocks, ' @ <MHz> MHz <W> W' while it ran."""
    if not CLOCKS:
        return timed(fn), ""
    with ClockSampler(torch.cuda.current_device()) as c:
        t = timed(fn)
    return t, (" " + c.summary()) if c.summary() else ""


def draw(*shape, dtype):
    """Standard normal values of `dtype` on the GPU, rounded through e4m3
    with --data e4m3."""
    x = torch.randn(*shape, device="cuda", dtype=dtype)
    return x.to(torch.float8_e4m3fn).to(dtype) if DATA == "e4m3" else x


def relerr(a, ref):
    a = a.float()
    ref = ref.float()
    return float((a - ref).abs().max() / ref.abs().max().clamp_min(1e-30))


# ---------------------------------------------------------------------------
# Prefill
# ---------------------------------------------------------------------------

# The tensor-core rate per dtype (us, TFLOP/s), measured once.
MATMUL_TFLOPS = {}


def paged_prefill_inputs(B, L, Hq, Hkv, D, Dv, ps, tdt):
    """A prefill batch of B requests of L queries over their own L keys: q
    [B L, Hq, D], contiguous k [B, L, Hkv, D] and v [.., Dv] (drawn in that
    order), their pages scattered over shuffled pool pages (perm) of a K
    pool and a V pool [B L / ps, ps, Hkv, D or Dv], and the CSR arrays."""
    q = draw(B * L, Hq, D, dtype=tdt)
    k = draw(B, L, Hkv, D, dtype=tdt)
    v = draw(B, L, Hkv, Dv, dtype=tdt)
    pages = L // ps
    perm = torch.randperm(B * pages, device="cuda", dtype=torch.int32)
    kc = torch.empty(B * pages, ps, Hkv, D, device="cuda", dtype=tdt)
    vc = torch.empty(B * pages, ps, Hkv, Dv, device="cuda", dtype=tdt)
    kc[perm.long()] = k.reshape(B * pages, ps, Hkv, D)
    vc[perm.long()] = v.reshape(B * pages, ps, Hkv, Dv)
    qo_indptr = torch.arange(0, B + 1, device="cuda", dtype=torch.int32) * L
    kv_indptr = torch.arange(0, B + 1, device="cuda", dtype=torch.int32) * pages
    last = torch.full((B,), ps, device="cuda", dtype=torch.int32)
    return q, k, v, perm, kc, vc, qo_indptr, kv_indptr, last


def bench_prefill(b, dtype, D=128, causal=True, matmul=True, B=8, L=4096, fi=True):
    """Prefill B x L (qo = kv) 32/8 page 16 at head_dim D, causal or not,
    against torch SDPA (and FlashInfer where `fi`); `matmul` adds the
    tensor-core rate row."""
    Hq, Hkv, ps = 32, 8, 16
    mode = "causal" if causal else "non-causal"
    tdt = DT[dtype]
    torch.manual_seed(0)
    q, k, v, perm, kc, vc, qo_indptr, kv_indptr, last = paged_prefill_inputs(
        B, L, Hq, Hkv, D, D, ps, tdt)
    # Pages of all requests in a shuffled pool [pages, 2, ps, Hkv, D].
    cache = torch.stack((kc, vc), 1)
    del kc, vc
    flops = 4 * B * Hq * D * L * L / (2 if causal else 1)
    # Reference: torch SDPA on contiguous KV.
    qt = q.reshape(B, L, Hq, D).transpose(1, 2)
    kt, vt = k.transpose(1, 2), v.transpose(1, 2)
    sdpa = lambda: torch.nn.functional.scaled_dot_product_attention(  # noqa: E731
        qt, kt, vt, is_causal=causal, enable_gqa=True)
    ref = sdpa().transpose(1, 2).reshape(B * L, Hq, D)
    t_sdpa, at_sdpa = timed_at(sdpa)
    if matmul or dtype not in MATMUL_TFLOPS:
        a = torch.randn(8192, 8192, device="cuda", dtype=tdt)
        c = torch.randn(8192, 8192, device="cuda", dtype=tdt)
        t_mm = timed(lambda: a @ c)
        MATMUL_TFLOPS[dtype] = (t_mm, 2 * 8192 ** 3 / t_mm / 1e6)
    t_mm, mm_tflops = MATMUL_TFLOPS[dtype]
    sdpa_tflops = flops / t_sdpa / 1e6
    fi_tflops = None
    if HAVE_FI and fi:
        import flashinfer
        ws = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
        w = flashinfer.BatchPrefillWithPagedKVCacheWrapper(ws, "NHD")
        try:
            w.plan(qo_indptr, kv_indptr, perm, last, Hq, Hkv, D, ps, causal=causal,
                   q_data_type=tdt)
            out_fi = w.run(q, cache)
            e_fi = relerr(out_fi, ref)
            t_fi = timed(lambda: w.run(q, cache))
            fi_tflops = flops / t_fi / 1e6
        except Exception as e:  # a head_dim FlashInfer's prebuilt kernels lack
            print(f"FlashInfer prefill {dtype} D={D} {mode}: {e}", flush=True)
    # Ours: every tensor-core prefill kernel of this shape in the bundle.
    base = dict(kernel_family=TENSOR_CORE, head_dim=D, num_qo_heads=Hq, num_kv_heads=Hkv,
                page_size=ps, kv_layout="nhd", kv_form="pool", q_dtype=dtype, causal=causal,
                accumulate=False, pos_encoding="none", logits_soft_cap=0.0, window_left=-1)
    names = [n for n, kk in b.kernels.items() if kk["op"] == "prefill" and
             static_matches(kk["static"], base) and
             (not FAMILIES or kk["static"]["kernel_family"] in FAMILIES) and
             (not KERNELS or re.search(KERNELS, n))]
    o = torch.empty_like(q)
    lse = torch.empty(B * L, Hq, device="cuda", dtype=torch.float32)
    for name in names:
        bufs = dict(q=cpa(q), kv_cache=cpa(cache), qo_indptr=cpa(qo_indptr),
                    kv_indptr=cpa(kv_indptr), kv_indices=cpa(perm),
                    kv_last_page_len=cpa(last), o=cpa(o), lse=cpa(lse), batch_size=B,
                    num_rows=B * L, row_capacity=B * L)
        o.fill_(float("nan"))
        b.launch(name, bufs)
        finish_or_exit(name)
        err = relerr(o, ref)
        t, at = timed_at(lambda: b.launch(name, bufs))
        tf = flops / t / 1e6
        cfg = b.kernels[name]["static"]["kernel_family"] + " " + name[name.rindex("_w") + 1:]
        row = (f"prefill {mode} {dtype} B{B} L{L} 32/8 D{D} p16 [{cfg}]{at}",
               f"{t:.0f}", f"{tf:.0f}", f"{tf / sdpa_tflops:.2f}", f"{tf / mm_tflops:.2f}",
               f"{tf / fi_tflops:.2f}" if fi_tflops else "n/a", f"{err:.1e}")
        rows_out.append(row)
        print(" | ".join(row), flush=True)
    rows_out.append((f"torch SDPA {mode} {dtype} B{B} L{L} D{D} (contiguous KV){at_sdpa}",
                     f"{t_sdpa:.0f}",
                     f"{sdpa_tflops:.0f}", "1.00", f"{sdpa_tflops / mm_tflops:.2f}", "", ""))
    if matmul:
        rows_out.append((f"torch matmul 8192^3 {dtype}", f"{t_mm:.0f}", f"{mm_tflops:.0f}",
                         "", "1.00", "", ""))
    if fi_tflops:
        rows_out.append((f"FlashInfer 0.5.3 prefill {mode} {dtype} B{B} L{L} D{D}", f"{t_fi:.0f}",
                         f"{fi_tflops:.0f}", f"{fi_tflops / sdpa_tflops:.2f}",
                         f"{fi_tflops / mm_tflops:.2f}", "1.00", f"{e_fi:.1e}"))


def bench_prefill_dvo(b, B=8, L=4096):
    """Every plain paged prefill kernel (no soft cap, window or accumulation:
    what SDPA computes) of BUNDLE whose v is narrower than q and k
    (head_dim_vo; test/Integration/gpu/head_dim_vo_kernels.mlir: DeepSeek's
    192 / 128), at B x L (qo = kv) with the kernel's heads, page size and
    mask, against torch SDPA on contiguous K and V of their own widths.
    FLOPs: 2 B Hq L^2 (D + Dv), halved when causal."""
    for name, kk in sorted(b.kernels.items()):
        st = kk["static"]
        # Plain levels only: SDPA has no soft cap, window or prior state.
        plain = not st.get("accumulate") and not st.get("logits_soft_cap") and \
            st.get("window_left", -1) < 0
        if kk["op"] != "prefill" or "head_dim_vo" not in st or st["kv_form"] != "pair" \
                or st["kv_layout"] != "nhd" or not plain or \
                (KERNELS and not re.search(KERNELS, name)):
            continue
        D, Dv, dtype, causal = st["head_dim"], st["head_dim_vo"], st["q_dtype"], st["causal"]
        Hq, Hkv, ps = st["num_qo_heads"], st["num_kv_heads"], st["page_size"]
        mode = "causal" if causal else "non-causal"
        tdt = DT[dtype]
        torch.manual_seed(0)
        q, k, v, perm, kc, vc, qo_indptr, kv_indptr, last = paged_prefill_inputs(
            B, L, Hq, Hkv, D, Dv, ps, tdt)
        flops = 2 * B * Hq * L * L * (D + Dv) / (2 if causal else 1)
        qt = q.reshape(B, L, Hq, D).transpose(1, 2)
        kt, vt = k.transpose(1, 2), v.transpose(1, 2)
        sdpa = lambda: torch.nn.functional.scaled_dot_product_attention(  # noqa: E731
            qt, kt, vt, is_causal=causal, enable_gqa=Hq != Hkv)
        ref = sdpa().transpose(1, 2).reshape(B * L, Hq, Dv)
        t_sdpa, at_sdpa = timed_at(sdpa)
        sdpa_tflops = flops / t_sdpa / 1e6
        o = torch.empty(B * L, Hq, Dv, device="cuda", dtype=tdt)
        lse = torch.empty(B * L, Hq, device="cuda", dtype=torch.float32)
        bufs = dict(q=cpa(q), k_cache=cpa(kc), v_cache=cpa(vc), qo_indptr=cpa(qo_indptr),
                    kv_indptr=cpa(kv_indptr), kv_indices=cpa(perm), kv_last_page_len=cpa(last),
                    o=cpa(o), lse=cpa(lse), batch_size=B, num_rows=B * L, row_capacity=B * L)
        o.fill_(float("nan"))
        b.launch(name, bufs)
        finish_or_exit(name)
        err = relerr(o, ref)
        t, at = timed_at(lambda: b.launch(name, bufs))
        tf = flops / t / 1e6
        cfg = st["kernel_family"] + " " + name[name.rindex("_w") + 1:]
        shape = f"B{B} L{L} {Hq}/{Hkv} D{D}/{Dv} p{ps}"
        row = (f"prefill {mode} {dtype} {shape} [{cfg}]{at}", f"{t:.0f}", f"{tf:.0f}",
               f"{tf / sdpa_tflops:.2f}", f"{err:.1e}")
        rows_out.append(row)
        print(" | ".join(row), flush=True)
        rows_out.append((f"torch SDPA {mode} {dtype} {shape} (contiguous KV){at_sdpa}",
                         f"{t_sdpa:.0f}", f"{sdpa_tflops:.0f}", "1.00", ""))


def bench_prefill_fp8(b, causal, o_dtype, B=8, L=4096):
    """fp8 queries on fp8 tensor cores against the 16-bit kernel of the same
    shape (B x L, 32/8 heads, D128, page 16; both in BUNDLE, built from
    test/Integration/gpu/fp8_operand_kernels.mlir): q, K and V drawn in
    `o_dtype`, stored as e4m3 (per-tensor scale 1), the 16-bit kernel and
    SDPA run on the dequantized values; FlashInfer's fp8 prefill where its
    prebuilt modules have one."""
    Hq, Hkv, D, ps = 32, 8, 128, 16
    mode = "causal" if causal else "non-causal"
    tdt, f8 = DT[o_dtype], torch.float8_e4m3fn
    torch.manual_seed(0)
    q8 = torch.randn(B * L, Hq, D, device="cuda").to(f8)
    k8 = torch.randn(B, L, Hkv, D, device="cuda").to(f8)
    v8 = torch.randn(B, L, Hkv, D, device="cuda").to(f8)
    pages = L // ps
    perm = torch.randperm(B * pages, device="cuda", dtype=torch.int32)
    cache8 = torch.empty(B * pages, 2, ps, Hkv, D, device="cuda", dtype=f8)
    cache8[perm.long(), 0] = k8.reshape(B * pages, ps, Hkv, D)
    cache8[perm.long(), 1] = v8.reshape(B * pages, ps, Hkv, D)
    cache = cache8.to(tdt)
    q = q8.to(tdt)
    qo_indptr = torch.arange(0, B + 1, device="cuda", dtype=torch.int32) * L
    kv_indptr = torch.arange(0, B + 1, device="cuda", dtype=torch.int32) * pages
    last = torch.full((B,), ps, device="cuda", dtype=torch.int32)
    flops = 4 * B * Hq * D * L * L / (2 if causal else 1)
    qt = q.reshape(B, L, Hq, D).transpose(1, 2)
    kt, vt = k8.to(tdt).transpose(1, 2), v8.to(tdt).transpose(1, 2)
    sdpa = lambda: torch.nn.functional.scaled_dot_product_attention(  # noqa: E731
        qt, kt, vt, is_causal=causal, enable_gqa=True)
    ref = sdpa().transpose(1, 2).reshape(B * L, Hq, D)
    t_sdpa = timed(sdpa)
    base = dict(kernel_family="wgmma", head_dim=D, num_qo_heads=Hq, num_kv_heads=Hkv,
                page_size=ps, kv_layout="nhd", kv_form="pool", causal=causal,
                accumulate=False, pos_encoding="none", logits_soft_cap=0.0, window_left=-1)
    o = torch.empty(B * L, Hq, D, device="cuda", dtype=tdt)
    lse = torch.empty(B * L, Hq, device="cuda", dtype=torch.float32)
    times = {}
    for label, qq, cc, want in (
            (o_dtype, q, cache, dict(q_dtype=o_dtype, kv_dtype=o_dtype)),
            ("e4m3", q8, cache8, dict(q_dtype="f8e4m3", kv_dtype="f8e4m3", o_dtype=o_dtype))):
        names = [n for n, kk in b.kernels.items() if kk["op"] == "prefill" and
                 static_matches(kk["static"], dict(base, **want))]
        for name in names:
            bufs = dict(q=cpa(qq.view(torch.uint8) if qq.dtype == f8 else qq),
                        kv_cache=cpa(cc.view(torch.uint8) if cc.dtype == f8 else cc),
                        qo_indptr=cpa(qo_indptr), kv_indptr=cpa(kv_indptr),
                        kv_indices=cpa(perm), kv_last_page_len=cpa(last), o=cpa(o),
                        lse=cpa(lse), batch_size=B, num_rows=B * L, row_capacity=B * L,
                        k_scale=1.0, v_scale=1.0)
            o.fill_(float("nan"))
            b.launch(name, bufs)
            finish_or_exit(name)
            err = relerr(o, ref)
            t = timed(lambda: b.launch(name, bufs))
            times.setdefault(label, t)
            tf = flops / t / 1e6
            ratio = times[o_dtype] / t if o_dtype in times else float("nan")
            row = (f"prefill {mode} q/K/V {label} -> {o_dtype} B{B} L{L} 32/8 D128 p16 "
                   f"[{name[name.rindex('_w') + 1:]}]", f"{t:.0f}", f"{tf:.0f}",
                   f"{tf / (flops / t_sdpa / 1e6):.2f}", f"{ratio:.2f}", f"{err:.1e}")
            rows_out.append(row)
            print(" | ".join(row), flush=True)
    rows_out.append((f"torch SDPA {mode} {o_dtype} B{B} L{L} D128 (dequantized, contiguous KV)",
                     f"{t_sdpa:.0f}", f"{flops / t_sdpa / 1e6:.0f}", "1.00", "", ""))
    if HAVE_FI:
        import flashinfer
        ws = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
        try:
            w = flashinfer.BatchPrefillWithPagedKVCacheWrapper(ws, "NHD", backend="fa3")
            w.plan(qo_indptr, kv_indptr, perm, last, Hq, Hkv, D, ps, causal=causal,
                   q_data_type=f8, kv_data_type=f8)
            out_fi = w.run(q8, cache8)
            e_fi = relerr(out_fi.to(tdt), ref)
            t_fi = timed(lambda: w.run(q8, cache8))
            row = (f"FlashInfer 0.5.3 fp8 prefill {mode} (FA3)", f"{t_fi:.0f}",
                   f"{flops / t_fi / 1e6:.0f}", f"{t_sdpa / t_fi:.2f}", "", f"{e_fi:.1e}")
            rows_out.append(row)
            print(" | ".join(row), flush=True)
        except Exception as e:  # noqa: BLE001 (no prebuilt fp8 module)
            print(f"FlashInfer fp8 prefill {mode}: {e}", flush=True)


# ---------------------------------------------------------------------------
# Two-level decode cascade
# ---------------------------------------------------------------------------

def bench_cascade(b, Hq, Hkv, kv="f16"):
    """kv="f8e4m3": the same cascade over an fp8 cache (b: fp8_kernels.mlir's
    bundle); torch's compositions and the reference read the cache
    dequantized to f16 (exact)."""
    case = DecodeCascade(kv=kv, Hq=Hq, Hkv=Hkv)
    B, S, U, D, ps, sp = case.B, case.S, case.U, case.D, case.ps, case.sp
    G = Hq // Hkv
    tdt = torch.float16
    fp8 = kv != "f16"
    cache, kernel_cache, q = case.cache, case.kernel_cache, case.q
    shared_idx, uniq_idx = case.shared_idx, case.uniq_idx
    qo0, kvp0, last0 = case.qo0, case.kvp0, case.last0
    qo1, kvp1, last1 = case.qo1, case.kvp1, case.last1

    # Reference in torch: contiguous K/V of each request (prefix + suffix).
    Ks, Vs, Ku, Vu = case.kv_split(tdt)
    Ks = Ks.reshape(1, S, Hkv, D).transpose(1, 2)
    Vs = Vs.reshape(1, S, Hkv, D).transpose(1, 2)
    Ku, Vu = Ku.transpose(1, 2), Vu.transpose(1, 2)
    scale = 1 / math.sqrt(D)

    def compose():
        # One multi-query attention over the shared prefix (the G query heads
        # of a KV head packed into the query rows), one over each suffix,
        # merged with their log-sum-exps.
        qs = q.reshape(B, Hkv, G, D).permute(1, 0, 2, 3).reshape(1, Hkv, B * G, D)
        o1, l1 = torch.ops.aten._scaled_dot_product_flash_attention(qs, Ks, Vs, scale=scale)[:2]
        qu = q.reshape(B, Hkv, G, D)
        o2, l2 = torch.ops.aten._scaled_dot_product_flash_attention(qu, Ku, Vu, scale=scale)[:2]
        o1 = o1.reshape(Hkv, B, G, D).permute(1, 0, 2, 3)
        l1 = l1.reshape(Hkv, B, G).permute(1, 0, 2)
        m = torch.maximum(l1, l2)
        w1, w2 = torch.exp(l1 - m), torch.exp(l2 - m)
        o = (o1.float() * w1[..., None] + o2.float() * w2[..., None]) / (w1 + w2)[..., None]
        return o.to(tdt).reshape(B, Hq, D)

    ref = compose()
    t_comp = timed(compose)
    # Plain SDPA over each request's full KV (prefix copied per request).
    Kf = torch.cat([Ks.expand(B, -1, -1, -1), Ku], 2)
    Vf = torch.cat([Vs.expand(B, -1, -1, -1), Vu], 2)
    qf = q.reshape(B, Hq, 1, D)
    plain = lambda: torch.nn.functional.scaled_dot_product_attention(  # noqa: E731
        qf, Kf, Vf, enable_gqa=True)
    e_plain = relerr(plain().reshape(B, Hq, D), ref)
    t_plain = timed(plain)


    # Ours: level 0 split tensor-core prefill + partial merge, level 1
    # accumulating decode (the fused merge of cascade-decompose-levels).
    none = dict(pos_encoding="none", logits_soft_cap=0.0, window_left=-1, head_dim=D,
                num_qo_heads=Hq, num_kv_heads=Hkv, page_size=ps, kv_layout="nhd",
                kv_form="pool", q_dtype="f16", **(dict(kv_dtype=kv) if fp8 else {}))
    split_stat = dict(kernel_family=TENSOR_CORE, causal=False, accumulate=False, **none)
    pres = [n for n, kk in b.kernels.items() if kk["op"] == "prefill_split" and
            static_matches(kk["static"], split_stat)]
    mrg = b.find("merge_states_indptr", head_dim=D, num_qo_heads=Hq, v_dtype="f16",
                 lse_base=2, accumulate=False, indptr="merge_indptr")
    # The unique level's accumulating decode as selection made it: rows for
    # f16 (and fp8 at G = 1), mma_sync for an fp8 cache at G >= 2.
    try:
        dec = b.find("decode", kernel_family="rows", accumulate=True, **none)
    except KeyError:
        dec = b.find("decode", kernel_family=TENSOR_CORE, accumulate=True, **none)
    o = torch.empty(B, Hq, D, device="cuda", dtype=tdt)
    lse = torch.empty(B, Hq, device="cuda", dtype=torch.float32)
    b1 = dict(q=cpa(q), kv_cache=cpa(kernel_cache.view(torch.uint8) if fp8 else cache),
              kv_indptr=cpa(kvp1), kv_indices=cpa(uniq_idx), k_scale=1.0, v_scale=1.0,
              kv_last_page_len=cpa(last1), o=cpa(o), lse=cpa(lse), batch_size=B)
    # Other accumulating decodes of the shape (test/Integration/gpu/
    # wgmma_tune.mlir's unique-level variants) are timed as the unique level
    # behind the fastest prefix kernel.
    decs = [dec] + [n for n, kk in b.kernels.items() if n != dec and kk["op"] == "decode"
                    and static_matches(kk["static"], dict(none, accumulate=True, kv_dtype=kv))]

    def measure(pre, dec):
        # The runtime's plan of the prefix level for this kernel's query
        # tile and occupancy on this device.
        plan = _runtime.plan("prefill", kv_indptr=[0, sp], kv_last_page_len=[ps],
                             qo_indptr=[0, B], num_qo_heads=Hq, num_kv_heads=Hkv,
                             head_dim=D, page_size=ps, num_sms=num_sms(),
                             occupancy=occupancy(b, pre),
                             qo_tile_size=b.kernels[pre]["static"]["qo_tile_size"])
        assert plan["split_kv"], "the prefix level is expected to be split"
        c = plan["kv_chunk_size"] // ps
        prow = plan["num_partial_rows"]
        tmp_v = torch.empty(prow, Hq, D, device="cuda", dtype=torch.float32)
        tmp_s = torch.empty(prow, Hq, device="cuda", dtype=torch.float32)
        b0 = dict(q=cpa(q), kv_cache=b1["kv_cache"], k_scale=1.0, v_scale=1.0,
                  qo_indptr=cpa(qo0), kv_indptr=cpa(kvp0),
                  kv_indices=cpa(shared_idx), kv_last_page_len=cpa(last0), o=cpa(o),
                  lse=cpa(lse), tmp_v=cpa(tmp_v), tmp_s=cpa(tmp_s), **plan_buffers(plan))
        launches = [(pre, b0), (mrg, b0), (dec, b1)]
        o.fill_(float("nan"))
        for n, bf in launches:
            b.launch(n, bf)
        torch.cuda.synchronize()
        e_ours = relerr(o, ref)
        t_ours = graph_time_us(launch_all(b, launches))
        parts = [graph_time_us(launch_all(b, [x])) for x in launches]
        cfg = (b.kernels[pre]["static"]["kernel_family"] + " " + pre[pre.rindex("_w") + 1:]
               + " + decode " + b.kernels[dec]["static"]["kernel_family"])
        if dec != decs[0]:
            cfg += " " + dec[dec.index("_nhd_pool_") + len("_nhd_pool_"):]
        return (t_ours, cfg, parts, c, plan["num_work_items"], e_ours)

    results = [measure(pre, dec) for pre in pres]
    if results:
        fastest = pres[min(range(len(pres)), key=lambda i: results[i][0])]
        results += [measure(fastest, d) for d in decs[1:]]
    t_fi = e_fi = None
    if HAVE_FI:
        import flashinfer
        ws = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
        w = flashinfer.MultiLevelCascadeAttentionWrapper(2, ws, "NHD")
        try:
            w.plan([qo0, qo1], [kvp0, kvp1], [shared_idx, uniq_idx], [last0, last1], Hq,
                   Hkv, D, ps, kv_data_type=kernel_cache.dtype)
            e_fi = relerr(w.run(q, kernel_cache), ref)
            t_fi = timed(lambda: w.run(q, kernel_cache))
        except Exception as ex:  # noqa: BLE001 (FlashInfer without this fp8 path)
            # The first line only (a failed JIT prints its whole build log).
            msg = (str(ex).strip().splitlines() or [""])[0][:200]
            print(f"FlashInfer cascade over {kernel_cache.dtype}: {type(ex).__name__}: {msg}",
                  flush=True)
    for t_ours, cfg, parts, c, items, e_ours in sorted(results):
        row = (f"cascade 2 levels {'fp8 e4m3 ' if fp8 else ''}{Hq}/{Hkv} B128 prefix 32768 "
               f"unique 256 [{cfg}]",
               f"{t_ours:.0f}", f"{parts[0]:.0f} + {parts[1]:.0f} + {parts[2]:.0f} (3 launches,"
               f" chunk {c} pages, {items} items)",
               f"{t_plain:.0f}", f"{t_plain / t_ours:.1f}x", f"{t_comp:.0f}",
               f"{t_comp / t_ours:.2f}x", f"{t_fi:.0f}" if t_fi else "n/a",
               f"{t_fi / t_ours:.2f}x" if t_fi else "n/a",
               f"{e_ours:.1e} / plain {e_plain:.1e}" + (f" / FI {e_fi:.1e}" if e_fi else ""))
        rows_out.append(row)
        print(" | ".join(row), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bundle")
    ap.add_argument("--rows", default="prefill,cascade")
    ap.add_argument("--family", default="",
                    help="prefill: time only these kernel families (comma-separated, "
                         "e.g. wgmma)")
    ap.add_argument("--kernels", default="",
                    help="prefill: time only the kernels whose name matches this regex")
    ap.add_argument("--quick", action="store_true",
                    help="prefill: the causal D=128 rows only (an A/B of kernel changes)")
    ap.add_argument("--sizes", default="8x4096",
                    help="prefill-shapes: batch x length pairs, comma-separated")
    ap.add_argument("--only", default="",
                    help="prefill-shapes: only these shapes, as d256-causal-f16,d64-full-bf16")
    ap.add_argument("--data", choices=("normal", "e4m3"), default="normal",
                    help="prefill operands: standard normal, or rounded through e4m3")
    ap.add_argument("--clocks", action="store_true",
                    help="prefill rows: the median SM clock and board power while timed (NVML)")
    ap.add_argument("--fp8-bundle", default=None,
                    help="fp8_kernels.mlir's bundle: adds the cascade rows over an fp8 cache")
    a = ap.parse_args()
    global FAMILIES, KERNELS, DATA, CLOCKS
    FAMILIES = tuple(f for f in a.family.split(",") if f)
    KERNELS = a.kernels
    DATA, CLOCKS = a.data, a.clocks
    b = Bundle(a.bundle)
    print(torch.cuda.get_device_name(), "FlashInfer:", "yes" if HAVE_FI else FI_ERR, flush=True)
    want = a.rows.split(",")
    if "prefill" in want:
        print("| prefill | us | TFLOP/s | / SDPA | / matmul | / FlashInfer | max rel err |")
        for dtype in ("f16", "bf16"):
            bench_prefill(b, dtype)
        # The other shapes the Hopper issue reports: non-causal, head_dim 64
        # and 256 (their default kernels only).
        for dtype in () if a.quick else ("f16", "bf16"):
            bench_prefill(b, dtype, causal=False, matmul=False)
            for D in (64, 256):
                bench_prefill(b, dtype, D=D, matmul=False)
    if "prefill-shapes" in want:
        # Issue 43's prefill shapes: head_dim 64 / 128 / 256, causal and not,
        # f16 and bf16, at each of --sizes (B x L), every
        # kernel of the bundle that runs the shape (wgmma_shape_tune.mlir:
        # the defaults and their tuning variants). FlashInfer's rows at
        # head_dim 128 only (the kit's prebuilt modules; others would JIT).
        shapes = [tuple(int(v) for v in bl.split("x")) for bl in a.sizes.split(",")]
        print("| prefill | us | TFLOP/s | / SDPA | / matmul | / FlashInfer | max rel err |")
        for B, L in shapes:
            for D in (64, 128, 256):
                for causal in (True, False):
                    for dtype in ("f16", "bf16"):
                        if a.only and f"d{D}-{'causal' if causal else 'full'}-{dtype}" \
                                not in a.only.split(","):
                            continue
                        bench_prefill(b, dtype, D=D, causal=causal, matmul=False, B=B, L=L,
                                      fi=D == 128)
    if "prefill-dvo" in want:
        print("| prefill, narrower v | us | TFLOP/s | / SDPA | max rel err |")
        for B, L in [tuple(int(v) for v in bl.split("x")) for bl in a.sizes.split(",")]:
            bench_prefill_dvo(b, B, L)
    if "prefill-fp8" in want:
        print("| fp8 prefill | us | TFLOP/s | / SDPA | / 16-bit kernel | max rel err |")
        for B, L in ((8, 4096), (2, 16384)):
            bench_prefill_fp8(b, True, "f16", B, L)
            bench_prefill_fp8(b, False, "bf16", B, L)
    if "cascade" in want:
        print("| cascade | ours us | split | plain SDPA us | speedup | torch compose us | ratio |"
              " FlashInfer us | ratio | max rel err |")
        for Hq, Hkv in ((32, 8), (32, 32)):
            bench_cascade(b, Hq, Hkv)
            if a.fp8_bundle:
                bench_cascade(Bundle(a.fp8_bundle), Hq, Hkv, kv="f8e4m3")
    print()
    for r in rows_out:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
