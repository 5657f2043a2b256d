//===- MmaSoftmax.h - The online softmax on MMA fragments -------*- C++ -*-===//
//
// The online softmax of the tensor-core attention kernels, on the f32
// accumulator fragments of S (mma.sync's per-warp layout, which a wgmma
// accumulator shares): in base 2, row max / sum over the quad of lanes of a
// row, with FlashAttention-4's lazy rescaling of O. Both mainloops (mma_sync,
// wgmma) run it on each tile's logits.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_LIB_CONVERSION_CASCADETOGPU_COMMON_MMASOFTMAX_H
#define CASCADE_LIB_CONVERSION_CASCADETOGPU_COMMON_MMASOFTMAX_H

#include "common/MmaTiles.h"

namespace mlir {
namespace cascade {

class MmaSoftmax {
public:
  /// `elementType` is the type P is packed into (q's), `expScale` what raw
  /// logits are multiplied by before exp2.
  MmaSoftmax(KernelBuilder &k, const MmaTiles &tiles, Type elementType,
             ExpScale expScale)
      : k(k), tiles(tiles), elementType(elementType), expScale(expScale) {}

  /// One online-softmax step on the tile's logits `s`: updates m and l and
  /// returns P as A operands [kk * mTiles + mt], each m-tile's rescale
  /// factors and whether any row of the thread needs O rescaled.
  struct Step {
    SmallVector<Value> pA;
    SmallVector<RowPair> alphas;
    Value rescale;
    /// The f32 probabilities, where softmax() was asked not to pack them
    /// (pA is empty then until packP).
    SmallVector<Value> pF32;
  };
  /// With `pack` false, P stays in f32 (Step::pF32) for the caller to
  /// pack later (packP).
  Step softmax(MmaBuilder &mma, ArrayRef<Value> s, MmaState &state,
               bool pack = true);
  /// Packs `p.pF32` into the A operands `p.pA`.
  void packP(MmaBuilder &mma, Step &p);
  /// The A operands of m-tile `mt`'s rows of the f32 probabilities `pF32`
  /// into `pA` (sized for all m-tiles).
  void packRows(MmaBuilder &mma, ArrayRef<Value> pF32, int64_t mt,
                SmallVectorImpl<Value> &pA);
  /// softmax() of the logits that `logits` builds, unless `hidden` (an i1,
  /// uniform over the warp; null: never) says that the tile's keys are all
  /// hidden from the warp's rows: then no logit is built, m and l stay, P
  /// is zero and nothing is rescaled, which is what softmax() would give.
  Step softmaxUnlessHidden(MmaBuilder &mma, Value hidden,
                           function_ref<SmallVector<Value>()> logits,
                           MmaState &state);
  /// O *= alpha where some row of the warp has a new maximum.
  void rescale(MmaBuilder &mma, const Step &p, SmallVector<Value> &o);

private:
  KernelBuilder &k;
  const MmaTiles &tiles;
  Type elementType;
  ExpScale expScale;
};

} // namespace cascade
} // namespace mlir

#endif // CASCADE_LIB_CONVERSION_CASCADETOGPU_COMMON_MMASOFTMAX_H
