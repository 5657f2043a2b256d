//===- PlanSchedule.cpp - Work items of one attention level ---------------===//
//
// The schedule of a plan: decode follows FlashInfer's DecodePlan (binary
// search for the smallest KV chunk that fits the grid); prefill follows its
// PrefillPlan (query tiles from the average packed query length, the same
// chunk search over tiles). Then the work items (request, query tile, KV
// chunk), o_indptr and merge_indptr, padded to a graph-stable size in
// CUDA-graph mode. The workspaces are laid out by PlanWorkspace.cpp.
//
//===----------------------------------------------------------------------===//

#include "cascade/Runtime/Plan.h"

#include "PlanInternal.h"

#include <algorithm>

namespace cascade::runtime {

using detail::ceilDiv;
using detail::kInt32Max;
using detail::kMaxPlanEntries;
using detail::ll;
using detail::PlanBuffers;
using detail::planBuffers;

namespace {

/// The most blocks an SM a decode plan's grid aims at (planValidated). On
/// an H100 (32/8 heads, D128, page 16), B1-B32 x 1K-4K decodes ran fastest
/// at 128-256 blocks, one or two an SM; the kernel's occupancy (8 and more
/// for the rows family) split them into 4-8x as many chunks, up to 1.2x
/// slower (issue 43; benchmarks/RESULTS.md).
constexpr int64_t kDecodeBlocksPerSm = 2;

/// The shortest KV chunk (tokens) of a split. Decode's split merge serves a
/// state's chunks with several thread groups, so short chunks pay: on an
/// H100 (32/8 heads, D128, page 16) chunks of 32 tokens ran B1 x 256 in
/// 8.2 us against 9.5 with 128-token chunks, and B1 x 1K in 9.6 against
/// 10.3 (issue 43). Prefill keeps 128: a chunk shorter than one KV tile of
/// its kernels only adds merge work.
constexpr int64_t kDecodeMinChunk = 32;
constexpr int64_t kPrefillMinChunk = 128;

/// Outside CUDA-graph mode a decode batch whose requests all hold at most
/// this many tokens is not split: the split's merge launch would cost more
/// than the short requests' reads.
constexpr int64_t kDecodeSplitMinTokens = 128;

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

/// Per request: its pages and query tiles (decode: one). Sets
/// p.qo_tile_size; returns the most pages of any request.
int64_t requestTiles(const PlanInputs &in, Plan &p, std::vector<int64_t> &pages,
                     std::vector<int64_t> &tiles) {
  const int64_t b = p.batch_size;
  const int64_t g = p.gqa_group_size;
  pages.resize(static_cast<size_t>(b));
  tiles.resize(static_cast<size_t>(b));
  int64_t maxPages = 0;
  for (int64_t i = 0; i < b; ++i) {
    pages[i] = int64_t(in.kv_indptr[i + 1]) - in.kv_indptr[i];
    maxPages = std::max(maxPages, pages[i]);
  }
  if (p.mode == PlanMode::Decode) {
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
  return maxPages;
}

/// The split-KV decision and the chunk size in pages: the smallest chunk
/// whose work items fit the grid (decode splits only when the batch alone
/// does not fill it). A fixed chunk (fixed_split_pages) replaces the search
/// and splits when some request is longer or in CUDA-graph mode;
/// disable_split_kv never splits. Sets split_kv, kv_chunk_size_pages and
/// kv_chunk_size.
void chooseChunk(const PlanInputs &in, Plan &p,
                 const std::vector<int64_t> &pages,
                 const std::vector<int64_t> &tiles, int64_t maxPages) {
  const int64_t b = p.batch_size;
  const int64_t hkv = p.num_kv_heads;
  const bool decode = p.mode == PlanMode::Decode;
  const int64_t maxItemsIfSplit = p.grid_limit / hkv;
  const int64_t minChunk = std::max<int64_t>(
      (decode ? kDecodeMinChunk : kPrefillMinChunk) / in.page_size, 1);
  int64_t chunk = std::max<int64_t>(maxPages, 1);
  bool split = false;
  if (in.disable_split_kv) {
    // One chunk per request.
  } else if (in.fixed_split_pages > 0) {
    split = in.cuda_graph || maxPages > in.fixed_split_pages;
    if (split)
      chunk = in.fixed_split_pages;
  } else if (decode) {
    if (b * hkv < p.grid_limit) {
      int64_t c =
          searchChunkPages(tiles, pages, maxItemsIfSplit, minChunk, maxPages);
      int64_t items = countItems(tiles, pages, c);
      bool longEnough = maxPages * in.page_size > kDecodeSplitMinTokens;
      split = in.cuda_graph || (items != b && longEnough);
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
}

/// The number of work items and, in CUDA-graph mode, the padded grid that
/// every replan of the same batch size fits. Sets num_work_items and
/// padded_batch_size.
Status countWorkItems(const PlanInputs &in, Plan &p,
                      const std::vector<int64_t> &pages,
                      const std::vector<int64_t> &tiles) {
  const int64_t b = p.batch_size;
  const int64_t g = p.gqa_group_size;
  const bool decode = p.mode == PlanMode::Decode;
  const bool split = p.split_kv;
  const int64_t chunk = p.kv_chunk_size_pages;
  const int64_t maxItemsIfSplit = p.grid_limit / p.num_kv_heads;
  const int64_t items = countItems(tiles, pages, chunk);
  if (items > kMaxPlanEntries)
    return makeError(ErrorCode::Overflow,
                     "the plan has %lld work items, more than its bound of "
                     "2^%d",
                     ll(items), detail::kMaxPlanEntriesLog2);
  int64_t padded = items;
  if (in.cuda_graph) {
    if (decode) {
      padded = split ? maxItemsIfSplit : b;
    } else {
      const int64_t t = p.qo_tile_size;
      int64_t tileBound = (p.row_capacity * g + b * (t - 1)) / t;
      padded = in.disable_split_kv ? tileBound
                                   : std::max(maxItemsIfSplit, tileBound);
    }
    // The grid must not depend on the lengths; a fixed chunk does not adapt
    // to it, so a batch whose chunks exceed it cannot be planned.
    if (in.fixed_split_pages > 0 && items > padded)
      return makeError(ErrorCode::InvalidArgument,
                       "fixed_split_pages (fixed_split_size) = %lld gives "
                       "%lld work items, more than the %lld of the "
                       "CUDA-graph grid; use a larger chunk",
                       ll(in.fixed_split_pages), ll(items), ll(padded));
  }
  if (padded > kMaxPlanEntries)
    return makeError(ErrorCode::Overflow,
                     "padded_batch_size %lld exceeds the plan's bound of 2^%d",
                     ll(padded), detail::kMaxPlanEntriesLog2);
  p.num_work_items = items;
  p.padded_batch_size = padded;
  return Status::success();
}

/// The work items (request, query tile, KV chunk; padding items invalid),
/// o_indptr, merge_indptr and the partial-state rows.
Status writeWorkItems(const PlanInputs &in, Plan &p,
                      const std::vector<int64_t> &pages,
                      const std::vector<int64_t> &tiles) {
  const int64_t b = p.batch_size;
  const int64_t g = p.gqa_group_size;
  const bool decode = p.mode == PlanMode::Decode;
  const bool split = p.split_kv;
  const int64_t chunk = p.kv_chunk_size_pages;
  const int64_t padded = p.padded_batch_size;
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
  return Status::success();
}

} // namespace

PlanBuffers &detail::planBuffers() {
  static thread_local PlanBuffers buffers;
  return buffers;
}

int64_t chooseQoTileSize(int64_t avgPackedQoLen, int64_t headDim) {
  if (avgPackedQoLen > 64 && headDim < 256)
    return 128;
  if (avgPackedQoLen > 16)
    return 64;
  return 16;
}

Status detail::planValidated(const PlanInputs &in, Plan &p) {
  recycle(p);
  const int64_t b = in.kv_indptr.size() - 1;
  const bool decode = in.mode == PlanMode::Decode;
  p.mode = in.mode;
  p.batch_size = b;
  p.num_qo_heads = in.num_qo_heads;
  p.num_kv_heads = in.num_kv_heads;
  p.head_dim = in.head_dim;
  p.head_dim_vo = in.head_dim_vo == in.head_dim ? 0 : in.head_dim_vo;
  p.page_size = in.page_size;
  p.o_dtype = in.o_dtype;
  p.gqa_group_size = in.num_qo_heads / in.num_kv_heads;
  p.cuda_graph = in.cuda_graph;
  // A decode grid aims at kDecodeBlocksPerSm blocks an SM at most, however
  // many the kernel could hold: a decode block streams its KV chunk, and
  // more blocks than that only add partial states to merge.
  p.grid_limit =
      in.num_sms * (decode ? std::min<int64_t>(in.occupancy, kDecodeBlocksPerSm)
                           : in.occupancy);

  p.num_rows = decode ? b : in.qo_indptr[b];
  p.row_capacity = p.num_rows;
  if (!decode && in.cuda_graph && in.max_num_rows >= 0)
    p.row_capacity = in.max_num_rows;

  std::vector<int64_t> &pages = planBuffers().pages;
  std::vector<int64_t> &tiles = planBuffers().tiles;
  const int64_t maxPages = requestTiles(in, p, pages, tiles);
  chooseChunk(in, p, pages, tiles, maxPages);
  CASCADE_RETURN_IF_ERROR(countWorkItems(in, p, pages, tiles));
  CASCADE_RETURN_IF_ERROR(writeWorkItems(in, p, pages, tiles));
  p.work_kind = decode
                    ? (p.split_kv ? WorkKind::DecodeSplit : WorkKind::Decode)
                    : (p.split_kv ? WorkKind::PrefillSplit : WorkKind::Prefill);
  return detail::layoutWorkspaces(p);
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

} // namespace cascade::runtime
