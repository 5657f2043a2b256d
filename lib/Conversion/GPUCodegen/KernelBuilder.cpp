//===- KernelBuilder.cpp - Helpers to build GPU kernel bodies -------------===//

#include "cascade/Conversion/GPUCodegen/KernelBuilder.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>

using namespace mlir;
using namespace mlir::cascade;

std::string cascade::dtypeName(Type t) {
  if (t.isF16())
    return "f16";
  if (t.isBF16())
    return "bf16";
  if (t.isF32())
    return "f32";
  if (isa<Float8E4M3FNType>(t))
    return "f8e4m3";
  if (isa<Float8E5M2Type>(t))
    return "f8e5m2";
  if (t.isInteger(32))
    return "i32";
  if (t.isInteger(64))
    return "i64";
  if (t.isInteger(8))
    return "u8";
  if (t.isInteger(1))
    return "i1";
  return "unknown";
}

Value KernelBuilder::idx(int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}
Value KernelBuilder::i32(int64_t v) {
  return arith::ConstantIntOp::create(b, loc, v, 32);
}
Value KernelBuilder::i64(int64_t v) {
  return arith::ConstantIntOp::create(b, loc, v, 64);
}
Value KernelBuilder::f32(double v) {
  return arith::ConstantFloatOp::create(b, loc, b.getF32Type(),
                                        APFloat(static_cast<float>(v)));
}
Value KernelBuilder::negInf() {
  return arith::ConstantFloatOp::create(
      b, loc, b.getF32Type(), APFloat::getInf(APFloat::IEEEsingle(), true));
}
Value KernelBuilder::vsplat(double v, int64_t n) {
  auto vt = VectorType::get({n}, b.getF32Type());
  return arith::ConstantOp::create(
      b, loc, vt, DenseElementsAttr::get(vt, b.getF32FloatAttr(v)));
}

Value KernelBuilder::add(Value a, Value c) {
  return arith::AddIOp::create(b, loc, a, c);
}
Value KernelBuilder::sub(Value a, Value c) {
  return arith::SubIOp::create(b, loc, a, c);
}
Value KernelBuilder::mul(Value a, Value c) {
  return arith::MulIOp::create(b, loc, a, c);
}
Value KernelBuilder::div(Value a, Value c) {
  return arith::DivUIOp::create(b, loc, a, c);
}
Value KernelBuilder::rem(Value a, Value c) {
  return arith::RemUIOp::create(b, loc, a, c);
}
Value KernelBuilder::minU(Value a, Value c) {
  return arith::MinUIOp::create(b, loc, a, c);
}
Value KernelBuilder::maxS(Value a, Value c) {
  return arith::MaxSIOp::create(b, loc, a, c);
}
Value KernelBuilder::toIndex(Value v) {
  if (v.getType().isIndex())
    return v;
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
}
Value KernelBuilder::toI32(Value v) {
  if (v.getType().isInteger(32))
    return v;
  return arith::IndexCastOp::create(b, loc, b.getI32Type(), v);
}
Value KernelBuilder::toF32(Value v) {
  if (v.getType().isIndex())
    v = arith::IndexCastOp::create(b, loc, b.getI64Type(), v);
  return arith::SIToFPOp::create(b, loc, b.getF32Type(), v);
}
Value KernelBuilder::cmp(arith::CmpIPredicate p, Value a, Value c) {
  return arith::CmpIOp::create(b, loc, p, a, c);
}
Value KernelBuilder::select(Value c, Value t, Value f) {
  return arith::SelectOp::create(b, loc, c, t, f);
}

Value KernelBuilder::fadd(Value a, Value c) {
  return arith::AddFOp::create(b, loc, a, c);
}
Value KernelBuilder::fsub(Value a, Value c) {
  return arith::SubFOp::create(b, loc, a, c);
}
Value KernelBuilder::fmul(Value a, Value c) {
  return arith::MulFOp::create(b, loc, a, c);
}
Value KernelBuilder::fdiv(Value a, Value c) {
  return arith::DivFOp::create(b, loc, a, c);
}
Value KernelBuilder::fmax(Value a, Value c) {
  return arith::MaxNumFOp::create(b, loc, a, c);
}
Value KernelBuilder::fcmp(arith::CmpFPredicate p, Value a, Value c) {
  return arith::CmpFOp::create(b, loc, p, a, c);
}
Value KernelBuilder::isNegInf(Value x) {
  return fcmp(arith::CmpFPredicate::OEQ, x, negInf());
}

static Value callF32Intrinsic(OpBuilder &b, Location loc, StringRef name,
                              Value x) {
  return LLVM::CallIntrinsicOp::create(b, loc, b.getF32Type(),
                                       b.getStringAttr(name), ValueRange{x})
      .getResult(0);
}
Value KernelBuilder::ex2(Value x) {
  return callF32Intrinsic(b, loc, "llvm.nvvm.ex2.approx.ftz.f32", x);
}
Value KernelBuilder::ex2Poly(Value x) {
  // Coefficients of 1 + c1 f + c2 f^2 + c3 f^3 ~ 2^f on [-0.5, 0.5]: the
  // least relative-error fit with p(0) = 1 (max 1.0e-4 in f32 arithmetic),
  // so that the clamp value -127 (f = 0) gives the bits of 1.0 minus
  // 127 << 23: +0.0 exactly.
  constexpr double c1 = 0.6932829022407532, c2 = 0.2422109693288803,
                   c3 = 0.05500893294811249;
  // 1.5 * 2^23: x + it rounds x to an integer in the low mantissa bits.
  constexpr double roundMagic = 12582912.0;
  Value xc = fmax(x, f32(-127.0));
  Value t = fadd(xc, f32(roundMagic));
  Value f = fsub(xc, fsub(t, f32(roundMagic)));
  Value p = fma(fma(fma(f32(c3), f, f32(c2)), f, f32(c1)), f, f32(1.0));
  Type i32Type = b.getI32Type();
  Value j = arith::ShLIOp::create(
      b, loc, arith::BitcastOp::create(b, loc, i32Type, t), i32(23));
  Value bits = arith::AddIOp::create(
      b, loc, arith::BitcastOp::create(b, loc, i32Type, p), j);
  return arith::BitcastOp::create(b, loc, b.getF32Type(), bits);
}
Value KernelBuilder::lg2(Value x) {
  return callF32Intrinsic(b, loc, "llvm.nvvm.lg2.approx.ftz.f", x);
}
Value KernelBuilder::sinApprox(Value x) {
  return callF32Intrinsic(b, loc, "llvm.nvvm.sin.approx.ftz.f", x);
}
Value KernelBuilder::cosApprox(Value x) {
  return callF32Intrinsic(b, loc, "llvm.nvvm.cos.approx.ftz.f", x);
}
Value KernelBuilder::tanhFast(Value x) {
  // Clamp so that exp2 stays finite-ish; tanh(±20) == ±1 in f32.
  Value xc = arith::MinimumFOp::create(
      b, loc, arith::MaximumFOp::create(b, loc, x, f32(-20.0)), f32(20.0));
  Value e = ex2(fmul(xc, f32(2.0 * M_LOG2E)));
  return fsub(f32(1.0), fdiv(f32(2.0), fadd(e, f32(1.0))));
}

Value KernelBuilder::threadId(gpu::Dimension d) {
  return gpu::ThreadIdOp::create(b, loc, d);
}
Value KernelBuilder::blockId(gpu::Dimension d) {
  return gpu::BlockIdOp::create(b, loc, d);
}

Value KernelBuilder::load8(Value memref, Value off) {
  Type et = cast<MemRefType>(memref.getType()).getElementType();
  auto vt = VectorType::get({8}, et);
  Value v = vector::LoadOp::create(b, loc, vt, memref, ValueRange{off},
                                   /*nontemporal=*/false, llvm::Align(16));
  if (et.isF32())
    return v;
  return arith::ExtFOp::create(b, loc, VectorType::get({8}, b.getF32Type()), v);
}
void KernelBuilder::store8(Value vecF32, Value memref, Value off) {
  Type et = cast<MemRefType>(memref.getType()).getElementType();
  Value v = vecF32;
  if (!et.isF32())
    v = arith::TruncFOp::create(b, loc, VectorType::get({8}, et), vecF32);
  vector::StoreOp::create(b, loc, v, memref, ValueRange{off},
                          /*nontemporal=*/false, llvm::Align(16));
}
Value KernelBuilder::loadScalar(Value memref, Value off) {
  return memref::LoadOp::create(b, loc, memref, ValueRange{off});
}
void KernelBuilder::storeScalar(Value v, Value memref, Value off) {
  memref::StoreOp::create(b, loc, v, memref, ValueRange{off});
}
Value KernelBuilder::splat(Value scalar, int64_t n) {
  return vector::BroadcastOp::create(
      b, loc, VectorType::get({n}, scalar.getType()), scalar);
}
Value KernelBuilder::hsum(Value v) {
  return vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, v);
}

Value KernelBuilder::fma(Value a, Value bv, Value c) {
  return LLVM::FMAOp::create(b, loc, a, bv, c);
}
Value KernelBuilder::dot8(Value a, Value bv) {
  Value acc;
  for (int64_t e = 0; e < 8; ++e) {
    Value x = vector::ExtractOp::create(b, loc, a, e);
    Value y = vector::ExtractOp::create(b, loc, bv, e);
    acc = acc ? fma(x, y, acc) : fmul(x, y);
  }
  return acc;
}

std::pair<Value, Value> KernelBuilder::mergeStates(Value va, Value sa, Value vb,
                                                   Value sb) {
  auto vt = dyn_cast<VectorType>(va.getType());
  auto bcast = [&](Value x) { return vt ? splat(x, vt.getNumElements()) : x; };
  Value aEmpty = isNegInf(sa), bEmpty = isNegInf(sb);
  Value m = fmax(sa, sb);
  Value zero = f32(0.0);
  Value wa = select(aEmpty, zero, ex2(fsub(sa, m)));
  Value wb = select(bEmpty, zero, ex2(fsub(sb, m)));
  Value d = fadd(wa, wb);
  Value inv = fdiv(f32(1.0), d);
  Value acc = fadd(fmul(va, bcast(wa)), fmul(vb, bcast(wb)));
  Value v = fmul(acc, bcast(inv));
  Value s = fadd(m, lg2(d));
  Value both = arith::AndIOp::create(b, loc, aEmpty, bEmpty);
  v = select(bEmpty, va, v);
  s = select(bEmpty, sa, s);
  v = select(aEmpty, vb, v);
  s = select(aEmpty, sb, s);
  v = select(both, vt ? vsplat(0.0, vt.getNumElements()) : f32(0.0), v);
  s = select(both, negInf(), s);
  return {v, s};
}

Value KernelBuilder::lastIndexWithKeyAtMost(
    Value n, Value w, arith::CmpIPredicate pred,
    function_ref<Value(KernelBuilder &, Value)> key) {
  auto idxT = b.getIndexType();
  auto loop = scf::WhileOp::create(
      b, loc, TypeRange{idxT, idxT}, ValueRange{idx(0), n},
      [&](OpBuilder &wb, Location l, ValueRange it) {
        KernelBuilder kk(wb, l);
        Value more =
            kk.cmp(arith::CmpIPredicate::sgt, kk.sub(it[1], it[0]), kk.idx(1));
        scf::ConditionOp::create(wb, l, more, it);
      },
      [&](OpBuilder &wb, Location l, ValueRange it) {
        KernelBuilder kk(wb, l);
        Value mid = kk.div(kk.add(it[0], it[1]), kk.idx(2));
        Value le = kk.cmp(pred, key(kk, mid), w);
        scf::YieldOp::create(
            wb, l,
            ValueRange{kk.select(le, mid, it[0]), kk.select(le, it[1], mid)});
      });
  return loop.getResult(0);
}

SmallVector<Value> KernelBuilder::emptyRunningState() {
  return {negInf(), f32(0.0), vsplat(0.0)};
}

SmallVector<Value> KernelBuilder::absorbState(ValueRange running, Value v,
                                              Value s) {
  Value m = running[0], d = running[1], acc = running[2];
  Value mNew = fmax(m, s);
  Value zero = f32(0.0);
  Value scale = select(isNegInf(m), zero, ex2(fsub(m, mNew)));
  Value w = select(isNegInf(s), zero, ex2(fsub(s, mNew)));
  Value dNew = fadd(fmul(d, scale), w);
  Value accNew = fadd(fmul(acc, splat(scale)), fmul(v, splat(w)));
  return {mNew, dNew, accNew};
}

KernelBuilder::MergedState
KernelBuilder::finishRunningState(ValueRange running) {
  Value m = running[0], d = running[1], acc = running[2];
  MergedState r;
  r.empty = fcmp(arith::CmpFPredicate::OEQ, d, f32(0.0));
  Value inv = select(r.empty, f32(0.0), fdiv(f32(1.0), d));
  Value v = fmul(acc, splat(inv));
  r.v = select(r.empty, vsplat(0.0), v);
  r.lse = fadd(m, lg2(d));
  return r;
}

Value KernelBuilder::warpAllReduceSum(Value x, int64_t width) {
  for (int64_t off = width / 2; off >= 1; off /= 2) {
    Value o = gpu::ShuffleOp::create(b, loc, x, static_cast<int32_t>(off), 32,
                                     gpu::ShuffleMode::XOR)
                  .getShuffleResult();
    x = fadd(x, o);
  }
  return x;
}

SmallVector<Value> KernelBuilder::warpAllReduceSumMulti(ArrayRef<Value> vals,
                                                        int64_t width,
                                                        Value lane) {
  int64_t g = vals.size();
  if (g == 1 || g > width || (g & (g - 1)) != 0) {
    SmallVector<Value> out;
    for (Value v : vals)
      out.push_back(warpAllReduceSum(v, width));
    return out;
  }
  SmallVector<Value> cur(vals.begin(), vals.end());
  Value zero32 = i32(0);
  int64_t off = width / 2;
  // Transposing steps: halve the number of values per lane each step.
  while (cur.size() > 1) {
    int64_t half = cur.size() / 2;
    Value upper = cmp(arith::CmpIPredicate::ne,
                      arith::AndIOp::create(b, loc, lane, i32(off)), zero32);
    SmallVector<Value> next;
    for (int64_t i = 0; i < half; ++i) {
      Value send = select(upper, cur[i], cur[i + half]);
      Value keep = select(upper, cur[i + half], cur[i]);
      Value recv = gpu::ShuffleOp::create(b, loc, send, int32_t(off), 32,
                                          gpu::ShuffleMode::XOR)
                       .getShuffleResult();
      next.push_back(fadd(keep, recv));
    }
    cur = std::move(next);
    off /= 2;
  }
  Value x = cur[0];
  for (; off >= 1; off /= 2) {
    Value o = gpu::ShuffleOp::create(b, loc, x, int32_t(off), 32,
                                     gpu::ShuffleMode::XOR)
                  .getShuffleResult();
    x = fadd(x, o);
  }
  // Lane pattern holding value v: bit (width >> (s+1)) set iff bit
  // (g >> (s+1)) of v is set.
  Value base = arith::AndIOp::create(b, loc, lane, i32(~(width - 1)));
  SmallVector<Value> out;
  for (int64_t v = 0; v < g; ++v) {
    int64_t pat = 0;
    for (int64_t s = 0; (g >> (s + 1)) > 0; ++s)
      if (v & (g >> (s + 1)))
        pat |= width >> (s + 1);
    Value src = arith::OrIOp::create(b, loc, base, i32(pat));
    out.push_back(
        gpu::ShuffleOp::create(b, loc, x, src, i32(32), gpu::ShuffleMode::IDX)
            .getShuffleResult());
  }
  return out;
}
