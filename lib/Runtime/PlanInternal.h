//===- PlanInternal.h - makePlan's pieces for the runtime -------*- C++ -*-===//
//
// Private to lib/Runtime. validatePlanInputs is validateBeforePageIds, then
// checkPageIds, then validateAfterPageIds (the same codes, messages and
// order); the planning entries below skip validation so that a caller which
// validated an array once (makeAutoCascadePlan scans the page ids while it
// compares them, and builds levels that are valid by construction) does not
// pay for it again. The public functions keep validating everything.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_LIB_RUNTIME_PLANINTERNAL_H
#define CASCADE_LIB_RUNTIME_PLANINTERNAL_H

#include "cascade/Runtime/Plan.h"

#include <cstddef>
#include <cstdint>

namespace cascade::runtime::detail {

/// Scalars, sizes, kv_indptr/qo_indptr and the size of kv_indices: what
/// validatePlanInputs checks before the page ids.
Status validateBeforePageIds(const PlanInputs &in);

/// The range check of kv_indices (if present) against num_pages, with
/// makePlan's message for the first bad id. Needs validateBeforePageIds.
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
