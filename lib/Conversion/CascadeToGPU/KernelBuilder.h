//===- KernelBuilder.h - Helpers to build cascade GPU kernels ---*- C++ -*-===//
//
// A thin layer over OpBuilder used by the lowering patterns: index/i32/f32
// constants, thread ids, 16-byte vector loads/stores on flat memrefs at
// 64-bit (index) element offsets, fast exp2/log2 (NVVM approx intrinsics, no
// libdevice), warp all-reduce via gpu.shuffle xor, and host-side helpers
// (flattening memrefs, the kernel module, manifest entries).
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_LIB_CONVERSION_CASCADETOGPU_KERNELBUILDER_H
#define CASCADE_LIB_CONVERSION_CASCADETOGPU_KERNELBUILDER_H

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

/// Name of the gpu.module holding every cascade kernel.
inline constexpr llvm::StringLiteral kKernelModuleName = "cascade_kernels";
/// Attribute (DictionaryAttr) on each gpu.func: its manifest entry.
inline constexpr llvm::StringLiteral kManifestAttrName = "cascade.manifest";
/// Attribute (ArrayAttr of dictionaries) on the top module, collected by the
/// conversion pass so that it survives gpu-module-to-binary.
inline constexpr llvm::StringLiteral kBundleAttrName = "cascade.bundle";

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
};

/// The kernel-side type of a flat buffer: memref<?xT, strided<[1],
/// offset: ?>> (ABI: 5 params ptr, ptr, offset, size, stride).
MemRefType flatMemRefType(Type elementType);

/// Host side: flattens a contiguous memref (identity layout) to memref<?xT>
/// over the same buffer. Returns {flat, numElements}.
std::pair<Value, Value> flattenContiguous(OpBuilder &b, Location loc, Value m);
/// Host side: flattens a 1-D strided memref to memref<?xT> starting at its
/// first element, covering (n-1)*stride+1 elements. Returns {flat, n, stride}
/// (index values).
std::tuple<Value, Value, Value> flattenStrided1D(OpBuilder &b, Location loc,
                                                 Value m);

/// Gets (or creates) `gpu.module @cascade_kernels` in `module` and marks the
/// module a gpu.container_module.
gpu::GPUModuleOp getOrCreateKernelModule(ModuleOp module);

/// One kernel parameter in manifest order.
struct KernelParam {
  std::string name;
  std::string kind; // memref | i32 | i64 | f32
  Type type;        // memref<?xT> or scalar
};

/// Creates a gpu.func kernel named `name` (unless it exists) with `params`
/// and the given manifest dictionary; `bodyBuilder` fills the body (the
/// builder is at the start of the entry block, args are the block args).
/// Returns the function.
gpu::GPUFuncOp getOrCreateKernel(
    ModuleOp module, StringRef name, ArrayRef<KernelParam> params,
    ArrayRef<int64_t> block, DictionaryAttr manifest,
    llvm::function_ref<void(OpBuilder &, gpu::GPUFuncOp)> bodyBuilder);

/// Builds a manifest dictionary.
DictionaryAttr makeManifest(MLIRContext *ctx, StringRef name, StringRef op,
                            ArrayRef<int64_t> block, ArrayRef<Attribute> grid,
                            int64_t dynSmem, ArrayRef<NamedAttribute> statics,
                            ArrayRef<KernelParam> params,
                            ArrayRef<StringRef> planArrays);
/// A grid entry {"param": p, "div": k} (with "mul": m when m != 1:
/// ceil(p * m / k)).
Attribute gridRule(MLIRContext *ctx, StringRef param, int64_t div,
                   int64_t mul = 1);

} // namespace cascade
} // namespace mlir

#endif
