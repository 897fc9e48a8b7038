// The C++ fast path of the filled factories (zeros, ones, zeros_like,
// ones_like, full_like: backend_sdk/_factories.py).
//
// Note [Factory fast path]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// `zeros(3)` in Python was two operator calls from Python (empty.memory_format,
// fill_.Scalar: argument binding of each schema, two Tensor wrappers), the
// size parsing of _sizes and a version reset: 1.0-1.9x torch's zeros(3). Here
// one METH_FASTCALL function makes the same two dispatcher calls from C++
// (sdk::ops::empty and fill_, so every dispatch key, mode and profiler sees
// what it saw before) and resets the version (a factory hands out version 0,
// _factories._new). It takes only the common call shapes, sizes of plain ints
// (zeros(2, 3), zeros((2, 3)), zeros([2, 3])), a dtype or None, a device or
// None, and returns None for anything else (a negative size, an np.int64, a
// SymInt, a bad device string, a batched or non-contiguous source) so that the
// Python path runs and raises its own errors: the fast path can change speed,
// never behaviour.
#include <Python.h>

#include <optional>

#include <backend_sdk/core/DimVector.h>
#include <backend_sdk/ops/Functions.h>

#include "python/Errors.h"
#include "python/PyCore.h"
#include "python/PyTensor.h"

namespace sdk::python {
namespace {

// Sizes from `size` (the *size tuple of zeros(*size)); false for anything but non-negative plain ints.
bool parse_sizes(PyObject* size, DimVector* out) {
  if (!PyTuple_Check(size)) return false;
  PyObject* seq = size;
  if (PyTuple_GET_SIZE(size) == 1) {
    PyObject* only = PyTuple_GET_ITEM(size, 0);
    if (PyTuple_Check(only) || PyList_Check(only)) seq = only;
  }
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  PyObject** items = PySequence_Fast_ITEMS(seq);
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (!PyLong_CheckExact(items[i])) return false;  // bool, np.int64, SymInt: the Python path
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(items[i], &overflow);
    if (overflow || v < 0) return false;
    out->push_back(static_cast<int64_t>(v));
  }
  return true;
}

bool parse_value(PyObject* obj, Scalar* out) {
  if (PyLong_CheckExact(obj)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow) return false;
    *out = Scalar(static_cast<int64_t>(v));
    return true;
  }
  if (PyFloat_CheckExact(obj)) {
    *out = Scalar(PyFloat_AS_DOUBLE(obj));
    return true;
  }
  return false;
}

// dtype / device: None or what parse_dtype / parse_device accept; false (no error set) otherwise.
bool parse_options(PyObject* dtype_obj, PyObject* device_obj, std::optional<ScalarType>* dtype,
                   std::optional<Device>* device) {
  if (dtype_obj != Py_None) {
    ScalarType t;
    if (!parse_dtype(dtype_obj, &t)) return false;
    *dtype = t;
  }
  if (device_obj != Py_None) {
    Device d;
    bool ok = parse_device(device_obj, &d);
    if (PyErr_Occurred()) {
      PyErr_Clear();  // the Python path raises its own error for it
      return false;
    }
    if (!ok) return false;
    *device = d;
  }
  return true;
}

PyObject* make_filled(IntArrayRef sizes, const Scalar& value, std::optional<ScalarType> dtype,
                      std::optional<Device> device) {
  Tensor t = ops::empty(sizes, dtype, device);
  ops::fill_(t, value);
  t.storage()->reset_version();  // a factory's fill is part of making it (_factories._new)
  return wrap_tensor(std::move(t));
}

// _new_filled(size, value, dtype, device) -> Tensor | None (Note [Factory fast path]).
PyObject* new_filled(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  SDK_HANDLE_ERRORS_BEGIN
  if (nargs != 4) {
    PyErr_SetString(PyExc_TypeError, "_new_filled(size, value, dtype, device) takes 4 arguments");
    return nullptr;
  }
  DimVector sizes;
  Scalar value;
  std::optional<ScalarType> dtype;
  std::optional<Device> device;
  if (!parse_sizes(args[0], &sizes) || !parse_value(args[1], &value) ||
      !parse_options(args[2], args[3], &dtype, &device)) {
    Py_RETURN_NONE;
  }
  return make_filled(sizes, value, dtype, device);
  SDK_HANDLE_ERRORS_END(nullptr)
}

// _new_filled_like(t, value, dtype, device) -> Tensor | None: t's sizes, dtype and device unless
// given, for a contiguous, unbatched t (preserve_format of a contiguous source is contiguous).
PyObject* new_filled_like(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  SDK_HANDLE_ERRORS_BEGIN
  if (nargs != 4) {
    PyErr_SetString(PyExc_TypeError, "_new_filled_like(t, value, dtype, device) takes 4 arguments");
    return nullptr;
  }
  if (!is_tensor(args[0])) Py_RETURN_NONE;
  const Tensor& t = unpack_tensor(args[0]);
  Scalar value;
  std::optional<ScalarType> dtype;
  std::optional<Device> device;
  if (!t.defined() || t.key_set().has(DispatchKey::FuncTorchBatched) || !t.is_contiguous() ||
      !parse_value(args[1], &value) || !parse_options(args[2], args[3], &dtype, &device)) {
    Py_RETURN_NONE;
  }
  return make_filled(t.sizes(), value, dtype ? dtype : std::optional<ScalarType>(t.dtype()),
                     device ? device : std::optional<Device>(t.device()));
  SDK_HANDLE_ERRORS_END(nullptr)
}

PyMethodDef g_factory_methods[] = {
    {"_new_filled", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(new_filled)), METH_FASTCALL,
     "_new_filled(size, value, dtype, device): empty + fill_ for plain int sizes, None when the call needs the "
     "Python path (Note [Factory fast path])."},
    {"_new_filled_like", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(new_filled_like)),
     METH_FASTCALL,
     "_new_filled_like(t, value, dtype, device): empty + fill_ shaped like a contiguous, unbatched t, None "
     "otherwise (Note [Factory fast path])."},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

void init_factories(pybind11::module_& m) {
  if (PyModule_AddFunctions(m.ptr(), g_factory_methods) != 0) throw pybind11::error_already_set();
}

}  // namespace sdk::python
