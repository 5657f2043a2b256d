//===- CascadeDialect.h - Cascade dialect -----------------------*- C++ -*-===//
//
// The `cascade` dialect: attention-state merges, paged attention and
// multi-level cascade attention.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_DIALECT_CASCADE_IR_CASCADEDIALECT_H
#define CASCADE_DIALECT_CASCADE_IR_CASCADEDIALECT_H

#include "mlir/IR/Dialect.h"

#include "cascade/Dialect/Cascade/IR/CascadeOpsDialect.h.inc"

#endif // CASCADE_DIALECT_CASCADE_IR_CASCADEDIALECT_H
