//===- CascadeOps.h - Cascade dialect operations ----------------*- C++ -*-===//

#ifndef CASCADE_DIALECT_CASCADE_IR_CASCADEOPS_H
#define CASCADE_DIALECT_CASCADE_IR_CASCADEOPS_H

#include "cascade/Dialect/Cascade/IR/CascadeDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_TYPEDEF_CLASSES
#include "cascade/Dialect/Cascade/IR/CascadeOpsTypes.h.inc"

#define GET_OP_CLASSES
#include "cascade/Dialect/Cascade/IR/CascadeOps.h.inc"

namespace mlir::cascade {
/// Number of plan operands of a split-KV decode `cascade.paged_attention`:
/// request_indices, kv_tile_indices, o_indptr, block_valid_mask,
/// kv_chunk_size, tmp_v, tmp_s.
inline constexpr unsigned kNumPlanOperands = 7;
/// A split-KV prefill (with qo_indptr) adds qo_tile_indices and
/// merge_indptr.
inline constexpr unsigned kNumPrefillPlanOperands = 9;
/// Positions of the plan operands.
enum PlanOperand : unsigned {
  kPlanRequestIndices = 0,
  kPlanKVTileIndices = 1,
  kPlanOIndptr = 2,
  kPlanBlockValidMask = 3,
  kPlanKVChunkSize = 4,
  kPlanTmpV = 5,
  kPlanTmpS = 6,
  kPlanQOTileIndices = 7,
  kPlanMergeIndptr = 8,
};

/// Checks that `planType` is a !cascade.plan that fits an attention level:
/// decode or prefill as the level, the heads and head_dim of `q` and the KV
/// cache (`kv0`: a 5-D pool or the 4-D keys of a pair, in `layout`), the
/// page size, and in CUDA-graph mode a row capacity that holds q's static
/// rows. `where` names the level in messages (e.g. " [1]").
LogicalResult verifyLevelPlan(Operation *op, Type planType, bool decode,
                              ShapedType q, ShapedType kv0, bool pool,
                              KVLayout layout, int64_t pageSize,
                              const Twine &where);
} // namespace mlir::cascade

#endif // CASCADE_DIALECT_CASCADE_IR_CASCADEOPS_H
