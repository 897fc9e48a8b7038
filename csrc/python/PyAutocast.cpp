// backend_sdk._C's autocast functions (torch._C's names): the thread-local state of
// csrc/backend_sdk/ops/Autocast.h, by device-type name. backend_sdk/amp/autocast_mode.py builds
// the context manager on them.
#include <pybind11/pybind11.h>

#include <string>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/ops/Autocast.h>
#include "python/PyCore.h"

namespace py = pybind11;

namespace sdk::python {
namespace {

// PyTorch parses the name as a device string: "foo" fails as torch.device("foo") does.
DeviceType autocast_device_type(const std::string& name) {
  DeviceType t;
  SDK_CHECK_VALUE(parse_device_type(name, &t), "Expected one of ", valid_device_type_names(),
                  " device type at start of device string: ", name);
  return t;
}

py::object dtype_of(ScalarType t) {
  if (t == ScalarType::Undefined) return py::none();
  return py::reinterpret_steal<py::object>(dtype_object(t));
}

ScalarType to_dtype(const py::handle& obj, const char* fn) {
  ScalarType t;
  SDK_CHECK_TYPE(parse_dtype(obj.ptr(), &t), fn, "(): argument 'dtype' must be backend_sdk.dtype, not ",
                 std::string(py::str(py::type::handle_of(obj).attr("__name__"))));
  return t;
}

}  // namespace

void init_autocast(py::module_& m) {
  m.def("_is_autocast_available", [](const std::string& device_type) {
    DeviceType t;
    return parse_device_type(device_type, &t) && t != DeviceType::Meta;
  }, py::arg("device_type"));
  m.def("is_autocast_enabled", [](const std::string& device_type) {
    return autocast::is_autocast_enabled(autocast_device_type(device_type));
  }, py::arg("device_type"));
  m.def("set_autocast_enabled", [](const std::string& device_type, bool enabled) {
    autocast::set_autocast_enabled(autocast_device_type(device_type), enabled);
  }, py::arg("device_type"), py::arg("enabled"));
  m.def("get_autocast_dtype", [](const std::string& device_type) {
    return dtype_of(autocast::get_autocast_dtype(autocast_device_type(device_type)));
  }, py::arg("device_type"));
  m.def("set_autocast_dtype", [](const std::string& device_type, py::handle dtype) {
    autocast::set_autocast_dtype(autocast_device_type(device_type), to_dtype(dtype, "set_autocast_dtype"));
  }, py::arg("device_type"), py::arg("dtype"));
  m.def("is_autocast_cache_enabled", &autocast::is_autocast_cache_enabled);
  m.def("set_autocast_cache_enabled", &autocast::set_autocast_cache_enabled, py::arg("enabled"));
  m.def("autocast_increment_nesting", &autocast::increment_nesting);
  m.def("autocast_decrement_nesting", &autocast::decrement_nesting);
  m.def("clear_autocast_cache", &autocast::clear_cache);
  m.def("_autocast_cache_size", &autocast::cache_size);
}

}  // namespace sdk::python
