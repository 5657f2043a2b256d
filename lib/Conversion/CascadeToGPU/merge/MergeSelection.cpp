//===- MergeSelection.cpp - The merge selection rule ----------------------===//
//
// The merge family's selection rule (FamilyRegistry.h).
//
//===----------------------------------------------------------------------===//

#include "merge/MergeFamily.h"
#include "merge/MergeTraits.h"

#include "cascade/Conversion/GPUCodegen/Fp8Convert.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::cascade;

bool cascade::mergeApplies(const SelectionInput &in) { return in.shape.merge; }

FailureOr<KernelConfigAttr> cascade::chooseMerge(const SelectionInput &in) {
  int64_t tpt = in.shape.headDim / 8;
  int64_t tpb = std::max<int64_t>(1, in.opts.mergeThreads / tpt);
  return KernelConfigAttr::get(in.op->getContext(), KernelFamily::Merge,
                               {tpb * tpt, 1, 1}, tpb, 0, 1);
}
