//===- AttentionOptions.h - The score options of attention ops --*- C++ -*-===//
//
// The score options of `cascade.paged_attention` and
// `cascade.multi_level_attention` (Cascade_AttentionOptions in
// CascadeOps.td) as one contract::ScoreOptions: read, written and copied
// through the contract's field table (ScoreOptions::forEachMember), so that
// no caller lists them. The attributes are named as the fields are.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_DIALECT_CASCADE_IR_ATTENTIONOPTIONS_H
#define CASCADE_DIALECT_CASCADE_IR_ATTENTIONOPTIONS_H

#include "cascade/Contract/AttentionConfig.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"

namespace mlir::cascade {

using ScoreOptions = ::cascade::contract::ScoreOptions;

/// The options of an attention op; absent attributes read as the defaults.
ScoreOptions getScoreOptions(Operation *attentionOp);

/// The attributes of `score`: every option, sm_scale only when set (the
/// op's builders also set the defaults; its printer leaves them out).
SmallVector<NamedAttribute> scoreOptionAttrs(Builder &b,
                                             const ScoreOptions &score);

/// Sets the option attributes of `op` to `score` (scoreOptionAttrs; an
/// absent sm_scale is removed).
void setScoreOptions(Operation *op, const ScoreOptions &score);

/// Copies every option attribute of `from` to `to` as it is (one absent
/// from `from` is removed from `to`).
void copyScoreOptions(Operation *from, Operation *to);

} // namespace mlir::cascade

#endif // CASCADE_DIALECT_CASCADE_IR_ATTENTIONOPTIONS_H
