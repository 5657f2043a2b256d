//===- WgmmaKernel.cpp - Warp-specialized attention on Hopper -------------===//
//
// The wgmma kernel family (sm_90a) over a paged KV cache: WgmmaMainloop,
// warp-specialized (a producer warpgroup gathering K/V tiles, consumer
// warpgroups of 64 rows each on wgmma.mma_async), between the stages the
// tensor-core families share (common/TensorCoreAttention.h): the consumer
// warps see the block as an mma_sync block of 16-row warps (wgmmaTiles),
// so work items, the score transform, the custom mask's rows and the
// epilogue are the same code as mma_sync's.
//
// Here: the shared-memory layout (the panel ring, an fp8 cache's staging
// rings, a custom mask's side slots), the roles and their register split
// (setmaxnreg), the producer's hooks (the paged gather, the fp8 conversion,
// RoPE on K) and its staging of a custom mask's tiles with a verdict per
// consumer warpgroup, which the consumers read after their wait on the
// tile.
//
//===----------------------------------------------------------------------===//

#include "KernelSpec.h"
#include "common/TensorCoreAttention.h"
#include "wgmma/WgmmaFamily.h"
#include "wgmma/WgmmaMainloop.h"
#include "wgmma/WgmmaTraits.h"

#include "cascade/Conversion/GPUCodegen/Fp8Convert.h"
#include "cascade/Conversion/GPUCodegen/Wgmma.h"

using namespace mlir;
using namespace mlir::cascade;

namespace {

/// One wgmma attention kernel: the stages composed for one spec.
class WgmmaKernel : TensorCoreAttention {
public:
  WgmmaKernel(OpBuilder &b, gpu::GPUFuncOp fn, gpu::GPUModuleOp module,
              const AttentionSpec &spec)
      : TensorCoreAttention(b, fn, module, spec, wgmmaTiles(spec)) {}

  void build();

private:
  /// The roles, their loops, the epilogue.
  void run();
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
  Value maskStageBase(Value stage);
  /// The verdict word of consumer warpgroup `consumer` in the stage whose
  /// side data starts at `base`.
  Value maskVerdictIndex(Value base, Value consumer);
};

} // namespace

void WgmmaKernel::build() {
  th = wgmmaThread(k, tiles);
  allocateTiles();
  if (variant.rope())
    ropeTable = variant.ropeInverseFrequencies(k, module, fn.getName());
  if (variant.customMask()) {
    // After the tiles (and an fp8 cache's staging rings).
    int64_t groupSize = c.groupSize;
    int64_t base =
        wgmmaSharedBytes(c.config, c.headDim, c.headDimVo, c.qType, c.kvType);
    maskSide = dynamicSharedMemory(
        k, module, k.b.getI32Type(), base,
        tiles.stages * wgmmaMaskStageWords(c.config, groupSize));
  }
  run();
}

Value WgmmaKernel::maskStageBase(Value stage) {
  return k.mul(stage, k.idx(wgmmaMaskStageWords(c.config, c.groupSize)));
}

Value WgmmaKernel::maskVerdictIndex(Value base, Value consumer) {
  int64_t rows = wgmmaMaskQueries(c.config, c.groupSize) * maskStagedWords();
  return k.add(base, k.add(k.idx(rows), consumer));
}

std::pair<Value, Value> WgmmaKernel::maskQueriesOf(Value warp) {
  int64_t rows = wgmma::kRows;
  Value row0 = k.add(tileRow0, k.mul(warp, k.idx(rows)));
  Value q0 = k.div(row0, k.idx(c.groupSize));
  Value q1 = k.minU(k.div(k.add(row0, k.idx(rows - 1)), k.idx(c.groupSize)),
                    k.sub(queries.len, k.idx(1)));
  return {q0, q1};
}

int64_t WgmmaKernel::maskPasses() const {
  return (queriesSpanned(wgmma::kRows, c.groupSize) + 31) / 32;
}

SmallVector<Value> WgmmaKernel::loadMaskTile(Value ptid, Value tileStart) {
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

void WgmmaKernel::stageMaskTile(Value ptid, Value stage, Value tileStart,
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

SmallVector<Value> WgmmaKernel::readStagedMask(Value stage) {
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

void WgmmaKernel::run() {
  // setmaxnreg needs the register count at entry, which ptxas knows from
  // the launch bounds: .maxntid (the known block size) with .minnctapersm.
  fn->setAttr("nvvm.minctasm", k.b.getI32IntegerAttr(1));
  // One ring without RoPE or an fp8 cache (whose producer works on the
  // landed tiles): the copies publish their tiles themselves.
  bool split = c.config.hasSplitKVBarriers();
  bool fp8 = isFp8KVType(c.kvType);
  // fp8 queries: K lands in its ring, V in a staging slot that the
  // producer transposes once the tile landed (published after the next
  // tile's copies were issued).
  bool fp8Operands = tiles.fp8Operands;
  assert(!(fp8 && split) && "fp8 KV on wgmma: a joint ring (KernelSpec)");
  using Publish = WgmmaMainloop::Publish;
  Publish publish = split            ? Publish::SplitKV
                    : fp8Operands    ? Publish::AfterNext
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
  WgmmaKVGather gather(k, kvLayout, src, smem, tiles, ptid, stagingK, stagingV,
                       smem8);
  auto issue = [&](Value i, Value stage, WgmmaKVPart part) {
    gather.issue(i, stage, part);
  };
  auto prepare = [&](Value stage, Value tileStart) {
    // fp8 operands: V's staging slot, landed (every producer thread's
    // cp.async wait, then the barrier), transposed into the ring.
    if (fp8Operands) {
      namedBarrier(k, kWgmmaProducerBarrier, kWgmmaProducerThreads);
      gather.transposeV(stage);
      return;
    }
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
  auto lookup = [&](Value i) { return gather.lookupPages(i); };
  auto issueLooked = [&](Value i, Value stage, ValueRange pages) {
    gather.issueLooked(i, stage, pages);
  };
  WgmmaProducerHooks hooks;
  hooks.issue = issue;
  // page_lookahead (the family's whyNotAttention refused the ops it cannot
  // serve).
  if (c.config.getPageLookahead()) {
    assert(publish == Publish::CopiesArrive && gather.supportsLookahead() &&
           "page_lookahead: copies that publish their tile, a paged cache");
    hooks.lookup = lookup;
    hooks.issueLooked = issueLooked;
  }
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
  MmaState state =
      mainloop.consume(numTiles, kv.t0, transform,
                       variant.customMask() ? &maskSideData : nullptr);
  applyVScale(state);
  epilogue(std::move(state), consumers);
}

void mlir::cascade::buildWgmmaAttentionKernel(OpBuilder &b, gpu::GPUFuncOp fn,
                                              gpu::GPUModuleOp module,
                                              const AttentionSpec &spec) {
  WgmmaKernel(b, fn, module, spec).build();
}
