//===- MmaSyncMainloop.h - The KV loop of attention on mma.sync -*- C++ -*-===//
//
// The mainloop of the mma_sync attention kernels on mma.sync.m16n8k16
// (Ampere and later): per KV tile a warp computes S = Q K^T (ldmatrix +
// mma), hands S to the kernel's score transform, runs the online softmax
// (common/MmaSoftmax.h, shared with wgmma) on the accumulator fragments,
// turns P into A fragments in registers and accumulates O += P V
// (ldmatrix .trans + mma). What feeds the tiles (the KV gather, RoPE on the
// K tile) and what a score becomes (the variant and masks) come in as
// hooks, so the mainloop of another MMA generation (wgmma/) sits beside
// this one behind the same stages.
//
// Warps are laid out [32, warps_q, warps_kv]: warp (y, z) owns rows [y * 16
// * M, (y + 1) * 16 * M) of the query tile (M m16 tiles) and keys [z *
// kv_tile / warps_kv, ...) of every KV tile (common/MmaTiles.h).
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_LIB_CONVERSION_CASCADETOGPU_MMA_SYNC_MMASYNCMAINLOOP_H
#define CASCADE_LIB_CONVERSION_CASCADETOGPU_MMA_SYNC_MMASYNCMAINLOOP_H

#include "KernelSpec.h"
#include "common/MmaSoftmax.h"
#include "common/PagedKV.h"

namespace mlir {
namespace cascade {

/// The geometry of an mma_sync block (MmaTiles) for `spec`.
MmaTiles mmaSyncTiles(const AttentionSpec &spec);
/// This thread's place in an mma_sync block of `tiles`: thread (x, y, z) is
/// lane x of warp (y, z).
MmaThread mmaSyncThread(KernelBuilder &k, const MmaTiles &tiles);

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
  /// `smem` is the kernel's dynamic shared memory (MmaTiles' layout),
  /// `expScale` what raw logits are multiplied by before exp2.
  MmaSyncMainloop(KernelBuilder &k, const MmaTiles &tiles,
                  const MmaThread &thread, Value smem, Type elementType,
                  ExpScale expScale);

  /// Runs tiles [0, numTiles) (first key t0 + i * kv_tile) after the
  /// pipeline's prologue; `qGroup` is the Q tile's cp.async group (the
  /// oldest). Returns the final state after draining the copies.
  MmaState run(Value numTiles, Value t0, Value qGroup,
               const MmaSyncTileHooks &hooks);

  /// S = Q K^T for this warp's rows and keys of stage `stage`; `qFrags`:
  /// the warp's Q fragments [kk * mTiles + mt] when held in registers
  /// (MmaTiles::qInRegisters), else empty (read from the Q tile).
  SmallVector<Value> scores(Value stage, ArrayRef<Value> qFrags = {});

  /// fp8DirectK: the fp8 K staging ring ([stages][kv_tile][head_dim]
  /// bytes, fp8KStagingOffset's swizzle) that scores() reads. Set before
  /// run().
  void setFp8KStaging(Value staging) { fp8KStaging = staging; }
  /// fp8DirectV: the fp8 V staging ring (fp8VStagingOffset's swizzle) that
  /// O += P V reads. Set before run().
  void setFp8VStaging(Value staging) { fp8VStaging = staging; }

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
  SmallVector<Value> carriedState(const MmaState &state);
  int64_t carriedStateSize() const;
  MmaState stateOf(ValueRange carried);
  /// upperRowsEmpty: `frag` (A operand vector<4x2xT>) with the halves of
  /// rows 8..15 (a1, a3) zero.
  Value withoutUpperRows(Value frag);
  /// The loop body of tile i.
  SmallVector<Value> step(MmaBuilder &mma, Value i, ValueRange carried,
                          Value t0, Value qGroup, const MmaSyncTileHooks &hooks,
                          ArrayRef<Value> qFrags);

  KernelBuilder &k;
  const MmaTiles &tiles;
  const MmaThread &thread;
  Value smem;
  Type elementType;
  /// The online softmax of each tile's logits.
  MmaSoftmax online;
  Value fp8KStaging, fp8VStaging;
};

} // namespace cascade
} // namespace mlir

#endif // CASCADE_LIB_CONVERSION_CASCADETOGPU_MMA_SYNC_MMASYNCMAINLOOP_H
