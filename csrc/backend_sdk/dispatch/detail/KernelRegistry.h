// The one path by which kernels and backend fallbacks are registered (Library::impl,
// Library::fallback and the Python bindings' Library.impl): it refuses kernels for operators that
// a closed namespace does not define (Note [Closed namespaces]), remembers every kernel so that the
// conformance report can list kernels of never-defined operators, and remembers each key's
// backend fallback so that a declined call can reach it (Note [Declining kernels], Decline.h).
// Internal: not installed; used by Library.cpp, Decline.cpp and the Python bindings.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <backend_sdk/dispatch/Dispatcher.h>

namespace sdk {
class Library;
}  // namespace sdk

namespace sdk::detail {

// Note [Closed namespaces]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A namespace is closed while a DEF library for it is loaded (SDK_LIBRARY(ns, m), Python
// Library(ns, "DEF")): every operator of `aten` is defined by the SDK's SDK_LIBRARY(aten) block,
// and a vendor's own namespace is defined by its SDK_LIBRARY block. A kernel for a name a closed
// namespace does not define (a misspelling: "gelu_fast", "sub.tensor", "softmax" without its
// overload) would never run: the operator it names never exists, and the backend silently serves
// the real operator through its fallback. So such a registration is refused, naming the nearest
// names the namespace defines ("Did you mean aten::gelu?").
//
// When the check runs: a registration made while a shared library is being loaded (inside an
// SDK_LIBRARY* block, or while a loader's library group is open, Note [Extension library groups])
// is checked when the load ends (end_static_library_group, or take_static_registration_errors for
// libraries loaded without a group), because static initialisation runs the blocks of one library
// in an unspecified order: its IMPL block may run before the DEF or FRAGMENT block that defines the
// operator. The failure is then a registration error, which the loader raises (cpp_extension.load,
// ops.load_library, backend_sdk's import) and which undoes the library's blocks. Any other
// registration (Python's Library.impl, a Library made at run time) is checked at once and raises.
// A namespace without a DEF library stays open: a kernel for an undefined operator is allowed until
// the first call (the operator may be defined later), and kernels_for_undefined_operators() lists
// it for the conformance report.

// Registers `kernel` for `qualified` ("ns::name.overload") at `key` through the Dispatcher, after
// the closed-namespace check (`owner`: the Library making it, for a deferred check).
SDK_API RegistrationHandle register_kernel(const std::string& qualified, DispatchKey key, KernelFunction kernel,
                                   const std::string& debug, const Library* owner);
// Registers a backend fallback and remembers it for backend_fallback().
RegistrationHandle register_backend_fallback(DispatchKey key, KernelFunction kernel, const std::string& debug);
// The backend fallback registered for `key` (a copy that keeps its functor alive), if any.
std::optional<KernelFunction> backend_fallback(DispatchKey key);

// Marks `ns` closed while the returned handle lives (a DEF Library holds it).
RegistrationHandle close_namespace(const std::string& ns, const std::string& debug);
// Runs the deferred checks of the registrations made by `libs` (all pending ones when null),
// recording a registration error for each kernel of an operator a closed namespace lacks.
void resolve_deferred_checks(const std::vector<Library*>* libs);

// True while a loader's library group is open on this thread (Library.cpp).
bool static_library_group_open();

// Sets, for the current thread, that registrations run inside an SDK_LIBRARY* block.
class StaticBlockScope {
 public:
  StaticBlockScope();
  ~StaticBlockScope();
  StaticBlockScope(const StaticBlockScope&) = delete;
  StaticBlockScope& operator=(const StaticBlockScope&) = delete;

 private:
  bool previous_;
};

struct UndefinedKernel {
  std::string op;     // "ns::name.overload"
  std::string key;    // the dispatch key's name
  std::string where;  // where it was registered
};
// Live kernels whose operator has no schema, sorted by operator.
SDK_API std::vector<UndefinedKernel> kernels_for_undefined_operators();

}  // namespace sdk::detail
