//===- MmaSyncFamily.h - The mma_sync family's entry points -----*- C++ -*-===//
//
// The entry points of the mma_sync family that FamilyRegistry.cpp lists: its
// selection rule (which ops it runs, and with which #cascade.kernel_config)
// and its kernel generator. Its facts are in mma_sync/MmaSyncTraits.h.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_LIB_CONVERSION_CASCADETOGPU_MMA_SYNC_MMASYNCFAMILY_H
#define CASCADE_LIB_CONVERSION_CASCADETOGPU_MMA_SYNC_MMASYNCFAMILY_H

#include "FamilySelection.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir {
namespace cascade {

struct AttentionSpec;

bool mmaSyncApplies(const SelectionInput &in);
FailureOr<KernelConfigAttr> chooseMmaSync(const SelectionInput &in);

/// Builds the body of kernel `fn` (the builder at the start of its entry
/// block; the arguments follow the spec's params, bound by name).
void buildMmaSyncAttentionKernel(OpBuilder &b, gpu::GPUFuncOp fn,
                                 gpu::GPUModuleOp module,
                                 const AttentionSpec &spec);

} // namespace cascade
} // namespace mlir

#endif // CASCADE_LIB_CONVERSION_CASCADETOGPU_MMA_SYNC_MMASYNCFAMILY_H
