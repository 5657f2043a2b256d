//===- Plan.cpp - Small helpers of the plan types -------------------------===//
//
// Work-kind names and the plan's scalars by name (dtype names are the
// contract's, cascade/Contract/DType.h). Validation, scheduling,
// workspaces and cascades have their own files (see Plan.h).
//
//===----------------------------------------------------------------------===//

#include "cascade/Runtime/Plan.h"

#include <utility>

namespace cascade::runtime {

//===----------------------------------------------------------------------===//
// Small helpers
//===----------------------------------------------------------------------===//

const char *workKindName(WorkKind k) {
  switch (k) {
  case WorkKind::Decode:
    return "decode";
  case WorkKind::DecodeSplit:
    return "decode_split";
  case WorkKind::Prefill:
    return "prefill";
  case WorkKind::PrefillSplit:
    return "prefill_split";
  case WorkKind::MergeSplits:
    return "merge_splits";
  case WorkKind::MergeLevel:
    return "merge_level";
  }
  return "?";
}

bool Plan::scalar(std::string_view name, int64_t &value) const {
  const std::pair<const char *, int64_t> scalars[] = {
      {"batch_size", batch_size},
      {"num_rows", num_rows},
      {"row_capacity", row_capacity},
      {"num_qo_heads", num_qo_heads},
      {"num_kv_heads", num_kv_heads},
      {"head_dim", head_dim},
      {"page_size", page_size},
      {"gqa_group_size", gqa_group_size},
      {"cuda_graph", cuda_graph ? 1 : 0},
      {"split_kv", split_kv ? 1 : 0},
      {"padded_batch_size", padded_batch_size},
      {"num_work_items", num_work_items},
      {"kv_chunk_size", kv_chunk_size},
      {"kv_chunk_size_pages", kv_chunk_size_pages},
      {"qo_tile_size", qo_tile_size},
      {"num_partial_rows", num_partial_rows},
      {"partial_rows_capacity", partial_rows_capacity},
      {"int_workspace_bytes", int_workspace.bytes},
      {"float_workspace_bytes", float_workspace.bytes}};
  for (const auto &s : scalars)
    if (name == s.first) {
      value = s.second;
      return true;
    }
  return false;
}

} // namespace cascade::runtime
