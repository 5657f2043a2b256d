//===- StateInputs.cpp - What attention does to a finished state ----------===//

#include "common/StateInputs.h"

#include <cmath>

using namespace mlir;
using namespace mlir::cascade;

/// Attention sinks (docs/semantics.md): one logit per query head, in natural
/// log units, that joins the softmax's denominator and attends to no value:
/// the state merged with (0, sink * log2(e)).
static std::pair<Value, Value> foldSink(KernelBuilder &k, Value sink,
                                        Value s2) {
  Value sink2 = k.fmul(sink, k.f32(M_LOG2E));
  // The state (1, s2) merged with (0, sink2): its v is the weight that
  // scales the row's output, by merge_state's rules (an empty row gets
  // (0, sink2), two empty states (0, -inf)).
  return k.mergeStates(k.f32(1.0), s2, k.f32(0.0), sink2);
}

static const StateInputHook kHooks[] = {
    {"sinks", "_sink", foldSink},
};

const StateInputHook *mlir::cascade::findStateInputHook(StringRef name) {
  for (const StateInputHook &h : kHooks)
    if (h.name == name)
      return &h;
  return nullptr;
}

std::pair<Value, Value>
mlir::cascade::applyStateInputs(KernelBuilder &k, ArrayRef<StringRef> names,
                                ValueRange buffers, Value head, Value s2) {
  assert(names.size() == buffers.size() && !names.empty() &&
         "one buffer per state input");
  Value scale;
  for (auto [name, buffer] : llvm::zip_equal(names, buffers)) {
    const StateInputHook *hook = findStateInputHook(name);
    assert(hook && "a state input without a hook (analyseAttention checks)");
    Value factor;
    std::tie(factor, s2) = hook->fold(k, k.loadScalar(buffer, head), s2);
    scale = scale ? k.fmul(scale, factor) : factor;
  }
  return {scale, s2};
}
