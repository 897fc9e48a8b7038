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
// never behaviour. backend_sdk.zeros and ones are C functions themselves
// (_filled_factory below: the Python frame cost as much as the factory), and
// fill_'s CPU kernel writes a small contiguous tensor without a TensorIterator
// (Note [Small contiguous fill], ops/Fill.cpp).
#include <Python.h>

#include <optional>

#include <backend_sdk/core/DimVector.h>
#include <backend_sdk/ops/Functions.h>

#include "python/Errors.h"
#include "python/PyCore.h"
#include "python/PyTensor.h"

namespace sdk::python {
namespace {

// Sizes from the n arguments of zeros(*size): zeros(2, 3), or one tuple or list, zeros((2, 3)); false for
// anything but non-negative plain ints.
bool parse_size_args(PyObject* const* args, Py_ssize_t n, DimVector* out) {
  PyObject* const* items = args;
  if (n == 1 && (PyTuple_Check(args[0]) || PyList_Check(args[0]))) {
    n = PySequence_Fast_GET_SIZE(args[0]);
    items = PySequence_Fast_ITEMS(args[0]);
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (!PyLong_CheckExact(items[i])) return false;  // bool, np.int64, SymInt: the Python path
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(items[i], &overflow);
    if (overflow || v < 0) return false;
    out->push_back(static_cast<int64_t>(v));
  }
  return true;
}

// Sizes from `size` (the *size tuple of zeros(*size)).
bool parse_sizes(PyObject* size, DimVector* out) {
  return PyTuple_Check(size) && parse_size_args(&PyTuple_GET_ITEM(size, 0), PyTuple_GET_SIZE(size), out);
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

// ---- zeros and ones themselves (Note [Factory fast path]) ----
// backend_sdk.zeros / ones are these C functions: a Python function's frame and its six keyword-only
// defaults (looked up one by one in its __kwdefaults__ on every call) cost as much as the factory
// itself. A call with sizes of plain ints and no keyword but dtype, device and requires_grad=False
// is made here; any other call (out=, layout=, pin_memory=, requires_grad=True, other sizes, an
// unknown keyword) goes to the Python function registered for it (_factories._zeros / _ones), with
// the same arguments, which raises the errors.
PyObject* g_general[2] = {nullptr, nullptr};  // [value]: the Python zeros and ones; kept for the process

bool keyword_is(PyObject* key, const char* name) {
  return PyUnicode_CompareWithASCIIString(key, name) == 0;
}

PyObject* filled_factory(int value, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  SDK_HANDLE_ERRORS_BEGIN
  PyObject* dtype_obj = Py_None;
  PyObject* device_obj = Py_None;
  bool plain = true;
  const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nkw && plain; ++k) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, k);
    PyObject* v = args[nargs + k];
    if (keyword_is(key, "dtype")) {
      dtype_obj = v;
    } else if (keyword_is(key, "device")) {
      device_obj = v;
    } else {
      plain = keyword_is(key, "requires_grad") && v == Py_False;
    }
  }
  DimVector sizes;
  std::optional<ScalarType> dtype;
  std::optional<Device> device;
  if (plain && parse_size_args(args, nargs, &sizes) && parse_options(dtype_obj, device_obj, &dtype, &device)) {
    return make_filled(sizes, Scalar(int64_t{value}), dtype, device);
  }
  SDK_HANDLE_ERRORS_END(nullptr)
  if (g_general[value] == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "backend_sdk._factories has not registered its zeros/ones");
    return nullptr;
  }
  return PyObject_Vectorcall(g_general[value], args, static_cast<size_t>(nargs), kwnames);
}

PyObject* zeros_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return filled_factory(0, args, nargs, kwnames);
}
PyObject* ones_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return filled_factory(1, args, nargs, kwnames);
}

PyMethodDef g_entry_defs[2] = {
    {"zeros", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(zeros_entry)), METH_FASTCALL | METH_KEYWORDS,
     "zeros(*size, *, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False) -> "
     "Tensor\n\nA tensor of zeros of the given size (ints, or one sequence of ints)."},
    {"ones", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(ones_entry)), METH_FASTCALL | METH_KEYWORDS,
     "ones(*size, *, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False) -> "
     "Tensor\n\nA tensor of ones of the given size (ints, or one sequence of ints)."},
};

// _filled_factory(name, general) -> the C zeros or ones, falling back to `general` (Python's).
PyObject* filled_factory_binding(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2 || !PyUnicode_Check(args[0]) || !PyCallable_Check(args[1])) {
    PyErr_SetString(PyExc_TypeError, "_filled_factory(name, general): a name ('zeros' or 'ones') and a callable");
    return nullptr;
  }
  const int value = keyword_is(args[0], "zeros") ? 0 : keyword_is(args[0], "ones") ? 1 : -1;
  if (value < 0) {
    PyErr_SetString(PyExc_ValueError, "_filled_factory: name must be 'zeros' or 'ones'");
    return nullptr;
  }
  PyObject* module = PyUnicode_FromString("backend_sdk");
  if (module == nullptr) return nullptr;
  PyObject* fn = PyCFunction_NewEx(&g_entry_defs[value], nullptr, module);
  Py_DECREF(module);
  if (fn == nullptr) return nullptr;
  Py_INCREF(args[1]);
  Py_XSETREF(g_general[value], args[1]);
  return fn;
}

PyMethodDef g_factory_methods[] = {
    {"_filled_factory", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(filled_factory_binding)),
     METH_FASTCALL,
     "_filled_factory(name, general): backend_sdk.zeros or ones as a C function that makes plain calls itself "
     "and passes every other call to general (Note [Factory fast path])."},
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
