// Binary arithmetic beyond add and mul: sub/rsub, div (true, "trunc",
// "floor"), floor_divide, remainder, pow, maximum and minimum; CPU and Meta
// kernels of every variant plus the Scalar overloads. See
// Note [Element-wise kernels] (ops/detail/ElementwiseLoops.h).
#include <cmath>
#include <optional>
#include <string_view>

#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/detail/ElementwiseLoops.h>

namespace sdk::ops {
namespace {

using cpu::wide_unsigned_t;

template <typename T>
T wrapping_sub(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<wide_unsigned_t<T>>(a) - static_cast<wide_unsigned_t<T>>(b));
  } else {
    return a - b;
  }
}

// Integer division and remainder raise on a zero divisor, as PyTorch does
// (RuntimeError "ZeroDivisionError"); x / -1 wraps instead of trapping.
[[noreturn]] void zero_division(const char* op) { SDK_THROW(Runtime, op, ": ZeroDivisionError"); }

// ---------------------------------------------------------------------------
// Element operations
// ---------------------------------------------------------------------------

template <typename T>
struct SubOp {
  T alpha;
  T operator()(T a, T b) const { return wrapping_sub(a, cpu::wrapping_mul(alpha, b)); }
};
template <typename T>
struct MinusOp {  // alpha == 1: exact for floats whatever the compiler contracts
  T operator()(T a, T b) const { return wrapping_sub(a, b); }
};
struct TrueDivOp {
  template <typename T>
  T operator()(T a, T b) const { return a / b; }
};

template <typename T>
struct TruncDivOp {
  const char* op;
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) zero_division(op);
      if constexpr (std::is_signed_v<T>) {
        if (b == -1) return wrapping_sub(T(0), a);
      }
      return static_cast<T>(a / b);
    } else {
      return std::trunc(a / b);
    }
  }
};

// Floor division; for floats Python's algorithm: the quotient of a - fmod(a, b),
// corrected towards -inf, and rounded to the nearest integer.
template <typename T>
struct FloorDivOp {
  const char* op;
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) zero_division(op);
      if constexpr (std::is_signed_v<T>) {
        if (b == -1) return wrapping_sub(T(0), a);
        const T q = static_cast<T>(a / b);
        const T r = static_cast<T>(a % b);
        return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(q - 1) : q;
      } else {
        return static_cast<T>(a / b);
      }
    } else {
      if (b == 0) return a / b;
      const T mod = std::fmod(a, b);
      T div = (a - mod) / b;
      if (mod != 0 && ((b < 0) != (mod < 0))) div -= T(1);
      if (div == 0) return std::copysign(T(0), a / b);
      T floordiv = std::floor(div);
      if (div - floordiv > T(0.5)) floordiv += T(1);
      return floordiv;
    }
  }
};

// Python's modulo: the result has the divisor's sign.
template <typename T>
struct RemainderOp {
  const char* op;
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) zero_division(op);
      if constexpr (std::is_signed_v<T>) {
        if (b == -1) return T(0);
        const T r = static_cast<T>(a % b);
        return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(r + b) : r;
      } else {
        return static_cast<T>(a % b);
      }
    } else {
      T r = std::fmod(a, b);
      if (r != 0 && ((b < 0) != (r < 0))) r += b;
      return r;
    }
  }
};

// C's fmod: the result has the dividend's sign (truncated division).
template <typename T>
struct FmodOp {
  const char* op;
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) zero_division(op);
      if constexpr (std::is_signed_v<T>) {
        if (b == -1) return T(0);
      }
      return static_cast<T>(a % b);
    } else {
      return std::fmod(a, b);
    }
  }
};

struct Atan2Op {
  template <typename T>
  T operator()(T a, T b) const { return std::atan2(a, b); }
};

// Integer powers by squaring (wrapping); negative exponents give 0 except
// for bases 1 and -1, as PyTorch.
template <typename T>
T int_pow(T base, T exp) {
  if constexpr (std::is_signed_v<T>) {
    if (exp < 0) {
      if (base == 1) return 1;
      if (base == -1) return (exp & 1) ? T(-1) : T(1);
      return 0;
    }
  }
  T result = 1;
  while (exp) {
    if (exp & 1) result = cpu::wrapping_mul(result, base);
    exp = static_cast<T>(exp >> 1);
    base = cpu::wrapping_mul(base, base);
  }
  return result;
}

struct PowOp {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) return int_pow(a, b);
    else return std::pow(a, b);
  }
};
// Exponents PyTorch computes without pow (the results differ from pow's in the last bit).
struct SquareOp {
  template <typename T>
  T operator()(T a, T) const { return a * a; }
};
struct CubeOp {
  template <typename T>
  T operator()(T a, T) const { return a * a * a; }
};
struct SqrtPowOp {
  template <typename T>
  T operator()(T a, T) const { return std::sqrt(a); }
};
struct InversePowOp {
  template <typename T>
  T operator()(T a, T) const { return T(1) / a; }
};
struct InverseSqrtPowOp {
  template <typename T>
  T operator()(T a, T) const { return T(1) / std::sqrt(a); }
};
struct InverseSquarePowOp {
  template <typename T>
  T operator()(T a, T) const { return T(1) / (a * a); }
};

// NaN propagates from either side.
struct MaximumOp {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) return a || b;
    else if constexpr (std::is_integral_v<T>) return a > b ? a : b;
    else return (a > b || a != a) ? a : b;
  }
};
struct MinimumOp {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) return a && b;
    else if constexpr (std::is_integral_v<T>) return a < b ? a : b;
    else return (a < b || a != a) ? a : b;
  }
};

// ---------------------------------------------------------------------------
// Build steps (shared by CPU and Meta)
// ---------------------------------------------------------------------------

void check_not_bool_sub(const TensorIterator& iter, const Tensor& self, const Tensor& other) {
  const bool a = self.dtype() == ScalarType::Bool, b = other.dtype() == ScalarType::Bool;
  SDK_CHECK_KIND(::sdk::ErrorKind::Type, !(a && b), iter.op_name(),
                 ": Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                 "`logical_xor()` operator instead.");
  SDK_CHECK_KIND(::sdk::ErrorKind::Type, !(a || b), iter.op_name(),
                 ": Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a "
                 "mask, use the `~` or `logical_not()` operator instead.");
}

enum class Rounding { None, Trunc, Floor };

Rounding parse_rounding_mode(const char* op, std::optional<std::string_view> mode) {
  if (!mode) return Rounding::None;
  if (*mode == "trunc") return Rounding::Trunc;
  if (*mode == "floor") return Rounding::Floor;
  SDK_THROW(Value, op, ": div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '", *mode, "'");
}

const char* rounding_kernel(Rounding r) { return r == Rounding::Trunc ? "div_trunc_cpu" : "div_floor_cpu"; }

void build_div(TensorIterator& iter, Variant v, const Tensor& self, const Tensor& other, const Tensor& out, Rounding r) {
  if (r == Rounding::None) iter.promote_integer_inputs_to_float(true);
  build_binary_op(iter, v, self, other, out);
  if (r != Rounding::None && iter.common_dtype() == ScalarType::Bool) {
    report_not_implemented_for(iter, rounding_kernel(r), ScalarType::Bool);
  }
}

// ---------------------------------------------------------------------------
// Loops
// ---------------------------------------------------------------------------

void sub_loop(const TensorIterator& iter, const Scalar& alpha) {
  cpu::dispatch_math_type(iter.common_dtype(), iter.op_name(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      if (alpha.equal(Scalar(int64_t{1}))) {
        cpu::binary_loop<T, T>(iter, MinusOp<T>{});
      } else {
        cpu::binary_loop<T, T>(iter, SubOp<T>{checked_scalar_to<T>(alpha, iter.op_name(), "alpha", cpu::scalar_type_of<T>())});
      }
    }
  });
}

void div_loop(const TensorIterator& iter, Rounding r) {
  cpu::dispatch_math_type(iter.common_dtype(), iter.op_name(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      if (r == Rounding::Trunc) {
        cpu::binary_loop<T, T>(iter, TruncDivOp<T>{iter.op_name()});
      } else if (r == Rounding::Floor) {
        cpu::binary_loop<T, T>(iter, FloorDivOp<T>{iter.op_name()});
      } else if constexpr (std::is_floating_point_v<T>) {
        cpu::binary_loop<T, T>(iter, TrueDivOp{});
      }
    }
  });
}

void remainder_loop(const TensorIterator& iter) {
  cpu::dispatch_math_type(iter.common_dtype(), iter.op_name(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) cpu::binary_loop<T, T>(iter, RemainderOp<T>{iter.op_name()});
  });
}

void fmod_loop(const TensorIterator& iter) {
  cpu::dispatch_math_type(iter.common_dtype(), iter.op_name(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) cpu::binary_loop<T, T>(iter, FmodOp<T>{iter.op_name()});
  });
}

// A floating exponent that is one value everywhere picks a cheaper, and
// PyTorch-identical, formula.
template <typename T>
void pow_loop_typed(const TensorIterator& iter) {
  if constexpr (std::is_floating_point_v<T>) {
    if (iter.numel() > 0 && iter.is_broadcast_scalar(2)) {
      double e = 0;
      cpu::load_converted(&e, iter.data(2), 0, iter.dtype(2), 1);
      if (e == 2) return cpu::binary_loop<T, T>(iter, SquareOp{});
      if (e == 3) return cpu::binary_loop<T, T>(iter, CubeOp{});
      if (e == 0.5) return cpu::binary_loop<T, T>(iter, SqrtPowOp{});
      if (e == -1) return cpu::binary_loop<T, T>(iter, InversePowOp{});
      if (e == -0.5) return cpu::binary_loop<T, T>(iter, InverseSqrtPowOp{});
      if (e == -2) return cpu::binary_loop<T, T>(iter, InverseSquarePowOp{});
    }
  }
  cpu::binary_loop<T, T>(iter, PowOp{});
}

void pow_loop(const TensorIterator& iter) {
  cpu::dispatch_math_type(iter.common_dtype(), iter.op_name(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) pow_loop_typed<T>(iter);
  });
}

template <typename Op>
void same_type_loop(const TensorIterator& iter) {
  cpu::dispatch_math_type(iter.common_dtype(), iter.op_name(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    cpu::binary_loop<T, T>(iter, Op{});
  });
}

// ---------------------------------------------------------------------------
// Kernels: kCpu=false is the Meta kernel (build and checks only).
// ---------------------------------------------------------------------------

template <bool kCpu>
Tensor run_sub(const char* op, Variant v, const Tensor& self, const Tensor& other, const Scalar& alpha, const Tensor& out) {
  TensorIterator iter(op);
  build_binary_op(iter, v, self, other, out);
  check_not_bool_sub(iter, self, other);
  check_alpha(iter, alpha);
  if constexpr (kCpu) sub_loop(iter, alpha);
  return variant_result(iter, v, self, out);
}
template <bool kCpu>
Tensor sub_tensor(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  return run_sub<kCpu>("sub.Tensor", Variant::Functional, self, other, alpha, Tensor());
}
template <bool kCpu>
Tensor sub_inplace(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  return run_sub<kCpu>("sub_.Tensor", Variant::InPlace, self, other, alpha, Tensor());
}
template <bool kCpu>
Tensor sub_out(const Tensor& self, const Tensor& other, const Scalar& alpha, const Tensor& out) {
  return run_sub<kCpu>("sub.out", Variant::Out, self, other, alpha, out);
}

template <bool kCpu>
Tensor run_div(const char* op, Variant v, const Tensor& self, const Tensor& other, Rounding r, const Tensor& out) {
  TensorIterator iter(op);
  build_div(iter, v, self, other, out, r);
  if constexpr (kCpu) div_loop(iter, r);
  return variant_result(iter, v, self, out);
}
template <bool kCpu>
Tensor div_tensor(const Tensor& self, const Tensor& other) {
  return run_div<kCpu>("div.Tensor", Variant::Functional, self, other, Rounding::None, Tensor());
}
template <bool kCpu>
Tensor div_inplace(const Tensor& self, const Tensor& other) {
  return run_div<kCpu>("div_.Tensor", Variant::InPlace, self, other, Rounding::None, Tensor());
}
template <bool kCpu>
Tensor div_out(const Tensor& self, const Tensor& other, const Tensor& out) {
  return run_div<kCpu>("div.out", Variant::Out, self, other, Rounding::None, out);
}
template <bool kCpu>
Tensor div_mode(const Tensor& self, const Tensor& other, std::optional<std::string_view> mode) {
  const char* op = "div.Tensor_mode";
  return run_div<kCpu>(op, Variant::Functional, self, other, parse_rounding_mode(op, mode), Tensor());
}
template <bool kCpu>
Tensor div_mode_inplace(const Tensor& self, const Tensor& other, std::optional<std::string_view> mode) {
  const char* op = "div_.Tensor_mode";
  return run_div<kCpu>(op, Variant::InPlace, self, other, parse_rounding_mode(op, mode), Tensor());
}
template <bool kCpu>
Tensor div_mode_out(const Tensor& self, const Tensor& other, std::optional<std::string_view> mode, const Tensor& out) {
  const char* op = "div.out_mode";
  return run_div<kCpu>(op, Variant::Out, self, other, parse_rounding_mode(op, mode), out);
}
template <bool kCpu>
Tensor floor_divide(const Tensor& self, const Tensor& other) {
  return run_div<kCpu>("floor_divide", Variant::Functional, self, other, Rounding::Floor, Tensor());
}
template <bool kCpu>
Tensor floor_divide_inplace(const Tensor& self, const Tensor& other) {
  return run_div<kCpu>("floor_divide_.Tensor", Variant::InPlace, self, other, Rounding::Floor, Tensor());
}
template <bool kCpu>
Tensor floor_divide_out(const Tensor& self, const Tensor& other, const Tensor& out) {
  return run_div<kCpu>("floor_divide.out", Variant::Out, self, other, Rounding::Floor, out);
}

// remainder, pow, maximum, minimum: one loop each, a dtype check for some.
using BinaryLoop = void (*)(const TensorIterator&);

template <bool kCpu>
Tensor run_binary(const char* op, const char* bool_kernel, BinaryLoop loop, Variant v, const Tensor& self,
                  const Tensor& other, const Tensor& out) {
  TensorIterator iter(op);
  build_binary_op(iter, v, self, other, out);
  if (bool_kernel && iter.common_dtype() == ScalarType::Bool) report_not_implemented_for(iter, bool_kernel, ScalarType::Bool);
  if constexpr (kCpu) loop(iter);
  return variant_result(iter, v, self, out);
}

#define SDK_BINARY_VARIANTS(id, fn_name, inplace_name, out_name, bool_kernel, loop)           \
  template <bool kCpu>                                                                       \
  Tensor id##_fn(const Tensor& self, const Tensor& other) {                                  \
    return run_binary<kCpu>(fn_name, bool_kernel, loop, Variant::Functional, self, other, Tensor()); \
  }                                                                                          \
  template <bool kCpu>                                                                       \
  Tensor id##_inplace(const Tensor& self, const Tensor& other) {                             \
    return run_binary<kCpu>(inplace_name, bool_kernel, loop, Variant::InPlace, self, other, Tensor()); \
  }                                                                                          \
  template <bool kCpu>                                                                       \
  Tensor id##_out(const Tensor& self, const Tensor& other, const Tensor& out) {              \
    return run_binary<kCpu>(out_name, bool_kernel, loop, Variant::Out, self, other, out);    \
  }

SDK_BINARY_VARIANTS(remainder, "remainder.Tensor", "remainder_.Tensor", "remainder.Tensor_out", "remainder_cpu",
                    &remainder_loop)
SDK_BINARY_VARIANTS(pow, "pow.Tensor_Tensor", "pow_.Tensor", "pow.Tensor_Tensor_out", "pow", &pow_loop)
SDK_BINARY_VARIANTS(maximum, "maximum", "maximum_", "maximum.out", nullptr, &same_type_loop<MaximumOp>)
SDK_BINARY_VARIANTS(minimum, "minimum", "minimum_", "minimum.out", nullptr, &same_type_loop<MinimumOp>)
SDK_BINARY_VARIANTS(fmod, "fmod.Tensor", "fmod_.Tensor", "fmod.Tensor_out", "fmod_cpu", &fmod_loop)
#undef SDK_BINARY_VARIANTS

// atan2: integral and bool inputs promote to the default floating dtype (a
// floating operation, as PyTorch's); the in-place form must keep self's dtype.
template <bool kCpu>
Tensor run_atan2(const char* op, Variant v, const Tensor& self, const Tensor& other, const Tensor& out) {
  TensorIterator iter(op);
  iter.promote_integer_inputs_to_float(true);
  build_binary_op(iter, v, self, other, out);
  if constexpr (kCpu) {
    cpu::dispatch_floating(iter, "atan2_cpu", [&](auto tag) {
      using T = typename decltype(tag)::type;
      cpu::binary_loop<T, T>(iter, Atan2Op{});
    });
  }
  return variant_result(iter, v, self, out);
}
template <bool kCpu>
Tensor atan2_fn(const Tensor& self, const Tensor& other) {
  return run_atan2<kCpu>("atan2", Variant::Functional, self, other, Tensor());
}
template <bool kCpu>
Tensor atan2_inplace(const Tensor& self, const Tensor& other) {
  return run_atan2<kCpu>("atan2_", Variant::InPlace, self, other, Tensor());
}
template <bool kCpu>
Tensor atan2_out(const Tensor& self, const Tensor& other, const Tensor& out) {
  return run_atan2<kCpu>("atan2.out", Variant::Out, self, other, out);
}

// ---------------------------------------------------------------------------
// Scalar overloads: wrap the number (so it promotes as a Python number would)
// and go back through the dispatcher, like PyTorch's CompositeExplicitAutograd
// kernels for them.
// ---------------------------------------------------------------------------

using TT = Tensor(const Tensor&, const Tensor&);
using TTS = Tensor(const Tensor&, const Tensor&, const Scalar&);
using TTM = Tensor(const Tensor&, const Tensor&, std::optional<std::string_view>);

Tensor sub_scalar(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  SDK_ATEN_OP("aten::sub.Tensor", TTS);
  return op.call(self, wrapped_scalar_tensor(other), alpha);
}
Tensor sub_scalar_inplace(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  SDK_ATEN_OP("aten::sub_.Tensor", TTS);
  return op.call(self, wrapped_scalar_tensor(other), alpha);
}
// rsub(self, other, alpha) = other - alpha * self.
Tensor rsub_tensor(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  SDK_ATEN_OP("aten::sub.Tensor", TTS);
  return op.call(other, self, alpha);
}
Tensor rsub_scalar(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  SDK_ATEN_OP("aten::sub.Tensor", TTS);
  return op.call(wrapped_scalar_tensor(other), self, alpha);
}
Tensor div_scalar(const Tensor& self, const Scalar& other) {
  SDK_ATEN_OP("aten::div.Tensor", TT);
  return op.call(self, wrapped_scalar_tensor(other));
}
Tensor div_scalar_inplace(const Tensor& self, const Scalar& other) {
  SDK_ATEN_OP("aten::div_.Tensor", TT);
  return op.call(self, wrapped_scalar_tensor(other));
}
Tensor div_scalar_mode(const Tensor& self, const Scalar& other, std::optional<std::string_view> mode) {
  SDK_ATEN_OP("aten::div.Tensor_mode", TTM);
  return op.call(self, wrapped_scalar_tensor(other), mode);
}
Tensor div_scalar_mode_inplace(const Tensor& self, const Scalar& other, std::optional<std::string_view> mode) {
  SDK_ATEN_OP("aten::div_.Tensor_mode", TTM);
  return op.call(self, wrapped_scalar_tensor(other), mode);
}
Tensor floor_divide_scalar(const Tensor& self, const Scalar& other) {
  SDK_ATEN_OP("aten::floor_divide", TT);
  return op.call(self, wrapped_scalar_tensor(other));
}
Tensor floor_divide_scalar_inplace(const Tensor& self, const Scalar& other) {
  SDK_ATEN_OP("aten::floor_divide_.Tensor", TT);
  return op.call(self, wrapped_scalar_tensor(other));
}
Tensor remainder_scalar(const Tensor& self, const Scalar& other) {
  SDK_ATEN_OP("aten::remainder.Tensor", TT);
  return op.call(self, wrapped_scalar_tensor(other));
}
Tensor remainder_scalar_inplace(const Tensor& self, const Scalar& other) {
  SDK_ATEN_OP("aten::remainder_.Tensor", TT);
  return op.call(self, wrapped_scalar_tensor(other));
}
Tensor remainder_scalar_tensor(const Scalar& self, const Tensor& other) {
  SDK_ATEN_OP("aten::remainder.Tensor", TT);
  return op.call(wrapped_scalar_tensor(self), other);
}
Tensor fmod_scalar(const Tensor& self, const Scalar& other) {
  SDK_ATEN_OP("aten::fmod.Tensor", TT);
  return op.call(self, wrapped_scalar_tensor(other));
}
Tensor fmod_scalar_inplace(const Tensor& self, const Scalar& other) {
  SDK_ATEN_OP("aten::fmod_.Tensor", TT);
  return op.call(self, wrapped_scalar_tensor(other));
}
Tensor fmod_scalar_out(const Tensor& self, const Scalar& other, const Tensor& out) {
  SDK_ATEN_OP("aten::fmod.Tensor_out", Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op.call(self, wrapped_scalar_tensor(other), out);
}

// PyTorch refuses a negative integral exponent for an integral tensor.
void check_pow_exponent(const char* op, const Tensor& self, const Scalar& exponent) {
  SDK_CHECK_KIND(::sdk::ErrorKind::Value,
                 !(is_integral_type(self.dtype(), /*include_bool=*/true) && exponent.is_integral(false) &&
                   exponent.to_int() < 0),
                 op, ": Integers to negative integer powers are not allowed.");
}
Tensor pow_tensor_scalar(const Tensor& self, const Scalar& exponent) {
  check_pow_exponent("pow.Tensor_Scalar", self, exponent);
  SDK_ATEN_OP("aten::pow.Tensor_Tensor", TT);
  return op.call(self, wrapped_scalar_tensor(exponent));
}
Tensor pow_scalar_inplace(const Tensor& self, const Scalar& exponent) {
  check_pow_exponent("pow_.Scalar", self, exponent);
  SDK_ATEN_OP("aten::pow_.Tensor", TT);
  return op.call(self, wrapped_scalar_tensor(exponent));
}
Tensor pow_tensor_scalar_out(const Tensor& self, const Scalar& exponent, const Tensor& out) {
  check_pow_exponent("pow.Tensor_Scalar_out", self, exponent);
  SDK_ATEN_OP("aten::pow.Tensor_Tensor_out", Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op.call(self, wrapped_scalar_tensor(exponent), out);
}
Tensor pow_scalar(const Scalar& self, const Tensor& exponent) {
  SDK_ATEN_OP("aten::pow.Tensor_Tensor", TT);
  return op.call(wrapped_scalar_tensor(self), exponent);
}
Tensor pow_scalar_out(const Scalar& self, const Tensor& exponent, const Tensor& out) {
  SDK_ATEN_OP("aten::pow.Tensor_Tensor_out", Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op.call(wrapped_scalar_tensor(self), exponent, out);
}

template <bool kCpu>
void register_binary(Library& m) {
  m.impl("sub.Tensor", &sub_tensor<kCpu>);
  m.impl("sub_.Tensor", &sub_inplace<kCpu>);
  m.impl("sub.out", &sub_out<kCpu>);
  m.impl("div.Tensor", &div_tensor<kCpu>);
  m.impl("div_.Tensor", &div_inplace<kCpu>);
  m.impl("div.out", &div_out<kCpu>);
  m.impl("div.Tensor_mode", &div_mode<kCpu>);
  m.impl("div_.Tensor_mode", &div_mode_inplace<kCpu>);
  m.impl("div.out_mode", &div_mode_out<kCpu>);
  m.impl("floor_divide", &floor_divide<kCpu>);
  m.impl("floor_divide_.Tensor", &floor_divide_inplace<kCpu>);
  m.impl("floor_divide.out", &floor_divide_out<kCpu>);
  m.impl("remainder.Tensor", &remainder_fn<kCpu>);
  m.impl("remainder_.Tensor", &remainder_inplace<kCpu>);
  m.impl("remainder.Tensor_out", &remainder_out<kCpu>);
  m.impl("pow.Tensor_Tensor", &pow_fn<kCpu>);
  m.impl("pow_.Tensor", &pow_inplace<kCpu>);
  m.impl("pow.Tensor_Tensor_out", &pow_out<kCpu>);
  m.impl("maximum", &maximum_fn<kCpu>);
  m.impl("maximum.out", &maximum_out<kCpu>);
  m.impl("minimum", &minimum_fn<kCpu>);
  m.impl("minimum.out", &minimum_out<kCpu>);
  m.impl("fmod.Tensor", &fmod_fn<kCpu>);
  m.impl("fmod_.Tensor", &fmod_inplace<kCpu>);
  m.impl("fmod.Tensor_out", &fmod_out<kCpu>);
  m.impl("atan2", &atan2_fn<kCpu>);
  m.impl("atan2_", &atan2_inplace<kCpu>);
  m.impl("atan2.out", &atan2_out<kCpu>);
}

}  // namespace
}  // namespace sdk::ops

// fmod and atan2 (issue 20's core-tagged operators; the others' schemas are in schemas.cpp).
SDK_LIBRARY_FRAGMENT(aten, m) {
  m.def("fmod.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("fmod_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("fmod.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("fmod.Scalar(Tensor self, Scalar other) -> Tensor");
  m.def("fmod_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)");
  m.def("fmod.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("atan2(Tensor self, Tensor other) -> Tensor");
  m.def("atan2_(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("atan2.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  // The Scalar forms wrap the number and call the Tensor forms: their gradient is fmod.Tensor's.
  constexpr auto kCIA = sdk::DispatchKey::CompositeImplicitAutograd;
  m.impl("fmod.Scalar", kCIA, &sdk::ops::fmod_scalar);
  m.impl("fmod_.Scalar", kCIA, &sdk::ops::fmod_scalar_inplace);
  m.impl("fmod.Scalar_out", kCIA, &sdk::ops::fmod_scalar_out);
}

SDK_LIBRARY_IMPL(aten, CPU, m) { sdk::ops::register_binary<true>(m); }
SDK_LIBRARY_IMPL(aten, Meta, m) { sdk::ops::register_binary<false>(m); }

SDK_LIBRARY_IMPL(aten, CompositeExplicitAutograd, m) {
  using namespace sdk::ops;
  m.impl("sub.Scalar", &sub_scalar);
  m.impl("sub_.Scalar", &sub_scalar_inplace);
  m.impl("rsub.Tensor", &rsub_tensor);
  m.impl("rsub.Scalar", &rsub_scalar);
  m.impl("div.Scalar", &div_scalar);
  m.impl("div_.Scalar", &div_scalar_inplace);
  m.impl("div.Scalar_mode", &div_scalar_mode);
  m.impl("div_.Scalar_mode", &div_scalar_mode_inplace);
  m.impl("floor_divide.Scalar", &floor_divide_scalar);
  m.impl("floor_divide_.Scalar", &floor_divide_scalar_inplace);
  m.impl("remainder.Scalar", &remainder_scalar);
  m.impl("remainder_.Scalar", &remainder_scalar_inplace);
  m.impl("remainder.Scalar_Tensor", &remainder_scalar_tensor);
  m.impl("pow.Tensor_Scalar", &pow_tensor_scalar);
  m.impl("pow_.Scalar", &pow_scalar_inplace);
  m.impl("pow.Tensor_Scalar_out", &pow_tensor_scalar_out);
  m.impl("pow.Scalar", &pow_scalar);
  m.impl("pow.Scalar_out", &pow_scalar_out);
}
