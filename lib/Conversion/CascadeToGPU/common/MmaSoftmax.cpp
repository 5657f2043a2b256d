//===- MmaSoftmax.cpp - The online softmax on MMA fragments ---------------===//

#include "common/MmaSoftmax.h"

using namespace mlir;
using namespace mlir::cascade;

/// How far (log2 units) a tile's row max may exceed the running max before
/// the running max, and with it O, is rescaled (FlashAttention-4's lazy
/// rescaling): exponents stay below 2^8.
static constexpr double kRescaleLog2 = 8.0;

MmaSoftmax::Step MmaSoftmax::softmax(MmaBuilder &mma, ArrayRef<Value> s,
                                     MmaState &state, bool pack) {
  const MmaTiles &t = tiles;
  SmallVector<Value> &m = state.m, &l = state.l;
  Step out;
  SmallVector<Value> p(s.size());
  Value scale = expScale.get(k);
  for (int64_t mt = 0; mt < t.mTiles; ++mt) {
    ArrayRef<Value> rowFrags = s.slice(mt * t.sTiles, t.sTiles);
    RowPair tileMax = rowReduce(k, rowFrags, /*max=*/true);
    RowPair alpha, negMScaled;
    for (int64_t pair = 0; pair < 2; ++pair) {
      int64_t r = mt * 2 + pair;
      if (pair == 1 && t.upperRowsEmpty) {
        // No query: m, l stay; P is zero (its A halves are constants).
        alpha[pair] = k.f32(1.0);
        negMScaled[pair] = k.f32(0.0);
        continue;
      }
      // The running max m moves only when the tile's max exceeds it by
      // more than kRescaleLog2 (exp2 units): exponents stay <= 2^8 (exact
      // in f32, and in f16/bf16 P as precise as any value), and O is
      // rescaled on few tiles instead of on most. With m = -inf any finite
      // max moves it (+inf > threshold); -inf - -inf = NaN compares false
      // and keeps it.
      Value grow = k.fcmp(arith::CmpFPredicate::OGT,
                          k.fmul(k.fsub(tileMax[pair], m[r]), scale),
                          k.f32(kRescaleLog2));
      Value mNew = k.select(grow, tileMax[pair], m[r]);
      // A row with no visible key yet keeps m = -inf; exponents then use 0
      // so that no -inf - -inf appears.
      Value mUse = k.select(k.isNegInf(mNew), k.f32(0.0), mNew);
      Value mScaled = k.fmul(mUse, scale);
      alpha[pair] = k.ex2(k.fsub(k.fmul(m[r], scale), mScaled));
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
      // exp2_emulation: these columns' exp2 on the FMA pipe, so that the
      // special-function unit is not the bound beside the tensor cores.
      bool poly = n % 8 < t.exp2Emulation;
      p[idx] = mapAccumulator(k, s[idx], [&](Value x, int64_t pair, int64_t) {
        if (pair == 1 && t.upperRowsEmpty)
          return k.f32(0.0);
        Value e = expScale.isOne() ? k.fadd(x, negMScaled[pair])
                                   : k.fma(x, scale, negMScaled[pair]);
        return poly ? k.ex2Poly(e) : k.ex2(e);
      });
    }
    RowPair sum = rowReduceInThread(
        k, ArrayRef<Value>(p).slice(mt * t.sTiles, t.sTiles), false);
    for (int64_t pair = 0; pair < 2; ++pair)
      l[mt * 2 + pair] = k.fadd(l[mt * 2 + pair], sum[pair]);
    out.alphas.push_back(alpha);
    // P as A operands of P.V right away: half the registers of the f32
    // values, which would otherwise live through the rescale.
    if (pack)
      packRows(mma, p, mt, out.pA);
  }
  if (!pack)
    out.pF32 = std::move(p);
  return out;
}

void MmaSoftmax::packRows(MmaBuilder &mma, ArrayRef<Value> pF32, int64_t mt,
                          SmallVectorImpl<Value> &pA) {
  const MmaTiles &t = tiles;
  pA.resize(pF32.size() / 2);
  for (int64_t kk = 0; kk < t.sTiles / 2; ++kk)
    pA[kk * t.mTiles + mt] = mma.accumulatorsToA(
        pF32[mt * t.sTiles + 2 * kk], pF32[mt * t.sTiles + 2 * kk + 1]);
}

void MmaSoftmax::packP(MmaBuilder &mma, Step &p) {
  for (int64_t mt = 0; mt < tiles.mTiles; ++mt)
    packRows(mma, p.pF32, mt, p.pA);
  p.pF32.clear();
}

MmaSoftmax::Step
MmaSoftmax::softmaxUnlessHidden(MmaBuilder &mma, Value hidden,
                                function_ref<SmallVector<Value>()> logits,
                                MmaState &state) {
  if (!hidden)
    return softmax(mma, logits(), state);
  OpBuilder &b = k.b;
  int64_t nM = 2 * tiles.mTiles, nP = tiles.mTiles * tiles.sTiles / 2;
  // Results: m, l and the alphas (f32 each), P, whether to rescale.
  SmallVector<Type> types(3 * nM, b.getF32Type());
  types.append(nP, mma.aType());
  types.push_back(b.getI1Type());
  auto ifHidden = scf::IfOp::create(b, k.loc, types, hidden, true);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifHidden.thenBlock());
    SmallVector<Value> kept(state.m);
    llvm::append_range(kept, state.l);
    kept.append(nM, k.f32(1.0));
    Value zeroP = arith::ConstantOp::create(
        b, k.loc, mma.aType(),
        DenseElementsAttr::get(mma.aType(), b.getFloatAttr(elementType, 0.0)));
    kept.append(nP, zeroP);
    kept.push_back(arith::ConstantIntOp::create(b, k.loc, false, 1));
    scf::YieldOp::create(b, k.loc, kept);
    b.setInsertionPointToStart(ifHidden.elseBlock());
    MmaState st = state;
    Step p = softmax(mma, logits(), st);
    SmallVector<Value> out(st.m);
    llvm::append_range(out, st.l);
    for (const RowPair &a : p.alphas)
      out.append({a[0], a[1]});
    llvm::append_range(out, p.pA);
    out.push_back(p.rescale);
    scf::YieldOp::create(b, k.loc, out);
  }
  ValueRange res = ifHidden.getResults();
  state.m.assign(res.begin(), res.begin() + nM);
  state.l.assign(res.begin() + nM, res.begin() + 2 * nM);
  Step p;
  for (int64_t mt = 0; mt < tiles.mTiles; ++mt)
    p.alphas.push_back({res[2 * nM + 2 * mt], res[2 * nM + 2 * mt + 1]});
  p.pA.assign(res.begin() + 3 * nM, res.begin() + 3 * nM + nP);
  p.rescale = res.back();
  return p;
}

void MmaSoftmax::rescale(MmaBuilder &mma, const Step &p,
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
