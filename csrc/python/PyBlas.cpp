// Which BLAS the CPU matrix kernels use; see Note [BLAS loading].
#include <pybind11/pybind11.h>

#include <backend_sdk/ops/detail/Blas.h>

namespace py = pybind11;

namespace sdk::python {

void init_blas(py::module_& m) {
  m.def("_set_blas_library_path", &ops::blas::set_blas_library_path, py::arg("path"),
        "Registers the BLAS shared library to try (before the one next to the package).");
  m.def("_blas_library", &ops::blas::blas_library, "Path of the BLAS in use (loads it on first call).");
}

}  // namespace sdk::python
