//===- Plan.h - Host-side scheduling plans ----------------------*- C++ -*-===//
//
// Plan, then run (docs/plan-schema.md, docs/runtime.md): from host copies of
// the index arrays, compute once per step the work items of the attention
// kernels (request, query tile, KV chunk), the partial-state layout of
// split-KV and the int/float workspace layout. Every layer reuses the plan.
//
// Planning needs no device: the few device facts a plan depends on (SM
// count, the plan kernel's resident blocks per SM and query tile) are a
// PlanTarget value the caller supplies. A Program (Program.h) binds a plan
// to a device for upload, launch and graph replay. The work is split by job:
// PlanValidation.cpp (inputs), PlanSchedule.cpp (work items, split-KV
// chunks, query tiles, merge_indptr, CUDA-graph padding), PlanWorkspace.cpp
// (workspace layouts and the int image), PlanCascade.cpp (levels).
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_RUNTIME_PLAN_H
#define CASCADE_RUNTIME_PLAN_H

#include "cascade/Contract/DType.h"
#include "cascade/Runtime/Status.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace cascade::runtime {

/// A read-only view of `size` elements (no ownership). `data == nullptr`
/// means "absent" for optional inputs.
template <typename T> class ArrayView {
public:
  ArrayView() = default;
  ArrayView(const T *data, int64_t size) : data_(data), size_(size) {}
  ArrayView(const std::vector<T> &v)
      : data_(v.data() ? v.data() : emptyData()),
        size_(static_cast<int64_t>(v.size())) {}

  const T *data() const { return data_; }
  int64_t size() const { return size_; }
  bool present() const { return data_ != nullptr; }
  const T &operator[](int64_t i) const { return data_[i]; }

private:
  static const T *emptyData() {
    static const T dummy{};
    return &dummy;
  }
  const T *data_ = nullptr;
  int64_t size_ = 0;
};

enum class PlanMode { Decode, Prefill };

/// Storage types of q, KV and the output: the bundle contract's
/// (cascade/Contract/DType.h).
using contract::DType;
using contract::dtypeBytes;
using contract::dtypeName;
using contract::parseDType;

/// The device facts a level's plan depends on: the multiprocessors of the
/// device, and for the kernel that runs the level (its split kernel) the
/// resident blocks per SM and its `qo_tile_size` static. A plain value:
/// written down from a device description, or measured once on a device
/// (Device::occupancy, Launcher::planTarget); planning itself needs no
/// driver.
struct PlanTarget {
  int64_t num_sms = 0;
  int64_t occupancy = 1;    ///< resident blocks per SM (>= 1)
  int64_t qo_tile_size = 0; ///< prefill query tile in packed rows, 0 = auto

  bool operator==(const PlanTarget &o) const {
    return num_sms == o.num_sms && occupancy == o.occupancy &&
           qo_tile_size == o.qo_tile_size;
  }
  bool operator!=(const PlanTarget &o) const { return !(*this == o); }
};

/// Everything a plan depends on. Arrays are host int32 copies.
struct PlanInputs {
  PlanMode mode = PlanMode::Decode;
  /// [B+1] query rows per request. Required for prefill; in decode, absent
  /// means one query per request (and if present it must be arange(B+1)).
  ArrayView<int32_t> qo_indptr;
  /// [B+1] pages per request (CSR); defines the batch size B.
  ArrayView<int32_t> kv_indptr;
  /// [B] tokens in the last page, in [1, page_size] for non-empty requests.
  ArrayView<int32_t> kv_last_page_len;
  /// Page ids: request i's pages are kv_indices[kv_indptr[i] ..
  /// kv_indptr[i+1]-1]; optional, only validated against num_pages. It may
  /// be longer than kv_indptr[B] (a serving engine's buffer of the largest
  /// size, as FlashInfer accepts): only the first kv_indptr[B] entries are
  /// read, the rest is ignored. Fewer entries are an error.
  ArrayView<int32_t> kv_indices;
  /// Pages in the pool (-1 = unknown: page ids are only checked >= 0).
  int64_t num_pages = -1;
  int64_t num_qo_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  /// The head_dim of v and the output (the workspace's tmp_v rows), where
  /// it differs from q's and k's `head_dim`; 0: head_dim.
  int64_t head_dim_vo = 0;
  int64_t page_size = 0;
  DType q_dtype = DType::F16;
  DType kv_dtype = DType::F16;
  DType o_dtype = DType::F16;
  /// Multiprocessors of the device and resident blocks per SM of the kernel.
  int64_t num_sms = 0;
  int64_t occupancy = 1;
  /// Graph-stable sizes: the launch grid and workspace sizes depend only on
  /// B, the heads, the device (and max_num_rows for prefill).
  bool cuda_graph = false;
  /// Prefill query tile in packed rows (0 = automatic: 16, 64 or 128).
  int64_t qo_tile_size = 0;
  /// Prefill in graph mode: the most query rows any replan will have
  /// (-1 = the rows of this call).
  int64_t max_num_rows = -1;
  /// Split-KV chunk in pages, fixed (FlashInfer's fixed_split_size): every
  /// request is split into chunks of this many pages, whatever the other
  /// requests are (batch-invariant); no grid-budget search. 0 = automatic.
  int64_t fixed_split_pages = 0;
  /// Never split KV, not even in CUDA-graph mode (FlashInfer's
  /// disable_split_kv). Exclusive with fixed_split_pages.
  bool disable_split_kv = false;

  /// The entries of kv_indices that the plan reads: its first kv_indptr[B]
  /// (all of it when it is absent or shorter, or kv_indptr is empty).
  ArrayView<int32_t> usedKvIndices() const {
    if (!kv_indices.present() || kv_indptr.size() < 1)
      return kv_indices;
    const int64_t n = kv_indptr[kv_indptr.size() - 1];
    return n >= 0 && n < kv_indices.size()
               ? ArrayView<int32_t>(kv_indices.data(), n)
               : kv_indices;
  }

  /// The device facts above as one value, and back.
  PlanTarget target() const { return {num_sms, occupancy, qo_tile_size}; }
  void setTarget(const PlanTarget &t) {
    num_sms = t.num_sms;
    occupancy = t.occupancy;
    qo_tile_size = t.qo_tile_size;
  }
};

/// What a work item or a launch of a plan computes. A level's work items
/// all have one of the first four kinds (a level is all decode or all
/// prefill, split or not); the merges are the launches that follow them.
enum class WorkKind : uint8_t {
  Decode,       ///< one query of a request against all its KV
  DecodeSplit,  ///< one query against one KV chunk: a partial state
  Prefill,      ///< a query tile of a request against all its KV
  PrefillSplit, ///< a query tile against one KV chunk: partial states
  MergeSplits,  ///< a row's partial states into o/lse (merge_indptr)
  MergeLevel,   ///< a cascade level's state into the output
};
const char *workKindName(WorkKind k);

/// One section of a workspace. Offsets are bytes from the workspace start.
struct WorkspaceSection {
  const char *name;
  const char *dtype; ///< "i32", "u8", "f32", or an output dtype name
  int64_t offset;
  int64_t bytes;
  int64_t count; ///< elements
};

/// A workspace: sections at `alignment`-aligned offsets.
struct WorkspaceLayout {
  int64_t alignment = 16;
  int64_t bytes = 0;
  std::vector<WorkspaceSection> sections;

  const WorkspaceSection *find(std::string_view name) const;
  /// Appends a section of `count` elements of `elemBytes`; returns false on
  /// int64 overflow.
  bool add(const char *name, const char *dtype, int64_t count,
           int64_t elemBytes);
};

/// The plan of one attention level.
///
/// Work item w < num_work_items handles request request_indices[w], query
/// tile qo_tile_indices[w] (packed rows [t*T, (t+1)*T) of q_len*G, G =
/// Hqo/Hkv, row = packed / G) and KV chunk kv_tile_indices[w] (tokens
/// [k*C, min((k+1)*C, kv_len)), C = kv_chunk_size) for every KV head: the
/// launch grid is (padded_batch_size, num_kv_heads). Items w >=
/// num_work_items have block_valid_mask[w] = 0.
///
/// In split mode, the partial state of (request i, query j, chunk k) is row
/// o_indptr[i] + j * num_chunks(i) + k of tmp_v/tmp_s, and the partial rows
/// of global query row r are merge_indptr[r] .. merge_indptr[r+1].
struct Plan {
  PlanMode mode = PlanMode::Decode;
  int64_t batch_size = 0;
  int64_t num_rows = 0;     ///< qo_indptr[B] (B in decode)
  int64_t row_capacity = 0; ///< rows merge_indptr is sized for
  int64_t num_qo_heads = 0, num_kv_heads = 0, head_dim = 0, page_size = 0;
  /// v's and the output's head_dim where it differs from head_dim (0:
  /// head_dim); the workspace's tmp_v rows have this many columns.
  int64_t head_dim_vo = 0;
  int64_t vDim() const { return head_dim_vo > 0 ? head_dim_vo : head_dim; }
  int64_t gqa_group_size = 1;
  DType o_dtype = DType::F16;
  bool cuda_graph = false;
  bool split_kv = false;
  int64_t grid_limit = 0; ///< occupancy * num_sms (decode: min(occupancy, 2))
  int64_t padded_batch_size = 0;
  int64_t num_work_items = 0;
  int64_t kv_chunk_size = 0; ///< tokens
  int64_t kv_chunk_size_pages = 0;
  int64_t qo_tile_size = 1; ///< packed rows per query tile (decode: 1 query)
  int64_t num_partial_rows = 0;      ///< partial-state rows in use
  int64_t partial_rows_capacity = 0; ///< rows tmp_v/tmp_s are sized for
  /// The kind of every valid work item of the level.
  WorkKind work_kind = WorkKind::Decode;

  std::vector<int32_t> request_indices;  ///< [padded_batch_size]
  std::vector<int32_t> kv_tile_indices;  ///< [padded_batch_size]
  std::vector<int32_t> qo_tile_indices;  ///< [padded_batch_size]
  std::vector<int32_t> o_indptr;         ///< [B+1]
  std::vector<int32_t> merge_indptr;     ///< [row_capacity+1]
  std::vector<uint8_t> block_valid_mask; ///< [padded_batch_size]

  WorkspaceLayout int_workspace;   ///< 16-byte aligned sections
  WorkspaceLayout float_workspace; ///< 256-byte aligned sections
  /// Host image of the int workspace: one copy uploads every int array.
  std::vector<uint8_t> int_image;

  /// A scalar by name (see docs/plan-schema.md); false if unknown.
  bool scalar(std::string_view name, int64_t &value) const;
};

/// The kind of work item w (padding items w >= num_work_items have none:
/// false).
inline bool workItemKind(const Plan &p, int64_t w, WorkKind &kind) {
  if (w < 0 || w >= p.num_work_items)
    return false;
  kind = p.work_kind;
  return true;
}

/// Checks the inputs of one plan (every bad-input path has its own code and
/// message; nothing is undefined behaviour).
Status validatePlanInputs(const PlanInputs &in);

/// Validates and plans one level.
Status makePlan(const PlanInputs &in, Plan &out);

/// A multi-level cascade: one plan per level plus the final merge. The base
/// level (base_level, 0 unless setCascadeBaseLevel chose another) writes
/// the user's output; every other level l writes its state into the float
/// workspace (level_v[l] in o_dtype [rows, Hqo, D], level_s[l] f32 [rows,
/// Hqo]) and is merged into the output in increasing l with
/// merge_state_in_place. Causal masking applies to the last level only.
/// Merging is associative and commutative (semantics), so every base level
/// gives the same result up to rounding.
///
/// One launch of a cascade: the attention items of a level, the merge of its
/// KV splits, or the merge of its state into the output.
struct PlanStep {
  WorkKind kind;
  int32_t level;
  /// Blocks along x: the level's padded_batch_size (attention) or query
  /// rows (merges); every launch is per head besides.
  int64_t blocks;
};

struct CascadePlan {
  std::vector<Plan> levels;
  /// The launches in order: the base level's attention items (and
  /// MergeSplits if it splits KV), then per other level in increasing order
  /// its attention items, MergeSplits if it splits KV, and MergeLevel
  /// (which a kernel that accumulates into the output fuses into its
  /// attention launch, and a split level's accumulating merge into its
  /// MergeSplits).
  std::vector<PlanStep> steps;
  /// The level that writes the output; the others merge into it.
  int32_t base_level = 0;
  int64_t num_rows = 0;
  std::vector<int64_t> int_base;       ///< level -> byte offset of its sections
  std::vector<int64_t> float_base;     ///< level -> byte offset of its sections
  std::vector<int64_t> level_v_offset; ///< -1 for the base level
  std::vector<int64_t> level_s_offset; ///< -1 for the base level
  int64_t level_v_bytes = 0, level_s_bytes = 0;
  int64_t int_bytes = 0, float_bytes = 0;
  std::vector<uint8_t> int_image;
};

/// Validates every level, checks that they agree (rows, heads, head_dim,
/// page size), and plans them.
Status makeCascadePlan(const std::vector<PlanInputs> &levels, CascadePlan &out);

/// makeCascadePlan for a device described by `targets` (one per level): each
/// level planned with its target's facts (PlanInputs::setTarget), with
/// cuda_graph = `cudaGraph`, and in CUDA-graph prefill with max_num_rows =
/// max(its rows, minRowCapacity) (0 = its rows). What a Program plans, made
/// without a device.
Status makeCascadePlan(const std::vector<PlanInputs> &levels,
                       const std::vector<PlanTarget> &targets, bool cudaGraph,
                       int64_t minRowCapacity, CascadePlan &out);

/// Makes level `base` the one that writes the output (0 <= base < levels):
/// lays the other levels' states out again and lists the steps in the
/// order CascadePlan::steps describes. The levels' own plans are unchanged.
Status setCascadeBaseLevel(CascadePlan &plan, int32_t base);

/// The base level a Program prefers for a planned cascade: the last level
/// when an earlier level splits KV, else 0. With the last level as the
/// base, an earlier level's split attention writes only its partial states
/// and waits for no other launch: it can run beside the base level (the
/// SMs a long shared-prefix level leaves idle stream the short suffix
/// level), and only its merge, which accumulates into the output, waits
/// for the base level (Program builds its graph that way).
int32_t preferredCascadeBaseLevel(const CascadePlan &plan);

/// FlashInfer's query tile for an average packed query length.
int64_t chooseQoTileSize(int64_t avgPackedQoLen, int64_t headDim);

} // namespace cascade::runtime

#endif // CASCADE_RUNTIME_PLAN_H
