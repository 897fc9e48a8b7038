// log2, log10 and erfinv (functional, in-place, out=): CPU and Meta kernels
// over the element-wise machinery (Note [Element-wise kernels]). Integral and
// bool inputs promote to the default floating dtype, as PyTorch's.
// Derivatives (PyTorch's derivatives.yaml; the autograd table needs them):
//   log2:   grad / (self * ln 2)
//   log10:  grad / (self * ln 10)
//   erfinv: grad * 0.5 * sqrt(pi) * exp(erfinv(self)^2)
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
  m.impl("erfinv.out", &sdk::ops::erfinv_out<cpu>)

SDK_LIBRARY_IMPL(aten, CPU, m) { SDK_EXTRA_IMPLS(m, true); }
SDK_LIBRARY_IMPL(aten, Meta, m) { SDK_EXTRA_IMPLS(m, false); }
