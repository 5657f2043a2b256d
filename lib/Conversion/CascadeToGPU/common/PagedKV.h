//===- PagedKV.h - Pages of a KV cache and their gathering ------*- C++ -*-===//
//
// A request's KV in a paged cache (its pages, length and the token range a
// work item reads), where token t of KV head h lives in a page (one pool of
// [page][K|V][...] or a (k_cache, v_cache) pair, NHD or HND), and the two
// cp.async gathers of K/V tiles into shared memory: rows of a plain
// [stage][token][head_dim] buffer (the rows family) and swizzled
// SmemTileLayout tiles in a ring of stages (the tensor-core families).
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_LIB_CONVERSION_CASCADETOGPU_COMMON_PAGEDKV_H
#define CASCADE_LIB_CONVERSION_CASCADETOGPU_COMMON_PAGEDKV_H

#include "KernelSpec.h"

#include "cascade/Conversion/GPUCodegen/MmaSync.h"

namespace mlir {
namespace cascade {

/// The KV of request `req` of a paged cache and the tokens [t0, t1) one work
/// item reads: kv_len = (pages - 1) * pageSize + kv_last_page_len[req] (0
/// without pages); [t0, t1) is the whole KV, or with `chunkSize` (split-KV:
/// the device i32 kv_chunk_size, read there so that a captured CUDA graph
/// stays right after a replan) the item's chunk `chunk` of it.
struct AttentionArgs;

struct RequestKv {
  Value pageStart, kvLen, t0, t1;
};
RequestKv requestKv(KernelBuilder &k, Value kvIndptr, Value lastLen, Value req,
                    int64_t pageSize, Value chunkSize = {}, Value chunk = {});

/// Where the K and V rows of a token live (element offsets).
struct PagedKVLayout {
  int64_t pageSize = 0;
  /// Elements of a page (K and V of a pool page), of a token's row of all
  /// KV heads (NHD) or of one head's (HND), and of a head's slice.
  int64_t pageStride = 0, tokenStride = 0, headStride = 0;
  /// V's offset from K in the same buffer (a pool page); 0 for a pair.
  int64_t vOffset = 0;
  /// The page stride as a kernel argument (ragged K/V's token stride, a
  /// paged cache's kv_stride_page) and ragged K/V's head stride (i64; null:
  /// the static strides above).
  Value pageStrideArg, headStrideArg;

  /// The layout of `spec`'s cache; `args` binds ragged K/V's strides.
  PagedKVLayout(const AttentionSpec &spec, const AttentionArgs &args);

  /// The page holding `token` of a request whose pages start at `pageStart`
  /// of kv_indices (index); without kv_indices (a null value), entry
  /// `pageStart + token / page_size` is the page itself.
  Value page(KernelBuilder &k, Value kvIndices, Value pageStart,
             Value token) const;
  /// The element offset of `page` (i32 or index): page * the page stride
  /// (one mul.wide.s32 where the stride is a kernel argument).
  Value pageBase(KernelBuilder &k, Value page) const;
  /// K offset of (page, token % page_size, head).
  Value tokenOffset(KernelBuilder &k, Value page, Value token,
                    Value head) const;
  /// K offset of `chunkElems`-element chunk `chunk` of (page, slot in page,
  /// head).
  Value chunkOffset(KernelBuilder &k, Value page, Value slot, Value head,
                    Value chunk, int64_t chunkElems = 8) const;
  /// V's offset for K's `kOffset`.
  Value vFromK(KernelBuilder &k, Value kOffset) const {
    return k.add(kOffset, k.idx(vOffset));
  }
  /// V's offset of (page, token % page_size, head), whose K offset is
  /// `kOffset`: vFromK, or where v has a head_dim of its own (a pair whose
  /// v is narrower) from V's strides.
  Value vTokenOffset(KernelBuilder &k, Value page, Value token, Value head,
                     Value kOffset) const;

  /// V's head_dim is not K's: V has strides of its own (static, or ragged
  /// V's kernel arguments).
  bool ownV = false;
  int64_t vPageStride = 0, vTokenStride = 0, vHeadStride = 0;
  Value vPageStrideArg, vHeadStrideArg;
};

/// What a work item gathers: the key range [t0, t1) of one request's pages
/// and KV head, from K and V buffers (one pool: the same value).
struct KVSource {
  Value kCache, vCache, kvIndices, pageStart, kvHead, t0, t1;
};

/// The rows family's gather: tiles of `tile` tokens into K and V buffers
/// [stages][tile][headDim]; thread `tid` (of `numThreads`) copies
/// `chunksPerThread` chunks of a tile. Chunks are 8 elements (`lanes` per
/// token row: 16 bytes of f16/bf16); with `elementBytes` = 1 (an fp8 cache)
/// they are 16 elements (16 bytes, headDim / 16 a row) where the tile's
/// chunks spread evenly over the threads, else 8 (8-byte copies).
class PagedKVRowGather {
public:
  PagedKVRowGather(const PagedKVLayout &layout, const KVSource &src,
                   Value smemK, Value smemV, int64_t tile, int64_t headDim,
                   int64_t lanes, int64_t numThreads, Value tid,
                   int64_t elementBytes = 2);
  /// Page ids (i32: fewer registers where they are looked up a tile ahead)
  /// of the chunks this thread copies of tile `i` (0 past t1).
  SmallVector<Value> lookupPages(OpBuilder &b, Value i) const;
  /// The copies of tile `i` into stage `stage` (zero-fill past t1), as one
  /// cp.async group; returns its token.
  Value issue(OpBuilder &b, Value i, Value stage, ValueRange pages) const;
  /// K rows land swizzled (fp8KStagingOffset; one-byte elements only), V
  /// rows stay plain.
  void swizzleKRows() {
    assert(chunkBytes == chunkElems && "the swizzle is of fp8 rows");
    swizzleK = true;
  }
  /// V rows land swizzled too (fp8VStagingOffset).
  void swizzleVRows() {
    assert(chunkBytes == chunkElems && "the swizzle is of fp8 rows");
    swizzleV = true;
  }

private:
  PagedKVLayout layout;
  KVSource src;
  Value smemK, smemV, tid;
  int64_t tile, headDim, lanes, numThreads, chunksPerThread;
  bool swizzleK = false, swizzleV = false;
  /// Elements of one cp.async chunk and its size in bytes.
  int64_t chunkElems = 8, chunkBytes = 16;
  Location loc;
};

/// The fp8 K staging tile that mma_sync decode reads its scores from
/// (AttentionSpec::fp8DirectK): rows of `headDim` bytes (a power of two,
/// 16 to 128), the 16-byte chunk j of row r stored at chunk j ^ s(r), s(r)
/// = (r / max(1, 8 / R)) % min(R, 8) for R = headDim / 16 chunks a row.
/// The byte offset of (row, byteCol). A warp's fragment loads read byte
/// 16 kb + 4 c of rows r0 + g (g, c = lane / 4, lane % 4; r0 a multiple of
/// 8): every 128-byte line of the rows then holds its 8 rows' chunk kb at
/// 8 different 16-byte positions, so the 32 lanes hit 32 different banks.
/// Since s(r0 + g) = s(g) sits in bits 4-6 of the offset and r0 * headDim
/// is a multiple of 128, offset(r0 + g, 16 kb + x) = (r0 * headDim +
/// offset(g, x)) ^ (16 kb) for x < 16: one xor per chunk after the lane's
/// offset.
Value fp8KStagingOffset(KernelBuilder &k, Value row, Value byteCol,
                        int64_t headDim);

/// The fp8 V staging tile that mma_sync decode reads O += P V from
/// (AttentionSpec::fp8DirectV): rows of `headDim` bytes (32, 64 or 128),
/// the 16-byte chunk j of row r stored at chunk j ^ (r & 6 & (R - 1)) for
/// R = headDim / 16 chunks a row. The byte offset of (row, byteCol). A
/// warp's loads read bytes 32 q + 4 g of rows r0 + 2c (+ 1, 8, 9), g, c =
/// lane / 4, lane % 4, r0 a multiple of 16: at head_dim 128 the lanes of a
/// load hit 32 different banks (chunk 2q + g / 4 lands at 2 (q ^ c) + g /
/// 4), at 64 two lanes share a bank. The swizzle of those rows is the one
/// of row 2c, and offset(row, 32 q + x) = offset(row, x) ^ 32 q.
Value fp8VStagingOffset(KernelBuilder &k, Value row, Value byteCol,
                        int64_t headDim);

/// A ring of tiles in shared memory: stage s starts at element base + s *
/// stageElements.
struct SmemRing {
  int64_t base = 0, stageElements = 0;
  Value stage(KernelBuilder &k, Value s) const {
    return k.add(k.idx(base), k.mul(s, k.idx(stageElements)));
  }
};

/// The tensor-core families' gather: KV tiles of `layout.rows` tokens into
/// K and V rings of `tileLayout` tiles of the dynamic shared memory `smem`,
/// the block's threads sharing each tile's 16-byte chunks (`copy`).
class PagedKVTileGather {
public:
  PagedKVTileGather(KernelBuilder &k, const PagedKVLayout &layout,
                    const KVSource &src, Value smem,
                    const SmemTileLayout &tileLayout, SmemRing kRing,
                    SmemRing vRing, int64_t headDim, int64_t vHeadDim,
                    int64_t numThreads, Value tid);
  /// The page ids (i32, to keep prefetch registers few) of the rows this
  /// thread copies of tile `i`; 0 past t1.
  SmallVector<Value> lookupPages(Value i) const;
  /// The copies of tile `i` into stage `stage` (zero-filled past t1),
  /// committed as one cp.async group.
  void issue(Value i, Value stage, ArrayRef<Value> pages) const;

private:
  KernelBuilder &k;
  PagedKVLayout layout;
  KVSource src;
  Value smem;
  SmemTileLayout tileLayout;
  SmemRing kRing, vRing;
  /// K's and V's head_dim (V's may be narrower: its tile's first columns).
  int64_t headDim, vHeadDim;
  TileCopyPlan copy;
};

} // namespace cascade
} // namespace mlir

#endif // CASCADE_LIB_CONVERSION_CASCADETOGPU_COMMON_PAGEDKV_H
