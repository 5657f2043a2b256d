//===- KernelArgs.h - A kernel's arguments, bound by name -------*- C++ -*-===//
//
// The parameters of a kernel are declared once, in order, by its spec
// (`AttentionSpec::params`, `MergeSpec::params`): the manifest and the host
// launch read that list. Generators never index the gpu.func's arguments by
// position; they bind them by name here, from that same list, into a typed
// struct whose fields are null where the spec has no such parameter.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_LIB_CONVERSION_CASCADETOGPU_COMMON_KERNELARGS_H
#define CASCADE_LIB_CONVERSION_CASCADETOGPU_COMMON_KERNELARGS_H

#include "common/KernelSupport.h"

#include "llvm/ADT/StringMap.h"

namespace mlir {
namespace cascade {

struct AttentionSpec;
struct MergeSpec;

/// The block arguments of a kernel by parameter name.
class KernelArgs {
public:
  /// Pairs `params` (the spec's list) with `fn`'s entry block arguments;
  /// they must agree in number.
  KernelArgs(ArrayRef<KernelParam> params, gpu::GPUFuncOp fn);

  /// The argument named `name`; null when the kernel has none.
  Value lookup(StringRef name) const { return byName.lookup(name); }
  /// The argument named `name`, which the kernel must have.
  Value get(StringRef name) const;

private:
  llvm::StringMap<Value> byName;
};

/// The arguments of an attention kernel (either family).
struct AttentionArgs {
  Value q;
  /// K and V pages: one pool (kv_cache; both fields hold it) or k_cache and
  /// v_cache.
  Value kCache, vCache;
  Value qoIndptr; ///< prefill only
  Value kvIndptr, kvIndices, kvLastPageLen;
  /// A custom mask's packed bits (i8) and per-request byte offsets (i32);
  /// null without one.
  Value customMask, maskIndptr;
  /// The buffers of the state inputs the epilogue folds, f32 [Hqo] each,
  /// in the spec's order (AttentionSpec::epilogueStateInputs).
  SmallVector<Value, 1> stateInputs;
  // The plan of a split-KV level.
  Value requestIndices, kvTileIndices, oIndptr, blockValidMask, kvChunkSize;
  Value tmpV, tmpS;
  Value qoTileIndices; ///< split prefill only
  Value o, lse;
  /// The scalar the grid is sized from (AttentionSpec::gridParam).
  Value gridCount;
  /// batch_size (null where the kernel does not take it).
  Value batchSize;
  /// The fp8 dequantization scales, f32 (null unless KV is fp8).
  Value kScale, vScale;
  /// Element strides (i64) of q's and o's rows and heads.
  Value qStrideN, qStrideH, oStrideN, oStrideH;
  /// Ragged K/V: element strides (i64) of a token and a head (null with a
  /// page table).
  Value kvStrideN, kvStrideH;
  /// Ragged V's own strides where its head_dim differs from k's (null
  /// otherwise: V shares K's).
  Value vStrideN, vStrideH;
  /// A paged cache's page stride (i64; null without a page table), and V's
  /// own where its head_dim differs from k's.
  Value kvStridePage, vStridePage;

  /// Element offsets of (token, head)'s row of q and of o (index values).
  Value qOffset(KernelBuilder &k, Value token, Value head) const;
  Value oOffset(KernelBuilder &k, Value token, Value head) const;

  static AttentionArgs bind(const AttentionSpec &spec, gpu::GPUFuncOp fn);
};

/// The arguments of a merge kernel; the fields a merge kind does not take
/// are null.
struct MergeArgs {
  // merge_state: (v_a, s_a) and (v_b, s_b) into (v, s).
  Value vA, sA, vB, sB;
  // merge_state_in_place: (v_other, s_other) into (v, s), optional mask.
  Value vOther, sOther, mask, maskStride;
  // merge_states: num_states states (v_in, s_in) per row into (v, s).
  Value vIn, sIn, numStates;
  Value v, s, numTasks, numHeads;
  // merge_states_indptr: rows indptr[i] .. indptr[i + 1] of tmp_v / tmp_s
  // into (o, lse); by row: the real rows are qo_indptr[batch_size].
  Value indptr, tmpV, tmpS, o, lse, qoIndptr, rowCapacity, batchSize, numRows;
  /// The level's state inputs, f32 [heads] each, in the spec's order.
  SmallVector<Value, 1> stateInputs;
  /// merge_states_indptr: element strides (i64) of o's rows and heads.
  Value oStrideN, oStrideH;

  static MergeArgs bind(const MergeSpec &spec, gpu::GPUFuncOp fn);
};

} // namespace cascade
} // namespace mlir

#endif // CASCADE_LIB_CONVERSION_CASCADETOGPU_COMMON_KERNELARGS_H
