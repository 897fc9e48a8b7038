#include <backend_sdk/core/ScalarType.h>

#include <atomic>

#include <backend_sdk/core/Exception.h>

namespace sdk {

size_t element_size(ScalarType t) {
  SDK_CHECK_VALUE(is_valid_scalar_type(t), "element_size: invalid dtype ", static_cast<int>(t));
  return headeronly::element_size(t);
}

const char* scalar_type_name(ScalarType t) { return headeronly::scalar_type_name(t); }

ScalarType promote_types(ScalarType a, ScalarType b) {
  if (a == ScalarType::Undefined) return b;
  if (b == ScalarType::Undefined) return a;
  using S = ScalarType;
  constexpr S b1 = S::Bool, u1 = S::UInt8, i1 = S::Int8, i2 = S::Int16, i4 = S::Int32, i8 = S::Int64,
              f2 = S::Float16, bf = S::BFloat16, f4 = S::Float32, f8 = S::Float64;
  // Indexed in ScalarType order: b1 u1 i1 i2 i4 i8 f2 bf f4 f8 (PyTorch's table, restricted).
  static constexpr S table[kNumScalarTypes][kNumScalarTypes] = {
      /* b1 */ {b1, u1, i1, i2, i4, i8, f2, bf, f4, f8},
      /* u1 */ {u1, u1, i2, i2, i4, i8, f2, bf, f4, f8},
      /* i1 */ {i1, i2, i1, i2, i4, i8, f2, bf, f4, f8},
      /* i2 */ {i2, i2, i2, i2, i4, i8, f2, bf, f4, f8},
      /* i4 */ {i4, i4, i4, i4, i4, i8, f2, bf, f4, f8},
      /* i8 */ {i8, i8, i8, i8, i8, i8, f2, bf, f4, f8},
      /* f2 */ {f2, f2, f2, f2, f2, f2, f2, f4, f4, f8},
      /* bf */ {bf, bf, bf, bf, bf, bf, f4, bf, f4, f8},
      /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f4, f4, f8},
      /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8},
  };
  return table[static_cast<int>(a)][static_cast<int>(b)];
}

namespace {
std::atomic<ScalarType> g_default_dtype{ScalarType::Float32};

// See Note [Result type computation].
ScalarType combine_categories(ScalarType higher, ScalarType lower) {
  if (is_floating_type(higher)) return higher;
  if (higher == ScalarType::Bool || is_floating_type(lower)) return promote_types(higher, lower);
  if (higher != ScalarType::Undefined) return higher;
  return lower;
}
}  // namespace

ScalarType default_dtype() { return g_default_dtype.load(std::memory_order_relaxed); }
void set_default_dtype(ScalarType t) {
  SDK_CHECK_TYPE(t == ScalarType::Float32 || t == ScalarType::Float64 || t == ScalarType::Float16 ||
                     t == ScalarType::BFloat16,
                 "set_default_dtype: only floating-point types are supported as the default type, got ",
                 scalar_type_name(t));
  g_default_dtype.store(t, std::memory_order_relaxed);
}

void ResultTypeState::update_tensor(ScalarType t, int64_t dim, bool is_wrapped_number) {
  if (is_wrapped_number) {
    ScalarType current = is_floating_type(t) ? default_dtype() : t;
    wrapped_result = promote_types(wrapped_result, current);
  } else if (dim == 0) {
    zero_result = promote_types(zero_result, t);
  } else {
    dim_result = promote_types(dim_result, t);
  }
}

ScalarType ResultTypeState::result() const {
  return combine_categories(dim_result, combine_categories(zero_result, wrapped_result));
}

std::ostream& operator<<(std::ostream& os, ScalarType t) { return os << scalar_type_name(t); }

}  // namespace sdk
