//===- MmaSyncMainloop.cpp - The KV loop of attention on mma.sync ---------===//

#include "mma_sync/MmaSyncMainloop.h"

#include "cascade/Conversion/GPUCodegen/Fp8Convert.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::cascade;

MmaTiles mlir::cascade::mmaSyncTiles(const AttentionSpec &spec) {
  const KernelConfigAttr &cfg = spec.config;
  MmaTiles t;
  t.d = spec.headDim;
  t.dp = llvm::alignTo(t.d, 16);
  t.warpsQ = cfg.getWarpsQ();
  t.warpsKV = cfg.getWarpsKV();
  t.mTiles = cfg.getMmaTilesPerWarp();
  t.qTile = cfg.getQTile();
  t.kvTile = cfg.getKvTile();
  t.stages = cfg.getStages();
  t.kvPerWarp = t.kvTile / t.warpsKV;
  t.sTiles = t.kvPerWarp / 8;
  // O's n8 tiles cover v's head_dim (a narrower v: fewer than K's).
  t.oTiles = llvm::alignTo(spec.headDimVo, 16) / 8;
  t.numThreads = 32 * t.warpsQ * t.warpsKV;
  t.qLayout = SmemTileLayout::get(t.qTile, t.dp);
  t.kvLayout = SmemTileLayout::get(t.kvTile, t.dp);
  t.vLayout = t.kvLayout;
  t.dvp = t.dp;
  // fp8 decode: one converted K and V tile (more stages in flight for the
  // same shared memory) and, with one m16 tile at head_dim <= 128, Q in
  // registers. Prefill keeps a converted tile per stage: its 128-row tiles
  // use every register, and loop-invariant tile addresses would spill.
  bool fp8Decode = isFp8KVType(spec.kvType) && spec.decode;
  t.kvRingStages = fp8Decode ? 1 : t.stages;
  t.qInRegisters = fp8Decode && t.warpsQ == 1 && t.mTiles == 1 && t.dp <= 128;
  t.fp8DirectK = spec.fp8DirectK;
  t.fp8DirectV = spec.fp8DirectV;
  t.exp2Emulation = spec.config.getExp2Emulation();
  assert((!t.fp8DirectK || t.qInRegisters) &&
         "fp8DirectK keeps Q in registers");
  assert((!t.fp8DirectV || (t.fp8DirectK && t.d % 32 == 0)) &&
         "fp8DirectV: fp8DirectK at head_dim 32, 64 or 128");
  // Decode packs one request's query heads into rows 0..G-1.
  t.upperRowsEmpty =
      spec.decode && t.warpsQ == 1 && t.mTiles == 1 && spec.groupSize <= 8;
  t.kRingStages = t.fp8DirectK ? 0 : t.kvRingStages;
  t.vRingStages = t.fp8DirectV ? 0 : t.kvRingStages;
  return t;
}

MmaThread mlir::cascade::mmaSyncThread(KernelBuilder &k, const MmaTiles &t) {
  MmaThread th;
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

MmaSyncMainloop::MmaSyncMainloop(KernelBuilder &k, const MmaTiles &tiles,
                                 const MmaThread &thread, Value smem,
                                 Type elementType, ExpScale expScale)
    : k(k), tiles(tiles), thread(thread), smem(smem), elementType(elementType),
      online(k, tiles, elementType, expScale) {}

SmallVector<Value> MmaSyncMainloop::loadQFragments(MmaBuilder &mma) {
  const MmaTiles &t = tiles;
  SmallVector<Value> a;
  for (int64_t kk = 0; kk < t.dp / 16; ++kk)
    for (int64_t mt = 0; mt < t.mTiles; ++mt)
      a.push_back(mma.loadA(smem, k.idx(0), t.qLayout,
                            thread.localRow(k, mt, 0), kk * 16));
  return a;
}

// fp8DirectK. The dot products of S = Q K^T do not change when the same
// permutation of head_dim is applied to Q and to K. Inside each block of 16
// columns (k step kb, dims 16 kb ..), mma.m16n8k16 fragment position (the k
// index of the A and B operands, MmaLayout.h) p takes dim pi(p):
//   pi(2c + e) = 4c + e,  pi(2c + 8 + e) = 4c + 2 + e   (c < 4, e < 2),
// a bijection of [0, 16). Lane l (g = l / 4, c = l % 4) then holds
// - B (K^T): b0 = {B[2c][g], B[2c+1][g]} = K[key g][16 kb + 4c + {0, 1}],
//   b1 = {B[2c+8][g], B[2c+9][g]} = K[key g][16 kb + 4c + {2, 3}]: the four
//   consecutive fp8 bytes 16 kb + 4c .. + 3 of key g's row, one 32-bit
//   shared load and two cvt.rn.f16x2.{e4m3x2,e5m2x2};
// - A (Q): a0 = {A[g][2c], A[g][2c+1]} = Q[g][16 kb + 4c + {0, 1}],
//   a1 = the same of row g + 8, a2 = {A[g][2c+8], A[g][2c+9]} =
//   Q[g][16 kb + 4c + {2, 3}], a3 = the same of row g + 8: four
//   consecutive f16/bf16 of rows g and g + 8, one 8-byte load each.
// The accumulator layout is untouched (it indexes rows and keys only).

/// The fragment of type `t` (vector<R x 2 x T>) whose pair r is elements
/// 2 r, 2 r + 1 of the 1-D vector `flat`.
static Value pairsToFragment(KernelBuilder &k, Value flat, VectorType t) {
  Value frag = arith::ConstantOp::create(
      k.b, k.loc, t,
      DenseElementsAttr::get(t, k.b.getZeroAttr(t.getElementType())));
  for (int64_t r = 0; r < t.getDimSize(0); ++r) {
    Value pair = vector::ShuffleOp::create(k.b, k.loc, flat, flat,
                                           ArrayRef<int64_t>{2 * r, 2 * r + 1});
    frag = vector::InsertOp::create(k.b, k.loc, pair, frag, r);
  }
  return frag;
}

SmallVector<Value> MmaSyncMainloop::loadPermutedQFragments(MmaBuilder &mma) {
  const MmaTiles &t = tiles;
  assert(t.mTiles == 1 && t.dp == t.d && "one m16 tile, head_dim % 16 == 0");
  Value g = k.div(thread.lane, k.idx(4)), c = k.rem(thread.lane, k.idx(4));
  // Dims 16 kb + 4c .. + 3 are elements 4 (c % 2) .. of chunk 2 kb + c / 2.
  Value chunkInBlock = k.div(c, k.idx(2));
  Value inChunk = k.mul(k.rem(c, k.idx(2)), k.idx(4));
  Value row0 = k.add(thread.localRow(k, 0, 0), g);
  Value row1 = k.add(thread.localRow(k, 0, 1), g);
  auto v4 = VectorType::get({4}, elementType);
  SmallVector<Value> a;
  for (int64_t kb = 0; kb < t.dp / 16; ++kb) {
    Value chunk = k.add(k.idx(2 * kb), chunkInBlock);
    auto load = [&](Value row) {
      Value off = k.add(t.qLayout.chunkOffset(k, row, chunk), inChunk);
      return vector::LoadOp::create(k.b, k.loc, v4, smem, ValueRange{off},
                                    /*nontemporal=*/false, llvm::Align(8))
          .getResult();
    };
    Value top = load(row0), bottom = load(row1);
    // a0 = top[0:2], a1 = bottom[0:2], a2 = top[2:4], a3 = bottom[2:4].
    Value flat = vector::ShuffleOp::create(
        k.b, k.loc, top, bottom, ArrayRef<int64_t>{0, 1, 4, 5, 2, 3, 6, 7});
    a.push_back(pairsToFragment(k, flat, mma.aType()));
  }
  return a;
}

SmallVector<Value> MmaSyncMainloop::scoresFromFp8K(MmaBuilder &mma, Value stage,
                                                   ArrayRef<Value> qFrags) {
  const MmaTiles &t = tiles;
  SmallVector<Value> acc(t.sTiles, mma.zeroAccumulator());
  Type fp8 = cast<MemRefType>(fp8KStaging.getType()).getElementType();
  // The lane's byte in the rows r0 + g of an n8 tile, chunk 0; chunk kb is
  // this offset xor 16 kb (fp8KStagingOffset).
  Value g = k.div(thread.lane, k.idx(4)), c = k.rem(thread.lane, k.idx(4));
  Value lane = k.toI32(fp8KStagingOffset(k, g, k.mul(c, k.idx(4)), t.d));
  Value key0 = k.mul(thread.warpKV, k.idx(t.kvPerWarp));
  Value tileBase = k.toI32(
      k.add(k.mul(stage, k.idx(t.kvTile * t.d)), k.mul(key0, k.idx(t.d))));
  auto v4 = VectorType::get({4}, fp8);
  for (int64_t n = 0; n < t.sTiles; ++n) {
    Value rowBase = k.add(k.add(tileBase, k.i32(n * 8 * t.d)), lane);
    for (int64_t kb = 0; kb < t.dp / 16; ++kb) {
      Value off = rowBase;
      if (kb)
        off = arith::XOrIOp::create(k.b, k.loc, off, k.i32(16 * kb));
      Value bytes =
          vector::LoadOp::create(k.b, k.loc, v4, fp8KStaging,
                                 ValueRange{arith::IndexCastUIOp::create(
                                     k.b, k.loc, k.b.getIndexType(), off)},
                                 /*nontemporal=*/false, llvm::Align(4));
      // b0 = dims 4c, 4c + 1; b1 = dims 4c + 2, 4c + 3.
      Value b =
          pairsToFragment(k, fp8Convert(k, bytes, elementType), mma.bType());
      acc[n] = mma.mma(qFrags[kb], b, acc[n]);
    }
  }
  return acc;
}

SmallVector<Value> MmaSyncMainloop::scores(Value stage,
                                           ArrayRef<Value> qFrags) {
  const MmaTiles &t = tiles;
  MmaBuilder mma(k, elementType, thread.lane);
  if (t.fp8DirectK)
    return scoresFromFp8K(mma, stage, qFrags);
  SmallVector<Value> acc(t.mTiles * t.sTiles, mma.zeroAccumulator());
  Value kb = t.kRing().stage(k, t.ringStage(k, stage));
  Value key0 = k.mul(thread.warpKV, k.idx(t.kvPerWarp));
  for (int64_t kk = 0; kk < t.dp / 16; ++kk) {
    SmallVector<Value> a;
    for (int64_t mt = 0; mt < t.mTiles; ++mt)
      a.push_back(!qFrags.empty() ? qFrags[kk * t.mTiles + mt]
                                  : withoutUpperRows(mma.loadA(
                                        smem, k.idx(0), t.qLayout,
                                        thread.localRow(k, mt, 0), kk * 16)));
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

// fp8DirectV. O += P V sums over the keys of the tile and over nothing
// else: the same permutation of the keys in P and in V, and a permutation of
// head_dim in V's columns and O's, change no value. P's A fragments (S's
// accumulators, MmaLayout.h) give lane l (g = l / 4, c = l % 4) the keys
// 2c, 2c + 1 (a0) and 2c + 8, 2c + 9 (a2) of each 16-key step; the B
// fragment of O's n8 tile n takes those keys at the tile's column g
// (b0 = keys 2c, 2c + 1, b1 = 2c + 8, 2c + 9). Column g of tile n is taken
// to be dim 32 (n / 4) + 4 g + n % 4. The four tiles 4q .. 4q + 3 then ask
// lane l for dims 32 q + 4 g .. + 3 of the same four keys: four 32-bit
// shared loads (one a key) feed four tiles, byte t of each load going to
// tile 4q + t (byte permutes, two cvt.rn.f16x2.{e4m3x2,e5m2x2} a tile).
// Accumulator column 2c + e of tile n holds dim 32 (n / 4) + 8 c + 4 e +
// n % 4 (MmaTiles::permutedOColumnBase): per group q a lane holds the
// 8 consecutive dims from 32 q + 8 c, which the epilogue writes as one
// vector.
void MmaSyncMainloop::accumulatePVFromFp8V(MmaBuilder &mma, ArrayRef<Value> pA,
                                           Value stage, SmallVector<Value> &o) {
  const MmaTiles &t = tiles;
  Type fp8 = cast<MemRefType>(fp8VStaging.getType()).getElementType();
  Value g = k.div(thread.lane, k.idx(4)), c = k.rem(thread.lane, k.idx(4));
  // Key 2c's bytes 4g .. + 3; every key the lane reads has the same swizzle
  // (fp8VStagingOffset), and group q is this offset xor 32 q.
  Value lane = k.toI32(
      fp8VStagingOffset(k, k.mul(c, k.idx(2)), k.mul(g, k.idx(4)), t.d));
  Value key0 = k.mul(thread.warpKV, k.idx(t.kvPerWarp));
  Value laneBase = k.add(k.toI32(k.add(k.mul(stage, k.idx(t.kvTile * t.d)),
                                       k.mul(key0, k.idx(t.d)))),
                         lane);
  auto v4 = VectorType::get({4}, fp8);
  for (int64_t kk = 0; kk < t.sTiles / 2; ++kk) {
    for (int64_t q = 0; q < t.d / 32; ++q) {
      SmallVector<Value, 4> keys;
      for (int64_t dk : {0, 1, 8, 9}) {
        Value off = k.add(laneBase, k.i32((16 * kk + dk) * t.d));
        if (q)
          off = arith::XOrIOp::create(k.b, k.loc, off, k.i32(32 * q));
        keys.push_back(
            vector::LoadOp::create(k.b, k.loc, v4, fp8VStaging,
                                   ValueRange{arith::IndexCastUIOp::create(
                                       k.b, k.loc, k.b.getIndexType(), off)},
                                   /*nontemporal=*/false, llvm::Align(4))
                .getResult());
      }
      for (int64_t byte = 0; byte < 4; ++byte) {
        auto pick = [&](Value x, Value y) {
          return vector::ShuffleOp::create(k.b, k.loc, x, y,
                                           ArrayRef<int64_t>{byte, 4 + byte});
        };
        Value bytes = vector::ShuffleOp::create(
            k.b, k.loc, pick(keys[0], keys[1]), pick(keys[2], keys[3]),
            ArrayRef<int64_t>{0, 1, 2, 3});
        Value b =
            pairsToFragment(k, fp8Convert(k, bytes, elementType), mma.bType());
        Value &acc = o[4 * q + byte];
        acc = mma.mma(pA[kk], b, acc);
      }
    }
  }
}

void MmaSyncMainloop::accumulatePV(MmaBuilder &mma, ArrayRef<Value> pA,
                                   Value stage, SmallVector<Value> &o) {
  const MmaTiles &t = tiles;
  if (t.fp8DirectV)
    return accumulatePVFromFp8V(mma, pA, stage, o);
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
  const MmaTiles &t = tiles;
  size_t nState = carriedStateSize();
  MmaState state = stateOf(it.take_front(nState));
  SmallVector<Value> carried(it.drop_front(nState));

  // Tile i has landed (at most S-2 younger groups pending) and every warp is
  // done with tile i-1, whose stage the next copy reuses.
  waitGroups(k, qGroup, t.stages - 2);
  gpu::BarrierOp::create(k.b, k.loc);
  SmallVector<Value> nextCarried = hooks.produce(i, carried);

  Value stage = k.rem(i, k.idx(t.stages));
  Value tileStart = k.add(t0, k.mul(i, k.idx(t.kvTile)));
  if (hooks.prepare)
    hooks.prepare(stage, tileStart);
  // A tile the custom mask hides from the whole warp costs it no mma.
  Value hidden = hooks.hidden ? hooks.hidden(tileStart) : Value();
  MmaSoftmax::Step p = online.softmaxUnlessHidden(
      mma, hidden,
      [&] { return hooks.transform(scores(stage, qFrags), tileStart); }, state);
  online.rescale(mma, p, state.o);
  if (hooks.beforePV)
    hooks.beforePV(); // a block barrier: outside the warp's branch
  if (!hidden) {
    accumulatePV(mma, p.pA, stage, state.o);
  } else {
    SmallVector<Type> oTypes(state.o.size(), mma.accType());
    auto ifShown = scf::IfOp::create(k.b, k.loc, oTypes, hidden, true);
    OpBuilder::InsertionGuard g(k.b);
    k.b.setInsertionPointToStart(ifShown.thenBlock());
    scf::YieldOp::create(k.b, k.loc, state.o);
    k.b.setInsertionPointToStart(ifShown.elseBlock());
    SmallVector<Value> o(state.o);
    accumulatePV(mma, p.pA, stage, o);
    scf::YieldOp::create(k.b, k.loc, o);
    state.o.assign(ifShown.getResults().begin(), ifShown.getResults().end());
  }

  SmallVector<Value> yields = carriedState(state);
  llvm::append_range(yields, nextCarried);
  return yields;
}

Value MmaSyncMainloop::withoutUpperRows(Value frag) {
  if (!tiles.upperRowsEmpty)
    return frag;
  auto t = cast<VectorType>(frag.getType());
  Value zero = arith::ConstantOp::create(
      k.b, k.loc, VectorType::get({t.getDimSize(1)}, t.getElementType()),
      DenseElementsAttr::get(
          VectorType::get({t.getDimSize(1)}, t.getElementType()),
          k.b.getZeroAttr(t.getElementType())));
  for (int64_t r : {1, 3})
    frag = vector::InsertOp::create(k.b, k.loc, zero, frag, r);
  return frag;
}

int64_t MmaSyncMainloop::carriedStateSize() const {
  const MmaTiles &t = tiles;
  int64_t nO = t.mTiles * t.oTiles;
  return t.upperRowsEmpty ? nO + 2 : nO + 4 * t.mTiles;
}

SmallVector<Value> MmaSyncMainloop::carriedState(const MmaState &state) {
  if (!tiles.upperRowsEmpty) {
    SmallVector<Value> v(state.o);
    llvm::append_range(v, state.m);
    llvm::append_range(v, state.l);
    return v;
  }
  // Row pair 0 (row g) of each O fragment, and its m and l.
  SmallVector<Value> v;
  for (Value o : state.o)
    v.push_back(vector::ExtractOp::create(k.b, k.loc, o, 0));
  v.push_back(state.m[0]);
  v.push_back(state.l[0]);
  return v;
}

MmaState MmaSyncMainloop::stateOf(ValueRange carried) {
  const MmaTiles &t = tiles;
  int64_t nO = t.mTiles * t.oTiles, nM = 2 * t.mTiles;
  MmaState state;
  if (!t.upperRowsEmpty) {
    state.o.assign(carried.begin(), carried.begin() + nO);
    state.m.assign(carried.begin() + nO, carried.begin() + nO + nM);
    state.l.assign(carried.begin() + nO + nM, carried.begin() + nO + 2 * nM);
    return state;
  }
  MmaBuilder mma(k, elementType, thread.lane);
  for (int64_t i = 0; i < nO; ++i)
    state.o.push_back(vector::InsertOp::create(k.b, k.loc, carried[i],
                                               mma.zeroAccumulator(), 0));
  state.m = {carried[nO], k.negInf()};
  state.l = {carried[nO + 1], k.f32(0.0)};
  return state;
}

MmaState MmaSyncMainloop::run(Value numTiles, Value t0, Value qGroup,
                              const MmaSyncTileHooks &hooks) {
  const MmaTiles &t = tiles;
  OpBuilder &b = k.b;
  MmaBuilder mma(k, elementType, thread.lane);
  MmaState start;
  for (int64_t i = 0; i < t.mTiles * t.oTiles; ++i)
    start.o.push_back(mma.zeroAccumulator());
  // The running max (raw score units) and this thread's part of the row
  // sums.
  start.m.assign(2 * t.mTiles, k.negInf());
  start.l.assign(2 * t.mTiles, k.f32(0.0));
  SmallVector<Value> init = carriedState(start);
  size_t nState = init.size();
  llvm::append_range(init, hooks.carriedInit());
  SmallVector<Value> qFrags;
  if (t.qInRegisters) {
    // The Q tile (the oldest copy group) has landed in every thread's part
    // (the tiles of the prologue may still be in flight).
    waitGroups(k, qGroup, t.stages - 1);
    gpu::BarrierOp::create(b, k.loc);
    qFrags = t.fp8DirectK ? loadPermutedQFragments(mma) : loadQFragments(mma);
    for (Value &a : qFrags)
      a = withoutUpperRows(a);
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
  return stateOf(loop.getResults().take_front(nState));
}
