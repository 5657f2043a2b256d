//===- AttentionOptions.cpp - The score options of attention ops ----------===//
//
// Generic over the contract's field table: one conversion per field type
// (optional<float> <-> optional f32, float <-> f32, int64_t <-> i64,
// PosEncoding <-> #cascade.pos_encoding by name), none per option.
//
//===----------------------------------------------------------------------===//

#include "cascade/Dialect/Cascade/IR/AttentionOptions.h"
#include "cascade/Dialect/Cascade/IR/CascadeOps.h"

using namespace mlir;
using namespace mlir::cascade;

namespace contract = ::cascade::contract;

namespace {

// Attribute -> field; an absent attribute keeps the default.
void fromAttr(Attribute a, std::optional<float> &f) {
  if (auto x = dyn_cast_or_null<FloatAttr>(a))
    f = static_cast<float>(x.getValueAsDouble());
}
void fromAttr(Attribute a, float &f) {
  if (auto x = dyn_cast_or_null<FloatAttr>(a))
    f = static_cast<float>(x.getValueAsDouble());
}
void fromAttr(Attribute a, int64_t &f) {
  if (auto x = dyn_cast_or_null<IntegerAttr>(a))
    f = x.getValue().getSExtValue();
}
void fromAttr(Attribute a, contract::PosEncoding &f) {
  if (auto x = dyn_cast_or_null<PosEncodingAttr>(a)) {
    [[maybe_unused]] bool known =
        contract::parsePosEncoding(stringifyPosEncoding(x.getValue()), f);
    assert(known && "a pos_encoding the contract does not name");
  }
}

// Field -> attribute (null: absent).
Attribute toAttr(Builder &b, const std::optional<float> &f) {
  return f ? b.getF32FloatAttr(*f) : Attribute();
}
Attribute toAttr(Builder &b, float f) { return b.getF32FloatAttr(f); }
Attribute toAttr(Builder &b, int64_t f) { return b.getI64IntegerAttr(f); }
Attribute toAttr(Builder &b, contract::PosEncoding p) {
  std::optional<PosEncoding> e =
      symbolizePosEncoding(contract::posEncodingName(p));
  assert(e && "a pos_encoding the dialect does not name");
  return PosEncodingAttr::get(b.getContext(), *e);
}

} // namespace

ScoreOptions mlir::cascade::getScoreOptions(Operation *attentionOp) {
  ScoreOptions s;
  ScoreOptions::forEachField(s, [&](const char *name, auto &field) {
    fromAttr(attentionOp->getAttr(name), field);
  });
  return s;
}

SmallVector<NamedAttribute>
mlir::cascade::scoreOptionAttrs(Builder &b, const ScoreOptions &score) {
  SmallVector<NamedAttribute> attrs;
  ScoreOptions::forEachField(score, [&](const char *name, const auto &field) {
    if (Attribute a = toAttr(b, field))
      attrs.push_back(b.getNamedAttr(name, a));
  });
  return attrs;
}

void mlir::cascade::setScoreOptions(Operation *op, const ScoreOptions &score) {
  ScoreOptions::forEachMember(
      [&](const char *name, auto) { op->removeAttr(name); });
  Builder b(op->getContext());
  for (NamedAttribute a : scoreOptionAttrs(b, score))
    op->setAttr(a.getName(), a.getValue());
}

void mlir::cascade::copyScoreOptions(Operation *from, Operation *to) {
  ScoreOptions::forEachMember([&](const char *name, auto) {
    if (Attribute a = from->getAttr(name))
      to->setAttr(name, a);
    else
      to->removeAttr(name);
  });
}
