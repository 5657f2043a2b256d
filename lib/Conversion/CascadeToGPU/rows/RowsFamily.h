//===- RowsFamily.h - The rows family's entry points ------------*- C++ -*-===//
//
// The entry points of the rows family that FamilyRegistry.cpp lists: its
// selection rule (which ops it runs, and with which #cascade.kernel_config)
// and its kernel generator. Its facts are in rows/RowsTraits.h.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_LIB_CONVERSION_CASCADETOGPU_ROWS_ROWSFAMILY_H
#define CASCADE_LIB_CONVERSION_CASCADETOGPU_ROWS_ROWSFAMILY_H

#include "FamilySelection.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir {
namespace cascade {

struct AttentionSpec;

bool rowsApplies(const SelectionInput &in);
FailureOr<KernelConfigAttr> chooseRows(const SelectionInput &in);

/// Builds the body of kernel `fn` (the builder at the start of its entry
/// block; the arguments follow the spec's params, bound by name).
void buildRowsAttentionKernel(OpBuilder &b, gpu::GPUFuncOp fn,
                              gpu::GPUModuleOp module,
                              const AttentionSpec &spec);

} // namespace cascade
} // namespace mlir

#endif // CASCADE_LIB_CONVERSION_CASCADETOGPU_ROWS_ROWSFAMILY_H
