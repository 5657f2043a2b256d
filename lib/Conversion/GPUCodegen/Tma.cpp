//===- Tma.cpp - TMA tile loads of Hopper (sm_90a) kernels ----------------===//

#include "cascade/Conversion/GPUCodegen/Tma.h"

#include "cascade/Conversion/GPUCodegen/WgmmaLayout.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/Support/ErrorHandling.h"

using namespace mlir;
using namespace mlir::cascade;

static int64_t swizzleSpanBytes(nvgpu::TensorMapSwizzleKind swizzle) {
  switch (swizzle) {
  case nvgpu::TensorMapSwizzleKind::SWIZZLE_NONE:
    return 0;
  case nvgpu::TensorMapSwizzleKind::SWIZZLE_32B:
    return 32;
  case nvgpu::TensorMapSwizzleKind::SWIZZLE_64B:
    return 64;
  case nvgpu::TensorMapSwizzleKind::SWIZZLE_128B:
    return 128;
  }
  llvm_unreachable("unknown swizzle");
}

nvgpu::TensorMapDescriptorType
cascade::tmaDescriptorType(MLIRContext *ctx, ArrayRef<int64_t> boxShape,
                           Type elementType,
                           nvgpu::TensorMapSwizzleKind swizzle) {
  if (boxShape.empty() || static_cast<int64_t>(boxShape.size()) > kTmaMaxRank)
    llvm::report_fatal_error("TMA box: the rank must be 1 to 5");
  for (int64_t d : boxShape)
    if (d < 1 || d > kTmaMaxBoxDim)
      llvm::report_fatal_error("TMA box: every extent must be in [1, 256]");
  int64_t elementBytes = elementType.getIntOrFloatBitWidth() / 8;
  int64_t innerBytes = boxShape.back() * elementBytes;
  if (innerBytes % 16 != 0)
    llvm::report_fatal_error(
        "TMA box: the innermost extent must span a multiple of 16 bytes");
  int64_t span = swizzleSpanBytes(swizzle);
  if (span && innerBytes > span)
    llvm::report_fatal_error("TMA box: the innermost extent spans more bytes "
                             "than the swizzle");
  auto wg = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  auto tile =
      MemRefType::get(boxShape, elementType, MemRefLayoutAttrInterface(), wg);
  return nvgpu::TensorMapDescriptorType::get(
      ctx, tile, swizzle, nvgpu::TensorMapL2PromoKind::L2PROMO_NONE,
      nvgpu::TensorMapOOBKind::OOB_ZERO,
      nvgpu::TensorMapInterleaveKind::INTERLEAVE_NONE);
}

int64_t cascade::tmaBoxBytes(nvgpu::TensorMapDescriptorType type) {
  MemRefType tile = type.getTensor();
  return tile.getNumElements() * tile.getElementTypeBitWidth() / 8;
}

Value cascade::tmaDescriptorFromPointer(KernelBuilder &k, Value pointer,
                                        nvgpu::TensorMapDescriptorType type) {
  return UnrealizedConversionCastOp::create(k.b, k.loc, TypeRange{type},
                                            ValueRange{pointer})
      .getResult(0);
}

void cascade::tmaPrefetchDescriptor(KernelBuilder &k, Value descriptor,
                                    Value pred) {
  nvgpu::TmaPrefetchOp::create(k.b, k.loc, descriptor, pred);
}

void cascade::fenceMbarrierInit(KernelBuilder &k) {
  NVVM::FenceMbarrierInitOp::create(k.b, k.loc);
}

Value cascade::tmaBoxView(KernelBuilder &k, Value flat,
                          nvgpu::TensorMapDescriptorType type) {
  MemRefType tile = type.getTensor();
  auto flatType = cast<MemRefType>(flat.getType());
  if (flatType.getRank() != 1 ||
      flatType.getShape()[0] != tile.getNumElements() ||
      flatType.getElementType() != tile.getElementType())
    llvm::report_fatal_error("TMA box view: the buffer must be 1-D with the "
                             "box's element type and element count");
  // memref.expand_shape would need expand-strided-metadata in every
  // pipeline: view the bytes under `flat` in the box's shape instead.
  auto view = flat.getDefiningOp<memref::ViewOp>();
  if (!view)
    llvm::report_fatal_error("TMA box view: the buffer must be a memref.view "
                             "of the dynamic shared memory");
  return memref::ViewOp::create(k.b, k.loc, tile, view.getSource(),
                                view.getByteShift(), ValueRange{});
}

void cascade::tmaLoadBox(KernelBuilder &k, Value descriptor,
                         ValueRange coordinates, Value barriers,
                         Value barrierId, Value dst, Value pred) {
  auto type = cast<nvgpu::TensorMapDescriptorType>(descriptor.getType());
  if (static_cast<int64_t>(coordinates.size()) != type.getTensor().getRank())
    llvm::report_fatal_error(
        "TMA load: one coordinate per dimension of the tensor map");
  nvgpu::TmaAsyncLoadOp::create(k.b, k.loc, dst, barriers, descriptor,
                                coordinates, barrierId,
                                /*multicastMask=*/Value(), pred);
}

Value cascade::swizzle128BOffset(KernelBuilder &k, Value row, Value byteCol) {
  // row * 128 + (byteCol ^ ((row % 8) << 4)), as wgmma::swizzle128B.
  Value phase = k.mul(k.rem(row, k.idx(8)), k.idx(16));
  Value col = arith::XOrIOp::create(k.b, k.loc, byteCol, phase);
  return k.add(k.mul(row, k.idx(wgmma::kSwizzle128RowBytes)), col);
}
