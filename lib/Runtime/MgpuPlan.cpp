//===- MgpuPlan.cpp - Plans for compiled host code
//-------------------------===//
//
// The entry points that host code lowered from `cascade.plan`
// (cascade-lower-plans) calls, in libcascade_mlir_cuda_runtime next to the
// mgpu* functions: plan a level with the runtime's makePlan on the host
// copies of its index arrays, keep its workspaces on the default device
// (allocated on the first plan, reused and grown by later ones, never moved
// in CUDA-graph mode), upload the plan, and hand the planned arrays to the
// launches as memref descriptors. The ABI is docs/runtime.md's "Plans for
// compiled host code". As the mgpu* functions, failures are reported on
// stderr: the plan call then returns null, and a null plan reads as "not
// split", so the host code runs the level on its self-scheduled kernel.
//
//===----------------------------------------------------------------------===//

#include "MgpuDevice.h"

#include "cascade/Runtime/AutoCascade.h"
#include "cascade/Runtime/Plan.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

using namespace cascade::runtime;

#define CASCADE_MGPU_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

/// MLIR's memref descriptor (the C interface of a ranked memref).
template <typename T, int N> struct MemRef {
  T *allocated;
  T *aligned;
  int64_t offset;
  int64_t sizes[N];
  int64_t strides[N];
};

/// Device workspaces that a plan owns.
struct Workspaces {
  uint64_t intWs = 0, floatWs = 0;
  int64_t intCapacity = 0, floatCapacity = 0;
};

/// A level as its launches see it: its plan and where its sections start.
/// The handle that the level functions below take.
struct LevelView {
  const Plan *plan = nullptr;
  uint64_t intBase = 0, floatBase = 0;
  bool usable = false; ///< false after a failed (re)plan: never split
};

/// One `cascade.plan` op's plan, owned through its slot (a global of the
/// host code): replanned in place by every execution of the op.
struct MgpuPlan {
  Plan plan;
  LevelView view;
  /// Contiguous copies of strided index arrays (reused).
  std::vector<int32_t> copies[4];
  Workspaces ws;
};

/// An automatic-cascade plan (`auto_cascade`): its levels, each a view into
/// one pair of workspaces; the int workspace also holds the levels' index
/// arrays (after the plan image).
struct MgpuAutoPlan {
  static constexpr int kMaxLevels = 2;
  AutoCascade cascade;
  LevelView views[kMaxLevels];
  std::vector<int32_t> copies[4];
  std::vector<uint8_t> image;
  int64_t arrayOffset[kMaxLevels][4] = {};
  int64_t arrayCount[kMaxLevels][4] = {};
  int64_t numLevels = 0;
  Workspaces ws;
};

/// A view of the first `limit` (at most) elements of a 1-D i32 memref;
/// absent when it has no elements and `optional`; strided ones are copied
/// into `copy`.
ArrayView<int32_t> view(const MemRef<int32_t, 1> *m, bool optional,
                        std::vector<int32_t> &copy, int64_t limit = INT64_MAX) {
  if (!m || (optional && m->sizes[0] == 0))
    return {};
  const int32_t *base = m->aligned + m->offset;
  const int64_t n = std::min(m->sizes[0], std::max<int64_t>(limit, 0));
  if (m->strides[0] == 1)
    return {base, n};
  copy.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    copy[static_cast<size_t>(i)] = base[i * m->strides[0]];
  return copy;
}

/// The entries of kv_indices that a plan over `kvIndptr` reads: its first
/// kv_indptr[B] (a preallocated buffer may be longer; its tail is neither
/// copied nor checked). No limit when kv_indptr is empty or its last entry
/// negative (validation reports those).
int64_t usedKvIndices(ArrayView<int32_t> kvIndptr) {
  if (kvIndptr.size() < 1 || kvIndptr[kvIndptr.size() - 1] < 0)
    return INT64_MAX;
  return kvIndptr[kvIndptr.size() - 1];
}

/// Makes room for `bytes` at `ptr` (`capacity` bytes now): grows outside
/// graph mode, fails in it once a plan has fixed the workspace.
Status reserve(Device &device, bool graph, bool first, int64_t bytes,
               uint64_t &ptr, int64_t &capacity, const char *which) {
  if (bytes <= capacity)
    return Status::success();
  if (graph && !first)
    return makeError(ErrorCode::InvalidArgument,
                     "a CUDA-graph replan needs %lld bytes of %s workspace, "
                     "but the first plan fixed %lld",
                     static_cast<long long>(bytes), which,
                     static_cast<long long>(capacity));
  if (ptr)
    CASCADE_RETURN_IF_ERROR(device.free(ptr));
  ptr = 0;
  capacity = 0;
  CASCADE_RETURN_IF_ERROR(device.alloc(static_cast<size_t>(bytes), ptr));
  capacity = bytes;
  return Status::success();
}

/// Reserves both workspaces and uploads `image` into the int one: one
/// synchronous copy (the launches that follow run on other streams).
Status upload(Device &device, Workspaces &ws, bool graph, bool first,
              const std::vector<uint8_t> &image, int64_t floatBytes) {
  CASCADE_RETURN_IF_ERROR(reserve(device, graph, first,
                                  static_cast<int64_t>(image.size()), ws.intWs,
                                  ws.intCapacity, "int"));
  CASCADE_RETURN_IF_ERROR(reserve(device, graph, first, floatBytes, ws.floatWs,
                                  ws.floatCapacity, "float"));
  if (!image.empty())
    CASCADE_RETURN_IF_ERROR(
        device.copyToDevice(ws.intWs, image.data(), image.size(), nullptr));
  return device.synchronize(nullptr);
}

void release(Workspaces &ws) {
  if (Device *device = mgpu::enterDevice()) {
    for (uint64_t ptr : {ws.intWs, ws.floatWs})
      if (ptr)
        mgpu::reportStatus(device->free(ptr));
  }
  ws = Workspaces();
}

/// The plan inputs of a `cascade_mgpu_plan*` call.
PlanInputs planInputs(Device &device, std::vector<int32_t> (&copies)[4],
                      MemRef<int32_t, 1> *qoIndptr,
                      MemRef<int32_t, 1> *kvIndptr,
                      MemRef<int32_t, 1> *kvLastPageLen,
                      MemRef<int32_t, 1> *kvIndices, int64_t prefill,
                      int64_t numQoHeads, int64_t numKvHeads, int64_t headDim,
                      int64_t pageSize, int64_t graphRows, int64_t occupancy,
                      int64_t qoTileSize, int64_t fixedSplitPages,
                      int64_t disableSplitKv) {
  PlanInputs in;
  in.mode = prefill ? PlanMode::Prefill : PlanMode::Decode;
  in.qo_indptr =
      prefill ? view(qoIndptr, false, copies[0]) : ArrayView<int32_t>();
  in.kv_indptr = view(kvIndptr, false, copies[1]);
  in.kv_last_page_len = view(kvLastPageLen, false, copies[2]);
  in.kv_indices = view(kvIndices, true, copies[3], usedKvIndices(in.kv_indptr));
  in.num_qo_heads = numQoHeads;
  in.num_kv_heads = numKvHeads;
  in.head_dim = headDim;
  in.page_size = pageSize;
  in.num_sms = device.numSms();
  in.occupancy = occupancy;
  in.qo_tile_size = prefill ? qoTileSize : 0;
  in.cuda_graph = graphRows > 0;
  in.max_num_rows = graphRows > 0 && prefill ? graphRows : -1;
  in.fixed_split_pages = fixedSplitPages;
  in.disable_split_kv = disableSplitKv != 0;
  return in;
}

/// The section of a planned array, by the position of the matching plan
/// operand of cascade.paged_attention (CascadeOps.h's PlanOperand).
const WorkspaceSection *section(const LevelView *v, int64_t which,
                                uint64_t &base) {
  static constexpr const char *kNames[] = {
      "request_indices", "kv_tile_indices", "o_indptr", "block_valid_mask",
      "kv_chunk_size",   "tmp_v",           "tmp_s",    "qo_tile_indices",
      "merge_indptr"};
  if (!v || !v->usable || which < 0 || which >= 9)
    return nullptr;
  bool isFloat = which == 5 || which == 6;
  base = isFloat ? v->floatBase : v->intBase;
  const WorkspaceLayout &layout =
      isFloat ? v->plan->float_workspace : v->plan->int_workspace;
  return layout.find(kNames[which]);
}

/// Fills a row-major descriptor of `sizes` at `ptr` (empty when null).
template <typename T, int N>
void describeAt(MemRef<T, N> *out, uint64_t ptr, const int64_t (&sizes)[N]) {
  *out = MemRef<T, N>{};
  if (!ptr)
    return;
  out->allocated = out->aligned = reinterpret_cast<T *>(ptr);
  int64_t stride = 1;
  for (int i = N - 1; i >= 0; --i) {
    out->sizes[i] = sizes[i];
    out->strides[i] = stride;
    stride *= sizes[i];
  }
}

/// Fills a descriptor of the section `which` shaped `sizes`.
template <typename T, int N>
void describe(MemRef<T, N> *out, const LevelView *v, int64_t which,
              const int64_t (&sizes)[N]) {
  uint64_t base = 0;
  const WorkspaceSection *s = section(v, which, base);
  describeAt(out, s && base ? base + static_cast<uint64_t>(s->offset) : 0,
             sizes);
}

/// Fills a descriptor of the 1-D section `which` (an index array or the
/// valid mask) of the plan a level view `plan` points to, with its count.
template <typename T>
void describeArray(MemRef<T, 1> *out, void *plan, int64_t which) {
  auto *v = static_cast<const LevelView *>(plan);
  uint64_t base = 0;
  const WorkspaceSection *s = section(v, which, base);
  describe(out, v, which, {s ? s->count : 0});
}

/// Appends the index arrays of every level of `p`'s cascade after the plan
/// image (16-byte aligned), recording where they are.
void appendLevelArrays(MgpuAutoPlan &p) {
  p.image.assign(p.cascade.plan.int_image.begin(),
                 p.cascade.plan.int_image.end());
  for (int64_t l = 0; l < p.numLevels; ++l) {
    const AutoCascadeLevel &lv = p.cascade.levels[static_cast<size_t>(l)];
    const ArrayView<int32_t> arrays[4] = {lv.qo_indptr, lv.kv_indptr,
                                          lv.kv_indices, lv.kv_last_page_len};
    for (int a = 0; a < 4; ++a) {
      size_t offset = (p.image.size() + 15) / 16 * 16;
      size_t bytes = static_cast<size_t>(arrays[a].size()) * sizeof(int32_t);
      p.image.resize(offset + bytes);
      if (bytes)
        std::memcpy(p.image.data() + offset, arrays[a].data(), bytes);
      p.arrayOffset[l][a] = static_cast<int64_t>(offset);
      p.arrayCount[l][a] = arrays[a].size();
    }
  }
}

} // namespace

CASCADE_MGPU_EXPORT void *_mlir_ciface_cascade_mgpu_plan(
    void **slot, MemRef<int32_t, 1> *qoIndptr, MemRef<int32_t, 1> *kvIndptr,
    MemRef<int32_t, 1> *kvLastPageLen, MemRef<int32_t, 1> *kvIndices,
    int64_t prefill, int64_t numQoHeads, int64_t numKvHeads, int64_t headDim,
    int64_t pageSize, int64_t graphRows, int64_t occupancy, int64_t qoTileSize,
    int64_t fixedSplitPages, int64_t disableSplitKv) {
  Device *device = mgpu::enterDevice();
  if (!device || !slot)
    return nullptr;
  bool first = *slot == nullptr;
  auto *p = first ? new MgpuPlan() : static_cast<MgpuPlan *>(*slot);
  *slot = p;
  PlanInputs in = planInputs(
      *device, p->copies, qoIndptr, kvIndptr, kvLastPageLen, kvIndices, prefill,
      numQoHeads, numKvHeads, headDim, pageSize, graphRows, occupancy,
      qoTileSize, fixedSplitPages, disableSplitKv);
  Status s = makePlan(in, p->plan);
  if (s.ok())
    s = upload(*device, p->ws, in.cuda_graph, first, p->plan.int_image,
               p->plan.float_workspace.bytes);
  p->view = {&p->plan, p->ws.intWs, p->ws.floatWs, s.ok()};
  return mgpu::reportStatus(s) ? &p->view : nullptr;
}

CASCADE_MGPU_EXPORT int32_t cascade_mgpu_plan_split_kv(void *plan,
                                                       int64_t qoTileSize) {
  auto *v = static_cast<const LevelView *>(plan);
  if (!v || !v->usable || !v->plan->split_kv)
    return 0;
  // A split prefill plan made for another query tile than the kernel's
  // would launch wrong work items: run the self-scheduled kernel instead.
  if (v->plan->mode == PlanMode::Prefill && qoTileSize > 0 &&
      v->plan->qo_tile_size != qoTileSize) {
    std::fprintf(stderr,
                 "cascade_mlir_cuda_runtime: the plan has query tiles of "
                 "%lld rows but the kernel %lld; not splitting KV\n",
                 static_cast<long long>(v->plan->qo_tile_size),
                 static_cast<long long>(qoTileSize));
    return 0;
  }
  return 1;
}

CASCADE_MGPU_EXPORT void
_mlir_ciface_cascade_mgpu_plan_i32(MemRef<int32_t, 1> *out, void *plan,
                                   int64_t which) {
  describeArray(out, plan, which);
}

CASCADE_MGPU_EXPORT void
_mlir_ciface_cascade_mgpu_plan_i8(MemRef<int8_t, 1> *out, void *plan,
                                  int64_t which) {
  describeArray(out, plan, which);
}

CASCADE_MGPU_EXPORT void
_mlir_ciface_cascade_mgpu_plan_tmp_v(MemRef<float, 3> *out, void *plan) {
  auto *v = static_cast<const LevelView *>(plan);
  const Plan *p = v && v->usable ? v->plan : nullptr;
  describe(out, v, 5,
           {p ? p->partial_rows_capacity : 0, p ? p->num_qo_heads : 0,
            p ? p->head_dim : 0});
}

CASCADE_MGPU_EXPORT void
_mlir_ciface_cascade_mgpu_plan_tmp_s(MemRef<float, 2> *out, void *plan) {
  auto *v = static_cast<const LevelView *>(plan);
  const Plan *p = v && v->usable ? v->plan : nullptr;
  describe(out, v, 6,
           {p ? p->partial_rows_capacity : 0, p ? p->num_qo_heads : 0});
}

CASCADE_MGPU_EXPORT void cascade_mgpu_plan_destroy(void **slot) {
  if (!slot || !*slot)
    return;
  auto *p = static_cast<MgpuPlan *>(*slot);
  release(p->ws);
  delete p;
  *slot = nullptr;
}

CASCADE_MGPU_EXPORT void *_mlir_ciface_cascade_mgpu_auto_plan(
    void **slot, MemRef<int32_t, 1> *kvIndptr,
    MemRef<int32_t, 1> *kvLastPageLen, MemRef<int32_t, 1> *kvIndices,
    int64_t numQoHeads, int64_t numKvHeads, int64_t headDim, int64_t pageSize,
    int64_t graphRows, int64_t occupancy, int64_t sharedQoTileSize,
    int64_t sharedOccupancy) {
  Device *device = mgpu::enterDevice();
  if (!device || !slot)
    return nullptr;
  bool first = *slot == nullptr;
  auto *p = first ? new MgpuAutoPlan() : static_cast<MgpuAutoPlan *>(*slot);
  *slot = p;
  PlanInputs in =
      planInputs(*device, p->copies, nullptr, kvIndptr, kvLastPageLen,
                 kvIndices, /*prefill=*/0, numQoHeads, numKvHeads, headDim,
                 pageSize, graphRows, occupancy, 0, 0, 0);
  AutoCascadeOptions options;
  options.causal = false; // a decode batch
  options.max_levels = MgpuAutoPlan::kMaxLevels;
  options.shared_qo_tile_size = sharedQoTileSize;
  options.shared_occupancy = sharedOccupancy;
  Status s = makeAutoCascadePlan(in, options, p->cascade);
  p->numLevels = s.ok() ? static_cast<int64_t>(p->cascade.levels.size()) : 0;
  if (s.ok()) {
    appendLevelArrays(*p);
    s = upload(*device, p->ws, in.cuda_graph, first, p->image,
               p->cascade.plan.float_bytes);
  }
  if (!s.ok())
    p->numLevels = 0;
  for (int64_t l = 0; l < MgpuAutoPlan::kMaxLevels; ++l) {
    const CascadePlan &c = p->cascade.plan;
    p->views[l] =
        l < p->numLevels
            ? LevelView{&c.levels[static_cast<size_t>(l)],
                        p->ws.intWs + static_cast<uint64_t>(c.int_base[l]),
                        p->ws.floatWs + static_cast<uint64_t>(c.float_base[l]),
                        true}
            : LevelView();
  }
  return mgpu::reportStatus(s) ? p : nullptr;
}

CASCADE_MGPU_EXPORT int64_t cascade_mgpu_auto_num_levels(void *plan) {
  return plan ? static_cast<const MgpuAutoPlan *>(plan)->numLevels : 0;
}

CASCADE_MGPU_EXPORT void *cascade_mgpu_auto_level(void *plan, int64_t level) {
  auto *p = static_cast<MgpuAutoPlan *>(plan);
  if (!p || level < 0 || level >= p->numLevels)
    return nullptr;
  return &p->views[level];
}

CASCADE_MGPU_EXPORT void
_mlir_ciface_cascade_mgpu_auto_array(MemRef<int32_t, 1> *out, void *plan,
                                     int64_t level, int64_t which) {
  auto *p = static_cast<const MgpuAutoPlan *>(plan);
  bool ok = p && level >= 0 && level < p->numLevels && which >= 0 && which < 4;
  describeAt(out,
             ok ? p->ws.intWs +
                      static_cast<uint64_t>(p->arrayOffset[level][which])
                : 0,
             {ok ? p->arrayCount[level][which] : 0});
}

CASCADE_MGPU_EXPORT void cascade_mgpu_auto_plan_destroy(void **slot) {
  if (!slot || !*slot)
    return;
  auto *p = static_cast<MgpuAutoPlan *>(*slot);
  release(p->ws);
  delete p;
  *slot = nullptr;
}
