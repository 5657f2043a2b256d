//===- Plan.cpp - Host-side scheduling plans ------------------------------===//
//
// Decode follows FlashInfer's DecodePlan (binary search for the smallest KV
// chunk that fits the grid); prefill follows its PrefillPlan (query tiles
// from the average packed query length, the same chunk search over tiles).
//
//===----------------------------------------------------------------------===//

#include "cascade/Runtime/Plan.h"

#include "PlanInternal.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace cascade::runtime {

namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
/// The most entries a plan's per-item or per-row host array may have
/// (padded_batch_size, row_capacity): checked before anything is allocated,
/// so that a small batch description cannot make the planner allocate
/// gigabytes. 2^26 work items is far beyond any real batch (a million query
/// rows of GQA group 8 in 16-row tiles are 2^19 tiles).
constexpr int64_t kMaxPlanEntries = int64_t(1) << 26;

inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline int64_t alignUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

inline bool mulOverflows(int64_t a, int64_t b, int64_t &out) {
  return __builtin_mul_overflow(a, b, &out);
}

long long ll(int64_t v) { return static_cast<long long>(v); }

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

/// Work items of the whole batch with KV chunks of `chunk` pages.
int64_t countItems(const std::vector<int64_t> &tiles,
                   const std::vector<int64_t> &pages, int64_t chunk) {
  int64_t items = 0;
  const size_t n = tiles.size();
  for (size_t i = 0; i < n; ++i) {
    if (tiles[i] == 0)
      continue;
    int64_t p = pages[i];
    items += tiles[i] * (p > chunk ? (p + chunk - 1) / chunk : 1);
  }
  return items;
}

/// Smallest chunk (pages) c >= minChunk with countItems(c) <= limit, found
/// by binary search over [minChunk, max(maxPages, minChunk)]; the upper end
/// when even one chunk per request does not fit.
int64_t searchChunkPages(const std::vector<int64_t> &tiles,
                         const std::vector<int64_t> &pages, int64_t limit,
                         int64_t minChunk, int64_t maxPages) {
  int64_t low = minChunk;
  int64_t high = std::max(maxPages, minChunk);
  if (countItems(tiles, pages, high) > limit)
    return high;
  while (low < high) {
    int64_t mid = low + (high - low) / 2;
    if (countItems(tiles, pages, mid) > limit)
      low = mid + 1;
    else
      high = mid;
  }
  return low;
}

/// Bytes of one section of an image, in section order.
struct SectionData {
  const void *data;
  size_t bytes;
};

/// Writes `image` (resized to layout.bytes) as sections[k] = data[k], every
/// other byte (alignment gaps, the tail) zero: each byte is written once, so
/// the old contents of a reused image need not be cleared first.
void writeImage(std::vector<uint8_t> &image, const WorkspaceLayout &layout,
                const SectionData *data) {
  image.resize(static_cast<size_t>(layout.bytes));
  uint8_t *const out = image.data();
  size_t pos = 0;
  for (size_t k = 0; k < layout.sections.size(); ++k) {
    const size_t offset = static_cast<size_t>(layout.sections[k].offset);
    if (offset > pos)
      std::memset(out + pos, 0, offset - pos);
    if (data[k].bytes)
      std::memcpy(out + offset, data[k].data, data[k].bytes);
    pos = offset + data[k].bytes;
  }
  if (image.size() > pos)
    std::memset(out + pos, 0, image.size() - pos);
}

/// Empties `p` (every scalar back to its default) but keeps the capacity of
/// its arrays, so that planning into it again does not allocate. o_indptr,
/// merge_indptr and int_image keep their contents too: planning resizes and
/// then writes every element of them, so clearing them first (a memset of
/// up to the number of query rows) would only be a second pass.
void recycle(Plan &p) {
  Plan fresh;
  auto take = [](auto &dst, auto &src) {
    dst = std::move(src);
    dst.clear();
  };
  take(fresh.request_indices, p.request_indices);
  take(fresh.kv_tile_indices, p.kv_tile_indices);
  take(fresh.qo_tile_indices, p.qo_tile_indices);
  fresh.o_indptr = std::move(p.o_indptr);
  fresh.merge_indptr = std::move(p.merge_indptr);
  take(fresh.block_valid_mask, p.block_valid_mask);
  fresh.int_image = std::move(p.int_image);
  take(fresh.int_workspace.sections, p.int_workspace.sections);
  take(fresh.float_workspace.sections, p.float_workspace.sections);
  p = std::move(fresh);
}

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

PlanBuffers &planBuffers() {
  static thread_local PlanBuffers buffers;
  return buffers;
}

} // namespace

//===----------------------------------------------------------------------===//
// Small helpers
//===----------------------------------------------------------------------===//

const WorkspaceSection *WorkspaceLayout::find(std::string_view name) const {
  for (const WorkspaceSection &s : sections)
    if (name == s.name)
      return &s;
  return nullptr;
}

bool WorkspaceLayout::add(const char *name, const char *dtype, int64_t count,
                          int64_t elemBytes) {
  int64_t bytesNeeded;
  if (mulOverflows(count, elemBytes, bytesNeeded))
    return false;
  int64_t offset = alignUp(bytes, alignment);
  int64_t end;
  if (__builtin_add_overflow(offset, bytesNeeded, &end) ||
      end > std::numeric_limits<int64_t>::max() - alignment)
    return false;
  sections.push_back({name, dtype, offset, bytesNeeded, count});
  bytes = alignUp(end, alignment);
  return true;
}

int64_t chooseQoTileSize(int64_t avgPackedQoLen, int64_t headDim) {
  if (avgPackedQoLen > 64 && headDim < 256)
    return 128;
  if (avgPackedQoLen > 16)
    return 64;
  return 16;
}

bool Plan::scalar(std::string_view name, int64_t &value) const {
  const std::pair<const char *, int64_t> scalars[] = {
      {"batch_size", batch_size},
      {"num_rows", num_rows},
      {"row_capacity", row_capacity},
      {"num_qo_heads", num_qo_heads},
      {"num_kv_heads", num_kv_heads},
      {"head_dim", head_dim},
      {"page_size", page_size},
      {"gqa_group_size", gqa_group_size},
      {"cuda_graph", cuda_graph ? 1 : 0},
      {"split_kv", split_kv ? 1 : 0},
      {"padded_batch_size", padded_batch_size},
      {"num_work_items", num_work_items},
      {"kv_chunk_size", kv_chunk_size},
      {"kv_chunk_size_pages", kv_chunk_size_pages},
      {"qo_tile_size", qo_tile_size},
      {"num_partial_rows", num_partial_rows},
      {"partial_rows_capacity", partial_rows_capacity},
      {"int_workspace_bytes", int_workspace.bytes},
      {"float_workspace_bytes", float_workspace.bytes}};
  for (const auto &s : scalars)
    if (name == s.first) {
      value = s.second;
      return true;
    }
  return false;
}

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

Status detail::validateBeforePageIds(const PlanInputs &in) {
  if (in.page_size <= 0)
    return makeError(ErrorCode::InvalidPageSize,
                     "page_size must be positive, got %lld", ll(in.page_size));
  if (in.page_size > kInt32Max)
    return makeError(ErrorCode::InvalidPageSize,
                     "page_size %lld does not fit in int32", ll(in.page_size));
  if (in.head_dim <= 0 || in.head_dim % 8 != 0 || in.head_dim > 256)
    return makeError(ErrorCode::InvalidHeadDim,
                     "head_dim must be a positive multiple of 8 and at most "
                     "256, got %lld",
                     ll(in.head_dim));
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

  // Sizes.
  if (!in.kv_indptr.present() || in.kv_indptr.size() < 1)
    return makeError(ErrorCode::SizeMismatch,
                     "kv_indptr must have batch_size + 1 >= 1 entries");
  const int64_t b = in.kv_indptr.size() - 1;
  if (b > kInt32Max)
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
  const int64_t totalPages = in.kv_indptr[b];
  if (in.kv_indices.present() && in.kv_indices.size() != totalPages)
    return makeError(ErrorCode::SizeMismatch,
                     "kv_indices has %lld entries but kv_indptr[%lld] = %lld",
                     ll(in.kv_indices.size()), ll(b), ll(totalPages));
  return Status::success();
}

bool detail::pageIdsInRange(const int32_t *ids, int64_t n, int64_t numPages) {
  if (n <= 0)
    return true;
  if (numPages == 0)
    return false;
  const uint32_t maxId = numPages >= 1 && numPages <= kInt32Max
                             ? static_cast<uint32_t>(numPages - 1)
                             : 0x7fffffffu;
  return !anyIdAbove(ids, n, maxId);
}

Status detail::checkPageIds(const PlanInputs &in) {
  if (!in.kv_indices.present())
    return Status::success();
  // Branch-free scan first; the culprit is located only on error.
  const int64_t totalPages = in.kv_indices.size();
  if (pageIdsInRange(in.kv_indices.data(), totalPages, in.num_pages))
    return Status::success();
  for (int64_t i = 0; i < totalPages; ++i) {
    int32_t id = in.kv_indices[i];
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
    if (kvLen > kInt32Max)
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
  if (in.max_num_rows > kMaxPlanEntries)
    return makeError(ErrorCode::Overflow,
                     "max_num_rows %lld exceeds the plan's bound of 2^26 rows",
                     ll(in.max_num_rows));
  if (in.mode == PlanMode::Prefill && in.qo_indptr[b] > kMaxPlanEntries)
    return makeError(ErrorCode::Overflow,
                     "the batch has %d query rows, more than the plan's bound "
                     "of 2^26",
                     in.qo_indptr[b]);
  return Status::success();
}

Status validatePlanInputs(const PlanInputs &in) {
  CASCADE_RETURN_IF_ERROR(detail::validateBeforePageIds(in));
  CASCADE_RETURN_IF_ERROR(detail::checkPageIds(in));
  return detail::validateAfterPageIds(in);
}

//===----------------------------------------------------------------------===//
// Planning
//===----------------------------------------------------------------------===//

Status detail::planValidated(const PlanInputs &in, Plan &p) {
  recycle(p);
  const int64_t b = in.kv_indptr.size() - 1;
  const bool decode = in.mode == PlanMode::Decode;
  p.mode = in.mode;
  p.batch_size = b;
  p.num_qo_heads = in.num_qo_heads;
  p.num_kv_heads = in.num_kv_heads;
  p.head_dim = in.head_dim;
  p.page_size = in.page_size;
  p.o_dtype = in.o_dtype;
  p.gqa_group_size = in.num_qo_heads / in.num_kv_heads;
  p.cuda_graph = in.cuda_graph;
  p.grid_limit = in.num_sms * in.occupancy;
  const int64_t g = p.gqa_group_size;
  const int64_t hkv = in.num_kv_heads;

  p.num_rows = decode ? b : in.qo_indptr[b];
  p.row_capacity = p.num_rows;
  if (!decode && in.cuda_graph && in.max_num_rows >= 0)
    p.row_capacity = in.max_num_rows;

  // Per request: pages and query tiles.
  std::vector<int64_t> &pages = planBuffers().pages;
  std::vector<int64_t> &tiles = planBuffers().tiles;
  pages.resize(static_cast<size_t>(b));
  tiles.resize(static_cast<size_t>(b));
  int64_t maxPages = 0;
  for (int64_t i = 0; i < b; ++i) {
    pages[i] = int64_t(in.kv_indptr[i + 1]) - in.kv_indptr[i];
    maxPages = std::max(maxPages, pages[i]);
  }
  if (decode) {
    p.qo_tile_size = 1;
    std::fill(tiles.begin(), tiles.end(), 1);
  } else {
    int64_t tile = in.qo_tile_size;
    if (tile == 0) {
      int64_t rowsForAvg = in.cuda_graph ? p.row_capacity : p.num_rows;
      int64_t avg = b > 0 ? rowsForAvg * g / b : 0;
      tile = chooseQoTileSize(avg, in.head_dim);
    }
    p.qo_tile_size = tile;
    const int32_t *qo = in.qo_indptr.data();
    int64_t *const tilesOut = tiles.data();
    if ((tile & (tile - 1)) == 0) { // a power of two: no division
      const int shift = __builtin_ctzll(static_cast<unsigned long long>(tile));
      for (int64_t i = 0; i < b; ++i) {
        int64_t qoLen = int64_t(qo[i + 1]) - qo[i];
        tilesOut[i] = (qoLen * g + tile - 1) >> shift;
      }
    } else {
      for (int64_t i = 0; i < b; ++i) {
        int64_t qoLen = int64_t(qo[i + 1]) - qo[i];
        tilesOut[i] = ceilDiv(qoLen * g, tile);
      }
    }
  }

  // Split-KV decision and chunk size (pages).
  const int64_t maxItemsIfSplit = p.grid_limit / hkv;
  const int64_t minChunk = std::max<int64_t>(128 / in.page_size, 1);
  int64_t chunk = std::max<int64_t>(maxPages, 1);
  bool split = false;
  if (decode) {
    if (b * hkv < p.grid_limit) {
      int64_t c =
          searchChunkPages(tiles, pages, maxItemsIfSplit, minChunk, maxPages);
      int64_t items = countItems(tiles, pages, c);
      split = in.cuda_graph || items != b;
      if (split)
        chunk = c;
    }
  } else {
    int64_t c =
        searchChunkPages(tiles, pages, maxItemsIfSplit, minChunk, maxPages);
    split = in.cuda_graph || c < maxPages;
    if (split)
      chunk = c;
  }
  p.split_kv = split;
  p.kv_chunk_size_pages = chunk;
  p.kv_chunk_size = chunk * in.page_size;
  if (p.kv_chunk_size > kInt32Max)
    p.kv_chunk_size = kInt32Max; // one chunk covers every request anyway

  // Work items, o_indptr and merge_indptr.
  const int64_t items = countItems(tiles, pages, chunk);
  if (items > kMaxPlanEntries)
    return makeError(ErrorCode::Overflow,
                     "the plan has %lld work items, more than its bound of "
                     "2^26",
                     ll(items));
  int64_t padded = items;
  if (in.cuda_graph) {
    if (decode) {
      padded = split ? maxItemsIfSplit : b;
    } else {
      const int64_t t = p.qo_tile_size;
      int64_t tileBound = (p.row_capacity * g + b * (t - 1)) / t;
      padded = std::max(maxItemsIfSplit, tileBound);
    }
  }
  if (padded > kMaxPlanEntries)
    return makeError(ErrorCode::Overflow,
                     "padded_batch_size %lld exceeds the plan's bound of 2^26",
                     ll(padded));
  p.num_work_items = items;
  p.padded_batch_size = padded;

  p.request_indices.assign(static_cast<size_t>(padded), 0);
  p.kv_tile_indices.assign(static_cast<size_t>(padded), 0);
  p.qo_tile_indices.assign(static_cast<size_t>(padded), 0);
  p.block_valid_mask.assign(static_cast<size_t>(padded), 0);
  p.o_indptr.resize(static_cast<size_t>(b + 1));
  p.merge_indptr.resize(static_cast<size_t>(p.row_capacity + 1));
  // Raw pointers: the byte stores into block_valid_mask may alias anything
  // reached through memory, which would reload every vector's data pointer
  // (and the thread-local scratch) once per work item.
  int32_t *const requestIndices = p.request_indices.data();
  int32_t *const qoTileIndices = p.qo_tile_indices.data();
  int32_t *const kvTileIndices = p.kv_tile_indices.data();
  uint8_t *const validMask = p.block_valid_mask.data();
  int32_t *const oIndptr = p.o_indptr.data();
  int32_t *const mergeIndptr = p.merge_indptr.data();
  const int64_t *const pagesOf = pages.data();
  const int64_t *const tilesOf = tiles.data();
  const int32_t *const qoIndptr = decode ? nullptr : in.qo_indptr.data();
  oIndptr[0] = 0;
  mergeIndptr[0] = 0;
  int64_t w = 0, oAcc = 0, row = 0;
  for (int64_t i = 0; i < b; ++i) {
    const int64_t qoLen = decode ? 1 : int64_t(qoIndptr[i + 1]) - qoIndptr[i];
    const int64_t numTiles = tilesOf[i];
    const int64_t nChunks =
        numTiles == 0 ? 0
                      : (pagesOf[i] > chunk ? ceilDiv(pagesOf[i], chunk) : 1);
    if (numTiles == 1 && nChunks == 1) { // the common case, without loops
      requestIndices[w] = static_cast<int32_t>(i);
      qoTileIndices[w] = 0;
      kvTileIndices[w] = 0;
      validMask[w] = 1;
      ++w;
    } else {
      for (int64_t t = 0; t < numTiles; ++t)
        for (int64_t k = 0; k < nChunks; ++k, ++w) {
          requestIndices[w] = static_cast<int32_t>(i);
          qoTileIndices[w] = static_cast<int32_t>(t);
          kvTileIndices[w] = static_cast<int32_t>(k);
          validMask[w] = 1;
        }
    }
    const int64_t mergeBase = oAcc;
    oAcc += qoLen * nChunks;
    if (oAcc > kInt32Max)
      return makeError(ErrorCode::Overflow,
                       "the plan has more than 2^31 - 1 partial-state rows");
    oIndptr[i + 1] = static_cast<int32_t>(oAcc);
    // merge_indptr[row + 1] = mergeBase + (j + 1) * nChunks for the request's
    // queries j, as a running int32 sum (<= oAcc, checked above) that
    // vectorizes with additions only.
    if (qoLen == 1) { // decode: no loop (its set-up costs more than this)
      mergeIndptr[++row] = static_cast<int32_t>(oAcc);
      continue;
    }
    const int32_t step = static_cast<int32_t>(nChunks);
    int32_t m = static_cast<int32_t>(mergeBase);
    int32_t *const dst = mergeIndptr + row + 1;
    for (int64_t j = 0; j < qoLen; ++j) {
      m += step;
      dst[j] = m;
    }
    row += qoLen;
  }
  std::fill(mergeIndptr + row + 1, mergeIndptr + p.row_capacity + 1,
            mergeIndptr[row]);

  p.num_partial_rows = split ? oAcc : 0;
  if (!split)
    p.partial_rows_capacity = 0;
  else if (!in.cuda_graph)
    p.partial_rows_capacity = oAcc;
  else if (decode)
    p.partial_rows_capacity = padded;
  else
    p.partial_rows_capacity = padded * ceilDiv(p.qo_tile_size, g);

  // Workspaces.
  WorkspaceLayout &iw = p.int_workspace;
  iw.alignment = 16;
  bool ok = iw.add("request_indices", "i32", padded, 4) &&
            iw.add("kv_tile_indices", "i32", padded, 4) &&
            iw.add("qo_tile_indices", "i32", padded, 4) &&
            iw.add("o_indptr", "i32", b + 1, 4) &&
            iw.add("merge_indptr", "i32", p.row_capacity + 1, 4) &&
            iw.add("block_valid_mask", "u8", padded, 1) &&
            iw.add("kv_chunk_size", "i32", 1, 4) &&
            iw.add("num_rows", "i32", 1, 4);
  WorkspaceLayout &fw = p.float_workspace;
  fw.alignment = 256;
  int64_t vCount = 0, sCount = 0;
  ok = ok && !mulOverflows(p.partial_rows_capacity, in.num_qo_heads, sCount) &&
       !mulOverflows(sCount, in.head_dim, vCount) &&
       fw.add("tmp_v", "f32", vCount, 4) && fw.add("tmp_s", "f32", sCount, 4);
  if (!ok)
    return makeError(ErrorCode::Overflow,
                     "workspace size overflows int64 (%lld partial rows x "
                     "%lld heads x %lld head_dim)",
                     ll(p.partial_rows_capacity), ll(in.num_qo_heads),
                     ll(in.head_dim));

  const int32_t chunkTokens = static_cast<int32_t>(p.kv_chunk_size);
  const int32_t rows = static_cast<int32_t>(p.num_rows);
  // In the order of the sections added above.
  const SectionData data[] = {
      {p.request_indices.data(), 4 * p.request_indices.size()},
      {p.kv_tile_indices.data(), 4 * p.kv_tile_indices.size()},
      {p.qo_tile_indices.data(), 4 * p.qo_tile_indices.size()},
      {p.o_indptr.data(), 4 * p.o_indptr.size()},
      {p.merge_indptr.data(), 4 * p.merge_indptr.size()},
      {p.block_valid_mask.data(), p.block_valid_mask.size()},
      {&chunkTokens, 4},
      {&rows, 4}};
  static_assert(sizeof(data) / sizeof(data[0]) == 8, "one per int section");
  writeImage(p.int_image, iw, data);

  return Status::success();
}

Status makePlan(const PlanInputs &in, Plan &out) {
  CASCADE_RETURN_IF_ERROR(validatePlanInputs(in));
  PlanBuffers &buffers = planBuffers();
  Plan p = std::move(buffers.spare);
  Status s = detail::planValidated(in, p);
  if (s.ok())
    std::swap(out, p);
  // The replaced plan's arrays (or on error this call's) become the next
  // call's spare buffers.
  buffers.spare = std::move(p);
  return s;
}

namespace {

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
        p.page_size != first.page_size || p.o_dtype != first.o_dtype)
      return makeError(ErrorCode::LevelMismatch,
                       "level %zu differs from level 0 in heads, head_dim, "
                       "page_size or output dtype",
                       l);
  }
  c.num_rows = first.num_rows;
  c.int_base.clear();
  c.float_base.clear();
  c.level_v_offset.clear();
  c.level_s_offset.clear();
  int64_t intBytes = 0, floatBytes = 0;
  for (const Plan &p : c.levels) {
    c.int_base.push_back(intBytes);
    c.float_base.push_back(floatBytes);
    intBytes = alignUp(intBytes + p.int_workspace.bytes, 256);
    floatBytes = alignUp(floatBytes + p.float_workspace.bytes, 256);
  }
  int64_t sCount, vCount, vBytes;
  if (mulOverflows(c.num_rows, first.num_qo_heads, sCount) ||
      mulOverflows(sCount, first.head_dim, vCount) ||
      mulOverflows(vCount, dtypeBytes(first.o_dtype), vBytes))
    return makeError(ErrorCode::Overflow,
                     "cascade level states overflow int64");
  c.level_v_bytes = vBytes;
  c.level_s_bytes = sCount * 4;
  for (size_t l = 0; l < n; ++l) {
    if (l == 0) {
      c.level_v_offset.push_back(-1);
      c.level_s_offset.push_back(-1);
      continue;
    }
    c.level_v_offset.push_back(floatBytes);
    floatBytes = alignUp(floatBytes + c.level_v_bytes, 256);
    c.level_s_offset.push_back(floatBytes);
    floatBytes = alignUp(floatBytes + c.level_s_bytes, 256);
  }
  c.int_bytes = intBytes;
  c.float_bytes = floatBytes;
  // Every byte written once (the levels' images, zero gaps): a reused
  // image needs no clearing first.
  c.int_image.resize(static_cast<size_t>(intBytes));
  size_t pos = 0;
  for (size_t l = 0; l < c.levels.size(); ++l) {
    const std::vector<uint8_t> &img = c.levels[l].int_image;
    const size_t base = static_cast<size_t>(c.int_base[l]);
    if (base > pos)
      std::memset(c.int_image.data() + pos, 0, base - pos);
    if (!img.empty())
      std::memcpy(c.int_image.data() + base, img.data(), img.size());
    pos = base + img.size();
  }
  if (c.int_image.size() > pos)
    std::memset(c.int_image.data() + pos, 0, c.int_image.size() - pos);
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

} // namespace cascade::runtime
