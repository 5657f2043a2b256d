//===- MmaTiles.h - Tiles and threads of tensor-core attention --*- C++ -*-===//
//
// What the tensor-core families (mma_sync, wgmma) share about a block: its
// tile geometry and shared-memory layout as the warps see it, a thread's
// place in it, the packed query rows of its accumulators, the online
// softmax's state and its exp2 scale. A wgmma accumulator is mma.sync's per
// warp, so the stages around the mainloops (work items, the score
// transform, the custom mask, the softmax, the epilogue) are one code for
// both.
//
// Warps are laid out [32, warps_q, warps_kv]: warp (y, z) owns rows [y * 16
// * M, (y + 1) * 16 * M) of the query tile (M m16 tiles) and keys [z *
// kv_tile / warps_kv, ...) of every KV tile.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_LIB_CONVERSION_CASCADETOGPU_COMMON_MMATILES_H
#define CASCADE_LIB_CONVERSION_CASCADETOGPU_COMMON_MMATILES_H

#include "common/PagedKV.h"

#include "cascade/Conversion/GPUCodegen/MmaSync.h"

namespace mlir {
namespace cascade {

/// The tile geometry of a tensor-core attention kernel (its kernel_config)
/// as its warps see it, and its dynamic shared memory: the Q tile, then the
/// K ring, then the V ring. Each family makes it from a spec
/// (mmaSyncTiles, wgmmaTiles).
///
/// mma_sync: the K and V rings are `stages` deep; over an fp8 cache the
/// copies land in staging rings `stages` deep after them (MmaSyncKernel)
/// and each tile is converted into the ring tile of its stage, in decode
/// into one K and one V tile (`kvRingStages` 1), just before its scores.
///
/// wgmma: the geometry seen from the consumer warps: each holds 16 rows
/// (mTiles 1) and every key of a tile (warpsKV 1), numThreads counts the
/// consumer threads, and the tiles are in the panel form that wgmma
/// descriptors read; the fp8 decode fields below keep their defaults.
struct MmaTiles {
  int64_t d, dp, warpsQ, warpsKV, mTiles, qTile, kvTile, stages, kvPerWarp,
      sTiles, oTiles, numThreads;
  /// Tiles of the K ring and of the V ring: `stages`, or 1 in fp8 decode
  /// (the converted tile of the stage being computed).
  int64_t kvRingStages;
  /// Tiles of the K ring: kvRingStages, or 0 with fp8DirectK.
  int64_t kRingStages;
  /// Tiles of the V ring: kvRingStages, or 0 with fp8DirectV.
  int64_t vRingStages;
  /// The warps' Q fragments are loaded once, before the KV loop, instead of
  /// from the Q tile at every KV tile: fp8 decode with one m16 tile of rows
  /// (q_tile 16) at head_dim <= 128, where the Q tile's ldmatrix would be
  /// a third of the loop's ldmatrix.
  bool qInRegisters = false;
  /// fp8 decode (AttentionSpec::fp8DirectK, implies qInRegisters): the B
  /// fragments of S = Q K^T come from the fp8 K staging ring (one 32-bit
  /// load and two cvt per fragment pair, fp8KStagingOffset's swizzle) and
  /// the Q fragments from a head_dim permutation (loadPermutedQFragments);
  /// there is no f16/bf16 K tile.
  bool fp8DirectK = false;
  /// fp8 decode (AttentionSpec::fp8DirectV, implies fp8DirectK): the B
  /// fragments of O += P V come from the fp8 V staging ring too (32-bit
  /// loads of 4 dims of 4 keys, byte permutes and cvt;
  /// fp8VStagingOffset's swizzle), with O's columns permuted
  /// (permutedOColumn); there is no f16/bf16 V tile, and the Q tile sits in
  /// the last V staging stage (mmaSyncFp8DirectQTileOffset).
  bool fp8DirectV = false;
  /// Rows 8..15 of the warp's m16 tile hold no query (decode, one request
  /// a block, a GQA group of at most 8 heads): their Q and P fragment
  /// halves are zero constants, their softmax is not computed, and the KV
  /// loop carries only rows 0..7 of O (half the accumulator registers).
  bool upperRowsEmpty = false;
  /// wgmma with fp8 queries (wgmmaFp8Operands): the Q, K and V tiles hold
  /// fp8 bytes, laid out as 16-bit tiles of half the columns (qLayout and
  /// kvLayout count 16-bit units: a row of head_dim bytes is head_dim / 2
  /// of them), and the V ring holds V transposed, [head_dim][kv_tile] in
  /// vtLayout (the same units), with the keys of each 32 permuted as
  /// wgmmaFp8ARegisters permutes P's. V lands in a staging ring after the
  /// tiles first (stagingV).
  bool fp8Operands = false;
  /// The online softmax evaluates exp2 with a polynomial (KernelBuilder::
  /// ex2Poly) instead of MUFU.EX2 for the S fragment columns n with n mod 8
  /// below this (the kernel configuration's exp2_emulation; 0: none).
  int64_t exp2Emulation = 0;
  SmemTileLayout qLayout, kvLayout, vtLayout;
  /// The V ring's tiles: kvLayout, or on wgmma with a narrower v (head_dim_vo)
  /// panels of v's width, dvp columns.
  SmemTileLayout vLayout;
  /// v's head_dim padded to 16: O's columns on wgmma (dp unless v is
  /// narrower; mma_sync keeps dp-wide V tiles and counts O in oTiles).
  int64_t dvp = 0;

  int64_t sharedElements() const {
    return qLayout.numElements() + kRingStages * kvLayout.numElements() +
           vRingStages * vLayout.numElements();
  }
  SmemRing kRing() const {
    assert(kRingStages > 0 && "no K ring: scores read the fp8 staging ring");
    return {qLayout.numElements(), kvLayout.numElements()};
  }
  SmemRing vRing() const {
    assert(vRingStages > 0 && "no V ring: P V reads the fp8 staging ring");
    return {qLayout.numElements() + kRingStages * kvLayout.numElements(),
            vLayout.numElements()};
  }
  /// The head_dim column that accumulator column `col` (8 n + 2 c + e of
  /// O's n8 tile n, lane quad c, element e) holds: `col` itself, or with
  /// fp8DirectV 32 (n / 4) + 8 c + 4 e + n % 4, so that a lane holds 8
  /// consecutive columns from 32 (n / 4) + 8 c (MmaSyncMainloop.cpp).
  int64_t permutedOColumnBase(int64_t n, int64_t e) const {
    return fp8DirectV ? 32 * (n / 4) + 4 * e + n % 4 : 8 * n + e;
  }
  /// The lane-quad part of that column: 2 c, or 8 c with fp8DirectV.
  int64_t oColumnsPerQuadLane() const { return fp8DirectV ? 8 : 2; }
  /// The K / V ring tile that pipeline stage `stage` is computed from.
  Value ringStage(KernelBuilder &k, Value stage) const {
    return kvRingStages == stages ? stage : k.idx(0);
  }
};

/// This thread's place in the block: lane, warp (y along the query rows, z
/// along the keys), linear id, the block's KV head (block y) and the first
/// tile row of its warp. Each family computes it (mmaSyncThread,
/// wgmmaThread).
struct MmaThread {
  Value lane, warpQ, warpKV, tid, kvHead, warpRow0;

  /// Tile-local row of pair `pair` of m-tile `mt` held by this thread.
  Value localRow(KernelBuilder &k, int64_t mt, int64_t pair) const {
    return k.add(warpRow0, k.idx(mt * 16 + 8 * pair));
  }
};

/// Accumulator row r (m-tile r / 2, pair r % 2) of this thread as a query
/// row: packed tile row p is query p / G of query head kv_head * G + p % G
/// (the GQA group packed into the rows), valid below the request's query
/// count, at position kv_len - qo_len + query.
struct PackedRow {
  Value query, head, valid, pos;
};

/// What the online softmax multiplies raw logits by before exp2: a
/// compile-time constant (ScoreVariant::expScale), or, where a runtime
/// factor folds into it, that product computed once by the kernel (an fp8
/// cache's k_scale, which then costs no multiply per logit; the factor must
/// be positive, for the running max of the raw logits to be the max of the
/// scaled ones).
struct ExpScale {
  ExpScale(double constant) : constant(constant) {}
  double constant;
  /// f32 constant * factor; null where there is no factor.
  Value folded;
  /// Whether logits go to exp2 as they are (no multiply at all).
  bool isOne() const { return !folded && constant == 1.0; }
  Value get(KernelBuilder &k) const {
    return folded ? folded : k.f32(constant);
  }
};

/// The online-softmax state of a warp's rows: O accumulators [mt * oTiles +
/// n], the running max m and this thread's part of the row sums l [mt * 2 +
/// pair].
struct MmaState {
  SmallVector<Value> o, m, l;
};

} // namespace cascade
} // namespace mlir

#endif // CASCADE_LIB_CONVERSION_CASCADETOGPU_COMMON_MMATILES_H
