//===- Half.cpp - fp16 and bf16 conversion on the host --------------------===//

#include "cascade/Runtime/Half.h"

namespace cascade::runtime {

std::vector<uint16_t> toHalf(const std::vector<float> &v) {
  std::vector<uint16_t> r(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    r[i] = floatToHalf(v[i]);
  return r;
}

std::vector<uint16_t> toBf16(const std::vector<float> &v) {
  std::vector<uint16_t> r(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    r[i] = floatToBf16(v[i]);
  return r;
}

std::vector<float> fromHalf(const std::vector<uint16_t> &v) {
  std::vector<float> r(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    r[i] = halfToFloat(v[i]);
  return r;
}

std::vector<float> fromBf16(const std::vector<uint16_t> &v) {
  std::vector<float> r(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    r[i] = bf16ToFloat(v[i]);
  return r;
}

} // namespace cascade::runtime
