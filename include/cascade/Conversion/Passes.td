//===- Passes.td - Cascade lowering passes -----------------*- tablegen -*-===//

#ifndef CASCADE_CONVERSION_PASSES_TD
#define CASCADE_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertCascadeToGPU : Pass<"convert-cascade-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Lower memref-form cascade ops to GPU kernels and launches";
  let description = [{
    Rewrites every memref-form cascade op inside a `func.func` into a
    `gpu.launch_func` of a kernel specialised on the op's static
    configuration (head_dim, dtypes, page size, GQA group, layout, options).
    The kernels live in one `gpu.module @cascade_kernels` (one `gpu.func` per
    distinct configuration). Operands are flattened on the host to 1-D
    `memref<?xT>` (the kernel-bundle ABI, docs/kernel-bundle.md); sizes are
    passed as scalars. Each kernel carries a `cascade.manifest` dictionary
    that `cascade-emit-bundle` turns into `manifest.json`.

    Supported: merge_state, merge_state_in_place (optional strided mask),
    merge_states, decode paged_attention (no qo_indptr) with or without a
    split-KV plan, and prefill paged_attention (qo_indptr, row-wise kernel,
    no plan). multi_level_attention must be decomposed first
    (cascade-decompose-levels; the cascade-to-ptx pipeline does it).
    Unsupported configurations fail with a diagnostic.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect", "::mlir::nvgpu::NVGPUDialect",
    "::mlir::NVVM::NVVMDialect", "::mlir::LLVM::LLVMDialect",
    "::mlir::func::FuncDialect"];
}

def CascadeEmitBundle : Pass<"cascade-emit-bundle", "::mlir::ModuleOp"> {
  let summary = "Write the PTX of gpu.binary ops plus manifest.json to a directory";
  let description = [{
    Run after `gpu-module-to-binary{format=isa}`: writes `kernels.ptx` (the
    PTX of `@cascade_kernels`) and `manifest.json` (docs/kernel-bundle.md)
    into `dir`. The IR is left unchanged.
  }];
  let options = [
    Option<"dir", "dir", "std::string", /*default=*/"\"\"",
           "Directory to write kernels.ptx and manifest.json into">,
  ];
}

#endif // CASCADE_CONVERSION_PASSES_TD
