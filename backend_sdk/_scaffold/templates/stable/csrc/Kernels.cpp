// The __NAME__ kernels, written only against backend_sdk's ABI-stable surface
// (<backend_sdk/stable/...>: a C shim and header-only C++ wrappers over it). The library calls
// nothing of libbackend_sdk's C++ API, so it does not need rebuilding when the SDK's C++ ABI
// changes (a new TensorImpl field, another standard library); the build checks it (STABLE in
// CMakeLists.txt).
//
// - Allocation, transfers, resize_ and item() are the SDK's contract-backed kernels
//   (m.impl_device_kernels): they need only the device contract (Device.cpp), plus a copy within
//   the device (local_copy below).
// - add, mul, relu and sum run on the device where it computes them natively (here: contiguous
//   float32 tensors of one shape); every other case computes on the CPU (run_on_cpu), and every
//   other operator goes to the SDK's CPU fallback (m.fallback_cpu()). Add an operator by writing
//   a kernel like these and one m.impl line.
// Kernels are launched on the current stream and return at once, like CUDA kernels; until the
// hardware exists they run on the simulator, which runs them on its worker threads (device_sim::launch,
// device_sim.hpp) and reaches device memory through device_sim_translate. "REAL DRIVER CALL GOES HERE"
// marks what to replace.
#include <string>
#include <vector>

#include "device_sim.hpp"
#include <backend_sdk/stable/accelerator.h>
#include <backend_sdk/stable/library.h>
#include <backend_sdk/stable/ops.h>

namespace {

using sdk::Device;
using sdk::ScalarType;
using sdk::stable::Tensor;

// Runs `job` on the current stream of `device`, asynchronously (Note [Simulated kernel launch],
// device_sim.hpp: on a worker thread of the simulator; an exception becomes the kernel's fault).
template <typename Job>
void launch(Device device, const char* name, Job job) {
  auto stream = static_cast<sdk_stream_t>(sdk::stable::current_native_stream(device));
  if (device_sim::launch(stream, name, std::move(job)) != SDK_SUCCESS)  // REAL DRIVER CALL GOES HERE
    SDK_THROW(Accelerator, "__NAME__: launching ", name, " failed: ", device_sim_last_error_message());
}

// The host address of a device tensor's first element (simulator only: real device memory is not
// host-addressable, the kernel gets the device pointer).
void* host_address(const Tensor& t) { return t.numel() == 0 ? nullptr : device_sim_translate(t.data_ptr()); }

// A CPU tensor over a device tensor's memory (simulator only), for the strided copy below.
Tensor host_alias(const Tensor& t) {
  return sdk::stable::from_blob(host_address(t), t.sizes(), t.strides(), t.scalar_type(), Device(sdk::DeviceType::CPU));
}

// A copy within one device, any strides and dtypes (what copy_ needs from the device). The
// device tensors are captured so their memory lives until the kernel has run.
void local_copy(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  launch(dst.device(), "copy_", [dst, src] { sdk::stable::copy_(host_alias(dst), host_alias(src)); });
}

bool is_native(const Tensor& t, const Tensor& like) {
  return t.scalar_type() == ScalarType::Float32 && t.is_contiguous() && t.device() == like.device() &&
         t.sizes().equals(like.sizes());
}

// A copy of `t` on `device` with the same strides where they are dense (aten::_to_copy keeps the
// memory format), so that a result of transposed inputs is transposed, as the CPU's and the Meta
// kernels' results are (opcheck compares them).
Tensor copy_to(const Tensor& t, Device device) {
  sdk::stable::StableIValue none = sdk::stable::from(std::optional<int64_t>());
  return sdk::stable::call_op("aten::_to_copy", "", {sdk::stable::from(t), none, none, sdk::stable::from(device)})
      .take<Tensor>(0);
}

Tensor to_device(const Tensor& cpu, Device device) { return copy_to(cpu, device); }

Tensor to_cpu(const Tensor& t) { return t.is_cpu() ? t : copy_to(t, Device(sdk::DeviceType::CPU)); }

// The cases the device does not compute natively: the same operator on CPU copies of the inputs,
// the result copied back (what the SDK's CPU fallback does for operators without a kernel).
template <typename Op>
Tensor run_on_cpu(Device device, Op op) {
  return to_device(op(), device);
}

std::string device_name(Device d) {
  return d.type == sdk::DeviceType::CPU ? std::string("cpu") : "__NAME__:" + std::to_string(d.index);
}

// Two tensors on different devices are an error (a 0-d CPU tensor is a scalar, accepted anywhere),
// with PyTorch's message.
void check_same_device(const Tensor& a, const Tensor& b) {
  auto is_scalar = [](const Tensor& t) { return t.is_cpu() && t.dim() == 0; };
  if (a.device() == b.device() || is_scalar(a) || is_scalar(b)) return;
  SDK_THROW(Value, "Expected all tensors to be on the same device, but found at least two devices, ",
            device_name(a.device()), " and ", device_name(b.device()), "!");
}

using BinaryFn = float (*)(float, float, float);

Tensor binary(const char* name, const Tensor& a, const Tensor& b, double alpha, BinaryFn fn,
              Tensor (*cpu)(const Tensor&, const Tensor&, double)) {
  check_same_device(a, b);
  Device device = a.is_cpu() ? b.device() : a.device();
  if (!is_native(a, b) || !is_native(b, a)) {
    return run_on_cpu(device, [&] { return cpu(to_cpu(a), to_cpu(b), alpha); });
  }
  Tensor out = sdk::stable::empty_like(a);
  const int64_t n = a.numel();
  if (n == 0) return out;
  auto* x = static_cast<const float*>(host_address(a));
  auto* y = static_cast<const float*>(host_address(b));
  auto* z = static_cast<float*>(host_address(out));
  const float k = static_cast<float>(alpha);
  launch(device, name, [=, keep = std::vector<Tensor>{a, b, out}] {
    for (int64_t i = 0; i < n; ++i) z[i] = fn(x[i], y[i], k);
  });
  return out;
}

// add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor. The Scalar arrives as a
// double; a whole number goes back to the CPU operator as an int, as integer tensors require.
Tensor add(Tensor self, Tensor other, double alpha) {
  return binary("add_f32", self, other, alpha, [](float x, float y, float k) { return x + k * y; },
                [](const Tensor& a, const Tensor& b, double k) {
                  auto whole = static_cast<int64_t>(k);
                  sdk::stable::StableIValue alpha_value =
                      static_cast<double>(whole) == k ? sdk::stable::from(whole) : sdk::stable::from(k);
                  return sdk::stable::call_op("aten::add", "Tensor", {sdk::stable::from(a), sdk::stable::from(b),
                                                                       alpha_value}).take<Tensor>(0);
                });
}

// mul.Tensor(Tensor self, Tensor other) -> Tensor
Tensor mul(Tensor self, Tensor other) {
  return binary("mul_f32", self, other, 1.0, [](float x, float y, float) { return x * y; },
                [](const Tensor& a, const Tensor& b, double) { return sdk::stable::mul(a, b); });
}

// relu(Tensor self) -> Tensor
Tensor relu(Tensor self) {
  if (!is_native(self, self)) {
    return run_on_cpu(self.device(), [&] {
      return sdk::stable::call_op("aten::relu", "", {sdk::stable::from(to_cpu(self))}).take<Tensor>(0);
    });
  }
  Tensor out = sdk::stable::empty_like(self);
  const int64_t n = self.numel();
  if (n == 0) return out;
  auto* x = static_cast<const float*>(host_address(self));
  auto* z = static_cast<float*>(host_address(out));
  launch(self.device(), "relu_f32", [=, keep = std::vector<Tensor>{self, out}] {
    for (int64_t i = 0; i < n; ++i) z[i] = x[i] > 0.0f ? x[i] : 0.0f;
  });
  return out;
}

// sum(Tensor self, *, ScalarType? dtype=None) -> Tensor
Tensor sum(Tensor self, std::optional<ScalarType> dtype) {
  if (!is_native(self, self) || (dtype && *dtype != ScalarType::Float32)) {
    return run_on_cpu(self.device(), [&] { return sdk::stable::sum(to_cpu(self), dtype); });
  }
  Tensor out = sdk::stable::empty({}, ScalarType::Float32, self.device());
  const int64_t n = self.numel();
  auto* x = static_cast<const float*>(n == 0 ? nullptr : host_address(self));
  auto* z = static_cast<float*>(host_address(out));
  launch(self.device(), "sum_f32", [=, keep = std::vector<Tensor>{self, out}] {
    double acc = 0.0;
    for (int64_t i = 0; i < n; ++i) acc += x[i];
    *z = static_cast<float>(acc);
  });
  return out;
}

}  // namespace

STABLE_SDK_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl_device_kernels(&local_copy);
  m.impl("add.Tensor", &add);
  m.impl("mul.Tensor", &mul);
  m.impl("relu", &relu);
  m.impl("sum", &sum);
}

// Every operator without a kernel above runs on the CPU (inputs copied there and results back).
STABLE_SDK_LIBRARY_IMPL(_, PrivateUse1, m) { m.fallback_cpu(); }
