//===- TensorCoreAttention.h - Stages of tensor-core kernels ----*- C++ -*-===//
//
// The stages that the tensor-core kernel generators (mma_sync/MmaSyncKernel,
// wgmma/WgmmaKernel) compose around their mainloops, for one spec: the
// block's work item and key range (WorkItems, PagedKV), the Q tile, the
// score transform with its masks (ScoreVariant; the custom mask's rows in
// CustomMask.cpp), an fp8 cache's k_scale / v_scale, and the epilogue
// (AttentionEpilogue). A wgmma block's consumer warps see the block as an
// mma_sync block of 16-row warps (MmaTiles), so these are one code for
// both families.
//
// A block owns a tile of q_tile packed query rows of one request and one KV
// head: packed row p is query p / G, query head kv_head * G + p % G (the GQA
// group is packed into the rows, as FlashInfer does), so every K/V tile
// gathered from the pages feeds all G heads.
//
// Work: without a plan the block finds its (request, query tile) itself
// (decode: request = block / tiles per request; prefill: a binary search
// over v(i) = ceil(qo_indptr[i] * G / q_tile) + i, which leaves room for
// every request's tiles); with a plan (split-KV) it reads request, query
// tile and KV chunk from the plan arrays and writes an f32 partial state
// that merge_states_indptr merges. `accumulate` merges the result into the
// state the outputs hold.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_LIB_CONVERSION_CASCADETOGPU_COMMON_TENSORCOREATTENTION_H
#define CASCADE_LIB_CONVERSION_CASCADETOGPU_COMMON_TENSORCOREATTENTION_H

#include "KernelSpec.h"
#include "common/AttentionEpilogue.h"
#include "common/KernelArgs.h"
#include "common/MmaTiles.h"
#include "common/PagedKV.h"
#include "common/ScoreVariant.h"
#include "common/WorkItems.h"

namespace mlir {
namespace cascade {

/// One tensor-core attention kernel: the stages composed for one spec. A
/// family's generator derives from it, makes its MmaTiles and MmaThread,
/// lays out the shared memory and runs its mainloop between these stages.
class TensorCoreAttention {
protected:
  TensorCoreAttention(OpBuilder &b, gpu::GPUFuncOp fn, gpu::GPUModuleOp module,
                      const AttentionSpec &spec, MmaTiles tiles)
      : k(b, fn.getLoc()), fn(fn), module(module), c(spec),
        args(AttentionArgs::bind(spec, fn)), tiles(tiles), variant(spec),
        kvLayout(spec, args), expScale(variant.expScale()) {}

  /// The dynamic shared memory from 0 (`smem`, q's dtype): the tiles, and
  /// over an fp8 cache the staging rings of K and V after them. With fp8
  /// queries (MmaTiles::fp8Operands) `smem` is f16 (16-bit units of the
  /// tiles' layouts), `smem8` the same bytes as fp8, and only V is staged.
  void allocateTiles();
  /// The block's work item, its query rows, and whether it has work.
  void findWorkItem();
  /// The block's keys [t0, t1), its query tile's rows and positions.
  void findKeyRange();
  /// Copies the Q tile into shared memory (one cp.async group).
  void copyQTile();
  /// The end of the block: normalise and write the rows of `state`.
  void epilogue(MmaState state, function_ref<void()> barrier = nullptr);
  PackedRow row(int64_t r);
  /// `maskWords`: wgmma, the tile's staged custom mask (the consumer's
  /// read of its stage); mma_sync, none: the mask's words are loaded here.
  SmallVector<Value> transformScores(ArrayRef<Value> s, Value tileStart,
                                     ValueRange maskWords = {});
  /// transformScores after k_scale (an fp8 cache's; docs/semantics.md):
  /// the mainloops' score hook.
  SmallVector<Value> dequantizedScores(ArrayRef<Value> s, Value tileStart,
                                       ValueRange maskWords = {});
  /// v_scale (an fp8 cache's) on the output accumulators, before the
  /// epilogue normalises them.
  void applyVScale(MmaState &state);
  /// Whether k_scale folds into the softmax's exp2 scale (ExpScale): over
  /// an fp8 cache where the scores are plain, so that nothing but the
  /// scale comes between a raw score and the softmax.
  bool kScaleFolds() const { return args.kScale && variant.plain(); }
  /// Sets `expScale` to the softmax's scale, with k_scale folded in where
  /// kScaleFolds(); called where the threads that run the softmax start
  /// (the consumers' role on wgmma).
  void foldKScale();
  /// The custom mask's chunks of each accumulator row (mTiles x 2 rows).
  using MaskRows = SmallVector<SmallVector<Value>>;
  /// `keptRows`: the mask rows after keptMaskRows.
  SmallVector<Value> transformScores(ArrayRef<Value> s, Value tileStart,
                                     bool masked, const MaskRows &keptRows);
  /// The chunks of `rows` with the keys from t1 on cleared.
  MaskRows keptMaskRows(const MaskRows &rows, Value tileStart);
  /// Whether the `kept` chunks hide every key this warp scores from every
  /// row of the warp (the warp votes: an i1 uniform over it).
  Value warpHides(const MaskRows &kept);
  /// customMaskRow of every accumulator row of the tile from `tileStart`,
  /// made of `words` (readStagedMask's values with a staged mask; else
  /// loaded here).
  MaskRows maskRowsOf(Value tileStart, ValueRange words = {});
  /// Custom mask: the bits of accumulator row `r` for this warp's keys of
  /// the tile from `tileStart`, shifted by this lane's first column `quad`,
  /// made of the row's `words` (customMaskRowWords; loaded here if empty).
  SmallVector<Value> customMaskRow(int64_t r, Value tileStart, Value quad,
                                   ValueRange words = {});
  /// The words customMaskRow reads for row `r` of the tile from tileStart
  /// (maskWordsPerRow of them), and the row's first bit there.
  SmallVector<Value> customMaskRowWords(int64_t r, Value tileStart);
  Value customMaskRowBit(int64_t r, Value tileStart);
  int64_t maskWordsPerRow() const { return (tiles.kvPerWarp + 31) / 32 + 1; }
  /// The verdict of readStagedMask's values, uniform over the warp: some
  /// key shown to a row of the warpgroup (`which` 0) / every key shown to
  /// every row (`which` 1).
  Value stagedVerdict(ValueRange side, int64_t which);
  int64_t maskStagedWords() const { return (tiles.kvTile + 31) / 32; }
  /// The bits of customMaskRow's chunks that this lane's scores test.
  SmallVector<uint32_t> customMaskUsedBits() const;
  /// Custom mask: whether it (with the keys from t1 on) hides every key of
  /// this warp's share of the tile from every row of the warp, an i1 that
  /// the warp votes on (the mma.sync mainloop then skips the tile); null
  /// without a custom mask.
  Value warpTileHidden(Value tileStart);
  /// Custom mask: each accumulator row's first bit for this warp's keys of
  /// the first tile, once before the KV loop (customMaskRow adds the
  /// tile's offset).
  void prepareCustomMask();
  /// The first key of this warp's share of the tile from `tileStart`, and
  /// this lane's first column in each 8-key group.
  Value warpKey0(Value tileStart);
  Value laneQuad();
  /// `v` (a vector or scalar of f32) times the f32 scalar `s`.
  Value scaled(Value v, Value s);

  KernelBuilder k;
  gpu::GPUFuncOp fn;
  gpu::GPUModuleOp module;
  const AttentionSpec &c;
  AttentionArgs args;
  MmaTiles tiles;
  ScoreVariant variant;
  PagedKVLayout kvLayout;
  /// What the softmax multiplies raw scores by before exp2 (foldKScale).
  ExpScale expScale;

  MmaThread th;
  Value smem, smem8, ropeTable, slopes;
  /// fp8 KV: the staging rings [stages][kv_tile][head_dim] of K and V.
  Value stagingK, stagingV;
  WorkItem item;
  QueryRows queries;
  RequestKv kv;
  Value tileRow0, firstQuery, lastQuery, posBase, numTiles;
  /// Custom mask: the bit of the request's (query 0, key 0) and its last.
  Value maskBase, maskLastBit;
  /// wgmma with a custom mask: the side slots the producer stages it in
  /// (WgmmaKernel); null elsewhere.
  Value maskSide;
  SmallVector<Value> maskRowBits;
  /// The Q tile's cp.async group. Waits name it: with their group counts
  /// they wait for every older group, the Q tile's included.
  Value qGroup;
};

} // namespace cascade
} // namespace mlir

#endif // CASCADE_LIB_CONVERSION_CASCADETOGPU_COMMON_TENSORCOREATTENTION_H
