//===- FamilySelection.h - What a family's selection rule sees --*- C++ -*-===//
//
// The input of a kernel family's selection rule (its `applies` and `choose`
// in FamilyRegistry.h): the op's shape as selection analysed it, the
// options of cascade-select-kernel-config, the target chip, and selection's
// check of a configuration against the chip. KernelConfig.cpp builds it; the
// families' rules (rows/, mma_sync/, wgmma/, merge/) only read it.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_LIB_CONVERSION_CASCADETOGPU_FAMILYSELECTION_H
#define CASCADE_LIB_CONVERSION_CASCADETOGPU_FAMILYSELECTION_H

#include "cascade/Conversion/Passes.h"
#include "cascade/Conversion/TargetInfo.h"
#include "cascade/Dialect/Cascade/IR/CascadeOps.h"

namespace mlir {
namespace cascade {

/// What selection looks at in an op.
struct OpShape {
  bool merge = false;
  int64_t headDim = 0;
  /// Attention: the head_dim of v and the output (headDim unless the op's
  /// (k, v) pair has a narrower v).
  int64_t headDimVo = 0;
  /// Attention only.
  int64_t group = 1;
  bool decode = false;
  /// q and KV of different element types.
  bool mixedTypes = false;
  /// Attention: the element types of q and KV.
  Type qType, kvType;
  /// Options computed per score (ALiBi bias, soft cap) or per tile (RoPE in
  /// shared memory): they need registers that a 128-row tile does not leave.
  bool heavyOptions = false;
  /// A custom mask operand: a word of mask bits per 32 scores of a row.
  bool customMask = false;
  /// Attention: planned (split-KV work items from a plan) or accumulating
  /// into a state (a fused cascade level).
  bool planned = false;
  bool accumulate = false;
  /// Attention: the causal mask.
  bool causal = false;
  /// Attention: RoPE rotates the K tiles in shared memory.
  bool rope = false;
  /// Attention: pages looked up in kv_indices (false: ragged K/V), of
  /// pageSize tokens.
  bool pageTable = true;
  int64_t pageSize = 0;
};

/// Everything a family's choice depends on.
struct SelectionInput {
  Operation *op;
  const OpShape &shape;
  /// The options of cascade-select-kernel-config (KernelConfigOptions).
  const CascadeSelectKernelConfigOptions &opts;
  const TargetInfo &target;
  /// Whether a block of `op`'s kernel with a configuration fits the
  /// target's shared memory and threads.
  function_ref<bool(KernelConfigAttr)> fits;
  /// The same, failing with a diagnostic on `op` where it does not.
  function_ref<LogicalResult(KernelConfigAttr)> verifyFits;
};

} // namespace cascade
} // namespace mlir

#endif // CASCADE_LIB_CONVERSION_CASCADETOGPU_FAMILYSELECTION_H
