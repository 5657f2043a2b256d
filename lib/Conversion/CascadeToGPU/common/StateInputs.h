//===- StateInputs.h - What attention does to a finished state -*- C++ -*-===//
//
// A state input (docs/semantics.md, "State inputs") is an f32 [Hqo] operand
// of the attention ops that acts on each query head's final softmax state,
// once per cascade: FlashInfer's variant hook on the state, as ScoreVariant
// holds the hooks on a score. The ops list their state inputs by name
// (CascadeOps.td); this registry holds each one's kernel side: the suffix
// it gives kernel names and the fold that applies it to a state. A kernel
// spec carries the names; the kernel takes a parameter of each name (and a
// manifest static of that name, true), bound by name at launch and by the
// runtime; the attention epilogues and the split merges call
// applyStateInputs. A new state input is an operand in CascadeOps.td, an
// entry here, and its reference.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_LIB_CONVERSION_CASCADETOGPU_COMMON_STATEINPUTS_H
#define CASCADE_LIB_CONVERSION_CASCADETOGPU_COMMON_STATEINPUTS_H

#include "common/KernelSupport.h"

namespace mlir {
namespace cascade {

struct StateInputHook {
  /// The op's operand, the kernel parameter and the manifest static.
  StringLiteral name;
  /// What the input adds to a kernel's name.
  StringLiteral suffix;
  /// Folds one head's value of the input into a state of base-2 lse `s2`:
  /// returns the factor that scales the state's normalised v and the new
  /// base-2 lse (an empty state's factor is 0).
  std::pair<Value, Value> (*fold)(KernelBuilder &k, Value value, Value s2);
};

/// The hook of the state input `name`; null where no kernel implements it.
const StateInputHook *findStateInputHook(StringRef name);

/// Folds the inputs `names` (their buffers, f32 [Hqo], in `buffers`) of
/// query head `head` into a state of base-2 lse `s2`, in order: the factor
/// that scales the state's normalised v and the new base-2 lse.
std::pair<Value, Value> applyStateInputs(KernelBuilder &k,
                                         ArrayRef<StringRef> names,
                                         ValueRange buffers, Value head,
                                         Value s2);

} // namespace cascade
} // namespace mlir

#endif // CASCADE_LIB_CONVERSION_CASCADETOGPU_COMMON_STATEINPUTS_H
