//===- MmaSyncMainloop.cpp - The KV loop of attention on mma.sync ---------===//

#include "MmaSyncMainloop.h"

#include "cascade/Conversion/GPUCodegen/Fp8Convert.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::cascade;

/// How far (log2 units) a tile's row max may exceed the running max before
/// the running max, and with it O, is rescaled (FlashAttention-4's lazy
/// rescaling): exponents stay below 2^8.
static constexpr double kRescaleLog2 = 8.0;

MmaSyncTiles::MmaSyncTiles(const AttentionSpec &spec) {
  const KernelConfigAttr &cfg = spec.config;
  d = spec.headDim;
  dp = llvm::alignTo(d, 16);
  if (spec.family() == KernelFamily::Wgmma) {
    // Each consumer warp holds 16 rows of its warpgroup's 64 (the wgmma
    // accumulator is mma.sync's per warp) and every key of a tile.
    wgmma = true;
    warpsQ = 4 * cfg.getConsumerWarpgroups();
    warpsKV = 1;
    mTiles = 1;
    qTile = cfg.getQTile();
    kvTile = cfg.getKvTile();
    stages = cfg.getStages();
    kvPerWarp = kvTile;
    sTiles = kvTile / 8;
    oTiles = dp / 8;
    numThreads = 32 * warpsQ;
    qLayout = SmemTileLayout::getPanels(qTile, dp);
    kvLayout = SmemTileLayout::getPanels(kvTile, dp);
    kvRingStages = stages;
    return;
  }
  warpsQ = cfg.getWarpsQ();
  warpsKV = cfg.getWarpsKV();
  mTiles = cfg.getMmaTilesPerWarp();
  qTile = cfg.getQTile();
  kvTile = cfg.getKvTile();
  stages = cfg.getStages();
  kvPerWarp = kvTile / warpsKV;
  sTiles = kvPerWarp / 8;
  oTiles = dp / 8;
  numThreads = 32 * warpsQ * warpsKV;
  qLayout = SmemTileLayout::get(qTile, dp);
  kvLayout = SmemTileLayout::get(kvTile, dp);
  // fp8 decode: one converted K and V tile (more stages in flight for the
  // same shared memory) and, with one m16 tile at head_dim <= 128, Q in
  // registers. Prefill keeps a converted tile per stage: its 128-row tiles
  // use every register, and loop-invariant tile addresses would spill.
  bool fp8Decode = isFp8KVType(spec.kvType) && spec.decode;
  kvRingStages = fp8Decode ? 1 : stages;
  qInRegisters = fp8Decode && warpsQ == 1 && mTiles == 1 && dp <= 128;
}

MmaSyncThread MmaSyncThread::get(KernelBuilder &k, const MmaSyncTiles &t) {
  MmaSyncThread th;
  if (t.wgmma) {
    // Block [128, 1 + consumers]: x the thread of warpgroup y; consumer
    // warpgroup y - 1 holds rows [64 (y - 1), 64 y). Meaningless in the
    // producer warpgroup (y = 0), which does not use them.
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
  th.lane = k.threadId(gpu::Dimension::x);
  th.warpQ = k.threadId(gpu::Dimension::y);
  th.warpKV = k.threadId(gpu::Dimension::z);
  th.tid =
      k.add(th.lane, k.mul(k.add(th.warpQ, k.mul(th.warpKV, k.idx(t.warpsQ))),
                           k.idx(32)));
  th.kvHead = k.blockId(gpu::Dimension::y);
  th.warpRow0 = k.mul(th.warpQ, k.idx(16 * t.mTiles));
  return th;
}

MmaSyncMainloop::MmaSyncMainloop(KernelBuilder &k, const MmaSyncTiles &tiles,
                                 const MmaSyncThread &thread, Value smem,
                                 Type elementType, double expScale)
    : k(k), tiles(tiles), thread(thread), smem(smem), elementType(elementType),
      expScale(expScale) {}

SmallVector<Value> MmaSyncMainloop::loadQFragments(MmaBuilder &mma) {
  const MmaSyncTiles &t = tiles;
  SmallVector<Value> a;
  for (int64_t kk = 0; kk < t.dp / 16; ++kk)
    for (int64_t mt = 0; mt < t.mTiles; ++mt)
      a.push_back(mma.loadA(smem, k.idx(0), t.qLayout,
                            thread.localRow(k, mt, 0), kk * 16));
  return a;
}

SmallVector<Value> MmaSyncMainloop::scores(Value stage,
                                           ArrayRef<Value> qFrags) {
  const MmaSyncTiles &t = tiles;
  MmaBuilder mma(k, elementType, thread.lane);
  SmallVector<Value> acc(t.mTiles * t.sTiles, mma.zeroAccumulator());
  Value kb = t.kRing().stage(k, t.ringStage(k, stage));
  Value key0 = k.mul(thread.warpKV, k.idx(t.kvPerWarp));
  for (int64_t kk = 0; kk < t.dp / 16; ++kk) {
    SmallVector<Value> a;
    for (int64_t mt = 0; mt < t.mTiles; ++mt)
      a.push_back(!qFrags.empty()
                      ? qFrags[kk * t.mTiles + mt]
                      : mma.loadA(smem, k.idx(0), t.qLayout,
                                  thread.localRow(k, mt, 0), kk * 16));
    for (int64_t np = 0; np < t.sTiles / 2; ++np) {
      auto [b0, b1] = mma.loadBFromNK(smem, kb, t.kvLayout,
                                      k.add(key0, k.idx(np * 16)), kk * 16);
      for (int64_t mt = 0; mt < t.mTiles; ++mt) {
        Value &s0 = acc[mt * t.sTiles + 2 * np];
        Value &s1 = acc[mt * t.sTiles + 2 * np + 1];
        s0 = mma.mma(a[mt], b0, s0);
        s1 = mma.mma(a[mt], b1, s1);
      }
    }
  }
  return acc;
}

MmaSyncMainloop::Softmax MmaSyncMainloop::softmax(MmaBuilder &mma,
                                                  ArrayRef<Value> s,
                                                  MmaSyncState &state) {
  const MmaSyncTiles &t = tiles;
  SmallVector<Value> &m = state.m, &l = state.l;
  Softmax out;
  SmallVector<Value> p(s.size());
  out.pA.resize(s.size() / 2);
  for (int64_t mt = 0; mt < t.mTiles; ++mt) {
    ArrayRef<Value> rowFrags = s.slice(mt * t.sTiles, t.sTiles);
    RowPair tileMax = rowReduce(k, rowFrags, /*max=*/true);
    RowPair alpha, negMScaled;
    for (int64_t pair = 0; pair < 2; ++pair) {
      int64_t r = mt * 2 + pair;
      // The running max m moves only when the tile's max exceeds it by
      // more than kRescaleLog2 (exp2 units): exponents stay <= 2^8 (exact
      // in f32, and in f16/bf16 P as precise as any value), and O is
      // rescaled on few tiles instead of on most. With m = -inf any finite
      // max moves it (+inf > threshold); -inf - -inf = NaN compares false
      // and keeps it.
      Value grow = k.fcmp(arith::CmpFPredicate::OGT,
                          k.fmul(k.fsub(tileMax[pair], m[r]), k.f32(expScale)),
                          k.f32(kRescaleLog2));
      Value mNew = k.select(grow, tileMax[pair], m[r]);
      // A row with no visible key yet keeps m = -inf; exponents then use 0
      // so that no -inf - -inf appears.
      Value mUse = k.select(k.isNegInf(mNew), k.f32(0.0), mNew);
      Value mScaled = k.fmul(mUse, k.f32(expScale));
      alpha[pair] = k.ex2(k.fsub(k.fmul(m[r], k.f32(expScale)), mScaled));
      negMScaled[pair] = k.fsub(k.f32(0.0), mScaled);
      // O needs rescaling where m moved from a finite value (a row whose m
      // was -inf has O = 0; where m stays, alpha = 1 exactly).
      Value moved = arith::AndIOp::create(
          k.b, k.loc, grow,
          k.cmp(arith::CmpIPredicate::eq, k.isNegInf(m[r]),
                arith::ConstantIntOp::create(k.b, k.loc, false, 1)));
      m[r] = mNew;
      l[r] = k.fmul(l[r], alpha[pair]);
      out.rescale =
          out.rescale
              ? Value(arith::OrIOp::create(k.b, k.loc, out.rescale, moved))
              : moved;
    }
    for (int64_t n = 0; n < t.sTiles; ++n) {
      int64_t idx = mt * t.sTiles + n;
      p[idx] = mapAccumulator(k, s[idx], [&](Value x, int64_t pair, int64_t) {
        return k.ex2(expScale == 1.0
                         ? k.fadd(x, negMScaled[pair])
                         : k.fma(x, k.f32(expScale), negMScaled[pair]));
      });
    }
    RowPair sum = rowReduceInThread(
        k, ArrayRef<Value>(p).slice(mt * t.sTiles, t.sTiles), false);
    for (int64_t pair = 0; pair < 2; ++pair)
      l[mt * 2 + pair] = k.fadd(l[mt * 2 + pair], sum[pair]);
    out.alphas.push_back(alpha);
    // P as A operands of P.V right away: half the registers of the f32
    // values, which would otherwise live through the rescale.
    for (int64_t kk = 0; kk < t.sTiles / 2; ++kk)
      out.pA[kk * t.mTiles + mt] = mma.accumulatorsToA(
          p[mt * t.sTiles + 2 * kk], p[mt * t.sTiles + 2 * kk + 1]);
  }
  return out;
}

void MmaSyncMainloop::rescale(MmaBuilder &mma, const Softmax &p,
                              SmallVector<Value> &o) {
  // Rescale O only when some row of the warp has a new maximum (after the
  // first tiles, most tiles leave every maximum where it was).
  OpBuilder &b = k.b;
  Value any = warpAny(k, p.rescale);
  SmallVector<Type> accTypes(o.size(), mma.accType());
  auto ifScale = scf::IfOp::create(b, k.loc, accTypes, any,
                                   /*withElse=*/true);
  OpBuilder::InsertionGuard ig(b);
  b.setInsertionPointToStart(ifScale.thenBlock());
  SmallVector<Value> scaled;
  for (int64_t mt = 0; mt < tiles.mTiles; ++mt)
    for (int64_t n = 0; n < tiles.oTiles; ++n)
      scaled.push_back(scaleRows(k, o[mt * tiles.oTiles + n], p.alphas[mt]));
  scf::YieldOp::create(b, k.loc, scaled);
  b.setInsertionPointToStart(ifScale.elseBlock());
  scf::YieldOp::create(b, k.loc, o);
  o.assign(ifScale.getResults().begin(), ifScale.getResults().end());
}

void MmaSyncMainloop::accumulatePV(MmaBuilder &mma, ArrayRef<Value> pA,
                                   Value stage, SmallVector<Value> &o) {
  const MmaSyncTiles &t = tiles;
  Value vb = t.vRing().stage(k, t.ringStage(k, stage));
  Value key0 = k.mul(thread.warpKV, k.idx(t.kvPerWarp));
  for (int64_t kk = 0; kk < t.sTiles / 2; ++kk) {
    ArrayRef<Value> pa = pA.slice(kk * t.mTiles, t.mTiles);
    for (int64_t np = 0; np < t.oTiles / 2; ++np) {
      auto [b0, b1] = mma.loadBFromKN(smem, vb, t.kvLayout,
                                      k.add(key0, k.idx(kk * 16)), np * 16);
      for (int64_t mt = 0; mt < t.mTiles; ++mt) {
        Value &o0 = o[mt * t.oTiles + 2 * np];
        Value &o1 = o[mt * t.oTiles + 2 * np + 1];
        o0 = mma.mma(pa[mt], b0, o0);
        o1 = mma.mma(pa[mt], b1, o1);
      }
    }
  }
}

SmallVector<Value> MmaSyncMainloop::step(MmaBuilder &mma, Value i,
                                         ValueRange it, Value t0, Value qGroup,
                                         const MmaSyncTileHooks &hooks,
                                         ArrayRef<Value> qFrags) {
  const MmaSyncTiles &t = tiles;
  int64_t nO = t.mTiles * t.oTiles, nM = 2 * t.mTiles;
  MmaSyncState state;
  state.o.assign(it.begin(), it.begin() + nO);
  state.m.assign(it.begin() + nO, it.begin() + nO + nM);
  state.l.assign(it.begin() + nO + nM, it.begin() + nO + 2 * nM);
  SmallVector<Value> carried(it.begin() + nO + 2 * nM, it.end());

  // Tile i has landed (at most S-2 younger groups pending) and every warp is
  // done with tile i-1, whose stage the next copy reuses.
  waitGroups(k, qGroup, t.stages - 2);
  gpu::BarrierOp::create(k.b, k.loc);
  SmallVector<Value> nextCarried = hooks.produce(i, carried);

  Value stage = k.rem(i, k.idx(t.stages));
  Value tileStart = k.add(t0, k.mul(i, k.idx(t.kvTile)));
  if (hooks.prepare)
    hooks.prepare(stage, tileStart);
  SmallVector<Value> s = hooks.transform(scores(stage, qFrags), tileStart);
  Softmax p = softmax(mma, s, state);
  rescale(mma, p, state.o);
  accumulatePV(mma, p.pA, stage, state.o);

  SmallVector<Value> yields(state.o);
  llvm::append_range(yields, state.m);
  llvm::append_range(yields, state.l);
  llvm::append_range(yields, nextCarried);
  return yields;
}

MmaSyncState MmaSyncMainloop::run(Value numTiles, Value t0, Value qGroup,
                                  const MmaSyncTileHooks &hooks) {
  const MmaSyncTiles &t = tiles;
  OpBuilder &b = k.b;
  MmaBuilder mma(k, elementType, thread.lane);
  SmallVector<Value> init;
  for (int64_t i = 0; i < t.mTiles * t.oTiles; ++i)
    init.push_back(mma.zeroAccumulator());
  for (int64_t i = 0; i < 2 * t.mTiles; ++i)
    init.push_back(k.negInf()); // running max (raw score units)
  for (int64_t i = 0; i < 2 * t.mTiles; ++i)
    init.push_back(k.f32(0.0)); // this thread's part of the row sums
  llvm::append_range(init, hooks.carriedInit());
  SmallVector<Value> qFrags;
  if (t.qInRegisters) {
    // The Q tile (the oldest copy group) has landed in every thread's part
    // (the tiles of the prologue may still be in flight).
    waitGroups(k, qGroup, t.stages - 1);
    gpu::BarrierOp::create(b, k.loc);
    qFrags = loadQFragments(mma);
  }

  auto loop = scf::ForOp::create(
      b, k.loc, k.idx(0), numTiles, k.idx(1), init,
      [&](OpBuilder &lb, Location, Value i, ValueRange it) {
        OpBuilder::InsertionGuard lg(b);
        b.setInsertionPoint(lb.getInsertionBlock(), lb.getInsertionPoint());
        scf::YieldOp::create(b, k.loc,
                             step(mma, i, it, t0, qGroup, hooks, qFrags));
      });
  // Drain the copies still in flight (zero-filled tiles past the end).
  waitGroups(k, qGroup, 0);
  int64_t nO = t.mTiles * t.oTiles, nM = 2 * t.mTiles;
  ValueRange res = loop.getResults();
  MmaSyncState out;
  out.o.assign(res.begin(), res.begin() + nO);
  out.m.assign(res.begin() + nO, res.begin() + nO + nM);
  out.l.assign(res.begin() + nO + nM, res.begin() + nO + 2 * nM);
  return out;
}
