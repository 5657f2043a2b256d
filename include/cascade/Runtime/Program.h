//===- Program.h - Planned attention calls, bound once ----------*- C++ -*-===//
//
// A Program is what a Python wrapper's plan() produces and its run() replays:
// a plan of every level, bound to a device. The plan itself is made without
// one (makeCascadePlan with a PlanTarget per level, Plan.h): plan() measures
// the targets on the device and plans, or bind() takes a plan made
// elsewhere. Bound are the caller's index arrays and
// the plan's int arrays uploaded into the int workspace (page-locked staging,
// asynchronous copies on the caller's stream), and, per KV form, the kernels
// of the call bound once into PreparedLaunches. run() only writes the
// caller's tensor addresses into the bound parameter slots and launches, so
// its host cost is the launches themselves. Where the driver allows, the
// launches of a variant are one CUDA graph built once: run() updates only the
// kernel nodes whose slots changed and launches the graph (one driver launch
// instead of one per kernel; docs/runtime.md).
//
// CUDA-graph mode keeps every device address and launch size of the first
// plan: a replan with new lengths uploads into the same buffers, so a graph
// captured from run() replays correctly (docs/plan-schema.md).
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_RUNTIME_PROGRAM_H
#define CASCADE_RUNTIME_PROGRAM_H

#include "cascade/Runtime/Launcher.h"

#include <array>
#include <map>
#include <memory>

namespace cascade::runtime {

/// The caller's tensors of one call, by role. Levels bind the KV cache of
/// their KV slot: slot 0 is the paged cache of run(), slot 1 a second cache
/// (the contiguous shared prefix of the shared-prefix wrappers). State0,
/// State1: the state inputs (f32 [Hqo] each; docs/kernel-bundle.md) the
/// prepared kernels take, in the order of Program::stateInputs().
enum class Role : uint8_t {
  Q,
  O,
  LSE,
  KV0,
  K0,
  V0,
  KV1,
  K1,
  V1,
  State0,
  State1,
  Count
};
constexpr size_t kNumRoles = static_cast<size_t>(Role::Count);
/// How many state inputs one program takes at most.
constexpr size_t kMaxStateInputs =
    static_cast<size_t>(Role::Count) - static_cast<size_t>(Role::State0);

/// Element strides of the tensors a run binds, by role: of the rows (or
/// tokens) and heads of q and o (the kernels' q_stride_n / q_stride_h /
/// o_stride_n / o_stride_h), of the tokens and heads of ragged K and V
/// (K0: kv_stride_n / kv_stride_h, which V0 shares, except where v's
/// head_dim differs from k's: V0's own v_stride_n / v_stride_h), and of the
/// pages of a paged cache (KV0 or K0: kv_stride_page, which V0 shares,
/// except where v has its own head_dim: v_stride_page); negative = the
/// contiguous layout's.
struct RowStrides {
  /// The stride kinds: dim N (rows, tokens), H (heads), Page (pages).
  enum Kind : uint8_t { N = 0, H = 1, Page = 2, NumKinds = 3 };
  std::array<std::array<int64_t, NumKinds>, kNumRoles> values;
  RowStrides() {
    for (auto &v : values)
      v.fill(-1);
  }
  void set(Role role, int64_t n, int64_t h) {
    values[static_cast<size_t>(role)][N] = n;
    values[static_cast<size_t>(role)][H] = h;
  }
  void setPage(Role role, int64_t page) {
    values[static_cast<size_t>(role)][Page] = page;
  }
  bool strided(Role role, Kind kind) const {
    return values[static_cast<size_t>(role)][kind] >= 0;
  }
  /// Rows or heads strided (N or H).
  bool strided(Role role) const { return strided(role, N) || strided(role, H); }
};

/// Optional caller-owned device buffers for a level's index arrays (the
/// CUDA-graph buffers of FlashInfer's wrappers); 0 = inside the int
/// workspace. Capacities are in int32 elements.
struct IndexBuffers {
  uint64_t qoIndptr = 0, kvIndptr = 0, kvIndices = 0, kvLastPageLen = 0;
  int64_t qoIndptrCapacity = 0, kvIndptrCapacity = 0, kvIndicesCapacity = 0,
          kvLastPageLenCapacity = 0;
};

/// A prefill level's custom mask (FlashInfer's packed layout, host views):
/// `words` holds the mask's bytes (byte j of the mask is byte j % 4 of word
/// j / 4, little-endian), `indptr` [B+1] each request's first byte. The
/// kernels read the bits as aligned 32-bit words, so they are uploaded as
/// words into the int workspace. Absent (empty views) without a mask.
struct CustomMaskArrays {
  ArrayView<int32_t> words, indptr;
  bool present() const { return indptr.present(); }
};

/// What plan() needs. `levels[l]` holds host views of the index arrays and
/// the static sizes (heads, head_dim, page size, dtypes, mode); the plan
/// sets num_sms, occupancy, qo_tile_size (from each level's PlanTarget),
/// cuda_graph and max_num_rows.
struct ProgramSpec {
  std::vector<PlanInputs> levels;
  /// Per level: the kernel whose occupancy and `qo_tile_size` static the
  /// plan uses (the split kernel of the level); only plan(spec) reads them.
  std::vector<std::string> planKernels;
  std::vector<IndexBuffers> indexBuffers; ///< empty or one per level
  std::vector<CustomMaskArrays> masks;    ///< empty or one per level
  bool cudaGraph = false;
  /// plan() makes the base level preferredCascadeBaseLevel's (the last
  /// level when an earlier one splits KV) instead of level 0; the caller
  /// then prepares kernels that accumulate for every level but the base
  /// (baseLevel()). Not in CUDA-graph mode: a replan there keeps every
  /// launch of the first plan, and a captured call launches one kernel at
  /// a time anyway.
  bool lastLevelFirst = false;
};

/// The kernels of one level for one KV form.
struct ProgramLevelKernels {
  LevelKernels unsplit, split;
  bool pair = false; ///< (k, v) pair instead of one 5-D pool
  int kvSlot = 0;    ///< 0 or 1, see Role
};

class Program {
public:
  explicit Program(Launcher &launcher)
      : launcher_(launcher), device_(launcher.device()) {}
  ~Program();
  Program(const Program &) = delete;
  Program &operator=(const Program &) = delete;

  /// Plans every level on the host for the targets of spec.planKernels on
  /// the launcher's device (planTargets), then binds the plan (bind).
  Status plan(const ProgramSpec &spec);
  /// The same for explicit targets, one per level (no driver call).
  Status plan(const ProgramSpec &spec, const std::vector<PlanTarget> &targets);
  /// The PlanTarget of every level's plan kernel on the launcher's device.
  Status planTargets(const ProgramSpec &spec,
                     std::vector<PlanTarget> &targets) const;
  /// The row capacity a replan must plan for: in CUDA-graph mode after the
  /// first upload the first plan's rows, else 0 (makeCascadePlan's
  /// minRowCapacity).
  int64_t minRowCapacity() const { return frozen_ ? rowCapacity_ : 0; }
  /// Takes a finished plan of spec.levels (makeCascadePlan with
  /// spec.cudaGraph and minRowCapacity()) and lays out the int workspace
  /// (plan arrays, then the index arrays). Drops the prepared launches. In
  /// CUDA-graph mode a replan must keep every size of the first plan.
  Status bind(const ProgramSpec &spec, CascadePlan plan);
  /// Bytes the int / float workspace must hold for the current plan (the
  /// float workspace includes an lse scratch for calls that return none).
  int64_t intBytesNeeded() const { return intBytes_; }
  int64_t floatBytesNeeded() const { return floatBytes_; }
  /// Copies the plan and the index arrays into the workspaces on `stream`
  /// (through page-locked staging; waits only for the previous upload's
  /// copy). In CUDA-graph mode the workspaces must not move.
  Status upload(uint64_t intWorkspace, int64_t intBytes,
                uint64_t floatWorkspace, int64_t floatBytes,
                cuda::CUstream stream);
  /// Binds the kernels of `variant` (one entry per level) once; `merge` is
  /// the merge_state_in_place kernel for levels that do not accumulate
  /// (may be empty when all do). Requires an upload.
  Status prepare(int variant, const std::vector<ProgramLevelKernels> &levels,
                 const std::string &merge);
  bool prepared(int variant) const;
  /// Launches the prepared `variant` with the caller's tensors: `ptrs` /
  /// `counts` (elements) by Role; 0 leaves a role unbound (LSE 0 = the
  /// scratch in the float workspace). `kScale` / `vScale`: the fp8 KV
  /// dequantization scales, bound to the kernels' k_scale / v_scale
  /// parameters (kernels over f16/bf16 KV have none); a changed scale
  /// rewrites the graph nodes that take it, as a moved tensor does.
  ///
  /// `strides`: the element strides of q, o, ragged K / V and a paged
  /// cache's pages (head_dim contiguous; RowStrides); a negative value (the
  /// default) is the contiguous layout's. They are bound to the kernels'
  /// q_stride_* / o_stride_* / kv_stride_* / v_stride_* parameters
  /// (docs/kernel-bundle.md). A strided tensor where a prepared launch
  /// reads it without those strides (a kernel built before they existed, a
  /// merge_state_in_place into o, a paged kernel's token strides) is
  /// refused: ask takesStrides() first.
  Status run(int variant, const std::array<uint64_t, kNumRoles> &ptrs,
             const std::array<int64_t, kNumRoles> &counts,
             cuda::CUstream stream, float kScale = 1.f, float vScale = 1.f,
             const RowStrides &strides = {});
  /// Whether every prepared launch of `variant` that takes `role` (Q, O,
  /// K0 or V0: rows and heads; KV0, K0 or V0: pages) takes those strides.
  bool takesStrides(int variant, Role role,
                    RowStrides::Kind kind = RowStrides::N) const;

  const CascadePlan &cascadePlan() const { return plan_; }
  /// The level that writes the output (CascadePlan::base_level).
  int32_t baseLevel() const { return plan_.base_level; }
  int64_t numRows() const { return plan_.num_rows; }
  /// Rows the output buffers are sized for (CUDA graphs: the first plan's).
  int64_t rowCapacity() const { return rowCapacity_; }
  /// Largest page id any level reads (-1 without pages): run() checks it
  /// against the KV cache it is given.
  int64_t maxPageId() const { return maxPageId_; }
  int64_t numLaunches(int variant) const;
  /// Whether run() launches a variant as one graph (the default where the
  /// driver can build graphs) or kernel by kernel. Either way the same
  /// kernels run with the same arguments. A stream that is being captured
  /// always gets the kernels one by one (they become nodes of the caller's
  /// graph).
  void setGraphLaunch(bool on) { graphLaunch_ = on; }
  bool graphLaunch() const { return graphLaunch_; }
  /// Whether the last run() went through the variant's graph.
  bool lastRunUsedGraph() const { return lastRunUsedGraph_; }
  /// The state inputs the prepared kernels take, by name: input i is bound
  /// to role State0 + i. run() needs each of them and refuses any other.
  const std::vector<std::string> &stateInputs() const { return stateInputs_; }
  /// The role of the state input `name`; Role::Count where the prepared
  /// kernels take none of that name.
  Role stateInputRole(const std::string &name) const;

private:
  struct Patch {
    uint32_t slot;
    uint8_t role;
    bool count; ///< the memref size slot, not a pointer
  };
  /// An f32 slot bound to k_scale (v = false) or v_scale (v = true).
  struct ScalePatch {
    uint32_t slot;
    bool v;
  };
  /// An i64 slot bound to a stride: of `role` (RowStrides), kind `h`
  /// (RowStrides::Kind); `contiguous` is the kernel's default.
  struct StridePatch {
    uint32_t slot;
    uint8_t role;
    uint8_t h;
    int64_t contiguous;
  };
  struct Variant {
    std::vector<PreparedLaunch> launches;
    std::vector<std::vector<Patch>> patches;             ///< per launch
    std::vector<std::vector<ScalePatch>> scalePatches;   ///< per launch
    std::vector<std::vector<StridePatch>> stridePatches; ///< per launch
    /// Per role and stride kind: some launch takes the buffer but not
    /// that stride.
    std::array<std::array<bool, RowStrides::NumKinds>, kNumRoles> unstrided{};
    /// Some launch takes V's own strides (v_stride_*: v's head_dim differs
    /// from k's), so K's and V's may differ.
    bool ownVStrides = false;
    /// Per launch, the earlier launches it waits for in the graph (see
    /// dependencies()).
    std::vector<std::vector<uint32_t>> deps;
    /// Per launch, whether it runs at the greatest priority in the graph:
    /// the free split attentions of the levels before the base level (a
    /// long prefix's blocks are placed before the base level's, which fill
    /// the SMs the prefix leaves idle). With level 0 as the base, none.
    std::vector<uint8_t> urgent;
    /// The launches as one graph (built on first use); `dirty[i]`: launch
    /// i's slots changed since its node was last written.
    std::unique_ptr<KernelGraph> graph;
    std::vector<uint8_t> dirty;
  };
  /// Where a level's index arrays live on the device.
  struct LevelArrays {
    uint64_t qo = 0, kvIndptr = 0, indices = 0, last = 0;
    int64_t qoOffset = -1, kvIndptrOffset = -1, indicesOffset = -1,
            lastOffset = -1; ///< bytes into the int workspace, -1 = caller
    /// A custom mask's words and indptr (always in the int workspace).
    uint64_t maskWords = 0, maskIndptr = 0;
    int64_t maskWordsOffset = -1, maskIndptrOffset = -1;
    int64_t indicesCapacity = 0;
  };
  Status layout(const ProgramSpec &spec);
  /// What each launch of a cascade waits for, from the plan step that
  /// recorded it (`steps`): the split attention of a level other than the
  /// base writes only its partial states and waits for nothing; every other
  /// launch waits for the previous launch that writes the output (and a
  /// level's merge for its attention as well).
  std::vector<std::vector<uint32_t>>
  dependencies(const std::vector<int32_t> &steps) const;
  /// Whether a step's launch waits for nothing: the split attention of a
  /// level other than the base.
  bool freeStep(const PlanStep &step) const;
  /// The first of the launches (by their `steps`) that writes the output.
  /// Finalizes a recorded launch of `v` and finds the slots run() patches
  /// in it: the caller's buffers (sentinels), the fp8 scales and the
  /// strides of q, o and ragged K / V.
  void collectPatches(PreparedLaunch &pl, Variant &v);
  size_t firstChained(const std::vector<int32_t> &steps) const;
  Status stage(uint64_t intWorkspace, cuda::CUstream stream);

  Launcher &launcher_;
  Device &device_;
  ProgramSpec spec_;
  CascadePlan plan_;
  std::vector<LevelArrays> arrays_;
  int64_t intBytes_ = 0, floatBytes_ = 0, lseScratchOffset_ = 0;
  int64_t rowCapacity_ = 0, maxPageId_ = -1;
  uint64_t intWs_ = 0, floatWs_ = 0;
  bool uploaded_ = false;
  /// CUDA-graph mode: the sizes the first plan fixed.
  bool frozen_ = false;
  std::vector<int64_t> frozenBatch_;
  int64_t frozenInt_ = 0, frozenFloat_ = 0;
  uint64_t frozenIntWs_ = 0, frozenFloatWs_ = 0;
  std::map<int, Variant> variants_;
  bool graphLaunch_ = true, lastRunUsedGraph_ = false;
  std::vector<std::string> stateInputs_;
  /// Adds the state inputs of the kernel `name` (its f32 buffer parameters
  /// that are also statics, true, and not in `bound`) to stateInputs_.
  Status collectStateInputs(const std::string &name,
                            const ArgumentTable &bound);
  void *staging_ = nullptr;
  size_t stagingBytes_ = 0;
  cuda::CUevent copied_ = nullptr;
};

} // namespace cascade::runtime

#endif // CASCADE_RUNTIME_PROGRAM_H
