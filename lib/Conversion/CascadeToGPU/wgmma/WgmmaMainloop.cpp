//===- WgmmaMainloop.cpp - The KV loop of attention on Hopper -------------===//

#include "wgmma/WgmmaMainloop.h"
#include "KernelSpec.h"

#include "cascade/Conversion/GPUCodegen/Fp8Convert.h"
#include "cascade/Conversion/GPUCodegen/Wgmma.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

#include "llvm/ADT/Sequence.h"

using namespace mlir;
using namespace mlir::cascade;

/// K-major operands in the 128-byte swizzle: 8-row groups 1024 bytes apart
/// (stride byte offset); the leading byte offset is unused (16).
static constexpr int64_t kSwizzleGroupBytes = 1024;
static constexpr int64_t kUnusedLeadingBytes = 16;
/// A k16 step moves 32 bytes along a 128-byte panel row.
static constexpr int64_t kK16Bytes = 32;
/// Columns (16-bit elements) of a 128-byte panel.
static constexpr int64_t kPanelCols = 64;

MmaTiles mlir::cascade::wgmmaTiles(const AttentionSpec &spec) {
  // Each consumer warp holds 16 rows of its warpgroup's 64 (the wgmma
  // accumulator is mma.sync's per warp) and every key of a tile.
  const KernelConfigAttr &cfg = spec.config;
  MmaTiles t;
  t.d = spec.headDim;
  t.dp = llvm::alignTo(t.d, 16);
  t.warpsQ = 4 * cfg.getConsumerWarpgroups();
  t.warpsKV = 1;
  t.mTiles = 1;
  t.qTile = cfg.getQTile();
  t.kvTile = cfg.getKvTile();
  t.stages = cfg.getStages();
  t.kvPerWarp = t.kvTile;
  t.sTiles = t.kvTile / 8;
  // O covers v's head_dim (a narrower v: fewer columns than Q and K).
  t.dvp = llvm::alignTo(spec.headDimVo, 16);
  t.oTiles = t.dvp / 8;
  t.numThreads = 32 * t.warpsQ;
  // fp8 queries: fp8 rows of dp bytes, dp / 2 16-bit units; V transposed.
  t.fp8Operands = wgmmaFp8Operands(spec.qType);
  t.exp2Emulation = cfg.getExp2Emulation();
  int64_t units = t.fp8Operands ? t.dp / 2 : t.dp;
  t.qLayout = SmemTileLayout::getPanels(t.qTile, units);
  t.kvLayout = SmemTileLayout::getPanels(t.kvTile, units);
  t.vLayout =
      t.dvp == t.dp ? t.kvLayout : SmemTileLayout::getPanels(t.kvTile, t.dvp);
  if (t.fp8Operands)
    t.vtLayout = SmemTileLayout::getPanels(t.dp, t.kvTile / 2);
  t.kvRingStages = t.kRingStages = t.vRingStages = t.stages;
  return t;
}

MmaThread mlir::cascade::wgmmaThread(KernelBuilder &k, const MmaTiles &t) {
  MmaThread th;
  Value x = k.threadId(gpu::Dimension::x);
  Value wg = k.sub(k.threadId(gpu::Dimension::y), k.idx(1));
  th.lane = k.rem(x, k.idx(32));
  th.warpQ = k.add(k.div(x, k.idx(32)), k.mul(wg, k.idx(4)));
  th.warpKV = k.idx(0);
  th.tid = k.add(x, k.mul(wg, k.idx(128)));
  th.kvHead = k.blockId(gpu::Dimension::y);
  th.warpRow0 = k.mul(th.warpQ, k.idx(16));
  return th;
}

WgmmaMainloop::WgmmaMainloop(KernelBuilder &k, const MmaTiles &tiles,
                             const MmaThread &thread, Value smem,
                             Type elementType, ExpScale expScale,
                             Publish publish, bool annotated)
    : k(k), tiles(tiles), thread(thread), smem(smem), elementType(elementType),
      pType(tiles.fp8Operands ? k.b.getF16Type() : elementType),
      expScale(expScale), splitKV(publish == Publish::SplitKV),
      copiesArrive(publish == Publish::CopiesArrive),
      staged(publish == Publish::Staged), annotated(annotated) {}

Value WgmmaMainloop::address(Value offset) {
  // 16-bit elements.
  return k.add(
      sharedAddress(k, smem, k.idx(0)),
      k.mul(arith::IndexCastUIOp::create(k.b, k.loc, k.b.getI64Type(), offset),
            k.i64(2)));
}

std::pair<Value, Value> WgmmaMainloop::stageAndParity(Value i) {
  Value round = k.div(i, k.idx(tiles.stages));
  Value parity =
      k.cmp(arith::CmpIPredicate::ne,
            arith::AndIOp::create(k.b, k.loc, round, k.idx(1)), k.idx(0));
  return {k.rem(i, k.idx(tiles.stages)), parity};
}

/// A turn barrier's threads: the warpgroup waiting for its turn and the one
/// handing it over.
static constexpr int64_t kTurnThreads = 2 * wgmma::kWarpgroupSize;

Value WgmmaMainloop::consumerIndex() {
  return k.toI32(k.sub(k.threadId(gpu::Dimension::y), k.idx(1)));
}

int64_t WgmmaMainloop::consumers() const {
  return tiles.numThreads / wgmma::kWarpgroupSize;
}

void WgmmaMainloop::giveFirstTurn() {
  if (consumers() < 2)
    return;
  auto ifFirst = scf::IfOp::create(
      k.b, k.loc,
      arith::CmpIOp::create(k.b, k.loc, arith::CmpIPredicate::eq,
                            consumerIndex(), k.i32(0)),
      /*withElse=*/false);
  OpBuilder::InsertionGuard g(k.b);
  k.b.setInsertionPointToStart(ifFirst.thenBlock());
  namedBarrierArrive(k, k.i32(kWgmmaFirstTurnBarrier), kTurnThreads);
}

void WgmmaMainloop::waitTurn() {
  if (consumers() < 2)
    return;
  namedBarrier(k, k.add(consumerIndex(), k.i32(kWgmmaFirstTurnBarrier)),
               kTurnThreads);
}

void WgmmaMainloop::passTurn() {
  if (consumers() < 2)
    return;
  Value next = arith::RemUIOp::create(
      k.b, k.loc, k.add(consumerIndex(), k.i32(1)), k.i32(consumers()));
  namedBarrierArrive(k, k.add(next, k.i32(kWgmmaFirstTurnBarrier)),
                     kTurnThreads);
}

void WgmmaMainloop::initBarriers() {
  full = createMbarriers(k, tiles.stages);
  empty = createMbarriers(k, tiles.stages);
  if (splitKV) {
    fullV = createMbarriers(k, tiles.stages);
    emptyV = createMbarriers(k, tiles.stages);
  }
  Value first =
      k.cmp(arith::CmpIPredicate::eq,
            k.add(k.threadId(gpu::Dimension::x), k.threadId(gpu::Dimension::y)),
            k.idx(0));
  for (int64_t s = 0; s < tiles.stages; ++s) {
    // `full`: every producer thread publishes its copies (and its side
    // data); `empty`: every consumer thread releases the stage.
    mbarrierInit(k, full, k.idx(s),
                 k.idx(kWgmmaProducerThreads * (annotated ? 2 : 1)), first);
    mbarrierInit(k, empty, k.idx(s), k.idx(tiles.numThreads), first);
    if (splitKV) {
      mbarrierInit(k, fullV, k.idx(s), k.idx(kWgmmaProducerThreads), first);
      mbarrierInit(k, emptyV, k.idx(s), k.idx(tiles.numThreads), first);
    }
  }
  gpu::BarrierOp::create(k.b, k.loc);
}

Value WgmmaMainloop::acquireStage(Value emptyRing, Value i) {
  auto [stage, parity] = stageAndParity(i);
  // The stage's previous tile (i - stages) must have been released: the
  // consumers completed phase round - 1 of `emptyRing`.
  Value reuse = k.cmp(arith::CmpIPredicate::uge, i, k.idx(tiles.stages));
  auto ifReuse = scf::IfOp::create(k.b, k.loc, reuse, false);
  OpBuilder::InsertionGuard g(k.b);
  k.b.setInsertionPointToStart(ifReuse.thenBlock());
  Value prev = arith::XOrIOp::create(
      k.b, k.loc, parity, arith::ConstantIntOp::create(k.b, k.loc, 1, 1));
  mbarrierWait(k, emptyRing, stage, prev);
  return stage;
}

void WgmmaMainloop::publishStage(Value fullRing, Value j, Value t0,
                                 function_ref<void(Value, Value)> prepare) {
  Value stage = k.rem(j, k.idx(tiles.stages));
  if (prepare)
    prepare(stage, k.add(t0, k.mul(j, k.idx(tiles.kvTile))));
  // The copies (and the hook's writes) are generic-proxy writes that wgmma
  // reads through the async proxy.
  fenceProxyAsyncShared(k);
  mbarrierArrive(k, fullRing, stage);
}

void WgmmaMainloop::waitFull(Value stage, Value parity) {
  mbarrierWait(k, full, stage, parity);
  // Copies that published themselves were not fenced by the producer:
  // order them before this thread's wgmma reads (async proxy).
  if (copiesArrive)
    fenceProxyAsyncShared(k);
}

SmallVector<Value> WgmmaMainloop::loadSideOf(const WgmmaProducerHooks &hooks,
                                             Value i, Value t0) {
  if (!hooks.loadSide)
    return {};
  return hooks.loadSide(k.add(t0, k.mul(i, k.idx(tiles.kvTile))));
}

void WgmmaMainloop::annotateStage(const WgmmaProducerHooks &hooks, Value stage,
                                  Value i, Value t0, ValueRange loaded) {
  assert(static_cast<bool>(hooks.annotate) == annotated &&
         "an annotated mainloop's producer annotates every tile");
  if (!hooks.annotate)
    return;
  hooks.annotate(stage, k.add(t0, k.mul(i, k.idx(tiles.kvTile))), loaded);
  // Plain stores, released by the arrive (the consumers' wait acquires).
  mbarrierArrive(k, full, stage);
}

void WgmmaMainloop::produceArriving(Value numTiles, Value t0,
                                    const WgmmaProducerHooks &hooks) {
  // Tile i: wait for a free stage, issue the copies, and let them arrive on
  // `full` when they landed. No cp.async wait on the way: the producer is
  // as far ahead as the ring lets it be, and a tile reaches the consumers
  // as soon as its own bytes are in, not after the next tile was issued.
  scf::ForOp::create(k.b, k.loc, k.idx(0), numTiles, k.idx(1), ValueRange{},
                     [&](OpBuilder &lb, Location, Value i, ValueRange) {
                       OpBuilder::InsertionGuard lg(k.b);
                       k.b.setInsertionPoint(lb.getInsertionBlock(),
                                             lb.getInsertionPoint());
                       SmallVector<Value> loaded = loadSideOf(hooks, i, t0);
                       SmallVector<Value> pages;
                       if (hooks.lookup)
                         pages = hooks.lookup(i);
                       Value stage = acquireStage(empty, i);
                       if (hooks.lookup)
                         hooks.issueLooked(i, stage, pages);
                       else
                         hooks.issue(i, stage, WgmmaKVPart::KV);
                       mbarrierArriveOnCopies(k, full, stage);
                       annotateStage(hooks, stage, i, t0, loaded);
                       scf::YieldOp::create(k.b, k.loc);
                     });
  // Nothing in flight when the producer's threads end.
  NVVM::CpAsyncWaitGroupOp::create(k.b, k.loc, 0);
}

void WgmmaMainloop::produceStaged(Value numTiles, Value t0,
                                  const WgmmaProducerHooks &hooks) {
  // Tile i's copies go to staging slot i % stages at once: that slot's
  // previous tile, i - stages, was converted in iteration i - 1 (by this
  // thread, the only one that reads its chunks). Tile j = i - lookahead is
  // then published: its copies waited for (the `lookahead` newer groups
  // stay in flight), its ring stage acquired (the consumers released tile
  // j - stages, which needs only tiles up to j - stages + 1 published),
  // converted by the prepare hook, fenced, arrived on.
  assert(hooks.prepare && "a staging ring is converted by the prepare hook");
  int64_t lookahead = tiles.stages - 1;
  auto publish = [&](Value j, int64_t pendingGroups) {
    SmallVector<Value> loaded = loadSideOf(hooks, j, t0);
    NVVM::CpAsyncWaitGroupOp::create(k.b, k.loc, pendingGroups);
    Value stage = acquireStage(empty, j);
    annotateStage(hooks, stage, j, t0, loaded);
    hooks.prepare(stage, k.add(t0, k.mul(j, k.idx(tiles.kvTile))));
    fenceProxyAsyncShared(k);
    mbarrierArrive(k, full, stage);
  };
  auto ifThen = [&](Value cond, function_ref<void()> body) {
    auto ifOp = scf::IfOp::create(k.b, k.loc, cond, /*withElse=*/false);
    OpBuilder::InsertionGuard g(k.b);
    k.b.setInsertionPointToStart(ifOp.thenBlock());
    body();
  };
  scf::ForOp::create(
      k.b, k.loc, k.idx(0), numTiles, k.idx(1), ValueRange{},
      [&](OpBuilder &lb, Location, Value i, ValueRange) {
        OpBuilder::InsertionGuard lg(k.b);
        k.b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
        hooks.issue(i, k.rem(i, k.idx(tiles.stages)), WgmmaKVPart::KV);
        ifThen(k.cmp(arith::CmpIPredicate::uge, i, k.idx(lookahead)),
               [&] { publish(k.sub(i, k.idx(lookahead)), lookahead); });
        scf::YieldOp::create(k.b, k.loc);
      });
  // The last min(lookahead, n) tiles, oldest first: tile n - lookahead + r
  // (where n + r >= lookahead) with lookahead - 1 - r newer groups.
  for (int64_t r = 0; r < lookahead; ++r)
    ifThen(k.cmp(arith::CmpIPredicate::uge, k.add(numTiles, k.idx(r)),
                 k.idx(lookahead)),
           [&] {
             publish(k.sub(k.add(numTiles, k.idx(r)), k.idx(lookahead)),
                     lookahead - 1 - r);
           });
}

void WgmmaMainloop::produce(Value numTiles, Value t0,
                            const WgmmaProducerHooks &hooks) {
  if (splitKV)
    return produceSplit(numTiles, t0, hooks);
  if (staged)
    return produceStaged(numTiles, t0, hooks);
  assert((copiesArrive || !hooks.lookup) &&
         "page lookahead: the schedule whose copies publish their tile");
  assert(!hooks.lookup == !hooks.issueLooked && "lookup and issueLooked");
  if (copiesArrive) {
    assert(!hooks.prepare && "a prepare hook needs the landed tile");
    return produceArriving(numTiles, t0, hooks);
  }
  // Tile j is published once its copies landed: after tile j + 1 was
  // issued, so that two tiles' copies are in flight while one waits.
  auto publish = [&](Value j, int64_t pendingGroups) {
    NVVM::CpAsyncWaitGroupOp::create(k.b, k.loc, pendingGroups);
    publishStage(full, j, t0, hooks.prepare);
  };
  scf::ForOp::create(
      k.b, k.loc, k.idx(0), numTiles, k.idx(1), ValueRange{},
      [&](OpBuilder &lb, Location, Value i, ValueRange) {
        OpBuilder::InsertionGuard lg(k.b);
        k.b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
        SmallVector<Value> loaded = loadSideOf(hooks, i, t0);
        Value stage = acquireStage(empty, i);
        hooks.issue(i, stage, WgmmaKVPart::KV);
        annotateStage(hooks, stage, i, t0, loaded);
        auto ifPrev = scf::IfOp::create(
            k.b, k.loc, k.cmp(arith::CmpIPredicate::uge, i, k.idx(1)), false);
        OpBuilder::InsertionGuard g(k.b);
        k.b.setInsertionPointToStart(ifPrev.thenBlock());
        publish(k.sub(i, k.idx(1)), 1);
        k.b.setInsertionPointAfter(ifPrev);
        scf::YieldOp::create(k.b, k.loc);
      });
  auto ifAny = scf::IfOp::create(
      k.b, k.loc, k.cmp(arith::CmpIPredicate::ugt, numTiles, k.idx(0)), false);
  OpBuilder::InsertionGuard g(k.b);
  k.b.setInsertionPointToStart(ifAny.thenBlock());
  publish(k.sub(numTiles, k.idx(1)), 0);
}

void WgmmaMainloop::produceSplit(Value numTiles, Value t0,
                                 const WgmmaProducerHooks &hooks) {
  // The parts are issued K_0, K_1, V_0, K_2, V_1, ..., K_{n-1}, V_{n-2},
  // V_{n-1}, each its own cp.async group (groups complete in the order they
  // were committed). After each part is issued, cp.async.wait_group 1
  // leaves only that part's group in flight: every older part landed, and
  // the one issued just before is published (K through `full`, with the
  // prepare hook, V through `fullV`):
  //   prologue         issue K_0; wait 0      -> publish K_0
  //   loop j = 1..n-1  issue K_j; wait 1      -> publish V_{j-2} (j >= 2)
  //                    issue V_{j-1}; wait 1  -> publish K_j
  //   tail             issue V_{n-1}; wait 1  -> publish V_{n-2} (n >= 2)
  //                    wait 0                 -> publish V_{n-1}
  // So K_j is published after V_{j-1} was issued (which waits for the
  // release of V_{j-1-stages}, at the end of the consumers' iteration
  // j - stages) and V_{j-1} after K_{j+1} was issued (which waits for the
  // release of K_{j+1-stages}, early in iteration j + 1 - stages): with two
  // or more stages the consumers' iteration j never waits for their own
  // iteration j - 1 to end, where one ring waits for it.
  auto issue = [&](Value emptyRing, Value i, WgmmaKVPart part) {
    // The side data goes with K (its ring's `full`).
    bool side = part == WgmmaKVPart::K;
    SmallVector<Value> loaded;
    if (side)
      loaded = loadSideOf(hooks, i, t0);
    Value stage = acquireStage(emptyRing, i);
    hooks.issue(i, stage, part);
    if (side)
      annotateStage(hooks, stage, i, t0, loaded);
  };
  auto waitPending = [&](int64_t pending) {
    NVVM::CpAsyncWaitGroupOp::create(k.b, k.loc, pending);
  };
  auto publishK = [&](Value j) { publishStage(full, j, t0, hooks.prepare); };
  auto publishV = [&](Value j) { publishStage(fullV, j, t0, nullptr); };
  auto ifThen = [&](Value cond, function_ref<void()> body) {
    auto ifOp = scf::IfOp::create(k.b, k.loc, cond, /*withElse=*/false);
    OpBuilder::InsertionGuard g(k.b);
    k.b.setInsertionPointToStart(ifOp.thenBlock());
    body();
  };
  Value any = k.cmp(arith::CmpIPredicate::ugt, numTiles, k.idx(0));
  ifThen(any, [&] {
    issue(empty, k.idx(0), WgmmaKVPart::K);
    waitPending(0);
    publishK(k.idx(0));
  });
  scf::ForOp::create(k.b, k.loc, k.idx(1), numTiles, k.idx(1), ValueRange{},
                     [&](OpBuilder &lb, Location, Value j, ValueRange) {
                       OpBuilder::InsertionGuard lg(k.b);
                       k.b.setInsertionPoint(lb.getInsertionBlock(),
                                             lb.getInsertionPoint());
                       issue(empty, j, WgmmaKVPart::K);
                       waitPending(1);
                       ifThen(k.cmp(arith::CmpIPredicate::uge, j, k.idx(2)),
                              [&] { publishV(k.sub(j, k.idx(2))); });
                       issue(emptyV, k.sub(j, k.idx(1)), WgmmaKVPart::V);
                       waitPending(1);
                       publishK(j);
                       scf::YieldOp::create(k.b, k.loc);
                     });
  ifThen(any, [&] {
    Value last = k.sub(numTiles, k.idx(1));
    issue(emptyV, last, WgmmaKVPart::V);
    waitPending(1);
    ifThen(k.cmp(arith::CmpIPredicate::uge, numTiles, k.idx(2)),
           [&] { publishV(k.sub(numTiles, k.idx(2))); });
    waitPending(0);
    publishV(last);
  });
}

Value WgmmaMainloop::issueScores(Value stage) {
  const MmaTiles &t = tiles;
  // This warpgroup's 64 rows of Q (8-row-aligned: whole swizzle atoms) and
  // the stage's K, panel by panel, 16 columns a step.
  Value wg = k.sub(k.threadId(gpu::Dimension::y), k.idx(1));
  Value qBase = address(k.mul(wg, k.idx(64 * kPanelCols)));
  Value kBase = address(t.kRing().stage(k, stage));
  Value acc = wgmmaZeroAccumulator(k, t.kvTile);
  wgmmaFence(k);
  // 32 bytes of a row a step: dp / 16 steps of k16, dp / 32 of fp8's k32.
  int64_t rowBytes = t.fp8Operands ? t.dp : 2 * t.dp;
  for (int64_t kk = 0; kk < rowBytes / kK16Bytes; ++kk) {
    int64_t panel = kk / 4, inPanel = (kk % 4) * kK16Bytes;
    Value qAddr =
        k.add(qBase, k.i64(panel * t.qLayout.panelElements() * 2 + inPanel));
    Value kAddr =
        k.add(kBase, k.i64(panel * t.kvLayout.panelElements() * 2 + inPanel));
    Value descQ = wgmmaDescriptor(k, qAddr, kUnusedLeadingBytes,
                                  kSwizzleGroupBytes, wgmma::Swizzle::B128);
    Value descK = wgmmaDescriptor(k, kAddr, kUnusedLeadingBytes,
                                  kSwizzleGroupBytes, wgmma::Swizzle::B128);
    acc = wgmmaMmaAsync(k, acc, descQ, descK, t.kvTile, elementType,
                        /*accumulate=*/kk > 0);
  }
  wgmmaCommitGroup(k);
  return acc;
}

Value WgmmaMainloop::issuePV(ArrayRef<Value> pA, Value stage,
                             ArrayRef<Value> o) {
  const MmaTiles &t = tiles;
  Value vBase = address(t.vRing().stage(k, stage));
  Value acc = wgmmaFenceOperand(k, wgmmaFragmentsToAccumulator(k, o));
  if (t.fp8Operands) {
    // V transposed, [d][key] in panels of 128 keys, is K-major for P.V like
    // K for Q.K^T: 8-row groups 1024 bytes apart, a k32 step 32 bytes.
    SmallVector<SmallVector<Value>> a;
    for (size_t j = 0; j + 1 < pA.size(); j += 2)
      a.push_back(wgmmaFp8ARegisters(k, pA[j], pA[j + 1], elementType));
    wgmmaFence(k);
    for (int64_t kk = 0; kk < t.kvTile / 32; ++kk) {
      int64_t panel = kk / 4, inPanel = (kk % 4) * kK16Bytes;
      Value vAddr =
          k.add(vBase, k.i64(panel * t.vtLayout.panelElements() * 2 + inPanel));
      Value descV = wgmmaDescriptor(k, vAddr, kUnusedLeadingBytes,
                                    kSwizzleGroupBytes, wgmma::Swizzle::B128);
      acc = wgmmaMmaAsyncRegA(k, acc, a[kk], descV, t.dp, elementType,
                              WgmmaMajor::K);
    }
    wgmmaCommitGroup(k);
    return acc;
  }
  // V stored [key][d] in panels is MN-major for P.V: 8-key groups 1024
  // bytes apart (stride byte offset), panels of 64 columns one panel's
  // bytes apart (leading byte offset); a k16 step is 16 keys of 128 bytes.
  SmallVector<SmallVector<Value>> a;
  for (Value p : pA)
    a.push_back(wgmmaARegisters(k, p));
  wgmmaFence(k);
  for (int64_t kk = 0; kk < t.kvTile / 16; ++kk) {
    Value vAddr = k.add(vBase, k.i64(kk * 16 * 2 * kPanelCols));
    Value descV = wgmmaDescriptor(k, vAddr, t.vLayout.panelElements() * 2,
                                  kSwizzleGroupBytes, wgmma::Swizzle::B128);
    acc = wgmmaMmaAsyncRegA(k, acc, a[kk], descV, t.dvp, elementType,
                            WgmmaMajor::MN);
  }
  wgmmaCommitGroup(k);
  return acc;
}

SmallVector<Value> WgmmaMainloop::fragmentsOf(Value acc, int64_t n) {
  return wgmmaAccumulatorToFragments(k, wgmmaFenceOperand(k, acc), n);
}

/// Builds an scf.if on `cond` whose branches yield the values of `types`
/// that `then` and `otherwise` return.
static SmallVector<Value> ifElse(KernelBuilder &k, Value cond, TypeRange types,
                                 function_ref<SmallVector<Value>()> then,
                                 function_ref<SmallVector<Value>()> otherwise) {
  auto ifOp = scf::IfOp::create(k.b, k.loc, types, cond, /*withElse=*/true);
  OpBuilder::InsertionGuard g(k.b);
  k.b.setInsertionPointToStart(ifOp.thenBlock());
  scf::YieldOp::create(k.b, k.loc, then());
  k.b.setInsertionPointToStart(ifOp.elseBlock());
  scf::YieldOp::create(k.b, k.loc, otherwise());
  return SmallVector<Value>(ifOp.getResults());
}

/// What an iteration of the consumers' loop yields: O, m, l and P.
static SmallVector<Value> loopValues(ArrayRef<Value> o, const MmaState &st,
                                     ArrayRef<Value> pA) {
  SmallVector<Value> v(o);
  llvm::append_range(v, st.m);
  llvm::append_range(v, st.l);
  llvm::append_range(v, pA);
  return v;
}

WgmmaMainloop::ConsumerLoop::ConsumerLoop(WgmmaMainloop &loop, Value t0,
                                          TransformFn transform,
                                          const TileSideData *side)
    : mma(loop.k, loop.pType, loop.thread.lane),
      softmax(loop.k, loop.tiles, loop.pType, loop.expScale),
      transform(transform), side(side), t0(t0),
      skips(side && static_cast<bool>(side->shown)) {}

SmallVector<Value> WgmmaMainloop::scoresOf(ConsumerLoop &c, Value i, Value acc,
                                           ValueRange side) {
  Value tileStart = k.add(c.t0, k.mul(i, k.idx(tiles.kvTile)));
  return c.transform(fragmentsOf(acc, tiles.kvTile), tileStart, side);
}

SmallVector<Value> WgmmaMainloop::sideOf(ConsumerLoop &c, Value stage) {
  return c.side ? c.side->read(stage) : SmallVector<Value>();
}

SmallVector<Value> WgmmaMainloop::zeroP(ConsumerLoop &c) {
  SmallVector<Value> z;
  for (int64_t i = 0; i < tiles.kvTile / 16; ++i)
    z.push_back(arith::ConstantOp::create(
        k.b, k.loc, c.mma.aType(),
        DenseElementsAttr::get(c.mma.aType(), k.b.getFloatAttr(pType, 0.0))));
  return z;
}

SmallVector<Value> WgmmaMainloop::firstTile(ConsumerLoop &c,
                                            const MmaState &initial) {
  auto [stage, parity] = stageAndParity(k.idx(0));
  // (Tile 0 is computed whatever its verdict: the first keys are rarely
  // hidden from a whole warpgroup.)
  waitFull(stage, parity);
  SmallVector<Value> side0 = sideOf(c, stage);
  giveFirstTurn();
  waitTurn();
  Value s = issueScores(stage);
  passTurn();
  wgmmaWaitGroup(k, 0);
  if (splitKV)
    mbarrierArrive(k, empty, stage); // K_0 is read
  MmaState st = initial;
  MmaSoftmax::Step p =
      c.softmax.softmax(c.mma, scoresOf(c, k.idx(0), s, side0), st);
  return loopValues({}, st, p.pA);
}

SmallVector<Value> WgmmaMainloop::computeTile(ConsumerLoop &c,
                                              const ConsumerStep &step) {
  waitTurn();
  Value s = issueScores(step.stage);
  Value o = issuePV(step.pPrev, step.prevStage, step.state.o);
  passTurn();
  wgmmaWaitGroup(k, 1);
  // Split barriers: S_i completed (the older group), K_i is read.
  if (splitKV)
    mbarrierArrive(k, empty, step.stage);
  MmaState sti = step.state;
  MmaSoftmax::Step p =
      c.softmax.softmax(c.mma, scoresOf(c, step.i, s, step.side), sti);
  wgmmaWaitGroup(k, 0);
  // With skips, P_{i-1}'s registers stay allocated until P_{i-1} V_{i-1}
  // completed: P is a zero constant on the skipping path, and LLVM would
  // otherwise build P_i in the registers the wgmma still reads (ptxas then
  // serializes the pipeline, C7513). Without this the masked kernels ran
  // 17-20% slower on the H200 even where ptxas 13.0 printed no warning.
  if (c.skips)
    for (Value pa : step.pPrev)
      wgmmaKeepRegisters(k, wgmmaARegisters(k, pa));
  sti.o = fragmentsOf(o, tiles.dvp);
  mbarrierArrive(k, splitKV ? emptyV : empty, step.prevStage);
  c.softmax.rescale(c.mma, p, sti.o);
  return loopValues(sti.o, sti, p.pA);
}

SmallVector<Value> WgmmaMainloop::skipTile(ConsumerLoop &c,
                                           const ConsumerStep &step) {
  waitTurn();
  SmallVector<Type> oTypes(tiles.oTiles, c.mma.accType());
  SmallVector<Value> oNext = ifElse(
      k, step.pending, oTypes,
      [&] {
        Value o = issuePV(step.pPrev, step.prevStage, step.state.o);
        passTurn();
        wgmmaWaitGroup(k, 0);
        return fragmentsOf(o, tiles.dvp);
      },
      [&] {
        passTurn();
        return SmallVector<Value>(step.state.o);
      });
  if (splitKV)
    mbarrierArrive(k, empty, step.stage); // K_i is not read
  mbarrierArrive(k, splitKV ? emptyV : empty, step.prevStage);
  return loopValues(oNext, step.state, zeroP(c));
}

MmaState WgmmaMainloop::consume(Value numTiles, Value t0, TransformFn transform,
                                const TileSideData *side) {
  const MmaTiles &t = tiles;
  OpBuilder &b = k.b;
  ConsumerLoop c(*this, t0, transform, side);
  int64_t nO = t.oTiles, nM = 2, nP = t.kvTile / 16;
  Type i1 = b.getI1Type();
  auto flag = [&](bool v) {
    return arith::ConstantIntOp::create(b, k.loc, i1, v).getResult();
  };

  // Prologue: the softmax of tile 0 (O is still zero: nothing to rescale).
  // The loop carries O, m, l, P and, with skips, whether P is still to be
  // multiplied (false after a skipped tile, whose P is zero).
  MmaState state;
  for (int64_t i = 0; i < nO; ++i)
    state.o.push_back(c.mma.zeroAccumulator());
  state.m.assign(nM, k.negInf());
  state.l.assign(nM, k.f32(0.0));
  SmallVector<Type> headTypes(2 * nM, k.b.getF32Type());
  headTypes.append(nP, c.mma.aType());
  if (c.skips)
    headTypes.push_back(i1);
  auto ifAny = scf::IfOp::create(
      b, k.loc, headTypes, k.cmp(arith::CmpIPredicate::ugt, numTiles, k.idx(0)),
      true);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifAny.thenBlock());
    SmallVector<Value> yields = firstTile(c, state);
    if (c.skips)
      yields.push_back(flag(true));
    scf::YieldOp::create(b, k.loc, yields);
    b.setInsertionPointToStart(ifAny.elseBlock());
    // m, l and a zero P: the state before any tile.
    SmallVector<Value> none = loopValues({}, state, zeroP(c));
    if (c.skips)
      none.push_back(flag(false));
    scf::YieldOp::create(b, k.loc, none);
  }

  // Tiles 1 .. n-1: S_i and P_{i-1} V_{i-1} in flight together. A tile
  // shown to the warpgroup is computed (computeTile; after a skipped tile
  // P_{i-1} is zero: its P V adds nothing, one wasted P V a run of skipped
  // tiles); a tile hidden from all its rows is skipped (skipTile).
  SmallVector<Value> init(state.o);
  llvm::append_range(init, ifAny.getResults());
  SmallVector<Type> stateTypes;
  for (Value v : init)
    stateTypes.push_back(v.getType());
  stateTypes.resize(nO + 2 * nM + nP);
  auto loop = scf::ForOp::create(
      b, k.loc, k.idx(1), numTiles, k.idx(1), init,
      [&](OpBuilder &lb, Location, Value i, ValueRange it) {
        OpBuilder::InsertionGuard lg(b);
        b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
        ConsumerStep step;
        step.i = i;
        step.state.o.assign(it.begin(), it.begin() + nO);
        step.state.m.assign(it.begin() + nO, it.begin() + nO + nM);
        step.state.l.assign(it.begin() + nO + nM, it.begin() + nO + 2 * nM);
        step.pPrev.assign(it.begin() + nO + 2 * nM,
                          it.begin() + nO + 2 * nM + nP);
        step.pending = c.skips ? it.back() : Value();
        Value parity;
        std::tie(step.stage, parity) = stageAndParity(i);
        if (splitKV) {
          // K_i and V_{i-1} are published apart.
          Value prevParity;
          std::tie(step.prevStage, prevParity) =
              stageAndParity(k.sub(i, k.idx(1)));
          mbarrierWait(k, full, step.stage, parity);
          mbarrierWait(k, fullV, step.prevStage, prevParity);
        } else {
          step.prevStage = k.rem(k.sub(i, k.idx(1)), k.idx(t.stages));
          waitFull(step.stage, parity);
        }
        step.side = sideOf(c, step.stage);
        if (!c.skips) {
          scf::YieldOp::create(b, k.loc, computeTile(c, step));
          return;
        }
        Value shown = side->shown(step.side);
        SmallVector<Value> yields = ifElse(
            k, shown, stateTypes, [&] { return computeTile(c, step); },
            [&] { return skipTile(c, step); });
        yields.push_back(shown);
        scf::YieldOp::create(b, k.loc, yields);
      });

  // The last tile's P V.
  ValueRange res = loop.getResults();
  MmaState out;
  out.o.assign(res.begin(), res.begin() + nO);
  out.m.assign(res.begin() + nO, res.begin() + nO + nM);
  out.l.assign(res.begin() + nO + nM, res.begin() + nO + 2 * nM);
  SmallVector<Value> pLast(res.begin() + nO + 2 * nM,
                           res.begin() + nO + 2 * nM + nP);
  out.o = lastPV(numTiles, pLast, out.o, c.mma.accType(),
                 c.skips ? res.back() : Value());
  return out;
}

SmallVector<Value> WgmmaMainloop::lastPV(Value numTiles, ArrayRef<Value> pLast,
                                         ArrayRef<Value> o0, Type accType,
                                         Value pending) {
  const MmaTiles &t = tiles;
  OpBuilder &b = k.b;
  SmallVector<Type> oTypes(o0.size(), accType);
  auto ifLast = scf::IfOp::create(
      b, k.loc, oTypes, k.cmp(arith::CmpIPredicate::ugt, numTiles, k.idx(0)),
      true);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifLast.thenBlock());
    Value last = k.sub(numTiles, k.idx(1));
    Value lastStage;
    if (splitKV) {
      Value lastParity;
      std::tie(lastStage, lastParity) = stageAndParity(last);
      mbarrierWait(k, fullV, lastStage, lastParity);
    } else {
      lastStage = k.rem(last, k.idx(t.stages));
    }
    SmallVector<Value> frags;
    auto multiply = [&] {
      Value o = issuePV(pLast, lastStage, o0);
      wgmmaWaitGroup(k, 0);
      return fragmentsOf(o, t.dvp);
    };
    if (pending) {
      auto ifPending = scf::IfOp::create(b, k.loc, oTypes, pending,
                                         /*withElse=*/true);
      OpBuilder::InsertionGuard gp(b);
      b.setInsertionPointToStart(ifPending.thenBlock());
      scf::YieldOp::create(b, k.loc, multiply());
      b.setInsertionPointToStart(ifPending.elseBlock());
      scf::YieldOp::create(b, k.loc, o0);
      frags.assign(ifPending.getResults().begin(),
                   ifPending.getResults().end());
    } else {
      frags = multiply();
    }
    mbarrierArrive(k, splitKV ? emptyV : empty, lastStage);
    scf::YieldOp::create(b, k.loc, frags);
    b.setInsertionPointToStart(ifLast.elseBlock());
    scf::YieldOp::create(b, k.loc, o0);
  }
  return SmallVector<Value>(ifLast.getResults());
}
