//===- MmaAttentionKernel.cpp - Tiled attention on tensor cores -----------===//
//
// The tensor-core kernel families over a paged KV cache, composed of the
// generator stages: WorkItems (which tile a block runs), PagedKV (the K/V
// gather), ScoreVariant (options, masks, RoPE), a mainloop and
// AttentionEpilogue. The mainloop is the family's:
// - mma_sync: FlashAttention-2 on mma.sync.m16n8k16 (f32 accumulators),
//   MmaSyncMainloop, every thread both copying and computing;
// - wgmma (sm_90a): WgmmaMainloop, warp-specialized (a producer warpgroup
//   gathering K/V tiles, consumer warpgroups of 64 rows each on
//   wgmma.mma_async); the consumer warps see the block as an mma_sync
//   block of 16-row warps (MmaSyncTiles' wgmma form), so work items, the
//   score transform and the epilogue are the same code.
//
// A block owns a tile of q_tile packed query rows of one request and one KV
// head: packed row p is query p / G, query head kv_head * G + p % G (the GQA
// group is packed into the rows, as FlashInfer does), so every K/V tile
// gathered from the pages feeds all G heads. Warps are laid out
// [32, warps_q, warps_kv]: warp (y, z) owns rows [y * 16 * M, (y + 1) * 16 *
// M) of the tile (M m16 tiles) and keys [z * kv_tile / warps_kv, ...) of
// every KV tile.
//
// Per block: the Q tile is copied into shared memory once (cp.async); K/V
// tiles of kv_tile tokens are gathered from the pages with 16-byte cp.async
// into a `stages`-deep ring of swizzled shared-memory tiles. Per KV tile a
// warp computes S = Q K^T (ldmatrix + mma), applies the options (scale,
// ALiBi, soft cap; causal / window / length masks only on tiles that need
// them), runs the online softmax in base 2 on the accumulator fragments
// (row max / sum over the quad of lanes of a row), turns P into A fragments
// in registers and accumulates O += P V (ldmatrix .trans + mma). Tiles past
// the causal diagonal and before the sliding window are never loaded.
//
// Work: without a plan the block finds its (request, query tile) itself
// (decode: request = block / tiles per request; prefill: a binary search
// over v(i) = ceil(qo_indptr[i] * G / q_tile) + i, which leaves room for
// every request's tiles); with a plan (split-KV) it reads request, query
// tile and KV chunk from the plan arrays and writes an f32 partial state
// that merge_states_indptr merges. `accumulate` merges the result into the
// state the outputs hold.
//
// fp8 KV (f8E4M3FN, f8E5M2): tiles are gathered as fp8 bytes (16-byte
// cp.async chunks of 16 elements, half an f16 tile's bytes) into staging
// rings `stages` deep after the f16/bf16 K and V rings, and converted to
// q's dtype into the swizzled tile of their stage just before the tile's
// scores (the mainloop's prepare hook; cvt.rn.f16x2.{e4m3x2,e5m2x2},
// Fp8Convert.h). Decode keeps one converted K and V tile: the barrier that
// starts a tile's iteration also ends the reads of the previous tile's, and
// the shared memory goes to the staging stages (the bytes in flight).
// Decode whose warps hold Q in registers (AttentionSpec::fp8DirectK) has
// no K tile: K's staging rows land swizzled (fp8KStagingOffset) and the
// scores read their B fragments from them with 32-bit loads and cvt, the
// Q fragments built for a permuted head_dim (MmaSyncMainloop.cpp); only V
// is converted, and the barrier that publishes its tile waits until just
// before P V (the scores need none: the barrier that starts the iteration
// made K's staging rows visible). At head_dim 32..128 P V reads V's
// staging rows too (AttentionSpec::fp8DirectV; fp8VStagingOffset, O's
// columns permuted until the epilogue writes them): nothing is converted
// in shared memory, no barrier waits for a converted tile, and the Q tile
// borrows the last V staging stage, which the prologue leaves empty and
// the first iteration fills only after the barrier that follows the
// warps' loads of their Q fragments. k_scale multiplies the raw scores,
// v_scale the output accumulators before the epilogue.
//
//===----------------------------------------------------------------------===//

#include "KernelSpec.h"
#include "common/AttentionEpilogue.h"
#include "common/KernelArgs.h"
#include "common/PagedKV.h"
#include "common/ScoreVariant.h"
#include "common/WorkItems.h"
#include "mma_sync/MmaSyncMainloop.h"
#include "wgmma/WgmmaMainloop.h"

#include "cascade/Conversion/GPUCodegen/Fp8Convert.h"
#include "cascade/Conversion/GPUCodegen/Wgmma.h"
#include "cascade/Conversion/KernelConfig.h"

#include <limits>

using namespace mlir;
using namespace mlir::cascade;

namespace {

/// One mma_sync attention kernel: the stages composed for one spec.
class MmaAttentionKernel {
public:
  MmaAttentionKernel(OpBuilder &b, gpu::GPUFuncOp fn, gpu::GPUModuleOp module,
                     const AttentionSpec &spec)
      : k(b, fn.getLoc()), fn(fn), module(module), c(spec),
        args(AttentionArgs::bind(spec, fn)), tiles(spec), variant(spec),
        kvLayout(spec), expScale(variant.expScale()) {}

  void build();

private:
  /// The block's work item, its query rows, and whether it has work.
  void findWorkItem();
  /// The block's keys [t0, t1), its query tile's rows and positions.
  void findKeyRange();
  /// Copies the Q tile into shared memory (one cp.async group).
  void copyQTile();
  /// The pipeline, the KV loop and the epilogue.
  void run();
  /// The same for the wgmma family: the roles, their loops, the epilogue.
  void runWgmma();
  /// The end of the block: normalise and write the rows of `state`.
  void epilogue(MmaSyncState state, function_ref<void()> barrier = nullptr);
  PackedRow row(int64_t r);
  /// `maskWords`: wgmma, the tile's staged custom mask (readStagedMask);
  /// mma_sync, none: the mask's words are loaded here.
  SmallVector<Value> transformScores(ArrayRef<Value> s, Value tileStart,
                                     ValueRange maskWords = {});
  /// transformScores after k_scale (an fp8 cache's; docs/semantics.md):
  /// the mainloops' score hook.
  SmallVector<Value> dequantizedScores(ArrayRef<Value> s, Value tileStart,
                                       ValueRange maskWords = {});
  /// v_scale (an fp8 cache's) on the output accumulators, before the
  /// epilogue normalises them.
  void applyVScale(MmaSyncState &state);
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
  /// wgmma: the producer stages a custom mask's tiles in the side slots
  /// (maskSide, [stages][wgmmaMaskStageWords] i32; WgmmaMainloop's side
  /// data). Producer warp w < consumers writes the bits of the queries
  /// consumer warpgroup w's rows span (keys from t1 on cleared), one lane a
  /// query (in passes of 32), and the warpgroup's verdict word
  /// (kWgmmaMaskVerdicts). loadMaskTile is the loadSide hook of producer
  /// thread `ptid` for the tile from `tileStart`: the words of its queries,
  /// loaded unconditionally (clamped to the request's last word);
  /// stageMaskTile the annotate hook, into stage `stage`.
  SmallVector<Value> loadMaskTile(Value ptid, Value tileStart);
  void stageMaskTile(Value ptid, Value stage, Value tileStart,
                     ValueRange loaded);
  /// The queries consumer warpgroup `warp`'s rows span: q0 .. q1 (none
  /// where its rows are all past the request), and the passes of 32 lanes
  /// over them.
  std::pair<Value, Value> maskQueriesOf(Value warp);
  int64_t maskPasses() const;
  /// The consumer's read of stage `stage`: its warpgroup's verdict word,
  /// then the staged words of each accumulator row (maskStagedWords each).
  SmallVector<Value> readStagedMask(Value stage);
  /// The verdict of readStagedMask's values, uniform over the warp: some
  /// key shown to a row of the warpgroup (`which` 0) / every key shown to
  /// every row (`which` 1).
  Value stagedVerdict(ValueRange side, int64_t which);
  int64_t maskStagedWords() const { return (tiles.kvTile + 31) / 32; }
  Value maskStageBase(Value stage);
  /// The verdict word of consumer warpgroup `consumer` in the stage whose
  /// side data starts at `base`.
  Value maskVerdictIndex(Value base, Value consumer);
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
  /// fp8 KV: converts the staging tiles of `stage` into the K and V tiles
  /// of the stage (q's dtype).
  void convertStagedTiles(const TileCopyPlan &plan, Value stage);
  /// `v` (a vector or scalar of f32) times the f32 scalar `s`.
  Value scaled(Value v, Value s);

  KernelBuilder k;
  gpu::GPUFuncOp fn;
  gpu::GPUModuleOp module;
  const AttentionSpec &c;
  AttentionArgs args;
  MmaSyncTiles tiles;
  ScoreVariant variant;
  PagedKVLayout kvLayout;
  /// What the softmax multiplies raw scores by before exp2 (foldKScale).
  ExpScale expScale;

  MmaSyncThread th;
  Value smem, ropeTable, slopes;
  /// fp8 KV: the staging rings [stages][kv_tile][head_dim] of K and V.
  Value stagingK, stagingV;
  WorkItem item;
  QueryRows queries;
  RequestKv kv;
  Value tileRow0, firstQuery, lastQuery, posBase, numTiles;
  /// Custom mask: the bit of the request's (query 0, key 0) and its last.
  Value maskBase, maskLastBit;
  /// wgmma with a custom mask: the side slots the producer stages it in.
  Value maskSide;
  SmallVector<Value> maskRowBits;
  /// The Q tile's cp.async group. Waits name it: with their group counts
  /// they wait for every older group, the Q tile's included.
  Value qGroup;
};

void MmaAttentionKernel::build() {
  th = MmaSyncThread::get(k, tiles);
  if (tiles.fp8DirectV) {
    // The staging rings from 0, the Q tile in the last V stage.
    int64_t ring = tiles.stages * tiles.kvTile * c.headDim;
    stagingK = dynamicSharedMemory(k, module, c.kvType, 0, ring);
    stagingV = dynamicSharedMemory(k, module, c.kvType, ring, ring);
    smem = dynamicSharedMemory(k, module, c.qType,
                               mmaSyncFp8DirectQTileOffset(c.config, c.headDim),
                               tiles.sharedElements());
  } else {
    smem = dynamicSharedMemory(k, module, c.qType, 0, tiles.sharedElements());
  }
  if (isFp8KVType(c.kvType) && !tiles.fp8DirectV) {
    int64_t ring = tiles.stages * tiles.kvTile * c.headDim;
    int64_t base = tiles.sharedElements() * 2; // after the 16-bit tiles
    stagingK = dynamicSharedMemory(k, module, c.kvType, base, ring);
    stagingV = dynamicSharedMemory(k, module, c.kvType, base + ring, ring);
  }
  if (variant.rope())
    ropeTable = variant.ropeInverseFrequencies(k, module, fn.getName());
  if (tiles.wgmma && variant.customMask()) {
    // After the tiles (and an fp8 cache's staging rings).
    int64_t groupSize = c.groupSize;
    int64_t base = mmaAttentionSharedBytes(c.config, c.headDim, c.kvType,
                                           c.decode, variant.rope());
    maskSide = dynamicSharedMemory(
        k, module, k.b.getI32Type(), base,
        tiles.stages * wgmmaMaskStageWords(c.config, groupSize));
  }
  if (tiles.wgmma)
    return runWgmma();
  findWorkItem();
  // Everything below depends only on block-uniform values: the branch is
  // uniform and the barriers inside are reached by the whole block.
  auto ifOp = scf::IfOp::create(k.b, k.loc, item.active, false);
  OpBuilder::InsertionGuard g(k.b);
  k.b.setInsertionPointToStart(ifOp.thenBlock());
  findKeyRange();
  if (variant.alibi())
    slopes = variant.alibiSlopes(k, module, fn.getName());
  copyQTile();
  run();
}

void MmaAttentionKernel::findWorkItem() {
  Value w = k.blockId(gpu::Dimension::x);
  if (c.split) {
    Value active = planItemValid(k, args, w);
    item = planItem(k, args, w);
    item.active = active;
    if (!item.qoTile)
      item.qoTile = k.idx(0);
  } else if (c.decode) {
    item = decodeTile(k, w, c.decodeTilesPerRequest());
  } else {
    item = selfScheduledTile(k, args, w, c.groupSize, tiles.qTile, c.causal);
  }
  queries = queryRows(k, args, item.request, c.decode);
  // A tile past the request's packed rows has nothing to do.
  Value packed = k.mul(queries.len, k.idx(c.groupSize));
  item.active = arith::AndIOp::create(
      k.b, k.loc, item.active,
      k.cmp(arith::CmpIPredicate::ult, k.mul(item.qoTile, k.idx(tiles.qTile)),
            packed));
}

void MmaAttentionKernel::findKeyRange() {
  kv = requestKv(k, args.kvIndptr, args.kvLastPageLen, item.request, c.pageSize,
                 c.split ? args.kvChunkSize : Value(), item.chunk);
  int64_t qTile = tiles.qTile;
  tileRow0 = k.mul(item.qoTile, k.idx(qTile));
  firstQuery = k.div(tileRow0, k.idx(c.groupSize));
  lastQuery =
      k.minU(k.sub(queries.len, k.idx(1)),
             k.div(k.add(tileRow0, k.idx(qTile - 1)), k.idx(c.groupSize)));
  // Query position of query j: kv_len - qo_len + j (may be negative).
  posBase = k.sub(kv.kvLen, queries.len);
  // Keys no row of the tile sees are never loaded.
  variant.clampKeyRange(
      k, kv.t0, kv.t1, [&] { return k.add(posBase, firstQuery); },
      [&] { return k.add(posBase, lastQuery); });
  numTiles = k.div(k.add(k.sub(kv.t1, kv.t0), k.idx(tiles.kvTile - 1)),
                   k.idx(tiles.kvTile));
  if (variant.customMask()) {
    maskBase =
        k.mul(k.toIndex(k.loadScalar(args.maskIndptr, item.request)), k.idx(8));
    maskLastBit =
        k.sub(k.add(maskBase, k.mul(queries.len, kv.kvLen)), k.idx(1));
  }
}

void MmaAttentionKernel::copyQTile() {
  // Packed row r is query (tileRow0 + r) / G of head kv_head * G +
  // (tileRow0 + r) % G; rows past the request are zero-filled.
  int64_t d = c.headDim;
  TileCopyPlan qCopy = distributeTileCopy(k, tiles.qTile, tiles.dp / 8,
                                          tiles.numThreads, th.tid);
  SmallVector<Value> offs, valid;
  for (Value r : qCopy.rows) {
    Value packed = k.add(tileRow0, r);
    Value j = k.div(packed, k.idx(c.groupSize));
    Value head = k.add(k.mul(th.kvHead, k.idx(c.groupSize)),
                       k.rem(packed, k.idx(c.groupSize)));
    valid.push_back(k.cmp(arith::CmpIPredicate::ult, j, queries.len));
    offs.push_back(
        k.mul(k.add(k.mul(k.add(queries.start, j), k.idx(c.numQoHeads)), head),
              k.idx(d)));
  }
  qGroup = commitGroup(k, issueTileCopy(k, smem, k.idx(0), tiles.qLayout, qCopy,
                                        args.q, offs, valid, d / 8));
}

PackedRow MmaAttentionKernel::row(int64_t r) {
  Value packed = k.add(
      tileRow0, k.add(th.localRow(k, r / 2, r % 2), k.div(th.lane, k.idx(4))));
  PackedRow info;
  info.query = k.div(packed, k.idx(c.groupSize));
  info.head = k.add(k.mul(th.kvHead, k.idx(c.groupSize)),
                    k.rem(packed, k.idx(c.groupSize)));
  info.valid = k.cmp(arith::CmpIPredicate::ult, info.query, queries.len);
  info.pos = k.add(posBase, info.query);
  return info;
}

void MmaAttentionKernel::prepareCustomMask() {
  if (!variant.customMask())
    return;
  Value key0 = warpKey0(kv.t0);
  for (int64_t r = 0; r < 2 * tiles.mTiles; ++r) {
    // Rows past the request read its last row (their results are dropped).
    Value query = k.minU(row(r).query, k.sub(queries.len, k.idx(1)));
    maskRowBits.push_back(k.add(maskBase, k.add(k.mul(query, kv.kvLen), key0)));
  }
}

Value MmaAttentionKernel::customMaskRowBit(int64_t r, Value tileStart) {
  return k.add(maskRowBits[r], k.sub(tileStart, kv.t0));
}

SmallVector<Value> MmaAttentionKernel::customMaskRowWords(int64_t r,
                                                          Value tileStart) {
  return variant.customMaskWords(k, args.customMask,
                                 customMaskRowBit(r, tileStart), maskLastBit,
                                 tiles.kvPerWarp);
}

Value MmaAttentionKernel::maskStageBase(Value stage) {
  return k.mul(stage, k.idx(wgmmaMaskStageWords(c.config, c.groupSize)));
}

Value MmaAttentionKernel::maskVerdictIndex(Value base, Value consumer) {
  int64_t rows = wgmmaMaskQueries(c.config, c.groupSize) * maskStagedWords();
  return k.add(base, k.add(k.idx(rows), consumer));
}

std::pair<Value, Value> MmaAttentionKernel::maskQueriesOf(Value warp) {
  int64_t rows = wgmma::kRows;
  Value row0 = k.add(tileRow0, k.mul(warp, k.idx(rows)));
  Value q0 = k.div(row0, k.idx(c.groupSize));
  Value q1 = k.minU(k.div(k.add(row0, k.idx(rows - 1)), k.idx(c.groupSize)),
                    k.sub(queries.len, k.idx(1)));
  return {q0, q1};
}

int64_t MmaAttentionKernel::maskPasses() const {
  return (queriesSpanned(wgmma::kRows, c.groupSize) + 31) / 32;
}

SmallVector<Value> MmaAttentionKernel::loadMaskTile(Value ptid,
                                                    Value tileStart) {
  Value warp = k.div(ptid, k.idx(32)), lane = k.rem(ptid, k.idx(32));
  Value q0 = maskQueriesOf(warp).first;
  SmallVector<Value> words;
  for (int64_t pass = 0; pass < maskPasses(); ++pass) {
    Value query = k.add(q0, k.add(lane, k.idx(pass * 32)));
    Value firstBit = k.add(maskBase, k.add(k.mul(query, kv.kvLen), tileStart));
    llvm::append_range(words,
                       variant.customMaskWords(k, args.customMask, firstBit,
                                               maskLastBit, tiles.kvTile));
  }
  return words;
}

void MmaAttentionKernel::stageMaskTile(Value ptid, Value stage, Value tileStart,
                                       ValueRange loaded) {
  OpBuilder &b = k.b;
  Type i1 = b.getI1Type(), i32 = b.getI32Type();
  int64_t words = maskStagedWords();
  int64_t consumers = tiles.numThreads / wgmma::kWarpgroupSize;
  Value warp = k.div(ptid, k.idx(32)), lane = k.rem(ptid, k.idx(32));
  Value base = maskStageBase(stage);
  auto ifConsumer = scf::IfOp::create(
      b, k.loc, k.cmp(arith::CmpIPredicate::ult, warp, k.idx(consumers)),
      /*withElse=*/false);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(ifConsumer.thenBlock());
  auto [q0, q1] = maskQueriesOf(warp);
  Value validBits = k.sub(kv.t1, tileStart);
  Value any = arith::ConstantIntOp::create(b, k.loc, i1, 0);
  Value all = arith::ConstantIntOp::create(b, k.loc, i1, 1);
  int64_t perPass = int64_t(loaded.size()) / maskPasses();
  for (int64_t pass = 0; pass < maskPasses(); ++pass) {
    Value query = k.add(q0, k.add(lane, k.idx(pass * 32)));
    auto ifRow = scf::IfOp::create(b, k.loc, TypeRange{i1, i1},
                                   k.cmp(arith::CmpIPredicate::ule, query, q1),
                                   /*withElse=*/true);
    {
      OpBuilder::InsertionGuard rg(b);
      b.setInsertionPointToStart(ifRow.thenBlock());
      Value firstBit =
          k.add(maskBase, k.add(k.mul(query, kv.kvLen), tileStart));
      SmallVector<Value> chunks = ScoreVariant::customMaskFromWords(
          k, loaded.slice(pass * perPass, perPass), firstBit, k.idx(0));
      ScoreVariant::customMaskKeep(k, chunks, validBits);
      Value at = k.add(base, k.mul(k.sub(query, firstQuery), k.idx(words)));
      Value rowAny, rowAll;
      for (auto [ci, chunk] : llvm::enumerate(chunks)) {
        int64_t bits = std::min<int64_t>(32, tiles.kvTile - 32 * int64_t(ci));
        k.storeScalar(chunk, maskSide, k.add(at, k.idx(ci)));
        Value full = k.i32(bits == 32 ? -1 : (int64_t(1) << bits) - 1);
        Value shows = k.cmp(arith::CmpIPredicate::ne, chunk, k.i32(0));
        Value whole = k.cmp(arith::CmpIPredicate::eq, chunk, full);
        rowAny = rowAny ? arith::OrIOp::create(b, k.loc, rowAny, shows) : shows;
        rowAll =
            rowAll ? arith::AndIOp::create(b, k.loc, rowAll, whole) : whole;
      }
      scf::YieldOp::create(b, k.loc, ValueRange{rowAny, rowAll});
      b.setInsertionPointToStart(ifRow.elseBlock());
      scf::YieldOp::create(
          b, k.loc,
          ValueRange{arith::ConstantIntOp::create(b, k.loc, i1, 0),
                     arith::ConstantIntOp::create(b, k.loc, i1, 1)});
    }
    any = arith::OrIOp::create(b, k.loc, any, warpAny(k, ifRow.getResult(0)));
    all = arith::AndIOp::create(b, k.loc, all, warpAll(k, ifRow.getResult(1)));
  }
  // Every lane writes the same verdict word.
  Value verdict = arith::OrIOp::create(
      b, k.loc, arith::ExtUIOp::create(b, k.loc, i32, any),
      arith::ShLIOp::create(
          b, k.loc, arith::ExtUIOp::create(b, k.loc, i32, all), k.i32(1)));
  k.storeScalar(verdict, maskSide, maskVerdictIndex(base, warp));
}

SmallVector<Value> MmaAttentionKernel::readStagedMask(Value stage) {
  int64_t words = maskStagedWords();
  Value base = maskStageBase(stage);
  Value consumer = k.sub(k.threadId(gpu::Dimension::y), k.idx(1));
  SmallVector<Value> out{
      k.loadScalar(maskSide, maskVerdictIndex(base, consumer))};
  for (int64_t r = 0; r < 2 * tiles.mTiles; ++r) {
    // Rows past the request read its last query's bits (their results are
    // dropped).
    Value query = k.minU(row(r).query, k.sub(queries.len, k.idx(1)));
    Value at = k.add(base, k.mul(k.sub(query, firstQuery), k.idx(words)));
    for (int64_t w = 0; w < words; ++w)
      out.push_back(k.loadScalar(maskSide, k.add(at, k.idx(w))));
  }
  return out;
}

Value MmaAttentionKernel::stagedVerdict(ValueRange side, int64_t which) {
  Value bit = arith::AndIOp::create(k.b, k.loc, side.front(),
                                    k.i32(int64_t(1) << which));
  // The word is the warpgroup's, but ptxas does not know: the vote makes
  // the branch on it uniform.
  return warpAny(k, k.cmp(arith::CmpIPredicate::ne, bit, k.i32(0)));
}

SmallVector<Value> MmaAttentionKernel::customMaskRow(int64_t r, Value tileStart,
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

SmallVector<uint32_t> MmaAttentionKernel::customMaskUsedBits() const {
  // Bits n * 8 + half of the chunks.
  SmallVector<uint32_t> used((tiles.kvPerWarp + 31) / 32, 0);
  for (int64_t n = 0; n < tiles.sTiles; ++n)
    used[n * 8 / 32] |= 3u << (n * 8 % 32);
  return used;
}

MmaAttentionKernel::MaskRows
MmaAttentionKernel::keptMaskRows(const MaskRows &rows, Value tileStart) {
  MaskRows kept(rows);
  Value validBits = k.sub(kv.t1, k.add(warpKey0(tileStart), laneQuad()));
  for (SmallVector<Value> &chunks : kept)
    ScoreVariant::customMaskKeep(k, chunks, validBits);
  return kept;
}

Value MmaAttentionKernel::warpHides(const MaskRows &kept) {
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

MmaAttentionKernel::MaskRows MmaAttentionKernel::maskRowsOf(Value tileStart,
                                                            ValueRange words) {
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

Value MmaAttentionKernel::warpTileHidden(Value tileStart) {
  if (!variant.customMask())
    return {};
  return warpHides(keptMaskRows(maskRowsOf(tileStart), tileStart));
}

Value MmaAttentionKernel::warpKey0(Value tileStart) {
  return k.add(tileStart, k.mul(th.warpKV, k.idx(tiles.kvPerWarp)));
}

Value MmaAttentionKernel::laneQuad() {
  return k.mul(k.rem(th.lane, k.idx(4)), k.idx(2));
}

/// The variant on the raw scores (ScoreVariant::scale and logits); with
/// `masked`, keys past t1, after the causal diagonal or before the window
/// (or hidden by the custom mask's `keep` rows) become -inf.
SmallVector<Value> MmaAttentionKernel::transformScores(ArrayRef<Value> s,
                                                       Value tileStart,
                                                       bool masked,
                                                       const MaskRows &keep) {
  SmallVector<Value> out;
  Value key0 = warpKey0(tileStart);
  Value quad = laneQuad();
  bool needRow = masked || variant.alibi();
  for (int64_t mt = 0; mt < tiles.mTiles; ++mt) {
    for (int64_t n = 0; n < tiles.sTiles; ++n) {
      Value colBase = k.add(key0, k.add(k.idx(n * 8), quad));
      out.push_back(mapAccumulator(
          k, s[mt * tiles.sTiles + n],
          [&](Value x, int64_t pair, int64_t half) {
            PackedRow ri = needRow ? row(mt * 2 + pair) : PackedRow();
            Value t;
            if (needRow)
              t = k.add(colBase, k.idx(half));
            x = variant.logits(
                k, variant.scale(k, x),
                [&] { return k.loadScalar(slopes, ri.head); },
                [&] { return k.toF32(k.sub(t, ri.pos)); });
            if (!masked)
              return x;
            Value hidden;
            if (!keep.empty())
              hidden = ScoreVariant::customMaskHidden(k, keep[mt * 2 + pair],
                                                      n * 8 + half);
            return variant.maskKey(k, x, t, ri.pos, kv.t1, hidden);
          }));
    }
  }
  return out;
}

/// Masks only on the tiles that need them. With a custom mask, a tile
/// whose keys the mask shows to every row of the warp (a request's history
/// under a tree of drafts, say) takes the unmasked path too: the warp
/// votes, so the branch stays uniform.
SmallVector<Value> MmaAttentionKernel::transformScores(ArrayRef<Value> s,
                                                       Value tileStart,
                                                       ValueRange maskWords) {
  SmallVector<Type> sTypes(s.size(), s.front().getType());
  Value need = variant.tileNeedsMask(
      k, tileStart, tiles.kvTile, kv.t1,
      [&] { return k.add(k.sub(kv.kvLen, queries.len), firstQuery); },
      [&] { return k.add(k.sub(kv.kvLen, queries.len), lastQuery); });
  MaskRows maskRows;
  if (maskSide) {
    // The producer's verdict: every key of the tile shown to every row of
    // the warpgroup (keys from t1 on count as hidden).
    maskRows = maskRowsOf(tileStart, maskWords);
    Value whole = stagedVerdict(maskWords, 1);
    need = arith::OrIOp::create(
        k.b, k.loc, need,
        arith::XOrIOp::create(
            k.b, k.loc, whole,
            arith::ConstantIntOp::create(k.b, k.loc, k.b.getI1Type(), 1)));
  } else if (variant.customMask()) {
    // (A tile past t1 takes the masked path anyway: `need`.)
    SmallVector<uint32_t> used = customMaskUsedBits();
    Value shows;
    maskRows = maskRowsOf(tileStart, maskWords);
    for (const SmallVector<Value> &row : maskRows) {
      Value rowShows = ScoreVariant::customMaskShows(k, row, used);
      shows =
          shows ? arith::AndIOp::create(k.b, k.loc, shows, rowShows) : rowShows;
    }
    Value hides = arith::XOrIOp::create(
        k.b, k.loc, shows,
        arith::ConstantIntOp::create(k.b, k.loc, k.b.getI1Type(), 1));
    need = arith::OrIOp::create(k.b, k.loc, need, warpAny(k, hides));
  }
  auto ifMask = scf::IfOp::create(k.b, k.loc, sTypes, need,
                                  /*withElse=*/true);
  OpBuilder::InsertionGuard ig(k.b);
  k.b.setInsertionPointToStart(ifMask.thenBlock());
  MaskRows kept;
  if (variant.customMask())
    kept = maskSide ? maskRows : keptMaskRows(maskRows, tileStart);
  scf::YieldOp::create(k.b, k.loc, transformScores(s, tileStart, true, kept));
  k.b.setInsertionPointToStart(ifMask.elseBlock());
  scf::YieldOp::create(k.b, k.loc,
                       transformScores(s, tileStart, false, MaskRows()));
  return SmallVector<Value>(ifMask.getResults());
}

Value MmaAttentionKernel::scaled(Value v, Value s) {
  if (auto vt = dyn_cast<VectorType>(v.getType()))
    s = vector::BroadcastOp::create(k.b, k.loc, vt, s);
  return k.fmul(v, s);
}

void MmaAttentionKernel::convertStagedTiles(const TileCopyPlan &plan,
                                            Value stage) {
  int64_t d = c.headDim;
  Value stagingBase = k.mul(stage, k.idx(tiles.kvTile * d));
  Value slot = tiles.ringStage(k, stage);
  for (auto [row, chunk, inRange] :
       llvm::zip(plan.rows, plan.chunks, plan.inRange)) {
    auto ifOp = scf::IfOp::create(k.b, k.loc, inRange, /*withElse=*/false);
    OpBuilder::InsertionGuard g(k.b);
    k.b.setInsertionPointToStart(ifOp.thenBlock());
    Value from =
        k.add(stagingBase, k.add(k.mul(row, k.idx(d)), k.mul(chunk, k.idx(8))));
    Value to = tiles.kvLayout.chunkOffset(k, row, chunk);
    // fp8DirectK: the scores read K's staging tile itself.
    SmallVector<std::pair<Value, SmemRing>, 2> work;
    if (!tiles.fp8DirectK)
      work.emplace_back(stagingK, tiles.kRing());
    work.emplace_back(stagingV, tiles.vRing());
    for (auto [staging, ring] : work) {
      Value v8 = vector::LoadOp::create(
          k.b, k.loc, VectorType::get({8}, c.kvType), staging, ValueRange{from},
          /*nontemporal=*/false, llvm::Align(8));
      vector::StoreOp::create(k.b, k.loc, fp8Convert(k, v8, c.qType), smem,
                              ValueRange{k.add(ring.stage(k, slot), to)},
                              /*nontemporal=*/false, llvm::Align(16));
    }
  }
}

void MmaAttentionKernel::run() {
  int64_t stages = tiles.stages;
  KVSource src{args.kCache, args.vCache, args.kvIndices, kv.pageStart,
               th.kvHead,   kv.t0,       kv.t1};
  // f16/bf16 KV: tiles straight into the rings. fp8 KV: rows of the tile
  // into the staging rings (Fp8 gathers), then converted into the rings.
  bool fp8 = isFp8KVType(c.kvType);
  std::optional<PagedKVTileGather> gather;
  std::optional<PagedKVRowGather> fp8Gather;
  TileCopyPlan convertPlan;
  if (!fp8) {
    gather.emplace(k, kvLayout, src, smem, tiles.kvLayout, tiles.kRing(),
                   tiles.vRing(), c.headDim, tiles.numThreads, th.tid);
  } else {
    fp8Gather.emplace(kvLayout, src, stagingK, stagingV, tiles.kvTile,
                      c.headDim, c.headDim / 8, tiles.numThreads, th.tid,
                      /*elementBytes=*/1);
    if (!tiles.fp8DirectV)
      convertPlan = distributeTileCopy(k, tiles.kvTile, c.headDim / 8,
                                       tiles.numThreads, th.tid);
    if (tiles.fp8DirectK)
      fp8Gather->swizzleKRows();
    if (tiles.fp8DirectV)
      fp8Gather->swizzleVRows();
  }
  auto lookupPages = [&](Value i) {
    return fp8 ? fp8Gather->lookupPages(k.b, i) : gather->lookupPages(i);
  };
  auto issue = [&](Value i, Value stage, ArrayRef<Value> pages) {
    if (fp8)
      fp8Gather->issue(k.b, i, stage, pages);
    else
      gather->issue(i, stage, pages);
  };
  // Prologue: tiles 0 .. S-2 in flight, the page ids of tile S-1 looked up.
  for (int64_t s = 0; s + 1 < stages; ++s)
    issue(k.idx(s), k.idx(s), lookupPages(k.idx(s)));
  if (variant.rope()) {
    waitGroups(k, qGroup, stages - 1); // the Q group is the oldest
    gpu::BarrierOp::create(k.b, k.loc);
    ropeSmemTile(k, smem, k.idx(0), tiles.qLayout, tiles.qTile, c.headDim,
                 c.qType, tiles.numThreads, th.tid, ropeTable, [&](Value r) {
                   return k.add(posBase,
                                k.div(k.add(tileRow0, r), k.idx(c.groupSize)));
                 });
  }

  // Page ids are looked up a tile ahead (their loads overlap a tile of
  // compute) when registers allow: one m16 tile per warp.
  bool prefetchPages = tiles.mTiles == 1;
  MmaSyncTileHooks hooks;
  auto carriedInit = [&]() -> SmallVector<Value> {
    if (!prefetchPages)
      return {};
    return lookupPages(k.idx(stages - 1));
  };
  auto produce = [&](Value i, ArrayRef<Value> pages) -> SmallVector<Value> {
    Value next = k.add(i, k.idx(stages - 1));
    if (!prefetchPages) {
      issue(next, k.rem(next, k.idx(stages)), lookupPages(next));
      return {};
    }
    issue(next, k.rem(next, k.idx(stages)), pages);
    return lookupPages(k.add(i, k.idx(stages)));
  };
  auto prepare = [&](Value stage, Value tileStart) {
    if (fp8) {
      convertStagedTiles(convertPlan, stage);
      // fp8DirectK: the scores read only K's staging ring, so the barrier
      // that publishes the converted V tile waits until P V (beforePV).
      if (!tiles.fp8DirectK)
        gpu::BarrierOp::create(k.b, k.loc);
    }
    if (!variant.rope())
      return;
    ropeSmemTile(k, smem, tiles.kRing().stage(k, tiles.ringStage(k, stage)),
                 tiles.kvLayout, tiles.kvTile, c.headDim, c.qType,
                 tiles.numThreads, th.tid, ropeTable,
                 [&](Value r) { return k.add(tileStart, r); });
    gpu::BarrierOp::create(k.b, k.loc);
  };
  auto transform = [&](ArrayRef<Value> s, Value tileStart) {
    return dequantizedScores(s, tileStart);
  };
  hooks.carriedInit = carriedInit;
  hooks.produce = produce;
  // fp8DirectV: nothing to convert (K and V are read from their staging).
  if (variant.rope() || (fp8 && !tiles.fp8DirectV))
    hooks.prepare = prepare;
  hooks.transform = transform;
  auto hidden = [&](Value tileStart) { return warpTileHidden(tileStart); };
  if (variant.customMask())
    hooks.hidden = hidden;
  auto publishV = [&] { gpu::BarrierOp::create(k.b, k.loc); };
  if (tiles.fp8DirectK && !tiles.fp8DirectV)
    hooks.beforePV = publishV;
  foldKScale();
  MmaSyncMainloop mainloop(k, tiles, th, smem, c.qType, expScale);
  if (tiles.fp8DirectK)
    mainloop.setFp8KStaging(stagingK);
  if (tiles.fp8DirectV)
    mainloop.setFp8VStaging(stagingV);
  prepareCustomMask();
  MmaSyncState state = mainloop.run(numTiles, kv.t0, qGroup, hooks);
  applyVScale(state);
  epilogue(std::move(state));
}

SmallVector<Value> MmaAttentionKernel::dequantizedScores(ArrayRef<Value> s,
                                                         Value tileStart,
                                                         ValueRange maskWords) {
  if (!args.kScale || kScaleFolds())
    return transformScores(s, tileStart, maskWords);
  // k_scale multiplies every logit (docs/semantics.md), before the soft cap
  // and ALiBi.
  SmallVector<Value> sk;
  for (Value x : s)
    sk.push_back(scaled(x, args.kScale));
  return transformScores(sk, tileStart, maskWords);
}

void MmaAttentionKernel::foldKScale() {
  if (!kScaleFolds())
    return;
  // exp2(s * c * k - m * c * k) with m the running max of the raw scores s:
  // for k > 0 the max of s * k is m * k. Any other k_scale (zero, negative,
  // infinite or NaN; the runtime and the Python package refuse them before
  // a launch) gives NaN, so that every output of the block is NaN rather
  // than quietly wrong.
  Value ks = args.kScale;
  Value valid = arith::AndIOp::create(
      k.b, k.loc, k.fcmp(arith::CmpFPredicate::OGT, ks, k.f32(0.0)),
      k.fcmp(arith::CmpFPredicate::OLT, ks,
             k.f32(std::numeric_limits<double>::infinity())));
  expScale.folded = k.select(valid, k.fmul(ks, k.f32(expScale.constant)),
                             k.f32(std::numeric_limits<double>::quiet_NaN()));
}

void MmaAttentionKernel::applyVScale(MmaSyncState &state) {
  if (!args.vScale)
    return;
  for (Value &o : state.o)
    o = scaled(o, args.vScale);
}

void MmaAttentionKernel::epilogue(MmaSyncState state,
                                  function_ref<void()> barrier) {
  auto rowOf = [&](int64_t r) { return row(r); };
  MmaSyncOutput out{c,          args,     tiles,         th,
                    module,     expScale, queries.start, item.request,
                    item.chunk, kv.kvLen, rowOf,         barrier};
  mmaSyncEpilogue(k, out, std::move(state));
}

void MmaAttentionKernel::runWgmma() {
  // setmaxnreg needs the register count at entry, which ptxas knows from
  // the launch bounds: .maxntid (the known block size) with .minnctapersm.
  fn->setAttr("nvvm.minctasm", k.b.getI32IntegerAttr(1));
  // One ring without RoPE or an fp8 cache (whose producer works on the
  // landed tiles): the copies publish their tiles themselves.
  bool split = c.config.hasSplitKVBarriers();
  bool fp8 = isFp8KVType(c.kvType);
  assert(!(fp8 && split) && "fp8 KV on wgmma: a joint ring (KernelSpec)");
  using Publish = WgmmaMainloop::Publish;
  Publish publish = split            ? Publish::SplitKV
                    : fp8            ? Publish::Staged
                    : variant.rope() ? Publish::AfterNext
                                     : Publish::CopiesArrive;
  WgmmaMainloop mainloop(k, tiles, th, smem, c.qType, expScale, publish,
                         /*annotated=*/variant.customMask());
  mainloop.initBarriers();
  Value producer =
      k.cmp(arith::CmpIPredicate::eq, k.threadId(gpu::Dimension::y), k.idx(0));
  auto roles = scf::IfOp::create(k.b, k.loc, producer, /*withElse=*/true);
  OpBuilder::InsertionGuard g(k.b);
  // Each role finds the block's work itself, after setmaxnreg: values live
  // across a register reallocation go through local memory.
  auto withWork = [&] {
    findWorkItem();
    auto ifActive = scf::IfOp::create(k.b, k.loc, item.active, false);
    k.b.setInsertionPointToStart(ifActive.thenBlock());
    findKeyRange();
  };

  // The producer warpgroup: gathers the K/V tiles of the block's keys.
  k.b.setInsertionPointToStart(roles.thenBlock());
  WgmmaRegisterSplit regs =
      wgmmaRegisterSplit(variant.rope(), fp8, c.config.getConsumerWarpgroups(),
                         variant.customMask());
  setMaxRegisters(k, regs.producer, /*increase=*/false);
  withWork();
  Value ptid = k.threadId(gpu::Dimension::x);
  KVSource src{args.kCache, args.vCache, args.kvIndices, kv.pageStart,
               th.kvHead,   kv.t0,       kv.t1};
  // fp8: the copies land in the staging rings (build()).
  WgmmaKVGather gather(k, kvLayout, src, smem, tiles, ptid, stagingK, stagingV);
  auto issue = [&](Value i, Value stage, WgmmaKVPart part) {
    gather.issue(i, stage, part);
  };
  auto prepare = [&](Value stage, Value tileStart) {
    // fp8: this thread's chunks, landed (its cp.async wait), into q's dtype.
    if (fp8)
      gather.convertStaged(stage, c.qType);
    if (!variant.rope())
      return;
    // RoPE rotates pairs of chunks other producer threads copied (or
    // converted).
    namedBarrier(k, kWgmmaProducerBarrier, kWgmmaProducerThreads);
    ropeSmemTile(k, smem, tiles.kRing().stage(k, stage), tiles.kvLayout,
                 tiles.kvTile, c.headDim, c.qType, kWgmmaProducerThreads, ptid,
                 ropeTable, [&](Value r) { return k.add(tileStart, r); });
  };
  auto loadSide = [&](Value tileStart) {
    return loadMaskTile(ptid, tileStart);
  };
  auto annotate = [&](Value stage, Value tileStart, ValueRange loaded) {
    stageMaskTile(ptid, stage, tileStart, loaded);
  };
  WgmmaProducerHooks hooks;
  hooks.issue = issue;
  // fp8DirectV: nothing to convert (K and V are read from their staging).
  if (variant.rope() || (fp8 && !tiles.fp8DirectV))
    hooks.prepare = prepare;
  if (variant.customMask()) {
    hooks.loadSide = loadSide;
    hooks.annotate = annotate;
  }
  mainloop.produce(numTiles, kv.t0, hooks);

  // The consumer warpgroups: Q once, then the KV loop and the epilogue.
  k.b.setInsertionPointToStart(roles.elseBlock());
  setMaxRegisters(k, regs.consumer, /*increase=*/true);
  foldKScale();
  if (expScale.folded)
    mainloop.setFoldedExpScale(expScale.folded);
  withWork();
  if (variant.alibi())
    slopes = variant.alibiSlopes(k, module, fn.getName());
  auto consumers = [&] {
    namedBarrier(k, kWgmmaConsumerBarrier, tiles.numThreads);
  };
  copyQTile();
  waitGroups(k, qGroup, 0);
  if (variant.rope()) {
    consumers();
    ropeSmemTile(k, smem, k.idx(0), tiles.qLayout, tiles.qTile, c.headDim,
                 c.qType, tiles.numThreads, th.tid, ropeTable, [&](Value r) {
                   return k.add(posBase,
                                k.div(k.add(tileRow0, r), k.idx(c.groupSize)));
                 });
  }
  fenceProxyAsyncShared(k);
  consumers();
  auto transform = [&](ArrayRef<Value> s, Value tileStart, ValueRange pre) {
    return dequantizedScores(s, tileStart, pre);
  };
  // A custom mask comes staged by the producer, with a verdict per
  // warpgroup: tiles it hides from all 64 rows are skipped (a tree of
  // drafts hides most keys past its rows), tiles it shows whole are not
  // masked.
  WgmmaMainloop::TileSideData maskSideData;
  auto readMask = [&](Value stage) { return readStagedMask(stage); };
  auto shown = [&](ValueRange side) { return stagedVerdict(side, 0); };
  if (variant.customMask()) {
    maskSideData.types.assign(1 + 2 * tiles.mTiles * maskStagedWords(),
                              k.b.getI32Type());
    maskSideData.read = readMask;
    maskSideData.shown = shown;
  }
  MmaSyncState state =
      mainloop.consume(numTiles, kv.t0, transform,
                       variant.customMask() ? &maskSideData : nullptr);
  applyVScale(state);
  epilogue(std::move(state), consumers);
}

} // namespace

void cascade::buildMmaAttentionKernel(OpBuilder &b, gpu::GPUFuncOp fn,
                                      gpu::GPUModuleOp module,
                                      const AttentionSpec &spec) {
  MmaAttentionKernel(b, fn, module, spec).build();
}
