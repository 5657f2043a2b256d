//===- Passes.h - Cascade dialect passes ------------------------*- C++ -*-===//

#ifndef CASCADE_DIALECT_CASCADE_TRANSFORMS_PASSES_H
#define CASCADE_DIALECT_CASCADE_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;
namespace cascade {

#define GEN_PASS_DECL
#include "cascade/Dialect/Cascade/Transforms/Passes.h.inc"

/// Patterns that rewrite `cascade.multi_level_attention` into per-level
/// `cascade.paged_attention` and `cascade.merge_state_in_place`.
/// Patterns rewriting cascade.multi_level_attention into per-level
/// cascade.paged_attention ops; with `fuseMerges`, every level after the
/// first merges itself into the running state (`accumulate`), otherwise it
/// writes a temporary that cascade.merge_state_in_place folds in.
void populateDecomposeLevelsPatterns(RewritePatternSet &patterns,
                                     bool fuseMerges = true);

#define GEN_PASS_REGISTRATION
#include "cascade/Dialect/Cascade/Transforms/Passes.h.inc"

} // namespace cascade
} // namespace mlir

#endif // CASCADE_DIALECT_CASCADE_TRANSFORMS_PASSES_H
