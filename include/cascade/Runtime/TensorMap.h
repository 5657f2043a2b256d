//===- TensorMap.h - TMA tensor maps built by the runtime -------*- C++ -*-===//
//
// A Hopper kernel's TMA copies read a 128-byte CUtensorMap that describes a
// global tensor and the box (tile) one copy moves. The runtime builds it with
// the driver's cuTensorMapEncodeTiled from a typed description, checked
// first against the driver's documented constraints so that a bad
// description is a clear error naming the field, not an opaque
// CUDA_ERROR_INVALID_VALUE. The kernel receives the map's device address
// (GPUCodegen/Tma.h on the compiler side).
//
// Dimensions are listed innermost (contiguous) first, as the driver and the
// TMA copy's coordinates take them. Maps are tiled and not interleaved.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_RUNTIME_TENSORMAP_H
#define CASCADE_RUNTIME_TENSORMAP_H

#include "cascade/Runtime/Driver.h"
#include "cascade/Runtime/Status.h"

#include <cstdint>
#include <vector>

namespace cascade::runtime {

/// Element types of a tensor map (values: cuda.h's CUtensorMapDataType).
enum class TensorMapDtype : int {
  U8 = 0,
  U16 = 1,
  U32 = 2,
  I32 = 3,
  U64 = 4,
  I64 = 5,
  F16 = 6,
  F32 = 7,
  F64 = 8,
  BF16 = 9,
};

/// Shared-memory swizzle of the box (values: CUtensorMapSwizzle).
enum class TensorMapSwizzle : int { None = 0, B32 = 1, B64 = 2, B128 = 3 };

/// L2 sector promotion (values: CUtensorMapL2promotion).
enum class TensorMapL2Promotion : int { None = 0, B64 = 1, B128 = 2, B256 = 3 };

/// What out-of-bounds elements of a box read as (values:
/// CUtensorMapFloatOOBfill): zero, or NaN for floating-point maps.
enum class TensorMapOobFill : int { Zero = 0, NaN = 1 };

/// The bytes of one element.
int64_t tensorMapElementBytes(TensorMapDtype dtype);

/// The largest rank and box extent of a tiled map, and the largest element
/// stride.
constexpr size_t kTensorMapMaxRank = 5;
constexpr uint32_t kTensorMapMaxBoxDim = 256;
constexpr uint32_t kTensorMapMaxElementStride = 8;

/// A tiled tensor map: a tensor of rank globalDims.size() at device address
/// globalAddress, copied in boxes of boxDims elements.
struct TiledTensorMapDesc {
  TensorMapDtype dtype = TensorMapDtype::F16;
  /// Device address of element 0: a multiple of 16.
  uint64_t globalAddress = 0;
  /// Extent of each dimension, innermost first: 1 to 5 dims, each in
  /// [1, 2^32].
  std::vector<uint64_t> globalDims;
  /// Byte stride of dims 1 .. rank-1 (dim 0 is contiguous): rank - 1
  /// entries, each a multiple of 16 below 2^40.
  std::vector<uint64_t> globalStrides;
  /// Box extent of each dimension, innermost first: rank entries in
  /// [1, 256]; the innermost spans a multiple of 16 bytes, and at most the
  /// swizzle span (32, 64 or 128 bytes) when swizzled.
  std::vector<uint32_t> boxDims;
  /// Traversal stride of each dimension in elements, in [1, 8]; empty means
  /// 1 everywhere.
  std::vector<uint32_t> elementStrides;
  TensorMapSwizzle swizzle = TensorMapSwizzle::B128;
  TensorMapL2Promotion l2Promotion = TensorMapL2Promotion::None;
  TensorMapOobFill oobFill = TensorMapOobFill::Zero;
};

/// The encoded map, as the driver's CUtensorMap (128 bytes, 64-byte
/// aligned). Copy it to device memory (or pass it as a __grid_constant__
/// kernel parameter) for the kernel.
struct alignas(64) TensorMap {
  uint64_t opaque[16];
};
static_assert(sizeof(TensorMap) == 128, "CUtensorMap is 128 bytes");

/// Checks `desc` against the constraints above; InvalidArgument with a
/// message naming the field otherwise.
Status validateTiledTensorMap(const TiledTensorMapDesc &desc);

/// Encodes `desc` with the driver's cuTensorMapEncodeTiled after
/// validateTiledTensorMap (the driver is not called for an invalid
/// description). Unsupported when the driver lacks the entry point (before
/// CUDA 12.0); Driver when the driver rejects the map. `out` is written
/// only on success.
Status encodeTiledTensorMap(const cuda::DriverApi &api,
                            const TiledTensorMapDesc &desc, TensorMap &out);

} // namespace cascade::runtime

#endif // CASCADE_RUNTIME_TENSORMAP_H
