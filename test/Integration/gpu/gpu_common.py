"""Helpers of the GPU check: storage dtypes (bf16 kept as uint16 bits, fp8
e4m3 / e5m2 as uint8 codes), NaN poisoning, ALiBi slopes. The kernel launcher is benchmarks.common.bundle;
the plans are the runtime's (plans.py)."""

import numpy as np
import cupy as cp


# ---- storage dtypes (bf16 kept as uint16 bits, fp8 as uint8 codes) -----------

def _fp8_table(dtype):
    """Values of the non-negative finite codes 0.. of e4m3 (OCP E4M3FN: bias
    7, S.1111.111 NaN) or e5m2 (bias 15, exponent 31 inf/NaN), increasing."""
    mbits, bias, top = (3, 7, 0x7E) if dtype == "f8e4m3" else (2, 15, 0x7B)
    codes = np.arange(top + 1)
    e, m = codes >> mbits, codes & ((1 << mbits) - 1)
    sub = m * 2.0 ** (1 - bias - mbits)
    norm = (1 + m / 2.0 ** mbits) * 2.0 ** (e.astype(np.float64) - bias)
    return np.where(e == 0, sub, norm)


FP8_DTYPES = ("f8e4m3", "f8e5m2")

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
    if dtype in FP8_DTYPES:
        # Nearest code, ties to the even code, saturating at the largest.
        table = _fp8_table(dtype)
        a = np.minimum(np.abs(x64), table[-1])
        hi = np.clip(np.searchsorted(table, a), 1, len(table) - 1)
        lo = hi - 1
        dlo, dhi = a - table[lo], table[hi] - a
        code = np.where((dhi < dlo) | ((dhi == dlo) & (hi % 2 == 0)), hi, lo)
        r = (code | np.where(np.signbit(x64), 0x80, 0)).astype(np.uint8)
        return r, from_storage(r, dtype)
    raise ValueError(dtype)


def from_storage(a, dtype):
    a = np.asarray(a)
    if dtype == "bf16":
        return (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if dtype in FP8_DTYPES:
        v = _fp8_table(dtype)[np.minimum(a & 0x7F, len(_fp8_table(dtype)) - 1)]
        return np.where(a & 0x80, -v, v)
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
