//===- VerifyUtils.h - Shared pieces of the verifiers -----------*- C++ -*-===//
//
// The shape helpers every verifier uses (CascadeOps.cpp) and the attention
// ops' shared check (AttentionVerifier.cpp). Private to the dialect library.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_LIB_DIALECT_CASCADE_IR_VERIFYUTILS_H
#define CASCADE_LIB_DIALECT_CASCADE_IR_VERIFYUTILS_H

#include "cascade/Dialect/Cascade/IR/AttentionOptions.h"
#include "cascade/Dialect/Cascade/IR/CascadeOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir {
namespace cascade {
namespace detail {

/// Formats a shape as `[4, ?, 128]`.
inline std::string shapeStr(ShapedType t) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  llvm::interleave(
      t.getShape(), os,
      [&](int64_t d) {
        if (ShapedType::isDynamic(d))
          os << "?";
        else
          os << d;
      },
      ", ");
  os << "]";
  return s;
}

/// Two dimensions agree unless both are static and differ.
inline bool dimsAgree(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

inline bool isF16OrBF16(Type t) { return t.isF16() || t.isBF16(); }

/// The fp8 KV element types (docs/semantics.md, "fp8 KV cache").
inline bool isFp8KV(Type t) { return isa<Float8E4M3FNType, Float8E5M2Type>(t); }

/// The attributes and operands every attention op shares.
struct AttentionView {
  Value q;
  /// The latent form's rotary query (null: not latent).
  Value qPe;
  ValueRange kv;
  Value o, lse;
  int64_t pageSize;
  KVLayout layout;
  ScoreOptions score;
  /// The fp8 dequantization scales (null when absent).
  Value kScale, vScale;
  /// The state inputs the op has, (name, value): each f32 [Hqo].
  SmallVector<std::pair<StringRef, Value>, 1> stateInputs;
};

/// Verifies q (and the latent form's q_pe), the cache, the destinations,
/// the fp8 scales, the state inputs and the options of an attention op.
LogicalResult verifyAttention(Operation *op, const AttentionView &a);

} // namespace detail
} // namespace cascade
} // namespace mlir

#endif // CASCADE_LIB_DIALECT_CASCADE_IR_VERIFYUTILS_H
