//===- MmaSyncMainloop.h - The KV loop of attention on mma.sync -*- C++ -*-===//
//
// The mainloop of the tensor-core attention kernels on mma.sync.m16n8k16
// (Ampere and later): per KV tile a warp computes S = Q K^T (ldmatrix +
// mma), hands S to the kernel's score transform, runs the online softmax in
// base 2 on the accumulator fragments (row max / sum over the quad of lanes
// of a row, FlashAttention-4's lazy rescaling), turns P into A fragments in
// registers and accumulates O += P V (ldmatrix .trans + mma). What feeds the
// tiles (the KV gather, RoPE on the K tile) and what a score becomes (the
// variant and masks) come in as hooks, so a mainloop for another MMA
// generation (wgmma) can sit beside this one behind the same hooks.
//
// Warps are laid out [32, warps_q, warps_kv]: warp (y, z) owns rows [y * 16
// * M, (y + 1) * 16 * M) of the query tile (M m16 tiles) and keys [z *
// kv_tile / warps_kv, ...) of every KV tile.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_LIB_CONVERSION_CASCADETOGPU_MMA_SYNC_MMASYNCMAINLOOP_H
#define CASCADE_LIB_CONVERSION_CASCADETOGPU_MMA_SYNC_MMASYNCMAINLOOP_H

#include "KernelSpec.h"
#include "common/PagedKV.h"

#include "cascade/Conversion/GPUCodegen/MmaSync.h"

namespace mlir {
namespace cascade {

/// The tile geometry of an mma_sync attention kernel (its kernel_config) and
/// its dynamic shared memory: the Q tile, then the K ring, then the V ring.
/// The K and V rings are `stages` deep; over an fp8 cache the copies land
/// in staging rings `stages` deep after them (MmaAttentionKernel) and each
/// tile is converted into the ring tile of its stage, in decode into one K
/// and one V tile (`kvRingStages` 1), just before its scores.
///
/// A wgmma kernel (WgmmaMainloop.h) is described by the same geometry seen
/// from its consumer warps (`wgmma`): each holds 16 rows (mTiles 1) and
/// every key of a tile (warpsKV 1), numThreads counts the consumer threads,
/// and the tiles are in the panel form that wgmma descriptors read.
struct MmaSyncTiles {
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
  SmemTileLayout qLayout, kvLayout;
  bool wgmma = false;

  explicit MmaSyncTiles(const AttentionSpec &spec);
  int64_t sharedElements() const {
    return qLayout.numElements() +
           (kRingStages + vRingStages) * kvLayout.numElements();
  }
  SmemRing kRing() const {
    assert(kRingStages > 0 && "no K ring: scores read the fp8 staging ring");
    return {qLayout.numElements(), kvLayout.numElements()};
  }
  SmemRing vRing() const {
    assert(vRingStages > 0 && "no V ring: P V reads the fp8 staging ring");
    return {qLayout.numElements() + kRingStages * kvLayout.numElements(),
            kvLayout.numElements()};
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
/// tile row of its warp.
struct MmaSyncThread {
  Value lane, warpQ, warpKV, tid, kvHead, warpRow0;

  static MmaSyncThread get(KernelBuilder &k, const MmaSyncTiles &tiles);
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
struct MmaSyncState {
  SmallVector<Value> o, m, l;
};

/// What the mainloop asks of the kernel around it.
struct MmaSyncTileHooks {
  /// Called once before the loop: the values (page ids looked up a tile
  /// ahead) the loop carries for `produce`; may be empty.
  function_ref<SmallVector<Value>()> carriedInit;
  /// At the start of iteration i (tile i landed, the stage of tile i - 1
  /// free): issues the loads of a later tile and returns the next carried
  /// values.
  function_ref<SmallVector<Value>(Value i, ArrayRef<Value> carried)> produce;
  /// Before the scores of tile i (stage `stage`, first key `tileStart`):
  /// work on the tile in shared memory (RoPE on K); may be null.
  function_ref<void(Value stage, Value tileStart)> prepare;
  /// The raw scores S of the tile ([mt * sTiles + n] accumulators) as
  /// log2-unit logits with masked keys at -inf.
  function_ref<SmallVector<Value>(ArrayRef<Value> s, Value tileStart)>
      transform;
  /// Whether every key of the warp's share of the tile from `tileStart` is
  /// hidden from every row of the warp (an i1, uniform over the warp: a
  /// custom mask's vote); the warp then skips the tile's scores, softmax
  /// and P V. May be null (no tile is skipped).
  function_ref<Value(Value tileStart)> hidden;
  /// After the softmax of tile i, before O += P V: what the V tile needs
  /// (a barrier after `prepare` wrote it while the scores read only the
  /// K staging ring, fp8DirectK); may be null.
  function_ref<void()> beforePV;
};

class MmaSyncMainloop {
public:
  /// `smem` is the kernel's dynamic shared memory (MmaSyncTiles' layout),
  /// `expScale` what raw logits are multiplied by before exp2.
  MmaSyncMainloop(KernelBuilder &k, const MmaSyncTiles &tiles,
                  const MmaSyncThread &thread, Value smem, Type elementType,
                  ExpScale expScale);

  /// Runs tiles [0, numTiles) (first key t0 + i * kv_tile) after the
  /// pipeline's prologue; `qGroup` is the Q tile's cp.async group (the
  /// oldest). Returns the final state after draining the copies.
  MmaSyncState run(Value numTiles, Value t0, Value qGroup,
                   const MmaSyncTileHooks &hooks);

  /// S = Q K^T for this warp's rows and keys of stage `stage`; `qFrags`:
  /// the warp's Q fragments [kk * mTiles + mt] when held in registers
  /// (MmaSyncTiles::qInRegisters), else empty (read from the Q tile).
  SmallVector<Value> scores(Value stage, ArrayRef<Value> qFrags = {});

  /// fp8DirectK: the fp8 K staging ring ([stages][kv_tile][head_dim]
  /// bytes, fp8KStagingOffset's swizzle) that scores() reads. Set before
  /// run().
  void setFp8KStaging(Value staging) { fp8KStaging = staging; }
  /// fp8DirectV: the fp8 V staging ring (fp8VStagingOffset's swizzle) that
  /// O += P V reads. Set before run().
  void setFp8VStaging(Value staging) { fp8VStaging = staging; }

  // The online softmax, also run by the wgmma mainloop on its accumulator
  // fragments (the same per-warp layout).

  /// One online-softmax step on the tile's logits `s`: updates m and l and
  /// returns P as A operands [kk * mTiles + mt], each m-tile's rescale
  /// factors and whether any row of the thread needs O rescaled.
  struct Softmax {
    SmallVector<Value> pA;
    SmallVector<RowPair> alphas;
    Value rescale;
    /// The f32 probabilities, where softmax() was asked not to pack them
    /// (pA is empty then until packP).
    SmallVector<Value> pF32;
  };
  /// With `pack` false, P stays in f32 (Softmax::pF32) for the caller to
  /// pack later (packP).
  Softmax softmax(MmaBuilder &mma, ArrayRef<Value> s, MmaSyncState &state,
                  bool pack = true);
  /// Packs `p.pF32` into the A operands `p.pA`.
  void packP(MmaBuilder &mma, Softmax &p);
  /// The A operands of m-tile `mt`'s rows of the f32 probabilities `pF32`
  /// into `pA` (sized for all m-tiles).
  void packRows(MmaBuilder &mma, ArrayRef<Value> pF32, int64_t mt,
                SmallVectorImpl<Value> &pA);
  /// softmax() of the logits that `logits` builds, unless `hidden` (an i1,
  /// uniform over the warp; null: never) says that the tile's keys are all
  /// hidden from the warp's rows: then no logit is built, m and l stay, P
  /// is zero and nothing is rescaled, which is what softmax() would give.
  Softmax softmaxUnlessHidden(MmaBuilder &mma, Value hidden,
                              function_ref<SmallVector<Value>()> logits,
                              MmaSyncState &state);
  /// O *= alpha where some row of the warp has a new maximum.
  void rescale(MmaBuilder &mma, const Softmax &p, SmallVector<Value> &o);

private:
  /// O += P V on stage `stage`.
  void accumulatePV(MmaBuilder &mma, ArrayRef<Value> pA, Value stage,
                    SmallVector<Value> &o);
  /// The warp's Q fragments [kk * mTiles + mt] from the Q tile.
  SmallVector<Value> loadQFragments(MmaBuilder &mma);
  /// fp8DirectK: the same with head_dim permuted inside each 16-column
  /// block (see the definition), by 8-byte shared loads.
  SmallVector<Value> loadPermutedQFragments(MmaBuilder &mma);
  /// fp8DirectV: O += P V from the fp8 V staging tile of `stage`.
  void accumulatePVFromFp8V(MmaBuilder &mma, ArrayRef<Value> pA, Value stage,
                            SmallVector<Value> &o);
  /// fp8DirectK: S = Q K^T from the fp8 K staging tile of `stage`.
  SmallVector<Value> scoresFromFp8K(MmaBuilder &mma, Value stage,
                                    ArrayRef<Value> qFrags);
  /// What the KV loop carries of `state` (upperRowsEmpty: rows 0..7 only)
  /// and the state back from it (the empty rows O = 0, m = -inf, l = 0).
  SmallVector<Value> carriedState(const MmaSyncState &state);
  int64_t carriedStateSize() const;
  MmaSyncState stateOf(ValueRange carried);
  /// upperRowsEmpty: `frag` (A operand vector<4x2xT>) with the halves of
  /// rows 8..15 (a1, a3) zero.
  Value withoutUpperRows(Value frag);
  /// The loop body of tile i.
  SmallVector<Value> step(MmaBuilder &mma, Value i, ValueRange carried,
                          Value t0, Value qGroup, const MmaSyncTileHooks &hooks,
                          ArrayRef<Value> qFrags);

  KernelBuilder &k;
  const MmaSyncTiles &tiles;
  const MmaSyncThread &thread;
  Value smem;
  Type elementType;
  ExpScale expScale;
  Value fp8KStaging, fp8VStaging;
};

} // namespace cascade
} // namespace mlir

#endif // CASCADE_LIB_CONVERSION_CASCADETOGPU_MMA_SYNC_MMASYNCMAINLOOP_H
