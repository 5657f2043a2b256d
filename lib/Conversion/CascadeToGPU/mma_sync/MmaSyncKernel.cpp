//===- MmaSyncKernel.cpp - Tiled attention on mma.sync --------------------===//
//
// The mma_sync kernel family over a paged KV cache (FlashAttention-2 on
// mma.sync.m16n8k16, f32 accumulators; every thread both copying and
// computing), composed of the generator stages: WorkItems (which tile a
// block runs), PagedKV (the K/V gather), ScoreVariant (options, masks,
// RoPE), MmaSyncMainloop and AttentionEpilogue, around the ones the
// tensor-core families share (common/TensorCoreAttention.h).
//
// Warps are laid out [32, warps_q, warps_kv]: warp (y, z) owns rows [y * 16
// * M, (y + 1) * 16 * M) of the tile (M m16 tiles) and keys [z * kv_tile /
// warps_kv, ...) of every KV tile.
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
#include "common/TensorCoreAttention.h"
#include "mma_sync/MmaSyncFamily.h"
#include "mma_sync/MmaSyncMainloop.h"
#include "mma_sync/MmaSyncTraits.h"

#include "cascade/Conversion/GPUCodegen/Fp8Convert.h"

#include <optional>

using namespace mlir;
using namespace mlir::cascade;

namespace {

/// One mma_sync attention kernel: the stages composed for one spec.
class MmaSyncKernel : TensorCoreAttention {
public:
  MmaSyncKernel(OpBuilder &b, gpu::GPUFuncOp fn, gpu::GPUModuleOp module,
                const AttentionSpec &spec)
      : TensorCoreAttention(b, fn, module, spec, mmaSyncTiles(spec)) {}

  void build();

private:
  /// The pipeline, the KV loop and the epilogue.
  void run();
  /// fp8 KV: converts the staging tiles of `stage` into the K and V tiles
  /// of the stage (q's dtype).
  void convertStagedTiles(const TileCopyPlan &plan, Value stage);
};

} // namespace

void MmaSyncKernel::build() {
  th = mmaSyncThread(k, tiles);
  if (tiles.fp8DirectV) {
    // The staging rings from 0, the Q tile in the last V stage.
    int64_t ring = tiles.stages * tiles.kvTile * c.headDim;
    stagingK = dynamicSharedMemory(k, module, c.kvType, 0, ring);
    stagingV = dynamicSharedMemory(k, module, c.kvType, ring, ring);
    smem = dynamicSharedMemory(k, module, c.qType,
                               mmaSyncFp8DirectQTileOffset(c.config, c.headDim),
                               tiles.sharedElements());
  } else {
    allocateTiles();
  }
  if (variant.rope())
    ropeTable = variant.ropeInverseFrequencies(k, module, fn.getName());
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

void MmaSyncKernel::convertStagedTiles(const TileCopyPlan &plan, Value stage) {
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

void MmaSyncKernel::run() {
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
                   tiles.vRing(), c.headDim, c.headDimVo, tiles.numThreads,
                   th.tid);
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
  MmaState state = mainloop.run(numTiles, kv.t0, qGroup, hooks);
  applyVScale(state);
  epilogue(std::move(state));
}

void mlir::cascade::buildMmaSyncAttentionKernel(OpBuilder &b, gpu::GPUFuncOp fn,
                                                gpu::GPUModuleOp module,
                                                const AttentionSpec &spec) {
  MmaSyncKernel(b, fn, module, spec).build();
}
