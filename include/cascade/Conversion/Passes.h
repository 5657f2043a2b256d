//===- Passes.h - Cascade lowering passes -----------------------*- C++ -*-===//

#ifndef CASCADE_CONVERSION_PASSES_H
#define CASCADE_CONVERSION_PASSES_H

#include "mlir/Pass/Pass.h"
#include <string>

namespace mlir {
class DialectRegistry;
class RewritePatternSet;
class ModuleOp;
namespace arith {
class ArithDialect;
} // namespace arith
namespace gpu {
class GPUDialect;
} // namespace gpu
namespace memref {
class MemRefDialect;
} // namespace memref
namespace scf {
class SCFDialect;
} // namespace scf
namespace vector {
class VectorDialect;
} // namespace vector
namespace nvgpu {
class NVGPUDialect;
} // namespace nvgpu
namespace NVVM {
class NVVMDialect;
} // namespace NVVM
namespace LLVM {
class LLVMDialect;
} // namespace LLVM
namespace func {
class FuncDialect;
} // namespace func

namespace cascade {
class CascadeDialect;

#define GEN_PASS_DECL
#include "cascade/Conversion/Passes.h.inc"

/// Options of the `cascade-to-ptx` pipeline.
struct CascadeToPTXOptions {
  std::string chip = "sm_90";
  std::string features = "+ptx80";
  unsigned optLevel = 3;
  std::string bundleDir;
  /// One gpu.module and one PTX file per kernel (cascade-split-kernel-modules):
  /// the kernels are lowered, code-generated and assembled independently, in
  /// parallel where the context is multithreaded. Each kernel's PTX is the
  /// one the single module gives.
  bool ptxPerKernel = false;
  /// A remark per gpu.module with the wall time of its serialization.
  bool remarkTimes = false;
  /// Options of cascade-select-kernel-config in its pass-option syntax
  /// ("rows-threads=256 rows-min-blocks-per-sm=5"), for tuning experiments:
  /// the bundle's key does not record them. The chip is the pipeline's.
  std::string selectOptions;
};
/// Adds the cascade-to-ptx pipeline to `pm` (anchored on builtin.module);
/// fails (through `errorHandler`) on bad selectOptions.
LogicalResult buildCascadeToPTXPipeline(
    OpPassManager &pm, const CascadeToPTXOptions &options,
    function_ref<LogicalResult(const Twine &)> errorHandler);

/// Registers the conversion passes and the `cascade-to-ptx` pipeline.
void registerConversionPasses();
/// Registers the dialects and translation/ConvertToLLVM interfaces that the
/// lowering to PTX needs.
void registerConversionDialects(DialectRegistry &registry);

#define GEN_PASS_REGISTRATION
#include "cascade/Conversion/Passes.h.inc"

} // namespace cascade
} // namespace mlir

#endif // CASCADE_CONVERSION_PASSES_H
