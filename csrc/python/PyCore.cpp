#include "python/PyCore.h"

#include <pybind11/stl.h>

#include <array>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/dispatch/LocalDispatchKeySet.h>

namespace py = pybind11;

namespace sdk::python {
namespace {

// Python-visible dtype: backend_sdk.float32 etc.
struct DType {
  ScalarType type;
};

std::array<PyObject*, kNumScalarTypes> g_dtypes{};
PyObject* g_size_class = nullptr;

}  // namespace

PyObject* dtype_object(ScalarType t) {
  PyObject* o = g_dtypes.at(static_cast<size_t>(t));
  Py_INCREF(o);
  return o;
}

PyObject* device_object(Device d) { return py::cast(d).release().ptr(); }

PyObject* make_size(IntArrayRef sizes) {
  PyObject* t = PyTuple_New(static_cast<Py_ssize_t>(sizes.size()));
  if (!t) return nullptr;
  for (size_t i = 0; i < sizes.size(); ++i) PyTuple_SET_ITEM(t, i, PyLong_FromLongLong(sizes[i]));
  if (!g_size_class) return t;
  PyObject* s = PyObject_CallOneArg(g_size_class, t);
  Py_DECREF(t);
  return s;
}

bool parse_dtype(PyObject* obj, ScalarType* out) {
  for (int i = 0; i < kNumScalarTypes; ++i) {
    if (obj == g_dtypes[i]) {
      *out = static_cast<ScalarType>(i);
      return true;
    }
  }
  return false;
}

namespace {
DeviceType default_accelerator() {
  for (DeviceType t : {DeviceType::PrivateUse1, DeviceType::PrivateUse2, DeviceType::PrivateUse3}) {
    if (is_backend_renamed(t)) return t;
  }
  return DeviceType::PrivateUse1;
}
}  // namespace

bool parse_device(PyObject* obj, Device* out) {
  py::handle h(obj);
  if (py::isinstance<Device>(h)) {
    *out = h.cast<Device>();
    return true;
  }
  if (PyUnicode_Check(obj)) {
    *out = Device::parse(h.cast<std::string>());
    return true;
  }
  if (PyLong_Check(obj) && !PyBool_Check(obj)) {
    long long index = PyLong_AsLongLong(obj);
    SDK_CHECK_VALUE(index >= 0 && index < 128, "Invalid device index ", index, ": must be in [0, 127]");
    *out = Device(default_accelerator(), static_cast<int8_t>(index));
    return true;
  }
  return false;
}

void init_core(py::module_& m) {
  // ---- dtype ----
  py::class_<DType>(m, "dtype", "A tensor element type, like torch.dtype (backend_sdk.float32, ...).")
      .def_property_readonly("itemsize", [](const DType& d) { return element_size(d.type); },
                             "Bytes per element.")
      .def_property_readonly("is_floating_point", [](const DType& d) { return is_floating_type(d.type); },
                             "True for float16, bfloat16, float32 and float64.")
      .def_property_readonly("is_signed", [](const DType& d) { return is_signed_type(d.type); },
                             "False for bool and uint8.")
      .def_property_readonly("_id", [](const DType& d) { return static_cast<int>(d.type); })
      .def_property_readonly("name", [](const DType& d) { return std::string(scalar_type_name(d.type)); })
      .def("__repr__", [](const DType& d) { return std::string("backend_sdk.") + scalar_type_name(d.type); })
      .def("__reduce__", [](const DType& d) { return std::string(scalar_type_name(d.type)); });
  for (int i = 0; i < kNumScalarTypes; ++i) {
    auto t = static_cast<ScalarType>(i);
    py::object o = py::cast(DType{t});
    g_dtypes[i] = o.release().ptr();  // immortal: dtype identity is compared by pointer
    m.add_object(scalar_type_name(t), py::handle(g_dtypes[i]));
  }
  m.def("_promote_types", [](py::handle a, py::handle b) {
    ScalarType ta, tb;
    SDK_CHECK_TYPE(parse_dtype(a.ptr(), &ta) && parse_dtype(b.ptr(), &tb), "promote_types(): expected two dtypes");
    return py::reinterpret_steal<py::object>(dtype_object(promote_types(ta, tb)));
  });
  m.def("_get_default_dtype", [] { return py::reinterpret_steal<py::object>(dtype_object(default_dtype())); });
  m.def("_set_default_dtype", [](py::handle d) {
    ScalarType t;
    SDK_CHECK_TYPE(parse_dtype(d.ptr(), &t), "set_default_dtype(): expected a dtype, got ",
                   std::string(py::str(py::type::handle_of(d).attr("__name__"))));
    set_default_dtype(t);
  });

  // ---- device ----
  py::class_<Device>(m, "device",
                     "A device: a type ('cpu', 'meta', or a renamed backend such as 'accel') and an optional index.")
      .def(py::init([](py::handle spec, std::optional<int64_t> index) {
             Device d;
             if (!parse_device(spec.ptr(), &d)) {
               throw py::type_error("device(): expected a string, a device or an int, got " +
                                    std::string(py::str(py::type::handle_of(spec).attr("__name__"))));
             }
             if (index) {
               SDK_CHECK_VALUE(!d.has_index(), "device(): type (string) must not include an index because index "
                               "was passed explicitly: ", d.str());
               SDK_CHECK_VALUE(*index >= 0 && *index < 128, "Device index must not be negative, got ", *index);
               d.index = static_cast<int8_t>(*index);
             }
             return d;
           }),
           py::arg("type"), py::arg("index") = py::none())
      .def_property_readonly("type", [](const Device& d) { return device_type_name(d.type); },
                             "The device type's name ('cpu', 'accel').")
      .def_property_readonly("index",
                             [](const Device& d) -> py::object {
                               return d.has_index() ? py::object(py::int_(d.index)) : py::object(py::none());
                             },
                             "The device index, or None for 'the current device'.")
      .def("__str__", &Device::str)
      .def("__repr__",
           [](const Device& d) {
             std::string out = "device(type='" + device_type_name(d.type) + "'";
             if (d.has_index()) out += ", index=" + std::to_string(d.index);
             return out + ")";
           })
      .def("__eq__", [](const Device& a, py::handle b) {
        Device other;
        if (py::isinstance<Device>(b)) return a == b.cast<Device>();
        if (PyUnicode_Check(b.ptr())) {
          try {
            return a == Device::parse(b.cast<std::string>());
          } catch (const Error&) {
            return false;
          }
        }
        return false;
      })
      .def("__hash__", [](const Device& d) { return std::hash<Device>()(d); })
      .def_property_readonly("_device_type_id", [](const Device& d) { return static_cast<int>(d.type); });
  py::implicitly_convertible<py::str, Device>();

  m.def("_set_size_class", [](py::object cls) {
    cls.inc_ref();
    g_size_class = cls.ptr();
  });

  // ---- backend names ----
  m.def(
      "_rename_privateuse_backend",
      [](int which, const std::string& name) {
        SDK_CHECK_VALUE(which >= 1 && which <= 3, "which must be 1, 2 or 3");
        rename_privateuse_backend(static_cast<DeviceType>(static_cast<int>(DeviceType::PrivateUse1) + which - 1),
                                  name);
      },
      py::arg("which"), py::arg("name"));
  m.def(
      "_get_privateuse_backend_name",
      [](int which) {
        SDK_CHECK_VALUE(which >= 1 && which <= 3, "which must be 1, 2 or 3");
        return device_type_name(static_cast<DeviceType>(static_cast<int>(DeviceType::PrivateUse1) + which - 1));
      },
      py::arg("which"));
  m.def(
      "_get_privateuse1_backend_name", [] { return device_type_name(DeviceType::PrivateUse1); },
      "The current name of PrivateUse1 (torch._C._get_privateuse1_backend_name): \"privateuseone\" until renamed.");
  m.def("_valid_device_types", &valid_device_type_names);

  // ---- dispatch keys ----
  py::class_<PyDispatchKeySet>(m, "DispatchKeySet", "A set of dispatch keys (c10's DispatchKeySet).")
      .def(py::init([](const std::vector<std::string>& keys) {
             DispatchKeySet ks;
             for (const auto& k : keys) ks = ks | runtime_key_set_for(parse_dispatch_key(k));
             return PyDispatchKeySet{ks};
           }),
           py::arg("keys") = std::vector<std::string>{})
      .def("__or__", [](const PyDispatchKeySet& a, const PyDispatchKeySet& b) { return PyDispatchKeySet{a.ks | b.ks}; })
      .def("__and__", [](const PyDispatchKeySet& a, const PyDispatchKeySet& b) { return PyDispatchKeySet{a.ks & b.ks}; })
      .def("__sub__", [](const PyDispatchKeySet& a, const PyDispatchKeySet& b) { return PyDispatchKeySet{a.ks - b.ks}; })
      .def("__eq__", [](const PyDispatchKeySet& a, const PyDispatchKeySet& b) { return a.ks == b.ks; })
      .def("has", [](const PyDispatchKeySet& a, const std::string& k) { return a.ks.has(parse_dispatch_key(k)); },
           "True if the runtime key is in the set.")
      .def("highest_priority_key", [](const PyDispatchKeySet& a) { return to_string(a.ks.highest_priority_key()); })
      .def("remove", [](const PyDispatchKeySet& a, const std::string& k) {
        return PyDispatchKeySet{a.ks.remove(parse_dispatch_key(k))};
      })
      .def("add", [](const PyDispatchKeySet& a, const std::string& k) {
        return PyDispatchKeySet{a.ks | runtime_key_set_for(parse_dispatch_key(k))};
      })
      .def("keys_after", [](const PyDispatchKeySet& a, const std::string& k) {
        return PyDispatchKeySet{a.ks & keys_after(parse_dispatch_key(k))};
      }, "The keys of this set that come after key k in priority order (for redispatch).")
      .def("dispatch_table_index", [](const PyDispatchKeySet& a) { return a.ks.dispatch_table_index(); })
      .def_property_readonly("raw_repr", [](const PyDispatchKeySet& a) { return a.ks.raw_repr(); })
      .def("__repr__", [](const PyDispatchKeySet& a) { return a.ks.str(); });
  m.def("_dispatch_key_name", [](const std::string& k) { return to_string(parse_dispatch_key(k)); });
  m.def("_dispatch_runtime_keys", [](const std::string& k) {
    return PyDispatchKeySet{runtime_key_set_for(parse_dispatch_key(k))};
  });
  m.def("_dispatch_tls_local_include_set", [] { return PyDispatchKeySet{tls_local_dispatch_key_set().included}; });
  m.def("_dispatch_tls_local_exclude_set", [] { return PyDispatchKeySet{tls_local_dispatch_key_set().excluded}; });

  // RAII guards as context managers; restore on exit even after an exception.
  struct KeyGuard {
    DispatchKeySet keys;
    bool include;
    std::optional<LocalDispatchKeySet> saved;
  };
  py::class_<KeyGuard>(m, "_DispatchKeyGuard")
      .def(py::init([](const PyDispatchKeySet& ks, bool include) { return KeyGuard{ks.ks, include, std::nullopt}; }))
      .def("__enter__",
           [](KeyGuard& g) {
             SDK_CHECK(!g.saved, "a dispatch key guard cannot be entered twice");
             g.saved = tls_local_dispatch_key_set();
             LocalDispatchKeySet next = *g.saved;
             if (g.include) next.included = next.included | g.keys;
             else next.excluded = next.excluded | g.keys;
             tls_set_local_dispatch_key_set(next);
           })
      .def("__exit__", [](KeyGuard& g, py::args) {
        if (g.saved) tls_set_local_dispatch_key_set(*g.saved);
        g.saved.reset();
        return false;
      });
}

}  // namespace sdk::python
