// log2, log10, erfinv and the inverse/hyperbolic trigonometric functions
// (acos, asin, atan, acosh, asinh, atanh, sinh, cosh; issue 20's core-tagged
// operators), functional, in-place, out=: CPU and Meta kernels
// over the element-wise machinery (Note [Element-wise kernels]). Integral and
// bool inputs promote to the default floating dtype, as PyTorch's.
// Derivatives (PyTorch's derivatives.yaml; the autograd table needs them):
//   log2:   grad / (self * ln 2)
//   log10:  grad / (self * ln 10)
//   erfinv: grad * 0.5 * sqrt(pi) * exp(erfinv(self)^2)
// The trigonometric ones are in the C++ formula table (autograd/derivatives.def).
#include <cmath>
#include <limits>

#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/detail/ElementwiseLoops.h>

namespace sdk::ops {
namespace {

// Note [erfinv]
// ~~~~~~~~~~~~~
// A rational first guess (Giles, "Approximating the erfinv function", 2010,
// single-precision branch) refined by two Newton steps on erf(y) - x in
// double: each step doubles the correct digits, so the double result is within
// a few ulp and the float one correctly rounded in practice. erfinv(+-1) is
// +-inf, |x| > 1 and NaN give NaN.
double erfinv_double(double x) {
  if (std::isnan(x) || x < -1.0 || x > 1.0) return std::numeric_limits<double>::quiet_NaN();
  if (x == 1.0) return std::numeric_limits<double>::infinity();
  if (x == -1.0) return -std::numeric_limits<double>::infinity();
  double w = -std::log((1.0 - x) * (1.0 + x));
  double p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  double y = p * x;
  constexpr double kTwoOverSqrtPi = 1.1283791670955126;
  for (int i = 0; i < 2; ++i) {
    const double err = std::erf(y) - x;
    y -= err / (kTwoOverSqrtPi * std::exp(-y * y));
  }
  return y;
}

struct Log2Fn {
  template <typename T>
  T operator()(T x) const { return std::log2(x); }
};
struct Log10Fn {
  template <typename T>
  T operator()(T x) const { return std::log10(x); }
};
#define SDK_STD_UNARY_FN(Name, fn)                      \
  struct Name {                                         \
    template <typename T>                               \
    T operator()(T x) const { return std::fn(x); }      \
  };
SDK_STD_UNARY_FN(AcosFn, acos)
SDK_STD_UNARY_FN(AsinFn, asin)
SDK_STD_UNARY_FN(AtanFn, atan)
SDK_STD_UNARY_FN(AcoshFn, acosh)
SDK_STD_UNARY_FN(AsinhFn, asinh)
SDK_STD_UNARY_FN(AtanhFn, atanh)
SDK_STD_UNARY_FN(SinhFn, sinh)
SDK_STD_UNARY_FN(CoshFn, cosh)
#undef SDK_STD_UNARY_FN
struct ErfinvFn {
  template <typename T>
  T operator()(T x) const { return static_cast<T>(erfinv_double(static_cast<double>(x))); }
};

template <typename Fn, bool kCpu>
Tensor run(const char* op, const char* kernel, Variant v, const Tensor& self, const Tensor& out) {
  TensorIterator iter(op);
  add_variant_output(iter, v, self, out);
  iter.add_input(self);
  iter.promote_integer_inputs_to_float(true);
  iter.build();
  if constexpr (kCpu) {
    cpu::dispatch_floating(iter, kernel, [&](auto tag) {
      using T = typename decltype(tag)::type;
      cpu::unary_loop<T, T>(iter, Fn{});
    });
  }
  return variant_result(iter, v, self, out);
}

#define SDK_EXTRA_UNARY(id, Fn)                                                          \
  template <bool kCpu>                                                                   \
  Tensor id##_fn(const Tensor& self) {                                                   \
    return run<Fn, kCpu>(#id, #id "_cpu", Variant::Functional, self, Tensor());          \
  }                                                                                      \
  template <bool kCpu>                                                                   \
  Tensor id##_inplace(const Tensor& self) {                                              \
    return run<Fn, kCpu>(#id "_", #id "_cpu", Variant::InPlace, self, Tensor());         \
  }                                                                                      \
  template <bool kCpu>                                                                   \
  Tensor id##_out(const Tensor& self, const Tensor& out) {                               \
    return run<Fn, kCpu>(#id ".out", #id "_cpu", Variant::Out, self, out);               \
  }
SDK_EXTRA_UNARY(log2, Log2Fn)
SDK_EXTRA_UNARY(log10, Log10Fn)
SDK_EXTRA_UNARY(erfinv, ErfinvFn)
SDK_EXTRA_UNARY(acos, AcosFn)
SDK_EXTRA_UNARY(asin, AsinFn)
SDK_EXTRA_UNARY(atan, AtanFn)
SDK_EXTRA_UNARY(acosh, AcoshFn)
SDK_EXTRA_UNARY(asinh, AsinhFn)
SDK_EXTRA_UNARY(atanh, AtanhFn)
SDK_EXTRA_UNARY(sinh, SinhFn)
SDK_EXTRA_UNARY(cosh, CoshFn)
#undef SDK_EXTRA_UNARY

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_FRAGMENT(aten, m) {
  m.def("log2(Tensor self) -> Tensor");
  m.def("log2_(Tensor(a!) self) -> Tensor(a!)");
  m.def("log2.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("log10(Tensor self) -> Tensor");
  m.def("log10_(Tensor(a!) self) -> Tensor(a!)");
  m.def("log10.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("erfinv(Tensor self) -> Tensor");
  m.def("erfinv_(Tensor(a!) self) -> Tensor(a!)");
  m.def("erfinv.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("acos(Tensor self) -> Tensor");
  m.def("acos_(Tensor(a!) self) -> Tensor(a!)");
  m.def("acos.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("asin(Tensor self) -> Tensor");
  m.def("asin_(Tensor(a!) self) -> Tensor(a!)");
  m.def("asin.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("atan(Tensor self) -> Tensor");
  m.def("atan_(Tensor(a!) self) -> Tensor(a!)");
  m.def("atan.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("acosh(Tensor self) -> Tensor");
  m.def("acosh_(Tensor(a!) self) -> Tensor(a!)");
  m.def("acosh.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("asinh(Tensor self) -> Tensor");
  m.def("asinh_(Tensor(a!) self) -> Tensor(a!)");
  m.def("asinh.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("atanh(Tensor self) -> Tensor");
  m.def("atanh_(Tensor(a!) self) -> Tensor(a!)");
  m.def("atanh.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("sinh(Tensor self) -> Tensor");
  m.def("sinh_(Tensor(a!) self) -> Tensor(a!)");
  m.def("sinh.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("cosh(Tensor self) -> Tensor");
  m.def("cosh_(Tensor(a!) self) -> Tensor(a!)");
  m.def("cosh.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
}

#define SDK_EXTRA_IMPLS(m, cpu)                                   \
  m.impl("log2", &sdk::ops::log2_fn<cpu>);                        \
  m.impl("log2_", &sdk::ops::log2_inplace<cpu>);                  \
  m.impl("log2.out", &sdk::ops::log2_out<cpu>);                   \
  m.impl("log10", &sdk::ops::log10_fn<cpu>);                      \
  m.impl("log10_", &sdk::ops::log10_inplace<cpu>);                \
  m.impl("log10.out", &sdk::ops::log10_out<cpu>);                 \
  m.impl("erfinv", &sdk::ops::erfinv_fn<cpu>);                    \
  m.impl("erfinv_", &sdk::ops::erfinv_inplace<cpu>);              \
  m.impl("erfinv.out", &sdk::ops::erfinv_out<cpu>);                \
  m.impl("acos", &sdk::ops::acos_fn<cpu>);                          \
  m.impl("acos_", &sdk::ops::acos_inplace<cpu>);                    \
  m.impl("acos.out", &sdk::ops::acos_out<cpu>);                     \
  m.impl("asin", &sdk::ops::asin_fn<cpu>);                          \
  m.impl("asin_", &sdk::ops::asin_inplace<cpu>);                    \
  m.impl("asin.out", &sdk::ops::asin_out<cpu>);                     \
  m.impl("atan", &sdk::ops::atan_fn<cpu>);                          \
  m.impl("atan_", &sdk::ops::atan_inplace<cpu>);                    \
  m.impl("atan.out", &sdk::ops::atan_out<cpu>);                     \
  m.impl("acosh", &sdk::ops::acosh_fn<cpu>);                          \
  m.impl("acosh_", &sdk::ops::acosh_inplace<cpu>);                    \
  m.impl("acosh.out", &sdk::ops::acosh_out<cpu>);                     \
  m.impl("asinh", &sdk::ops::asinh_fn<cpu>);                          \
  m.impl("asinh_", &sdk::ops::asinh_inplace<cpu>);                    \
  m.impl("asinh.out", &sdk::ops::asinh_out<cpu>);                     \
  m.impl("atanh", &sdk::ops::atanh_fn<cpu>);                          \
  m.impl("atanh_", &sdk::ops::atanh_inplace<cpu>);                    \
  m.impl("atanh.out", &sdk::ops::atanh_out<cpu>);                     \
  m.impl("sinh", &sdk::ops::sinh_fn<cpu>);                          \
  m.impl("sinh_", &sdk::ops::sinh_inplace<cpu>);                    \
  m.impl("sinh.out", &sdk::ops::sinh_out<cpu>);                     \
  m.impl("cosh", &sdk::ops::cosh_fn<cpu>);                          \
  m.impl("cosh_", &sdk::ops::cosh_inplace<cpu>);                    \
  m.impl("cosh.out", &sdk::ops::cosh_out<cpu>)

SDK_LIBRARY_IMPL(aten, CPU, m) { SDK_EXTRA_IMPLS(m, true); }
SDK_LIBRARY_IMPL(aten, Meta, m) { SDK_EXTRA_IMPLS(m, false); }
