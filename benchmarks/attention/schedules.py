"""Launch schedules of the 2-level decode cascade (GPU machine).

    python3 -m benchmarks.attention.schedules BUNDLE:f16 [FP8_BUNDLE:f8e4m3 ...]

B=128, shared prefix 32768, 256 own tokens each, 32/8 heads, D=128, page 16,
once per prefix split kernel of the bundle. Schedules, each captured into a
CUDA graph (median of 20 replays of 10 calls, per call):
- seq: prefix split prefill, merge of its partials, accumulating suffix
  decode, on one stream (level 0 as the cascade's base level);
- seq_new: plain suffix decode (writes o/lse), prefix split, accumulating
  merge of the prefix's partials, on one stream (the last level as the base);
- conc_pre_first / conc_dec_first: the same with the prefix split and the
  suffix decode on two forked streams (captured in that order), joined before
  the merge; prio2 = (prefix, suffix) stream priorities (0 lowest, -5 highest).
Every schedule's output is checked against a float32 reference first.
"""
import sys
import numpy as np, cupy as cp, torch
from cascade_mlir import _runtime
from benchmarks.common.bundle import (TENSOR_CORE, Bundle, cpa, num_sms, occupancy,
                                      plan_buffers, static_matches)
from benchmarks.common.cascade_case import DecodeCascade
from benchmarks.common.timing import cuda_time_us


def graph_us(build, inner=10, reps=20):
    cp.cuda.runtime.deviceSynchronize()
    st = cp.cuda.Stream(non_blocking=True)
    with st:
        build(st)
        st.synchronize()
        st.begin_capture()
        for _ in range(inner):
            build(st)
        g = st.end_capture()
    return cuda_time_us(lambda: g.launch(st), reps=reps, warmup=2, stream=st) / inner


def run(bpath, kv, Hq=32, Hkv=8):
    b = Bundle(bpath)
    case = DecodeCascade(kv=kv, Hq=Hq, Hkv=Hkv)
    B, D, ps, sp = case.B, case.D, case.ps, case.sp
    fp8 = kv != "f16"
    tdt = torch.float16
    kc, q = case.kernel_cache, case.q
    shared_idx, uniq_idx = case.shared_idx, case.uniq_idx
    qo0, kvp0, last0 = case.qo0, case.kvp0, case.last0
    kvp1, last1 = case.kvp1, case.last1
    ref = case.reference(dtype=torch.float32)
    none = dict(pos_encoding="none", logits_soft_cap=0.0, window_left=-1, head_dim=D,
                num_qo_heads=Hq, num_kv_heads=Hkv, page_size=ps, kv_layout="nhd",
                kv_form="pool", q_dtype="f16", **(dict(kv_dtype=kv) if fp8 else {}))
    pres = [n for n, kk in b.kernels.items() if kk["op"] == "prefill_split" and
            static_matches(kk["static"], dict(kernel_family=TENSOR_CORE, causal=False,
                                              accumulate=False, **none))]
    mrg = b.find("merge_states_indptr", head_dim=D, num_qo_heads=Hq, v_dtype="f16",
                 lse_base=2, accumulate=False, indptr="merge_indptr")
    mrg_acc = b.find("merge_states_indptr", head_dim=D, num_qo_heads=Hq, v_dtype="f16",
                     lse_base=2, accumulate=True, indptr="merge_indptr")
    fam = "rows" if not fp8 else TENSOR_CORE
    dec_acc = b.find("decode", kernel_family=fam, accumulate=True, **none)
    dec = b.find("decode", kernel_family=fam, accumulate=False, **none)
    print(f"== {kv}: prefix kernels {len(pres)}; dec {dec}; dec_acc {dec_acc}", flush=True)
    o = torch.empty(B, Hq, D, device="cuda", dtype=tdt)
    lse = torch.empty(B, Hq, device="cuda", dtype=torch.float32)
    b1 = dict(q=cpa(q), kv_cache=cpa(kc.view(torch.uint8) if fp8 else kc),
              kv_indptr=cpa(kvp1), kv_indices=cpa(uniq_idx), k_scale=1.0, v_scale=1.0,
              kv_last_page_len=cpa(last1), o=cpa(o), lse=cpa(lse), batch_size=B)
    hi = -5  # H100/H200: priorities 0 (least) .. -5 (greatest)
    for pre in pres:
        plan = _runtime.plan("prefill", kv_indptr=[0, sp], kv_last_page_len=[ps],
                             qo_indptr=[0, B], num_qo_heads=Hq, num_kv_heads=Hkv,
                             head_dim=D, page_size=ps, num_sms=num_sms(),
                             occupancy=occupancy(b, pre),
                             qo_tile_size=b.kernels[pre]["static"]["qo_tile_size"])
        prow = plan["num_partial_rows"]
        tmp_v = torch.empty(prow, Hq, D, device="cuda", dtype=torch.float32)
        tmp_s = torch.empty(prow, Hq, device="cuda", dtype=torch.float32)
        b0 = dict(q=cpa(q), kv_cache=b1["kv_cache"], k_scale=1.0, v_scale=1.0,
                  qo_indptr=cpa(qo0), kv_indptr=cpa(kvp0), kv_indices=cpa(shared_idx),
                  kv_last_page_len=cpa(last0), o=cpa(o), lse=cpa(lse), tmp_v=cpa(tmp_v),
                  tmp_s=cpa(tmp_s), **plan_buffers(plan))
        tag = pre[pre.rindex("_w") + 1:]
        st2s = {}

        def sched(kind, prio):
            def build(st):
                if kind == "seq":
                    for n, bf in ((pre, b0), (mrg, b0), (dec_acc, b1)):
                        b.launch(n, bf, stream=st)
                    return
                if kind == "seq_new":
                    for n, bf in ((dec, b1), (pre, b0), (mrg_acc, b0)):
                        b.launch(n, bf, stream=st)
                    return
                key = (kind, prio)
                if key not in st2s:
                    st2s[key] = (cp.cuda.Stream(non_blocking=True, priority=prio[0]),
                                 cp.cuda.Stream(non_blocking=True, priority=prio[1]))
                sp_, sd_ = st2s[key]
                e0 = cp.cuda.Event(disable_timing=True)
                e0.record(st)
                sp_.wait_event(e0)
                sd_.wait_event(e0)
                if kind == "conc_pre_first":
                    b.launch(pre, b0, stream=sp_)
                    b.launch(dec, b1, stream=sd_)
                else:
                    b.launch(dec, b1, stream=sd_)
                    b.launch(pre, b0, stream=sp_)
                for x in (sp_, sd_):
                    e1 = cp.cuda.Event(disable_timing=True)
                    e1.record(x)
                    st.wait_event(e1)
                b.launch(mrg_acc, b0, stream=st)
            return build
        for kind, prio in (("seq", None), ("seq_new", None), ("conc_pre_first", (0, 0)),
                           ("conc_dec_first", (0, 0)), ("conc_pre_first", (hi, 0)),
                           ("conc_dec_first", (hi, 0))):
            o.fill_(float("nan")); lse.fill_(float("nan"))
            sched(kind, prio)(cp.cuda.Stream.null)
            cp.cuda.runtime.deviceSynchronize()
            err = ((o.float() - ref).abs().max() / ref.abs().max()).item()
            t = graph_us(sched(kind, prio))
            print(f"{kv} {tag:28s} {kind:15s} prio2={prio} : {t:7.1f} us  err {err:.1e}", flush=True)
        # parts
        for name, bf in ((pre, b0), (dec, b1), (dec_acc, b1), (mrg_acc, b0)):
            t = graph_us(lambda st, n=name, bf=bf: b.launch(n, bf, stream=st))
            print(f"   part {name[:60]:60s} {t:7.1f} us", flush=True)


if __name__ == "__main__":
    for spec in sys.argv[1:]:
        path, kv = spec.split(":")
        run(path, kv)
