// The __NAME__ kernels: what is registered under PrivateUse1 (renamed to "__NAME__").
//
// - Allocation, transfers, resize_ and item() are the SDK's contract-backed kernels
//   (ops/DeviceOps.h): they need only the device contract (Device.cpp), plus a copy within the
//   device (device_sim::local_copy on the simulator).
// - add, mul, relu and sum run on the device where it computes them natively (here: contiguous
//   float32 tensors of one shape); every other case, and every other operator, goes to the SDK's
//   CPU fallback (copies to the host, the CPU kernel, copies back; it warns once per operator and
//   reason: "__NAME__'s kernel for aten::add.Tensor declined this call (dtype int64); running on the CPU").
//   Add an operator by writing a typed kernel like these and one m.impl line: an elementwise one
//   is its arithmetic given to device_sim::elementwise (README.md, "Add a kernel"). Kernels may call
//   any aten operator through the generated C++ API (sdk::ops::..., <backend_sdk/ops/Operators.h>)
//   and the Tensor methods (x.contiguous(), x.to(dtype), x.view(...), ...).
// Kernels are launched on the current stream and return at once, like CUDA kernels; until the
// hardware exists they run on the simulator (device_sim.hpp: device_sim::launch runs a C++ callable
// on its worker threads, device_sim::host_data gives the host address of a device tensor's memory).
// <backend_sdk/extension.h> is the SDK's C++ API in one include.
// "REAL DRIVER CALL GOES HERE" marks what to replace.
#include "device_sim.hpp"
#include <backend_sdk/dispatch/Decline.h>
#include <backend_sdk/extension.h>

namespace {

using sdk::Tensor;

// Typed kernels: the schema's arguments as C++ parameters (Note [Kernel argument types]). An
// elementwise kernel is its arithmetic: device_sim::elementwise<float> declines what it does not
// serve (another dtype, strides, broadcasting), allocates the result and launches the loop.
// REAL DRIVER CALL GOES HERE: each device_sim::elementwise / device_sim::launch is a kernel launch.
// add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
Tensor add(const Tensor& self, const Tensor& other, const sdk::Scalar& alpha) {
  return device_sim::elementwise<float>("add_f32", [a = alpha.to<float>()](float x, float y) { return x + a * y; },
                                        self, other);
}
// mul.Tensor(Tensor self, Tensor other) -> Tensor
Tensor mul(const Tensor& self, const Tensor& other) {
  return device_sim::elementwise<float>("mul_f32", [](float x, float y) { return x * y; }, self, other);
}
// relu(Tensor self) -> Tensor
Tensor relu(const Tensor& self) {
  return device_sim::elementwise<float>("relu_f32", [](float x) { return x > 0 ? x : 0.0f; }, self);
}

// A kernel that is not elementwise: its checks, its result and its launch written out.
// sum(Tensor self, *, ScalarType? dtype=None) -> Tensor
Tensor sum(const Tensor& self, std::optional<sdk::ScalarType> dtype) {
  SDK_DECLINE_IF(dtype.has_value(), "dtype= given");
  device_sim::require_dense<float>(self, self);
  Tensor out = sdk::ops::empty({}, self.dtype(), self.device());
  const float* x = device_sim::host_data<float>(self);
  float* z = device_sim::host_data<float>(out);
  device_sim::launch(self.device(), "sum_f32", [x, z, n = self.numel()] {
    double total = 0;
    for (int64_t i = 0; i < n; ++i) total += x[i];
    *z = static_cast<float>(total);
  });
  return out;
}

}  // namespace

SDK_LIBRARY_IMPL(aten, PrivateUse1, m) {
  // empty, copy_, resize_, item; REAL DRIVER CALL GOES HERE: your device's strided copy in place of local_copy
  sdk::ops::device::register_contract_kernels(m, &device_sim::local_copy);
  // A kernel that may decline (sdk::decline / SDK_DECLINE_IF) is registered through sdk::declinable.
  m.impl("add.Tensor", sdk::declinable(&add));
  m.impl("mul.Tensor", sdk::declinable(&mul));
  m.impl("relu", sdk::declinable(&relu));
  m.impl("sum", sdk::declinable(&sum));
}

SDK_LIBRARY_IMPL(_, PrivateUse1, m) { m.fallback(sdk::ops::cpu_fallback_function()); }
