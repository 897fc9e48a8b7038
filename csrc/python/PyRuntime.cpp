// backend_sdk._C._runtime: the device runtime's Python face. This file makes
// the module, installs the runtime's hooks and holds what the per-concept files
// share; the bindings live one concept per file: PyDevices.cpp (devices, the
// contract, extensions, trace, activity), PyStreams.cpp (streams), PyEvents.cpp (events),
// PyGraphs.cpp (graph capture), PyMemory.cpp (caching and pinned allocators,
// raw copies, snapshots). backend_sdk/_runtime.py wraps it with typed,
// documented functions; the generated device modules build on that.
//
// Every binding that can wait on a device releases the GIL: host functions
// launched from Python run on device worker threads and take the GIL, so a
// thread waiting for them while holding it would deadlock. Waits inside
// operators (a copy to the host, item()) release it through the runtime's
// blocking-wait hooks installed here: Note [Blocking waits release the GIL].
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <memory>

#include <backend_sdk/core/DispatchKey.h>
#include <backend_sdk/core/Exception.h>
#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/DeviceOps.h>
#include <backend_sdk/ops/Functions.h>
#include "python/PyCore.h"
#include "python/PyRuntime.h"
#include "python/PyTensor.h"
#include <backend_sdk/runtime/detail/BlockingWait.h>
#include <backend_sdk/runtime/CachingAllocator.h>
#include <backend_sdk/runtime/DeviceGuard.h>
#include <backend_sdk/runtime/DeviceRegistry.h>
#include <backend_sdk/runtime/Stream.h>
#include <backend_sdk/tensor/Tensor.h>
#include <backend_sdk/tensor/TensorImpl.h>

namespace py = pybind11;

namespace sdk::python {

DeviceType parse_backend(const std::string& name) {
  DeviceType t;
  SDK_CHECK_VALUE(parse_device_type(name, &t), "unknown backend '", name, "'; expected one of ",
                  valid_device_type_names());
  SDK_CHECK_VALUE(is_privateuse(t), "'", name, "' is not an accelerator backend (PrivateUse1/2/3)");
  return t;
}

// A device argument: a device object, "accel:1", "accel" (current device).
Device parse_accel_device(py::handle obj, const char* what) {
  Device d;
  SDK_CHECK_TYPE(parse_device(obj.ptr(), &d), what, ": expected a device, got ", Py_TYPE(obj.ptr())->tp_name);
  return runtime::resolve_device(d, what);
}

PyObject* device_obj(Device d) { return device_object(d); }

size_t checked_size(int64_t n, const char* what) {
  SDK_CHECK_VALUE(n >= 0, what, ": the size must be non-negative, got ", n);
  return static_cast<size_t>(n);
}

namespace {
using runtime::Stream;

void empty_host_fn(void*) {}

// Note [Host-addressable devices]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A device written in Python (backend_sdk.utils.python_device) keeps its
// memory in host buffers, so a device pointer is also a host address. The
// one piece of device compute the contract-backed copy_ needs (LocalCopy,
// ops/DeviceOps.h) is then the CPU copy over aliases of the two storages.
// Such a device runs stream work synchronously, so the copy runs at once.
Tensor host_alias(const Tensor& t) {
  const StorageImpl& storage = *t.storage();
  return from_blob(storage.data(), storage.nbytes(), t.sizes(), t.strides(), t.storage_offset(), t.dtype(),
                   Device(DeviceType::CPU));
}

void host_addressable_local_copy(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  ops::copy_(host_alias(dst), host_alias(src));
}

// Registrations made from Python for a backend's lifetime (the process): never
// closed, like a vendor library's static registrations.
std::vector<std::unique_ptr<Library>>& python_registered_libraries() {
  static auto* libs = new std::vector<std::unique_ptr<Library>>();
  return *libs;
}

}  // namespace

namespace {
// Note [Blocking waits release the GIL]: release it only if this thread holds
// it, and not while the interpreter shuts down.
void* release_gil_for_wait() {
  #if PY_VERSION_HEX >= 0x030D0000
  if (!Py_IsInitialized() || Py_IsFinalizing() || !PyGILState_Check()) return nullptr;
#else
  if (!Py_IsInitialized() || _Py_IsFinalizing() || !PyGILState_Check()) return nullptr;
#endif
  return PyEval_SaveThread();
}
void reacquire_gil_after_wait(void* token) {
  if (token) PyEval_RestoreThread(static_cast<PyThreadState*>(token));
}
}  // namespace

void init_runtime(py::module_& parent) {
  runtime::set_blocking_wait_hooks(&release_gil_for_wait, &reacquire_gil_after_wait);
  runtime::set_sync_debug_warn_hook([](const char* message) { sdk::warn(message); });
  py::module_ m = parent.def_submodule("_runtime", "The device runtime: devices, streams, events, caching allocator.");
  m.def("_set_sync_debug_mode", &runtime::set_sync_debug_mode, py::arg("mode"),
        "Note [Sync debug mode]: 0 default, 1 warn, 2 error on every synchronising call.");
  m.def("_get_sync_debug_mode", &runtime::sync_debug_mode);


  init_runtime_devices(m);  // PyDevices.cpp: devices, the contract, extensions, trace, activity
  m.def(
      "_register_contract_kernels",
      [](const std::string& backend) {
        DeviceType t = parse_backend(backend);
        auto lib = std::make_unique<Library>(Library::IMPL, "aten", dense_key_for(t),
                                             "backend_sdk.utils.python_device.register_contract_kernels", 0);
        ops::device::register_contract_kernels(*lib, &host_addressable_local_copy);
        python_registered_libraries().push_back(std::move(lib));
      },
      py::arg("backend"),
      "Registers the contract-backed kernels (ops/DeviceOps.h) for a backend whose device memory is "
      "host-addressable (Note [Host-addressable devices]).");
  m.def(
      "_register_cpu_fallback",
      [](const std::string& backend) {
        DeviceType t = parse_backend(backend);
        auto lib = std::make_unique<Library>(Library::IMPL, "_", dense_key_for(t),
                                             "backend_sdk.utils.python_device.register_cpu_fallback", 0);
        lib->fallback(ops::cpu_fallback_function());
        python_registered_libraries().push_back(std::move(lib));
      },
      py::arg("backend"), "Registers the SDK's boxed CPU fallback (Note [CPU fallback]) as the backend's fallback.");

  init_runtime_streams(m);  // PyStreams.cpp: Stream, current/default stream
  init_runtime_events(m);   // PyEvents.cpp: Event
  init_runtime_graphs(m);   // PyGraphs.cpp: graph capture and replay
  init_runtime_collectives(m);  // PyCollectives.cpp: device collectives (issue 21)
  init_runtime_memory(m);   // PyMemory.cpp: allocators, raw copies, snapshots, allocation history

  // ---- micro-benchmarks (benchmarks/bench_runtime.py): ns per iteration, timed in C++ ----
  m.def("_bench_alloc_free", [](const Stream& s, int64_t nbytes, int64_t iters) {
    auto* a = runtime::caching_allocator(s.device().type);
    size_t n = checked_size(nbytes, "_bench_alloc_free");
    py::gil_scoped_release nogil;
    runtime::StreamGuard guard(s);
    { DataPtr warm = a->allocate(n); }
    auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < iters; ++i) {
      DataPtr p = a->allocate(n);
    }
    auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(iters);
  });
  m.def("_bench_launch_empty", [](const Stream& s, int64_t iters) {
    const auto& api = runtime::device_api(s.device().type);
    sdk_stream_t h = s.native();
    py::gil_scoped_release nogil;
    auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < iters; ++i) runtime::check_status(s.device().type, api.launch_host_func(h, &empty_host_fn, nullptr, nullptr), "launch");
    auto t1 = std::chrono::steady_clock::now();
    runtime::check_status(s.device().type, api.stream_synchronize(h), "synchronize");
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(iters);
  });
  m.def("_bench_launch_sync", [](const Stream& s, int64_t iters) {
    const auto& api = runtime::device_api(s.device().type);
    sdk_stream_t h = s.native();
    py::gil_scoped_release nogil;
    auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < iters; ++i) {
      runtime::check_status(s.device().type, api.launch_host_func(h, &empty_host_fn, nullptr, nullptr), "launch");
      runtime::check_status(s.device().type, api.stream_synchronize(h), "synchronize");
    }
    auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(iters);
  });
}

}  // namespace sdk::python
