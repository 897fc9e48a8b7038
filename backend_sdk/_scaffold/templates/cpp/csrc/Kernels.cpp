// The __NAME__ kernels: what is registered under PrivateUse1 (renamed to "__NAME__").
//
// - Allocation, transfers, resize_ and item() are the SDK's contract-backed kernels
//   (ops/DeviceOps.h): they need only the device contract (Device.cpp), plus a copy within the
//   device (local_copy below).
// - add, mul, relu and sum run on the device where it computes them natively (here: contiguous
//   float32 tensors of one shape); every other case, and every other operator, goes to the SDK's
//   CPU fallback (copies to the host, the CPU kernel, copies back; it warns once per operator).
//   Add an operator by writing a kernel like these and one m.impl line.
// Kernels are launched on the current stream and return at once, like CUDA kernels; until the
// hardware exists they run on the simulator, which runs them on its worker threads and reaches
// device memory through device_sim_translate. "REAL DRIVER CALL GOES HERE" marks what to replace.
#include <functional>
#include <vector>

#include "device_sim.h"
#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/DeviceOps.h>
#include <backend_sdk/ops/Functions.h>
#include <backend_sdk/runtime/DeviceRegistry.h>
#include <backend_sdk/runtime/Stream.h>

namespace {

using sdk::Tensor;

// Runs `job` on the current stream of `device`, asynchronously.
void launch(sdk::Device device, const char* name, std::function<void()> job) {
  auto* heap = new std::function<void()>(std::move(job));
  device_sim_kernel_fn run = [](void* args) {
    auto* fn = *static_cast<std::function<void()>**>(args);
    try {
      (*fn)();
    } catch (const std::exception& e) {
      device_sim_kernel_fail(e.what());  // surfaces at the next synchronising call
    }
    delete fn;
  };
  // REAL DRIVER CALL GOES HERE: launch the device kernel on this stream.
  sdk_status status = device_sim_launch_kernel_named(sdk::runtime::current_stream(device).native(), name, run,
                                                     &heap, sizeof(heap));
  if (status != SDK_SUCCESS) {
    delete heap;
    sdk::runtime::check_status(device.type, status, std::string("__NAME__: launching ") + name);
  }
}

// The host address of a device tensor's first element (simulator only: real device memory is not
// host-addressable, the kernel gets the device pointer).
float* device_floats(const Tensor& t) { return static_cast<float*>(device_sim_translate(t.data_ptr())); }

// A CPU tensor over a device tensor's memory (simulator only), for the strided copy below.
Tensor host_alias(const Tensor& t) {
  const sdk::StorageImpl& storage = *t.storage();
  void* data = storage.data() ? device_sim_translate(storage.data()) : nullptr;
  return sdk::from_blob(data, storage.nbytes(), t.sizes(), t.strides(), t.storage_offset(), t.dtype(),
                        sdk::Device(sdk::DeviceType::CPU));
}

// A copy within one device, any strides and dtypes (what copy_ needs from the device).
void local_copy(const Tensor& dst, const Tensor& src) {
  Tensor d = host_alias(dst), s = host_alias(src);
  launch(dst.device(), "copy_", [d, s] { sdk::ops::copy_(d, s); });
}

Tensor copy_(const Tensor& self, const Tensor& src, bool non_blocking) {
  return sdk::ops::device::copy_(self, src, non_blocking, &local_copy);
}

// True if the device computes an elementwise operator on these tensors natively.
bool native(const Tensor& t, const Tensor& like) {
  return t.device() == like.device() && t.dtype() == sdk::ScalarType::Float32 && t.is_contiguous() &&
         t.sizes().equals(like.sizes());
}

// Boxed kernels: the arguments are the last `n` values on the stack, the results replace them.
// A case the device does not handle natively goes to the CPU fallback with the stack as it is.
void add_or_mul(bool is_add, const sdk::OperatorHandle& op, sdk::DispatchKeySet keys, sdk::Stack* stack) {
  const size_t n = is_add ? 3 : 2, base = stack->size() - n;  // (self, other[, alpha])
  sdk::IValue* args = stack->data() + base;
  if (!args[1].is_tensor() || !native(args[0].to_tensor(), args[0].to_tensor()) ||
      !native(args[1].to_tensor(), args[0].to_tensor())) {
    return sdk::ops::cpu_fallback(op, keys, stack);
  }
  Tensor a = args[0].to_tensor(), b = args[1].to_tensor();
  const float alpha = is_add ? static_cast<float>(args[2].to_double()) : 1.0f;
  Tensor out = sdk::ops::empty(a.sizes(), a.dtype(), a.device());
  if (const int64_t numel = a.numel()) {
    float *x = device_floats(a), *y = device_floats(b), *z = device_floats(out);
    launch(a.device(), is_add ? "add_f32" : "mul_f32", [=] {
      for (int64_t i = 0; i < numel; ++i) z[i] = is_add ? x[i] + alpha * y[i] : x[i] * y[i];
    });
  }
  stack->resize(base);
  stack->emplace_back(out);
}

void add_kernel(sdk::OperatorKernel*, const sdk::OperatorHandle& op, sdk::DispatchKeySet keys, sdk::Stack* stack) {
  add_or_mul(true, op, keys, stack);  // add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1)
}

void mul_kernel(sdk::OperatorKernel*, const sdk::OperatorHandle& op, sdk::DispatchKeySet keys, sdk::Stack* stack) {
  add_or_mul(false, op, keys, stack);  // mul.Tensor(Tensor self, Tensor other)
}

void relu_kernel(sdk::OperatorKernel*, const sdk::OperatorHandle& op, sdk::DispatchKeySet keys, sdk::Stack* stack) {
  const Tensor self = stack->back().to_tensor();  // relu(Tensor self)
  if (!native(self, self)) return sdk::ops::cpu_fallback(op, keys, stack);
  Tensor out = sdk::ops::empty(self.sizes(), self.dtype(), self.device());
  if (const int64_t numel = self.numel()) {
    float *x = device_floats(self), *z = device_floats(out);
    launch(self.device(), "relu_f32", [=] {
      for (int64_t i = 0; i < numel; ++i) z[i] = x[i] > 0 ? x[i] : 0.0f;
    });
  }
  stack->back() = out;
}

void sum_kernel(sdk::OperatorKernel*, const sdk::OperatorHandle& op, sdk::DispatchKeySet keys, sdk::Stack* stack) {
  const size_t base = stack->size() - 2;  // sum(Tensor self, *, ScalarType? dtype=None)
  const Tensor self = (*stack)[base].to_tensor();
  if (!native(self, self) || !(*stack)[base + 1].is_none()) return sdk::ops::cpu_fallback(op, keys, stack);
  Tensor out = sdk::ops::empty(std::vector<int64_t>{}, self.dtype(), self.device());
  const int64_t numel = self.numel();
  float *x = numel ? device_floats(self) : nullptr, *z = device_floats(out);
  launch(self.device(), "sum_f32", [=] {
    double total = 0;
    for (int64_t i = 0; i < numel; ++i) total += x[i];
    *z = static_cast<float>(total);
  });
  stack->resize(base);
  stack->emplace_back(out);
}

}  // namespace

SDK_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", &sdk::ops::device::empty);
  m.impl("empty_strided", &sdk::ops::device::empty_strided);
  m.impl("resize_", &sdk::ops::device::resize_);
  m.impl("_local_scalar_dense", &sdk::ops::device::local_scalar_dense);
  m.impl("copy_", &copy_);
  m.impl("add.Tensor", sdk::CppFunction::make_from_boxed(&add_kernel));
  m.impl("mul.Tensor", sdk::CppFunction::make_from_boxed(&mul_kernel));
  m.impl("relu", sdk::CppFunction::make_from_boxed(&relu_kernel));
  m.impl("sum", sdk::CppFunction::make_from_boxed(&sum_kernel));
}

SDK_LIBRARY_IMPL(_, PrivateUse1, m) { m.fallback(sdk::ops::cpu_fallback_function()); }
