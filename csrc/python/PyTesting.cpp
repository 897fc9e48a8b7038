// Hooks for tests and benchmarks that need real threads or a C++ timing loop.
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <backend_sdk/dispatch/Library.h>
#include "python/PyTensor.h"

namespace py = pybind11;

namespace sdk::python {
namespace {

__attribute__((noinline)) void empty_kernel(const Tensor&) { asm volatile(""); }
Tensor echo_a(const Tensor& x) { return x; }
Tensor echo_b(const Tensor& x) { return x; }

// Defines the helper operators once per process.
void ensure_test_ops() {
  static Library* lib = [] {
    auto* l = new Library(Library::FRAGMENT, "_sdk_internal_test", std::nullopt, __FILE__, __LINE__);  // immortal
    l->def("noop(Tensor self) -> ()");
    l->def("echo(Tensor self) -> Tensor");
    l->impl("noop", DispatchKey::CPU, &empty_kernel);
    return l;
  }();
  (void)lib;
}

// Nanoseconds per call of an empty unboxed kernel through the dispatcher
// (key-set computation from the tensor and TLS, table lookup, call).
double benchmark_dispatch(int64_t iterations) {
  ensure_test_ops();
  auto op = Dispatcher::singleton().find_schema_or_throw("_sdk_internal_test::noop").typed<void(const Tensor&)>();
  Tensor x = make_tensor({1}, ScalarType::Float32, Device(DeviceType::CPU));
  py::gil_scoped_release no_gil;
  for (int i = 0; i < 1000; ++i) op.call(x);  // warm up
  auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < iterations; ++i) op.call(x);
  auto end = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(end - start).count() / static_cast<double>(iterations);
}

// Threads call _sdk_internal_test::echo while one thread keeps registering
// and deregistering its CPU kernel (and a backend fallback). Every call must
// either return its input or fail with the missing-kernel error.
py::dict stress_dispatch(int num_callers, int64_t calls_per_thread, int64_t registrations) {
  ensure_test_ops();
  auto op = Dispatcher::singleton().find_schema_or_throw("_sdk_internal_test::echo").typed<Tensor(const Tensor&)>();
  std::atomic<int64_t> ok{0}, missing{0}, wrong{0}, other_errors{0};
  std::atomic<bool> stop{false};
  std::atomic<int64_t> done_registrations{0};
  {
    py::gil_scoped_release no_gil;
    std::vector<std::thread> threads;
    for (int t = 0; t < num_callers; ++t) {
      threads.emplace_back([&] {
        Tensor x = make_tensor({2}, ScalarType::Float32, Device(DeviceType::CPU));
        for (int64_t i = 0; i < calls_per_thread; ++i) {
          try {
            Tensor y = op.call(x);
            (y.is_same(x) ? ok : wrong)++;
          } catch (const Error& e) {
            (e.kind() == ErrorKind::NotImplemented ? missing : other_errors)++;
          } catch (...) {
            other_errors++;
          }
        }
      });
    }
    threads.emplace_back([&] {
      for (int64_t r = 0; r < registrations; ++r) {
        Library impl(Library::IMPL, "_sdk_internal_test", DispatchKey::CPU, __FILE__, __LINE__);
        impl.impl("echo", (r % 2) ? &echo_a : &echo_b);
        if (r % 7 == 0) {
          // Also churn a global fallback, which rewrites every operator's table.
          Library fb(Library::IMPL, "_", DispatchKey::PrivateUse3, __FILE__, __LINE__);
          fb.fallback(CppFunction::make_fallthrough());
        }
        done_registrations++;
      }  // each Library deregisters here
    });
    for (auto& th : threads) th.join();
  }
  py::dict out;
  out["ok"] = ok.load();
  out["missing"] = missing.load();
  out["wrong"] = wrong.load();
  out["other_errors"] = other_errors.load();
  out["registrations"] = done_registrations.load();
  return out;
}

}  // namespace

void init_testing(py::module_& m) {
  m.def("_benchmark_dispatch", &benchmark_dispatch, py::arg("iterations") = 10000000,
        "ns per dispatcher call of an empty unboxed C++ kernel.");
  m.def("_stress_dispatch", &stress_dispatch, py::arg("num_callers") = 4, py::arg("calls_per_thread") = 200000,
        py::arg("registrations") = 2000,
        "Calls an operator from several threads while another registers and deregisters its kernel.");
}

}  // namespace sdk::python
