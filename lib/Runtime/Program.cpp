//===- Program.cpp - Planned attention calls with per-call binding --------===//

#include "cascade/Runtime/Program.h"

#include "cascade/Contract/BundleContract.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <utility>

namespace cascade::runtime {

using namespace cuda;

namespace {

int64_t alignTo(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

/// Addresses that stand for the caller's tensors while a program is bound:
/// no device allocation or plan value can take them.
constexpr uint64_t kSentinelBase = 0xFFFFFF0000000000ull;
uint64_t sentinel(Role role) {
  return kSentinelBase | (uint64_t(static_cast<uint8_t>(role)) << 8);
}

const char *dtypeOf(DType t) { return dtypeName(t); }

} // namespace

Program::~Program() {
  device_.destroyEvent(copied_);
  device_.freeHost(staging_);
}

/// The check every entry shares: levels, and at most one set of index
/// buffers per level.
static Status checkLevels(const ProgramSpec &spec, size_t perLevel,
                          const char *what) {
  const size_t n = spec.levels.size();
  if (n == 0 || perLevel != n ||
      (!spec.indexBuffers.empty() && spec.indexBuffers.size() != n))
    return makeError(ErrorCode::InvalidArgument,
                     "a program needs one plan %s (and at most one set of "
                     "index buffers) per level; got %zu levels, %zu %ss",
                     what, n, perLevel, what);
  return Status::success();
}

Status Program::planTargets(const ProgramSpec &spec,
                            std::vector<PlanTarget> &targets) const {
  CASCADE_RETURN_IF_ERROR(checkLevels(spec, spec.planKernels.size(), "kernel"));
  targets.assign(spec.levels.size(), PlanTarget());
  for (size_t l = 0; l < spec.levels.size(); ++l) {
    if (!launcher_.bundle().find(spec.planKernels[l]))
      return Status(ErrorCode::NotFound, "level " + std::to_string(l) +
                                             ": kernel " + spec.planKernels[l] +
                                             " is not loaded");
    CASCADE_RETURN_IF_ERROR(
        launcher_.planTarget(spec.planKernels[l], targets[l]));
  }
  return Status::success();
}

Status Program::plan(const ProgramSpec &spec) {
  std::vector<PlanTarget> targets;
  CASCADE_RETURN_IF_ERROR(planTargets(spec, targets));
  return plan(spec, targets);
}

Status Program::plan(const ProgramSpec &spec,
                     const std::vector<PlanTarget> &targets) {
  CASCADE_RETURN_IF_ERROR(checkLevels(spec, targets.size(), "target"));
  CascadePlan next;
  CASCADE_RETURN_IF_ERROR(makeCascadePlan(spec.levels, targets, spec.cudaGraph,
                                          minRowCapacity(), next));
  if (spec.lastLevelFirst && !spec.cudaGraph)
    CASCADE_RETURN_IF_ERROR(
        setCascadeBaseLevel(next, preferredCascadeBaseLevel(next)));
  return bind(spec, std::move(next));
}

Status Program::bind(const ProgramSpec &spec, CascadePlan next) {
  const size_t n = spec.levels.size();
  if (n == 0 || next.levels.size() != n ||
      (!spec.indexBuffers.empty() && spec.indexBuffers.size() != n) ||
      (!spec.masks.empty() && spec.masks.size() != n))
    return makeError(ErrorCode::InvalidArgument,
                     "a program binds a plan of one level per input level "
                     "(and at most one set of index buffers and one custom "
                     "mask per level); got "
                     "%zu input levels and a %zu-level plan",
                     n, next.levels.size());
  for (size_t l = 0; !spec.masks.empty() && l < n; ++l) {
    const CustomMaskArrays &m = spec.masks[l];
    if (!m.present())
      continue;
    if (spec.cudaGraph)
      return Status(ErrorCode::InvalidArgument,
                    "CUDA-graph mode does not take custom masks (their size "
                    "changes with every plan)");
    if (spec.levels[l].mode != PlanMode::Prefill ||
        m.indptr.size() != spec.levels[l].kv_indptr.size())
      return makeError(ErrorCode::InvalidArgument,
                       "level %zu: a custom mask needs a prefill level and "
                       "mask_indptr of batch_size + 1 entries",
                       l);
    if (m.indptr[m.indptr.size() - 1] > 4 * m.words.size())
      return makeError(ErrorCode::SizeMismatch,
                       "level %zu: mask_indptr ends at byte %d, past the %lld "
                       "bytes of the mask",
                       l, m.indptr[m.indptr.size() - 1],
                       4 * static_cast<long long>(m.words.size()));
  }
  for (size_t l = 0; l < n; ++l)
    if (next.levels[l].batch_size != spec.levels[l].kv_indptr.size() - 1 ||
        next.levels[l].cuda_graph != spec.cudaGraph)
      return makeError(ErrorCode::InvalidArgument,
                       "level %zu of the plan was not made from the "
                       "program's inputs (batch size or CUDA-graph mode "
                       "differ)",
                       l);
  if (frozen_) {
    bool same = next.int_bytes == frozenInt_ &&
                next.float_bytes <= frozenFloat_ && next.levels.size() == n &&
                next.num_rows <= rowCapacity_;
    for (size_t l = 0; same && l < n; ++l)
      same = next.levels[l].batch_size == frozenBatch_[l];
    if (!same)
      return makeError(
          ErrorCode::InvalidArgument,
          "CUDA-graph mode: a replan must keep the batch size of every level "
          "and at most %lld query rows (the first plan's), so that the "
          "captured launches stay valid; plan a new wrapper for other sizes",
          static_cast<long long>(rowCapacity_));
  }
  spec_ = spec;
  plan_ = std::move(next);
  variants_.clear();
  stateInputs_.clear();
  uploaded_ = false;
  maxPageId_ = -1;
  for (const PlanInputs &in : spec.levels) {
    const ArrayView<int32_t> ids = in.usedKvIndices();
    for (int64_t i = 0; i < ids.size(); ++i)
      maxPageId_ = std::max<int64_t>(maxPageId_, ids[i]);
  }
  return layout(spec);
}

Status Program::layout(const ProgramSpec &spec) {
  const size_t n = spec.levels.size();
  const Plan &first = plan_.levels[0];
  if (!frozen_)
    rowCapacity_ = plan_.num_rows;
  std::vector<LevelArrays> arrays(n);
  // Fixed-size arrays first, right after the plan image; the page lists
  // last, so that in CUDA-graph mode each keeps a fixed start and capacity.
  int64_t offset = alignTo(plan_.int_bytes, 16);
  auto place = [&](int64_t count) {
    int64_t at = offset;
    offset = alignTo(offset + 4 * count, 16);
    return at;
  };
  for (size_t l = 0; l < n; ++l) {
    const PlanInputs &in = spec.levels[l];
    const IndexBuffers *user =
        spec.indexBuffers.empty() ? nullptr : &spec.indexBuffers[l];
    LevelArrays &a = arrays[l];
    auto need = [&](uint64_t userPtr, int64_t cap, int64_t count,
                    const char *what, uint64_t &ptr, int64_t &off) -> Status {
      if (userPtr) {
        if (cap < count)
          return makeError(ErrorCode::SizeMismatch,
                           "level %zu: the %s buffer holds %lld entries, the "
                           "plan needs %lld",
                           l, what, static_cast<long long>(cap),
                           static_cast<long long>(count));
        ptr = userPtr;
        return Status::success();
      }
      off = place(count);
      return Status::success();
    };
    const int64_t b = in.kv_indptr.size() - 1;
    CASCADE_RETURN_IF_ERROR(need(user ? user->qoIndptr : 0,
                                 user ? user->qoIndptrCapacity : 0, b + 1,
                                 "qo_indptr", a.qo, a.qoOffset));
    CASCADE_RETURN_IF_ERROR(need(user ? user->kvIndptr : 0,
                                 user ? user->kvIndptrCapacity : 0, b + 1,
                                 "kv_indptr", a.kvIndptr, a.kvIndptrOffset));
    CASCADE_RETURN_IF_ERROR(need(user ? user->kvLastPageLen : 0,
                                 user ? user->kvLastPageLenCapacity : 0, b,
                                 "kv_last_page_len", a.last, a.lastOffset));
    if (!spec.masks.empty() && spec.masks[l].present()) {
      a.maskIndptrOffset = place(spec.masks[l].indptr.size());
      a.maskWordsOffset = place(spec.masks[l].words.size());
    }
  }
  for (size_t l = 0; l < n; ++l) {
    const PlanInputs &in = spec.levels[l];
    const IndexBuffers *user =
        spec.indexBuffers.empty() ? nullptr : &spec.indexBuffers[l];
    LevelArrays &a = arrays[l];
    // The pages the requests read (a preallocated kv_indices may be longer).
    const int64_t count = in.usedKvIndices().size();
    if (user && user->kvIndices) {
      if (user->kvIndicesCapacity < count)
        return makeError(ErrorCode::SizeMismatch,
                         "level %zu: the kv_indices buffer holds %lld "
                         "entries, the plan needs %lld",
                         l, static_cast<long long>(user->kvIndicesCapacity),
                         static_cast<long long>(count));
      a.indices = user->kvIndices;
      a.indicesCapacity = user->kvIndicesCapacity;
      continue;
    }
    // CUDA graphs without caller buffers: the first plan's page list gets
    // twice its length (at least 64 Ki pages) of room.
    int64_t cap = count;
    if (frozen_)
      cap = arrays_[l].indicesCapacity;
    else if (spec.cudaGraph)
      cap = std::max<int64_t>(2 * count, 65536);
    if (cap < count)
      return makeError(ErrorCode::SizeMismatch,
                       "CUDA-graph mode: level %zu reads %lld pages, more "
                       "than the %lld the first plan reserved; pass "
                       "paged_kv_indices_buf_arr buffers of the largest size",
                       l, static_cast<long long>(count),
                       static_cast<long long>(cap));
    a.indicesOffset = place(cap);
    a.indicesCapacity = cap;
  }
  intBytes_ = std::max<int64_t>(offset, 16);
  lseScratchOffset_ = alignTo(frozen_ ? frozenFloat_ : plan_.float_bytes, 256);
  floatBytes_ =
      lseScratchOffset_ + alignTo(4 * rowCapacity_ * first.num_qo_heads, 256);
  arrays_ = std::move(arrays);
  return Status::success();
}

Status Program::stage(uint64_t intWorkspace, CUstream stream) {
  if (copied_)
    CASCADE_RETURN_IF_ERROR(device_.synchronizeEvent(copied_));
  else
    CASCADE_RETURN_IF_ERROR(
        device_.createEvent(copied_, CU_EVENT_DISABLE_TIMING));
  // Every array the kernels read, with its place: an offset into the int
  // workspace, or a caller's buffer (staged behind the workspace image).
  struct Item {
    const int32_t *data;
    int64_t count, offset;
    uint64_t userPtr;
  };
  std::vector<Item> items;
  std::vector<std::vector<int32_t>> aranges;
  aranges.reserve(arrays_.size());
  for (size_t l = 0; l < arrays_.size(); ++l) {
    const PlanInputs &in = spec_.levels[l];
    const LevelArrays &a = arrays_[l];
    ArrayView<int32_t> qo = in.qo_indptr;
    if (!qo.present()) { // decode: one query per request
      aranges.emplace_back(static_cast<size_t>(in.kv_indptr.size()));
      for (size_t i = 0; i < aranges.back().size(); ++i)
        aranges.back()[i] = static_cast<int32_t>(i);
      qo = ArrayView<int32_t>(aranges.back());
    }
    items.push_back({qo.data(), qo.size(), a.qoOffset, a.qo});
    items.push_back({in.kv_indptr.data(), in.kv_indptr.size(), a.kvIndptrOffset,
                     a.kvIndptr});
    items.push_back({in.kv_last_page_len.data(), in.kv_last_page_len.size(),
                     a.lastOffset, a.last});
    const ArrayView<int32_t> ids = in.usedKvIndices();
    items.push_back({ids.data(), ids.size(), a.indicesOffset, a.indices});
    if (a.maskIndptrOffset >= 0) {
      const CustomMaskArrays &m = spec_.masks[l];
      items.push_back(
          {m.indptr.data(), m.indptr.size(), a.maskIndptrOffset, 0});
      items.push_back({m.words.data(), m.words.size(), a.maskWordsOffset, 0});
    }
  }
  int64_t total = intBytes_;
  for (const Item &it : items)
    if (it.offset < 0)
      total += alignTo(4 * it.count, 16);
  if (static_cast<int64_t>(stagingBytes_) < total) {
    device_.freeHost(staging_);
    staging_ = nullptr;
    stagingBytes_ = 0;
    CASCADE_RETURN_IF_ERROR(
        device_.allocHost(static_cast<size_t>(total), staging_));
    stagingBytes_ = static_cast<size_t>(total);
  }
  auto *img = static_cast<uint8_t *>(staging_);
  std::memset(img, 0, static_cast<size_t>(intBytes_));
  std::memcpy(img, plan_.int_image.data(), plan_.int_image.size());
  struct Copy {
    uint64_t dst;
    int64_t src, bytes;
  };
  // Outside CUDA-graph mode the workspace part is one copy. In graph mode
  // the page lists sit in reserved room: the fixed part is one copy and
  // each page list another (the room behind them is not sent).
  int64_t fixedEnd = intBytes_;
  if (spec_.cudaGraph)
    for (const LevelArrays &a : arrays_)
      if (a.indicesOffset >= 0)
        fixedEnd = std::min(fixedEnd, a.indicesOffset);
  std::vector<Copy> copies = {{intWorkspace, 0, fixedEnd}};
  int64_t behind = intBytes_;
  for (const Item &it : items) {
    const int64_t bytes = 4 * it.count;
    if (it.offset >= 0) {
      if (bytes)
        std::memcpy(img + it.offset, it.data, static_cast<size_t>(bytes));
      if (it.offset >= fixedEnd)
        copies.push_back({intWorkspace + it.offset, it.offset, bytes});
      continue;
    }
    if (bytes)
      std::memcpy(img + behind, it.data, static_cast<size_t>(bytes));
    copies.push_back({it.userPtr, behind, bytes});
    behind += alignTo(bytes, 16);
  }
  for (const Copy &c : copies)
    if (c.bytes > 0)
      CASCADE_RETURN_IF_ERROR(device_.copyToDevice(
          c.dst, img + c.src, static_cast<size_t>(c.bytes), stream));
  return device_.recordEvent(copied_, stream);
}

Status Program::upload(uint64_t intWorkspace, int64_t intBytes,
                       uint64_t floatWorkspace, int64_t floatBytes,
                       CUstream stream) {
  if (plan_.levels.empty())
    return Status(ErrorCode::InvalidArgument, "upload before plan");
  if (intBytes < intBytes_ || floatBytes < floatBytes_)
    return makeError(
        ErrorCode::SizeMismatch,
        "the plan needs %lld bytes of int workspace and %lld of "
        "float workspace; got %lld and %lld",
        static_cast<long long>(intBytes_), static_cast<long long>(floatBytes_),
        static_cast<long long>(intBytes), static_cast<long long>(floatBytes));
  if (intWorkspace % 16 || floatWorkspace % 256)
    return Status(ErrorCode::InvalidArgument,
                  "the int workspace must be 16-byte and the float workspace "
                  "256-byte aligned");
  if (frozen_ &&
      (intWorkspace != frozenIntWs_ || floatWorkspace != frozenFloatWs_))
    return Status(ErrorCode::InvalidArgument,
                  "CUDA-graph mode: the workspace buffers moved since the "
                  "first plan");
  CASCADE_RETURN_IF_ERROR(device_.makeCurrent());
  for (LevelArrays &a : arrays_) {
    if (a.qoOffset >= 0)
      a.qo = intWorkspace + a.qoOffset;
    if (a.kvIndptrOffset >= 0)
      a.kvIndptr = intWorkspace + a.kvIndptrOffset;
    if (a.lastOffset >= 0)
      a.last = intWorkspace + a.lastOffset;
    if (a.indicesOffset >= 0)
      a.indices = intWorkspace + a.indicesOffset;
    if (a.maskIndptrOffset >= 0) {
      a.maskIndptr = intWorkspace + a.maskIndptrOffset;
      a.maskWords = intWorkspace + a.maskWordsOffset;
    }
  }
  CASCADE_RETURN_IF_ERROR(stage(intWorkspace, stream));
  intWs_ = intWorkspace;
  floatWs_ = floatWorkspace;
  uploaded_ = true;
  if (spec_.cudaGraph && !frozen_) {
    frozen_ = true;
    frozenInt_ = plan_.int_bytes;
    frozenFloat_ = plan_.float_bytes;
    frozenIntWs_ = intWorkspace;
    frozenFloatWs_ = floatWorkspace;
    frozenBatch_.clear();
    for (const Plan &p : plan_.levels)
      frozenBatch_.push_back(p.batch_size);
  }
  return Status::success();
}

Status Program::prepare(int variant,
                        const std::vector<ProgramLevelKernels> &levels,
                        const std::string &merge) {
  if (!uploaded_)
    return Status(ErrorCode::InvalidArgument, "prepare before upload");
  const size_t n = plan_.levels.size();
  if (levels.size() != n)
    return makeError(ErrorCode::SizeMismatch,
                     "%zu levels of kernels for a %zu-level plan",
                     levels.size(), n);
  const Plan &first = plan_.levels[0];
  const char *odt = dtypeOf(first.o_dtype);
  const int64_t rows = rowCapacity_;
  const int64_t vCount = rows * first.num_qo_heads * first.head_dim;
  std::vector<LevelKernels> kernels(n);
  std::vector<ArgumentTable> args(n);
  for (size_t l = 0; l < n; ++l) {
    const Plan &p = plan_.levels[l];
    const ProgramLevelKernels &k = levels[l];
    kernels[l] = p.split_kv ? k.split : k.unsplit;
    const KernelSpec *spec = launcher_.bundle().find(kernels[l].attention);
    if (!spec)
      return Status(ErrorCode::NotFound,
                    "kernel " + kernels[l].attention + " is not loaded");
    const std::string kvt = spec->staticString("kv_dtype");
    const std::string qt = spec->staticString("q_dtype");
    ArgumentTable &t = args[l];
    const int slot = k.kvSlot ? 1 : 0;
    const Role kvRole = slot ? Role::KV1 : Role::KV0;
    const Role kRole = slot ? Role::K1 : Role::K0;
    const Role vRole = slot ? Role::V1 : Role::V0;
    t.setBuffer("q", sentinel(Role::Q), vCount, qt);
    if (k.pair) {
      t.setBuffer("k_cache", sentinel(kRole), 0, kvt);
      t.setBuffer("v_cache", sentinel(vRole), 0, kvt);
    } else {
      t.setBuffer("kv_cache", sentinel(kvRole), 0, kvt);
    }
    const LevelArrays &a = arrays_[l];
    const int64_t b = p.batch_size;
    t.setBuffer("qo_indptr", a.qo, b + 1, "i32");
    t.setBuffer("kv_indptr", a.kvIndptr, b + 1, "i32");
    t.setBuffer("kv_indices", a.indices, a.indicesCapacity, "i32");
    t.setBuffer("kv_last_page_len", a.last, b, "i32");
    if (a.maskIndptrOffset >= 0) {
      const CustomMaskArrays &m = spec_.masks[l];
      t.setBuffer(contract::param::kCustomMask, a.maskWords, 4 * m.words.size(),
                  "u8");
      t.setBuffer(contract::param::kMaskIndptr, a.maskIndptr, b + 1, "i32");
    }
    t.setBuffer("o", sentinel(Role::O), vCount, odt);
    t.setBuffer("lse", sentinel(Role::LSE), rows * first.num_qo_heads, "f32");
    for (const std::string &name : {kernels[l].attention, kernels[l].merge})
      if (!name.empty())
        CASCADE_RETURN_IF_ERROR(collectStateInputs(name, t));
    for (size_t i = 0; i < stateInputs_.size(); ++i)
      t.setBuffer(
          stateInputs_[i],
          sentinel(static_cast<Role>(static_cast<size_t>(Role::State0) + i)),
          first.num_qo_heads, "f32");
    // fp8 KV kernels' dequantization scales, patched by run().
    t.setFloat(contract::param::kKScale, 1.0);
    t.setFloat(contract::param::kVScale, 1.0);
  }
  // The kernels' statics against the plan and the levels' dtypes, once
  // here (run() only patches the bound launches).
  CASCADE_RETURN_IF_ERROR(checkCascadeKernels(launcher_.bundle(), plan_,
                                              kernels, merge, &spec_.levels));
  Variant v;
  std::vector<int32_t> steps;
  launcher_.setRecorder(&v.launches);
  Status s = launcher_.runCascade(plan_, intWs_, floatWs_, kernels, args, merge,
                                  nullptr, &steps);
  launcher_.setRecorder(nullptr);
  CASCADE_RETURN_IF_ERROR(s);
  // The launches that wait for nothing (the free split attentions and the
  // base level's first launch) first, by level: the driver starts a
  // graph's roots, and a stream its kernels, in that order, and the first
  // levels (long shared prefixes) should take their SMs before the shorter
  // last level fills the device.
  std::vector<size_t> order(v.launches.size());
  std::iota(order.begin(), order.end(), 0);
  const size_t chainHead = firstChained(steps);
  auto rootLevel = [&](size_t i) {
    const PlanStep &step = plan_.steps[static_cast<size_t>(steps[i])];
    return freeStep(step) || i == chainHead
               ? step.level
               : std::numeric_limits<int32_t>::max();
  };
  // Stable by the launch index (order starts as the identity): std::sort
  // with the index as the tie-break, since libstdc++'s stable_sort uses the
  // deprecated std::get_temporary_buffer.
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::pair(rootLevel(a), a) < std::pair(rootLevel(b), b);
  });
  {
    std::vector<PreparedLaunch> launches;
    std::vector<int32_t> ordered;
    for (size_t i : order) {
      launches.push_back(std::move(v.launches[i]));
      ordered.push_back(steps[i]);
    }
    v.launches = std::move(launches);
    steps = std::move(ordered);
  }
  v.deps = dependencies(steps);
  for (int32_t i : steps) {
    const PlanStep &step = plan_.steps[static_cast<size_t>(i)];
    v.urgent.push_back(freeStep(step) && step.level < plan_.base_level);
  }
  for (PreparedLaunch &pl : v.launches)
    collectPatches(pl, v);
  variants_[variant] = std::move(v);
  return Status::success();
}

Status Program::collectStateInputs(const std::string &name,
                                   const ArgumentTable &bound) {
  const KernelSpec *spec = launcher_.bundle().find(name);
  if (!spec)
    return Status::success(); // the launch reports it
  for (const ParamSpec &p : spec->params) {
    // An f32 buffer named as a true static, which the program does not
    // bind from its own arrays (a custom mask's buffer is a static too).
    if (p.kind != ParamKind::Memref || p.dtype != "f32" ||
        spec->staticString(p.name) != "true" || bound.find(p.name) ||
        stateInputRole(p.name) != Role::Count)
      continue;
    if (stateInputs_.size() == kMaxStateInputs)
      return makeError(ErrorCode::Unsupported,
                       "kernel %s takes the state input %s: a program takes "
                       "at most %zu",
                       name.c_str(), p.name.c_str(), kMaxStateInputs);
    stateInputs_.push_back(p.name);
  }
  return Status::success();
}

Role Program::stateInputRole(const std::string &name) const {
  for (size_t i = 0; i < stateInputs_.size(); ++i)
    if (stateInputs_[i] == name)
      return static_cast<Role>(static_cast<size_t>(Role::State0) + i);
  return Role::Count;
}

void Program::collectPatches(PreparedLaunch &pl, Variant &v) {
  pl.finalize();
  std::vector<Patch> patches;
  std::vector<ScalePatch> scalePatches;
  std::vector<StridePatch> stridePatches;
  const std::vector<uint64_t> &slots = pl.launch.slots;
  const std::vector<std::string> &names = pl.launch.slotNames;
  // The stride slots of a buffer param `name` bound to q or o
  // (<name>_stride_n / _h), to ragged K or V (kv_stride_n / _h, K's role
  // patches them: V's strides must be K's), to a paged cache's pool or K
  // (kv_stride_page, which V shares), or to a V whose head_dim differs
  // from K's (v_stride_*, its own).
  const bool ownV = std::find(names.begin(), names.end(),
                              contract::param::kVStrideN) != names.end() ||
                    std::find(names.begin(), names.end(),
                              contract::param::kVStridePage) != names.end();
  auto strideSlots = [&](const std::string &name, Role role) {
    const bool kv = role != Role::Q && role != Role::O;
    const bool vOwn = role == Role::V0 && ownV;
    const std::string prefix = vOwn ? "v" : kv ? "kv" : name;
    static constexpr const char *kSuffix[RowStrides::NumKinds] = {
        "_stride_n", "_stride_h", "_stride_page"};
    bool found[RowStrides::NumKinds] = {false, false, false};
    for (size_t j = 0; j < slots.size(); ++j)
      for (uint8_t h = 0; h < RowStrides::NumKinds; ++h)
        if (names[j] == prefix + kSuffix[h]) {
          if (role != Role::V0 || vOwn)
            stridePatches.push_back({static_cast<uint32_t>(j),
                                     static_cast<uint8_t>(role), h,
                                     static_cast<int64_t>(slots[j])});
          found[h] = true;
        }
    auto &unstrided = v.unstrided[static_cast<size_t>(role)];
    // Rows and heads come as a pair; a page stride alone.
    if (!found[RowStrides::N] || !found[RowStrides::H])
      unstrided[RowStrides::N] = unstrided[RowStrides::H] = true;
    if (!found[RowStrides::Page])
      unstrided[RowStrides::Page] = true;
    if (vOwn && (found[RowStrides::N] || found[RowStrides::Page]))
      v.ownVStrides = true;
  };
  for (size_t i = 0; i < slots.size(); ++i) {
    const std::string &slotName = pl.launch.slotNames[i];
    if (slotName == contract::param::kKScale ||
        slotName == contract::param::kVScale) {
      scalePatches.push_back(
          {static_cast<uint32_t>(i), slotName == contract::param::kVScale});
      continue;
    }
    if ((slots[i] & 0xFFFFFF00000000FFull) != kSentinelBase)
      continue;
    const auto role = static_cast<uint8_t>((slots[i] >> 8) & 0xFF);
    if (role >= kNumRoles)
      continue;
    patches.push_back({static_cast<uint32_t>(i), role, false});
    // A memref descriptor: allocated, aligned, offset, size, stride; the
    // size follows the aligned pointer.
    const std::string &name = pl.launch.slotNames[i];
    if (name.size() > 8 && name.compare(name.size() - 8, 8, ".aligned") == 0 &&
        i + 2 < slots.size()) {
      patches.push_back({static_cast<uint32_t>(i + 2), role, true});
      if (role == static_cast<uint8_t>(Role::Q) ||
          role == static_cast<uint8_t>(Role::O) ||
          role == static_cast<uint8_t>(Role::KV0) ||
          role == static_cast<uint8_t>(Role::K0) ||
          role == static_cast<uint8_t>(Role::V0))
        strideSlots(name.substr(0, name.size() - 8), static_cast<Role>(role));
    }
  }
  v.patches.push_back(std::move(patches));
  v.scalePatches.push_back(std::move(scalePatches));
  v.stridePatches.push_back(std::move(stridePatches));
}

size_t Program::firstChained(const std::vector<int32_t> &steps) const {
  for (size_t i = 0; i < steps.size(); ++i)
    if (!freeStep(plan_.steps[static_cast<size_t>(steps[i])]))
      return i;
  return steps.size();
}

bool Program::freeStep(const PlanStep &step) const {
  return step.level != plan_.base_level &&
         (step.kind == WorkKind::DecodeSplit ||
          step.kind == WorkKind::PrefillSplit);
}

std::vector<std::vector<uint32_t>>
Program::dependencies(const std::vector<int32_t> &steps) const {
  std::vector<std::vector<uint32_t>> deps(steps.size());
  std::vector<int64_t> attention(plan_.levels.size(), -1);
  int64_t tail = -1; // the last launch that wrote the output
  for (size_t i = 0; i < steps.size(); ++i) {
    const PlanStep &step = plan_.steps[static_cast<size_t>(steps[i])];
    const auto l = static_cast<size_t>(step.level);
    if (freeStep(step)) {
      attention[l] = static_cast<int64_t>(i);
      continue; // a root
    }
    if (step.kind == WorkKind::MergeSplits && attention[l] >= 0)
      deps[i].push_back(static_cast<uint32_t>(attention[l]));
    if (tail >= 0)
      deps[i].push_back(static_cast<uint32_t>(tail));
    tail = static_cast<int64_t>(i);
  }
  return deps;
}

bool Program::prepared(int variant) const {
  return variants_.count(variant) != 0;
}

int64_t Program::numLaunches(int variant) const {
  auto it = variants_.find(variant);
  return it == variants_.end()
             ? -1
             : static_cast<int64_t>(it->second.launches.size());
}

bool Program::takesStrides(int variant, Role role,
                           RowStrides::Kind kind) const {
  auto it = variants_.find(variant);
  return it != variants_.end() &&
         !it->second.unstrided[static_cast<size_t>(role)][kind];
}

Status Program::run(int variant, const std::array<uint64_t, kNumRoles> &ptrs,
                    const std::array<int64_t, kNumRoles> &counts,
                    CUstream stream, float kScale, float vScale,
                    const RowStrides &strides) {
  auto it = variants_.find(variant);
  if (it == variants_.end())
    return makeError(ErrorCode::InvalidArgument,
                     "variant %d of this program is not prepared", variant);
  for (auto [role, name] : {std::pair(Role::Q, "q"), std::pair(Role::O, "o"),
                            std::pair(Role::K0, "k"), std::pair(Role::V0, "v")})
    if (strides.strided(role) && !takesStrides(variant, role))
      return makeError(ErrorCode::InvalidArgument,
                       "a strided %s: a kernel of this plan reads it as a "
                       "contiguous buffer",
                       name);
  for (auto [role, name] :
       {std::pair(Role::KV0, "paged_kv_cache"), std::pair(Role::K0, "k_cache"),
        std::pair(Role::V0, "v_cache")})
    if (strides.strided(role, RowStrides::Page) &&
        !takesStrides(variant, role, RowStrides::Page))
      return makeError(ErrorCode::InvalidArgument,
                       "%s with a page stride of its own: a kernel of this "
                       "plan takes no kv_stride_page",
                       name);
  if (!it->second.ownVStrides &&
      strides.values[static_cast<size_t>(Role::K0)] !=
          strides.values[static_cast<size_t>(Role::V0)])
    return Status(ErrorCode::InvalidArgument,
                  "k and v must have the same strides (the kernels take one "
                  "kv_stride_n / kv_stride_h / kv_stride_page)");
  for (const auto &rs : strides.values)
    for (int64_t x : rs)
      if (x > std::numeric_limits<int32_t>::max())
        return makeError(ErrorCode::Overflow, "stride %lld is out of range",
                         static_cast<long long>(x));
  std::array<uint64_t, kNumRoles> p = ptrs;
  std::array<int64_t, kNumRoles> c = counts;
  const size_t lse = static_cast<size_t>(Role::LSE);
  if (!p[lse]) {
    p[lse] = floatWs_ + static_cast<uint64_t>(lseScratchOffset_);
    c[lse] = rowCapacity_ * plan_.levels[0].num_qo_heads;
  }
  Variant &v = it->second;
  for (size_t i = 0; i < kMaxStateInputs; ++i) {
    const bool given = p[static_cast<size_t>(Role::State0) + i] != 0;
    if (i < stateInputs_.size() && !given)
      return makeError(ErrorCode::InvalidArgument,
                       "this plan's kernels take the state input %s: pass "
                       "%s ([num_qo_heads] float32)",
                       stateInputs_[i].c_str(), stateInputs_[i].c_str());
    if (i >= stateInputs_.size() && given)
      return Status(ErrorCode::InvalidArgument,
                    "a state input given, but this plan's kernels take no "
                    "more: plan with it");
  }
  // The tensor-core kernels fold k_scale into the softmax's exponent scale,
  // which needs it positive (the running max of the raw logits is then the
  // max of the scaled ones); a scale is a magnitude, so nothing else is
  // taken.
  if (!(kScale > 0.f && std::isfinite(kScale)))
    for (const auto &patches : v.scalePatches)
      for (const ScalePatch &patch : patches)
        if (!patch.v)
          return makeError(ErrorCode::InvalidArgument,
                           "k_scale must be positive and finite, got %g",
                           static_cast<double>(kScale));
  CASCADE_RETURN_IF_ERROR(device_.makeCurrent());
  // Kernels launched into a stream under capture become nodes of the
  // caller's graph; a graph launch there is not what the caller records.
  const bool graph = graphLaunch_ && device_.canBuildGraphs() &&
                     !(v.graph && v.graph->failed()) &&
                     !device_.isCapturing(stream);
  if (!v.graph && graph) {
    v.graph = std::make_unique<KernelGraph>(device_);
    v.dirty.assign(v.launches.size(), 1);
  }
  for (size_t i = 0; i < v.launches.size(); ++i) {
    PreparedLaunch &pl = v.launches[i];
    for (const Patch &patch : v.patches[i]) {
      const uint64_t value =
          patch.count ? static_cast<uint64_t>(c[patch.role]) : p[patch.role];
      if (pl.launch.slots[patch.slot] != value) {
        pl.launch.slots[patch.slot] = value;
        if (v.graph)
          v.dirty[i] = 1;
      }
    }
    for (const StridePatch &patch : v.stridePatches[i]) {
      const int64_t x = strides.values[patch.role][patch.h];
      const auto value = static_cast<uint64_t>(x >= 0 ? x : patch.contiguous);
      if (pl.launch.slots[patch.slot] != value) {
        pl.launch.slots[patch.slot] = value;
        if (v.graph)
          v.dirty[i] = 1;
      }
    }
    for (const ScalePatch &patch : v.scalePatches[i]) {
      const float f = patch.v ? vScale : kScale;
      uint64_t value = 0; // an f32 in the low 4 bytes of its slot
      std::memcpy(&value, &f, sizeof f);
      if (pl.launch.slots[patch.slot] != value) {
        pl.launch.slots[patch.slot] = value;
        if (v.graph)
          v.dirty[i] = 1;
      }
    }
  }
  lastRunUsedGraph_ =
      graph && v.graph->launch(v.launches, v.dirty, stream, &v.deps, &v.urgent);
  if (lastRunUsedGraph_)
    return Status::success();
  for (size_t i = 0; i < v.launches.size(); ++i)
    CASCADE_RETURN_IF_ERROR(device_.launch(v.launches[i], stream, i > 0));
  return Status::success();
}

} // namespace cascade::runtime
