// Building blocks of the CPU element-wise kernels: dtype conversion of single
// values and of strided runs, and dispatch on the type a kernel computes in.
// Internal to csrc/ops (included by kernel .cpp files only).
//
// Note [Compute type]
// ~~~~~~~~~~~~~~~~~~~
// An element-wise kernel computes in the *compute type* of its common dtype:
// the dtype's own C++ type, except float16 and bfloat16, which compute in
// float (PyTorch's "opmath" type). Operands whose dtype is not the compute
// type (a float16 tensor, an int32 input of a float op, an out= of another
// dtype) are converted on the fly: runs of up to kChunk elements are loaded
// into a stack buffer of the compute type, computed, and stored back
// converted. Operands already in the compute type are used in place.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/core/Half.h>
#include <backend_sdk/core/ScalarType.h>

namespace sdk::ops::cpu {

constexpr int64_t kChunk = 256;

template <typename T>
struct TypeTag {
  using type = T;
};

template <typename T>
constexpr ScalarType scalar_type_of() {
  if constexpr (std::is_same_v<T, bool>) return ScalarType::Bool;
  else if constexpr (std::is_same_v<T, uint8_t>) return ScalarType::UInt8;
  else if constexpr (std::is_same_v<T, int8_t>) return ScalarType::Int8;
  else if constexpr (std::is_same_v<T, int16_t>) return ScalarType::Int16;
  else if constexpr (std::is_same_v<T, int32_t>) return ScalarType::Int32;
  else if constexpr (std::is_same_v<T, int64_t>) return ScalarType::Int64;
  else if constexpr (std::is_same_v<T, Half>) return ScalarType::Float16;
  else if constexpr (std::is_same_v<T, BFloat16>) return ScalarType::BFloat16;
  else if constexpr (std::is_same_v<T, float>) return ScalarType::Float32;
  else return ScalarType::Float64;
}

template <typename T>
constexpr bool is_reduced_float_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// float16 <-> float with the results of core/Half.h, written with bit
// masks instead of branches so that conversion loops vectorise.
inline uint32_t select_bits(bool c, uint32_t a, uint32_t b) {
  const uint32_t mask = 0u - static_cast<uint32_t>(c);
  return (a & mask) | (b & ~mask);
}

inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t magnitude = h & 0x7fffu;
  // Shifting the exponent and mantissa into place and scaling by 2^112
  // rebiases the exponent (127 - 15) and normalises subnormals exactly.
  const float scaled = ::sdk::detail::bits_float(magnitude << 13) * 0x1p112f;
  const uint32_t special = 0x7f800000u | (magnitude << 13);  // inf and NaN
  const uint32_t finite = ::sdk::detail::float_bits(scaled);
  return ::sdk::detail::bits_float(sign | select_bits(magnitude >= 0x7c00u, special, finite));
}

inline uint16_t float_to_half_bits(float f) {
  const uint32_t u = ::sdk::detail::float_bits(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t abs = u & 0x7fffffffu;
  // Normal results: rebias the exponent, round to nearest even.
  const uint32_t normal = (abs + 0xc8000fffu + ((abs >> 13) & 1u)) >> 13;
  // Subnormal results: adding 0.5 lets the FPU round the low bits.
  const uint32_t subnormal = ::sdk::detail::float_bits(::sdk::detail::bits_float(abs) + 0.5f) - 0x3f000000u;
  uint32_t r = select_bits(abs < 0x38800000u, subnormal, normal);
  r = select_bits(abs >= 0x477ff000u, 0x7c00u, r);  // overflow -> inf
  r = select_bits(abs > 0x7f800000u, 0x7e00u, r);   // NaN
  return static_cast<uint16_t>(sign | r);
}

// Value conversion with defined results for every input: floating values that
// do not fit an integer type (NaN, inf, out of range) give int64's minimum,
// truncated to the target, as x86 hardware does for PyTorch.
template <typename To, typename From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<From, Half>) {
    return convert<To, float>(half_bits_to_float(v.x));
  } else if constexpr (std::is_same_v<From, BFloat16>) {
    return convert<To, float>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_same_v<To, Half>) {
    Half h;
    h.x = float_to_half_bits(convert<float, From>(v));
    return h;
  } else if constexpr (std::is_same_v<To, BFloat16>) {
    return To(convert<float, From>(v));
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    constexpr From lo = From(-9223372036854775808.0), hi = From(9223372036854775808.0);
    int64_t i = (v >= lo && v < hi) ? static_cast<int64_t>(v) : INT64_MIN;
    return static_cast<To>(i);
  } else {
    return static_cast<To>(v);
  }
}

// Calls f(TypeTag<storage C++ type>{}) for a dtype.
template <typename F>
inline decltype(auto) dispatch_storage_type(ScalarType t, const char* op, F&& f) {
  switch (t) {
    case ScalarType::Bool: return f(TypeTag<bool>{});
    case ScalarType::UInt8: return f(TypeTag<uint8_t>{});
    case ScalarType::Int8: return f(TypeTag<int8_t>{});
    case ScalarType::Int16: return f(TypeTag<int16_t>{});
    case ScalarType::Int32: return f(TypeTag<int32_t>{});
    case ScalarType::Int64: return f(TypeTag<int64_t>{});
    case ScalarType::Float16: return f(TypeTag<Half>{});
    case ScalarType::BFloat16: return f(TypeTag<BFloat16>{});
    case ScalarType::Float32: return f(TypeTag<float>{});
    case ScalarType::Float64: return f(TypeTag<double>{});
    default: SDK_THROW(Type, op, ": unsupported dtype ", scalar_type_name(t));
  }
}

// Calls f(TypeTag<compute type>{}); see Note [Compute type].
template <typename F>
inline decltype(auto) dispatch_compute_type(ScalarType t, const char* op, F&& f) {
  if (t == ScalarType::Float16 || t == ScalarType::BFloat16) return f(TypeTag<float>{});
  return dispatch_storage_type(t, op, std::forward<F>(f));
}

// dst[i] = src[i * stride] converted from `dtype` to T, for i < n.
template <typename T>
void load_converted(T* dst, const char* src, int64_t stride, ScalarType dtype, int64_t n) {
  dispatch_storage_type(dtype, "load", [&](auto tag) {
    using S = typename decltype(tag)::type;
    if (stride == static_cast<int64_t>(sizeof(S))) {  // contiguous: vectorisable
      const S* p = reinterpret_cast<const S*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = convert<T, S>(p[i]);
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      S v;
      std::memcpy(&v, src + i * stride, sizeof(S));
      dst[i] = convert<T, S>(v);
    }
  });
}

// dst[i * stride] = src[i] converted from T to `dtype`, for i < n.
template <typename T>
void store_converted(char* dst, int64_t stride, ScalarType dtype, const T* src, int64_t n) {
  dispatch_storage_type(dtype, "store", [&](auto tag) {
    using D = typename decltype(tag)::type;
    if (stride == static_cast<int64_t>(sizeof(D))) {  // contiguous: vectorisable
      D* p = reinterpret_cast<D*>(dst);
      for (int64_t i = 0; i < n; ++i) p[i] = convert<D, T>(src[i]);
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      D v = convert<D, T>(src[i]);
      std::memcpy(dst + i * stride, &v, sizeof(D));
    }
  });
}

// A run of n elements of one operand as T: in place when it already is a
// contiguous run of T, else converted into `buf`. See Note [Compute type].
template <typename T>
const T* run_as(const char* p, int64_t stride, ScalarType dtype, T* buf, int64_t n) {
  if (dtype == scalar_type_of<T>() && stride == static_cast<int64_t>(sizeof(T))) {
    return reinterpret_cast<const T*>(p);
  }
  load_converted(buf, p, stride, dtype, n);
  return buf;
}

// Integer arithmetic that wraps like PyTorch's instead of overflowing into
// undefined behaviour: computed in an unsigned type at least as wide as int.
template <typename T>
using wide_unsigned_t = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;

template <typename T>
inline T wrapping_add(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = wide_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}

template <typename T>
inline T wrapping_mul(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = wide_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

}  // namespace sdk::ops::cpu
