// A kernel library written only against the ABI-stable surface (<backend_sdk/stable/...>,
// <backend_sdk/headeronly/...>): it calls nothing of libbackend_sdk but the C shim, so the
// same binary keeps working when the SDK's C++ ABI changes (docs/architecture.md, "The
// ABI-stable surface"). tests/test_stable_abi.py builds it, checks its symbols, runs opcheck
// on it on cpu and accel, and runs it against an SDK built with a different TensorImpl.
#include <backend_sdk/stable/library.h>
#include <backend_sdk/stable/ops.h>

namespace {

using sdk::ScalarType;
using sdk::stable::Tensor;

void check_scaled_add_args(const Tensor& a, const Tensor& b) {
  SDK_CHECK_VALUE(a.sizes().equals(b.sizes()), "stable_ops::scaled_add: a and b must have the same sizes, got ",
                  a.sizes(), " and ", b.sizes());
  SDK_CHECK_TYPE(a.scalar_type() == b.scalar_type(), "stable_ops::scaled_add: a and b must have the same dtype, got ",
                 sdk::headeronly::scalar_type_name(a.scalar_type()), " and ",
                 sdk::headeronly::scalar_type_name(b.scalar_type()));
  SDK_CHECK_TYPE(sdk::is_floating_type(a.scalar_type()), "stable_ops::scaled_add: expected a floating-point dtype, got ",
                 sdk::headeronly::scalar_type_name(a.scalar_type()));
  SDK_CHECK_VALUE(a.device() == b.device(), "stable_ops::scaled_add: a and b must be on the same device");
}

template <typename T>
void scaled_add_loop(const Tensor& a, const Tensor& b, double alpha, const Tensor& out) {
  const T* pa = a.data_ptr<T>();
  const T* pb = b.data_ptr<T>();
  T* po = out.data_ptr<T>();
  const int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i) {
    po[i] = static_cast<T>(static_cast<double>(pa[i]) + alpha * static_cast<double>(pb[i]));
  }
}

// cpu: a plain loop over the tensors' memory (data_ptr is host memory on cpu).
Tensor scaled_add_cpu(Tensor a, Tensor b, double alpha) {
  check_scaled_add_args(a, b);
  Tensor ac = sdk::stable::contiguous(a);
  Tensor bc = sdk::stable::contiguous(b);
  Tensor out = sdk::stable::empty_like(ac);
  switch (a.scalar_type()) {
    case ScalarType::Float32: scaled_add_loop<float>(ac, bc, alpha, out); break;
    case ScalarType::Float64: scaled_add_loop<double>(ac, bc, alpha, out); break;
    case ScalarType::Float16: scaled_add_loop<sdk::Half>(ac, bc, alpha, out); break;
    case ScalarType::BFloat16: scaled_add_loop<sdk::BFloat16>(ac, bc, alpha, out); break;
    default: break;  // checked above
  }
  return out;
}

// Any other device (accel): device memory is not host memory, so compose SDK operators. The
// inputs are made contiguous so the result is contiguous whatever their strides, as the cpu and
// Meta kernels' results are (opcheck compares the strides).
Tensor scaled_add_device(Tensor a, Tensor b, double alpha) {
  check_scaled_add_args(a, b);
  return sdk::stable::add(sdk::stable::contiguous(a), sdk::stable::contiguous(b), alpha);
}

// Meta: the result's metadata only.
Tensor scaled_add_meta(Tensor a, Tensor b, double /*alpha*/) {
  check_scaled_add_args(a, b);
  return sdk::stable::empty_like(a);
}

// In place, through operators (every device): y += alpha * x.
Tensor axpy_(Tensor y, Tensor x, double alpha) {
  SDK_CHECK_VALUE(y.sizes().equals(x.sizes()), "stable_ops::axpy_: y and x must have the same sizes, got ", y.sizes(),
                  " and ", x.sizes());
  return sdk::stable::copy_(y, sdk::stable::add(y, x, alpha));
}

// A boxed kernel written against the C shim's stack directly: the number of elements plus k.
sdk_stable_status numel_plus_boxed(void*, sdk_stable_ivalue* stack, int64_t num_args, int64_t num_returns) {
  if (num_args != 2 || num_returns != 1) {
    sdk_stable_set_last_error_message("stable_ops::numel_plus: expected 2 arguments and 1 return");
    return SDK_STABLE_ERROR_RUNTIME;
  }
  int64_t numel = 0;
  sdk_stable_status st = sdk_stable_tensor_numel(reinterpret_cast<sdk_stable_tensor>(stack[0].payload), &numel);
  if (st != SDK_STABLE_OK) return st;
  int64_t k = static_cast<int64_t>(stack[1].payload);
  stack[0] = sdk_stable_ivalue{static_cast<uint64_t>(numel + k), SDK_STABLE_TAG_INT, 0};
  return SDK_STABLE_OK;
}

}  // namespace

STABLE_SDK_LIBRARY(stable_ops, m) {
  m.def("scaled_add(Tensor a, Tensor b, float alpha=1.0) -> Tensor");
  m.def("axpy_(Tensor(a!) y, Tensor x, float alpha) -> Tensor(a!)");
  m.def("numel_plus(Tensor x, int k) -> int");
}

STABLE_SDK_LIBRARY_IMPL(stable_ops, CPU, m) {
  m.impl("scaled_add", &scaled_add_cpu);
  m.impl("numel_plus", &numel_plus_boxed);
}

STABLE_SDK_LIBRARY_IMPL(stable_ops, PrivateUse1, m) {
  m.impl("scaled_add", &scaled_add_device);
  m.impl("numel_plus", &numel_plus_boxed);
}

STABLE_SDK_LIBRARY_IMPL(stable_ops, Meta, m) {
  m.impl("scaled_add", &scaled_add_meta);
}

STABLE_SDK_LIBRARY_IMPL(stable_ops, CompositeExplicitAutograd, m) {
  m.impl("axpy_", &axpy_);
}
