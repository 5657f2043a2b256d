//===- WorkItems.h - The work item of an attention block --------*- C++ -*-===//
//
// A block of an attention kernel works on one item: a request, a tile of its
// query rows and a chunk of its KV, or nothing (a padded or past-the-end
// block). Items come from a plan (split-KV: the plan arrays, one item per
// block) or the block finds its own (self-scheduled: from its block id and
// qo_indptr). Each function builds one way of finding it; a kernel composes
// them.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_LIB_CONVERSION_CASCADETOGPU_COMMON_WORKITEMS_H
#define CASCADE_LIB_CONVERSION_CASCADETOGPU_COMMON_WORKITEMS_H

#include "common/KernelArgs.h"

namespace mlir {
namespace cascade {

struct WorkItem {
  Value request;
  /// Query tile of the request (null where a kernel has none).
  Value qoTile;
  /// KV chunk of a split-KV item (null unsplit).
  Value chunk;
  /// i1: whether the block has work.
  Value active;
};

/// Split-KV: whether plan item `w` is real (block_valid_mask[w] != 0).
Value planItemValid(KernelBuilder &k, const AttentionArgs &args, Value w);
/// Split-KV: request, KV chunk and (with qo_tile_indices) query tile of
/// plan item `w`; `active` is left null (planItemValid).
WorkItem planItem(KernelBuilder &k, const AttentionArgs &args, Value w);

/// Row-wise prefill: the request of query row `w`, the largest i with
/// qo_indptr[i] <= w (binary search over batch_size requests).
Value requestOfRow(KernelBuilder &k, const AttentionArgs &args, Value w);
/// Row-wise prefill: whether row `w` is real (w < qo_indptr[batch_size]; the
/// grid covers row_capacity rows).
Value rowIsReal(KernelBuilder &k, const AttentionArgs &args, Value w);

/// Decode with `tilesPerRequest` query tiles a request: block w is tile
/// w % tilesPerRequest of request w / tilesPerRequest.
WorkItem decodeTile(KernelBuilder &k, Value w, int64_t tilesPerRequest);

/// Self-scheduled tiled prefill: block w finds its (request, query tile of
/// `qTile` packed rows, `groupSize` heads a query). v(i) = ceil(qo_indptr[i]
/// * G / q_tile) + i is increasing and leaves v(i + 1) - v(i) >= the tiles
/// of request i; block w belongs to the largest i with v(i) <= w. With
/// `longestFirst` (causal) a request's tiles run in reverse order.
WorkItem selfScheduledTile(KernelBuilder &k, const AttentionArgs &args, Value w,
                           int64_t groupSize, int64_t qTile, bool longestFirst);

/// A request's query rows [start, start + len): one row in decode, from
/// qo_indptr in prefill.
struct QueryRows {
  Value start, len;
};
QueryRows queryRows(KernelBuilder &k, const AttentionArgs &args, Value req,
                    bool decode);

} // namespace cascade
} // namespace mlir

#endif // CASCADE_LIB_CONVERSION_CASCADETOGPU_COMMON_WORKITEMS_H
