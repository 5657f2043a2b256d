//===- CascadeDialect.h - Cascade dialect -----------------------*- C++ -*-===//
//
// The `cascade` dialect: attention-state merges, paged attention and
// multi-level cascade attention.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_DIALECT_CASCADE_IR_CASCADEDIALECT_H
#define CASCADE_DIALECT_CASCADE_IR_CASCADEDIALECT_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

// The attributes come first: the dialect class manages the discardable
// `cascade.kernel_config` attribute by type.
#include "cascade/Dialect/Cascade/IR/CascadeEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "cascade/Dialect/Cascade/IR/CascadeAttrs.h.inc"

#include "cascade/Dialect/Cascade/IR/CascadeOpsDialect.h.inc"

#endif // CASCADE_DIALECT_CASCADE_IR_CASCADEDIALECT_H
