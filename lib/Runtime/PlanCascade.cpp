//===- PlanCascade.cpp - Plans of multi-level cascades --------------------===//
//
// A cascade plans each level (PlanSchedule.cpp), checks that the levels
// agree on the rows and the static sizes, lays the levels' workspaces and
// states side by side (PlanWorkspace.cpp) and lists its launches in order.
//
//===----------------------------------------------------------------------===//

#include "cascade/Runtime/Plan.h"

#include "PlanInternal.h"

#include <algorithm>

namespace cascade::runtime {

using detail::ll;
using detail::PlanBuffers;
using detail::planBuffers;

namespace {

/// The launches of `c` in order: the base level first, then the others.
void listSteps(CascadePlan &c) {
  c.steps.clear();
  auto add = [&](int32_t level) {
    const Plan &p = c.levels[static_cast<size_t>(level)];
    c.steps.push_back({p.work_kind, level, p.padded_batch_size});
    if (p.split_kv)
      c.steps.push_back({WorkKind::MergeSplits, level, p.num_rows});
    if (level != c.base_level)
      c.steps.push_back({WorkKind::MergeLevel, level, c.num_rows});
  };
  add(c.base_level);
  for (size_t l = 0; l < c.levels.size(); ++l)
    if (static_cast<int32_t>(l) != c.base_level)
      add(static_cast<int32_t>(l));
}

/// makeCascadePlan into `c` in place, validating each level first if
/// `validate`.
Status cascadeInto(const PlanInputs *levels, size_t n, bool validate,
                   CascadePlan &c) {
  if (n == 0)
    return makeError(ErrorCode::InvalidArgument,
                     "a cascade needs at least one level");
  c.levels.resize(n);
  for (size_t l = 0; l < n; ++l) {
    Status s = validate ? validatePlanInputs(levels[l]) : Status::success();
    if (s.ok())
      s = detail::planValidated(levels[l], c.levels[l]);
    if (!s.ok())
      return Status(s.code(),
                    "level " + std::to_string(l) + ": " + s.message());
  }
  const Plan &first = c.levels[0];
  for (size_t l = 1; l < n; ++l) {
    const Plan &p = c.levels[l];
    if (p.num_rows != first.num_rows)
      return makeError(ErrorCode::LevelMismatch,
                       "level %zu covers %lld query rows but level 0 covers "
                       "%lld (every level's qo_indptr[-1] must agree)",
                       l, ll(p.num_rows), ll(first.num_rows));
    if (p.num_qo_heads != first.num_qo_heads ||
        p.num_kv_heads != first.num_kv_heads || p.head_dim != first.head_dim ||
        p.vDim() != first.vDim() || p.page_size != first.page_size ||
        p.o_dtype != first.o_dtype)
      return makeError(ErrorCode::LevelMismatch,
                       "level %zu differs from level 0 in heads, head_dim, "
                       "page_size or output dtype",
                       l);
  }
  c.num_rows = first.num_rows;
  c.base_level = 0;
  CASCADE_RETURN_IF_ERROR(detail::layoutCascadeWorkspaces(c));
  listSteps(c);
  return Status::success();
}

} // namespace

Status detail::cascadePlanValidated(const PlanInputs *levels, size_t n,
                                    CascadePlan &out) {
  return cascadeInto(levels, n, /*validate=*/false, out);
}

Status makeCascadePlan(const std::vector<PlanInputs> &levels,
                       CascadePlan &out) {
  PlanBuffers &buffers = planBuffers();
  CascadePlan c = std::move(buffers.spareCascade);
  Status s = cascadeInto(levels.data(), levels.size(), /*validate=*/true, c);
  if (s.ok())
    std::swap(out, c);
  // The replaced cascade's arrays (or on error this call's) are reused by
  // the next call.
  buffers.spareCascade = std::move(c);
  return s;
}

Status setCascadeBaseLevel(CascadePlan &plan, int32_t base) {
  if (base < 0 || static_cast<size_t>(base) >= plan.levels.size())
    return makeError(ErrorCode::InvalidArgument,
                     "base level %d of a cascade of %zu levels", base,
                     plan.levels.size());
  if (plan.base_level == base)
    return Status::success();
  plan.base_level = base;
  CASCADE_RETURN_IF_ERROR(detail::layoutCascadeWorkspaces(plan));
  listSteps(plan);
  return Status::success();
}

int32_t preferredCascadeBaseLevel(const CascadePlan &plan) {
  const size_t n = plan.levels.size();
  for (size_t l = 0; l + 1 < n; ++l)
    if (plan.levels[l].split_kv)
      return static_cast<int32_t>(n - 1);
  return 0;
}

Status makeCascadePlan(const std::vector<PlanInputs> &levels,
                       const std::vector<PlanTarget> &targets, bool cudaGraph,
                       int64_t minRowCapacity, CascadePlan &out) {
  if (targets.size() != levels.size())
    return makeError(ErrorCode::InvalidArgument,
                     "a cascade of %zu levels needs one plan target per "
                     "level, got %zu",
                     levels.size(), targets.size());
  std::vector<PlanInputs> inputs = levels;
  for (size_t l = 0; l < inputs.size(); ++l) {
    PlanInputs &in = inputs[l];
    in.setTarget(targets[l]);
    in.cuda_graph = cudaGraph;
    const int64_t rows = in.qo_indptr.present() && in.qo_indptr.size() > 0
                             ? in.qo_indptr[in.qo_indptr.size() - 1]
                             : in.kv_indptr.size() - 1;
    in.max_num_rows =
        cudaGraph && in.mode == PlanMode::Prefill
            ? std::max(rows, minRowCapacity > 0 ? minRowCapacity : rows)
            : -1;
  }
  return makeCascadePlan(inputs, out);
}

} // namespace cascade::runtime
