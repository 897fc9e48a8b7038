// backend_sdk._C._runtime: streams (split out of PyRuntime.cpp; events:
// PyEvents.cpp). backend_sdk.Stream (backend_sdk/_streams.py) subclasses
// this class with PyTorch's Python API; the bindings release the GIL
// around every wait (Note [Blocking waits release the GIL]).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/runtime/DeviceGuard.h>
#include <backend_sdk/runtime/DeviceRegistry.h>
#include <backend_sdk/runtime/Event.h>
#include <backend_sdk/runtime/ExternalStream.h>
#include <backend_sdk/runtime/Stream.h>
#include "python/PyCore.h"
#include "python/PyRuntime.h"

namespace py = pybind11;

namespace sdk::python {
namespace {
using runtime::Event;
using runtime::Stream;

// Keeps a Python callable alive until it has run on the device.
struct PyHostFn {
  py::object fn;
};
// launch_host_func's release: the device dropped the function (device lost):
// free the callable without calling it.
void release_py_host_fn(void* p) {
  auto* h = static_cast<PyHostFn*>(p);
  if (!Py_IsInitialized()) return;  // interpreter gone: leak rather than touch it
  PyGILState_STATE s = PyGILState_Ensure();
  delete h;
  PyGILState_Release(s);
}
void run_py_host_fn(void* p) {
  auto* h = static_cast<PyHostFn*>(p);
  if (!Py_IsInitialized()) return;  // interpreter gone: leak rather than touch it
  PyGILState_STATE s = PyGILState_Ensure();
  {
    py::object fn = std::move(h->fn);
    delete h;
    PyObject* r = PyObject_CallNoArgs(fn.ptr());
    if (r == nullptr) {
      PyErr_WriteUnraisable(fn.ptr());  // no caller to raise to: like an exception in a thread
    } else {
      Py_DECREF(r);
    }
  }
  PyGILState_Release(s);
}

}  // namespace

void init_runtime_streams(py::module_& m) {
  // ---- streams ----
  py::class_<Stream>(m, "Stream", "A device stream (an in-order queue of device work).")
      .def(py::init([](py::handle device, int priority) {
             return runtime::stream_from_pool(parse_accel_device(device, "Stream"), priority);
           }),
           py::arg("device"), py::arg("priority") = 0)
      .def(py::init([](int64_t stream_id, int64_t device_index, int64_t device_type) {
             // PyTorch's Stream(stream_id, device_index, device_type): the stream the three
             // numbers of an existing stream name (its stream_id, device_index, device_type).
             Stream s = Stream::from_id(stream_id);
             SDK_CHECK_VALUE(s.device().index == device_index && static_cast<int64_t>(s.device().type) == device_type,
                             "Stream: stream_id ", stream_id, " is a stream of ", s.device(),
                             ", not of device_index ", device_index, " and device_type ", device_type);
             return s;
           }),
           py::arg("stream_id"), py::arg("device_index"), py::arg("device_type"))
      .def_static("_from_id", &Stream::from_id)
      .def_property_readonly("device_index", [](const Stream& s) { return static_cast<int64_t>(s.device().index); })
      .def_property_readonly("device_type", [](const Stream& s) { return static_cast<int64_t>(s.device().type); })
      .def_property_readonly("device", [](const Stream& s) { return py::reinterpret_steal<py::object>(device_obj(s.device())); })
      .def_property_readonly("stream_id", &Stream::id)
      .def_property_readonly("priority", &Stream::priority)
      .def_property_readonly("native_handle",
                             [](const Stream& s) { return reinterpret_cast<uintptr_t>(s.native()); })
      .def("query", [](const Stream& s) {
        py::gil_scoped_release nogil;
        return s.query();
      })
      .def("synchronize", [](const Stream& s) {
        py::gil_scoped_release nogil;
        s.synchronize();
      })
      .def("wait_event", [](const Stream& s, const Event& e) { s.wait(e); })
      .def("launch_host_func",
           [](const Stream& s, py::object fn) {
             SDK_CHECK_TYPE(PyCallable_Check(fn.ptr()), "launch_host_func: expected a callable");
             auto* h = new PyHostFn{std::move(fn)};
             sdk_status st = runtime::device_api(s.device().type)
                                 .launch_host_func(s.native(), &run_py_host_fn, &release_py_host_fn, h);
             if (st != SDK_SUCCESS) {
               delete h;
               runtime::check_status(s.device().type, st, "launch_host_func");
             }
           })
      .def("__eq__", [](const Stream& a, py::handle b) {
        return py::isinstance<Stream>(b) && a == b.cast<const Stream&>();
      })
      .def("__hash__", [](const Stream& s) { return std::hash<int64_t>()(s.id()); })
      .def("__repr__", [](const Stream& s) {
        // PyTorch's text ("torch.Stream device_type=cuda, device_index=0, stream_id=..."), with our package name.
        return detail::str("<backend_sdk.Stream device_type=", device_type_name(s.device().type),
                           ", device_index=", static_cast<int>(s.device().index), ", stream_id=", s.id(), ">");
      });
  m.def("current_stream", [](py::handle device) { return runtime::current_stream(parse_accel_device(device, "current_stream")); });
  m.def("default_stream", [](py::handle device) { return runtime::default_stream(parse_accel_device(device, "default_stream")); });
  m.def("set_stream", &runtime::set_current_stream);
  m.def("_external_stream", [](py::handle device, uintptr_t handle) {
    return runtime::external_stream(parse_accel_device(device, "ExternalStream"), reinterpret_cast<sdk_stream_t>(handle));
  }, py::arg("device"), py::arg("handle"), "Note [External streams]: a Stream for a native handle the SDK did not create.");
}

}  // namespace sdk::python
