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
}
namespace gpu {
class GPUDialect;
}
namespace memref {
class MemRefDialect;
}
namespace scf {
class SCFDialect;
}
namespace vector {
class VectorDialect;
}
namespace nvgpu {
class NVGPUDialect;
}
namespace NVVM {
class NVVMDialect;
}
namespace LLVM {
class LLVMDialect;
}
namespace func {
class FuncDialect;
}

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
};
/// Adds the cascade-to-ptx pipeline to `pm` (anchored on builtin.module).
void buildCascadeToPTXPipeline(OpPassManager &pm,
                               const CascadeToPTXOptions &options);

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
