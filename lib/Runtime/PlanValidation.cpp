//===- PlanValidation.cpp - Checking the inputs of a plan -----------------===//
//
// validatePlanInputs: every bad input has its own code and message, found
// before anything is planned or allocated. The array scans are branch-free
// first (they vectorize) and locate the culprit only on error.
//
//===----------------------------------------------------------------------===//

#include "cascade/Runtime/Plan.h"

#include "PlanInternal.h"

namespace cascade::runtime {

using detail::ll;

namespace {

Status checkIndptr(const char *name, ArrayView<int32_t> p) {
  if (p[0] != 0)
    return makeError(ErrorCode::InvalidIndptr, "%s[0] must be 0, got %d", name,
                     p[0]);
  // Branch-free scan first (vectorizes); locate the culprit only on error.
  uint32_t bad = 0;
  const int32_t *d = p.data();
  const int64_t n = p.size();
  for (int64_t i = 1; i < n; ++i)
    bad |= static_cast<uint32_t>(d[i] < d[i - 1]);
  if (!bad)
    return Status::success();
  for (int64_t i = 1; i < p.size(); ++i)
    if (p[i] < p[i - 1])
      return makeError(ErrorCode::InvalidIndptr,
                       "%s is not monotone: %s[%lld] = %d < %s[%lld] = %d",
                       name, name, ll(i), p[i], name, ll(i - 1), p[i - 1]);
  return Status::success();
}

/// True if some id is negative or above maxId (< 2^31), without AVX2: bit
/// 31 of x | (maxId - x) is set iff x is, and OR/SUB vectorize on baseline
/// x86-64 (SSE2 has no unsigned max). Independent accumulators so that the
/// loop is not one long dependency chain.
__attribute__((noinline)) bool anyIdAboveGeneric(const int32_t *ids, int64_t n,
                                                 uint32_t maxId) {
  constexpr int kLanes = 16;
  uint32_t acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) {
      const uint32_t x = static_cast<uint32_t>(ids[i + k]);
      acc[k] |= x | (maxId - x);
    }
  uint32_t all = 0;
  for (int k = 0; k < kLanes; ++k)
    all |= acc[k];
  for (; i < n; ++i) {
    const uint32_t x = static_cast<uint32_t>(ids[i]);
    all |= x | (maxId - x);
  }
  return (all >> 31) != 0;
}

#if (defined(__x86_64__) || defined(__i386__)) &&                              \
    (defined(__GNUC__) || defined(__clang__)) &&                               \
    !defined(CASCADE_NO_AVX2_DISPATCH)
#define CASCADE_PLAN_AVX2_SCAN 1
/// The same with AVX2: the unsigned maximum of the ids (a negative id is
/// >= 2^31 as unsigned), one vpmaxud per 8 ids.
__attribute__((target("avx2"), noinline)) bool
anyIdAboveAvx2(const int32_t *ids, int64_t n, uint32_t maxId) {
  constexpr int kLanes = 32;
  uint32_t acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) {
      const uint32_t x = static_cast<uint32_t>(ids[i + k]);
      acc[k] = acc[k] > x ? acc[k] : x;
    }
  uint32_t all = 0;
  for (int k = 0; k < kLanes; ++k)
    all = all > acc[k] ? all : acc[k];
  for (; i < n; ++i) {
    const uint32_t x = static_cast<uint32_t>(ids[i]);
    all = all > x ? all : x;
  }
  return all > maxId;
}
#endif

/// True if some id is negative or above maxId (< 2^31).
bool anyIdAbove(const int32_t *ids, int64_t n, uint32_t maxId) {
#ifdef CASCADE_PLAN_AVX2_SCAN
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2)
    return anyIdAboveAvx2(ids, n, maxId);
#endif
  return anyIdAboveGeneric(ids, n, maxId);
}

} // namespace

Status detail::validateBeforePageIds(const PlanInputs &in) {
  if (in.page_size <= 0)
    return makeError(ErrorCode::InvalidPageSize,
                     "page_size must be positive, got %lld", ll(in.page_size));
  if (in.page_size > detail::kInt32Max)
    return makeError(ErrorCode::InvalidPageSize,
                     "page_size %lld does not fit in int32", ll(in.page_size));
  if (in.head_dim <= 0 || in.head_dim % 8 != 0 || in.head_dim > 256)
    return makeError(ErrorCode::InvalidHeadDim,
                     "head_dim must be a positive multiple of 8 and at most "
                     "256, got %lld",
                     ll(in.head_dim));
  if (in.head_dim_vo < 0 || in.head_dim_vo % 8 != 0 ||
      in.head_dim_vo > in.head_dim)
    return makeError(ErrorCode::InvalidHeadDim,
                     "head_dim_vo must be 0 (head_dim's) or a positive "
                     "multiple of 8 no larger than head_dim (%lld), got %lld",
                     ll(in.head_dim), ll(in.head_dim_vo));
  if (in.num_qo_heads <= 0 || in.num_kv_heads <= 0)
    return makeError(ErrorCode::InvalidHeads,
                     "num_qo_heads and num_kv_heads must be positive, got "
                     "%lld and %lld",
                     ll(in.num_qo_heads), ll(in.num_kv_heads));
  if (in.num_qo_heads % in.num_kv_heads != 0)
    return makeError(ErrorCode::InvalidHeads,
                     "num_qo_heads (%lld) must be a multiple of num_kv_heads "
                     "(%lld)",
                     ll(in.num_qo_heads), ll(in.num_kv_heads));
  if (in.num_kv_heads > 65535 || in.num_qo_heads > 65535)
    return makeError(ErrorCode::InvalidHeads,
                     "head counts must be at most 65535, got %lld and %lld",
                     ll(in.num_qo_heads), ll(in.num_kv_heads));
  if (in.num_sms <= 0)
    return makeError(ErrorCode::InvalidArgument,
                     "num_sms must be positive, got %lld", ll(in.num_sms));
  if (in.occupancy <= 0)
    return makeError(ErrorCode::InvalidArgument,
                     "occupancy must be positive, got %lld", ll(in.occupancy));
  if (in.num_sms > (1 << 20) || in.occupancy > (1 << 12))
    return makeError(ErrorCode::InvalidArgument,
                     "num_sms (%lld) or occupancy (%lld) is implausibly large",
                     ll(in.num_sms), ll(in.occupancy));
  if (in.qo_tile_size < 0 || in.qo_tile_size > 4096)
    return makeError(ErrorCode::InvalidArgument,
                     "qo_tile_size must be in [0, 4096] (0 = automatic), got "
                     "%lld",
                     ll(in.qo_tile_size));
  if (in.fixed_split_pages < 0)
    return makeError(ErrorCode::InvalidArgument,
                     "fixed_split_pages must be >= 0 (0 = automatic), got "
                     "%lld",
                     ll(in.fixed_split_pages));
  if (in.fixed_split_pages > 0 && in.disable_split_kv)
    return makeError(ErrorCode::InvalidArgument,
                     "fixed_split_pages (%lld) and disable_split_kv are "
                     "exclusive: a fixed chunk splits KV",
                     ll(in.fixed_split_pages));

  // Sizes.
  if (!in.kv_indptr.present() || in.kv_indptr.size() < 1)
    return makeError(ErrorCode::SizeMismatch,
                     "kv_indptr must have batch_size + 1 >= 1 entries");
  const int64_t b = in.kv_indptr.size() - 1;
  if (b > detail::kInt32Max)
    return makeError(ErrorCode::Overflow, "batch size %lld exceeds 2^31 - 1",
                     ll(b));
  if (!in.kv_last_page_len.present() || in.kv_last_page_len.size() != b)
    return makeError(ErrorCode::SizeMismatch,
                     "kv_last_page_len has %lld entries, expected batch_size "
                     "= %lld",
                     ll(in.kv_last_page_len.size()), ll(b));
  if (in.mode == PlanMode::Prefill && !in.qo_indptr.present())
    return makeError(ErrorCode::SizeMismatch,
                     "prefill needs qo_indptr with batch_size + 1 = %lld "
                     "entries",
                     ll(b + 1));
  if (in.qo_indptr.present() && in.qo_indptr.size() != b + 1)
    return makeError(ErrorCode::SizeMismatch,
                     "qo_indptr has %lld entries, expected batch_size + 1 = "
                     "%lld",
                     ll(in.qo_indptr.size()), ll(b + 1));

  // Index arrays.
  CASCADE_RETURN_IF_ERROR(checkIndptr("kv_indptr", in.kv_indptr));
  if (in.qo_indptr.present()) {
    CASCADE_RETURN_IF_ERROR(checkIndptr("qo_indptr", in.qo_indptr));
    if (in.mode == PlanMode::Decode)
      for (int64_t i = 0; i < b; ++i)
        if (in.qo_indptr[i + 1] - in.qo_indptr[i] != 1)
          return makeError(ErrorCode::InvalidIndptr,
                           "decode expects one query per request, but "
                           "request %lld has %d (use mode prefill)",
                           ll(i), in.qo_indptr[i + 1] - in.qo_indptr[i]);
  }
  // A longer kv_indices is a preallocated buffer: only its first
  // kv_indptr[B] entries are read (usedKvIndices).
  const int64_t totalPages = in.kv_indptr[b];
  if (in.kv_indices.present() && in.kv_indices.size() < totalPages)
    return makeError(ErrorCode::SizeMismatch,
                     "kv_indices has %lld entries but kv_indptr[%lld] = %lld "
                     "(it needs at least kv_indptr[batch_size] entries; "
                     "entries beyond are ignored)",
                     ll(in.kv_indices.size()), ll(b), ll(totalPages));
  return Status::success();
}

bool detail::pageIdsInRange(const int32_t *ids, int64_t n, int64_t numPages) {
  if (n <= 0)
    return true;
  if (numPages == 0)
    return false;
  const uint32_t maxId = numPages >= 1 && numPages <= detail::kInt32Max
                             ? static_cast<uint32_t>(numPages - 1)
                             : 0x7fffffffu;
  return !anyIdAbove(ids, n, maxId);
}

Status detail::checkPageIds(const PlanInputs &in) {
  if (!in.kv_indices.present())
    return Status::success();
  // Branch-free scan first; the culprit is located only on error. Only the
  // pages the requests use: a preallocated buffer's tail is not looked at.
  const ArrayView<int32_t> ids = in.usedKvIndices();
  const int64_t totalPages = ids.size();
  if (pageIdsInRange(ids.data(), totalPages, in.num_pages))
    return Status::success();
  for (int64_t i = 0; i < totalPages; ++i) {
    int32_t id = ids[i];
    if (id < 0 || (in.num_pages >= 0 && id >= in.num_pages)) {
      if (in.num_pages >= 0)
        return makeError(ErrorCode::PageOutOfRange,
                         "kv_indices[%lld] = %d is outside the page pool "
                         "[0, %lld)",
                         ll(i), id, ll(in.num_pages));
      return makeError(ErrorCode::PageOutOfRange,
                       "kv_indices[%lld] = %d is negative", ll(i), id);
    }
  }
  return Status::success();
}

Status detail::validateAfterPageIds(const PlanInputs &in) {
  const int64_t b = in.kv_indptr.size() - 1;
  for (int64_t i = 0; i < b; ++i) {
    int64_t pages = int64_t(in.kv_indptr[i + 1]) - in.kv_indptr[i];
    if (pages == 0)
      continue;
    int32_t last = in.kv_last_page_len[i];
    if (last < 1 || last > in.page_size)
      return makeError(ErrorCode::InvalidLastPageLen,
                       "kv_last_page_len[%lld] = %d is outside [1, page_size "
                       "= %lld]",
                       ll(i), last, ll(in.page_size));
    int64_t kvLen = (pages - 1) * in.page_size + last; // < 2^62
    if (kvLen > detail::kInt32Max)
      return makeError(ErrorCode::Overflow,
                       "request %lld has %lld KV tokens, more than 2^31 - 1",
                       ll(i), ll(kvLen));
  }
  if (in.mode == PlanMode::Prefill && in.cuda_graph && in.max_num_rows >= 0 &&
      in.max_num_rows < in.qo_indptr[b])
    return makeError(ErrorCode::InvalidArgument,
                     "max_num_rows (%lld) is smaller than the %d query rows "
                     "of this batch",
                     ll(in.max_num_rows), in.qo_indptr[b]);
  if (in.max_num_rows > detail::kMaxPlanEntries)
    return makeError(ErrorCode::Overflow,
                     "max_num_rows %lld exceeds the plan's bound of 2^%d rows",
                     ll(in.max_num_rows), detail::kMaxPlanEntriesLog2);
  if (in.mode == PlanMode::Prefill && in.qo_indptr[b] > detail::kMaxPlanEntries)
    return makeError(ErrorCode::Overflow,
                     "the batch has %d query rows, more than the plan's bound "
                     "of 2^%d",
                     in.qo_indptr[b], detail::kMaxPlanEntriesLog2);
  return Status::success();
}

Status validatePlanInputs(const PlanInputs &in) {
  CASCADE_RETURN_IF_ERROR(detail::validateBeforePageIds(in));
  CASCADE_RETURN_IF_ERROR(detail::checkPageIds(in));
  return detail::validateAfterPageIds(in);
}

} // namespace cascade::runtime
