#include "ops/Casting.h"

namespace sdk::ops {

bool can_cast(ScalarType from, ScalarType to) {
  if (is_floating_type(from) && is_integral_type(to, /*include_bool=*/false)) return false;
  if (from != ScalarType::Bool && to == ScalarType::Bool) return false;
  return true;
}

const char* legacy_type_name(ScalarType t) {
  static const char* names[kNumScalarTypes] = {"Bool", "Byte", "Char",     "Short", "Int",
                                               "Long", "Half", "BFloat16", "Float", "Double"};
  if (t < ScalarType::Bool || t >= ScalarType::NumOptions) return scalar_type_name(t);
  return names[static_cast<int>(t)];
}

void check_can_cast(const char* op, ScalarType result, ScalarType out) {
  SDK_CHECK_TYPE(can_cast(result, out), op, ": result type ", legacy_type_name(result),
                 " can't be cast to the desired output type ", legacy_type_name(out));
}

namespace detail {
void report_scalar_overflow(const char* op, const char* arg, ScalarType t) {
  SDK_THROW(Value, op, ": value cannot be converted to type ", scalar_type_name(t),
            " without overflow (argument '", arg, "')");
}
}  // namespace detail

}  // namespace sdk::ops
