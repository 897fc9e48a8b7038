#include <backend_sdk/dispatch/Library.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <unordered_map>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/dispatch/detail/StaticRegistration.h>
#include <backend_sdk/dispatch/detail/KernelRegistry.h>
#include <backend_sdk/dispatch/detail/LibraryGroups.h>

namespace sdk {

Library::Library(Kind kind, std::string ns, std::optional<DispatchKey> key, const char* file, uint32_t line)
    : kind_(kind), ns_(std::move(ns)), key_(key), file_(file), line_(line) {
  SDK_CHECK_VALUE(kind == IMPL || !key, "Library: only IMPL libraries take a dispatch key");
  SDK_CHECK_VALUE(kind != IMPL || key, "Library: an IMPL library needs a dispatch key");
  SDK_CHECK_VALUE(kind == IMPL || ns_ != "_", "Library: the namespace '_' is only for IMPL libraries (fallbacks)");
  if (kind == DEF) {
    registrations_.push_back(Dispatcher::singleton().register_library(ns_, debug()));
    registrations_.push_back(detail::close_namespace(ns_, debug()));  // Note [Closed namespaces]
  }
}

std::string Library::debug() const { return line_ ? file_ + ":" + std::to_string(line_) : file_; }

std::string Library::qualify(std::string_view name) const {
  if (name.find("::") != std::string_view::npos) return std::string(name);
  return ns_ + "::" + std::string(name);
}

std::string Library::name_of(std::string_view schema) const {
  FunctionSchema s = parse_schema(schema);
  return s.overload_name.empty() ? s.name : s.name + "." + s.overload_name;
}

Library& Library::def(std::string_view schema_text) {
  SDK_CHECK_VALUE(kind_ != IMPL, "def(", schema_text,
                  "): cannot define operators inside an SDK_LIBRARY_IMPL block; use SDK_LIBRARY or "
                  "SDK_LIBRARY_FRAGMENT");
  FunctionSchema schema = parse_schema(schema_text);
  if (schema.ns.empty()) {
    schema.ns = ns_;
  } else {
    SDK_CHECK_VALUE(schema.ns == ns_, "Explicitly provided namespace (", schema.ns,
                    ") in schema string does not match namespace of enclosing SDK_LIBRARY block (", ns_, ")");
  }
  registrations_.push_back(Dispatcher::singleton().register_def(std::move(schema), debug()));
  return *this;
}

Library& Library::impl(std::string_view name, DispatchKey key, CppFunction f) {
  std::string qualified = qualify(name);
  std::string op_ns = qualified.substr(0, qualified.find("::"));
  SDK_CHECK_VALUE(op_ns == ns_, "Explicitly provided namespace (", op_ns,
                  ") in operator name does not match namespace of enclosing ",
                  kind_ == IMPL ? "SDK_LIBRARY_IMPL" : "SDK_LIBRARY", " block (", ns_, ")");
  if (kind_ == IMPL) {
    SDK_CHECK_VALUE(key == *key_, "Explicitly provided dispatch key (", to_string(key),
                    ") is inconsistent with the dispatch key of the enclosing SDK_LIBRARY_IMPL block (",
                    to_string(*key_), "). Please declare a separate SDK_LIBRARY_IMPL block for this dispatch key "
                    "and put your impl(..) calls there.");
  }
  KernelFunction kernel = f.take();
  detail::label_external_kernel(kernel, "'" + qualified + "' for " + to_string(key));  // Note [Kernel crash reports]
  registrations_.push_back(detail::register_kernel(qualified, key, std::move(kernel), debug(), this));
  return *this;
}

Library& Library::fallback(CppFunction f) {
  SDK_CHECK_VALUE(kind_ == IMPL && ns_ == "_",
                  "fallback(): a backend fallback must be registered in an SDK_LIBRARY_IMPL(_, KEY, m) block");
  KernelFunction kernel = f.take();
  detail::label_external_kernel(kernel, "fallback for " + to_string(*key_));  // Note [Kernel crash reports]
  registrations_.push_back(detail::register_backend_fallback(*key_, std::move(kernel), debug()));
  return *this;
}

// Note [Init-order-safe registration errors]
// SDK_LIBRARY blocks run during static initialisation, and a block of a translation unit whose
// initialisers run before this file's (another object of libbackend_sdk linked ahead of it, a
// static library, an executable linking the SDK statically) may report an error before any
// namespace-scope object here is constructed. So everything the error path touches is either
// constant-initialised or a function-local static built on first use: the list and its mutex
// below, and the message goes to stderr through C stdio, never std::cerr. Before GCC 13 std::cerr
// is constructed by the std::ios_base::Init object of each translation unit that includes
// <iostream>, so a report from an earlier initialiser wrote through an unconstructed stream and
// crashed (reproduced by tests/test_static_init_order.py, which links a failing block ahead of
// every object of the library). C's stderr is ready before any C++ initialiser runs.
namespace {
struct StaticErrors {
  std::mutex mutex;
  std::vector<std::string> errors;
};
StaticErrors& static_errors() {
  static auto* e = new StaticErrors();  // leaked: a library's initialiser may report at exit too
  return *e;
}
}  // namespace

std::vector<std::string> take_static_registration_errors() {
  detail::resolve_deferred_checks(nullptr);  // Note [Closed namespaces]: loads without a group
  StaticErrors& e = static_errors();
  std::lock_guard<std::mutex> guard(e.mutex);
  std::vector<std::string> out;
  out.swap(e.errors);
  return out;
}

namespace detail {

void record_static_registration_error(std::string msg) {
  // Note [Init-order-safe registration errors]: C stdio, one call so concurrent reports do not interleave.
  std::fprintf(stderr, "[backend_sdk] registration error %s\n", msg.c_str());
  StaticErrors& e = static_errors();
  std::lock_guard<std::mutex> guard(e.mutex);
  e.errors.push_back(std::move(msg));
}

namespace {
// Note [Extension library groups] (dispatch/detail/LibraryGroups.h).
std::mutex g_groups_mutex;
std::unordered_map<uint64_t, std::vector<Library*>>& closed_groups() {
  static auto* m = new std::unordered_map<uint64_t, std::vector<Library*>>();  // leaked: used at exit
  return *m;
}
uint64_t g_next_group_id = 1;
// The open groups of this thread, innermost last.
thread_local std::vector<std::vector<Library*>> t_open_groups;
}  // namespace

void begin_static_library_group() { t_open_groups.emplace_back(); }

bool static_library_group_open() { return !t_open_groups.empty(); }

uint64_t end_static_library_group() {
  SDK_CHECK(!t_open_groups.empty(), "end_static_library_group(): no group is open on this thread");
  std::vector<Library*> libs = std::move(t_open_groups.back());
  t_open_groups.pop_back();
  resolve_deferred_checks(&libs);  // Note [Closed namespaces]: the load has ended
  std::lock_guard<std::mutex> guard(g_groups_mutex);
  uint64_t id = g_next_group_id++;
  closed_groups().emplace(id, std::move(libs));
  return id;
}

void add_to_open_static_library_group(Library* lib) {
  if (!t_open_groups.empty()) t_open_groups.back().push_back(lib);
}

void forget_static_library(Library* lib) {
  auto erase = [lib](std::vector<Library*>& v) { v.erase(std::remove(v.begin(), v.end(), lib), v.end()); };
  for (auto& open : t_open_groups) erase(open);
  std::lock_guard<std::mutex> guard(g_groups_mutex);
  for (auto& [id, libs] : closed_groups()) erase(libs);
}

int64_t reset_static_library_group(uint64_t id) {
  std::vector<Library*> libs;
  {
    std::lock_guard<std::mutex> guard(g_groups_mutex);
    auto it = closed_groups().find(id);
    if (it == closed_groups().end()) return 0;
    libs = std::move(it->second);
    closed_groups().erase(it);
  }
  // Later blocks first, as static destructors would run: an IMPL block is undone before the
  // SDK_LIBRARY block that defined its operators.
  for (auto it = libs.rbegin(); it != libs.rend(); ++it) (*it)->reset();
  return static_cast<int64_t>(libs.size());
}

// Note [Kernel library version check]
// A kernel library links libbackend_sdk's C++ ABI (class layouts, inline functions, vtables), which
// may change between minor versions. Each SDK_LIBRARY* registrar passes the BACKEND_SDK_VERSION_NUMBER
// it was compiled with; the rule is: the library's MAJOR.MINOR must equal the running SDK's (the
// PATCH may differ either way: patch releases keep the ABI). The CMake package states the same rule
// (SameMinorVersion, Note [CMake package version] in CMakeLists.txt). A library that breaks it is
// refused: none of its SDK_LIBRARY* blocks runs (each records one error), and the error (the library's file,
// both versions, the rule) is recorded like any registration error, so the loader raises it
// (cpp_extension.load, backend_sdk's import) or reads it (take_static_registration_errors).
namespace {
std::string version_string(int number) {
  return std::to_string(number / 10000) + "." + std::to_string(number / 100 % 100) + "." +
         std::to_string(number % 100);
}

// The file of the shared object that holds `fn` (a registrar's init function), for messages.
std::string library_file_of(void (*fn)(Library&)) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(fn), &info) != 0 && info.dli_fname != nullptr && info.dli_fname[0] != '\0') {
    return info.dli_fname;
  }
  return "<unknown library>";
}
}  // namespace

StaticLibrary::StaticLibrary(Library::Kind kind, InitFn fn, const char* ns, std::optional<DispatchKey> key,
                             const char* file, uint32_t line, int sdk_version) {
  if (sdk_version / 100 != BACKEND_SDK_VERSION_NUMBER / 100) {
    std::string msg = "kernel library " + library_file_of(fn) + " (SDK_LIBRARY block for namespace '" + ns +
                      "' at " + file + ":" + std::to_string(line) + ") was built against backend_sdk " +
                      version_string(sdk_version) + ", but the running backend_sdk is " BACKEND_SDK_VERSION
                      ": a kernel library must be built against the same MAJOR.MINOR version of the SDK "
                      "(the C++ ABI may change between minor versions); rebuild it against backend_sdk " +
                      std::to_string(BACKEND_SDK_VERSION_MAJOR) + "." + std::to_string(BACKEND_SDK_VERSION_MINOR);
    record_static_registration_error(std::move(msg));
    return;
  }
  try {
    lib_.emplace(kind, ns, key, file, line);
    // Recorded before its block runs: a block that fails half-way is undone with its group too.
    if (!t_open_groups.empty()) t_open_groups.back().push_back(&*lib_);
    StaticBlockScope in_block;  // Note [Closed namespaces]: checked when the load ends
    fn(*lib_);
  } catch (const std::exception& e) {
    // Registration errors are reported, not fatal; see the class comment.
    std::string msg = std::string("while running the SDK_LIBRARY block for namespace '") + ns + "' at " + file +
                      ":" + std::to_string(line) + ": " + e.what();
    record_static_registration_error(std::move(msg));
  }
}

}  // namespace detail
}  // namespace sdk

namespace sdk {
const char* sdk_version() { return BACKEND_SDK_VERSION; }
int sdk_version_number() { return BACKEND_SDK_VERSION_NUMBER; }
}  // namespace sdk
