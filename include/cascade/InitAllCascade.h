//===- InitAllCascade.h - Register everything Cascade-MLIR has --*- C++ -*-===//
//
// The one entry point an embedding compiler (or an opt tool of its own) calls
// to use the cascade dialect, its passes and its lowerings.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_INITALLCASCADE_H
#define CASCADE_INITALLCASCADE_H

namespace mlir {
class DialectRegistry;
namespace cascade {

/// Registers the cascade dialect and its external interface models
/// (bufferization) in `registry`.
void registerCascadeDialect(DialectRegistry &registry);

/// Registers the cascade dialect plus every upstream dialect and interface
/// that the cascade lowerings produce or need (GPU, NVVM, NVGPU, LLVM
/// translation, ConvertToLLVM, bufferization models).
void registerAllCascadeDialects(DialectRegistry &registry);

/// Registers the cascade passes and pipelines with the global registry.
void registerAllCascadePasses();

} // namespace cascade
} // namespace mlir

#endif // CASCADE_INITALLCASCADE_H
