//===- plan_json_fuzzer.cpp - Fuzz batch descriptions (cascade-plan) ------===//
//
// libFuzzer target: the input is a JSON batch description, as cascade-plan
// and cascade_plan_create_from_json read it. Every accepted description must
// plan or fail with a Status; a plan must print as valid JSON whose sizes
// agree with the C API's view of the same plan. An "auto_cascade" batch is
// validated like a plain one (same code and message), and its levels cover
// the batch's rows and pages.
//
//===----------------------------------------------------------------------===//

#include "FuzzCheck.h"
#include "cascade/Runtime/PlanJson.h"
#include "cascade/Runtime/cascade_runtime.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

using namespace cascade::runtime;

/// Plans with more entries than this (work items plus rows, over all levels)
/// skip the JSON printing and re-parsing checks. Those run per entry through
/// nlohmann::json, which under ASan and coverage instrumentation costs ~1 us
/// an entry; at the planner's bound (2^22 per level, 3 levels) one input
/// took 40 s against libFuzzer's 10 s timeout. The printing code is the same
/// for every size, so smaller plans cover it.
static constexpr int64_t kMaxPrintedEntries = int64_t(1) << 16;

static int64_t entries(const Plan &p) {
  return p.padded_batch_size + p.row_capacity;
}

static int64_t entries(const CascadePlan &plan) {
  int64_t n = 0;
  for (const Plan &l : plan.levels)
    n += entries(l);
  return n;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string_view text(reinterpret_cast<const char *>(data), size);

  // The cascade-plan path: parse, then makePlan or makeCascadePlan.
  BatchDescription d;
  Status s = parseBatchDescription(text, d);
  bool planned = false;
  int64_t autoLevels = -1;
  if (s.ok()) {
    FUZZ_CHECK(!d.levels.empty());
    std::string out;
    if (d.autoCascade) {
      FUZZ_CHECK(!d.isCascade && d.levels.size() == 1);
      const PlanInputs in = d.inputs()[0];
      AutoCascade ac;
      Status a = makeAutoCascadePlan(in, d.autoOptions, ac);
      Status v = validatePlanInputs(in);
      if (!v.ok())
        FUZZ_CHECK(a.code() == v.code() && a.message() == v.message());
      if (a.ok()) {
        if (entries(ac.plan) <= kMaxPrintedEntries)
          out = autoCascadeToJson(ac, d.causal);
        autoLevels = static_cast<int64_t>(ac.levels.size());
        FUZZ_CHECK(ac.plan.levels.size() == ac.levels.size());
        const int64_t b = in.kv_indptr.size() - 1;
        int64_t read = 0;
        for (const AutoCascadeLevel &l : ac.levels) {
          FUZZ_CHECK(l.kv_indptr.size() == l.kv_last_page_len.size() + 1);
          FUZZ_CHECK(l.kv_indices.size() ==
                     l.kv_indptr[l.kv_indptr.size() - 1]);
          read += l.kv_indices.size();
        }
        FUZZ_CHECK(ac.levels.back().kv_indptr.size() == b + 1);
        FUZZ_CHECK(ac.stats.pages_in == in.kv_indptr[b]);
        FUZZ_CHECK(ac.stats.pages_read == read && read <= in.kv_indptr[b]);
        planned = true;
      }
    } else if (d.isCascade) {
      CascadePlan plan;
      if (makeCascadePlan(d.inputs(), plan).ok()) {
        if (entries(plan) <= kMaxPrintedEntries)
          out = cascadePlanToJson(plan, d.causal);
        FUZZ_CHECK(plan.levels.size() == d.levels.size());
        FUZZ_CHECK(static_cast<int64_t>(plan.int_image.size()) ==
                   plan.int_bytes);
        planned = true;
      }
    } else {
      Plan plan;
      if (makePlan(d.inputs()[0], plan).ok()) {
        if (entries(plan) <= kMaxPrintedEntries)
          out = planToJson(plan);
        planned = true;
      }
    }
    if (planned && !out.empty())
      FUZZ_CHECK(nlohmann::json::accept(out));
  } else {
    // One line: the CLI prints it as one, the C API returns it.
    FUZZ_CHECK(!s.message().empty());
    FUZZ_CHECK(s.message().find('\n') == std::string::npos);
  }

  // The C API path over the same bytes.
  cascade_plan_t plan = nullptr;
  cascade_status_t st =
      cascade_plan_create_from_json(text.data(), text.size(), &plan);
  if (st != CASCADE_OK) {
    FUZZ_CHECK(plan == nullptr);
    FUZZ_CHECK(std::strlen(cascade_last_error()) > 0);
    return 0;
  }
  FUZZ_CHECK(s.ok()); // the C API accepts only what parses
  const int64_t levels = cascade_plan_num_levels(plan);
  FUZZ_CHECK(levels == (d.autoCascade ? autoLevels
                                      : static_cast<int64_t>(d.levels.size())));
  const void *image = nullptr;
  int64_t bytes = -1;
  FUZZ_CHECK(cascade_plan_int_workspace(plan, &image, &bytes) == CASCADE_OK);
  FUZZ_CHECK(bytes >= 0);
  const int64_t floatBytes = cascade_plan_float_workspace_bytes(plan);
  FUZZ_CHECK(floatBytes >= 0);
  int64_t planEntries = 0;
  for (int64_t l = 0; l < levels; ++l) {
    int64_t v = 0, rows = 0;
    FUZZ_CHECK(cascade_plan_get_scalar(plan, l, "padded_batch_size", &v) ==
               CASCADE_OK);
    FUZZ_CHECK(cascade_plan_get_scalar(plan, l, "row_capacity", &rows) ==
               CASCADE_OK);
    planEntries += v + rows;
    for (const char *name : {"request_indices", "kv_tile_indices", "o_indptr",
                             "merge_indptr", "block_valid_mask"}) {
      int64_t offset = -1, n = -1;
      if (cascade_plan_section(plan, l, name, &offset, &n) == CASCADE_OK)
        FUZZ_CHECK(offset >= 0 && n >= 0 && offset + n <= bytes);
    }
  }
  if (planEntries <= kMaxPrintedEntries) {
    char *json = nullptr;
    FUZZ_CHECK(cascade_plan_to_json(plan, &json) == CASCADE_OK);
    FUZZ_CHECK(nlohmann::json::accept(json));
    cascade_free(json);
  }
  cascade_plan_destroy(plan);
  return 0;
}
