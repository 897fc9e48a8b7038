// linspace and eye: CPU and Meta kernels (the Meta ones allocate only), out=
// variants, and BackendSelect kernels for the factories (Note [BackendSelect]).
#include <cmath>
#include <type_traits>

#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/detail/BackendSelect.h>
#include <backend_sdk/ops/Functions.h>
#include <backend_sdk/ops/Parallel.h>

namespace sdk::ops {
namespace {

using OptDtype = std::optional<ScalarType>;
using OptLayout = std::optional<int64_t>;
using OptDevice = std::optional<Device>;
using OptBool = std::optional<bool>;

void check_layout(OptLayout layout, const char* op) {
  SDK_CHECK_VALUE(!layout || *layout == 0, op, ": only the strided layout is supported, got layout ", *layout);
}

template <DeviceType kType>
Device target_device(OptDevice device) {
  if (kType == DeviceType::CPU || kType == DeviceType::Meta) return Device(kType);
  return Device(kType, device && device->type == kType ? device->index : -1);
}

template <typename T>
T from_double(double v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return T(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != 0.0;
  } else {
    return static_cast<T>(v);
  }
}

// ---- linspace ----
// Values computed in double from both ends (start + i * step in the first
// half, end - (steps - 1 - i) * step in the second), so the last value is
// exactly `end`, as PyTorch's kernel does.
void linspace_fill(const Tensor& out, double start, double end, int64_t steps) {
  if (steps == 0) return;
  if (steps == 1) {
    fill_(out, Scalar(start));  // PyTorch: a single step is `start`
    return;
  }
  Tensor buf = out.is_contiguous() ? out : make_tensor(out.sizes(), out.dtype(), out.device());
  double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0;
  int64_t half = steps / 2;
  SDK_DISPATCH_ALL_TYPES(out.dtype(), "linspace", [&] {
    auto* p = buf.data_ptr<scalar_t>();
    parallel_for(0, steps, kParallelGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        double v = i < half ? start + step * static_cast<double>(i)
                            : end - step * static_cast<double>(steps - 1 - i);
        p[i] = from_double<scalar_t>(v);
      }
    });
  });
  if (!buf.is_same(out)) copy_(out, buf);
}

void check_steps(int64_t steps) { SDK_CHECK_VALUE(steps >= 0, "linspace: number of steps must be non-negative"); }

template <DeviceType kType>
Tensor linspace_kernel(const Scalar& start, const Scalar& end, int64_t steps, OptDtype dtype, OptLayout layout,
                       OptDevice device, OptBool pin_memory) {
  check_steps(steps);
  check_layout(layout, "linspace");
  Tensor out = make_tensor({steps}, dtype.value_or(default_dtype()), target_device<kType>(device));
  if (kType == DeviceType::CPU) linspace_fill(out, start.to_double(), end.to_double(), steps);
  return out;
}

Tensor linspace_out(const Scalar& start, const Scalar& end, int64_t steps, const Tensor& out) {
  check_steps(steps);
  if (!out.sizes().equals(IntArrayRef({steps}))) resize_(out, {steps});
  if (out.is_cpu()) {
    linspace_fill(out, start.to_double(), end.to_double(), steps);
    out.impl()->bump_version();
  }
  return out;
}

// ---- eye ----
void check_eye(int64_t n, int64_t m) {
  SDK_CHECK_VALUE(n >= 0, "eye: n must be greater or equal to 0, got ", n);
  SDK_CHECK_VALUE(m >= 0, "eye: m must be greater or equal to 0, got ", m);
}

void eye_fill(const Tensor& out, int64_t n, int64_t m) {
  fill_(out, Scalar(int64_t{0}));
  int64_t k = std::min(n, m);
  if (k == 0) return;
  SDK_DISPATCH_ALL_TYPES(out.dtype(), "eye", [&] {
    auto* p = out.data_ptr<scalar_t>();
    for (int64_t i = 0; i < k; ++i) p[i * out.stride(0) + i * out.stride(1)] = from_double<scalar_t>(1.0);
  });
}

template <DeviceType kType>
Tensor eye_m_kernel(int64_t n, int64_t m, OptDtype dtype, OptLayout layout, OptDevice device, OptBool pin_memory) {
  check_eye(n, m);
  check_layout(layout, "eye");
  Tensor out = make_tensor({n, m}, dtype.value_or(default_dtype()), target_device<kType>(device));
  if (kType == DeviceType::CPU) eye_fill(out, n, m);
  return out;
}
template <DeviceType kType>
Tensor eye_kernel(int64_t n, OptDtype dtype, OptLayout layout, OptDevice device, OptBool pin_memory) {
  return eye_m_kernel<kType>(n, n, dtype, layout, device, pin_memory);
}

Tensor eye_m_out(int64_t n, int64_t m, const Tensor& out) {
  check_eye(n, m);
  if (!out.sizes().equals(IntArrayRef({n, m}))) resize_(out, {n, m});
  if (out.is_cpu()) {
    eye_fill(out, n, m);
    out.impl()->bump_version();
  }
  return out;
}
Tensor eye_out(int64_t n, const Tensor& out) { return eye_m_out(n, n, out); }

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_FRAGMENT(aten, m) {
  m.def("linspace(Scalar start, Scalar end, int steps, *, ScalarType? dtype=None, Layout? layout=None, "
        "Device? device=None, bool? pin_memory=None) -> Tensor");
  m.def("linspace.out(Scalar start, Scalar end, int steps, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("eye(SymInt n, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
        "bool? pin_memory=None) -> Tensor");
  m.def("eye.m(SymInt n, SymInt m, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
        "bool? pin_memory=None) -> Tensor");
  m.def("eye.out(SymInt n, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("eye.m_out(SymInt n, SymInt m, *, Tensor(a!) out) -> Tensor(a!)");
}

#define SDK_RANGE_FACTORY_IMPLS(m, kType)                          \
  m.impl("linspace", &sdk::ops::linspace_kernel<kType>);            \
  m.impl("linspace.out", &sdk::ops::linspace_out);                  \
  m.impl("eye", &sdk::ops::eye_kernel<kType>);                      \
  m.impl("eye.m", &sdk::ops::eye_m_kernel<kType>);                  \
  m.impl("eye.out", &sdk::ops::eye_out);                            \
  m.impl("eye.m_out", &sdk::ops::eye_m_out)

SDK_LIBRARY_IMPL(aten, CPU, m) { SDK_RANGE_FACTORY_IMPLS(m, sdk::DeviceType::CPU); }
SDK_LIBRARY_IMPL(aten, Meta, m) { SDK_RANGE_FACTORY_IMPLS(m, sdk::DeviceType::Meta); }

SDK_LIBRARY_IMPL(aten, BackendSelect, m) {
  for (const char* name : {"linspace", "eye", "eye.m"}) {
    m.impl(name, sdk::CppFunction::make_from_boxed(&sdk::ops::backend_select_boxed));
  }
}
