//===- AutoCascade.h - Cascades found in the page tables --------*- C++ -*-===//
//
// Automatic cascades (docs/auto-cascade.md): from one plain batch, find the
// page prefixes that adjacent requests share (tree-shaped: groups of
// requests with their own prefix, nested prefixes), keep those that pay for
// a level under a bandwidth cost model, and emit the levels of a cascade
// (multi-group qo_indptr, per-level CSR arrays) plus their CascadePlan.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_RUNTIME_AUTOCASCADE_H
#define CASCADE_RUNTIME_AUTOCASCADE_H

#include "cascade/Runtime/Plan.h"

#include <cstdint>
#include <vector>

namespace cascade::runtime {

/// Knobs of the search and of the cost model (docs/auto-cascade.md).
struct AutoCascadeOptions {
  /// The batch is run with causal masking (prefill): a request shares only
  /// pages that every one of its queries sees in full (shared tokens <=
  /// kv_len - qo_len + 1), so that masking the last level alone stays exact.
  /// Harmless for decode and for non-causal prefill (it may share less).
  bool causal = true;
  /// Most levels, the per-request level included (1 = never a cascade). In
  /// CUDA-graph mode (PlanInputs::cuda_graph) every plan has exactly this
  /// many levels.
  int64_t max_levels = 3;
  /// CUDA-graph mode: groups of every shared level, padded with empty groups
  /// (0 = the batch size, which never limits the sharing).
  int64_t graph_group_capacity = 0;
  /// Query tile of the shared (prefill) levels; 0 = automatic. Must match
  /// the tile of the prefill kernel that runs them.
  int64_t shared_qo_tile_size = 0;
  /// Resident blocks per SM of the prefill kernel that runs the shared
  /// levels, which sets their grid limit (PlanInputs::occupancy); 0 = the
  /// batch's occupancy (that of the per-request level's kernel).
  int64_t shared_occupancy = 0;
  /// Cost model: effective HBM bandwidth (bytes per microsecond) that turns
  /// bytes into time, the fixed cost of one more level (its attention launch
  /// and its merge) and of one more group in a level. The level's 12 us and
  /// the L2's share below are fitted to measured crossovers
  /// (docs/auto-cascade.md): 128 decode requests, 32/8 and 32/32 heads.
  double bandwidth_bytes_per_us = 4.0e6;
  double level_overhead_us = 12.0;
  double group_overhead_us = 0.05;
  /// Re-reads of shared pages that plain attention serves from L2 while it
  /// streams the batch's pages from HBM: the first `l2_hidden_fraction *
  /// unique bytes` (every page once) of the saved traffic cost the plain
  /// batch nothing, so the first shared level must save that much more
  /// (docs/auto-cascade.md; 0 = every saved byte counts).
  double l2_hidden_fraction = 0.5;
  /// Bytes per query row that one more level moves (its state written, read
  /// back and merged into the output); < 0 = automatic, 4 states of
  /// num_qo_heads * (head_dim * o bytes + 4).
  double level_row_bytes = -1;
};

/// The index arrays of one level, as the level's PlanInputs take them.
/// They point into this level's own storage, or, where the level's array
/// equals the batch's (the last level's qo_indptr and kv_last_page_len; all
/// of a one-level result), into the caller's arrays: valid while those live.
/// A level moves (the views stay valid) but does not copy.
struct AutoCascadeLevel {
  PlanMode mode = PlanMode::Decode;
  ArrayView<int32_t> qo_indptr;        ///< [groups+1]; absent in decode
  ArrayView<int32_t> kv_indptr;        ///< [groups+1]
  ArrayView<int32_t> kv_indices;       ///< [kv_indptr[groups]]
  ArrayView<int32_t> kv_last_page_len; ///< [groups]
  /// Groups that read pages (shared levels) / requests (the last level).
  int64_t num_page_groups = 0;

  AutoCascadeLevel() = default;
  AutoCascadeLevel(AutoCascadeLevel &&) = default;
  AutoCascadeLevel &operator=(AutoCascadeLevel &&) = default;
  AutoCascadeLevel(const AutoCascadeLevel &) = delete;
  AutoCascadeLevel &operator=(const AutoCascadeLevel &) = delete;

  /// Storage of the arrays this level owns.
  std::vector<int32_t> qoStorage, kvIndptrStorage, kvIndicesStorage,
      lastStorage;
};

struct AutoCascadeStats {
  int64_t num_levels = 0;
  int64_t shared_levels = 0;    ///< num_levels - 1
  int64_t candidate_groups = 0; ///< shared prefixes found (tree nodes)
  int64_t shared_groups = 0;    ///< of those, kept as groups of a level
  int64_t pages_in = 0;         ///< kv_indptr[B] of the batch
  int64_t pages_read = 0;       ///< page reads of all levels together
  int64_t pages_saved = 0;      ///< pages_in - pages_read
  double saved_us = 0;          ///< modelled time saved (bytes / bandwidth)
  double overhead_us = 0;       ///< modelled cost of the extra levels/groups
};

/// An automatic cascade: its levels (level 0 = the outermost shared
/// prefixes, the last level = each request's own pages), their plan, and
/// statistics. Without worthwhile sharing (and not in graph mode) it has one
/// level whose inputs are the batch's and whose plan is makePlan's. Movable,
/// not copyable (its levels view their own storage).
struct AutoCascade {
  std::vector<AutoCascadeLevel> levels;
  CascadePlan plan;
  AutoCascadeStats stats;

  /// The inputs of every level over this object's arrays (`common`'s
  /// scalars); valid while this object lives and is not modified.
  std::vector<PlanInputs> inputs(const PlanInputs &common) const;
};

/// Validates `in` like makePlan (same codes and messages; kv_indices is
/// required here), finds the sharing, and plans the chosen levels. `out` is
/// replaced only on success; the arrays of the result it replaces are reused
/// by the next call (per thread), as makePlan does.
Status makeAutoCascadePlan(const PlanInputs &in,
                           const AutoCascadeOptions &options, AutoCascade &out);

} // namespace cascade::runtime

#endif // CASCADE_RUNTIME_AUTOCASCADE_H
