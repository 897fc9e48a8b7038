// backend_sdk._C.DispatchKey and the dispatch-key guards PyTorch code uses from
// Python: _AutoDispatchBelowAutograd, _ExcludeDispatchKeyGuard and
// _IncludeDispatchKeyGuard (torch._C's names).
//
// Note [Python dispatch-key guards]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// As in torch._C, constructing a guard applies it and it stays applied until it
// is released: by `__exit__` when used as a context manager, or when the object
// is destroyed (`guard = _AutoDispatchBelowAutograd(); ...; del guard`). A guard
// changes only the keys it added: it records the keys that were not excluded
// (included) before it and removes exactly those on release, so guards released
// out of order do not undo each other (a saved-snapshot restore would). The TLS
// set is per thread, so a guard released on another thread than the one that
// made it leaves that thread's set alone (`__exit__` there is an error).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <thread>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/dispatch/LocalDispatchKeySet.h>
#include "python/PyCore.h"

namespace py = pybind11;

namespace sdk::python {
namespace {

class PyKeyGuard {
 public:
  PyKeyGuard(DispatchKeySet keys, bool include) : include_(include), owner_(std::this_thread::get_id()) {
    LocalDispatchKeySet tls = tls_local_dispatch_key_set();
    DispatchKeySet& target = include_ ? tls.included : tls.excluded;
    // Excluding works on functionalities, as in c10 (whose operator- keeps backend bits): excluding
    // DispatchKey.CPU excludes the Dense functionality, not the CPU backend of every other key.
    if (!include_) keys = keys & DispatchKeySet(DispatchKeySet::RawTag{}, ~kBackendBitsMask);
    added_ = keys - target;  // only what this guard adds (Note [Python dispatch-key guards])
    target = target | added_;
    tls_set_local_dispatch_key_set(tls);
  }
  PyKeyGuard(const PyKeyGuard&) = delete;
  PyKeyGuard& operator=(const PyKeyGuard&) = delete;
  ~PyKeyGuard() {
    if (active_ && std::this_thread::get_id() == owner_) release();
  }

  void exit() {
    SDK_CHECK(std::this_thread::get_id() == owner_,
              "a dispatch key guard must be released on the thread that created it");
    if (active_) release();
  }

 private:
  void release() {
    active_ = false;
    LocalDispatchKeySet tls = tls_local_dispatch_key_set();
    DispatchKeySet& target = include_ ? tls.included : tls.excluded;
    target = target - added_;
    tls_set_local_dispatch_key_set(tls);
  }

  bool include_;
  bool active_ = true;
  DispatchKeySet added_;
  std::thread::id owner_;
};

// One Python class per guard kind; pybind11 binds each C++ type once.
template <int Kind>
struct Guard : PyKeyGuard {
  using PyKeyGuard::PyKeyGuard;
};

// The keys PyTorch's AutoDispatchBelowAutograd excludes: the Autograd functionality (every Autograd<Backend>).
DispatchKeySet autograd_keys() {
  return DispatchKeySet(DispatchKeySet::RawTag{}, functionality_bit(DispatchKey::AutogradFunctionality));
}

template <int Kind>
void add_context_manager(py::class_<Guard<Kind>>& cls) {
  cls.def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](Guard<Kind>& g, py::args) {
        g.exit();
        return false;
      });
}

}  // namespace

void init_dispatch_guards(py::module_& m) {
  py::enum_<DispatchKey> keys(m, "DispatchKey", "A dispatch key (c10's DispatchKey); DispatchKey.CPU etc.");
  for (int i = 0; i <= static_cast<int>(DispatchKey::EndOfAliasKeys); ++i) {
    auto k = static_cast<DispatchKey>(i);
    if (k == DispatchKey::EndOfFunctionalityKeys || k == DispatchKey::StartOfAutogradBackends ||
        k == DispatchKey::StartOfAutocastBackends)
      continue;  // markers, not keys
    // Canonical names: a renamed PrivateUse1 is still DispatchKey.PrivateUse1, as in PyTorch.
    std::string name = i == 0 ? "Undefined" : to_string(k);
    keys.value(name.c_str(), k);
  }

  // DispatchKeySet(DispatchKey.CPU), as torch._C.DispatchKeySet accepts a key.
  auto ks_cls = py::reinterpret_borrow<py::class_<PyDispatchKeySet>>(m.attr("DispatchKeySet"));
  ks_cls.def(py::init([](DispatchKey k) { return PyDispatchKeySet{runtime_key_set_for(k)}; }), py::arg("key"));
  ks_cls.def("has", [](const PyDispatchKeySet& a, DispatchKey k) { return a.ks.has(k); });

  py::class_<Guard<0>> below(m, "_AutoDispatchBelowAutograd",
                               "Excludes the Autograd keys while alive (c10's AutoDispatchBelowAutograd); "
                               "see Note [Python dispatch-key guards].");
  below.def(py::init([] { return new Guard<0>(autograd_keys(), false); }));
  add_context_manager(below);

  py::class_<Guard<1>> exclude(m, "_ExcludeDispatchKeyGuard",
                                 "Excludes a DispatchKeySet while alive (c10's ExcludeDispatchKeyGuard).");
  exclude.def(py::init([](const PyDispatchKeySet& ks) { return new Guard<1>(ks.ks, false); }), py::arg("keyset"));
  add_context_manager(exclude);

  py::class_<Guard<2>> include(m, "_IncludeDispatchKeyGuard",
                                 "Includes a dispatch key while alive (c10's IncludeDispatchKeyGuard).");
  include.def(py::init([](DispatchKey k) { return new Guard<2>(runtime_key_set_for(k), true); }), py::arg("key"));
  add_context_manager(include);
}

}  // namespace sdk::python
