//===- IRBuilders.h - Cascade IR built through the C++ API ------*- C++ -*-===//
//
// The modules an embedder with a configuration needs (an attention call for
// inspection, the kernels of a bundle; the Python package and cascade-compile
// are two) built with the dialect's C++ builders: no IR text is formatted, so
// every attribute value (sm_scale = 1e-05, say) is exact.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_BUILDERS_IRBUILDERS_H
#define CASCADE_BUILDERS_IRBUILDERS_H

#include "cascade/Contract/AttentionConfig.h"
#include "cascade/Contract/BundleKey.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <vector>

namespace cascade::builders {

/// The static configuration of an attention call (docs/semantics.md): the
/// contract's, which the runtime and the GPU program's checks share.
using AttentionConfig = contract::AttentionConfig;

/// One cascade.paged_attention in a function `name` (its KV form is the
/// configuration's): a kernel group (decode or prefill, causal, accumulating,
/// FlashInfer's custom mask as custom_mask i8 / mask_indptr i32 operands
/// after kv_last_page_len, the group's state inputs as f32 [Hqo] operands
/// after them, in the group's order), split-KV or not.
struct AttentionCall : contract::AttentionGroup {
  bool split = false;
  /// Tensor form (value semantics, the function returns (o, lse)); else the
  /// buffer form the GPU lowering consumes.
  bool tensors = false;

  AttentionCall() = default;
  AttentionCall(const contract::AttentionGroup &group, bool split,
                bool tensors = false)
      : contract::AttentionGroup(group), split(split), tensors(tensors) {}
};

void addAttentionFunc(mlir::ModuleOp module, const std::string &name,
                      const AttentionConfig &c, const AttentionCall &call);

/// A tensor-form cascade.multi_level_attention over one page pool (one
/// level: paged_attention with qo_indptr). Levels in `sharedLevels` get static
/// 2-entry qo/kv indptr types; `decodeLevels` (if not empty) becomes the
/// decode_levels attribute; levels in `raggedLevels` have no kv_indices
/// argument (the ragged_levels attribute).
void addMultiLevelFunc(mlir::ModuleOp module, const std::string &name,
                       const AttentionConfig &c, int64_t numLevels,
                       const std::vector<int64_t> &sharedLevels,
                       const std::vector<bool> &decodeLevels, bool causal,
                       const std::vector<int64_t> &raggedLevels = {});

/// Buffer-form merge_state, merge_state_in_place (without and with an i8
/// mask) and merge_states of `vType` states with `headDim`.
void addMergeFuncs(mlir::ModuleOp module, contract::DType vType,
                   int64_t headDim);

mlir::OwningOpRef<mlir::ModuleOp> newModule(mlir::MLIRContext &context);

} // namespace cascade::builders

#endif // CASCADE_BUILDERS_IRBUILDERS_H
