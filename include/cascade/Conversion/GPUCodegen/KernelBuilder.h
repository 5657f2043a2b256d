//===- KernelBuilder.h - Helpers to build GPU kernel bodies -----*- C++ -*-===//
//
// A thin layer over OpBuilder used by every kernel generator: index/i32/f32
// constants, thread ids, 16-byte vector loads/stores on flat memrefs at
// 64-bit (index) element offsets, fast exp2/log2 (NVVM approx intrinsics, no
// libdevice) and warp all-reduce via gpu.shuffle xor.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_CONVERSION_GPUCODEGEN_KERNELBUILDER_H
#define CASCADE_CONVERSION_GPUCODEGEN_KERNELBUILDER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir {
namespace cascade {

/// Name of an element type in the manifest ("f16", "bf16", "f32", "i32", "u8").
std::string dtypeName(Type t);

/// Builds kernel code at one insertion point.
struct KernelBuilder {
  OpBuilder &b;
  Location loc;
  KernelBuilder(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  // Constants.
  Value idx(int64_t v);
  Value i32(int64_t v);
  Value i64(int64_t v);
  Value f32(double v);
  Value negInf();
  Value vsplat(double v, int64_t n = 8);

  // Index arithmetic (64-bit).
  Value add(Value a, Value c);
  Value sub(Value a, Value c);
  Value mul(Value a, Value c);
  Value div(Value a, Value c); // unsigned
  Value rem(Value a, Value c); // unsigned
  Value minU(Value a, Value c);
  Value maxS(Value a, Value c);
  Value toIndex(Value v); // sign-extending i32/i64 -> index
  Value toI32(Value v);   // index -> i32
  Value toF32(Value v);   // index/int -> f32 (signed)
  Value cmp(arith::CmpIPredicate p, Value a, Value c);
  Value select(Value c, Value t, Value f);

  // f32 arithmetic.
  Value fadd(Value a, Value c);
  Value fsub(Value a, Value c);
  Value fmul(Value a, Value c);
  Value fdiv(Value a, Value c);
  Value fmax(Value a, Value c); // maxnumf (ignores NaN), -inf aware
  Value fcmp(arith::CmpFPredicate p, Value a, Value c);
  Value isNegInf(Value x);
  /// ex2.approx.ftz.f32 (scalar f32).
  Value ex2(Value x);
  /// exp2 of an f32 on the FMA and integer pipes instead of the special
  /// function unit (FlashAttention-4's offload of MUFU.EX2): x is clamped
  /// to >= -127 and split as x = j + f, j = round(x) (the 1.5 * 2^23 add),
  /// f in [-0.5, 0.5]; 2^f is a degree-3 polynomial with p(0) = 1 (relative
  /// error 1.0e-4), and j is added to its exponent field. At x <= -127
  /// (-inf included) the result is exactly 0; on (-127, -126) a denormal
  /// below 2^-126 (ex2.approx.ftz gives 0 there); x must be below 128.
  Value ex2Poly(Value x);
  /// lg2.approx.ftz.f32.
  Value lg2(Value x);
  Value sinApprox(Value x);
  Value cosApprox(Value x);
  /// tanh via ex2: 1 - 2 / (exp2(2 x log2e) + 1).
  Value tanhFast(Value x);

  // Thread geometry.
  Value threadId(gpu::Dimension d);
  Value blockId(gpu::Dimension d);

  /// Loads 8 elements at flat element offset `off` of a 1-D memref with
  /// 16-byte alignment and converts them to vector<8xf32>.
  Value load8(Value memref, Value off);
  /// Converts vector<8xf32> to the memref's element type and stores it at
  /// `off` with 16-byte alignment.
  void store8(Value vecF32, Value memref, Value off);
  Value loadScalar(Value memref, Value off);
  void storeScalar(Value v, Value memref, Value off);
  Value splat(Value scalar, int64_t n = 8);
  /// Sum of the 8 lanes of a vector<8xf32>.
  Value hsum(Value v);
  /// fma(a, b, c) on f32 or vector<8xf32> (llvm.intr.fma).
  Value fma(Value a, Value b, Value c);
  /// Dot product of two vector<8xf32> as a chain of 8 fmas.
  Value dot8(Value a, Value b);

  /// Merges two attention states (v_a, s_a), (v_b, s_b) in base 2 with the
  /// exact empty-state rules (docs/semantics.md): an empty state (s = -inf)
  /// returns the other one exactly, two give (0, -inf). `v` is f32 or a
  /// vector of f32; returns (v, s).
  std::pair<Value, Value> mergeStates(Value va, Value sa, Value vb, Value sb);

  /// Butterfly all-reduce (sum or max) of an f32 over groups of `width`
  /// consecutive lanes (width a power of two <= 32).
  Value warpAllReduceSum(Value x, int64_t width);
  /// All-reduce (sum) of G = vals.size() f32 values at once over groups of
  /// `width` consecutive lanes (G <= width, both powers of two): a
  /// transposing butterfly (G-1 + log2(width/G) shuffles) then G index
  /// shuffles to broadcast; fewer shuffles than G separate all-reduces.
  /// `lane` is the lane id within the warp (i32).
  SmallVector<Value> warpAllReduceSumMulti(ArrayRef<Value> vals, int64_t width,
                                           Value lane);

  /// The largest i in [0, n) with `key(i) pred w` (pred: sle or ule) for a
  /// key that does not decrease with i, by binary search (an scf.while over
  /// [lo, hi)); 0 when no i qualifies. `key` builds at the loop's insertion
  /// point.
  Value lastIndexWithKeyAtMost(Value n, Value w, arith::CmpIPredicate pred,
                               function_ref<Value(KernelBuilder &, Value)> key);

  /// Online merge of many attention states (base-2 lse): the running
  /// (max, sum of weights, weighted sum of v) starts at emptyRunningState()
  /// and absorbs one state (v: vector<8xf32>, s: f32) per absorbState();
  /// finishRunningState() gives the merged v (0 when only empty states were
  /// absorbed), whether it is empty, and its base-2 lse before the empty
  /// case is applied (max + log2(sum)).
  SmallVector<Value> emptyRunningState();
  SmallVector<Value> absorbState(ValueRange running, Value v, Value s);
  struct MergedState {
    Value v, empty, lse;
  };
  MergedState finishRunningState(ValueRange running);
};

} // namespace cascade
} // namespace mlir

#endif
