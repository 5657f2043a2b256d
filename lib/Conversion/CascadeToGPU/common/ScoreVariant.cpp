//===- ScoreVariant.cpp - What attention does to a score ------------------===//

#include "common/ScoreVariant.h"

#include <cmath>

using namespace mlir;
using namespace mlir::cascade;

/// FlashInfer's ALiBi slope of head h out of n heads.
static double alibiSlope(int64_t h, int64_t n) {
  int64_t p = 1;
  while (p * 2 <= n)
    p *= 2;
  double m0 = std::exp2(-8.0 / p);
  if (h < p)
    return std::pow(m0, double(h + 1));
  double m1 = std::exp2(-4.0 / p);
  return std::pow(m1, double((h - p) * 2 + 1));
}

/// A constant f32 table in the kernel module; returns a memref.get_global.
static Value constantTable(OpBuilder &b, Location loc, gpu::GPUModuleOp module,
                           StringRef name, ArrayRef<float> values) {
  auto ty = MemRefType::get({int64_t(values.size())}, b.getF32Type());
  if (!module.lookupSymbol(name)) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    auto tt = RankedTensorType::get({int64_t(values.size())}, b.getF32Type());
    memref::GlobalOp::create(b, loc, name, b.getStringAttr("private"), ty,
                             DenseElementsAttr::get(tt, values),
                             /*constant=*/true, /*alignment=*/IntegerAttr());
  }
  return memref::GetGlobalOp::create(b, loc, ty, name);
}

/// RoPE inverse frequency of element i of head_dim d (the pairs (i, i + d/2)
/// share it): 1 / (rope_scale * rope_theta^(2 (i mod d/2) / d)).
static SmallVector<float> inverseFrequencies(const AttentionSpec &s) {
  SmallVector<float> inv;
  const ScoreOptions &o = s.score;
  for (int64_t i = 0; i < s.headDim; ++i) {
    int64_t fi = i % (s.headDim / 2);
    inv.push_back(float(
        1.0 /
        (double(o.ropeScale) *
         std::pow(double(o.ropeTheta), 2.0 * double(fi) / double(s.headDim)))));
  }
  return inv;
}

ScoreVariant::ScoreVariant(const AttentionSpec &spec)
    : score(spec.score), isCausal(spec.causal), plainScores(spec.plainScores()),
      hasCustomMask(spec.customMask), numQoHeads(spec.numQoHeads) {
  if (rope())
    ropeInvFreq = inverseFrequencies(spec);
}

double ScoreVariant::expScale() const {
  return plainScores ? double(smScale()) * M_LOG2E : 1.0;
}

double ScoreVariant::queryScale() const {
  return plainScores ? smScale() * M_LOG2E : smScale();
}

Value ScoreVariant::scale(KernelBuilder &k, Value x) const {
  return plainScores ? x : k.fmul(x, k.f32(smScale()));
}

Value ScoreVariant::logits(KernelBuilder &k, Value x,
                           function_ref<Value()> slope,
                           function_ref<Value()> distance) const {
  if (alibi())
    x = k.fma(slope(), distance(), x);
  if (float cap = score.logitsSoftCap; cap > 0.f)
    x = k.fmul(k.tanhFast(k.fmul(x, k.f32(1.0 / cap))), k.f32(cap));
  if (!plainScores)
    x = k.fmul(x, k.f32(M_LOG2E));
  return x;
}

Value ScoreVariant::maskKey(KernelBuilder &k, Value x, Value t, Value pos,
                            Value t1, Value hidden) const {
  // A custom mask's chunks already hide the keys past t1.
  Value off = hidden ? hidden : k.cmp(arith::CmpIPredicate::sge, t, t1);
  if (isCausal)
    off = arith::OrIOp::create(k.b, k.loc, off,
                               k.cmp(arith::CmpIPredicate::sgt, t, pos));
  if (window())
    off = arith::OrIOp::create(k.b, k.loc, off,
                               k.cmp(arith::CmpIPredicate::slt, t,
                                     k.sub(pos, k.idx(score.windowLeft))));
  return k.select(off, k.negInf(), x);
}

SmallVector<Value> ScoreVariant::customMaskWords(KernelBuilder &k, Value mask,
                                                 Value firstBit, Value lastBit,
                                                 int64_t numBits) const {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  // Word indices in 32 bits: mask_indptr counts bytes in int32, so a
  // word index stays below 2^29 (and the clamps cost one instruction).
  auto word = [&](Value bit) {
    return arith::TruncIOp::create(
               b, loc, i32,
               arith::IndexCastUIOp::create(b, loc, i64, k.div(bit, k.idx(32))))
        .getResult();
  };
  Value w0 = word(firstBit);
  Value lastWord = word(lastBit);
  SmallVector<Value> words;
  for (int64_t c = 0; c <= (numBits + 31) / 32; ++c) {
    Value w = arith::MinUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, w0, k.i32(c)), lastWord);
    Value byte = arith::IndexCastUIOp::create(
        b, loc, b.getIndexType(), arith::MulIOp::create(b, loc, w, k.i32(4)));
    Value v = vector::LoadOp::create(
        b, loc, VectorType::get({4}, b.getI8Type()), mask, ValueRange{byte},
        /*nontemporal=*/false, llvm::Align(4));
    v = vector::BitCastOp::create(b, loc, VectorType::get({1}, i32), v);
    words.push_back(vector::ExtractOp::create(b, loc, v, 0));
  }
  return words;
}

SmallVector<Value> ScoreVariant::customMaskFromWords(KernelBuilder &k,
                                                     ValueRange words,
                                                     Value firstBit,
                                                     Value shift) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  // Bits of the 64-bit pair (word c, word c + 1) from firstBit % 32 + shift
  // (< 39; the bits a caller tests stay below 64).
  Value sh = arith::IndexCastUIOp::create(
      b, loc, i64, k.add(k.rem(firstBit, k.idx(32)), shift));
  auto wide = [&](Value w) {
    return arith::ExtUIOp::create(b, loc, i64, w).getResult();
  };
  SmallVector<Value> out;
  for (size_t c = 0; c + 1 < words.size(); ++c) {
    Value pair = arith::OrIOp::create(
        b, loc, wide(words[c]),
        arith::ShLIOp::create(b, loc, wide(words[c + 1]),
                              arith::ConstantIntOp::create(b, loc, i64, 32)));
    out.push_back(arith::TruncIOp::create(
        b, loc, i32, arith::ShRUIOp::create(b, loc, pair, sh)));
  }
  return out;
}

void ScoreVariant::customMaskKeep(KernelBuilder &k,
                                  MutableArrayRef<Value> chunks,
                                  Value validBits) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  // Key positions fit in 32 bits (kv_indptr is int32).
  Value valid = arith::TruncIOp::create(
      b, loc, i32, arith::IndexCastOp::create(b, loc, i64, validBits));
  for (auto [c, chunk] : llvm::enumerate(chunks)) {
    // Keep the chunk's first clamp(validBits - 32 c, 0, 32) bits:
    // (1 << n) - 1 in 64 bits, where n = 32 keeps them all.
    Value n = arith::MinSIOp::create(
        b, loc,
        arith::MaxSIOp::create(
            b, loc, arith::SubIOp::create(b, loc, valid, k.i32(32 * c)),
            k.i32(0)),
        k.i32(32));
    Value keep = arith::SubIOp::create(
        b, loc,
        arith::ShLIOp::create(b, loc,
                              arith::ConstantIntOp::create(b, loc, i64, 1),
                              arith::ExtUIOp::create(b, loc, i64, n)),
        arith::ConstantIntOp::create(b, loc, i64, 1));
    chunk = arith::AndIOp::create(b, loc, chunk,
                                  arith::TruncIOp::create(b, loc, i32, keep));
  }
}

Value ScoreVariant::customMaskShows(KernelBuilder &k, ArrayRef<Value> chunks,
                                    ArrayRef<uint32_t> used) {
  Value all;
  for (auto [chunk, bits] : llvm::zip_equal(chunks, used)) {
    Value want = k.i32(int64_t(bits));
    Value shows = k.cmp(arith::CmpIPredicate::eq,
                        arith::AndIOp::create(k.b, k.loc, chunk, want), want);
    all = all ? arith::AndIOp::create(k.b, k.loc, all, shows) : shows;
  }
  return all;
}

Value ScoreVariant::customMaskShowsAny(KernelBuilder &k, ArrayRef<Value> chunks,
                                       ArrayRef<uint32_t> used) {
  Value any;
  for (auto [chunk, bits] : llvm::zip_equal(chunks, used)) {
    Value shows =
        k.cmp(arith::CmpIPredicate::ne,
              arith::AndIOp::create(k.b, k.loc, chunk, k.i32(int64_t(bits))),
              k.i32(0));
    any = any ? arith::OrIOp::create(k.b, k.loc, any, shows) : shows;
  }
  return any;
}

Value ScoreVariant::customMaskHidden(KernelBuilder &k, ArrayRef<Value> chunks,
                                     int64_t bit) {
  Value c = chunks[bit / 32];
  Value one = arith::AndIOp::create(
      k.b, k.loc, arith::ShRUIOp::create(k.b, k.loc, c, k.i32(bit % 32)),
      k.i32(1));
  return k.cmp(arith::CmpIPredicate::eq, one, k.i32(0));
}

void ScoreVariant::clampKeyRange(KernelBuilder &k, Value &t0, Value &t1,
                                 function_ref<Value()> firstPos,
                                 function_ref<Value()> lastPos) const {
  if (isCausal) {
    // Keys past the last query's diagonal.
    t1 = k.minU(t1, k.maxS(k.add(lastPos(), k.idx(1)), k.idx(0)));
    t0 = k.minU(t0, t1);
  }
  if (window()) {
    // Keys before the first query's window.
    Value start = k.maxS(k.sub(firstPos(), k.idx(score.windowLeft)), k.idx(0));
    t0 = k.minU(k.maxS(t0, start), t1);
  }
}

Value ScoreVariant::tileNeedsMask(KernelBuilder &k, Value tileStart,
                                  int64_t tileKeys, Value t1,
                                  function_ref<Value()> firstPosFn,
                                  function_ref<Value()> lastPosFn) const {
  Value end = k.add(tileStart, k.idx(tileKeys));
  Value need = k.cmp(arith::CmpIPredicate::sgt, end, t1);
  Value firstPos = firstPosFn();
  Value lastPos = lastPosFn();
  if (isCausal)
    need = arith::OrIOp::create(
        k.b, k.loc, need,
        k.cmp(arith::CmpIPredicate::sgt, k.sub(end, k.idx(1)), firstPos));
  if (window())
    need = arith::OrIOp::create(k.b, k.loc, need,
                                k.cmp(arith::CmpIPredicate::slt, tileStart,
                                      k.sub(lastPos, k.idx(score.windowLeft))));
  return need;
}

Value ScoreVariant::alibiSlopes(KernelBuilder &k, gpu::GPUModuleOp module,
                                StringRef kernel) const {
  SmallVector<float> sl;
  for (int64_t h = 0; h < numQoHeads; ++h)
    sl.push_back(float(alibiSlope(h, numQoHeads)));
  return constantTable(k.b, k.loc, module, (kernel + "_alibi").str(), sl);
}

Value ScoreVariant::ropeInverseFrequencies(KernelBuilder &k,
                                           gpu::GPUModuleOp module,
                                           StringRef kernel) const {
  return constantTable(k.b, k.loc, module, (kernel + "_rope").str(),
                       ropeInvFreq);
}

//===----------------------------------------------------------------------===//
// RoPE
//===----------------------------------------------------------------------===//

std::pair<Value, Value> mlir::cascade::ropeCosSin(KernelBuilder &k, Value angle,
                                                  bool nonNegative) {
  OpBuilder &b = k.b;
  // Range-reduce to [-pi, pi] for sin/cos.approx: subtract the nearest
  // multiple of 2 pi (rounding half away from zero).
  Value turns = arith::FPToSIOp::create(
      b, k.loc, b.getI32Type(),
      k.fadd(k.fmul(angle, k.f32(1.0 / (2.0 * M_PI))),
             nonNegative ? k.f32(0.5)
                         : k.select(k.fcmp(arith::CmpFPredicate::OLT, angle,
                                           k.f32(0.0)),
                                    k.f32(-0.5), k.f32(0.5))));
  Value r = k.fsub(
      angle, k.fmul(arith::SIToFPOp::create(b, k.loc, b.getF32Type(), turns),
                    k.f32(2.0 * M_PI)));
  Value c = k.cosApprox(r);
  return {c, k.sinApprox(r)};
}

Value mlir::cascade::ropeLane8(KernelBuilder &k, Value x, Value partner,
                               Value invFreq8, Value posF, Value firstHalf) {
  Value ang = k.fmul(invFreq8, k.splat(posF));
  SmallVector<Value> cs, sn;
  for (int64_t e = 0; e < 8; ++e) {
    Value a = vector::ExtractOp::create(k.b, k.loc, ang, e);
    auto [c, s] = ropeCosSin(k, a, /*nonNegative=*/true);
    cs.push_back(c);
    sn.push_back(s);
  }
  auto vt = VectorType::get({8}, k.b.getF32Type());
  Value cv = vector::FromElementsOp::create(k.b, k.loc, vt, cs);
  Value sv = vector::FromElementsOp::create(k.b, k.loc, vt, sn);
  // first half: x*cos - partner*sin ; second half: x*cos + partner*sin
  Value sgn = k.select(firstHalf, k.f32(-1.0), k.f32(1.0));
  return k.fadd(k.fmul(x, cv), k.fmul(k.fmul(partner, sv), k.splat(sgn)));
}

void mlir::cascade::ropeSmemTile(KernelBuilder &k, Value smem, Value tileBase,
                                 const SmemTileLayout &layout, int64_t rows,
                                 int64_t headDim, Type elementType,
                                 int64_t numThreads, Value tid, Value invFreq,
                                 function_ref<Value(Value)> position) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  int64_t halfChunks = headDim / 16;
  TileCopyPlan units = distributeTileCopy(k, rows, halfChunks, numThreads, tid);
  auto vt = VectorType::get({8}, elementType);
  auto vf = VectorType::get({8}, b.getF32Type());
  for (size_t u = 0; u < units.rows.size(); ++u) {
    auto ifOp = scf::IfOp::create(b, loc, units.inRange[u], false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    Value row = units.rows[u], ch = units.chunks[u];
    Value xOff = k.add(tileBase, layout.chunkOffset(k, row, ch));
    Value yOff = k.add(
        tileBase, layout.chunkOffset(k, row, k.add(ch, k.idx(halfChunks))));
    auto load = [&](Value off) {
      Value v = vector::LoadOp::create(b, loc, vt, smem, ValueRange{off}, false,
                                       llvm::Align(16));
      return arith::ExtFOp::create(b, loc, vf, v).getResult();
    };
    Value x = load(xOff), y = load(yOff);
    Value pos = k.toF32(position(row));
    SmallVector<Value> cs, sn;
    for (int64_t e = 0; e < 8; ++e) {
      Value inv = k.loadScalar(invFreq, k.add(k.mul(ch, k.idx(8)), k.idx(e)));
      auto [c, s] = ropeCosSin(k, k.fmul(pos, inv), /*nonNegative=*/false);
      cs.push_back(c);
      sn.push_back(s);
    }
    Value cv = vector::FromElementsOp::create(b, loc, vf, cs);
    Value sv = vector::FromElementsOp::create(b, loc, vf, sn);
    Value xr = k.fsub(k.fmul(x, cv), k.fmul(y, sv));
    Value yr = k.fadd(k.fmul(y, cv), k.fmul(x, sv));
    auto store = [&](Value v, Value off) {
      vector::StoreOp::create(b, loc, arith::TruncFOp::create(b, loc, vt, v),
                              smem, ValueRange{off}, false, llvm::Align(16));
    };
    store(xr, xOff);
    store(yr, yOff);
  }
}
