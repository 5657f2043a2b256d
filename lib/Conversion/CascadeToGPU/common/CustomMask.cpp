//===- CustomMask.cpp - A custom mask on the accumulator rows -------------===//
//
// The custom-mask stage of the tensor-core generators (TensorCoreAttention):
// each accumulator row's mask bits for the warp's keys of a tile, loaded
// from the request's bits (mma_sync) or read from the words the wgmma
// producer staged beside the tile, then kept below t1, tested for whether
// the tile needs masking at all, and voted on by the warp (a tile the mask
// hides from every row of the warp is skipped).
//
//===----------------------------------------------------------------------===//

#include "common/TensorCoreAttention.h"

using namespace mlir;
using namespace mlir::cascade;

void TensorCoreAttention::prepareCustomMask() {
  if (!variant.customMask())
    return;
  Value key0 = warpKey0(kv.t0);
  for (int64_t r = 0; r < 2 * tiles.mTiles; ++r) {
    // Rows past the request read its last row (their results are dropped).
    Value query = k.minU(row(r).query, k.sub(queries.len, k.idx(1)));
    maskRowBits.push_back(k.add(maskBase, k.add(k.mul(query, kv.kvLen), key0)));
  }
}

Value TensorCoreAttention::customMaskRowBit(int64_t r, Value tileStart) {
  return k.add(maskRowBits[r], k.sub(tileStart, kv.t0));
}

SmallVector<Value> TensorCoreAttention::customMaskRowWords(int64_t r,
                                                           Value tileStart) {
  return variant.customMaskWords(k, args.customMask,
                                 customMaskRowBit(r, tileStart), maskLastBit,
                                 tiles.kvPerWarp);
}

Value TensorCoreAttention::stagedVerdict(ValueRange side, int64_t which) {
  Value bit = arith::AndIOp::create(k.b, k.loc, side.front(),
                                    k.i32(int64_t(1) << which));
  // The word is the warpgroup's, but ptxas does not know: the vote makes
  // the branch on it uniform.
  return warpAny(k, k.cmp(arith::CmpIPredicate::ne, bit, k.i32(0)));
}

SmallVector<Value> TensorCoreAttention::customMaskRow(int64_t r,
                                                      Value tileStart,
                                                      Value quad,
                                                      ValueRange words) {
  SmallVector<Value> own;
  if (words.empty()) {
    own = customMaskRowWords(r, tileStart);
    words = own;
  }
  return ScoreVariant::customMaskFromWords(
      k, words, customMaskRowBit(r, tileStart), quad);
}

SmallVector<uint32_t> TensorCoreAttention::customMaskUsedBits() const {
  // Bits n * 8 + half of the chunks.
  SmallVector<uint32_t> used((tiles.kvPerWarp + 31) / 32, 0);
  for (int64_t n = 0; n < tiles.sTiles; ++n)
    used[n * 8 / 32] |= 3u << (n * 8 % 32);
  return used;
}

TensorCoreAttention::MaskRows
TensorCoreAttention::keptMaskRows(const MaskRows &rows, Value tileStart) {
  MaskRows kept(rows);
  Value validBits = k.sub(kv.t1, k.add(warpKey0(tileStart), laneQuad()));
  for (SmallVector<Value> &chunks : kept)
    ScoreVariant::customMaskKeep(k, chunks, validBits);
  return kept;
}

Value TensorCoreAttention::warpHides(const MaskRows &kept) {
  SmallVector<uint32_t> used = customMaskUsedBits();
  Value sees;
  for (const SmallVector<Value> &chunks : kept) {
    Value rowSees = ScoreVariant::customMaskShowsAny(k, chunks, used);
    sees = sees ? arith::OrIOp::create(k.b, k.loc, sees, rowSees) : rowSees;
  }
  return arith::XOrIOp::create(
      k.b, k.loc, warpAny(k, sees),
      arith::ConstantIntOp::create(k.b, k.loc, k.b.getI1Type(), 1));
}

TensorCoreAttention::MaskRows
TensorCoreAttention::maskRowsOf(Value tileStart, ValueRange words) {
  MaskRows rows;
  Value quad = laneQuad();
  if (maskSide) {
    // Staged rows (readStagedMask): whole words from the tile's key 0, a
    // zero word after the last for the lane's shift.
    int64_t n = maskStagedWords();
    for (int64_t r = 0; r < 2 * tiles.mTiles; ++r) {
      SmallVector<Value> row(words.slice(1 + r * n, n));
      row.push_back(k.i32(0));
      rows.push_back(ScoreVariant::customMaskFromWords(k, row, k.idx(0), quad));
    }
    return rows;
  }
  int64_t perRow = maskWordsPerRow();
  for (int64_t r = 0; r < 2 * tiles.mTiles; ++r)
    rows.push_back(customMaskRow(
        r, tileStart, quad,
        words.empty() ? ValueRange{} : words.slice(r * perRow, perRow)));
  return rows;
}

Value TensorCoreAttention::warpTileHidden(Value tileStart) {
  if (!variant.customMask())
    return {};
  return warpHides(keptMaskRows(maskRowsOf(tileStart), tileStart));
}
