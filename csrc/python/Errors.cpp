#include "python/Errors.h"

namespace py = pybind11;

namespace sdk::python {
namespace {
PyObject* g_out_of_memory_error = nullptr;
PyObject* g_accelerator_error = nullptr;
PyObject* g_value_error = nullptr;
PyObject* g_type_error = nullptr;

PyObject* python_type_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Value:
      return g_value_error;
    case ErrorKind::Type:
      return g_type_error;
    case ErrorKind::Index:
      return PyExc_IndexError;
    case ErrorKind::NotImplemented:
      return PyExc_NotImplementedError;
    case ErrorKind::OutOfMemory:
      return g_out_of_memory_error;
    case ErrorKind::Accelerator:
      return g_accelerator_error;
    case ErrorKind::Runtime:
    default:
      return PyExc_RuntimeError;
  }
}
}  // namespace

void set_python_error_from_current_exception() {
  try {
    throw;
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const Error& e) {
    PyErr_SetString(python_type_for(e.kind()), e.what());
  } catch (const py::builtin_exception& e) {
    e.set_error();
  } catch (const std::bad_alloc&) {
    // A host allocation C++ could not make (a vector of 2**40 outputs, say). OutOfMemoryError is both
    // of the types torch 2.13 raises here: MemoryError from torch.ops.aten.chunk, RuntimeError from
    // torch.chunk.
    PyErr_SetString(g_out_of_memory_error, "out of host memory (std::bad_alloc)");
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "unknown C++ exception");
  }
}

void init_errors(py::module_& m) {
  // Both bases, as DESIGN.md's Errors section says and PyTorch's torch.OutOfMemoryError is: code written
  // for PyTorch catches it as RuntimeError, numpy-style code as MemoryError.
  PyObject* oom_bases = PyTuple_Pack(2, PyExc_RuntimeError, PyExc_MemoryError);
  g_out_of_memory_error = PyErr_NewExceptionWithDoc(
      "backend_sdk.OutOfMemoryError",
      "Raised when a device (or the host) has no memory left for an allocation (a RuntimeError and a MemoryError).",
      oom_bases, nullptr);
  Py_XDECREF(oom_bases);
  g_accelerator_error = PyErr_NewExceptionWithDoc(
      "backend_sdk.AcceleratorError",
      "Raised when a device reports a fault (kernel fault, device lost); a RuntimeError.", PyExc_RuntimeError,
      nullptr);
  // Note [Error kinds]: PyTorch reports bad argument values and dtypes from TORCH_CHECK as RuntimeError;
  // DESIGN.md's ValueError / TypeError stay, as subclasses that are also RuntimeErrors, so code written
  // for either catches ours.
  PyObject* value_bases = PyTuple_Pack(2, PyExc_ValueError, PyExc_RuntimeError);
  g_value_error = PyErr_NewExceptionWithDoc(
      "backend_sdk.ValueRuntimeError",
      "A bad argument value (shape mismatch, tensors on two devices, bad view, duplicate registration): a "
      "ValueError and, as PyTorch's TORCH_CHECK errors are, a RuntimeError.",
      value_bases, nullptr);
  Py_XDECREF(value_bases);
  PyObject* type_bases = PyTuple_Pack(2, PyExc_TypeError, PyExc_RuntimeError);
  g_type_error = PyErr_NewExceptionWithDoc(
      "backend_sdk.TypeRuntimeError",
      "A bad argument type or dtype found by a kernel: a TypeError and, as PyTorch's TORCH_CHECK errors are, a "
      "RuntimeError.",
      type_bases, nullptr);
  Py_XDECREF(type_bases);
  m.add_object("ValueRuntimeError", py::handle(g_value_error));
  m.add_object("TypeRuntimeError", py::handle(g_type_error));
  m.add_object("OutOfMemoryError", py::handle(g_out_of_memory_error));
  m.add_object("AcceleratorError", py::handle(g_accelerator_error));
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      PyErr_SetString(python_type_for(e.kind()), e.what());
    } catch (const std::bad_alloc&) {
      PyErr_SetString(g_out_of_memory_error, "out of host memory (std::bad_alloc)");
    }
  });
}

}  // namespace sdk::python
