"""The two-level decode cascade of the benchmarks, on the GPU (torch).

    case = DecodeCascade(kv="f8e4m3")   # B=128, prefix 32768, 256 own, 32/8, D128, p16

Level 0: one query group of all B requests over the shared prefix's pages;
level 1: one query per request over its own pages. Pages are in random
order. `kernel_cache` is the paged pool the kernels read (f16, or an fp8
dtype: the f16 draw quantized), `cache` its f16 value (exact for fp8), so
every reference reads what the kernels read. Index arrays are int32 on the
device; `plan_args()` gives them in the order of the wrappers' plan().
`reference()` is exact attention in float64 (scale 1/sqrt(D), k_scale into
the logits, v_scale into the output, as the wrappers' run() takes them).
"""
import math

import torch

FP8 = {"f8e4m3": torch.float8_e4m3fn, "f8e5m2": torch.float8_e5m2}


class DecodeCascade:
    def __init__(self, kv="f16", B=128, S=32768, U=256, Hq=32, Hkv=8, D=128, ps=16, seed=1):
        if kv != "f16" and kv not in FP8:
            raise ValueError(f"kv must be f16 or one of {sorted(FP8)}, got {kv!r}")
        self.kv, self.B, self.S, self.U = kv, B, S, U
        self.Hq, self.Hkv, self.D, self.ps = Hq, Hkv, D, ps
        torch.manual_seed(seed)
        sp, up = S // ps, U // ps
        self.sp, self.up = sp, up
        P = sp + B * up
        cache = torch.randn(P, 2, ps, Hkv, D, device="cuda", dtype=torch.float16)
        self.kernel_cache = cache
        if kv != "f16":
            self.kernel_cache = cache.to(FP8[kv])
            cache = self.kernel_cache.to(torch.float16)
        self.cache = cache
        self.q = torch.randn(B, Hq, D, device="cuda", dtype=torch.float16)
        self.idx = torch.randperm(P, device="cuda", dtype=torch.int32)
        self.shared_idx = self.idx[:sp].contiguous()
        self.uniq_idx = self.idx[sp:].contiguous()
        i32 = dict(device="cuda", dtype=torch.int32)
        self.qo0 = torch.tensor([0, B], **i32)
        self.kvp0 = torch.tensor([0, sp], **i32)
        self.last0 = torch.tensor([ps], **i32)
        self.qo1 = torch.arange(B + 1, **i32)
        self.kvp1 = torch.arange(B + 1, **i32) * up
        self.last1 = torch.full((B,), ps, **i32)

    def plan_args(self):
        """qo_indptr, kv_indptr, kv_indices, kv_last_page_len (one list per
        level), num_qo_heads, num_kv_heads, head_dim, page_size."""
        return ([self.qo0, self.qo1], [self.kvp0, self.kvp1],
                [self.shared_idx, self.uniq_idx], [self.last0, self.last1],
                self.Hq, self.Hkv, self.D, self.ps)

    def kv_split(self, dtype=torch.float32):
        """(Ks, Vs) of the prefix [S, Hkv, D] and (Ku, Vu) of the suffixes
        [B, U, Hkv, D], from the f16 value of the cache."""
        B, S, U, Hkv, D = self.B, self.S, self.U, self.Hkv, self.D
        Kp = self.cache[self.idx.long(), 0].to(dtype)
        Vp = self.cache[self.idx.long(), 1].to(dtype)
        sp = self.sp
        return (Kp[:sp].reshape(S, Hkv, D), Vp[:sp].reshape(S, Hkv, D),
                Kp[sp:].reshape(B, U, Hkv, D), Vp[sp:].reshape(B, U, Hkv, D))

    def reference(self, k_scale=1.0, v_scale=1.0, dtype=torch.float64):
        B, Hq, Hkv, D, S = self.B, self.Hq, self.Hkv, self.D, self.S
        Ks, Vs, Ku, Vu = self.kv_split(dtype)
        q = self.q.to(dtype).reshape(B, Hkv, Hq // Hkv, D)
        c = k_scale / math.sqrt(D)
        s = torch.cat([torch.einsum("bhgd,thd->bhgt", q, Ks),
                       torch.einsum("bhgd,bthd->bhgt", q, Ku)], -1) * c
        p = torch.softmax(s, -1)
        o = (torch.einsum("bhgt,thd->bhgd", p[..., :S], Vs)
             + torch.einsum("bhgt,bthd->bhgd", p[..., S:], Vu)) * v_scale
        return o.reshape(B, Hq, D)


def relerr(a, ref):
    """max |a - ref| / max |ref|."""
    ref = ref.to(torch.float64)
    return float((a.to(torch.float64) - ref).abs().max() / ref.abs().max().clamp_min(1e-300))
