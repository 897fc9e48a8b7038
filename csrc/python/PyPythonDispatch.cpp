// See Note [Python key tensors] (PyPythonDispatch.h) and Note [Python dispatch]
// (backend_sdk/_python_dispatch_impl.py).
#include "python/PyPythonDispatch.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <mutex>
#include <optional>
#include <vector>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/dispatch/LocalDispatchKeySet.h>
#include <backend_sdk/dispatch/RecordFunction.h>
#include <backend_sdk/ops/Factories.h>
#include <backend_sdk/ops/detail/Autograd.h>
#include <backend_sdk/runtime/DeviceGuard.h>
#include "python/PyArgs.h"
#include "python/PyCore.h"
#include "python/PyTensor.h"

namespace py = pybind11;

namespace sdk::python {

bool has_python_key(const Tensor& t) { return t.key_set().has(DispatchKey::Python); }

PyTypeObject* take_parked_python_class(const Tensor& t) {
  if (!has_python_key(t)) return nullptr;
  auto* m = autograd::maybe_autograd_meta(t);
  if (m == nullptr || m->py_state == nullptr) return nullptr;
  PyObject* state = static_cast<PyObject*>(m->py_state);
  if (!PyDict_Check(state)) return nullptr;
  PyObject* cls = PyDict_GetItemString(state, kPythonClassKey);  // borrowed
  if (cls == nullptr || !PyType_Check(cls)) return nullptr;
  Py_INCREF(cls);
  if (PyDict_DelItemString(state, kPythonClassKey) < 0) PyErr_Clear();
  return reinterpret_cast<PyTypeObject*>(cls);
}

namespace {

// Elements a storage needs for these sizes, strides and offset (0 when a size is 0).
int64_t storage_extent(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, int64_t offset) {
  int64_t extent = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) return 0;
    int64_t step = 0;
    SDK_CHECK_VALUE(!__builtin_mul_overflow(sizes[i] - 1, strides[i], &step) &&
                        !__builtin_add_overflow(extent, step, &extent),
                    "_make_wrapper_subclass(): the sizes and strides overflow int64");
  }
  SDK_CHECK_VALUE(!__builtin_add_overflow(extent, offset, &extent),
                  "_make_wrapper_subclass(): storage_offset overflows int64");
  return extent;
}

py::object make_python_key_tensor(py::handle cls, std::vector<int64_t> sizes, std::optional<std::vector<int64_t>> strides,
                                  std::optional<int64_t> storage_offset, py::handle dtype, py::handle device,
                                  bool requires_grad) {
  SDK_CHECK_TYPE(PyType_Check(cls.ptr()) &&
                     PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls.ptr()), g_tensor_base_type),
                 "_make_wrapper_subclass(): cls must be a subclass of backend_sdk.Tensor, got ",
                 std::string(py::str(py::repr(cls))));
  for (int64_t s : sizes) {
    SDK_CHECK_VALUE(s >= 0, "_make_wrapper_subclass(): negative dimension ", s, " in size");
  }
  std::vector<int64_t> st;
  if (strides) {
    st = *strides;
    SDK_CHECK_VALUE(st.size() == sizes.size(), "_make_wrapper_subclass(): strides has ", st.size(),
                    " entries but size has ", sizes.size());
    for (int64_t s : st) SDK_CHECK_VALUE(s >= 0, "_make_wrapper_subclass(): negative stride ", s);
  } else {
    st.assign(sizes.size(), 1);
    for (size_t i = sizes.size(); i-- > 1;) st[i - 1] = st[i] * std::max<int64_t>(sizes[i], 1);
  }
  int64_t offset = storage_offset.value_or(0);
  SDK_CHECK_VALUE(offset >= 0, "_make_wrapper_subclass(): negative storage_offset ", offset);
  ScalarType scalar_type = default_dtype();
  if (!dtype.is_none()) {
    SDK_CHECK_TYPE(parse_dtype(dtype.ptr(), &scalar_type), "_make_wrapper_subclass(): dtype must be a dtype, got ",
                   std::string(py::str(py::repr(dtype))));
  }
  Device dev(DeviceType::CPU);
  if (!device.is_none()) {
    SDK_CHECK_TYPE(parse_device(device.ptr(), &dev), "_make_wrapper_subclass(): device must be a device, got ",
                   std::string(py::str(py::repr(device))));
  }
  if (dev.type != DeviceType::CPU && dev.type != DeviceType::Meta) dev = runtime::resolve_device(dev, "_make_wrapper_subclass");
  if (requires_grad) {
    SDK_CHECK(is_floating_type(scalar_type),
              "_make_wrapper_subclass(): only Tensors of floating point dtype can require gradients, got ",
              scalar_type_name(scalar_type));
  }
  // The storage: meta memory (none) of the extent the view needs, so that storage-size queries are sane.
  Tensor meta = ops::empty_on(Device(DeviceType::Meta), {storage_extent(sizes, st, offset)}, scalar_type,
                              std::nullopt, std::nullopt);
  auto impl = make_intrusive<TensorImpl>(meta.storage(), scalar_type, dev,
                                         default_tensor_key_set(dev.type) | DispatchKeySet(DispatchKey::Python));
  impl->set_sizes_and_strides(sizes, st, offset);
  Tensor t(std::move(impl));
  // Every Python key tensor has an AutogradMeta, where its class is parked (Note [Python key tensors]).
  autograd::autograd_meta_of(t);
  autograd::set_requires_grad(t, requires_grad);

  auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  PyObject* obj = type->tp_alloc(type, 0);
  if (!obj) throw py::error_already_set();
  auto* pt = reinterpret_cast<PyTensor*>(obj);
  new (&pt->tensor) Tensor(std::move(t));
  pt->tensor.impl()->set_pyobj(obj);
  return py::reinterpret_steal<py::object>(obj);
}

// Note [Python key fallback]
// The Python key's boxed fallback, in C++ so that a call costs what the Python handler needs and
// little else (a passthrough mode's a + b was 12.5 us against 0.55 plain through the generic
// Python fallback): it builds no DispatchKeySet object (the handler never reads it) and finds the
// overloaded types (Note [Python dispatch] step 1) on the popped arguments here, with no Python
// frame; with only a mode active (no argument carries the Python key) that is a key-set bit test
// per tensor. It calls fn(op, types, args, kwargs) -- _python_key_fallback -- with the GIL held.
struct PythonKeyFallback final : OperatorKernel {
  explicit PythonKeyFallback(py::object f) : fn(std::move(f)) {}
  py::object fn;
};

PyObject* torch_dispatch_name() {
  static PyObject* name = PyUnicode_InternFromString("__torch_dispatch__");  // immortal
  return name;
}

// Adds obj's class to `found` if obj is a tensor carrying the Python key whose class defines
// __torch_dispatch__; a subclass goes before its first base already there, otherwise in order.
void add_overloaded(std::vector<PyTypeObject*>& found, PyObject* obj) {
  if (!is_tensor(obj) || !has_python_key(unpack_tensor(obj))) return;
  PyTypeObject* cls = Py_TYPE(obj);
  for (PyTypeObject* f : found) {
    if (f == cls) return;
  }
  PyObject* handler = _PyType_Lookup(cls, torch_dispatch_name());  // borrowed; no exception set
  if (handler == nullptr || handler == Py_None) return;
  for (size_t i = 0; i < found.size(); ++i) {
    if (PyType_IsSubtype(cls, found[i])) {
      found.insert(found.begin() + static_cast<std::ptrdiff_t>(i), cls);
      return;
    }
  }
  found.push_back(cls);
}

void add_overloaded_value(std::vector<PyTypeObject*>& found, PyObject* v) {
  if (PyList_Check(v) || PyTuple_Check(v)) {  // Tensor[] / Tensor?[]: never deeper
    PyObject* seq = v;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject** items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < n; ++i) add_overloaded(found, items[i]);
  } else {
    add_overloaded(found, v);
  }
}

// Note [Wrapped numbers in handlers]
// A Python number passed where the schema takes a Tensor (x + 1 -> add.Tensor) travels as a
// wrapped-number tensor (wrapped_scalar_tensor, tensor/Tensor.cpp). PyTorch hands it to
// __torch_dispatch__ handlers as the Python number again (aten.add.Tensor(x, 1)), so handlers
// that test isinstance(arg, Tensor) or log the arguments see what the caller wrote; calling
// func(...) with the number wraps it again.
void unwrap_number(PyObject** slot) {
  if (!is_tensor(*slot)) return;
  std::optional<Scalar> number = wrapped_number(unpack_tensor(*slot));
  if (!number) return;
  PyObject* obj = from_ivalue(IValue(*number));
  if (obj == nullptr) throw py::error_already_set();
  Py_SETREF(*slot, obj);
}

void unwrap_numbers(py::list& args, py::dict& kwargs) {
  PyObject** items = PySequence_Fast_ITEMS(args.ptr());
  for (Py_ssize_t i = 0, n = PyList_GET_SIZE(args.ptr()); i < n; ++i) unwrap_number(&items[i]);
  if (kwargs.empty()) return;
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (PyDict_Next(kwargs.ptr(), &pos, &key, &value)) {
    PyObject* v = value;
    Py_INCREF(v);
    unwrap_number(&v);
    if (v != value && PyDict_SetItem(kwargs.ptr(), key, v) != 0) {  // replacing a value keeps the dict's size
      Py_DECREF(v);
      throw py::error_already_set();
    }
    Py_DECREF(v);
  }
}

void python_key_fallback_boxed(OperatorKernel* functor, const OperatorHandle& op, DispatchKeySet, Stack* stack) {
  auto* k = static_cast<PythonKeyFallback*>(functor);
  if (profiler::record_function_active()) {  // Note [Record function]: which fallback ran
    profiler::mark_current(profiler::kEventPythonKernel | profiler::kEventFallback, "Python");
  }
  py::gil_scoped_acquire gil;
  const FunctionSchema& schema = op.schema();
  auto [args, kwargs] = pop_arguments_for_python(op, stack);  // Note [Handler arguments]
  unwrap_numbers(args, kwargs);
  std::vector<PyTypeObject*> found;
  for (py::handle a : args) add_overloaded_value(found, a.ptr());
  if (!kwargs.empty()) {
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(kwargs.ptr(), &pos, &key, &value)) add_overloaded_value(found, value);
  }
  py::tuple types(found.size());
  for (size_t i = 0; i < found.size(); ++i) {
    types[i] = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(found[i]));
  }
  py::object result = k->fn(op_overload_object(op), types, py::tuple(args), kwargs);
  push_returns_from_python(schema, result, stack);
}

}  // namespace

void init_python_dispatch(py::module_& m) {
  m.def(
      "_set_python_key_fallback",
      [](py::object fn) {
        SDK_CHECK_TYPE(PyCallable_Check(fn.ptr()), "_set_python_key_fallback(): fn must be callable");
        static std::mutex mu;
        std::lock_guard<std::mutex> lock(mu);
        // Immortal, as the fallback it holds (Note [Python key fallback]): replaced only by a reload.
        static Library* lib = nullptr;
        delete lib;  // NOLINT: a second call (a test reloading the module) replaces the registration
        lib = new Library(Library::IMPL, "_", DispatchKey::Python, __FILE__, __LINE__);
        lib->fallback(CppFunction::make_from_boxed(&python_key_fallback_boxed,
                                                   std::make_shared<PythonKeyFallback>(std::move(fn))));
      },
      py::arg("fn"), "Installs fn(op, types, args, kwargs) as the Python dispatch key's fallback.");
  m.def("_make_python_key_tensor", &make_python_key_tensor, py::arg("cls"), py::arg("size"), py::arg("strides"),
        py::arg("storage_offset"), py::arg("dtype"), py::arg("device"), py::arg("requires_grad"),
        "A data-less instance of cls carrying the Python key (Note [Python key tensors]); "
        "Tensor._make_wrapper_subclass is its public face.");
  // Note [Python dispatch] (backend_sdk/_python_dispatch_impl.py): the mode stack owns the Python key's
  // place in this thread's included set; a plain set (no guard object) keeps a mode's handler cheap.
  m.def(
      "_set_python_dispatch_included",
      [](bool included) {
        LocalDispatchKeySet tls = tls_local_dispatch_key_set();
        const DispatchKeySet python(DispatchKey::Python);
        tls.included = included ? (tls.included | python) : (tls.included - python);
        tls_set_local_dispatch_key_set(tls);
      },
      py::arg("included"), "Adds or removes the Python key in this thread's included dispatch keys.");
  // Note [Grad mode and the Autograd keys] (autograd/Fallback.cpp): the Python recording hook runs an
  // operator below Autograd this way, leaving grad mode (and so what a handler below sees) unchanged.
  m.def(
      "_exclude_autograd",
      [](bool excluded) {
        LocalDispatchKeySet tls = tls_local_dispatch_key_set();
        const DispatchKeySet k(DispatchKey::AutogradFunctionality);
        const bool prev = tls.excluded.has(DispatchKey::AutogradFunctionality);
        if (prev != excluded) {
          tls.excluded = excluded ? (tls.excluded | k) : (tls.excluded - k);
          tls_set_local_dispatch_key_set(tls);
        }
        return prev;
      },
      py::arg("excluded"),
      "Excludes (or no longer excludes) the Autograd keys on this thread without changing grad mode; returns "
      "whether they were excluded before.");
  // return_and_correct_aliasing (backend_sdk/utils/_python_dispatch.py): a view op's wrapper output shares
  // its input's storage, an in-place view op's wrapper takes the inner result's geometry. Only for
  // wrapper subclass tensors: their storage holds no data (Note [Python key tensors]).
  m.def(
      "_python_key_alias_storage",
      [](const Tensor& ret, const Tensor& src) {
        SDK_CHECK_TYPE(has_python_key(ret) && has_python_key(src),
                       "return_and_correct_aliasing(): storages are aliased between wrapper subclass tensors only");
        ret.impl()->set_storage(src.impl()->storage());
      },
      py::arg("ret"), py::arg("src"), "ret's storage becomes src's (both wrapper subclass tensors).");
  m.def(
      "_python_key_set_geometry",
      [](const Tensor& t, std::vector<int64_t> sizes, std::vector<int64_t> strides, int64_t storage_offset) {
        SDK_CHECK_TYPE(has_python_key(t), "return_and_correct_aliasing(): only a wrapper subclass tensor's "
                       "metadata is set this way");
        SDK_CHECK_VALUE(sizes.size() == strides.size() && storage_offset >= 0,
                        "return_and_correct_aliasing(): invalid geometry");
        for (size_t i = 0; i < sizes.size(); ++i) {
          SDK_CHECK_VALUE(sizes[i] >= 0 && strides[i] >= 0, "return_and_correct_aliasing(): invalid geometry");
        }
        t.impl()->set_sizes_and_strides(sizes, strides, storage_offset);
      },
      py::arg("tensor"), py::arg("sizes"), py::arg("strides"), py::arg("storage_offset"),
      "Sets a wrapper subclass tensor's sizes, strides and offset (an in-place view op ran on its data).");
  m.def(
      "_has_python_key", [](py::handle obj) { return is_tensor(obj.ptr()) && has_python_key(unpack_tensor(obj.ptr())); },
      py::arg("obj"), "True if obj is a tensor carrying the Python dispatch key.");
}

}  // namespace sdk::python
