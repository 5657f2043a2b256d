//===- TensorMap.cpp - TMA tensor maps built by the runtime ---------------===//

#include "cascade/Runtime/TensorMap.h"

namespace cascade::runtime {

int64_t tensorMapElementBytes(TensorMapDtype dtype) {
  switch (dtype) {
  case TensorMapDtype::U8:
    return 1;
  case TensorMapDtype::U16:
  case TensorMapDtype::F16:
  case TensorMapDtype::BF16:
    return 2;
  case TensorMapDtype::U32:
  case TensorMapDtype::I32:
  case TensorMapDtype::F32:
    return 4;
  case TensorMapDtype::U64:
  case TensorMapDtype::I64:
  case TensorMapDtype::F64:
    return 8;
  }
  return 0;
}

namespace {

int64_t swizzleSpan(TensorMapSwizzle swizzle) {
  switch (swizzle) {
  case TensorMapSwizzle::None:
    return 0;
  case TensorMapSwizzle::B32:
    return 32;
  case TensorMapSwizzle::B64:
    return 64;
  case TensorMapSwizzle::B128:
    return 128;
  }
  return -1;
}

bool isFloat(TensorMapDtype dtype) {
  return dtype == TensorMapDtype::F16 || dtype == TensorMapDtype::BF16 ||
         dtype == TensorMapDtype::F32 || dtype == TensorMapDtype::F64;
}

} // namespace

Status validateTiledTensorMap(const TiledTensorMapDesc &desc) {
  int64_t elementBytes = tensorMapElementBytes(desc.dtype);
  if (elementBytes == 0)
    return makeError(ErrorCode::InvalidArgument,
                     "tensor map: unknown element type %d",
                     static_cast<int>(desc.dtype));
  int64_t span = swizzleSpan(desc.swizzle);
  if (span < 0)
    return makeError(ErrorCode::InvalidArgument,
                     "tensor map: unknown swizzle %d",
                     static_cast<int>(desc.swizzle));
  if (static_cast<int>(desc.l2Promotion) < 0 ||
      static_cast<int>(desc.l2Promotion) > 3)
    return makeError(ErrorCode::InvalidArgument,
                     "tensor map: unknown L2 promotion %d",
                     static_cast<int>(desc.l2Promotion));
  if (desc.oobFill != TensorMapOobFill::Zero &&
      desc.oobFill != TensorMapOobFill::NaN)
    return makeError(ErrorCode::InvalidArgument,
                     "tensor map: unknown out-of-bounds fill %d",
                     static_cast<int>(desc.oobFill));
  if (desc.oobFill == TensorMapOobFill::NaN && !isFloat(desc.dtype))
    return makeError(ErrorCode::InvalidArgument,
                     "tensor map: NaN out-of-bounds fill needs a "
                     "floating-point element type");
  size_t rank = desc.globalDims.size();
  if (rank < 1 || rank > kTensorMapMaxRank)
    return makeError(ErrorCode::InvalidArgument,
                     "tensor map: rank %zu is not in [1, %zu]", rank,
                     kTensorMapMaxRank);
  if (desc.globalStrides.size() != rank - 1)
    return makeError(ErrorCode::InvalidArgument,
                     "tensor map: %zu global strides for rank %zu (expected "
                     "%zu: dims 1 .. rank-1)",
                     desc.globalStrides.size(), rank, rank - 1);
  if (desc.boxDims.size() != rank)
    return makeError(ErrorCode::InvalidArgument,
                     "tensor map: %zu box dims for rank %zu",
                     desc.boxDims.size(), rank);
  if (!desc.elementStrides.empty() && desc.elementStrides.size() != rank)
    return makeError(ErrorCode::InvalidArgument,
                     "tensor map: %zu element strides for rank %zu",
                     desc.elementStrides.size(), rank);
  if (desc.globalAddress == 0 || desc.globalAddress % 16 != 0)
    return makeError(ErrorCode::InvalidArgument,
                     "tensor map: global address 0x%llx is not a non-null "
                     "multiple of 16",
                     static_cast<unsigned long long>(desc.globalAddress));
  for (size_t i = 0; i < rank; ++i)
    if (desc.globalDims[i] < 1 || desc.globalDims[i] > (uint64_t(1) << 32))
      return makeError(ErrorCode::InvalidArgument,
                       "tensor map: global dim %zu is %llu, not in [1, 2^32]",
                       i, static_cast<unsigned long long>(desc.globalDims[i]));
  for (size_t i = 0; i + 1 < rank; ++i)
    if (desc.globalStrides[i] % 16 != 0 ||
        desc.globalStrides[i] >= (uint64_t(1) << 40))
      return makeError(ErrorCode::InvalidArgument,
                       "tensor map: global stride of dim %zu is %llu bytes, "
                       "not a multiple of 16 below 2^40",
                       i + 1,
                       static_cast<unsigned long long>(desc.globalStrides[i]));
  for (size_t i = 0; i < rank; ++i)
    if (desc.boxDims[i] < 1 || desc.boxDims[i] > kTensorMapMaxBoxDim)
      return makeError(ErrorCode::InvalidArgument,
                       "tensor map: box dim %zu is %u, not in [1, %u]", i,
                       desc.boxDims[i], kTensorMapMaxBoxDim);
  for (size_t i = 0; i < desc.elementStrides.size(); ++i)
    if (desc.elementStrides[i] < 1 ||
        desc.elementStrides[i] > kTensorMapMaxElementStride)
      return makeError(ErrorCode::InvalidArgument,
                       "tensor map: element stride %zu is %u, not in [1, %u]",
                       i, desc.elementStrides[i], kTensorMapMaxElementStride);
  int64_t innerBytes = int64_t(desc.boxDims[0]) * elementBytes;
  if (innerBytes % 16 != 0)
    return makeError(ErrorCode::InvalidArgument,
                     "tensor map: the box's inner dim spans %lld bytes, not "
                     "a multiple of 16",
                     static_cast<long long>(innerBytes));
  if (span > 0 && innerBytes > span)
    return makeError(ErrorCode::InvalidArgument,
                     "tensor map: the box's inner dim spans %lld bytes, more "
                     "than the %lld-byte swizzle",
                     static_cast<long long>(innerBytes),
                     static_cast<long long>(span));
  return Status::success();
}

Status encodeTiledTensorMap(const cuda::DriverApi &api,
                            const TiledTensorMapDesc &desc, TensorMap &out) {
  CASCADE_RETURN_IF_ERROR(validateTiledTensorMap(desc));
  if (!api.cuTensorMapEncodeTiled)
    return makeError(ErrorCode::Unsupported,
                     "the CUDA driver lacks cuTensorMapEncodeTiled (TMA "
                     "tensor maps need a CUDA 12.0 or newer driver)");
  size_t rank = desc.globalDims.size();
  std::vector<uint32_t> elementStrides = desc.elementStrides;
  if (elementStrides.empty())
    elementStrides.assign(rank, 1);
  TensorMap map{};
  cuda::CUresult r = api.cuTensorMapEncodeTiled(
      &map, static_cast<int>(desc.dtype), static_cast<unsigned>(rank),
      reinterpret_cast<void *>(static_cast<uintptr_t>(desc.globalAddress)),
      desc.globalDims.data(), desc.globalStrides.data(), desc.boxDims.data(),
      elementStrides.data(), /*interleave=*/0, static_cast<int>(desc.swizzle),
      static_cast<int>(desc.l2Promotion), static_cast<int>(desc.oobFill));
  CASCADE_RETURN_IF_ERROR(cuda::checkCuda(api, r, "cuTensorMapEncodeTiled"));
  out = map;
  return Status::success();
}

} // namespace cascade::runtime
