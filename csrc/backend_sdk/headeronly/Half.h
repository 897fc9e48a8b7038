// float16 and bfloat16 storage types with float conversion. Header-only (Note [Header-only APIs]).
#pragma once

#include <cstdint>
#include <cstring>

namespace sdk {

namespace detail {
inline uint32_t float_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float bits_float(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
}  // namespace detail

// IEEE 754 binary16. Conversions round to nearest even, handle subnormals, inf and NaN.
struct Half {
  uint16_t x = 0;
  Half() = default;
  Half(float f) : x(from_float(f)) {}  // NOLINT: implicit like c10::Half
  operator float() const { return to_float(x); }

  static uint16_t from_float(float f) {
    uint32_t u = detail::float_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t abs = u & 0x7fffffffu;
    if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
    if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
    if (abs < 0x38800000u) {                                             // subnormal or zero
      // Add the float to 0.5 so the FPU does the rounding of the low bits.
      float magic = detail::bits_float(abs) + 0.5f;
      return static_cast<uint16_t>(sign | (detail::float_bits(magic) - 0x3f000000u));
    }
    uint32_t mant_odd = (abs >> 13) & 1u;
    abs += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
    return static_cast<uint16_t>(sign | (abs >> 13));
  }
  static float to_float(uint16_t h) {
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0) {
      float f = static_cast<float>(mant) * 5.9604644775390625e-08f;  // 2^-24
      return sign ? -f : f;
    }
    if (exp == 31) return detail::bits_float(sign | 0x7f800000u | (mant << 13));
    return detail::bits_float(sign | ((exp + 112) << 23) | (mant << 13));
  }
};

// bfloat16: the top 16 bits of a float32, rounded to nearest even.
struct BFloat16 {
  uint16_t x = 0;
  BFloat16() = default;
  BFloat16(float f) : x(from_float(f)) {}  // NOLINT
  operator float() const { return detail::bits_float(static_cast<uint32_t>(x) << 16); }

  static uint16_t from_float(float f) {
    uint32_t u = detail::float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;  // NaN
    uint32_t rounding_bias = 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>((u + rounding_bias) >> 16);
  }
};

}  // namespace sdk
