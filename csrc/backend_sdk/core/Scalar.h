// Scalar: a Python-number-like value (bool, int64 or double).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/core/ScalarType.h>

namespace sdk {

class Scalar {
 public:
  enum class Tag : uint8_t { Bool, Int, Double };

  Scalar() : Scalar(int64_t{0}) {}
  Scalar(bool b) : tag_(Tag::Bool) { v_.i = b; }          // NOLINT
  Scalar(int v) : Scalar(static_cast<int64_t>(v)) {}      // NOLINT
  Scalar(int64_t v) : tag_(Tag::Int) { v_.i = v; }        // NOLINT
  Scalar(long long v) : Scalar(static_cast<int64_t>(v)) {}  // NOLINT
  Scalar(double v) : tag_(Tag::Double) { v_.d = v; }      // NOLINT
  Scalar(float v) : Scalar(static_cast<double>(v)) {}     // NOLINT

  Tag tag() const { return tag_; }
  bool is_boolean() const { return tag_ == Tag::Bool; }
  bool is_integral(bool include_bool) const { return tag_ == Tag::Int || (include_bool && tag_ == Tag::Bool); }
  bool is_floating_point() const { return tag_ == Tag::Double; }
  // The dtype a wrapped number of this value has: bool, int64 or float64.
  ScalarType type() const {
    return tag_ == Tag::Bool ? ScalarType::Bool : tag_ == Tag::Int ? ScalarType::Int64 : ScalarType::Float64;
  }

  double to_double() const { return tag_ == Tag::Double ? v_.d : static_cast<double>(v_.i); }
  int64_t to_int() const { return tag_ == Tag::Double ? static_cast<int64_t>(v_.d) : v_.i; }
  bool to_bool() const { return tag_ == Tag::Double ? v_.d != 0.0 : v_.i != 0; }

  template <typename T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>) {
      return to_bool();
    } else if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(to_int());
    } else {
      return static_cast<T>(static_cast<float>(to_double()));
    }
  }

  bool equal(const Scalar& o) const {
    if (tag_ == Tag::Double || o.tag_ == Tag::Double) return to_double() == o.to_double();
    return v_.i == o.v_.i;
  }

 private:
  Tag tag_;
  union {
    double d;
    int64_t i;
  } v_;
};

template <>
inline double Scalar::to<double>() const { return to_double(); }
template <>
inline float Scalar::to<float>() const { return static_cast<float>(to_double()); }

inline std::ostream& operator<<(std::ostream& os, const Scalar& s) {
  switch (s.tag()) {
    case Scalar::Tag::Bool:
      return os << (s.to_bool() ? "True" : "False");
    case Scalar::Tag::Int:
      return os << s.to_int();
    default:
      return os << s.to_double();
  }
}

}  // namespace sdk
