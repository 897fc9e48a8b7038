// x[index] on backend_sdk.Tensor: TensorBase's mapping slot.
//
// Note [Indexing fast path]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// x[0] and x[1:3] are called in tight Python loops; through Tensor.__getitem__ in Python they cost a
// Python frame, a helper call and the OpOverload's argument binding on top of the view itself (issue
// 18 measured 0.52-0.73x torch's time, against a target of 0.5x). So TensorBase has the mp_subscript
// slot itself (backend_sdk.Tensor defines no __getitem__), and for the two common indices it calls
// the view operators' typed handles directly:
//   * an exact Python int i on a tensor with dims: aten::select.int(x, 0, i), after indexing's bounds
//     check with PyTorch's IndexError text ("index 4 is out of bounds for dimension 0 with size 4"),
//     as PyTorch's applySelect checks before it dispatches;
//   * a slice whose start, stop and step are None or exact Python ints, step >= 1, on a tensor with
//     dims: aten::slice.Tensor(x, 0, start, stop, step).
// Each is one dispatcher call through every key: autograd records SelectBackward0 / SliceBackward0, a
// TorchDispatchMode, the profiler and a backend's own kernel see aten::select.int / aten::slice.Tensor
// as before. Tensors PyTorch calls subclass-like (a Python key: wrapper subclasses and their modes; a
// Fake key; a FuncTorchBatched key: vmap's batched tensors) are never taken here, whatever the index:
// PyTorch does not trust their sizes for the bounds check, and their Python path is the one the
// tests pin (select first, the handler sees it). Everything else (bools, None, Ellipsis, tuples,
// tensors, lists, numpy integers, a zero or negative step, an int too big for int64, a 0-dim tensor)
// goes to backend_sdk._tensor._getitem, the general path (Note [Python hot paths]), which raises the
// errors. So the fast path changes speed, never behaviour (tests/test_hot_paths18.py compares both).
#include <backend_sdk/dispatch/Dispatcher.h>

#include <optional>
#include <string>

#include "python/Errors.h"
#include "python/PyTensor.h"

namespace py = pybind11;

namespace sdk::python {
namespace {

PyObject* g_getitem_general = nullptr;  // backend_sdk._tensor._getitem: a strong reference, kept for the process

using SelectSig = Tensor(const Tensor&, int64_t, int64_t);
using SliceSig = Tensor(const Tensor&, int64_t, std::optional<int64_t>, std::optional<int64_t>, int64_t);

// Tensors whose indexing stays on the Python path (Note [Indexing fast path]).
bool subclass_like(const Tensor& t) {
  const DispatchKeySet ks = t.key_set();
  return ks.has(DispatchKey::Python) || ks.has(DispatchKey::Fake) || ks.has(DispatchKey::FuncTorchBatched);
}

// A slice field: None, or an exact Python int that fits in int64. False for anything else.
bool slice_field(PyObject* obj, std::optional<int64_t>* out) {
  if (obj == Py_None) return true;
  if (!PyLong_CheckExact(obj)) return false;
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
  if (overflow) return false;
  *out = static_cast<int64_t>(v);
  return true;
}

// The view for x[index], or nullopt when the general path must decide.
std::optional<Tensor> fast_view(const Tensor& t, PyObject* index) {
  if (!t.defined() || t.dim() == 0 || subclass_like(t)) return std::nullopt;
  if (PyLong_CheckExact(index)) {
    int overflow = 0;
    const long long i = PyLong_AsLongLongAndOverflow(index, &overflow);
    if (overflow) return std::nullopt;
    const int64_t size = t.size(0);
    SDK_CHECK_INDEX(i >= -size && i < size, "index ", i, " is out of bounds for dimension 0 with size ", size);
    static const auto select = Dispatcher::singleton().find_schema_or_throw("aten::select.int").typed<SelectSig>();
    return select.call(t, 0, static_cast<int64_t>(i));
  }
  if (PySlice_Check(index)) {
    auto* s = reinterpret_cast<PySliceObject*>(index);
    std::optional<int64_t> start, stop, step;
    if (!slice_field(s->start, &start) || !slice_field(s->stop, &stop) || !slice_field(s->step, &step)) {
      return std::nullopt;
    }
    if (step && *step <= 0) return std::nullopt;  // the general path's ValueError
    static const auto slice = Dispatcher::singleton().find_schema_or_throw("aten::slice.Tensor").typed<SliceSig>();
    return slice.call(t, 0, start, stop, step.value_or(1));
  }
  return std::nullopt;
}

PyObject* call_general(PyObject* self, PyObject* index) {
  if (g_getitem_general == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "Tensor indexing: backend_sdk._tensor has not registered _getitem");
    return nullptr;
  }
  return PyObject_CallFunctionObjArgs(g_getitem_general, self, index, nullptr);
}

}  // namespace

PyObject* tensor_getitem(PyObject* self, PyObject* index) {
  SDK_HANDLE_ERRORS_BEGIN
  if (std::optional<Tensor> view = fast_view(unpack_tensor(self), index)) return wrap_tensor(std::move(*view));
  return call_general(self, index);
  SDK_HANDLE_ERRORS_END(nullptr)
}

// The sequence form (PySequence_GetItem, which has already added len() to a negative i): x[i].
PyObject* tensor_sq_item(PyObject* self, Py_ssize_t i) {
  PyObject* index = PyLong_FromSsize_t(i);
  if (index == nullptr) return nullptr;
  PyObject* r = tensor_getitem(self, index);
  Py_DECREF(index);
  return r;
}

void init_indexing(py::module_& m) {
  m.def(
      "_set_getitem_fallback",
      [](py::object fn) {
        SDK_CHECK_TYPE(PyCallable_Check(fn.ptr()), "_set_getitem_fallback: expected a callable");
        Py_XDECREF(g_getitem_general);
        g_getitem_general = fn.release().ptr();  // kept for the process's life
      },
      "Registers the general Tensor indexing path, fn(tensor, index), that x[index] calls for the indices its "
      "C fast path leaves (Note [Indexing fast path]).");
}

}  // namespace sdk::python
