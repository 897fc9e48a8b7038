#include "python/PyGenerator.h"

#include <pybind11/stl.h>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/ops/Random.h>
#include "python/PyCore.h"
#include "python/PyTensor.h"
#include <backend_sdk/runtime/CurrentDevice.h>

namespace py = pybind11;

namespace sdk::python {
namespace {

// A Python int in [-2^63, 2^64) as the uint64 it denotes (negative seeds wrap,
// as torch.manual_seed(-1) does).
uint64_t seed_from_python(py::handle obj, const char* op) {
  SDK_CHECK_TYPE(PyLong_Check(obj.ptr()) || PyIndex_Check(obj.ptr()), op, "(): expected an int seed, got ",
                 Py_TYPE(obj.ptr())->tp_name);
  py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(obj.ptr()));
  if (!index) throw py::error_already_set();
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (overflow == 0) {
    if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
    return static_cast<uint64_t>(v);
  }
  if (overflow > 0) {
    unsigned long long u = PyLong_AsUnsignedLongLong(index.ptr());
    if (!(u == static_cast<unsigned long long>(-1) && PyErr_Occurred())) return u;
    PyErr_Clear();
  }
  SDK_THROW(Value, op, "(): Overflow when unpacking long: the seed must be in [-0x8000_0000_0000_0000, "
                       "0xffff_ffff_ffff_ffff], got ", std::string(py::str(obj)));
}

Device device_from_python(py::handle obj) {
  if (obj.is_none()) return Device(DeviceType::CPU);
  Device d;
  SDK_CHECK_TYPE(parse_device(obj.ptr(), &d), "Generator(): argument 'device' must be a device, str or int, not ",
                 Py_TYPE(obj.ptr())->tp_name);
  return d;
}

}  // namespace

bool unpack_generator(PyObject* obj, Generator* out) {
  py::handle h(obj);
  if (!py::isinstance<Generator>(h)) return false;
  *out = h.cast<Generator>();
  return true;
}

PyObject* wrap_generator(const Generator& g) { return py::cast(g).release().ptr(); }

void init_generator(py::module_& m) {
  py::class_<Generator>(m, "Generator",
                        "A random number generator (a Philox4x32-10 seed and offset), like torch.Generator.\n\n"
                        "Generator(device='cpu') makes a new generator seeded with 67280421310721.")
      .def(py::init([](py::object device) {
             Device d = device_from_python(device);
             if (!d.is_cpu() && !d.is_meta() && !d.has_index()) d.index = runtime::current_device_index(d.type);
             return make_generator(d);
           }),
           py::arg("device") = py::none())
      .def(
          "manual_seed",
          [](py::object self, py::handle seed) {
            self.cast<Generator&>()->set_current_seed(seed_from_python(seed, "manual_seed"));
            return self;
          },
          py::arg("seed"), "Sets the seed (and resets the offset); returns the generator.")
      .def("seed", [](Generator& g) { return g->seed(); },
           "Seeds from a non-deterministic source and returns the seed.")
      .def("initial_seed", [](const Generator& g) { return g->current_seed(); }, "The seed in use.")
      .def("get_state", [](const Generator& g) { return g->get_state(); },
           "The state as a uint8 tensor of 16 bytes (seed, offset; little-endian).")
      .def(
          "set_state",
          [](py::object self, const Tensor& state) {
            self.cast<Generator&>()->set_state(state);
            return self;
          },
          py::arg("new_state"), "Restores a state returned by get_state(); returns the generator.")
      .def("get_offset", [](const Generator& g) { return g->get_offset(); },
           "The Philox offset: counters reserved so far since seeding.")
      .def(
          "set_offset",
          [](py::object self, uint64_t offset) {
            self.cast<Generator&>()->set_offset(offset);
            return self;
          },
          py::arg("offset"))
      .def(
          "philox_engine_inputs", [](Generator& g, uint64_t increment) { return g->philox_engine_inputs(increment); },
          py::arg("increment"),
          "Reserves `increment` Philox counters: returns (seed, offset) and advances the offset (for kernels "
          "written in Python; see Note [Philox random numbers]).")
      .def_property_readonly("device", [](const Generator& g) { return g->device(); })
      .def("__eq__", [](const Generator& a, py::handle b) {
        Generator other;
        return unpack_generator(b.ptr(), &other) && a == other;
      })
      .def("__hash__", [](const Generator& g) { return std::hash<const void*>()(g.impl()); })
      .def("__repr__", [](const Generator& g) {
        return "<backend_sdk.Generator device=" + g->device().str() + " seed=" + std::to_string(g->current_seed()) +
               ">";
      });

  m.def("_default_generator", [](py::object device) { return default_generator(device_from_python(device)); },
        py::arg("device") = py::none(),
        "The default generator of a device (the current device of its type when it has no index).");
  m.def("_default_generators", &default_generators, "Every default generator created so far, cpu's first.");
  m.def("_manual_seed_all", [](py::handle seed) { manual_seed_all(seed_from_python(seed, "manual_seed")); },
        py::arg("seed"), "Seeds every default generator, and those created later.");
  // Testing hooks: the CPU fills with an explicit (seed, offset), as a device kernel would run them.
  m.def("_philox_uniform_fill", &ops::philox_uniform_fill, py::arg("self"), py::arg("from_"), py::arg("to"),
        py::arg("seed"), py::arg("offset"));
  m.def("_philox_normal_fill", &ops::philox_normal_fill, py::arg("self"), py::arg("mean"), py::arg("std"),
        py::arg("seed"), py::arg("offset"));
  m.def("_seed_from_python", [](py::handle seed) { return seed_from_python(seed, "manual_seed"); });
}

}  // namespace sdk::python
