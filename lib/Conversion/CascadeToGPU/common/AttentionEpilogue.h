//===- AttentionEpilogue.h - Where attention states go ----------*- C++ -*-===//
//
// The end of an attention kernel: the partial states a block's slices of
// the KV tile hold are merged, each state is normalised and written either
// as a row of (o, lse) (in the lse base of the op, merged into the state
// the outputs hold with `accumulate`) or, split-KV, as an f32 base-2 partial
// row of (tmp_v, tmp_s) that the split merge combines. The lse conversions
// are shared with the merge kernels.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_LIB_CONVERSION_CASCADETOGPU_COMMON_ATTENTIONEPILOGUE_H
#define CASCADE_LIB_CONVERSION_CASCADETOGPU_COMMON_ATTENTIONEPILOGUE_H

#include "common/KernelArgs.h"
#include "common/MmaTiles.h"

namespace mlir {
namespace cascade {

/// An lse in the op's base (e or 2) to base 2, and back.
Value lseToBase2(KernelBuilder &k, Value s, bool baseE);
Value lseFromBase2(KernelBuilder &k, Value s, bool baseE);

/// The flat index of state (row, head) of a [rows][numHeads] state array.
Value stateIndex(KernelBuilder &k, Value row, int64_t numHeads, Value head);
/// Split-KV: the first partial row of request `req` (o_indptr[req]).
Value partialRowBase(KernelBuilder &k, const AttentionArgs &args, Value req);

/// The end of a rows-family block: bdz slices of the tokens (thread z)
/// hold partial states of each of the G query heads; thread x owns 8
/// elements of head_dim from `laneOff`.
struct RowsOutput {
  const AttentionSpec &spec;
  const AttentionArgs &args;
  Value tx, tz, kvHead, laneOff;
  /// Shared memory for the slices' merge: O [bdz][d] and (m, d) [bdz][2].
  Value redO, redM;
  int64_t bdz;
  /// The lse index of each head of the group (unsplit), and the element
  /// offset of its o row (o's strides).
  ArrayRef<Value> qRows, oBases;
  Value request, chunk;
};
/// Merges, finishes and writes the G states (m, d, acc per head, in that
/// order in `states`).
void rowsEpilogue(KernelBuilder &k, const RowsOutput &out, ValueRange states);

/// The end of a tensor-core block (mma_sync, and the consumer warpgroups of
/// wgmma).
struct MmaOutput {
  const AttentionSpec &spec;
  const AttentionArgs &args;
  const MmaTiles &tiles;
  const MmaThread &thread;
  gpu::GPUModuleOp module;
  ExpScale expScale;
  Value qoStart, request, chunk, kvLen;
  /// Accumulator row r of this thread.
  function_ref<PackedRow(int64_t)> row;
  /// A barrier among the threads that write the rows (null: the block's;
  /// a wgmma kernel's producer warpgroup does not take part).
  function_ref<void()> barrier = nullptr;
};
/// Merges the warps along the KV tile, normalises and writes the rows.
void mmaEpilogue(KernelBuilder &k, const MmaOutput &out, MmaState state);

} // namespace cascade
} // namespace mlir

#endif // CASCADE_LIB_CONVERSION_CASCADETOGPU_COMMON_ATTENTIONEPILOGUE_H
