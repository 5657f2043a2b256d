//===- Wgmma.cpp - Building blocks of Hopper (sm_90a) kernels -------------===//

#include "cascade/Conversion/GPUCodegen/Wgmma.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "llvm/Support/ErrorHandling.h"

using namespace mlir;
using namespace mlir::cascade;

//===----------------------------------------------------------------------===//
// wgmma
//===----------------------------------------------------------------------===//

Value cascade::sharedAddress(KernelBuilder &k, Value smem,
                             Value elementOffset) {
  auto type = cast<MemRefType>(smem.getType());
  int64_t elementBytes = type.getElementTypeBitWidth() / 8;
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(k.b, k.loc, smem);
  Value addr = k.add(base, k.mul(elementOffset, k.idx(elementBytes)));
  return arith::IndexCastUIOp::create(k.b, k.loc, k.b.getI64Type(), addr);
}

Value cascade::wgmmaDescriptor(KernelBuilder &k, Value address,
                               int64_t leadingByteOffset,
                               int64_t strideByteOffset,
                               wgmma::Swizzle swizzle) {
  std::optional<uint64_t> fixed = wgmma::encodeDescriptor(
      {0, static_cast<uint64_t>(leadingByteOffset),
       static_cast<uint64_t>(strideByteOffset), 0, swizzle});
  if (leadingByteOffset < 0 || strideByteOffset < 0 || !fixed)
    llvm::report_fatal_error("wgmma descriptor: byte offsets must be "
                             "multiples of 16 below 2^18");
  // Start address field: bits 4-17 of the shared address, at bits 0-13.
  Value field = arith::ShRUIOp::create(
      k.b, k.loc,
      arith::AndIOp::create(k.b, k.loc, address,
                            k.i64(int64_t(wgmma::kMaxFieldBytes - 1))),
      k.i64(4));
  return arith::OrIOp::create(k.b, k.loc, field,
                              k.i64(static_cast<int64_t>(*fixed)));
}

Type cascade::wgmmaAccumulatorType(MLIRContext *ctx, int64_t n) {
  if (!wgmma::Accumulator::validN(n))
    llvm::report_fatal_error("wgmma: n must be a multiple of 8 in [8, 256]");
  SmallVector<Type> fields(wgmma::Accumulator::numRegisters(n),
                           Float32Type::get(ctx));
  return LLVM::LLVMStructType::getLiteral(ctx, fields);
}

Value cascade::wgmmaZeroAccumulator(KernelBuilder &k, int64_t n) {
  return LLVM::ZeroOp::create(k.b, k.loc,
                              wgmmaAccumulatorType(k.b.getContext(), n));
}

Value cascade::wgmmaAccumulatorElement(KernelBuilder &k, Value acc,
                                       int64_t reg) {
  return LLVM::ExtractValueOp::create(k.b, k.loc, acc, reg);
}

void cascade::fenceProxyAsyncShared(KernelBuilder &k) {
  NVVM::FenceProxyOp::create(
      k.b, k.loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(k.b.getContext(),
                                 NVVM::SharedSpace::shared_cta));
}

void cascade::wgmmaFence(KernelBuilder &k) {
  NVVM::WgmmaFenceAlignedOp::create(k.b, k.loc);
}

static NVVM::MMALayout layoutOf(WgmmaMajor major, bool isA) {
  // nvvm.wgmma.mma_async's layouts: A row / B col are K-major (no
  // transpose), A col / B row are M- / N-major (imm-trans 1).
  if (isA)
    return major == WgmmaMajor::K ? NVVM::MMALayout::row : NVVM::MMALayout::col;
  return major == WgmmaMajor::K ? NVVM::MMALayout::col : NVVM::MMALayout::row;
}

Value cascade::wgmmaMmaAsync(KernelBuilder &k, Value acc, Value descA,
                             Value descB, int64_t n, Type elementType,
                             bool accumulate, WgmmaMajor majorA,
                             WgmmaMajor majorB) {
  NVVM::WGMMATypes t;
  if (elementType.isF16())
    t = NVVM::WGMMATypes::f16;
  else if (elementType.isBF16())
    t = NVVM::WGMMATypes::bf16;
  else
    llvm::report_fatal_error("wgmma: operands must be f16 or bf16");
  MLIRContext *ctx = k.b.getContext();
  return NVVM::WgmmaMmaAsyncOp::create(
      k.b, k.loc, wgmmaAccumulatorType(ctx, n), acc, descA, descB,
      NVVM::MMAShapeAttr::get(ctx, 64, n, 16), t, t, NVVM::WGMMATypes::f32,
      accumulate ? NVVM::WGMMAScaleOut::one : NVVM::WGMMAScaleOut::zero,
      NVVM::WGMMAScaleIn::one, NVVM::WGMMAScaleIn::one,
      layoutOf(majorA, /*isA=*/true), layoutOf(majorB, /*isA=*/false),
      /*satfinite=*/NVVM::MMAIntOverflowAttr());
}

void cascade::wgmmaCommitGroup(KernelBuilder &k) {
  NVVM::WgmmaGroupSyncAlignedOp::create(k.b, k.loc);
}

void cascade::wgmmaWaitGroup(KernelBuilder &k, int64_t pending) {
  NVVM::WgmmaWaitGroupSyncOp::create(k.b, k.loc, pending);
}

//===----------------------------------------------------------------------===//
// mbarrier
//===----------------------------------------------------------------------===//

Value cascade::createMbarriers(KernelBuilder &k, int64_t count) {
  MLIRContext *ctx = k.b.getContext();
  auto wg = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  auto type = nvgpu::MBarrierGroupType::get(ctx, wg, count);
  return nvgpu::MBarrierCreateOp::create(k.b, k.loc, type);
}

void cascade::mbarrierInit(KernelBuilder &k, Value group, Value id,
                           Value arrivals, Value pred) {
  nvgpu::MBarrierInitOp::create(k.b, k.loc, group, arrivals, id, pred);
}

void cascade::mbarrierArriveExpectTx(KernelBuilder &k, Value group, Value id,
                                     Value txBytes, Value pred) {
  nvgpu::MBarrierArriveExpectTxOp::create(k.b, k.loc, group, txBytes, id, pred);
}

void cascade::mbarrierWait(KernelBuilder &k, Value group, Value id,
                           Value parity) {
  // The suspend-time hint of each try_wait (ns); the op retries until the
  // phase completes.
  static constexpr int64_t kTicks = 10000000;
  nvgpu::MBarrierTryWaitParityOp::create(k.b, k.loc, group, parity,
                                         k.idx(kTicks), id);
}

//===----------------------------------------------------------------------===//
// Register reallocation
//===----------------------------------------------------------------------===//

void cascade::setMaxRegisters(KernelBuilder &k, int64_t count, bool increase) {
  if (count < 24 || count > 256 || count % 8 != 0)
    llvm::report_fatal_error(
        "setmaxnreg: the count must be a multiple of 8 in [24, 256]");
  NVVM::SetMaxRegisterOp::create(k.b, k.loc, static_cast<uint32_t>(count),
                                 increase
                                     ? NVVM::SetMaxRegisterAction::increase
                                     : NVVM::SetMaxRegisterAction::decrease);
}
