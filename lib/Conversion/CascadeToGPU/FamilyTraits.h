//===- FamilyTraits.h - What a kernel family is, as data --------*- C++ -*-===//
//
// The facts about one kernel family that selection (KernelConfig.cpp), spec
// analysis (KernelSpec.cpp) and plan lowering (LowerPlans.cpp) read: its
// names, the KV types it takes on a chip, its shared memory and registers,
// and what it cannot run. Each family defines its traits in its folder
// (rows/, mma_sync/, wgmma/, merge/); FamilyRegistry.h lists them. The
// traits depend on nothing but the dialect and the target: the readers
// depend on them, never the other way round.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_LIB_CONVERSION_CASCADETOGPU_FAMILYTRAITS_H
#define CASCADE_LIB_CONVERSION_CASCADETOGPU_FAMILYTRAITS_H

#include "cascade/Conversion/TargetInfo.h"
#include "cascade/Dialect/Cascade/IR/CascadeOps.h"

#include <string>

namespace mlir {
namespace cascade {

/// The latent (MLA) form of paged attention (`q_pe`, a (ckv, kpe) cache):
/// no family runs it yet, so selection and spec analysis refuse it with
/// this diagnostic (the runtime's float64 reference computes it).
inline LogicalResult refuseLatentAttention(PagedAttentionOp op) {
  if (!op.isLatent())
    return success();
  return op.emitOpError("the latent (MLA) form has no kernel family yet: "
                        "no family takes a (ckv, kpe) cache");
}

/// What a family's traits look at in an attention op (or its spec).
struct AttentionShape {
  int64_t headDim = 0;
  /// The head_dim of v and the output (headDim unless the op's (k, v) pair
  /// has a narrower v).
  int64_t headDimVo = 0;
  /// The GQA group size (query heads a KV head).
  int64_t groupSize = 1;
  /// Element types of q and the KV cache.
  Type qType, kvType;
  bool decode = false;
  /// Split-KV work items from a plan.
  bool split = false;
  /// RoPE rotates the K tiles in shared memory.
  bool rope = false;
  /// A custom mask operand (its side data is sized by groupSize).
  bool customMask = false;
  /// Pages looked up in kv_indices (false: ragged K/V), of pageSize tokens.
  bool pageTable = true;
  int64_t pageSize = 0;
};

/// One kernel family's facts. The function pointers take the family's own
/// #cascade.kernel_config.
struct KernelFamilyTraits {
  KernelFamily family;
  /// The family's name in the bundle manifest (kernel_family).
  StringRef contractName;
  /// Its part of a kernel's name (`_rows`, `_mma`, `_wgmma`, `_merge`).
  StringRef kernelTag;
  /// Whether the family reads a KV cache of element type `kvType` with
  /// queries of `qType` on `target` (false for merge, which reads no KV).
  bool (*supportsKVType)(Type qType, Type kvType, const TargetInfo &target);
  /// The dynamic shared memory (bytes) of a block for an attention op of
  /// `shape`; null where the family's shared memory is static (rows,
  /// merge).
  int64_t (*dynamicSharedBytes)(KernelConfigAttr config,
                                const AttentionShape &shape);
  /// The static shared memory (bytes) a block holds at least (rows: its
  /// K/V stages); null where the family has none to count. A launch bound
  /// (min_blocks_per_sm) is checked against it with the dynamic part.
  int64_t (*staticSharedBytes)(KernelConfigAttr config,
                               const AttentionShape &shape);
  /// Registers a thread of the family's kernels uses, as occupancy
  /// estimates take it.
  int64_t (*registersPerThread)(KernelConfigAttr config,
                                const TargetInfo &target);
  /// Why a kernel of `config` cannot run an attention op of `shape` (empty
  /// where it can): the family's part of spec analysis (the limit on
  /// dynamic shared memory is checked for every family in analyseAttention).
  /// Family-specific variants are the configuration's (mma_sync's
  /// fp8_staging): this also says why `config` asks for one that `shape`
  /// cannot take.
  std::string (*whyNotAttention)(KernelConfigAttr config,
                                 const AttentionShape &shape);
};

} // namespace cascade
} // namespace mlir

#endif // CASCADE_LIB_CONVERSION_CASCADETOGPU_FAMILYTRAITS_H
