// The Python tensor type: backend_sdk._C.TensorBase, a raw CPython type.
//
// Note [Python tensor objects]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// TensorBase is a hand-written CPython type (not a pybind11 class) because it
// is on every call's path: wrapping a result must cost one allocation, and
// `a + b` must reach the dispatcher through a C slot. The Python class
// backend_sdk.Tensor subclasses it and is registered with _set_tensor_class;
// new wrappers are instances of that class. Each TensorImpl has at most one
// wrapper (see Note [Python object back-pointer]).
#pragma once

#include <Python.h>

#include <optional>
#include <pybind11/pybind11.h>

#include <backend_sdk/tensor/Tensor.h>

namespace sdk::python {

struct PyTensor {
  PyObject_HEAD
  Tensor tensor;
  PyObject* weakreflist;
};

extern PyTypeObject* g_tensor_base_type;

inline bool is_tensor(PyObject* obj) { return PyObject_TypeCheck(obj, g_tensor_base_type); }
inline const Tensor& unpack_tensor(PyObject* obj) { return reinterpret_cast<PyTensor*>(obj)->tensor; }
// New reference to the wrapper of t (the existing one if any); Py_None for an undefined tensor.
PyObject* wrap_tensor(Tensor t);

void init_tensor(pybind11::module_& m);

// The Python number a wrapped-number tensor stands for (a CPU tensor made by wrapped_scalar_tensor
// from an int, float or bool: Int64, Float64 or Bool); nullopt for any other tensor.
std::optional<Scalar> wrapped_number(const Tensor& t);

// x[index]: TensorBase's mp_subscript and sq_item slots (PyIndexing.cpp, Note [Indexing fast path]).
PyObject* tensor_getitem(PyObject* self, PyObject* index);
PyObject* tensor_sq_item(PyObject* self, Py_ssize_t i);
void init_indexing(pybind11::module_& m);

}  // namespace sdk::python

// pybind11 conversions for sdk::Tensor, through the raw type.
namespace pybind11::detail {
template <>
struct type_caster<sdk::Tensor> {
 public:
  PYBIND11_TYPE_CASTER(sdk::Tensor, const_name("Tensor"));
  bool load(handle src, bool) {
    if (!sdk::python::is_tensor(src.ptr())) return false;
    value = sdk::python::unpack_tensor(src.ptr());
    return true;
  }
  static handle cast(const sdk::Tensor& t, return_value_policy, handle) { return sdk::python::wrap_tensor(t); }
};
}  // namespace pybind11::detail
