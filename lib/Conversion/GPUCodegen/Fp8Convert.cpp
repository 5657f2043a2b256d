//===- Fp8Convert.cpp - fp8 KV elements to f16 / bf16 / f32 ---------------===//

#include "cascade/Conversion/GPUCodegen/Fp8Convert.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

#include "llvm/ADT/Sequence.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::cascade;

bool cascade::isFp8KVType(Type t) {
  return isa<Float8E4M3FNType, Float8E5M2Type>(t);
}

Value cascade::fp8ToF16(KernelBuilder &k, Value v) {
  auto vt = cast<VectorType>(v.getType());
  Type fp8 = vt.getElementType();
  assert(isFp8KVType(fp8) &&
         llvm::isPowerOf2_64(static_cast<uint64_t>(vt.getNumElements())) &&
         vt.getNumElements() >= 2 && "2^k fp8 elements");
  OpBuilder &b = k.b;
  int64_t n = vt.getNumElements();
  Value bytes = arith::BitcastOp::create(
      b, k.loc, VectorType::get({n}, b.getI8Type()), v);
  auto f16x2 = VectorType::get({2}, b.getF16Type());
  // One cvt per byte pair; vector.shuffle (LLVM shufflevector) slices the
  // pairs out and concatenates the halves.
  SmallVector<Value> parts;
  for (int64_t i = 0; i < n; i += 2) {
    Value pair = vector::ShuffleOp::create(b, k.loc, bytes, bytes,
                                           ArrayRef<int64_t>{i, i + 1});
    parts.push_back(NVVM::ConvertF8x2ToF16x2Op::create(b, k.loc, f16x2, pair,
                                                       /*relu=*/false, fp8));
  }
  while (parts.size() > 1) {
    SmallVector<Value> next;
    for (size_t i = 0; i + 1 < parts.size(); i += 2) {
      int64_t w = cast<VectorType>(parts[i].getType()).getNumElements();
      next.push_back(vector::ShuffleOp::create(
          b, k.loc, parts[i], parts[i + 1],
          llvm::to_vector(llvm::seq<int64_t>(0, 2 * w))));
    }
    if (parts.size() % 2)
      next.push_back(parts.back());
    parts = std::move(next);
  }
  return parts.empty() ? Value() : parts.front();
}

Value cascade::fp8Convert(KernelBuilder &k, Value v, Type to) {
  Value h = fp8ToF16(k, v);
  if (to.isF16())
    return h;
  int64_t n = cast<VectorType>(v.getType()).getNumElements();
  Value f = arith::ExtFOp::create(k.b, k.loc,
                                  VectorType::get({n}, k.b.getF32Type()), h);
  if (to.isF32())
    return f;
  assert(to.isBF16() && "fp8 converts to f16, bf16 or f32");
  return arith::TruncFOp::create(k.b, k.loc, VectorType::get({n}, to), f);
}

Value cascade::loadKV8AsF32(KernelBuilder &k, Value memref, Value off) {
  Type et = cast<MemRefType>(memref.getType()).getElementType();
  if (!isFp8KVType(et))
    return k.load8(memref, off);
  Value v = vector::LoadOp::create(k.b, k.loc, VectorType::get({8}, et), memref,
                                   ValueRange{off}, /*nontemporal=*/false,
                                   llvm::Align(8));
  return fp8Convert(k, v, k.b.getF32Type());
}
