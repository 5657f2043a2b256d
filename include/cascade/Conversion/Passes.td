//===- Passes.td - Cascade lowering passes -----------------*- tablegen -*-===//

#ifndef CASCADE_CONVERSION_PASSES_TD
#define CASCADE_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def CascadeSelectKernelConfig
    : Pass<"cascade-select-kernel-config", "::mlir::ModuleOp"> {
  let summary = "Choose the kernel family and tiling of every cascade op";
  let description = [{
    Records on every merge op and `cascade.paged_attention` (outside GPU
    modules) the discardable attribute `cascade.kernel_config =
    #cascade.kernel_config<...>`: the kernel family (`merge`, `rows`: CUDA
    cores, `mma_sync`: tensor cores, `wgmma`: Hopper's warpgroup tensor
    cores) and its threads, tiles and pipeline
    depth. Ops that already carry one keep it unless `overwrite` is set, so a
    hand-written configuration tunes one op. `convert-cascade-to-gpu` builds
    one kernel per distinct (static op configuration, kernel configuration).

    Defaults: merges one state per head_dim/8 threads; decode with GQA groups
    up to `rows-max-group` (`rows-max-group-fp8`, 1, over an fp8 KV cache:
    the rows kernel's f32 FMAs per KV byte double with fp8 and grow with the
    group) and head_dim 8..256 a power of two on the `rows` family; fp8
    decode of larger groups on `mma_sync` in 64-key tiles split over 4
    warps with 4 staging stages; everything else
    (prefill/append, shared-prefix levels, large groups, other head dims)
    on `mma_sync`, within the shared memory of the
    target chip; on sm_90a, prefill/append and shared-prefix levels with q
    and KV of one dtype, or an fp8 KV cache, and head_dim 64, 128 or 256 on
    `wgmma` instead (`wgmma=false` keeps them on `mma_sync`; head_dim 96
    and 192, which are not whole 128-byte swizzle panels, and decode stay
    on `mma_sync`; so do fp8 ops with `wgmma-split-kv-barriers`, which the
    fp8 producer does not take).
    `wgmma-split-kv-barriers` gives the wgmma configurations K and V
    barrier rings of their own (`kv_barriers = split`, FlashAttention-3's
    separate K and V pipelines; off by default).
    fp8 queries (q of the fp8 KV cache's type) run on `wgmma` only, both
    products on fp8 tensor cores (`wgmma-fp8-operands`, on by default;
    `=false` refuses such ops with the reason): head_dim 128, 128-key
    tiles, two consumer warpgroups.

    The target chip (its shared-memory, register and instruction limits,
    `cascade/Conversion/TargetInfo.h`) is the chip of the `#nvvm.target`
    attached to the module's `gpu.module`s where there is one, else the
    `chip` option, else sm_90. A `chip` option that disagrees with an
    attached target, gpu.modules for different chips and unknown chips are
    errors. Configurations already on ops are checked against the chip's
    shared memory.

    Example:

    ```mlir
    cascade.paged_attention q(%q : memref<?x32x128xf16>) ... {page_size = 16 : i64}
    ```

    becomes

    ```mlir
    cascade.paged_attention q(%q : memref<?x32x128xf16>) ... {page_size = 16 : i64,
        cascade.kernel_config = #cascade.kernel_config<mma_sync,
            threads = [32, 4, 1], q_tile = 128, kv_tile = 64, stages = 2>}
    ```
  }];
  let options = [
    Option<"overwrite", "overwrite", "bool", /*default=*/"false",
           "Replace configurations already on the ops">,
    Option<"chip", "chip", "std::string", /*default=*/"\"\"",
           "Target chip (sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a); empty: "
           "the attached #nvvm.target's, else sm_90">,
    Option<"mergeThreads", "merge-threads", "int64_t", /*default=*/"128",
           "Merge kernels: threads per block">,
    Option<"rowsThreads", "rows-threads", "int64_t", /*default=*/"128",
           "rows family: threads per block">,
    Option<"rowsKVTile", "rows-kv-tile", "int64_t", /*default=*/"32",
           "rows family: KV tokens per pipeline stage">,
    Option<"rowsMaxStages", "rows-max-stages", "int64_t", /*default=*/"4",
           "rows family: deepest cp.async pipeline">,
    Option<"rowsSmemKiB", "rows-smem-kib", "int64_t", /*default=*/"40",
           "rows family: shared memory budget of the K/V stages (KiB)">,
    Option<"rowsMinBlocksPerSM", "rows-min-blocks-per-sm", "int64_t",
           /*default=*/"0",
           "rows family: the min_blocks_per_sm launch bound (0 = none)">,
    Option<"rowsMaxGroup", "rows-max-group", "int64_t", /*default=*/"8",
           "Largest GQA group that decodes on the rows family">,
    Option<"rowsMaxGroupFp8", "rows-max-group-fp8", "int64_t",
           /*default=*/"1",
           "Largest GQA group that decodes on the rows family over an fp8 "
           "KV cache (larger groups decode on mma_sync)">,
    Option<"mmaQTile", "mma-q-tile", "int64_t", /*default=*/"0",
           "mma_sync: packed query rows per block (0 = automatic)">,
    Option<"mmaKVTile", "mma-kv-tile", "int64_t", /*default=*/"0",
           "mma_sync: KV tokens per pipeline stage (0 = automatic)">,
    Option<"mmaStages", "mma-stages", "int64_t", /*default=*/"0",
           "mma_sync: cp.async pipeline stages (0 = automatic)">,
    Option<"mmaWarpsKV", "mma-warps-kv", "int64_t", /*default=*/"0",
           "mma_sync: warps along the KV tile (0 = automatic)">,
    Option<"mmaMinBlocksPerSM", "mma-min-blocks-per-sm", "int64_t",
           /*default=*/"-1",
           "mma_sync: the min_blocks_per_sm launch bound (-1 = automatic, "
           "0 = none)">,
    Option<"wgmma", "wgmma", "bool", /*default=*/"true",
           "Use the wgmma family where the chip has it (sm_90a)">,
    Option<"wgmmaKVTile", "wgmma-kv-tile", "int64_t", /*default=*/"0",
           "wgmma: KV tokens per pipeline stage (0 = automatic)">,
    Option<"wgmmaStages", "wgmma-stages", "int64_t", /*default=*/"0",
           "wgmma: shared-memory ring stages (0 = automatic)">,
    Option<"wgmmaConsumers", "wgmma-consumers", "int64_t", /*default=*/"0",
           "wgmma: consumer warpgroups, 64 query rows each (0 = automatic)">,
    Option<"wgmmaFp8Operands", "wgmma-fp8-operands", "bool",
           /*default=*/"true",
           "wgmma: run ops with fp8 queries (q of the fp8 KV cache's type) "
           "on fp8 tensor cores (false: refuse them)">,
    Option<"wgmmaSplitKVBarriers", "wgmma-split-kv-barriers", "bool",
           /*default=*/"false",
           "wgmma: K and V tiles in rings of their own, each under its own "
           "full/empty mbarriers (kv_barriers = split)">,
    Option<"wgmmaSweepTiles", "wgmma-sweep-tiles", "bool", /*default=*/"true",
           "wgmma: the KV tiles of the prefill-shape sweep (96 tokens for "
           "three consumers at head_dim 64; at head_dim 256 tiles shrunk by "
           "16 tokens until a joint ring of three stages fits, 48, instead "
           "of two split stages of 64); false: the former 64-token tiles">,
    Option<"wgmmaExp2Emulation", "wgmma-exp2-emulation", "int64_t",
           /*default=*/"0",
           "wgmma: eighths of the S columns whose exp2 the softmax evaluates "
           "with a polynomial instead of MUFU.EX2 (exp2_emulation)">,
    Option<"wgmmaPageLookahead", "wgmma-page-lookahead", "bool",
           /*default=*/"false",
           "wgmma: page_lookahead where the op allows it (the schedule "
           "whose copies publish their tile); off: right against float64 "
           "on the H100 but no faster (0.80-0.95 of SDPA against "
           "0.88-0.95 without)">,
    Option<"wgmmaHeadDimVo", "wgmma-head-dim-vo", "bool",
           /*default=*/"true",
           "wgmma: also ops whose v and output are narrower than q and k "
           "(head_dim_vo a multiple of 64, DeepSeek's 192 / 128 prefill), "
           "16-bit KV without RoPE (false: mma_sync)">,
  ];
  let dependentDialects = ["::mlir::cascade::CascadeDialect"];
}

def ConvertCascadeToGPU : Pass<"convert-cascade-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Lower memref-form cascade ops to GPU kernels and launches";
  let description = [{
    Rewrites every memref-form cascade op inside a `func.func` into
    `gpu.launch_func`s of kernels specialised on the op's static configuration
    (head_dim, dtypes, page size, GQA group, layout, options) and its
    `cascade.kernel_config` (the defaults of `cascade-select-kernel-config`
    where an op has none). Ops with equal configurations share a kernel; each
    kernel is built once, in `gpu.module @cascade_kernels`, by its family's
    generator (merge, rows, mma_sync). Kernel names spell the configuration
    out. Operands are flattened on the host to 1-D `memref<?xT>` (the
    kernel-bundle ABI, docs/kernel-bundle.md); sizes are passed as scalars.
    Each kernel carries a `cascade.manifest` dictionary that
    `cascade-emit-bundle` turns into `manifest.json`.

    Attention levels: decode and prefill/append, with or without a split-KV
    plan (then a second kernel merges the partial states), and
    `accumulate` (the level merges itself into the state held by its
    destinations, in the epilogue of its last kernel). Host buffers that
    `memref.alloc` creates for the kernels become `gpu.alloc` device
    buffers. `multi_level_attention` must be decomposed first
    (cascade-decompose-levels; the cascade-to-ptx pipeline does it).
    Unsupported configurations fail with one diagnostic each.

    On sm_90 and newer every kernel takes part in programmatic dependent
    launch: its threads first wait for the grids launched before it
    (`nvvm.griddepcontrol wait`, a no-op for a plain launch) and then let
    the grids after it start (`launch_dependents`); its manifest entry says
    `"pdl": true`.

    Example: `cascade-opt --convert-cascade-to-gpu=chip=sm_90a in.mlir`.
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"\"",
           "The chip the kernels are built for (empty: the attached "
           "#nvvm.target, else sm_90)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect", "::mlir::nvgpu::NVGPUDialect",
    "::mlir::NVVM::NVVMDialect", "::mlir::LLVM::LLVMDialect",
    "::mlir::func::FuncDialect"];
}

def CascadeLowerPlans : Pass<"cascade-lower-plans", "::mlir::ModuleOp"> {
  let summary = "Lower run-time plans to calls of the runtime shim";
  let description = [{
    Run on memref form after `cascade-select-kernel-config`. Every
    `cascade.plan` becomes a call of the runtime shim's
    `cascade_mgpu_plan` (libcascade_mlir_cuda_runtime, docs/runtime.md):
    the runtime's makePlan on the host index arrays, with the SM count of
    the device, the query tile of the level's kernel configuration and its
    resident blocks per SM (the op's `occupancy`, else estimated from the
    configuration and the chip); the plan lives in a global slot of the op,
    so every execution replans into the same workspaces. Every
    `cascade.paged_attention` that takes a `!cascade.plan` becomes an
    `scf.if` on the plan's split flag: the split-KV launch with the planned
    arrays and workspaces (memref descriptors from the shim), or the
    self-scheduled launch. `!cascade.plan` values become `!llvm.ptr`,
    across function signatures, calls and returns too (a plan function and
    a run function).
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"\"",
           "Target chip of the occupancy estimate (empty: sm_90)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"];
}

def CascadeSplitKernelModules
    : Pass<"cascade-split-kernel-modules", "::mlir::ModuleOp"> {
  let summary = "One gpu.module per kernel, so that kernels compile apart";
  let description = [{
    Moves every kernel (`gpu.func` with `gpu.kernel`) of every `gpu.module`
    into a `gpu.module` of its own, named after the kernel, with the
    attributes (targets) of the module it came from and a copy of each
    other symbol (globals, helper functions) the kernel uses, and points
    the `gpu.launch_func` ops at it. The kernels' code does not change; the
    pipeline's nested passes and `cascade-gpu-module-to-binary` then lower
    sibling modules in parallel (where the context is multithreaded), and
    `cascade-emit-bundle` writes one PTX file per kernel that `ptxas` can
    assemble in parallel.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def CascadeGpuModuleToBinary
    : Pass<"cascade-gpu-module-to-binary", "::mlir::ModuleOp"> {
  let summary = "gpu-module-to-binary with the modules serialized in parallel";
  let description = [{
    Upstream `gpu-module-to-binary` (every target of every `gpu.module`
    serialized, the module replaced by a `gpu.binary` of the same name),
    with the modules' serializations (LLVM IR translation, optimisation and
    code generation, each with an LLVMContext of its own) run in parallel on
    the context's thread pool when the context is multithreaded. The objects
    are the same as upstream's.
  }];
  let options = [
    Option<"compilationTarget", "format", "std::string", /*default=*/"\"isa\"",
           "The target representation of the compilation (upstream's "
           "format= values)">,
    Option<"remarkTimes", "remark-times", "bool", /*default=*/"false",
           "A remark on every module with its serialization's wall time">,
  ];
}

def CascadeEmitBundle : Pass<"cascade-emit-bundle", "::mlir::ModuleOp"> {
  let summary = "Write the PTX of gpu.binary ops plus manifest.json to a directory";
  let description = [{
    Run after `gpu-module-to-binary{format=isa}`: writes the PTX of every
    `gpu.binary` (`kernels.ptx` for `@cascade_kernels`, `<name>.ptx` for a
    binary `@<name>` of `cascade-split-kernel-modules`) and `manifest.json`
    (docs/kernel-bundle.md; each kernel's `ptx` names the file that holds
    its `.entry`) into `dir`. The IR is left unchanged.
  }];
  let options = [
    Option<"dir", "dir", "std::string", /*default=*/"\"\"",
           "Directory to write kernels.ptx and manifest.json into">,
  ];
}

#endif // CASCADE_CONVERSION_PASSES_TD
