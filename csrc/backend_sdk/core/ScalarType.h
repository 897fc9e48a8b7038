// ScalarType (dtype) and PyTorch's type-promotion rules.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include <backend_sdk/core/Half.h>
#include <backend_sdk/core/Macros.h>
#include <backend_sdk/headeronly/ScalarType.h>

namespace sdk {

// The ScalarType enum and its predicates are header-only (headeronly/ScalarType.h).
// element_size throws a ValueError for an invalid dtype (headeronly::element_size returns 0).
SDK_API size_t element_size(ScalarType t);
// PyTorch's dtype names without the "torch." prefix: "float32", "int64", "bool".
SDK_API const char* scalar_type_name(ScalarType t);

// promote_types(a, b): PyTorch's promoteTypes lattice (commutative).
SDK_API ScalarType promote_types(ScalarType a, ScalarType b);

// Note [Result type computation]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// PyTorch's result_type: operands fall in three priority categories —
// dimensioned tensors, zero-dim tensors, and wrapped numbers (Python scalars).
// A lower category only changes the result if it is of a higher *kind*
// (bool < integral < floating); within a category types promote normally.
// Wrapped Python floats count as the default dtype (float32), ints as int64.
struct SDK_API ResultTypeState {
  ScalarType dim_result = ScalarType::Undefined;
  ScalarType zero_result = ScalarType::Undefined;
  ScalarType wrapped_result = ScalarType::Undefined;

  void update_tensor(ScalarType t, int64_t dim, bool is_wrapped_number);
  ScalarType result() const;
};

// The default dtype for Python floats and float factories.
SDK_API ScalarType default_dtype();
SDK_API void set_default_dtype(ScalarType t);

SDK_API std::ostream& operator<<(std::ostream& os, ScalarType t);

// Calls `fn.template operator()<T>()`-style dispatch over dtypes. Kernels use
// SDK_DISPATCH_ALL_TYPES(dtype, "op", [&] { using scalar_t = ...; })
#define SDK_DISPATCH_CASE(enum_type, cpp_type, ...) \
  case ::sdk::ScalarType::enum_type: {              \
    using scalar_t = cpp_type;                      \
    return __VA_ARGS__();                           \
  }

#define SDK_DISPATCH_ALL_TYPES(dtype, opname, ...)                                                  \
  [&] {                                                                                             \
    switch (dtype) {                                                                                \
      SDK_DISPATCH_CASE(Bool, bool, __VA_ARGS__)                                                    \
      SDK_DISPATCH_CASE(UInt8, uint8_t, __VA_ARGS__)                                                \
      SDK_DISPATCH_CASE(Int8, int8_t, __VA_ARGS__)                                                  \
      SDK_DISPATCH_CASE(Int16, int16_t, __VA_ARGS__)                                                \
      SDK_DISPATCH_CASE(Int32, int32_t, __VA_ARGS__)                                                \
      SDK_DISPATCH_CASE(Int64, int64_t, __VA_ARGS__)                                                \
      SDK_DISPATCH_CASE(Float16, ::sdk::Half, __VA_ARGS__)                                          \
      SDK_DISPATCH_CASE(BFloat16, ::sdk::BFloat16, __VA_ARGS__)                                     \
      SDK_DISPATCH_CASE(Float32, float, __VA_ARGS__)                                                \
      SDK_DISPATCH_CASE(Float64, double, __VA_ARGS__)                                               \
      default:                                                                                      \
        SDK_THROW(Type, opname, ": unsupported dtype ", ::sdk::scalar_type_name(dtype));           \
    }                                                                                               \
  }()

}  // namespace sdk
