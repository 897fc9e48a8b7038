// Mapping sdk::Error to Python exceptions; see Note [Error kinds].
#pragma once

#include <Python.h>
#include <pybind11/pybind11.h>

#include <backend_sdk/core/Exception.h>

namespace sdk::python {

// Creates backend_sdk._C.OutOfMemoryError (a MemoryError) and
// AcceleratorError (a RuntimeError) and installs the pybind11 translator.
void init_errors(pybind11::module_& m);
// Sets the Python error for the exception in flight; call from a catch block.
void set_python_error_from_current_exception();

}  // namespace sdk::python

// For raw CPython entry points: converts any C++ exception into a Python error
// and returns `retval`.
#define SDK_HANDLE_ERRORS_BEGIN try {
#define SDK_HANDLE_ERRORS_END(retval)                       \
  }                                                         \
  catch (...) {                                             \
    ::sdk::python::set_python_error_from_current_exception(); \
    return retval;                                          \
  }
