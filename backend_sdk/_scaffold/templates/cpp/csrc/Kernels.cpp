// The __NAME__ kernels: what is registered under PrivateUse1 (renamed to "__NAME__").
//
// - Allocation, transfers, resize_ and item() are the SDK's contract-backed kernels
//   (ops/DeviceOps.h): they need only the device contract (Device.cpp), plus a copy within the
//   device (local_copy below).
// - add, mul, relu and sum run on the device where it computes them natively (here: contiguous
//   float32 tensors of one shape); every other case, and every other operator, goes to the SDK's
//   CPU fallback (copies to the host, the CPU kernel, copies back; it warns once per operator and
//   reason: "__NAME__'s kernel for aten::add.Tensor declined this call (dtype int64); running on the CPU").
//   Add an operator by writing a typed kernel like these and one m.impl line: for an elementwise
//   one, its arithmetic in unary_f32/binary_f32 (README.md, "Add a kernel"). Kernels may call any
//   aten operator through the generated C++ API (sdk::ops::..., <backend_sdk/ops/Operators.h>)
//   and the Tensor methods (x.contiguous(), x.to(dtype), x.view(...), ...).
// Kernels are launched on the current stream and return at once, like CUDA kernels; until the
// hardware exists they run on the simulator, which runs them on its worker threads and reaches
// device memory through device_sim_translate. "REAL DRIVER CALL GOES HERE" marks what to replace.
#include <functional>
#include <optional>
#include <vector>

#include "device_sim.h"
#include <backend_sdk/dispatch/Decline.h>
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

// Hands the call to the CPU fallback unless the device computes it natively (Note [Declining kernels] in
// the SDK's dispatch/Decline.h): nothing has been written yet, the fallback gets the same arguments.
void require_native(const Tensor& t, const Tensor& like) {
  SDK_DECLINE_IF(t.dtype() != sdk::ScalarType::Float32, "dtype ", sdk::scalar_type_name(t.dtype()));
  SDK_DECLINE_IF(!t.is_contiguous(), "non-contiguous input");
  SDK_DECLINE_IF(t.device() != like.device() || !t.sizes().equals(like.sizes()), "broadcast or mixed devices");
}

// Elementwise float32 kernels on the device, out[i] = fn(x[i]) or fn(x[i], y[i]): the glue every such
// kernel shares (checks, allocation, launch on the current stream), so a kernel is its arithmetic.
template <typename Fn>
Tensor unary_f32(const Tensor& self, const char* name, Fn fn) {
  require_native(self, self);
  Tensor out = sdk::ops::empty(self.sizes(), self.dtype(), self.device());
  if (const int64_t n = self.numel()) {
    float *x = device_floats(self), *z = device_floats(out);
    launch(self.device(), name, [=] { for (int64_t i = 0; i < n; ++i) z[i] = fn(x[i]); });
  }
  return out;
}
template <typename Fn>
Tensor binary_f32(const Tensor& a, const Tensor& b, const char* name, Fn fn) {
  require_native(a, a);
  require_native(b, a);
  Tensor out = sdk::ops::empty(a.sizes(), a.dtype(), a.device());
  if (const int64_t n = a.numel()) {
    float *x = device_floats(a), *y = device_floats(b), *z = device_floats(out);
    launch(a.device(), name, [=] { for (int64_t i = 0; i < n; ++i) z[i] = fn(x[i], y[i]); });
  }
  return out;
}

// Typed kernels: the schema's arguments as C++ parameters (Note [Kernel argument types]).
// add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
Tensor add(const Tensor& self, const Tensor& other, const sdk::Scalar& alpha) {
  return binary_f32(self, other, "add_f32", [al = alpha.to<float>()](float x, float y) { return x + al * y; });
}
// mul.Tensor(Tensor self, Tensor other) -> Tensor
Tensor mul(const Tensor& self, const Tensor& other) {
  return binary_f32(self, other, "mul_f32", [](float x, float y) { return x * y; });
}
// relu(Tensor self) -> Tensor
Tensor relu(const Tensor& self) { return unary_f32(self, "relu_f32", [](float x) { return x > 0 ? x : 0.0f; }); }

// sum(Tensor self, *, ScalarType? dtype=None) -> Tensor
Tensor sum(const Tensor& self, std::optional<sdk::ScalarType> dtype) {
  require_native(self, self);
  SDK_DECLINE_IF(dtype.has_value(), "dtype= given");
  Tensor out = sdk::ops::empty(std::vector<int64_t>{}, self.dtype(), self.device());
  const int64_t numel = self.numel();
  float *x = numel ? device_floats(self) : nullptr, *z = device_floats(out);
  launch(self.device(), "sum_f32", [=] {
    double total = 0;
    for (int64_t i = 0; i < numel; ++i) total += x[i];
    *z = static_cast<float>(total);
  });
  return out;
}

}  // namespace

SDK_LIBRARY_IMPL(aten, PrivateUse1, m) {
  sdk::ops::device::register_contract_kernels(m, &local_copy);  // empty, copy_, resize_, item
  // A kernel that may decline (sdk::decline / SDK_DECLINE_IF) is registered through sdk::declinable.
  m.impl("add.Tensor", sdk::declinable(&add));
  m.impl("mul.Tensor", sdk::declinable(&mul));
  m.impl("relu", sdk::declinable(&relu));
  m.impl("sum", sdk::declinable(&sum));
}

SDK_LIBRARY_IMPL(_, PrivateUse1, m) { m.fallback(sdk::ops::cpu_fallback_function()); }
