//===- Tma.h - TMA tile loads of Hopper (sm_90a) kernels --------*- C++ -*-===//
//
// The device side of the Tensor Memory Accelerator, on upstream nvgpu ops:
// a tile of a global tensor, described by a CUtensorMap that the host builds
// (cuTensorMapEncodeTiled; the runtime's TensorMap.h), copied into shared
// memory by one thread with cp.async.bulk.tensor and completing on an
// mbarrier (Wgmma.h's mbarrier helpers) as transaction bytes.
//
// - The tensor map reaches the kernel as an !llvm.ptr argument, the device
//   address of the 128-byte CUtensorMap in global memory: a gpu.func
//   argument of type !nvgpu.tensormap.descriptor does not legalize, so the
//   pointer is cast with builtin.unrealized_conversion_cast, which
//   convert-nvgpu-to-nvvm resolves.
// - Coordinates are element indices, innermost (contiguous) dimension
//   first, as cp.async.bulk.tensor takes them; shapes here are memref
//   shapes, outermost first.
// - After mbarrier.init and before any TMA copy can complete on the barrier,
//   fence.mbarrier_init.release.cluster (fenceMbarrierInit) makes the
//   initialization visible to the async proxy that completes the
//   transaction; a CTA barrier then makes it visible to the waiting threads.
//
// Nothing here checks the target: cp.async.bulk.tensor needs sm_90.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_CONVERSION_GPUCODEGEN_TMA_H
#define CASCADE_CONVERSION_GPUCODEGEN_TMA_H

#include "cascade/Conversion/GPUCodegen/KernelBuilder.h"

#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

namespace mlir {
namespace cascade {

/// The largest box extent of a tiled tensor map, per dimension.
constexpr int64_t kTmaMaxBoxDim = 256;
/// The largest rank of a tiled tensor map.
constexpr int64_t kTmaMaxRank = 5;

/// The !nvgpu.tensormap.descriptor of tiles `boxShape` (memref order,
/// outermost first, 1 to 5 dims of at most 256) of `elementType` in
/// workgroup memory, out-of-bounds elements filled with zero, no
/// interleave. With the 128-byte swizzle the box's innermost extent must
/// span at most 128 bytes. Invalid shapes are generator bugs and abort with
/// a message.
nvgpu::TensorMapDescriptorType
tmaDescriptorType(MLIRContext *ctx, ArrayRef<int64_t> boxShape,
                  Type elementType,
                  nvgpu::TensorMapSwizzleKind swizzle =
                      nvgpu::TensorMapSwizzleKind::SWIZZLE_128B);

/// The bytes one TMA copy of a `type` box moves: the transaction count to
/// announce with mbarrier arrive.expect_tx.
int64_t tmaBoxBytes(nvgpu::TensorMapDescriptorType type);

/// The descriptor from the kernel's !llvm.ptr argument `pointer` (the
/// device address of the CUtensorMap).
Value tmaDescriptorFromPointer(KernelBuilder &k, Value pointer,
                               nvgpu::TensorMapDescriptorType type);

/// prefetch.tensormap: brings the descriptor into the cache ahead of the
/// first copy; only where `pred` (i1, may be null: all) holds.
void tmaPrefetchDescriptor(KernelBuilder &k, Value descriptor,
                           Value pred = nullptr);

/// fence.mbarrier_init.release.cluster: orders this thread's earlier
/// mbarrier.init before the async proxy's transaction completions (and,
/// with clusters, other CTAs' arrivals). The thread that initialized the
/// barriers issues it, before the CTA barrier that publishes them.
void fenceMbarrierInit(KernelBuilder &k);

/// The destination of a TMA copy of a `type` box: the 1-D workgroup memref
/// `flat` (a memref.view of the dynamic shared memory as dynamicSharedMemory
/// returns it, exactly the box's element count, 1024-byte aligned for the
/// 128-byte swizzle) viewed in the box's shape: a second memref.view of the
/// same bytes.
Value tmaBoxView(KernelBuilder &k, Value flat,
                 nvgpu::TensorMapDescriptorType type);

/// cp.async.bulk.tensor: copies the box at `coordinates` (index, innermost
/// first, one per dimension of the map) from the tensor behind `descriptor`
/// into `dst` (tmaBoxView), completing on barrier `barrierId` of
/// `barriers` with tmaBoxBytes transaction bytes; issued only where `pred`
/// (i1, may be null: every thread, so give it one thread) holds. A
/// coordinate count other than the map's rank aborts with a message.
void tmaLoadBox(KernelBuilder &k, Value descriptor, ValueRange coordinates,
                Value barriers, Value barrierId, Value dst,
                Value pred = nullptr);

/// The byte offset in a 128-byte-swizzled tile (128-byte rows) of byte
/// `byteCol` (index, < 128) of row `row` (index): wgmma::swizzle128B in IR,
/// where a TMA copy with SWIZZLE_128B puts that element.
Value swizzle128BOffset(KernelBuilder &k, Value row, Value byteCol);

} // namespace cascade
} // namespace mlir

#endif // CASCADE_CONVERSION_GPUCODEGEN_TMA_H
