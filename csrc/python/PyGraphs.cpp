// backend_sdk._C._runtime: graph capture and replay (Note [Graph capture],
// runtime/Graph.h), behind backend_sdk.accelerator.Graph.
#include <pybind11/pybind11.h>

#include <backend_sdk/runtime/Graph.h>
#include <backend_sdk/runtime/Stream.h>
#include "python/PyRuntime.h"

namespace py = pybind11;

namespace sdk::python {

void init_runtime_graphs(py::module_& m) {
  using runtime::Graph;
  py::class_<Graph>(m, "_Graph", "A captured sequence of device work (Note [Graph capture]).")
      .def(py::init<>())
      .def("capture_begin", &Graph::capture_begin, py::arg("stream"), py::arg("pool") = 0,
           py::arg("capture_error_mode") = 0)
      .def("capture_end", &Graph::capture_end, py::call_guard<py::gil_scoped_release>())
      .def("instantiate", &Graph::instantiate)
      .def("replay", &Graph::replay)
      .def("reset", &Graph::reset, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("captured", &Graph::captured)
      .def_property_readonly("capturing", &Graph::capturing)
      .def_property_readonly("pool", &Graph::pool);
  m.def("_is_stream_capturing", &runtime::is_stream_capturing, py::arg("stream"));
  m.def("_has_device_graphs", [](const std::string& backend) { return runtime::has_device_graphs(parse_backend(backend)); },
        py::arg("backend"));
  m.def("_new_graph_pool_id", &runtime::new_graph_pool_id);
}

}  // namespace sdk::python
