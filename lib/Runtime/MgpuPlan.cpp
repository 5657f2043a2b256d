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

#include "cascade/Runtime/Plan.h"

#include <cstdint>
#include <cstdio>
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

/// One `cascade.plan` op's plan, owned through its slot (a global of the
/// host code): replanned in place by every execution of the op.
struct MgpuPlan {
  Plan plan;
  /// Contiguous copies of strided index arrays (reused).
  std::vector<int32_t> copies[4];
  uint64_t intWs = 0, floatWs = 0;
  int64_t intCapacity = 0, floatCapacity = 0;
  bool graph = false;
};

/// A view of a 1-D i32 memref; absent when it has no elements and
/// `optional`; strided ones are copied into `copy`.
ArrayView<int32_t> view(const MemRef<int32_t, 1> *m, bool optional,
                        std::vector<int32_t> &copy) {
  if (!m || (optional && m->sizes[0] == 0))
    return {};
  const int32_t *base = m->aligned + m->offset;
  if (m->strides[0] == 1)
    return {base, m->sizes[0]};
  copy.resize(static_cast<size_t>(m->sizes[0]));
  for (int64_t i = 0; i < m->sizes[0]; ++i)
    copy[static_cast<size_t>(i)] = base[i * m->strides[0]];
  return copy;
}

/// Makes room for `bytes` at `ptr` (`capacity` bytes now): grows outside
/// graph mode, fails in it once a plan has fixed the workspace.
Status reserve(Device &device, const MgpuPlan &p, bool first, int64_t bytes,
               uint64_t &ptr, int64_t &capacity, const char *which) {
  if (bytes <= capacity)
    return Status::success();
  if (p.graph && !first)
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

/// The section of a planned array, by the position of the matching plan
/// operand of cascade.paged_attention (CascadeOps.h's PlanOperand).
const WorkspaceSection *section(const MgpuPlan *p, int64_t which,
                                uint64_t &base) {
  static constexpr const char *kNames[] = {
      "request_indices", "kv_tile_indices", "o_indptr", "block_valid_mask",
      "kv_chunk_size",   "tmp_v",           "tmp_s",    "qo_tile_indices",
      "merge_indptr"};
  if (!p || which < 0 || which >= 9)
    return nullptr;
  bool isFloat = which == 5 || which == 6;
  base = isFloat ? p->floatWs : p->intWs;
  const WorkspaceLayout &layout =
      isFloat ? p->plan.float_workspace : p->plan.int_workspace;
  return layout.find(kNames[which]);
}

/// Fills a descriptor of the section `which` shaped `sizes` (row-major).
template <typename T, int N>
void describe(MemRef<T, N> *out, const MgpuPlan *p, int64_t which,
              const int64_t (&sizes)[N]) {
  *out = MemRef<T, N>{};
  uint64_t base = 0;
  const WorkspaceSection *s = section(p, which, base);
  if (!s || !base)
    return; // an empty memref: the level does not split
  T *ptr = reinterpret_cast<T *>(base + static_cast<uint64_t>(s->offset));
  out->allocated = out->aligned = ptr;
  int64_t stride = 1;
  for (int i = N - 1; i >= 0; --i) {
    out->sizes[i] = sizes[i];
    out->strides[i] = stride;
    stride *= sizes[i];
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
  p->graph = graphRows > 0;
  PlanInputs in;
  in.mode = prefill ? PlanMode::Prefill : PlanMode::Decode;
  in.qo_indptr =
      prefill ? view(qoIndptr, false, p->copies[0]) : ArrayView<int32_t>();
  in.kv_indptr = view(kvIndptr, false, p->copies[1]);
  in.kv_last_page_len = view(kvLastPageLen, false, p->copies[2]);
  in.kv_indices = view(kvIndices, true, p->copies[3]);
  in.num_qo_heads = numQoHeads;
  in.num_kv_heads = numKvHeads;
  in.head_dim = headDim;
  in.page_size = pageSize;
  in.num_sms = device->numSms();
  in.occupancy = occupancy;
  in.qo_tile_size = prefill ? qoTileSize : 0;
  in.cuda_graph = p->graph;
  in.max_num_rows = p->graph && prefill ? graphRows : -1;
  in.fixed_split_pages = fixedSplitPages;
  in.disable_split_kv = disableSplitKv != 0;
  Status s = makePlan(in, p->plan);
  if (s.ok())
    s = reserve(*device, *p, first,
                static_cast<int64_t>(p->plan.int_image.size()), p->intWs,
                p->intCapacity, "int");
  if (s.ok())
    s = reserve(*device, *p, first, p->plan.float_workspace.bytes, p->floatWs,
                p->floatCapacity, "float");
  // One synchronous copy: the launches that follow run on other streams.
  if (s.ok() && !p->plan.int_image.empty())
    s = device->copyToDevice(p->intWs, p->plan.int_image.data(),
                             p->plan.int_image.size(), nullptr);
  if (s.ok())
    s = device->synchronize(nullptr);
  if (!mgpu::reportStatus(s)) {
    p->plan.split_kv = false;
    return nullptr;
  }
  return p;
}

CASCADE_MGPU_EXPORT int32_t cascade_mgpu_plan_split_kv(void *plan,
                                                       int64_t qoTileSize) {
  auto *p = static_cast<const MgpuPlan *>(plan);
  if (!p || !p->plan.split_kv)
    return 0;
  // A split prefill plan made for another query tile than the kernel's
  // would launch wrong work items: run the self-scheduled kernel instead.
  if (p->plan.mode == PlanMode::Prefill && qoTileSize > 0 &&
      p->plan.qo_tile_size != qoTileSize) {
    std::fprintf(stderr,
                 "cascade_mlir_cuda_runtime: the plan has query tiles of "
                 "%lld rows but the kernel %lld; not splitting KV\n",
                 static_cast<long long>(p->plan.qo_tile_size),
                 static_cast<long long>(qoTileSize));
    return 0;
  }
  return 1;
}

CASCADE_MGPU_EXPORT void
_mlir_ciface_cascade_mgpu_plan_i32(MemRef<int32_t, 1> *out, void *plan,
                                   int64_t which) {
  auto *p = static_cast<const MgpuPlan *>(plan);
  uint64_t base = 0;
  const WorkspaceSection *s = section(p, which, base);
  describe(out, p, which, {s ? s->count : 0});
}

CASCADE_MGPU_EXPORT void
_mlir_ciface_cascade_mgpu_plan_i8(MemRef<int8_t, 1> *out, void *plan,
                                  int64_t which) {
  auto *p = static_cast<const MgpuPlan *>(plan);
  uint64_t base = 0;
  const WorkspaceSection *s = section(p, which, base);
  describe(out, p, which, {s ? s->count : 0});
}

CASCADE_MGPU_EXPORT void
_mlir_ciface_cascade_mgpu_plan_tmp_v(MemRef<float, 3> *out, void *plan) {
  auto *p = static_cast<const MgpuPlan *>(plan);
  int64_t rows = p ? p->plan.partial_rows_capacity : 0;
  int64_t heads = p ? p->plan.num_qo_heads : 0, dim = p ? p->plan.head_dim : 0;
  describe(out, p, 5, {rows, heads, dim});
}

CASCADE_MGPU_EXPORT void
_mlir_ciface_cascade_mgpu_plan_tmp_s(MemRef<float, 2> *out, void *plan) {
  auto *p = static_cast<const MgpuPlan *>(plan);
  int64_t rows = p ? p->plan.partial_rows_capacity : 0;
  describe(out, p, 6, {rows, p ? p->plan.num_qo_heads : 0});
}

CASCADE_MGPU_EXPORT void cascade_mgpu_plan_destroy(void **slot) {
  if (!slot || !*slot)
    return;
  auto *p = static_cast<MgpuPlan *>(*slot);
  if (Device *device = mgpu::enterDevice()) {
    for (uint64_t ptr : {p->intWs, p->floatWs})
      if (ptr)
        mgpu::reportStatus(device->free(ptr));
  }
  delete p;
  *slot = nullptr;
}
