// The setuptools sample: one library that is both a Python module (a pybind11 function) and a
// kernel library (an operator with a CPU kernel, registered when the module is imported).
//
//   setuptools_ext::scaled_add(Tensor x, Tensor y, float alpha) -> Tensor   x + alpha * y
//   setuptools_ext.kernel_calls() -> int                                     how often the kernel ran
//
// Built by setup.py (CppExtension + BuildExtension), which defines SDK_EXTENSION_NAME to the
// extension's name: PYBIND11_MODULE(SDK_EXTENSION_NAME, m) then exports PyInit_setuptools_ext.
#include <atomic>
#include <cstdint>

#include <pybind11/pybind11.h>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/Functions.h>

namespace {

std::atomic<int64_t> g_kernel_calls{0};

sdk::Tensor scaled_add_cpu(const sdk::Tensor& x, const sdk::Tensor& y, double alpha) {
  SDK_CHECK_VALUE(x.sizes().equals(y.sizes()), "setuptools_ext::scaled_add: x and y must have the same shape");
  g_kernel_calls.fetch_add(1, std::memory_order_relaxed);
  return sdk::ops::add(x, y, sdk::Scalar(alpha));
}

}  // namespace

SDK_LIBRARY(setuptools_ext, m) { m.def("scaled_add(Tensor x, Tensor y, float alpha) -> Tensor"); }

SDK_LIBRARY_IMPL(setuptools_ext, CPU, m) { m.impl("scaled_add", &scaled_add_cpu); }

PYBIND11_MODULE(SDK_EXTENSION_NAME, m) {
  m.doc() = "backend_sdk's setuptools sample";
  m.def("kernel_calls", [] { return g_kernel_calls.load(std::memory_order_relaxed); },
        "How many times the CPU kernel of setuptools_ext::scaled_add ran in this process.");
}
