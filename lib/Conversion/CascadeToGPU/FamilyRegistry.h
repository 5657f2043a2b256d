//===- FamilyRegistry.h - The kernel families, one row each -----*- C++ -*-===//
//
// Every kernel family is one row of one table: its traits (FamilyTraits.h),
// its selection rule and its kernel generator. Selection (KernelConfig.cpp)
// tries the rows in order, the pass (CascadeToGPUPass.cpp) lowers an op
// with the row of its configuration's family, and plan lowering
// (LowerPlans.cpp) estimates occupancy from the row's traits. A new family
// is a new folder (its traits, selection rule and generator) and a row in
// FamilyRegistry.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_LIB_CONVERSION_CASCADETOGPU_FAMILYREGISTRY_H
#define CASCADE_LIB_CONVERSION_CASCADETOGPU_FAMILYREGISTRY_H

#include "FamilySelection.h"
#include "FamilyTraits.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir {
namespace cascade {

struct AttentionSpec;
struct MergeSpec;

/// A kernel generator: builds the body of kernel `fn` for `spec` (the
/// builder at the start of its entry block; the arguments follow the
/// spec's params, bound by name).
template <typename Spec>
using KernelGenerator = void (*)(OpBuilder &b, gpu::GPUFuncOp fn,
                                 gpu::GPUModuleOp module, const Spec &spec);

/// One kernel family.
struct KernelFamilyEntry {
  const KernelFamilyTraits &traits;
  /// Whether selection gives the op of `in` to this family, and the
  /// configuration it then chooses.
  bool (*applies)(const SelectionInput &in);
  FailureOr<KernelConfigAttr> (*choose)(const SelectionInput &in);
  /// The generator of an attention family (null for merge) or of the merge
  /// family (null for the others).
  KernelGenerator<AttentionSpec> buildAttention;
  KernelGenerator<MergeSpec> buildMerge;

  KernelFamily family() const { return traits.family; }
};

/// The families, in the order selection tries them.
ArrayRef<KernelFamilyEntry> getKernelFamilies();
/// The row of `family`.
const KernelFamilyEntry &getKernelFamily(KernelFamily family);

} // namespace cascade
} // namespace mlir

#endif // CASCADE_LIB_CONVERSION_CASCADETOGPU_FAMILYREGISTRY_H
