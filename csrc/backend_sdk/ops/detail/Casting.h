// Casting rules shared by the operators: which dtype conversions an operator
// may do implicitly, and converting a Scalar argument to a kernel's type.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/core/Scalar.h>
#include <backend_sdk/core/ScalarType.h>

namespace sdk::ops {

// PyTorch's canCast: a result may be written into an output of dtype `to`
// unless that would drop a kind (floating -> integral, non-bool -> bool).
inline bool can_cast(ScalarType from, ScalarType to) {
  if (is_floating_type(from) && is_integral_type(to, /*include_bool=*/false)) return false;
  return from == ScalarType::Bool || to != ScalarType::Bool;
}

// The C++-style names PyTorch's casting errors use: "Float", "Long", "Bool".
SDK_API const char* legacy_type_name(ScalarType t);

namespace detail {
[[noreturn]] SDK_API void report_cannot_cast(const char* op, ScalarType result, ScalarType out);
}  // namespace detail

// TypeError "op: result type Float can't be cast to the desired output type Long".
inline void check_can_cast(const char* op, ScalarType result, ScalarType out) {
  if (SDK_UNLIKELY(!can_cast(result, out))) detail::report_cannot_cast(op, result, out);
}

namespace detail {
[[noreturn]] SDK_API void report_scalar_overflow(const char* op, const char* arg, ScalarType t);

// c10's overflow rule: integral targets reject values outside their range
// (unsigned ones also accept negatives whose magnitude fits, which wrap),
// floating targets reject finite values beyond their range; inf and NaN pass
// for floating targets only.
template <typename T>
bool scalar_overflows(const Scalar& s) {
  if constexpr (std::is_same_v<T, bool>) {
    return false;  // anything converts to bool
  } else if constexpr (std::is_integral_v<T>) {
    using L = std::numeric_limits<T>;
    if (s.is_floating_point()) {
      double d = s.to_double();
      if (std::isnan(d)) return true;
      return d < static_cast<double>(L::lowest()) || d > static_cast<double>(L::max());
    }
    int64_t v = s.to_int();
    if constexpr (!L::is_signed) {
      if (v < 0) return static_cast<uint64_t>(-(v + 1)) + 1 > static_cast<uint64_t>(L::max());
      return static_cast<uint64_t>(v) > static_cast<uint64_t>(L::max());
    } else {
      return v < static_cast<int64_t>(L::lowest()) || v > static_cast<int64_t>(L::max());
    }
  } else {
    double d = s.to_double();
    if (!std::isfinite(d)) return false;
    double hi = std::is_same_v<T, Half> ? 65504.0 : static_cast<double>(std::numeric_limits<float>::max());
    if constexpr (std::is_same_v<T, double>) return false;
    return d < -hi || d > hi;
  }
}
}  // namespace detail

// Converts an argument Scalar to the kernel type T (bool, an integer type,
// Half, BFloat16, float or double), ValueError when it does not fit:
// "add.Tensor: value cannot be converted to type int8 without overflow (argument 'alpha')".
template <typename T>
T checked_scalar_to(const Scalar& s, const char* op, const char* arg, ScalarType t) {
  if (SDK_UNLIKELY(detail::scalar_overflows<T>(s))) detail::report_scalar_overflow(op, arg, t);
  if constexpr (std::is_same_v<T, bool>) {
    return s.to_bool();
  } else if constexpr (std::is_integral_v<T>) {
    // Doubles in range truncate; negative values wrap into unsigned types.
    return static_cast<T>(s.is_floating_point() ? static_cast<int64_t>(s.to_double()) : s.to_int());
  } else if constexpr (std::is_same_v<T, double>) {
    return s.to_double();
  } else {
    return static_cast<T>(static_cast<float>(s.to_double()));
  }
}

}  // namespace sdk::ops
