//===- capi_plan_fuzzer.cpp - Fuzz the plan inputs of the C and C++ API ---===//
//
// libFuzzer target: the input bytes choose a plan's scalars (often near the
// int32/int64 limits) and its CSR arrays (random values, often extreme).
// Through the C API the arrays always have the lengths its contract states
// (kv_indptr and qo_indptr B+1, kv_last_page_len B, kv_indices
// kv_indptr[B] or NULL); through the C++ API (ArrayView carries lengths) any
// lengths are allowed, and so are cascades of up to three levels, and the
// automatic cascade of the first level. Every call must return a status; a
// plan must be internally consistent.
//
//===----------------------------------------------------------------------===//

#include "FuzzCheck.h"
#include "cascade/Runtime/AutoCascade.h"
#include "cascade/Runtime/Plan.h"
#include "cascade/Runtime/cascade_runtime.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <vector>

using namespace cascade::runtime;

namespace {

constexpr int64_t kI32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kI32Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();

/// Most arrays stay small enough to plan quickly.
constexpr size_t kMaxBatch = 512;

/// A scalar: small, or near a type limit, or anything.
int64_t pickScalar(FuzzedDataProvider &fdp) {
  switch (fdp.ConsumeIntegralInRange<int>(0, 7)) {
  case 0:
    return fdp.ConsumeIntegralInRange<int64_t>(-2, 16);
  case 1:
    return fdp.ConsumeIntegralInRange<int64_t>(0, 1024);
  case 2:
    return kI32Max - fdp.ConsumeIntegralInRange<int64_t>(0, 4);
  case 3:
    return kI32Min + fdp.ConsumeIntegralInRange<int64_t>(0, 4);
  case 4:
    return kI64Max - fdp.ConsumeIntegralInRange<int64_t>(0, 4);
  case 5:
    return kI64Min + fdp.ConsumeIntegralInRange<int64_t>(0, 4);
  case 6:
    return int64_t(1) << fdp.ConsumeIntegralInRange<int>(0, 62);
  default:
    return fdp.ConsumeIntegral<int64_t>();
  }
}

/// An int32 array element: small, near a limit, or anything.
int32_t pickElement(FuzzedDataProvider &fdp) {
  switch (fdp.ConsumeIntegralInRange<int>(0, 4)) {
  case 0:
    return fdp.ConsumeIntegralInRange<int32_t>(-1, 64);
  case 1:
    return fdp.ConsumeIntegralInRange<int32_t>(0, 100000);
  case 2:
    return static_cast<int32_t>(kI32Max -
                                fdp.ConsumeIntegralInRange<int32_t>(0, 4));
  case 3:
    return static_cast<int32_t>(kI32Min +
                                fdp.ConsumeIntegralInRange<int32_t>(0, 4));
  default:
    return fdp.ConsumeIntegral<int32_t>();
  }
}

/// A prefix-sum array (mostly valid CSR) or random values.
std::vector<int32_t> pickIndptrUnbounded(FuzzedDataProvider &fdp, size_t n) {
  std::vector<int32_t> v(n);
  const bool csr = fdp.ConsumeBool();
  int64_t acc = csr ? 0 : pickElement(fdp);
  for (size_t i = 0; i < n; ++i) {
    if (csr) {
      v[i] = static_cast<int32_t>(acc);
      int64_t step = fdp.ConsumeBool() ? fdp.ConsumeIntegralInRange<int>(0, 9)
                                       : pickElement(fdp);
      acc = std::max<int64_t>(kI32Min, std::min<int64_t>(kI32Max, acc + step));
    } else {
      v[i] = pickElement(fdp);
    }
  }
  return v;
}

/// Query rows stay below this: a plan's host arrays (and its JSON) grow with
/// its work items, i.e. with the query rows, up to 2^31 - 1 items (about
/// 34 GB for a prefill with qo_indptr = [0, 2^31 - 1]; test/Fuzz/README.md,
/// "Open findings"), and an input should run in milliseconds. Page counts
/// are not limited.
constexpr int32_t kMaxQueryRows = 1 << 16;

/// pickIndptrUnbounded with every element clamped to [-limit, limit].
std::vector<int32_t> pickIndptr(FuzzedDataProvider &fdp, size_t n,
                                int64_t limit = kI32Max) {
  std::vector<int32_t> v = pickIndptrUnbounded(fdp, n);
  for (int32_t &x : v)
    x = static_cast<int32_t>(
        std::max<int64_t>(-limit, std::min<int64_t>(limit, x)));
  return v;
}

std::vector<int32_t> pickArray(FuzzedDataProvider &fdp, size_t n) {
  std::vector<int32_t> v(n);
  const bool small = fdp.ConsumeBool();
  for (int32_t &x : v)
    x = small ? fdp.ConsumeIntegralInRange<int32_t>(0, 32) : pickElement(fdp);
  return v;
}

/// The arrays of one level.
struct Level {
  std::vector<int32_t> qo, kv, last, indices;
  bool hasQo = false, hasIndices = false;
};

/// At most this many prefill work items (query tiles): beyond, the plan's
/// host arrays and its JSON take seconds to build under ASan (same open
/// finding as kMaxQueryRows).
constexpr int64_t kMaxPrefillTiles = 1 << 18;

/// An upper bound on the query tiles of a prefill level (`rows` query rows,
/// or the graph capacity): rows * group / tile, with the smallest automatic
/// tile (16) when the tile is 0. False when the level may exceed
/// kMaxPrefillTiles.
bool fewTiles(const std::vector<int32_t> &qo, int64_t maxNumRows, int64_t hqo,
              int64_t hkv, int64_t tile) {
  if (hqo <= 0 || hkv <= 0 || hqo > 65535)
    return true; // rejected by validation
  int64_t rows = std::max<int64_t>(maxNumRows, 0);
  for (int32_t x : qo)
    rows = std::max<int64_t>(rows, x);
  if (rows > kI32Max)
    return true; // rejected by validation
  const int64_t t = tile > 0 && tile <= 4096 ? tile : 16;
  return rows * (hqo / hkv) / t <= kMaxPrefillTiles; // < 2^31 * 2^16
}

/// Checks what a successful plan promises.
void checkPlan(const Plan &p) {
  FUZZ_CHECK(p.padded_batch_size >= p.num_work_items);
  FUZZ_CHECK(static_cast<int64_t>(p.request_indices.size()) ==
             p.padded_batch_size);
  FUZZ_CHECK(static_cast<int64_t>(p.block_valid_mask.size()) ==
             p.padded_batch_size);
  FUZZ_CHECK(p.int_workspace.bytes >= 0 && p.float_workspace.bytes >= 0);
  for (const WorkspaceSection &s : p.int_workspace.sections)
    FUZZ_CHECK(s.offset >= 0 && s.bytes >= 0 &&
               s.offset + s.bytes <= p.int_workspace.bytes);
  for (const WorkspaceSection &s : p.float_workspace.sections)
    FUZZ_CHECK(s.offset >= 0 && s.bytes >= 0 &&
               s.offset + s.bytes <= p.float_workspace.bytes);
  for (int64_t w = 0; w < p.num_work_items; ++w)
    FUZZ_CHECK(p.request_indices[w] >= 0 &&
               p.request_indices[w] < p.batch_size);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FuzzedDataProvider fdp(data, size);

  // Scalars shared by both APIs.
  cascade_plan_inputs_t in;
  cascade_plan_inputs_init(&in);
  in.mode = fdp.ConsumeBool() ? CASCADE_PLAN_PREFILL : CASCADE_PLAN_DECODE;
  const bool sane = fdp.ConsumeBool(); // plausible heads/sizes, or anything
  in.num_qo_heads =
      sane ? 8 * fdp.ConsumeIntegralInRange<int64_t>(1, 8) : pickScalar(fdp);
  in.num_kv_heads =
      sane ? fdp.PickValueInArray<int64_t>({1, 2, 4, 8}) : pickScalar(fdp);
  in.head_dim =
      sane ? fdp.PickValueInArray<int64_t>({64, 128, 256}) : pickScalar(fdp);
  in.page_size =
      sane ? fdp.PickValueInArray<int64_t>({1, 16, 64}) : pickScalar(fdp);
  in.num_sms =
      sane ? fdp.ConsumeIntegralInRange<int64_t>(1, 132) : pickScalar(fdp);
  in.occupancy =
      sane ? fdp.ConsumeIntegralInRange<int64_t>(1, 4) : pickScalar(fdp);
  in.num_pages = fdp.ConsumeBool() ? -1 : pickScalar(fdp);
  // Grid and row capacities in (2^16, 2^31) are valid but make plans of
  // millions of work items (see kMaxQueryRows); larger values must be
  // rejected and stay.
  auto capped = [](int64_t v) {
    return v > kMaxQueryRows && v <= kI32Max ? int64_t(kMaxQueryRows) : v;
  };
  in.num_sms = capped(in.num_sms);
  in.occupancy = capped(in.occupancy);
  in.cuda_graph = fdp.ConsumeBool();
  in.qo_tile_size = fdp.ConsumeBool() ? 0 : pickScalar(fdp);
  in.max_num_rows = fdp.ConsumeBool() ? -1 : capped(pickScalar(fdp));

  // One level through the C API, with the lengths its contract states.
  const size_t batch = fdp.ConsumeIntegralInRange<size_t>(0, kMaxBatch);
  Level l0;
  l0.kv = pickIndptrUnbounded(fdp, batch + 1);
  l0.last = pickArray(fdp, batch);
  l0.hasQo = in.mode == CASCADE_PLAN_PREFILL || fdp.ConsumeBool();
  if (l0.hasQo)
    l0.qo = pickIndptr(fdp, batch + 1, kMaxQueryRows);
  const int64_t pages = l0.kv.empty() ? 0 : l0.kv.back();
  l0.hasIndices = pages >= 0 && pages <= 4096 && fdp.ConsumeBool();
  if (l0.hasIndices)
    l0.indices = pickArray(fdp, static_cast<size_t>(pages));
  in.batch_size = static_cast<int64_t>(batch);
  in.kv_indptr = l0.kv.data();
  in.kv_last_page_len = l0.last.data();
  in.qo_indptr = l0.hasQo ? l0.qo.data() : nullptr;
  in.kv_indices = l0.hasIndices ? l0.indices.data() : nullptr;
  if (std::getenv("CASCADE_FUZZ_VERBOSE"))
    std::fprintf(stderr,
                 "C API: mode %d B %lld Hqo %lld Hkv %lld D %lld page %lld "
                 "sms %lld occupancy %lld pages %lld graph %d tile %lld "
                 "max_rows %lld kv_indptr[B] %lld\n",
                 in.mode, (long long)in.batch_size, (long long)in.num_qo_heads,
                 (long long)in.num_kv_heads, (long long)in.head_dim,
                 (long long)in.page_size, (long long)in.num_sms,
                 (long long)in.occupancy, (long long)in.num_pages,
                 in.cuda_graph, (long long)in.qo_tile_size,
                 (long long)in.max_num_rows, (long long)pages);
  if (!fewTiles(l0.qo, in.max_num_rows, in.num_qo_heads, in.num_kv_heads,
                in.qo_tile_size))
    return 0;
  cascade_plan_t plan = nullptr;
  if (cascade_plan_create(&in, &plan) == CASCADE_OK) {
    const void *image = nullptr;
    int64_t bytes = -1;
    FUZZ_CHECK(cascade_plan_int_workspace(plan, &image, &bytes) == CASCADE_OK);
    int64_t padded = -1;
    FUZZ_CHECK(cascade_plan_get_scalar(plan, 0, "padded_batch_size", &padded) ==
               CASCADE_OK);
    FUZZ_CHECK(padded >= 0);
    char *json = nullptr;
    FUZZ_CHECK(cascade_plan_to_json(plan, &json) == CASCADE_OK);
    cascade_free(json);
    cascade_plan_destroy(plan);
  } else {
    FUZZ_CHECK(plan == nullptr);
  }

  // Up to three levels through the C++ API, with any array lengths.
  PlanInputs common;
  common.mode =
      in.mode == CASCADE_PLAN_PREFILL ? PlanMode::Prefill : PlanMode::Decode;
  common.num_pages = in.num_pages;
  common.num_qo_heads = in.num_qo_heads;
  common.num_kv_heads = in.num_kv_heads;
  common.head_dim = in.head_dim;
  common.page_size = in.page_size;
  common.num_sms = in.num_sms;
  common.occupancy = in.occupancy;
  common.cuda_graph = in.cuda_graph != 0;
  common.qo_tile_size = in.qo_tile_size;
  common.max_num_rows = in.max_num_rows;
  const int numLevels = fdp.ConsumeIntegralInRange<int>(1, 3);
  std::vector<Level> levels(static_cast<size_t>(numLevels));
  std::vector<PlanInputs> inputs;
  for (Level &l : levels) {
    auto len = [&] {
      return fdp.ConsumeBool()
                 ? batch + fdp.ConsumeIntegralInRange<size_t>(0, 2)
                 : fdp.ConsumeIntegralInRange<size_t>(0, 64);
    };
    l.kv = pickIndptrUnbounded(fdp, len());
    l.last = pickArray(fdp, len());
    l.hasQo = fdp.ConsumeBool();
    if (l.hasQo)
      l.qo = pickIndptr(fdp, len(), kMaxQueryRows);
    l.hasIndices = fdp.ConsumeBool();
    if (l.hasIndices)
      l.indices = pickArray(fdp, fdp.ConsumeIntegralInRange<size_t>(0, 256));
    if (!fewTiles(l.qo, in.max_num_rows, in.num_qo_heads, in.num_kv_heads,
                  in.qo_tile_size))
      return 0;
    PlanInputs p = common;
    if (fdp.ConsumeBool())
      p.mode = fdp.ConsumeBool() ? PlanMode::Prefill : PlanMode::Decode;
    p.kv_indptr = ArrayView<int32_t>(l.kv);
    p.kv_last_page_len = ArrayView<int32_t>(l.last);
    if (l.hasQo)
      p.qo_indptr = ArrayView<int32_t>(l.qo);
    if (l.hasIndices)
      p.kv_indices = ArrayView<int32_t>(l.indices);
    inputs.push_back(p);
  }
  Plan single;
  if (makePlan(inputs[0], single).ok())
    checkPlan(single);
  CascadePlan cascade;
  if (makeCascadePlan(inputs, cascade).ok()) {
    FUZZ_CHECK(cascade.levels.size() == inputs.size());
    FUZZ_CHECK(static_cast<int64_t>(cascade.int_image.size()) ==
               cascade.int_bytes);
    for (const Plan &p : cascade.levels)
      checkPlan(p);
  }

  // The automatic cascade of level 0: makePlan's validation, then levels
  // that cover the batch's rows and at most its pages.
  AutoCascadeOptions opt;
  opt.max_levels = fdp.ConsumeIntegralInRange<int64_t>(0, 5);
  opt.causal = fdp.ConsumeBool();
  opt.graph_group_capacity = fdp.ConsumeIntegralInRange<int64_t>(0, 8);
  if (fdp.ConsumeBool()) {
    opt.level_overhead_us = 0;
    opt.group_overhead_us = 0;
    opt.level_row_bytes = 0;
    opt.l2_hidden_fraction = 0;
  }
  AutoCascade ac;
  Status a = makeAutoCascadePlan(inputs[0], opt, ac);
  Status v = validatePlanInputs(inputs[0]);
  if (!v.ok())
    FUZZ_CHECK(a.code() == v.code() && a.message() == v.message());
  if (a.ok()) {
    const PlanInputs &p = inputs[0];
    const int64_t b = p.kv_indptr.size() - 1;
    FUZZ_CHECK(p.kv_indices.present());
    FUZZ_CHECK(static_cast<int64_t>(ac.levels.size()) <= opt.max_levels);
    FUZZ_CHECK(!p.cuda_graph ||
               static_cast<int64_t>(ac.levels.size()) == opt.max_levels);
    FUZZ_CHECK(ac.plan.levels.size() == ac.levels.size());
    int64_t read = 0;
    for (size_t l = 0; l < ac.levels.size(); ++l) {
      const AutoCascadeLevel &lv = ac.levels[l];
      FUZZ_CHECK(lv.kv_indptr.size() == lv.kv_last_page_len.size() + 1);
      FUZZ_CHECK(lv.kv_indices.size() == lv.kv_indptr[lv.kv_indptr.size() - 1]);
      FUZZ_CHECK(ac.plan.levels[l].num_rows == ac.plan.num_rows);
      checkPlan(ac.plan.levels[l]);
      read += lv.kv_indices.size();
    }
    FUZZ_CHECK(ac.levels.back().kv_indptr.size() == b + 1);
    FUZZ_CHECK(ac.stats.pages_read == read && read <= p.kv_indptr[b]);
  }
  return 0;
}
