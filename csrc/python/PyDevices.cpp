// backend_sdk._C._runtime, devices: attaching a device, the contract's slots
// and constants, extensions, device queries and properties, the "sdk.trace"
// records and the "sdk.stats" activity figures (split out of PyRuntime.cpp).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <backend_sdk/core/Exception.h>
#include "python/PyCore.h"
#include "python/PyRuntime.h"
#include <backend_sdk/runtime/CurrentDevice.h>
#include <backend_sdk/runtime/DeviceGuard.h>
#include <backend_sdk/runtime/DeviceRegistry.h>
#include <backend_sdk/runtime/DeviceStats.h>
#include <backend_sdk/runtime/DeviceTrace.h>
#include <backend_sdk/runtime/DeviceTraceExtension.h>

namespace py = pybind11;

namespace sdk::python {

void init_runtime_devices(py::module_& m) {
  // ---- devices ----
  m.def("attach_device_library", [](const std::string& backend, const std::string& path) {
    runtime::load_device_library(parse_backend(backend), path);
  });
  m.def(
      "_attach_device_api",
      [](const std::string& backend, uintptr_t address, const std::string& source, py::object keepalive,
         uintptr_t context) {
        runtime::attach_device(parse_backend(backend), reinterpret_cast<const sdk_device_api*>(address),
                               reinterpret_cast<void*>(context), source);
        // Note [Device attachment]: an attached struct is never released, so
        // neither is the Python object that owns it and its trampolines.
        if (!keepalive.is_none()) {
          static auto* kept = new std::vector<py::object>();
          kept->push_back(std::move(keepalive));
        }
      },
      py::arg("backend"), py::arg("address"), py::arg("source"), py::arg("keepalive") = py::none(),
      py::arg("context") = 0,
      "Attaches the sdk_device_api struct at `address`, with its `context` (Note [Device context]), to a "
      "PrivateUse backend; `keepalive` (the owner of the struct and its function pointers) is kept for the rest "
      "of the process.");
  m.def(
      "_device_api_slots",
      [] {
        py::list out;
        for (const auto& slot : runtime::device_api_slots()) {
          py::dict d;
          d["name"] = slot.name;
          d["return_type"] = slot.return_type;
          d["params"] = slot.params;
          d["required"] = slot.required;
          d["minor"] = slot.minor;
          d["offset"] = slot.offset;
          out.append(std::move(d));
        }
        return out;
      },
      "The slots of the device contract, from SDK_DEVICE_API_SLOTS (runtime/DeviceApi.h): dicts with name, "
      "return_type and params (C text), required, minor and offset.");
  m.def("_device_api_version", [] { return std::make_pair(SDK_DEVICE_API_MAJOR, SDK_DEVICE_API_MINOR); });
  m.def("_device_api_size_of_minor", [](uint32_t minor) { return runtime::device_api_size_of_minor(minor); });
  m.def("_device_api_constants", [] {
    py::dict d;
#define SDK_CONSTANT_(n) d[#n] = n;
    SDK_CONSTANT_(SDK_DTYPE_UINT8) SDK_CONSTANT_(SDK_DTYPE_INT8) SDK_CONSTANT_(SDK_DTYPE_INT16)
    SDK_CONSTANT_(SDK_DTYPE_INT32) SDK_CONSTANT_(SDK_DTYPE_INT64) SDK_CONSTANT_(SDK_DTYPE_FLOAT16)
    SDK_CONSTANT_(SDK_DTYPE_FLOAT32) SDK_CONSTANT_(SDK_DTYPE_FLOAT64) SDK_CONSTANT_(SDK_DTYPE_BOOL)
    SDK_CONSTANT_(SDK_DTYPE_BFLOAT16)
    SDK_CONSTANT_(SDK_TRACE_KERNEL) SDK_CONSTANT_(SDK_TRACE_MEMCPY) SDK_CONSTANT_(SDK_TRACE_MEMSET)
    SDK_CONSTANT_(SDK_TRACE_HOST_FUNC) SDK_CONSTANT_(SDK_TRACE_EVENT_RECORD)
#undef SDK_CONSTANT_
    d["sizeof(sdk_device_api)"] = sizeof(sdk_device_api);
    d["sizeof(sdk_device_extension_base)"] = sizeof(sdk_device_extension_base);
    d["sizeof(sdk_trace_extension)"] = sizeof(sdk_trace_extension);
    d["sizeof(sdk_trace_record)"] = sizeof(sdk_trace_record);
    d["sizeof(sdk_device_instance)"] = sizeof(sdk_device_instance);
    return d;
  });
  m.def(
      "device_extensions",
      [](const std::string& backend) { return runtime::device_extensions(parse_backend(backend)); },
      py::arg("backend"),
      "(name, version) of each extension of the backend's device, in chain order (Note [Device API extensions]).");
  m.def(
      "device_context",
      [](const std::string& backend) {
        return reinterpret_cast<uintptr_t>(runtime::device_api(parse_backend(backend)).context());
      },
      py::arg("backend"), "The context the SDK passes to the backend's device slots (Note [Device context]).");
  m.def(
      "device_api_version",
      [](const std::string& backend) {
        const auto& api = runtime::device_api(parse_backend(backend));
        return std::make_pair(api.major_version(), api.minor_version());
      },
      py::arg("backend"), "(major, minor) of the device contract the backend's device declared.");
  m.def(
      "can_device_access_peer",
      [](py::handle device, py::handle peer) {
        Device d = parse_accel_device(device, "can_device_access_peer");
        Device p = parse_accel_device(peer, "can_device_access_peer");
        SDK_CHECK_VALUE(d.type == p.type, "can_device_access_peer: ", d, " and ", p, " are of different backends");
        int32_t can = 0;
        runtime::check_status(d.type, runtime::device_api(d.type).can_access_peer(d.index, p.index, &can),
                              "can_device_access_peer");
        return can != 0;
      },
      py::arg("device"), py::arg("peer"));
  m.def(
      "trace_start",
      [](const std::string& backend, int64_t capacity) { runtime::device_trace_start(parse_backend(backend), capacity); },
      py::arg("backend"), py::arg("capacity") = int64_t(1) << 20);
  m.def(
      "trace_stop", [](const std::string& backend) { runtime::device_trace_stop(parse_backend(backend)); },
      py::arg("backend"));
  m.def(
      "trace_collect",
      [](const std::string& backend) {
        uint64_t dropped = 0;
        std::vector<runtime::DeviceTraceRecord> records;
        {
          py::gil_scoped_release nogil;
          records = runtime::device_trace_collect(parse_backend(backend), &dropped);
        }
        py::list out;
        for (const auto& r : records) {
          py::dict d;
          d["kind"] = r.kind;
          d["name"] = r.name;
          d["device"] = r.device;
          d["stream"] = r.stream;
          d["start_ns"] = r.start_ns;
          d["end_ns"] = r.end_ns;
          d["bytes"] = r.bytes;
          d["correlation_id"] = r.correlation_id;  // "sdk.trace" v2; 0 for version 1 devices
          out.append(std::move(d));
        }
        return py::make_tuple(out, dropped);
      },
      py::arg("backend"));
  m.def("has_device", [](const std::string& backend) { return runtime::has_device(parse_backend(backend)); });
  m.def("device_source", [](const std::string& backend) { return runtime::device_source(parse_backend(backend)); });
  m.def("device_count", [](const std::string& backend) { return runtime::device_count(parse_backend(backend)); });
  m.def("current_device", [](const std::string& backend) {
    return static_cast<int>(runtime::current_device_index(parse_backend(backend)));
  });
  m.def("set_device", [](py::handle device) { runtime::set_current_device(parse_accel_device(device, "set_device")); });
  m.def("synchronize", [](py::handle device) {
    Device d = parse_accel_device(device, "synchronize");
    py::gil_scoped_release nogil;
    runtime::device_synchronize(d);
  });
  m.def("get_device_properties", [](py::handle device) {
    Device d = parse_accel_device(device, "get_device_properties");
    const auto& p = runtime::device_properties(d.type, d.index);
    py::dict out;
    out["name"] = p.name;
    out["total_memory"] = p.total_memory;
    out["supported_dtypes"] = p.supported_dtypes;
    out["stream_priority_least"] = p.stream_priority_least;
    out["stream_priority_greatest"] = p.stream_priority_greatest;
    return out;
  });
  // Note [Device stats extension]: NotImplementedError naming the backend when the device lacks "sdk.stats".
  m.def(
      "device_activity",
      [](py::handle device) {
        Device d = parse_accel_device(device, "device_activity");
        const runtime::DeviceActivity a = runtime::device_activity(d.type, d.index, "utilization");
        py::dict out;
        out["kernel_percent"] = a.kernel_percent;
        out["memory_percent"] = a.memory_percent;
        out["sample_period_ns"] = a.sample_period_ns;
        return out;
      },
      py::arg("device"),
      "The device's kernel and memory activity over its last sample period: a dict with kernel_percent, "
      "memory_percent (0..100) and sample_period_ns (Note [Device stats extension]).");
  m.def("has_device_stats", [](const std::string& backend) { return runtime::has_device_stats(parse_backend(backend)); },
        py::arg("backend"));
}

}  // namespace sdk::python
