//===- PlanJson.h - Batch descriptions and plans as JSON --------*- C++ -*-===//
//
// The JSON side of planning (docs/plan-schema.md): a batch description
// (what cascade-plan reads) and the plan (what it prints).
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_RUNTIME_PLANJSON_H
#define CASCADE_RUNTIME_PLANJSON_H

#include "cascade/Runtime/AutoCascade.h"
#include "cascade/Runtime/Plan.h"

#include <string>
#include <string_view>
#include <vector>

namespace cascade::runtime {

/// A parsed batch description; owns the arrays the PlanInputs point into.
struct BatchDescription {
  struct Level {
    PlanMode mode = PlanMode::Decode;
    bool hasQoIndptr = false, hasKvIndices = false;
    std::vector<int32_t> qoIndptr, kvIndptr, kvLastPageLen, kvIndices;
    int64_t qoTileSize = 0;
    int64_t maxNumRows = -1;
  };
  /// Scalars shared by every level (arrays unset).
  PlanInputs common;
  /// One level for a plain plan, several for a cascade.
  std::vector<Level> levels;
  /// True when the description had `levels`.
  bool isCascade = false;
  /// `causal` of the description (applies to the last level only).
  bool causal = false;
  /// `"auto_cascade"`: true, or an object of options (docs/plan-schema.md):
  /// plan the cascade that makeAutoCascadePlan finds in the one level.
  bool autoCascade = false;
  AutoCascadeOptions autoOptions;

  /// The inputs of every level, pointing into this object.
  std::vector<PlanInputs> inputs() const;
};

/// Reads a batch description (errors: ErrorCode::Parse for malformed JSON,
/// with the line and column; ErrorCode::Schema for missing/unknown keys or
/// wrong types, naming the key).
Status parseBatchDescription(std::string_view json, BatchDescription &out);

/// The plan / cascade plan as a JSON document (ends with a newline).
std::string planToJson(const Plan &plan);
std::string cascadePlanToJson(const CascadePlan &plan, bool causal = false);
/// An automatic cascade: the cascade plan JSON plus each level's "inputs"
/// (its index arrays) and the "auto_cascade" statistics.
std::string autoCascadeToJson(const AutoCascade &ac, bool causal = false);

} // namespace cascade::runtime

#endif // CASCADE_RUNTIME_PLANJSON_H
