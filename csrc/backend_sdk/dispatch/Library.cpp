#include <backend_sdk/dispatch/Library.h>

#include <iostream>
#include <mutex>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/dispatch/detail/StaticRegistration.h>

namespace sdk {

Library::Library(Kind kind, std::string ns, std::optional<DispatchKey> key, const char* file, uint32_t line)
    : kind_(kind), ns_(std::move(ns)), key_(key), file_(file), line_(line) {
  SDK_CHECK_VALUE(kind == IMPL || !key, "Library: only IMPL libraries take a dispatch key");
  SDK_CHECK_VALUE(kind != IMPL || key, "Library: an IMPL library needs a dispatch key");
  SDK_CHECK_VALUE(kind == IMPL || ns_ != "_", "Library: the namespace '_' is only for IMPL libraries (fallbacks)");
  if (kind == DEF) registrations_.push_back(Dispatcher::singleton().register_library(ns_, debug()));
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
  registrations_.push_back(Dispatcher::singleton().register_impl(qualified, key, std::move(kernel), debug()));
  return *this;
}

Library& Library::fallback(CppFunction f) {
  SDK_CHECK_VALUE(kind_ == IMPL && ns_ == "_",
                  "fallback(): a backend fallback must be registered in an SDK_LIBRARY_IMPL(_, KEY, m) block");
  KernelFunction kernel = f.take();
  detail::label_external_kernel(kernel, "fallback for " + to_string(*key_));  // Note [Kernel crash reports]
  registrations_.push_back(Dispatcher::singleton().register_fallback(*key_, std::move(kernel), debug()));
  return *this;
}

namespace {
std::mutex g_static_errors_mutex;
std::vector<std::string>& static_errors() {
  static auto* v = new std::vector<std::string>();
  return *v;
}
}  // namespace

std::vector<std::string> take_static_registration_errors() {
  std::lock_guard<std::mutex> guard(g_static_errors_mutex);
  std::vector<std::string> out;
  out.swap(static_errors());
  return out;
}

namespace detail {

void record_static_registration_error(std::string msg) {
  std::cerr << "[backend_sdk] registration error " << msg << "\n";
  std::lock_guard<std::mutex> guard(g_static_errors_mutex);
  static_errors().push_back(std::move(msg));
}

StaticLibrary::StaticLibrary(Library::Kind kind, InitFn fn, const char* ns, std::optional<DispatchKey> key,
                             const char* file, uint32_t line) {
  try {
    lib_.emplace(kind, ns, key, file, line);
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
