// samples_cpp::muladd(Tensor x, Tensor y, Tensor z) -> Tensor: x * y + z, an
// operator defined in C++ with kernels for cpu, Meta and the accel backend
// (PrivateUse1), compiled against the installed SDK headers only.
//
// Build (what tests/test_samples_custom_ops.py does):
//   g++ -std=c++17 -O2 -shared -fPIC muladd.cpp -o libmuladd.so \
//       $(python -c "from backend_sdk.utils import include_paths as i; print(' '.join('-I'+p for p in i()))") \
//       -L<lib dir> -lbackend_sdk
// then ctypes.CDLL("libmuladd.so") registers it; backend_sdk.ops.samples_cpp.muladd is the operator.
#include <vector>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/Functions.h>

namespace {

void check_args(const sdk::Tensor& x, const sdk::Tensor& y, const sdk::Tensor& z) {
  SDK_CHECK_VALUE(x.sizes().equals(y.sizes()) && x.sizes().equals(z.sizes()),
                  "samples_cpp::muladd: x, y and z must have the same shape");
  SDK_CHECK_TYPE(x.dtype() == y.dtype() && x.dtype() == z.dtype(),
                 "samples_cpp::muladd: x, y and z must have the same dtype");
  SDK_CHECK_TYPE(x.dtype() == sdk::ScalarType::Float32 || x.dtype() == sdk::ScalarType::Float64,
                 "samples_cpp::muladd: expected float32 or float64 tensors");
  SDK_CHECK_VALUE(x.device() == y.device() && x.device() == z.device(),
                  "samples_cpp::muladd: x, y and z must be on the same device");
}

// The result is always contiguous, on every backend (the Meta kernel says so).
sdk::Tensor muladd_meta(const sdk::Tensor& x, const sdk::Tensor& y, const sdk::Tensor& z) {
  check_args(x, y, z);
  return sdk::ops::empty(x.sizes(), x.dtype(), x.device());
}

template <typename T>
void muladd_loop(const sdk::Tensor& x, const sdk::Tensor& y, const sdk::Tensor& z, const sdk::Tensor& out) {
  // A strided walk over any layout (non-contiguous inputs included).
  const int64_t ndim = x.dim();
  const int64_t n = x.numel();
  std::vector<int64_t> index(static_cast<size_t>(ndim), 0);
  const T* xp = static_cast<const T*>(x.data_ptr());
  const T* yp = static_cast<const T*>(y.data_ptr());
  const T* zp = static_cast<const T*>(z.data_ptr());
  T* op = static_cast<T*>(out.data_ptr());
  for (int64_t i = 0; i < n; ++i) {
    int64_t xo = 0, yo = 0, zo = 0;
    for (int64_t d = 0; d < ndim; ++d) {
      xo += index[d] * x.stride(d);
      yo += index[d] * y.stride(d);
      zo += index[d] * z.stride(d);
    }
    op[i] = xp[xo] * yp[yo] + zp[zo];
    for (int64_t d = ndim - 1; d >= 0; --d) {
      if (++index[d] < x.size(d)) break;
      index[d] = 0;
    }
  }
}

sdk::Tensor muladd_cpu(const sdk::Tensor& x, const sdk::Tensor& y, const sdk::Tensor& z) {
  sdk::Tensor out = muladd_meta(x, y, z);
  if (x.dtype() == sdk::ScalarType::Float32) muladd_loop<float>(x, y, z, out);
  else muladd_loop<double>(x, y, z, out);
  return out;
}

// On accel the kernel is composed of the backend's device operators: the
// product runs on the device, the sum is written into a fresh contiguous result.
sdk::Tensor muladd_accel(const sdk::Tensor& x, const sdk::Tensor& y, const sdk::Tensor& z) {
  sdk::Tensor out = muladd_meta(x, y, z);
  sdk::ops::add_out(out, sdk::ops::mul(x, y), z);
  return out;
}

}  // namespace

SDK_LIBRARY(samples_cpp, m) { m.def("muladd(Tensor x, Tensor y, Tensor z) -> Tensor"); }
SDK_LIBRARY_IMPL(samples_cpp, CPU, m) { m.impl("muladd", &muladd_cpu); }
SDK_LIBRARY_IMPL(samples_cpp, Meta, m) { m.impl("muladd", &muladd_meta); }
SDK_LIBRARY_IMPL(samples_cpp, PrivateUse1, m) { m.impl("muladd", &muladd_accel); }
