// backend_sdk._C._runtime: events (split out of PyStreams.cpp).
// backend_sdk.Event (backend_sdk/_streams.py) subclasses this class with
// PyTorch's Python API; waits release the GIL (Note [Blocking waits release
// the GIL]).
#include <pybind11/pybind11.h>

#include <backend_sdk/runtime/Event.h>
#include <backend_sdk/runtime/Stream.h>
#include "python/PyRuntime.h"

namespace py = pybind11;

namespace sdk::python {

void init_runtime_events(py::module_& m) {
  using runtime::Event;
  using runtime::Stream;
  py::class_<Event>(m, "Event", "A marker in a stream's work, for waiting, querying and timing.")
      .def(py::init<bool, bool>(), py::arg("enable_timing") = false, py::arg("blocking") = false)
      .def("record", [](Event& e, const Stream& s) { e.record(s); })
      .def("query", [](const Event& e) {
        py::gil_scoped_release nogil;
        return e.query();
      })
      .def("synchronize", [](const Event& e) {
        py::gil_scoped_release nogil;
        e.synchronize();
      })
      .def("elapsed_time", [](const Event& a, const Event& b) { return a.elapsed_time(b); })
      .def_property_readonly("enable_timing", &Event::enable_timing)
      .def_property_readonly("blocking", &Event::blocking)
      .def_property_readonly("was_recorded", &Event::was_recorded)
      .def_property_readonly("device", [](const Event& e) -> py::object {
        if (!e.is_created()) return py::none();
        return py::reinterpret_steal<py::object>(device_obj(e.device()));
      })
      .def_property_readonly("native_handle", [](const Event& e) { return reinterpret_cast<uintptr_t>(e.native()); });
}

}  // namespace sdk::python
