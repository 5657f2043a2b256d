//===- Fp8Convert.h - fp8 KV elements to f16 / bf16 / f32 -------*- C++ -*-===//
//
// The conversions of fp8 KV-cache elements (f8E4M3FN, f8E5M2) into the types
// the kernels compute in, in registers, after the loads that move the fp8
// bytes (half of an f16 cache's). Pairs of fp8 values go through one
// `cvt.rn.f16x2.{e4m3x2,e5m2x2}` each (nvvm.convert.f8x2.to.f16x2), which
// exists from sm_89 on (PTX ISA 7.8); every fp8 value is exactly an f16
// value, so the conversion is exact, and f16 -> f32 -> bf16 is exact too
// (an fp8 value has at most 3 significant bits and an exponent inside
// bf16's range). Chips below sm_89 have no fp8 conversion instruction: the
// kernel selection refuses fp8 KV there (fp8KVConvertSupported).
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_CONVERSION_GPUCODEGEN_FP8CONVERT_H
#define CASCADE_CONVERSION_GPUCODEGEN_FP8CONVERT_H

#include "cascade/Conversion/GPUCodegen/KernelBuilder.h"

namespace mlir {
namespace cascade {

/// f8E4M3FN or f8E5M2: the fp8 KV element types.
bool isFp8KVType(Type t);

/// The first compute capability with cvt.rn.f16x2.e4m3x2 / .e5m2x2.
inline constexpr int kFp8ConvertMinComputeCapability = 89;
/// Whether a chip of compute capability `cc` converts fp8 KV.
inline bool fp8KVConvertSupported(int cc) {
  return cc >= kFp8ConvertMinComputeCapability;
}

/// vector<N x fp8> (N a power of two, >= 2) -> vector<N x f16>, exactly.
Value fp8ToF16(KernelBuilder &k, Value v);
/// vector<N x fp8> -> vector<N x to> (f16, bf16 or f32), exactly.
Value fp8Convert(KernelBuilder &k, Value v, Type to);
/// 8 consecutive elements of a flat memref at element offset `off` as a
/// vector<8xf32>: an 8-byte load and 4 conversions for an fp8 memref,
/// KernelBuilder::load8 for any other.
Value loadKV8AsF32(KernelBuilder &k, Value memref, Value off);

} // namespace cascade
} // namespace mlir

#endif // CASCADE_CONVERSION_GPUCODEGEN_FP8CONVERT_H
