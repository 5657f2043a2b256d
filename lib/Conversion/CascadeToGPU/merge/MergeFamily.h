//===- MergeFamily.h - The merge family's entry points ----------*- C++ -*-===//
//
// The entry points of the merge family that FamilyRegistry.cpp lists: its
// selection rule (which ops it runs, and with which #cascade.kernel_config)
// and its kernel generator. Its facts are in merge/MergeTraits.h.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_LIB_CONVERSION_CASCADETOGPU_MERGE_MERGEFAMILY_H
#define CASCADE_LIB_CONVERSION_CASCADETOGPU_MERGE_MERGEFAMILY_H

#include "FamilySelection.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir {
namespace cascade {

struct MergeSpec;

bool mergeApplies(const SelectionInput &in);
FailureOr<KernelConfigAttr> chooseMerge(const SelectionInput &in);

/// Builds the body of kernel `fn` (the builder at the start of its entry
/// block; the arguments follow the spec's params, bound by name).
void buildMergeKernel(OpBuilder &b, gpu::GPUFuncOp fn, gpu::GPUModuleOp module,
                      const MergeSpec &spec);

} // namespace cascade
} // namespace mlir

#endif // CASCADE_LIB_CONVERSION_CASCADETOGPU_MERGE_MERGEFAMILY_H
