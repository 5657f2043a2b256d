//===- MergeTraits.h - The merge family's facts -----------------*- C++ -*-===//
//
// The merge family (merge_state, merge_state_in_place, merge_states and the
// merge of a split-KV level's partial states) reads no KV cache and runs no
// attention; its shared memory is static. kMergeTraits is its
// kKernelFamilyTraits row.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_LIB_CONVERSION_CASCADETOGPU_MERGE_MERGETRAITS_H
#define CASCADE_LIB_CONVERSION_CASCADETOGPU_MERGE_MERGETRAITS_H

#include "FamilyTraits.h"

namespace mlir {
namespace cascade {

extern const KernelFamilyTraits kMergeTraits;

} // namespace cascade
} // namespace mlir

#endif // CASCADE_LIB_CONVERSION_CASCADETOGPU_MERGE_MERGETRAITS_H
