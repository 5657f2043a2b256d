#!/usr/bin/env python3
"""How much of a fused cascade's error is the rounding of its state.

A model of check.py's 3-level fused f16 case (B = 12, 32/8 heads, D = 128,
a 2000-token prefix for all, two groups with prefixes of 1-199 tokens, a
suffix of 0-256 tokens per request) on the CPU: every level's attention is
exact (float64), and the only rounding is the state's, to f16, after each
level, as an accumulating level stores it. Prints the check's metric
(max |o - ref| / max |ref|) over N draws (docs/semantics.md, "Fused
cascades round their state").

    python3 test/Integration/gpu/fused_rounding_model.py [N]
"""
import math
import sys

import numpy as np

B, HQ, HKV, D = 12, 32, 8, 128
G = HQ // HKV


def attention(q, k, v):
    """Base-2 state (o, lse) of q [H, D] over k, v [L, H, D]."""
    x = np.einsum("hd,lhd->hl", q, k) / math.sqrt(D)
    m = x.max(-1)
    p = np.exp(x - m[:, None])
    d = p.sum(-1)
    return np.einsum("hl,lhd->hd", p, v) / d[:, None], (m + np.log(d)) / math.log(2)


def merge(o1, s1, o2, s2):
    m = np.maximum(s1, s2)
    w1, w2 = np.exp2(s1 - m), np.exp2(s2 - m)
    return (o1 * w1[:, None] + o2 * w2[:, None]) / (w1 + w2)[:, None], m + np.log2(w1 + w2)


def f16(a):
    return a.astype(np.float16).astype(np.float64)


def draw(rng):
    q = f16(rng.standard_normal((B, HQ, D)))
    lens = [[2000], [int(x) for x in rng.integers(1, 200, 2)],
            [int(x) for x in rng.integers(1, 257, B)]]
    lens[2][3] = 0  # a request with no suffix, as in check.py
    kv = [[(f16(rng.standard_normal((n, HKV, D))), f16(rng.standard_normal((n, HKV, D))))
           for n in level] for level in lens]
    ref = np.zeros((B, HQ, D))
    got = np.zeros((B, HQ, D))
    for r in range(B):
        groups = [0, 0 if r < B // 2 else 1, r]
        ks = [np.repeat(kv[lv][g][0], G, axis=1) for lv, g in enumerate(groups)]
        vs = [np.repeat(kv[lv][g][1], G, axis=1) for lv, g in enumerate(groups)]
        ref[r] = attention(q[r], np.concatenate(ks), np.concatenate(vs))[0]
        o, s = attention(q[r], ks[0], vs[0])
        o = f16(o)
        for lv in (1, 2):
            if len(ks[lv]):
                o, s = merge(o, s, *attention(q[r], ks[lv], vs[lv]))
                o = f16(o)
        got[r] = o
    return np.abs(got - ref).max() / np.abs(ref).max()


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    rng = np.random.default_rng(0)
    errs = np.array([draw(rng) for _ in range(n)])
    print(f"state roundings only, {n} draws: median {np.median(errs):.2e}, max {errs.max():.2e}")


if __name__ == "__main__":
    main()
