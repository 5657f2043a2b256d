"""Kernel bundles (kernels.ptx + manifest.json, made by cascade-opt
--cascade-to-ptx) loaded with cupy and launched by name, every parameter
bound by name from the manifest (a memref is 5 values: ptr, ptr, 0, n, 1);
and `plan_buffers`, the kernel parameters of a runtime plan. This is a
launcher, not a planner: plans come from `cascade_mlir._runtime.plan` /
`auto_cascade`."""
import glob
import json
import os

import numpy as np
import cupy as cp

# The index arrays of a plan that kernels take as memrefs, and its scalars.
PLAN_ARRAYS = ("request_indices", "kv_tile_indices", "qo_tile_indices", "o_indptr",
               "merge_indptr", "block_valid_mask")
PLAN_SCALARS = ("padded_batch_size", "batch_size", "num_rows")


# The tensor-core attention families: wgmma where the bundle was lowered for
# sm_90a, mma_sync otherwise.
TENSOR_CORE = ("wgmma", "mma_sync")


def static_matches(static, wanted):
    """Whether a kernel's statics have every wanted value; a tuple matches
    any of its entries (TENSOR_CORE: a bundle holds one tensor-core family
    per op, as selected for its chip)."""
    return all(static.get(key) in val if isinstance(val, tuple) else static.get(key) == val
               for key, val in wanted.items())


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
            if static_matches(k["static"], static):
                return k["name"]
        raise KeyError(f"no {op} kernel with {static}")

    def function(self, name):
        k = self.kernels[name]
        ptx = os.path.join(self.path, k["ptx"])
        if ptx not in self.modules:
            # A cubin assembled ahead of time next to the PTX (ptxas -arch=
            # sm_90 kernels.ptx -o kernels.sm_90.cubin; sm_90a for the wgmma
            # bundles) saves the driver's JIT.
            cubins = sorted(glob.glob(ptx[:-len(".ptx")] + ".sm_*.cubin"))
            self.modules[ptx] = cp.RawModule(path=cubins[0] if cubins else ptx)
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
            # A scalar the caller does not give takes the manifest's default
            # (q's and o's contiguous strides).
            v = bufs[p["name"]] if p["name"] in bufs or "default" not in p else p["default"]
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
        # A decode's split merge adds a block per row tmp_s holds room for
        # (the compiler's launch reads it off tmp_s the same way).
        if "partial_rows_capacity" not in scalars and "tmp_s" in bufs:
            scalars["partial_rows_capacity"] = \
                int(bufs["tmp_s"].size) // k["static"]["num_qo_heads"]
        grid = self.grid(name, scalars)
        if 0 in grid:
            return
        fn = self.function(name)
        fn(grid, tuple(k["block"]), tuple(args), stream=stream,
           shared_mem=k.get("dynamic_shared_bytes", 0))


def occupancy(b, name):
    """Resident blocks per SM of a kernel, from its registers, shared memory
    and threads (H100/H200: 64K registers allocated per warp in units of
    256, 228 KiB shared memory with 1 KiB reserved per block, 2048 threads,
    32 blocks): the `occupancy` input of a runtime plan."""
    k = b.kernels[name]
    attrs = b.function(name).attributes
    threads = k["block"][0] * k["block"][1] * k["block"][2]
    warps = -(-threads // 32)
    regs = -(-attrs["num_regs"] * 32 // 256) * 256
    smem = k.get("dynamic_shared_bytes", 0) + attrs["shared_size_bytes"]
    by_smem = (228 * 1024) // (smem + 1024)
    return max(1, min(2048 // threads, 65536 // (regs * warps), by_smem, 32))


def num_sms():
    return cp.cuda.Device().attributes["MultiProcessorCount"]


def dev_i32(a):
    """A host int array as a device int32 array (one element if empty: a
    memref of size 0 has no pointer)."""
    a = np.asarray(a, np.int32)
    return cp.asarray(a) if a.size else cp.zeros(1, cp.int32)


def plan_buffers(plan, row_capacity=None):
    """The kernel parameters of a runtime plan (a dict of
    cascade_mlir._runtime.plan or a level's "plan" of auto_cascade): its
    index arrays on the device, kv_chunk_size as a one-element device array
    (graph-safe), and its scalars. row_capacity: the rows merge_indptr
    covers (len(merge_indptr) - 1, the plan's max_num_rows in CUDA-graph
    mode)."""
    bufs = {k: (cp.asarray(np.asarray(plan[k], np.uint8)) if k == "block_valid_mask"
                else dev_i32(plan[k])) for k in PLAN_ARRAYS}
    bufs["kv_chunk_size"] = dev_i32([plan["kv_chunk_size"]])
    for k in PLAN_SCALARS:
        bufs[k] = int(plan[k])
    bufs["row_capacity"] = int(row_capacity if row_capacity is not None
                               else len(plan["merge_indptr"]) - 1)
    return bufs


def cpa(t):
    """A torch tensor as a flat cupy array (no copy)."""
    return cp.asarray(t.detach().reshape(-1)) if t.numel() else cp.zeros(0, cp.float32)


def launch_all(b, launches):
    """A callable that launches [(kernel name, bufs), ...] in order on the
    current cupy stream (what graph_time_us captures)."""
    def run():
        for name, bufs in launches:
            b.launch(name, bufs)
    return run
