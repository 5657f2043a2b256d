"""Shared helpers of the GPU check and the benchmark: load a kernel bundle
(kernels.ptx + manifest.json) with cupy and launch kernels by name, binding
params by name (memref = 5 values ptr, ptr, 0, n, 1)."""
import json
import math
import os

import numpy as np
import cupy as cp


class Bundle:
    def __init__(self, path):
        self.path = path
        with open(os.path.join(path, "manifest.json")) as f:
            self.manifest = json.load(f)
        assert self.manifest["format"] == "cascade-kernel-bundle"
        self.kernels = {k["name"]: k for k in self.manifest["kernels"]}
        self.modules = {}

    def find(self, op, **static):
        for k in self.manifest["kernels"]:
            if k["op"] != op:
                continue
            if all(k["static"].get(key) == val for key, val in static.items()):
                return k["name"]
        raise KeyError(f"no {op} kernel with {static}")

    def function(self, name):
        k = self.kernels[name]
        ptx = os.path.join(self.path, k["ptx"])
        if ptx not in self.modules:
            # A cubin assembled ahead of time next to the PTX (ptxas -arch=
            # sm_90 kernels.ptx -o kernels.sm_90.cubin) saves the driver's JIT.
            cubin = ptx[:-len(".ptx")] + ".sm_90.cubin"
            self.modules[ptx] = cp.RawModule(path=cubin if os.path.exists(cubin) else ptx)
        fn = self.modules[ptx].get_function(name)
        smem = k.get("dynamic_shared_bytes", 0)
        if smem > 48 * 1024:
            fn.max_dynamic_shared_size_bytes = smem
        return fn

    def grid(self, name, scalars):
        out = []
        for g in self.kernels[name]["grid"]:
            if isinstance(g, int):
                out.append(g)
            else:
                v = scalars[g["param"]] * g.get("mul", 1)
                out.append(-(-v // g["div"]) + (scalars[g["add"]] if "add" in g else 0))
        return tuple(out)

    def launch(self, name, bufs, stream=None):
        """bufs: name -> cupy array (memref) or python number (scalar)."""
        k = self.kernels[name]
        args = []
        scalars = {}
        for p in k["params"]:
            v = bufs[p["name"]]
            if p["kind"] == "memref":
                ptr = np.uint64(v.data.ptr if v.size else 0)
                args += [ptr, ptr, np.uint64(0), np.uint64(v.size), np.uint64(1)]
            elif p["kind"] == "i64":
                args.append(np.int64(v)); scalars[p["name"]] = int(v)
            elif p["kind"] == "i32":
                args.append(np.int32(v)); scalars[p["name"]] = int(v)
            elif p["kind"] == "f32":
                args.append(np.float32(v))
            else:
                raise ValueError(p)
        for key, val in bufs.items():
            if isinstance(val, (int, np.integer)):
                scalars.setdefault(key, int(val))
        grid = self.grid(name, scalars)
        if 0 in grid:
            return
        fn = self.function(name)
        fn(grid, tuple(k["block"]), tuple(args), stream=stream,
           shared_mem=k.get("dynamic_shared_bytes", 0))


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


def decode_plan(pages, page_size, chunk_pages, pad_to=None):
    """FlashInfer-style split-KV decode plan (docs/semantics.md), for a given chunk
    size in pages. Empty requests get one (empty) chunk."""
    req, tile, o_indptr = [], [], [0]
    for i, n in enumerate(pages):
        nc = max(1, -(-n // chunk_pages))
        for c in range(nc):
            req.append(i)
            tile.append(c)
        o_indptr.append(o_indptr[-1] + nc)
    w = len(req)
    padded = max(w, pad_to or w)
    valid = [1] * w + [0] * (padded - w)
    req += [0] * (padded - w)
    tile += [0] * (padded - w)
    return dict(request_indices=np.array(req, np.int32),
                kv_tile_indices=np.array(tile, np.int32),
                o_indptr=np.array(o_indptr, np.int32),
                block_valid_mask=np.array(valid, np.uint8),
                kv_chunk_size=chunk_pages * page_size,
                num_work_items=padded, num_partial_rows=o_indptr[-1])


def choose_chunk_pages(pages, page_size, num_kv_heads, max_blocks):
    """The decode plan of docs/semantics.md: no split if B*Hkv fills the grid, else the
    smallest chunk >= max(128/page_size, 1) pages that fits."""
    if len(pages) * num_kv_heads >= max_blocks:
        return None
    c = max(128 // page_size, 1)
    while sum(max(1, -(-n // c)) for n in pages) * num_kv_heads > max_blocks:
        c += 1
    if max(-(-n // c) for n in pages) <= 1:
        return None
    return c


def prefill_plan(qo_lens, pages, group, q_tile, chunk_pages, pad_to=None):
    """The runtime's prefill plan (lib/Runtime/Plan.cpp) for a given chunk
    size: work items (request, query tile, KV chunk), o_indptr (partial
    rows per request: qo_len * chunks) and merge_indptr (per query row)."""
    req, qt, kt, o_indptr, merge = [], [], [], [0], [0]
    for i, (ql, n) in enumerate(zip(qo_lens, pages)):
        tiles = -(-int(ql) * group // q_tile)
        nc = 0 if tiles == 0 else (-(-n // chunk_pages) if n > chunk_pages else 1)
        for t in range(tiles):
            for c in range(nc):
                req.append(i); qt.append(t); kt.append(c)
        base = o_indptr[-1]
        o_indptr.append(base + int(ql) * nc)
        for j in range(int(ql)):
            merge.append(base + (j + 1) * nc)
    w = len(req)
    padded = max(w, pad_to or w)
    valid = [1] * w + [0] * (padded - w)
    pad = [0] * (padded - w)
    return dict(request_indices=np.array(req + pad, np.int32),
                qo_tile_indices=np.array(qt + pad, np.int32),
                kv_tile_indices=np.array(kt + pad, np.int32),
                o_indptr=np.array(o_indptr, np.int32),
                merge_indptr=np.array(merge, np.int32),
                block_valid_mask=np.array(valid, np.uint8),
                kv_chunk_size=chunk_pages, num_work_items=padded,
                num_partial_rows=o_indptr[-1])
