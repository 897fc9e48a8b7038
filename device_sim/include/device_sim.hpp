// device_sim.hpp: C++ helpers over the simulator's C API (device_sim.h) for a backend that runs on
// the simulated device until its hardware exists: the glue the C++ scaffold (python -m backend_sdk
// new NAME) and samples/accel_sim would otherwise each write. Header-only, so libdevice_sim stays a
// C library that links nothing of the SDK.
//
// Over the C API alone (any C++ backend, the ABI-stable flavour included):
//   device_sim::launch(stream, name, fn)      a C++ callable as a kernel (Note [Simulated kernel launch])
//   device_sim::contract()                    the simulator's contract table and context, to delegate to
//   device_sim::collectives()                 its "sdk.collectives" extension (simccl)
// With the SDK's C++ API (not on the include path of a STABLE library, which gets only the above):
//   device_sim::launch(device, name, fn)      the same on the device's current stream; a failure raises
//   device_sim::host_address / host_data<T> / host_alias   a device tensor's memory, as kernels reach it
//   device_sim::local_copy(dst, src)          a strided copy within the device (copy_'s LocalCopy hook)
//   device_sim::elementwise<T>(name, fn, a, b, ...)         a dense elementwise kernel that declines the
//                                             rest (Note [Simulated elementwise kernels])
// On real hardware each of these becomes a driver call: a kernel launch with device pointers.
#ifndef DEVICE_SIM_HPP_
#define DEVICE_SIM_HPP_

#include <cstring>
#include <exception>
#include <type_traits>
#include <utility>

#include "device_sim.h"
#include <backend_sdk/runtime/DeviceCollectivesExtension.h>

namespace device_sim {

namespace internal {
// The two functions device_sim_launch_kernel_reusable gets for a heap-held callable of type Job.
template <typename Job>
struct HeapKernel {
  static Job* job(void* args) {
    Job* j = nullptr;
    std::memcpy(&j, args, sizeof(j));
    return j;
  }
  static void run(void* args) {
    try {
      (*job(args))();
    } catch (const std::exception& e) {
      device_sim_kernel_fail(e.what());  // surfaces at the next synchronising call
    } catch (...) {
      device_sim_kernel_fail("a kernel threw a non-standard exception");
    }
  }
  static void release(void* args) { delete job(args); }
};
}  // namespace internal

// Note [Simulated kernel launch]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A simulated kernel is a host callable the simulator runs on the stream's worker thread, in order
// with the stream's other work, reaching device memory through host aliases (device_sim_translate).
// launch() moves the callable to the heap and launches it with device_sim_launch_kernel_reusable,
// returning at once like a CUDA launch: the callable may run more than once (each replay of a graph
// that captured it), an exception it throws becomes the kernel's fault (device_sim_kernel_fail: the
// next synchronising call on the device reports it), and the heap copy is freed exactly once, after
// the last run, or instead of a run when the kernel never runs (an injected fault, a lost device),
// so nothing leaks. The callable therefore holds copies of what it uses (host addresses, aliases,
// sizes), never device tensors, and leaves them intact between runs. `name` names the kernel in
// fault messages and traces. Returns the launch's status; on failure nothing was launched.
template <typename Fn>
sdk_status launch(sdk_stream_t stream, const char* name, Fn&& fn) {
  using Kernel = internal::HeapKernel<std::decay_t<Fn>>;
  auto* job = new std::decay_t<Fn>(std::forward<Fn>(fn));
  sdk_status status = device_sim_launch_kernel_reusable(stream, name, &Kernel::run, &Kernel::release, &job,
                                                        sizeof(job));
  if (status != SDK_SUCCESS) delete job;
  return status;
}

// The simulator's own contract table and context (what its sdk_device_entry returns), for a device
// library that delegates its slots to it: `contract().api->malloc(contract().context, ...)`. Found
// without dlopen/dlsym (device_sim_get_contract), so a backend exporting its own sdk_device_entry
// reaches the simulator's. The context is the one device_sim accepts (Note [device_sim context]).
inline const sdk_device_instance& contract() {
  static const sdk_device_instance instance = [] {
    sdk_device_instance i{};
    i.struct_size = sizeof(i);
    i.sdk_major_version = SDK_DEVICE_API_MAJOR;
    i.sdk_minor_version = SDK_DEVICE_API_MINOR;
    device_sim_get_contract(&i);  // fails only for a struct too small
    return i;
  }();
  return instance;
}

// The simulator's collectives extension (simccl; runtime/DeviceCollectivesExtension.h): always in
// its extension chain; nullptr only for a simulator built without it.
inline const sdk_collectives_extension* collectives() {
  for (const sdk_device_extension_base* e = contract().api->extension_start; e != nullptr; e = e->next) {
    if (std::strcmp(e->name, SDK_COLLECTIVES_EXTENSION_NAME) == 0)
      return reinterpret_cast<const sdk_collectives_extension*>(e);
  }
  return nullptr;
}

}  // namespace device_sim

#if __has_include(<backend_sdk/tensor/Tensor.h>)  // the SDK's C++ API (absent from a STABLE build)

#include <cstdint>
#include <string>
#include <tuple>

#include <backend_sdk/dispatch/Decline.h>
#include <backend_sdk/dispatch/DisableRecordFunction.h>
#include <backend_sdk/ops/Functions.h>
#include <backend_sdk/runtime/DeviceRegistry.h>
#include <backend_sdk/runtime/Stream.h>
#include <backend_sdk/tensor/Tensor.h>

namespace device_sim {

// launch(stream, ...) on the current stream of `device` (Note [Simulated kernel launch]); a failing
// launch raises the SDK's error for its status ("launching kernel add_f32: npu device error: ...").
// The kernel's own work (CPU operators it calls over host aliases) is not recorded as host
// operators by the profiler: the device's trace shows the kernel.
template <typename Fn>
void launch(sdk::Device device, const char* name, Fn&& fn) {
  sdk_stream_t stream = sdk::runtime::current_stream(device).native();
  sdk_status status = launch(stream, name, [fn = std::forward<Fn>(fn)] {
    sdk::profiler::DisableRecordFunctionGuard device_work;
    fn();
  });
  sdk::runtime::check_status(device.type, status, std::string("launching kernel ") + name);
}

// The host address of a device tensor's storage, as a kernel reaches it (nullptr for a storage with
// no memory); ValueError for a tensor that is not in simulated device memory. Simulator only: real
// device memory is not host-addressable, a real kernel gets the device pointer.
inline void* host_address(const sdk::Tensor& t) {
  const void* data = t.storage()->data();
  void* host = data ? device_sim_translate(data) : nullptr;
  SDK_CHECK_VALUE(host || !data, "device_sim: ", t.str(), " is not in simulated device memory");
  return host;
}

// The host address of a device tensor's first element, typed.
template <typename T>
T* host_data(const sdk::Tensor& t) {
  char* base = static_cast<char*>(host_address(t));
  return base ? reinterpret_cast<T*>(base + t.storage_offset() * static_cast<int64_t>(t.itemsize())) : nullptr;
}

// A CPU tensor over a device tensor's memory, of the same geometry: a kernel may run any CPU
// operator on it (sdk::ops::copy_(host_alias(dst), host_alias(src)) is a strided copy within the
// device). Only kernels, running on a stream, may touch it: host code touching device memory is the
// bug the simulator exists to catch.
inline sdk::Tensor host_alias(const sdk::Tensor& t) {
  return sdk::from_blob(host_address(t), t.storage()->nbytes(), t.sizes(), t.strides(), t.storage_offset(),
                        t.dtype(), sdk::Device(sdk::DeviceType::CPU));
}

// A copy within one simulated device, any strides and dtypes: the LocalCopy hook the SDK's
// contract-backed copy_ needs from a device (sdk::ops::device::register_contract_kernels(m,
// &device_sim::local_copy), ops/DeviceOps.h), a kernel on dst's current stream.
inline void local_copy(const sdk::Tensor& dst, const sdk::Tensor& src) {
  launch(dst.device(), "copy_", [d = host_alias(dst), s = host_alias(src)] { sdk::ops::copy_(d, s); });
}

// The dtype of C++ type T (elementwise<T>).
template <typename T> struct dtype_of;
template <> struct dtype_of<bool> { static constexpr sdk::ScalarType value = sdk::ScalarType::Bool; };
template <> struct dtype_of<uint8_t> { static constexpr sdk::ScalarType value = sdk::ScalarType::UInt8; };
template <> struct dtype_of<int8_t> { static constexpr sdk::ScalarType value = sdk::ScalarType::Int8; };
template <> struct dtype_of<int16_t> { static constexpr sdk::ScalarType value = sdk::ScalarType::Int16; };
template <> struct dtype_of<int32_t> { static constexpr sdk::ScalarType value = sdk::ScalarType::Int32; };
template <> struct dtype_of<int64_t> { static constexpr sdk::ScalarType value = sdk::ScalarType::Int64; };
template <> struct dtype_of<float> { static constexpr sdk::ScalarType value = sdk::ScalarType::Float32; };
template <> struct dtype_of<double> { static constexpr sdk::ScalarType value = sdk::ScalarType::Float64; };

// Declines the call (sdk::decline, Note [Declining kernels] in dispatch/Decline.h) unless `t` is a
// contiguous tensor of T on `like`'s device with `like`'s sizes: what a flat loop over T serves.
template <typename T>
void require_dense(const sdk::Tensor& t, const sdk::Tensor& like) {
  SDK_DECLINE_IF(t.dtype() != dtype_of<T>::value, "dtype ", sdk::scalar_type_name(t.dtype()));
  SDK_DECLINE_IF(!t.is_contiguous(), "non-contiguous input");
  SDK_DECLINE_IF(t.device() != like.device() || !t.sizes().equals(like.sizes()), "broadcast or mixed devices");
}

// Note [Simulated elementwise kernels]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// elementwise<T>(name, fn, a, b, ...) is the kernel out[i] = fn(a[i], b[i], ...) on the simulated
// device, for the calls a flat loop over T serves: every input a contiguous tensor of T on one device
// with one shape. Every other call (another dtype, strides, broadcasting, a CPU scalar tensor) is
// declined (require_dense) before anything is allocated or written, so the kernel is registered
// through sdk::declinable and the backend's fallback serves those calls. The result is a fresh
// contiguous tensor of T on the inputs' device, computed by a kernel launched on the current stream
// (fn's result converted to T). fn is copied into the kernel: capture values, not references.
template <typename T, typename Fn, typename... Rest>
sdk::Tensor elementwise(const char* name, Fn fn, const sdk::Tensor& first, const Rest&... rest) {
  static_assert((std::is_same_v<Rest, sdk::Tensor> && ...), "elementwise: the inputs are sdk::Tensor");
  require_dense<T>(first, first);
  (require_dense<T>(rest, first), ...);
  sdk::Tensor out = sdk::ops::empty(first.sizes(), first.dtype(), first.device());
  if (const int64_t n = first.numel()) {
    T* z = host_data<T>(out);
    launch(first.device(), name, [=, in = std::make_tuple(host_data<const T>(first), host_data<const T>(rest)...)] {
      std::apply([&](auto*... x) { for (int64_t i = 0; i < n; ++i) z[i] = static_cast<T>(fn(x[i]...)); }, in);
    });
  }
  return out;
}

}  // namespace device_sim

#endif  // __has_include(<backend_sdk/tensor/Tensor.h>)

#endif  // DEVICE_SIM_HPP_
