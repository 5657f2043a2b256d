//===- WgmmaKVGather.h - The wgmma producer's paged K/V gather --*- C++ -*-===//
//
// How the producer warpgroup of a wgmma kernel copies a K/V tile of the
// paged cache into a stage of the panel ring (or, over an fp8 cache, of the
// staging ring, then converts its own chunks into the panels).
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_LIB_CONVERSION_CASCADETOGPU_WGMMA_WGMMAKVGATHER_H
#define CASCADE_LIB_CONVERSION_CASCADETOGPU_WGMMA_WGMMAKVGATHER_H

#include "common/MmaTiles.h"
#include "common/PagedKV.h"

namespace mlir {
namespace cascade {

/// Which tiles of a KV tile a producer's gather copies.
enum class WgmmaKVPart { KV, K, V };

/// The producer's paged gather of a K/V tile into a ring stage: thread t
/// of the producer warpgroup copies 16-byte chunk t % (D / 8) of rows t /
/// (D / 8) + p * 128 / (D / 8), in a loop over the passes p (a few passes
/// unrolled per iteration, so that the producer stays within its small
/// register budget while several page lookups are in flight). Rows past
/// the key range are zero-filled; one cp.async group per call (K and V of
/// the tile, or one of them).
///
/// Over an fp8 cache (`stagingK`, `stagingV`: fp8 rings [stages][kv_tile]
/// [D], row-major) a 16-byte chunk holds 16 elements: thread t copies
/// chunk t % (D / 16) of rows t / (D / 16) + p * 128 / (D / 16) into the
/// staging stage, and convertStaged turns exactly the chunks this thread
/// copied into q's dtype in the panel stage, so that after its own
/// cp.async wait no other producer thread has to be waited for.
class WgmmaKVGather {
public:
  WgmmaKVGather(KernelBuilder &k, const PagedKVLayout &layout,
                const KVSource &src, Value smem, const MmaTiles &tiles,
                Value tid, Value stagingK = {}, Value stagingV = {},
                Value smem8 = {});
  void issue(Value i, Value stage, WgmmaKVPart part) const;
  /// page_lookahead: the id of page `lane` of tile `i`'s page list (i32,
  /// one value: lane l of each producer warp holds page l, from the page of
  /// the tile's first key, clamped to the last key's), loaded before the
  /// producer waits for the tile's stage so that its latency hides in the
  /// wait. Needs a page table and 16-bit K and V of one head_dim
  /// (supportsLookahead), and at most 31 pages a tile.
  SmallVector<Value> lookupPages(Value i) const;
  /// issue() of the K/V tile `i` with lookupPages(i)'s value: every pass
  /// unrolled, its page shuffled from the lane that holds it, the key
  /// arithmetic in 32 bits.
  void issueLooked(Value i, Value stage, ValueRange pages) const;
  /// Whether lookupPages/issueLooked serve this kernel's gather.
  bool supportsLookahead() const {
    return src.kvIndices && !fp8Bytes() && !layout.ownV &&
           !layout.headStrideArg;
  }
  /// fp8: converts this thread's chunks of staging stage `stage` into the
  /// K and V panel tiles of the ring's stage `stage` (type `to`).
  void convertStaged(Value stage, Type to) const;
  /// fp8 operands (MmaTiles::fp8Operands): transposes V's staging slot
  /// `stage` (all of it: call after every producer thread's copies of the
  /// tile landed and a producer barrier) into the V ring's stage `stage`,
  /// [head_dim][kv_tile] with the keys permuted as P's (vtLayout).
  void transposeV(Value stage) const;

private:
  /// issue() where V is narrower than K (MmaTiles::dvp < dp) or a row's
  /// chunks do not divide the producer's threads (wgmmaOwnWidths; a 16-bit
  /// cache): K's rows and V's rows in loops of their own widths, one
  /// cp.async group. Producer thread t copies chunk t % 8 of panel rp %
  /// P of row rp / P, rp = 16 p + t / 8 in pass p (P panels a row), so that
  /// rows of any whole number of panels (head_dim 192: 24 chunks, which
  /// do not divide the 128 threads) tile the passes.
  void issueOwnWidths(Value i, Value stage, WgmmaKVPart part) const;
  bool fp8() const { return static_cast<bool>(stagingK); }
  /// The copies move fp8 bytes (an fp8 cache, converted or not).
  bool fp8Bytes() const { return fp8() || tiles.fp8Operands; }
  /// Byte offset of chunk `chunk` of row `row` in V's staging slot `stage`.
  Value vStagingOffset(Value stage, Value row, Value chunk) const;
  /// 16-byte chunks of a row, rows a pass, passes a tile and passes per
  /// loop iteration.
  int64_t chunksPerRow() const;
  int64_t rowsPerPass() const;
  int64_t passes() const;
  int64_t unroll() const;

  KernelBuilder &k;
  PagedKVLayout layout;
  KVSource src;
  Value smem, tid, stagingK, stagingV, smem8;
  const MmaTiles &tiles;
};

} // namespace cascade
} // namespace mlir

#endif // CASCADE_LIB_CONVERSION_CASCADETOGPU_WGMMA_WGMMAKVGATHER_H
