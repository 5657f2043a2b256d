//===- IRBuilders.h - Cascade IR built through the C++ API ------*- C++ -*-===//
//
// The modules the Python package needs (an attention call for inspection,
// the kernels of a bundle) built with the dialect's C++ builders: no IR text
// is formatted, so every attribute value (sm_scale = 1e-05, say) is exact.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_PYTHON_IRBUILDERS_H
#define CASCADE_PYTHON_IRBUILDERS_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <optional>
#include <string>
#include <vector>

namespace cascade::python {

/// The static configuration of an attention call (docs/semantics.md).
struct AttentionConfig {
  std::string qType = "f16", kvType = "f16"; ///< f16 / bf16
  int64_t headDim = 128, numQoHeads = 32, numKvHeads = 8, pageSize = 16;
  bool hnd = false;
  std::optional<double> smScale;
  double logitsSoftCap = 0, ropeScale = 1, ropeTheta = 1e4;
  int64_t windowLeft = -1;
  std::string posEncoding = "none"; ///< none / rope_llama / alibi
  bool lseBaseE = false;
};

/// One cascade.paged_attention in a function `name`.
struct AttentionCall {
  bool decode = true, causal = false, accumulate = false, split = false,
       pair = false;
  /// Tensor form (value semantics, the function returns (o, lse)); else the
  /// buffer form the GPU lowering consumes.
  bool tensors = false;
};

void addAttentionFunc(mlir::ModuleOp module, const std::string &name,
                      const AttentionConfig &c, const AttentionCall &call);

/// A tensor-form cascade.multi_level_attention (one level: paged_attention
/// with qo_indptr). Levels in `sharedLevels` get static 2-entry qo/kv indptr
/// types; `decodeLevels` (if not empty) becomes the decode_levels attribute.
void addMultiLevelFunc(mlir::ModuleOp module, const std::string &name,
                       const AttentionConfig &c, int64_t numLevels,
                       const std::vector<int64_t> &sharedLevels,
                       const std::vector<bool> &decodeLevels, bool causal);

/// Buffer-form merge_state, merge_state_in_place (without and with an i8
/// mask) and merge_states of `vType` states with `headDim`.
void addMergeFuncs(mlir::ModuleOp module, const std::string &vType,
                   int64_t headDim);

mlir::OwningOpRef<mlir::ModuleOp> newModule(mlir::MLIRContext &context);

} // namespace cascade::python

#endif // CASCADE_PYTHON_IRBUILDERS_H
