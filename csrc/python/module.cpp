// backend_sdk._C: the Python bindings' entry point.
#include <pybind11/pybind11.h>

#include <backend_sdk/dispatch/Dispatcher.h>
#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/version.h>
#include "python/Errors.h"
#include "python/PyCore.h"
#include "python/PyTensor.h"

namespace py = pybind11;

void init_schema_bindings(py::module_& m);

namespace sdk::python {
void init_ops(py::module_& m);
void init_interop(py::module_& m);
void init_testing(py::module_& m);
void init_runtime(py::module_& m);
void init_blas(py::module_& m);
void init_generator(py::module_& m);
void init_dispatch_guards(py::module_& m);
void init_autograd(py::module_& m);
void init_autocast(py::module_& m);
void init_functorch(py::module_& m);
void init_python_dispatch(py::module_& m);
void init_formulas(py::module_& m);
void init_profiler(py::module_& m);
void init_factories(py::module_& m);

namespace {
// Routes C++ warnings (sdk::warn) to Python's warnings module.
void python_warning_handler(const std::string& message) {
  if (!Py_IsInitialized()) return;
  PyGILState_STATE s = PyGILState_Ensure();
  if (PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 1) < 0) {
    // warnings configured as errors: report instead of leaving an exception
    // set on a path that cannot return it.
    PyErr_WriteUnraisable(nullptr);
  }
  PyGILState_Release(s);
}
}  // namespace
}  // namespace sdk::python

PYBIND11_MODULE(_C, m) {
  m.doc() = "backend_sdk C++ core: tensors, dispatcher and operators.";
  // Note [SDK version]: the version _C was compiled with (backend_sdk.__version__) and the one the
  // loaded libbackend_sdk reports; they differ only if a stale libbackend_sdk is found first.
  m.attr("__version__") = BACKEND_SDK_VERSION;
  if (sdk::sdk_version_number() != BACKEND_SDK_VERSION_NUMBER) {
    throw std::runtime_error(std::string("backend_sdk._C was built for libbackend_sdk ") + BACKEND_SDK_VERSION +
                             " but loaded libbackend_sdk " + sdk::sdk_version() + "; reinstall backend_sdk");
  }
  // Note [Kernel crash reports]: the bindings' kernels are the SDK's own.
  sdk::detail::treat_as_sdk_library(reinterpret_cast<const void*>(&sdk::python::init_core));
  sdk::python::init_errors(m);
  sdk::python::init_core(m);
  sdk::python::init_tensor(m);
  sdk::python::init_indexing(m);
  sdk::python::init_ops(m);
  sdk::python::init_interop(m);
  sdk::python::init_testing(m);
  sdk::python::init_runtime(m);
  sdk::python::init_blas(m);
  sdk::python::init_generator(m);
  sdk::python::init_dispatch_guards(m);
  sdk::python::init_autograd(m);
  sdk::python::init_autocast(m);
  sdk::python::init_functorch(m);
  sdk::python::init_python_dispatch(m);
  sdk::python::init_formulas(m);
  sdk::python::init_profiler(m);
  sdk::python::init_factories(m);
  init_schema_bindings(m);
  sdk::set_warning_handler(&sdk::python::python_warning_handler);
}
