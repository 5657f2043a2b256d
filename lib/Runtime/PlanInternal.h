//===- PlanInternal.h - makePlan's pieces for the runtime -------*- C++ -*-===//
//
// Private to lib/Runtime: what the plan's files (PlanValidation.cpp,
// PlanSchedule.cpp, PlanWorkspace.cpp, PlanCascade.cpp) share, and the
// entries AutoCascade.cpp plans through. validatePlanInputs is
// validateBeforePageIds, then checkPageIds, then validateAfterPageIds (the same
// codes, messages and order); the planning entries below skip validation so
// that a caller which validated an array once (makeAutoCascadePlan scans the
// page ids while it compares them, and builds levels that are valid by
// construction) does not pay for it again. The public functions keep validating
// everything.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_LIB_RUNTIME_PLANINTERNAL_H
#define CASCADE_LIB_RUNTIME_PLANINTERNAL_H

#include "cascade/Runtime/Plan.h"

#include <cstddef>
#include <cstdint>
#include <limits>

namespace cascade::runtime::detail {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
/// The most entries a plan's per-item or per-row host array may have
/// (padded_batch_size, row_capacity), as a power of two: checked before
/// anything is allocated, so that a small batch description cannot make the
/// planner allocate and fill (and its JSON form print) hundreds of megabytes.
/// 2^22 is 8x beyond a million-row prefill (a million query rows of GQA
/// group 8 in 16-row tiles are 2^19 tiles); at the bound a plan's host arrays
/// take ~100 MB and planning it well under a second. (It was 2^26: a
/// one-request description of 60M query rows then took 2 GB and more than
/// the fuzzer's 10 s under ASan.)
constexpr int kMaxPlanEntriesLog2 = 22;
constexpr int64_t kMaxPlanEntries = int64_t(1) << kMaxPlanEntriesLog2;

inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t alignUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }
inline bool mulOverflows(int64_t a, int64_t b, int64_t &out) {
  return __builtin_mul_overflow(a, b, &out);
}
inline long long ll(int64_t v) { return static_cast<long long>(v); }

/// Planning runs once per serving step with similar sizes: the arrays of the
/// plan a call replaces are kept (per thread) and their capacity reused by
/// the next call, instead of fresh allocations whose first touch page-faults.
/// `out` is only replaced on success. The same for cascades, and the
/// per-request scratch arrays of the chunk search.
struct PlanBuffers {
  Plan spare;
  CascadePlan spareCascade;
  std::vector<int64_t> pages, tiles;
};
PlanBuffers &planBuffers();

/// The int and float workspace sections of a scheduled plan (its arrays and
/// scalars set) and its int image (PlanWorkspace.cpp).
Status layoutWorkspaces(Plan &p);

/// A cascade's workspaces over its planned levels: each level's base, the
/// level states of levels >= 1 and the whole int image (PlanWorkspace.cpp).
Status layoutCascadeWorkspaces(CascadePlan &c);

/// Scalars, sizes, kv_indptr/qo_indptr and the size of kv_indices: what
/// validatePlanInputs checks before the page ids.
Status validateBeforePageIds(const PlanInputs &in);

/// The range check of kv_indices (if present; its first kv_indptr[B]
/// entries) against num_pages, with makePlan's message for the first bad
/// id. Needs validateBeforePageIds.
Status checkPageIds(const PlanInputs &in);

/// kv_last_page_len, KV lengths and the row bounds: what validatePlanInputs
/// checks after the page ids. Needs validateBeforePageIds.
Status validateAfterPageIds(const PlanInputs &in);

/// True if every id of ids[0, n) is in [0, numPages) (numPages < 0: the
/// pool size is unknown and ids need only be >= 0). Vectorized; uses AVX2
/// where the CPU has it (chosen at run time; building with
/// -DCASCADE_NO_AVX2_DISPATCH leaves only the portable code, here and in
/// AutoCascade.cpp, so that tests can cover it on AVX2 machines).
bool pageIdsInRange(const int32_t *ids, int64_t n, int64_t numPages);

/// makePlan for inputs that passed validatePlanInputs (kv_indices is not
/// read), planned into `out` in place: its arrays are reused. On error `out`
/// is left in an unspecified (valid) state.
Status planValidated(const PlanInputs &in, Plan &out);

/// makeCascadePlan over `n` levels that each passed validatePlanInputs,
/// planned into `out` in place (its levels' arrays reused). On error `out`
/// is left in an unspecified (valid) state.
Status cascadePlanValidated(const PlanInputs *levels, size_t n,
                            CascadePlan &out);

} // namespace cascade::runtime::detail

#endif // CASCADE_LIB_RUNTIME_PLANINTERNAL_H
