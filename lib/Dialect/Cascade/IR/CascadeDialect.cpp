//===- CascadeDialect.cpp - Cascade dialect -------------------------------===//

#include "cascade/Dialect/Cascade/IR/CascadeDialect.h"
#include "cascade/Dialect/Cascade/IR/CascadeOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::cascade;

#include "cascade/Dialect/Cascade/IR/CascadeOpsDialect.cpp.inc"

#include "cascade/Dialect/Cascade/IR/CascadeEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "cascade/Dialect/Cascade/IR/CascadeAttrs.cpp.inc"

void CascadeDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "cascade/Dialect/Cascade/IR/CascadeAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "cascade/Dialect/Cascade/IR/CascadeOps.cpp.inc"
      >();
}
