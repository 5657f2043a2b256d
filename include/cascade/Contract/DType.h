//===- DType.h - Element types of the bundle contract -----------*- C++ -*-===//
//
// The storage types of q, KV, outputs and states, with the names manifests,
// plans and the Python package spell them ("f16", "bf16", "f32", "f8e4m3",
// "f8e5m2") and their sizes. Part of the contract between the compiler and
// the runtime (docs/kernel-bundle.md): header-only, no MLIR, C++17.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_CONTRACT_DTYPE_H
#define CASCADE_CONTRACT_DTYPE_H

#include <cstdint>
#include <string_view>

namespace cascade::contract {

/// Storage types of q, KV and the output.
enum class DType { F16, BF16, F32, F8E4M3, F8E5M2 };

/// Every DType, in declaration order.
inline constexpr DType kAllDTypes[] = {DType::F16, DType::BF16, DType::F32,
                                       DType::F8E4M3, DType::F8E5M2};

/// The contract's name of `t` ("f16", "bf16", "f32", "f8e4m3", "f8e5m2").
constexpr const char *dtypeName(DType t) {
  switch (t) {
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F32:
    return "f32";
  case DType::F8E4M3:
    return "f8e4m3";
  case DType::F8E5M2:
    return "f8e5m2";
  }
  return "?";
}

/// Bytes of one element.
constexpr int64_t dtypeBytes(DType t) {
  switch (t) {
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::F32:
    return 4;
  case DType::F8E4M3:
  case DType::F8E5M2:
    return 1;
  }
  return 0;
}

/// The DType of a contract name, or of its numpy/torch spelling ("float16",
/// "bfloat16", "float32", "float8_e4m3fn", "float8_e5m2"); false if unknown.
constexpr bool parseDType(std::string_view name, DType &out) {
  struct Alias {
    std::string_view name;
    DType type;
  };
  constexpr Alias aliases[] = {{"float16", DType::F16},
                               {"bfloat16", DType::BF16},
                               {"float32", DType::F32},
                               {"float8_e4m3fn", DType::F8E4M3},
                               {"float8_e5m2", DType::F8E5M2}};
  for (DType t : kAllDTypes)
    if (name == dtypeName(t)) {
      out = t;
      return true;
    }
  for (const Alias &a : aliases)
    if (name == a.name) {
      out = a.type;
      return true;
    }
  return false;
}

} // namespace cascade::contract

#endif // CASCADE_CONTRACT_DTYPE_H
