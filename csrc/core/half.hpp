// IEEE binary16 <-> binary32 on the host, round-to-nearest-even, NaN/inf kept. Portable: no F16C.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace tc {

inline float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  std::uint32_t x;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24 is exact in float
    float v = static_cast<float>(mant) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  if (exp == 31) x = sign | 0x7f800000u | (mant << 13);
  else x = sign | ((exp + 112u) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

inline std::uint16_t float_to_half(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (ax >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds to inf
  if (ax < 0x38800000u) {                        // below 2^-14: subnormal half, unit 2^-24
    float a;
    std::memcpy(&a, &ax, 4);
    return sign | static_cast<std::uint16_t>(std::nearbyint(a * 16777216.0f));
  }
  std::uint32_t h = ((((ax >> 23) - 112u) << 10) | ((ax >> 13) & 0x3ffu));
  const std::uint32_t rem = ax & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return sign | static_cast<std::uint16_t>(h);
}

}  // namespace tc
