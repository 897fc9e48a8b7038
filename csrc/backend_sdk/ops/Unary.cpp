// Unary element-wise operators: neg, abs, the floating functions (exp, log,
// sqrt, sin, sigmoid, ...), activations (relu, gelu, silu), rounding, sign,
// logical_not and bitwise_not; CPU and Meta kernels of every variant. See
// Note [Element-wise kernels] (ops/detail/ElementwiseLoops.h).
#include <cmath>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/detail/ElementwiseLoops.h>
#include <backend_sdk/ops/detail/VecMath.h>

namespace sdk::ops {
namespace {

// How an operator treats dtypes, decided in the shared build step.
enum class Kind {
  Floating,      // integral and bool inputs promote to the default dtype (exp)
  FloatingOnly,  // floating inputs only (gelu, silu)
  Numeric,       // any dtype but bool (neg, abs, relu)
  Rounding,      // floating computes, integral is the identity, bool is an error (floor)
  AnyToBool,     // any dtype in, bool out (logical_not)
  Integral,      // integral and bool only (bitwise_not)
  Any,           // every dtype (sign)
};

// ---------------------------------------------------------------------------
// Element functions
// ---------------------------------------------------------------------------

template <typename T>
T wrapping_neg(T x) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(cpu::wide_unsigned_t<T>(0) - static_cast<cpu::wide_unsigned_t<T>>(x));
  } else {
    return -x;
  }
}

#define SDK_FLOAT_FN(Name, expr)           \
  struct Name {                            \
    template <typename T>                  \
    T operator()(T x) const { return expr; } \
  };
SDK_FLOAT_FN(ExpFn, std::exp(x))
SDK_FLOAT_FN(LogFn, std::log(x))
SDK_FLOAT_FN(Log1pFn, std::log1p(x))
SDK_FLOAT_FN(Expm1Fn, std::expm1(x))
SDK_FLOAT_FN(SqrtFn, std::sqrt(x))
SDK_FLOAT_FN(RsqrtFn, T(1) / std::sqrt(x))
SDK_FLOAT_FN(SinFn, std::sin(x))
SDK_FLOAT_FN(CosFn, std::cos(x))
SDK_FLOAT_FN(TanFn, std::tan(x))
SDK_FLOAT_FN(TanhFn, std::tanh(x))
SDK_FLOAT_FN(SigmoidFn, T(1) / (T(1) + std::exp(-x)))
SDK_FLOAT_FN(ErfFn, std::erf(x))
SDK_FLOAT_FN(ReciprocalFn, T(1) / x)
SDK_FLOAT_FN(SiluFn, x / (T(1) + std::exp(-x)))
SDK_FLOAT_FN(GeluErfFn, T(0.5) * x * (T(1) + std::erf(x * T(0.70710678118654752440))))
SDK_FLOAT_FN(GeluTanhFn,
             T(0.5) * x * (T(1) + std::tanh(T(0.79788456080286535588) * (x + T(0.044715) * x * x * x))))
SDK_FLOAT_FN(FloorFn, std::floor(x))
SDK_FLOAT_FN(CeilFn, std::ceil(x))
SDK_FLOAT_FN(TruncFn, std::trunc(x))
SDK_FLOAT_FN(RoundFn, std::nearbyint(x))  // half to even, as PyTorch
#undef SDK_FLOAT_FN

struct IdentityFn {
  template <typename T>
  T operator()(T x) const { return x; }
};
struct NegFn {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_same_v<T, bool>) return x;  // unreachable: bool is refused at build
    else return wrapping_neg(x);
  }
};
struct AbsFn {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) return std::abs(x);
    else if constexpr (std::is_unsigned_v<T> || std::is_same_v<T, bool>) return x;
    else return x < 0 ? wrapping_neg(x) : x;  // abs(INT_MIN) wraps to INT_MIN, as PyTorch
  }
};
struct ReluFn {  // NaN stays NaN: the comparison is false for it
  template <typename T>
  T operator()(T x) const { return x <= T(0) ? T(0) : x; }
};
struct SignFn {  // NaN gives 0, as PyTorch
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_same_v<T, bool>) return x;
    else return static_cast<T>(static_cast<int>(T(0) < x) - static_cast<int>(x < T(0)));
  }
};
struct LogicalNotFn {
  template <typename T>
  bool operator()(T x) const { return x == T(0); }
};
struct BitwiseNotFn {
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_same_v<T, bool>) return !x;
    else return static_cast<T>(~x);
  }
};

// round(x, decimals): scaled by a power of ten, rounded half to even, scaled back.
template <typename T>
struct RoundDecimalsFn {
  T scale;
  bool negative;
  T operator()(T x) const { return negative ? std::nearbyint(x / scale) * scale : std::nearbyint(x * scale) / scale; }
};

// std::sqrt sets errno, which keeps compilers from vectorising it: the
// contiguous float and double runs use the SIMD instruction directly
// (correctly rounded, like std::sqrt).
struct SqrtBulk {
  template <typename T>
  bool operator()(T* o, const T* x, int64_t n) const {
#if defined(__SSE2__)
    int64_t i = 0;
    if constexpr (std::is_same_v<T, float>) {
      for (; i + 4 <= n; i += 4) _mm_storeu_ps(o + i, _mm_sqrt_ps(_mm_loadu_ps(x + i)));
    } else if constexpr (std::is_same_v<T, double>) {
      for (; i + 2 <= n; i += 2) _mm_storeu_pd(o + i, _mm_sqrt_pd(_mm_loadu_pd(x + i)));
    } else {
      return false;
    }
    for (; i < n; ++i) o[i] = std::sqrt(x[i]);
    return true;
#else
    return false;
#endif
  }
};

// The contiguous float and double runs of the transcendental functions go
// through the vector math routines (Note [Vector math], ops/detail/VecMath.h);
// the scalar functor above stays the strided path and the fallback.
template <vec::UnaryFn kFn>
struct VecBulk {
  template <typename T>
  bool operator()(T* o, const T* x, int64_t n) const {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      return vec::apply(kFn, o, x, n);
    } else {
      return false;
    }
  }
};

// The vector routine of each scalar functor (NoBulk: none).
template <typename Fn> struct BulkOf { using type = cpu::NoBulk; };
template <> struct BulkOf<SqrtFn> { using type = SqrtBulk; };
#define SDK_VEC_BULK(Fn, id) \
  template <> struct BulkOf<Fn> { using type = VecBulk<vec::UnaryFn::id>; };
SDK_VEC_BULK(ExpFn, Exp)
SDK_VEC_BULK(LogFn, Log)
SDK_VEC_BULK(Log1pFn, Log1p)
SDK_VEC_BULK(Expm1Fn, Expm1)
SDK_VEC_BULK(SinFn, Sin)
SDK_VEC_BULK(CosFn, Cos)
SDK_VEC_BULK(TanFn, Tan)
SDK_VEC_BULK(TanhFn, Tanh)
SDK_VEC_BULK(ErfFn, Erf)
SDK_VEC_BULK(SigmoidFn, Sigmoid)
SDK_VEC_BULK(SiluFn, Silu)
SDK_VEC_BULK(GeluErfFn, GeluErf)
SDK_VEC_BULK(GeluTanhFn, GeluTanh)
#undef SDK_VEC_BULK

// ---------------------------------------------------------------------------
// Build (shared by CPU and Meta) and the kernels of each variant
// ---------------------------------------------------------------------------

// The kernel name PyTorch's dtype-dispatch errors mention ("abs_cpu").
struct Info {
  const char* name;  // "exp": variants are "exp", "exp_", "exp.out"
  Kind kind;
  const char* kernel;
};

void check_dtype(const TensorIterator& iter, const Info& info) {
  const ScalarType t = iter.common_dtype();
  switch (info.kind) {
    case Kind::FloatingOnly:
      if (!is_floating_type(t)) report_not_implemented_for(iter, info.kernel, t);
      break;
    case Kind::Numeric:
    case Kind::Rounding:
      if (t != ScalarType::Bool) break;
      if (std::string_view(info.name) == "neg") {
        SDK_THROW(Type, iter.op_name(),
                  ": Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a "
                  "mask, use the `~` or `logical_not()` operator instead.");
      }
      if (std::string_view(info.name) == "relu") SDK_THROW(Type, iter.op_name(), ": Boolean inputs not supported for relu");
      report_not_implemented_for(iter, info.kernel, t);
    case Kind::Integral:
      if (!is_integral_type(t, /*include_bool=*/true)) report_not_implemented_for(iter, info.kernel, t);
      break;
    default:
      break;
  }
}

void build_unary(TensorIterator& iter, const Info& info, Variant v, const Tensor& self, const Tensor& out) {
  add_variant_output(iter, v, self, out);
  iter.add_input(self);
  if (info.kind == Kind::Floating) iter.promote_integer_inputs_to_float(true);
  if (info.kind == Kind::AnyToBool) iter.allocate_outputs_as(ScalarType::Bool);
  iter.build();
  check_dtype(iter, info);
}

template <typename Fn>
void floating_loop(const TensorIterator& iter, const Info& info) {
  cpu::dispatch_floating(iter, info.kernel, [&](auto tag) {
    using T = typename decltype(tag)::type;
    cpu::unary_loop<T, T>(iter, Fn{}, typename BulkOf<Fn>::type{});
  });
}

template <typename Fn>
void same_type_loop(const TensorIterator& iter, const Info& info) {
  cpu::dispatch_math_type(iter.common_dtype(), iter.op_name(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    cpu::unary_loop<T, T>(iter, Fn{});
  });
}

// Floating dtypes compute Fn; integral ones are copied unchanged (floor of an int).
template <typename Fn>
void rounding_loop(const TensorIterator& iter, const Info& info) {
  if (is_floating_type(iter.common_dtype())) return floating_loop<Fn>(iter, info);
  same_type_loop<IdentityFn>(iter, info);
}

void logical_not_loop(const TensorIterator& iter, const Info& info) {
  cpu::dispatch_math_type(iter.common_dtype(), iter.op_name(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    cpu::unary_loop<T, bool>(iter, LogicalNotFn{});
  });
}

void bitwise_not_loop(const TensorIterator& iter, const Info& info) {
  cpu::dispatch_integral(iter, info.kernel, [&](auto tag) {
    using T = typename decltype(tag)::type;
    cpu::unary_loop<T, T>(iter, BitwiseNotFn{});
  });
}

using Loop = void (*)(const TensorIterator&, const Info&);

template <bool kCpu>
Tensor run_unary(const char* op, const Info& info, Loop loop, Variant v, const Tensor& self, const Tensor& out) {
  TensorIterator iter(op);
  build_unary(iter, info, v, self, out);
  if constexpr (kCpu) loop(iter, info);
  return variant_result(iter, v, self, out);
}

// The three variants of one operator: name, name_, name.out.
#define SDK_UNARY_OP(id, str, kind, kernel_name, loop)                                             \
  constexpr Info id##_info{str, kind, kernel_name};                                               \
  template <bool kCpu>                                                                             \
  Tensor id##_fn(const Tensor& self) {                                                             \
    return run_unary<kCpu>(str, id##_info, loop, Variant::Functional, self, Tensor());             \
  }                                                                                                \
  template <bool kCpu>                                                                             \
  Tensor id##_inplace(const Tensor& self) {                                                        \
    return run_unary<kCpu>(str "_", id##_info, loop, Variant::InPlace, self, Tensor());            \
  }                                                                                                \
  template <bool kCpu>                                                                             \
  Tensor id##_out(const Tensor& self, const Tensor& out) {                                         \
    return run_unary<kCpu>(str ".out", id##_info, loop, Variant::Out, self, out);                  \
  }

#define SDK_FLOATING_OP(id, Fn) SDK_UNARY_OP(id, #id, Kind::Floating, #id "_cpu", &floating_loop<Fn>)
SDK_FLOATING_OP(exp, ExpFn)
SDK_FLOATING_OP(log, LogFn)
SDK_FLOATING_OP(log1p, Log1pFn)
SDK_FLOATING_OP(expm1, Expm1Fn)
SDK_FLOATING_OP(sqrt, SqrtFn)
SDK_FLOATING_OP(rsqrt, RsqrtFn)
SDK_FLOATING_OP(sin, SinFn)
SDK_FLOATING_OP(cos, CosFn)
SDK_FLOATING_OP(tan, TanFn)
SDK_FLOATING_OP(tanh, TanhFn)
SDK_FLOATING_OP(sigmoid, SigmoidFn)
SDK_FLOATING_OP(erf, ErfFn)
SDK_FLOATING_OP(reciprocal, ReciprocalFn)
#undef SDK_FLOATING_OP
SDK_UNARY_OP(silu, "silu", Kind::FloatingOnly, "silu_cpu", &floating_loop<SiluFn>)
SDK_UNARY_OP(neg, "neg", Kind::Numeric, "neg_cpu", &same_type_loop<NegFn>)
SDK_UNARY_OP(abs, "abs", Kind::Numeric, "abs_cpu", &same_type_loop<AbsFn>)
SDK_UNARY_OP(relu, "relu", Kind::Numeric, "relu_cpu", &same_type_loop<ReluFn>)
SDK_UNARY_OP(floor, "floor", Kind::Rounding, "floor_vml_cpu", &rounding_loop<FloorFn>)
SDK_UNARY_OP(ceil, "ceil", Kind::Rounding, "ceil_vml_cpu", &rounding_loop<CeilFn>)
SDK_UNARY_OP(trunc, "trunc", Kind::Rounding, "trunc_vml_cpu", &rounding_loop<TruncFn>)
SDK_UNARY_OP(round, "round", Kind::Rounding, "round_vml_cpu", &rounding_loop<RoundFn>)
SDK_UNARY_OP(sign, "sign", Kind::Any, "sign_cpu", &same_type_loop<SignFn>)
SDK_UNARY_OP(logical_not, "logical_not", Kind::AnyToBool, "logical_not_cpu", &logical_not_loop)
SDK_UNARY_OP(bitwise_not, "bitwise_not", Kind::Integral, "bitwise_not_cpu", &bitwise_not_loop)

// ---- gelu(approximate) ----
constexpr Info gelu_info{"gelu", Kind::FloatingOnly, "GeluKernelImpl"};

bool gelu_uses_tanh(const char* op, std::string_view approximate) {
  SDK_CHECK_KIND(::sdk::ErrorKind::Value, approximate == "none" || approximate == "tanh", op,
                 ": approximate argument must be either none or tanh.");
  return approximate == "tanh";
}

template <bool kCpu>
Tensor run_gelu(const char* op, Variant v, const Tensor& self, std::string_view approximate, const Tensor& out) {
  const bool use_tanh = gelu_uses_tanh(op, approximate);
  TensorIterator iter(op);
  build_unary(iter, gelu_info, v, self, out);
  if constexpr (kCpu) use_tanh ? floating_loop<GeluTanhFn>(iter, gelu_info) : floating_loop<GeluErfFn>(iter, gelu_info);
  return variant_result(iter, v, self, out);
}
template <bool kCpu>
Tensor gelu_fn(const Tensor& self, std::string_view approximate) {
  return run_gelu<kCpu>("gelu", Variant::Functional, self, approximate, Tensor());
}
template <bool kCpu>
Tensor gelu_inplace(const Tensor& self, std::string_view approximate) {
  return run_gelu<kCpu>("gelu_", Variant::InPlace, self, approximate, Tensor());
}
template <bool kCpu>
Tensor gelu_out(const Tensor& self, std::string_view approximate, const Tensor& out) {
  return run_gelu<kCpu>("gelu.out", Variant::Out, self, approximate, out);
}

// ---- round(decimals) ----
constexpr Info round_decimals_info{"round", Kind::FloatingOnly, "round_cpu"};

template <bool kCpu>
Tensor run_round_decimals(const char* op, Variant v, const Tensor& self, int64_t decimals, const Tensor& out) {
  TensorIterator iter(op);
  build_unary(iter, round_decimals_info, v, self, out);
  if constexpr (kCpu) {
    cpu::dispatch_floating(iter, "round_cpu", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const bool negative = decimals < 0;
      const T scale = static_cast<T>(std::pow(10.0, static_cast<double>(negative ? -decimals : decimals)));
      cpu::unary_loop<T, T>(iter, RoundDecimalsFn<T>{scale, negative});
    });
  }
  return variant_result(iter, v, self, out);
}
template <bool kCpu>
Tensor round_decimals_fn(const Tensor& self, int64_t decimals) {
  return run_round_decimals<kCpu>("round.decimals", Variant::Functional, self, decimals, Tensor());
}
template <bool kCpu>
Tensor round_decimals_inplace(const Tensor& self, int64_t decimals) {
  return run_round_decimals<kCpu>("round_.decimals", Variant::InPlace, self, decimals, Tensor());
}
template <bool kCpu>
Tensor round_decimals_out(const Tensor& self, int64_t decimals, const Tensor& out) {
  return run_round_decimals<kCpu>("round.decimals_out", Variant::Out, self, decimals, out);
}

template <bool kCpu>
void register_unary(Library& m) {
#define SDK_IMPL_UNARY(id)                      \
  m.impl(#id, &id##_fn<kCpu>);                  \
  m.impl(#id "_", &id##_inplace<kCpu>);         \
  m.impl(#id ".out", &id##_out<kCpu>);
  SDK_IMPL_UNARY(exp)
  SDK_IMPL_UNARY(log)
  SDK_IMPL_UNARY(log1p)
  SDK_IMPL_UNARY(expm1)
  SDK_IMPL_UNARY(sqrt)
  SDK_IMPL_UNARY(rsqrt)
  SDK_IMPL_UNARY(sin)
  SDK_IMPL_UNARY(cos)
  SDK_IMPL_UNARY(tan)
  SDK_IMPL_UNARY(tanh)
  SDK_IMPL_UNARY(sigmoid)
  SDK_IMPL_UNARY(erf)
  SDK_IMPL_UNARY(reciprocal)
  SDK_IMPL_UNARY(silu)
  SDK_IMPL_UNARY(neg)
  SDK_IMPL_UNARY(abs)
  SDK_IMPL_UNARY(floor)
  SDK_IMPL_UNARY(ceil)
  SDK_IMPL_UNARY(trunc)
  SDK_IMPL_UNARY(round)
  SDK_IMPL_UNARY(sign)
  SDK_IMPL_UNARY(logical_not)
  SDK_IMPL_UNARY(bitwise_not)
  SDK_IMPL_UNARY(gelu)
#undef SDK_IMPL_UNARY
  m.impl("relu", &relu_fn<kCpu>);  // relu has no out= variant
  m.impl("relu_", &relu_inplace<kCpu>);
  m.impl("round.decimals", &round_decimals_fn<kCpu>);
  m.impl("round_.decimals", &round_decimals_inplace<kCpu>);
  m.impl("round.decimals_out", &round_decimals_out<kCpu>);
}

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_IMPL(aten, CPU, m) { sdk::ops::register_unary<true>(m); }
SDK_LIBRARY_IMPL(aten, Meta, m) { sdk::ops::register_unary<false>(m); }
