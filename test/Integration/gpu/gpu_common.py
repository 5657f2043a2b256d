"""Helpers of the GPU check: storage dtypes (bf16 kept as uint16 bits), NaN
poisoning, ALiBi slopes. The kernel launcher is benchmarks.common.bundle;
the plans are the runtime's (plans.py)."""

import numpy as np
import cupy as cp


# ---- storage dtypes (bf16 kept as uint16 bits) ------------------------------

def to_storage(x64, dtype):
    """Rounds float64 data to the storage dtype; returns (host storage array,
    float64 values actually stored)."""
    if dtype == "f16":
        s = x64.astype(np.float16)
        return s, s.astype(np.float64)
    if dtype == "f32":
        s = x64.astype(np.float32)
        return s, s.astype(np.float64)
    if dtype == "bf16":
        f = x64.astype(np.float32)
        u = f.view(np.uint32).astype(np.uint64)
        r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
        return r, from_storage(r, "bf16")
    raise ValueError(dtype)


def from_storage(a, dtype):
    a = np.asarray(a)
    if dtype == "bf16":
        return (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return a.astype(np.float64)


def poison(shape, dtype):
    if dtype == "f16":
        return cp.full(shape, np.float16("nan"), dtype=cp.float16)
    if dtype == "bf16":
        return cp.full(shape, 0x7FC0, dtype=cp.uint16)
    return cp.full(shape, np.nan, dtype=cp.float32)


def alibi_slope(h, n):
    p = 1
    while p * 2 <= n:
        p *= 2
    m0 = 2.0 ** (-8.0 / p)
    if h < p:
        return m0 ** (h + 1)
    m1 = 2.0 ** (-4.0 / p)
    return m1 ** ((h - p) * 2 + 1)
