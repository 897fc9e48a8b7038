// The scikit-build-core sample: a pybind11 module built by CMake against the SDK's CMake package
// (find_package(backend_sdk)), with an operator and its CPU kernel registered on import.
//
//   skbuild_ext::axpby(Tensor x, Tensor y, float a, float b) -> Tensor   a * x + b * y
//   skbuild_ext.defined_namespace() -> str                     the namespace its SDK_LIBRARY defines
#include <string>

#include <pybind11/pybind11.h>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/Functions.h>

namespace {

sdk::Tensor axpby_cpu(const sdk::Tensor& x, const sdk::Tensor& y, double a, double b) {
  SDK_CHECK_VALUE(x.sizes().equals(y.sizes()), "skbuild_ext::axpby: x and y must have the same shape");
  return sdk::ops::add(sdk::ops::mul(x, sdk::Scalar(a)), y, sdk::Scalar(b));
}

}  // namespace

SDK_LIBRARY(skbuild_ext, m) { m.def("axpby(Tensor x, Tensor y, float a, float b) -> Tensor"); }

SDK_LIBRARY_IMPL(skbuild_ext, CPU, m) { m.impl("axpby", &axpby_cpu); }

PYBIND11_MODULE(skbuild_ext, m) {
  m.doc() = "backend_sdk's scikit-build-core sample";
  m.def("defined_namespace", [] { return std::string("skbuild_ext"); },
        "The operator namespace this module's SDK_LIBRARY block defines.");
}
