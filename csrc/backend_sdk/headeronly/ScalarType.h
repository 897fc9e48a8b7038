// ScalarType (dtype): the enum, its sizes, names and predicates. Header-only
// (Note [Header-only APIs]); type promotion and the default dtype are in core/ScalarType.h.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sdk {

// The enumerator order is part of the Python API (dtype ids), of kernels' dtype
// switches and of the stable C ABI (SDK_STABLE_DTYPE_*, stable/c/shim.h, which
// asserts that the numbers agree): add new types at the end, never renumber.
enum class ScalarType : int8_t {
  Bool = 0,
  UInt8,
  Int8,
  Int16,
  Int32,
  Int64,
  Float16,
  BFloat16,
  Float32,
  Float64,
  NumOptions,
  Undefined = -1,
};
constexpr int kNumScalarTypes = static_cast<int>(ScalarType::NumOptions);

constexpr bool is_valid_scalar_type(ScalarType t) { return t >= ScalarType::Bool && t < ScalarType::NumOptions; }
constexpr bool is_floating_type(ScalarType t) {
  return t == ScalarType::Float16 || t == ScalarType::BFloat16 || t == ScalarType::Float32 ||
         t == ScalarType::Float64;
}
constexpr bool is_integral_type(ScalarType t, bool include_bool) {
  return (include_bool && t == ScalarType::Bool) ||
         (t >= ScalarType::UInt8 && t <= ScalarType::Int64);
}
constexpr bool is_signed_type(ScalarType t) { return t != ScalarType::Bool && t != ScalarType::UInt8; }

namespace headeronly {

// Bytes per element; 0 for Undefined or an invalid value (core's element_size throws instead).
constexpr size_t element_size(ScalarType t) {
  constexpr size_t sizes[kNumScalarTypes] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8};
  return is_valid_scalar_type(t) ? sizes[static_cast<int>(t)] : 0;
}

// PyTorch's dtype names without the "torch." prefix: "float32", "int64", "bool";
// "Undefined" and "<invalid dtype>" for the rest.
constexpr const char* scalar_type_name(ScalarType t) {
  constexpr const char* names[kNumScalarTypes] = {"bool",    "uint8",   "int8",     "int16",   "int32",
                                                  "int64",   "float16", "bfloat16", "float32", "float64"};
  if (t == ScalarType::Undefined) return "Undefined";
  return is_valid_scalar_type(t) ? names[static_cast<int>(t)] : "<invalid dtype>";
}

}  // namespace headeronly
}  // namespace sdk
