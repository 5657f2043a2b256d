//===- Half.h - fp16 and bf16 conversion on the host ------------*- C++ -*-===//
//
// Bit-exact IEEE binary16 and bfloat16 conversions (round to nearest even,
// NaN kept quiet, overflow to infinity), for test inputs and references.
//
//===----------------------------------------------------------------------===//

#ifndef CASCADE_RUNTIME_HALF_H
#define CASCADE_RUNTIME_HALF_H

#include <cstdint>
#include <cstring>
#include <vector>

namespace cascade::runtime {

inline uint32_t floatBits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
}

inline float bitsFloat(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

/// float -> IEEE binary16, round to nearest even.
inline uint16_t floatToHalf(float f) {
  const uint32_t x = floatBits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) // inf or NaN
    return sign | (a > 0x7f800000u ? 0x7e00 : 0x7c00);
  if (a >= 0x477ff000u) // rounds to infinity (>= 65520)
    return sign | 0x7c00;
  if (a < 0x38800000u) { // below the smallest normal half: subnormal or 0
    if (a < 0x33000000u) // < 2^-25: rounds to zero
      return sign;
    const uint32_t mant = (a & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - (a >> 23);
    uint32_t r = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (r & 1)))
      ++r;
    return sign | static_cast<uint16_t>(r);
  }
  uint32_t r = (((a >> 23) - 112) << 10) | ((a >> 13) & 0x3ff);
  const uint32_t rem = a & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (r & 1)))
    ++r;
  return sign | static_cast<uint16_t>(r);
}

/// IEEE binary16 -> float (exact).
inline float halfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24, exact in float.
    float v = static_cast<float>(mant) * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  if (exp == 31)
    return bitsFloat(sign | 0x7f800000u | (mant << 13));
  return bitsFloat(sign | ((exp + 112) << 23) | (mant << 13));
}

/// float -> bfloat16, round to nearest even.
inline uint16_t floatToBf16(float f) {
  const uint32_t x = floatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}

/// bfloat16 -> float (exact).
inline float bf16ToFloat(uint16_t b) {
  return bitsFloat(static_cast<uint32_t>(b) << 16);
}

/// fp8 e4m3 (OCP E4M3FN: bias 7, no infinities, S.1111.111 is NaN) -> float
/// (exact).
inline float e4m3ToFloat(uint8_t x) {
  const uint32_t sign = static_cast<uint32_t>(x & 0x80) << 24;
  const uint32_t exp = (x >> 3) & 0xf, mant = x & 0x7;
  if (exp == 0xf && mant == 0x7)
    return bitsFloat(sign | 0x7fc00000u);
  if (exp == 0) { // zero or subnormal: mant * 2^-9
    float v = static_cast<float>(mant) * 0.001953125f;
    return sign ? -v : v;
  }
  return bitsFloat(sign | ((exp + 120) << 23) | (mant << 20));
}

/// fp8 e5m2 (IEEE-like: bias 15, infinities and NaNs) -> float (exact): the
/// upper byte of an fp16.
inline float e5m2ToFloat(uint8_t x) {
  return halfToFloat(static_cast<uint16_t>(static_cast<uint16_t>(x) << 8));
}

/// Rounds a float to the nearest fp16 / bf16 value (as a float).
inline float roundToHalf(float f) { return halfToFloat(floatToHalf(f)); }
inline float roundToBf16(float f) { return bf16ToFloat(floatToBf16(f)); }

std::vector<uint16_t> toHalf(const std::vector<float> &v);
std::vector<uint16_t> toBf16(const std::vector<float> &v);
std::vector<float> fromHalf(const std::vector<uint16_t> &v);
std::vector<float> fromBf16(const std::vector<uint16_t> &v);

} // namespace cascade::runtime

#endif // CASCADE_RUNTIME_HALF_H
