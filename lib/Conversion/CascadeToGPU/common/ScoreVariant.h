//===- ScoreVariant.h - What attention does to a score ----------*- C++ -*-===//
//
// Every option that transforms or masks a score q.k, and RoPE, written once
// for both attention families (FlashInfer's "variant"): the scale
// (sm_scale, folded into the exponent when nothing else touches the score),
// ALiBi slopes, the logits soft cap, the causal and sliding-window masks
// (as key ranges a block never loads and as per-key masks), FlashInfer's
// bit-packed custom masks, and rotate-half RoPE with its inverse-frequency
// table.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_LIB_CONVERSION_CASCADETOGPU_COMMON_SCOREVARIANT_H
#define CASCADE_LIB_CONVERSION_CASCADETOGPU_COMMON_SCOREVARIANT_H

#include "KernelSpec.h"

#include "cascade/Conversion/GPUCodegen/MmaSync.h"

namespace mlir {
namespace cascade {

class ScoreVariant {
public:
  explicit ScoreVariant(const AttentionSpec &spec);

  bool alibi() const { return score.alibi(); }
  bool rope() const { return score.rope(); }
  bool causal() const { return isCausal; }
  bool window() const { return score.windowed(); }
  /// A custom mask decides which keys each query sees (every tile masks).
  bool customMask() const { return hasCustomMask; }
  /// Scores need no transformation besides the scale (no soft cap, no
  /// ALiBi): the scale then folds into the exponent.
  bool plain() const { return plainScores; }
  /// What the softmax multiplies raw scores by before exp2: sm_scale *
  /// log2(e) for plain scores, 1 otherwise (logits() is in log2 units).
  double expScale() const;
  /// What a kernel that scales q instead of the score multiplies q by:
  /// sm_scale * log2(e) for plain scores, sm_scale otherwise.
  double queryScale() const;

  /// x * sm_scale, where the scale does not fold into the exponent.
  Value scale(KernelBuilder &k, Value x) const;
  /// A scaled score in log2 units: + ALiBi bias slope * (key - query
  /// position), soft cap, * log2(e); nothing for plain scores. `slope` and
  /// `distance` (f32) are built where the bias needs them.
  Value logits(KernelBuilder &k, Value x, function_ref<Value()> slope,
               function_ref<Value()> distance) const;
  /// `x`, or -inf for key `t` that the query at position `pos` does not
  /// see: after the causal diagonal, before the window, and past `t1` or,
  /// where given, `hidden` (i1, a custom mask's verdict, which covers t1:
  /// customMaskKeep).
  Value maskKey(KernelBuilder &k, Value x, Value t, Value pos, Value t1,
                Value hidden = Value()) const;
  /// Custom mask, in two steps so that a kernel can issue the loads a tile
  /// ahead. customMaskWords reads the bits [firstBit, firstBit + numBits)
  /// of the packed `mask` (i8 memref, bit j % 8 of byte j / 8 is element j)
  /// as aligned 32-bit words (i32; the buffer's base 4-byte aligned), one
  /// per 32 bits and one more; words past the one holding `lastBit` (the
  /// request's last bit) are not read. customMaskFromWords funnel-shifts
  /// them into chunks of 32 bits (i32), shifted right by `shift` (< 8)
  /// more bits: bit b of chunk c is bit firstBit + shift + 32 c + b for
  /// b < 32 - shift.
  SmallVector<Value> customMaskWords(KernelBuilder &k, Value mask,
                                     Value firstBit, Value lastBit,
                                     int64_t numBits) const;
  static SmallVector<Value> customMaskFromWords(KernelBuilder &k,
                                                ValueRange words,
                                                Value firstBit, Value shift);
  /// Clears the bits of customMaskFromWords' `chunks` from bit `validBits`
  /// (index) of the whole on: the keys past the block's range are hidden
  /// with the rest, so that a masked score needs one bit test and one
  /// select.
  static void customMaskKeep(KernelBuilder &k, MutableArrayRef<Value> chunks,
                             Value validBits);
  /// i1: bit `bit` of customMaskFromWords' result is 0 (the key is hidden).
  static Value customMaskHidden(KernelBuilder &k, ArrayRef<Value> chunks,
                                int64_t bit);
  /// i1: every bit of `used[c]` is set in chunk c (the keys a thread
  /// scores are all shown).
  static Value customMaskShows(KernelBuilder &k, ArrayRef<Value> chunks,
                               ArrayRef<uint32_t> used);
  /// i1: some bit of `used[c]` is set in chunk c (the thread scores some
  /// key the mask shows).
  static Value customMaskShowsAny(KernelBuilder &k, ArrayRef<Value> chunks,
                                  ArrayRef<uint32_t> used);
  /// Narrows the key range [t0, t1) to the keys some query at positions
  /// [firstPos, lastPos] sees: causal ends it after lastPos, the sliding
  /// window starts it that many keys before firstPos. The positions are
  /// built where they are needed.
  void clampKeyRange(KernelBuilder &k, Value &t0, Value &t1,
                     function_ref<Value()> firstPos,
                     function_ref<Value()> lastPos) const;
  /// Whether the keys [tileStart, tileStart + tileKeys) of a tile need
  /// maskKey for the queries at positions [firstPos, lastPos]: the tile runs
  /// past t1, crosses the first query's diagonal or starts before the last
  /// query's window (a custom mask's own verdict is the caller's:
  /// customMaskShows).
  Value tileNeedsMask(KernelBuilder &k, Value tileStart, int64_t tileKeys,
                      Value t1, function_ref<Value()> firstPos,
                      function_ref<Value()> lastPos) const;

  /// The kernel's constant tables (a memref.global named after the kernel):
  /// ALiBi slope per query head, RoPE inverse frequency per element of
  /// head_dim.
  Value alibiSlopes(KernelBuilder &k, gpu::GPUModuleOp module,
                    StringRef kernel) const;
  Value ropeInverseFrequencies(KernelBuilder &k, gpu::GPUModuleOp module,
                               StringRef kernel) const;

private:
  float smScale() const { return *score.smScale; }

  /// The spec's score options (sm_scale: the effective scale).
  ScoreOptions score;
  bool isCausal, plainScores, hasCustomMask;
  int64_t numQoHeads;
  SmallVector<float> ropeInvFreq;
};

/// cos and sin of a RoPE angle (f32) through sin/cos.approx after reducing
/// it to [-pi, pi]; `nonNegative` angles round with one bias.
std::pair<Value, Value> ropeCosSin(KernelBuilder &k, Value angle,
                                   bool nonNegative);

/// Rotate-half RoPE of the 8 elements `x` (vector<8xf32>) a lane owns, given
/// the 8 of its partner (D/2 away), their inverse frequencies and the
/// position (f32, >= 0); `firstHalf` (i1) whether x is in the first half.
Value ropeLane8(KernelBuilder &k, Value x, Value partner, Value invFreq8,
                Value posF, Value firstHalf);

/// Rotate-half RoPE in place on `rows` rows of a shared-memory tile of
/// `headDim` 16-bit elements of `elementType` per row: element i and i +
/// D/2 of a row at position p become x cos - y sin and y cos + x sin with
/// angle p * invFreq[i]. A thread of `numThreads` takes one (row, 8-element
/// chunk of the first half) at a time.
void ropeSmemTile(KernelBuilder &k, Value smem, Value tileBase,
                  const SmemTileLayout &layout, int64_t rows, int64_t headDim,
                  Type elementType, int64_t numThreads, Value tid,
                  Value invFreq, function_ref<Value(Value)> position);

} // namespace cascade
} // namespace mlir

#endif // CASCADE_LIB_CONVERSION_CASCADETOGPU_COMMON_SCOREVARIANT_H
