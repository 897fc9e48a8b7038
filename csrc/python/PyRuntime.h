// Helpers shared by the bindings of backend_sdk._C._runtime (PyRuntime.cpp:
// the module and shared helpers; PyDevices.cpp: devices; PyStreams.cpp:
// streams and events; PyGraphs.cpp: graphs; PyMemory.cpp: memory). Internal to
// the bindings, not installed.
#pragma once
#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include <backend_sdk/core/DeviceType.h>

namespace sdk::python {

// A backend name ("accel", "privateuseone"): ValueError unless it names a PrivateUse backend.
DeviceType parse_backend(const std::string& name);

// A device argument: a device object, "accel:1", "accel" (its current device).
Device parse_accel_device(pybind11::handle obj, const char* what);

// A new reference to the Python device object of d.
PyObject* device_obj(Device d);

// A byte count from Python: ValueError naming `what` if negative.
size_t checked_size(int64_t n, const char* what);

// Registers device attachment, contract queries, extensions, device queries, trace and activity on `m`
// (PyDevices.cpp).
void init_runtime_devices(pybind11::module_& m);

// Registers DeviceBuffer, raw copies, pinned memory, allocator statistics, snapshots and history on `m`
// (PyMemory.cpp).
void init_runtime_memory(pybind11::module_& m);

// Registers Stream, current_stream, default_stream and set_stream on `m` (PyStreams.cpp).
void init_runtime_streams(pybind11::module_& m);

// Registers Event on `m` (PyEvents.cpp).
void init_runtime_events(pybind11::module_& m);

// Registers _Graph and the capture queries on `m` (PyGraphs.cpp).
void init_runtime_graphs(pybind11::module_& m);

// Registers the device collectives and the MPI fabric on `m` (PyCollectives.cpp, issue 21).
void init_runtime_collectives(pybind11::module_& m);

}  // namespace sdk::python
