#include <backend_sdk/ops/detail/Casting.h>

namespace sdk::ops {

const char* legacy_type_name(ScalarType t) {
  static const char* names[kNumScalarTypes] = {"Bool", "Byte", "Char",     "Short", "Int",
                                               "Long", "Half", "BFloat16", "Float", "Double"};
  if (t < ScalarType::Bool || t >= ScalarType::NumOptions) return scalar_type_name(t);
  return names[static_cast<int>(t)];
}

namespace detail {
void report_cannot_cast(const char* op, ScalarType result, ScalarType out) {
  SDK_THROW(Type, op, ": result type ", legacy_type_name(result), " can't be cast to the desired output type ",
            legacy_type_name(out));
}

void report_scalar_overflow(const char* op, const char* arg, ScalarType t) {
  SDK_THROW(Value, op, ": value cannot be converted to type ", scalar_type_name(t),
            " without overflow (argument '", arg, "')");
}
}  // namespace detail

}  // namespace sdk::ops
