// Library and the SDK_LIBRARY* macros: registering operators and kernels from C++.
//
//   SDK_LIBRARY(myops, m) {
//     m.def("sin_relu(Tensor x) -> Tensor");
//   }
//   SDK_LIBRARY_IMPL(myops, CPU, m) {
//     m.impl("sin_relu", &sin_relu_cpu);      // Tensor sin_relu_cpu(const Tensor&)
//   }
//   SDK_LIBRARY_IMPL(_, PrivateUse1, m) {
//     m.fallback(sdk::CppFunction::make_from_boxed(&my_fallback));
//   }
//
// Every registration is undone when its Library is destroyed (a static
// Library lives as long as the shared library that holds it).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <backend_sdk/dispatch/Dispatcher.h>
#include <backend_sdk/version.h>

namespace sdk {

// A kernel to register: a C++ function, a boxed function, or a fallthrough.
class SDK_API CppFunction {
 public:
  template <typename Ret, typename... Args>
  explicit CppFunction(Ret (*fn)(Args...)) : kernel_(KernelFunction::make_from_unboxed(fn)) {}
  static CppFunction make_fallthrough() { return CppFunction(KernelFunction::make_fallthrough()); }
  static CppFunction make_from_boxed(BoxedKernelFn fn, std::shared_ptr<OperatorKernel> functor = nullptr) {
    return CppFunction(KernelFunction::make_from_boxed(fn, std::move(functor)));
  }
  explicit CppFunction(KernelFunction k) : kernel_(std::move(k)) {}
  KernelFunction&& take() { return std::move(kernel_); }

 private:
  KernelFunction kernel_;
};

class SDK_API Library {
 public:
  enum Kind { DEF, FRAGMENT, IMPL };

  // `key` is the block's dispatch key (IMPL libraries only).
  Library(Kind kind, std::string ns, std::optional<DispatchKey> key, const char* file, uint32_t line);
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  Library(Library&&) = default;
  Library& operator=(Library&&) = default;

  // Defines an operator from a schema ("name.overload(Tensor x) -> Tensor");
  // the library's namespace is prepended when the schema has none.
  Library& def(std::string_view schema);
  // Defines the operator and registers `f` as its CompositeImplicitAutograd kernel.
  template <typename Func>
  Library& def(std::string_view schema, Func* f) {
    def(schema);
    return impl(name_of(schema), DispatchKey::CompositeImplicitAutograd, CppFunction(f));
  }

  // Registers a kernel. In an IMPL block the block's key is used; in a
  // DEF/FRAGMENT block it is CompositeImplicitAutograd (c10's catch-all).
  template <typename Func>
  Library& impl(std::string_view name, Func* f) {
    return impl(name, default_impl_key(), CppFunction(f));
  }
  Library& impl(std::string_view name, CppFunction f) { return impl(name, default_impl_key(), std::move(f)); }
  template <typename Func>
  Library& impl(std::string_view name, DispatchKey key, Func* f) {
    return impl(name, key, CppFunction(f));
  }
  Library& impl(std::string_view name, DispatchKey key, CppFunction f);

  // A backend fallback for every operator at this IMPL block's key (namespace "_").
  Library& fallback(CppFunction f);

  const std::string& ns() const { return ns_; }
  std::optional<DispatchKey> key() const { return key_; }
  // Undoes every registration this library made.
  void reset() { registrations_.clear(); }

 private:
  DispatchKey default_impl_key() const { return key_ ? *key_ : DispatchKey::CompositeImplicitAutograd; }
  std::string name_of(std::string_view schema) const;
  std::string qualify(std::string_view name) const;
  std::string debug() const;

  Kind kind_;
  std::string ns_;
  std::optional<DispatchKey> key_;
  std::string file_;
  uint32_t line_;
  std::vector<RegistrationHandle> registrations_;
};

namespace detail {

// The object behind SDK_LIBRARY*: builds a Library during static
// initialisation. An error while registering must not terminate the process
// (an exception escaping a static constructor would), so it is recorded and
// raised by whoever loaded the library (see take_static_registration_errors).
// `sdk_version` defaults to the BACKEND_SDK_VERSION_NUMBER of the headers the registering library
// was compiled with (a default argument is evaluated in the caller): a library built against
// another SDK minor version is refused (Note [Kernel library version check], Library.cpp).
class SDK_API StaticLibrary {
 public:
  using InitFn = void (*)(Library&);
  StaticLibrary(Library::Kind kind, InitFn fn, const char* ns, std::optional<DispatchKey> key, const char* file,
                uint32_t line, int sdk_version = BACKEND_SDK_VERSION_NUMBER);

 private:
  std::optional<Library> lib_;
};

}  // namespace detail

// Errors raised inside SDK_LIBRARY blocks since the last call (and clears them).
SDK_API std::vector<std::string> take_static_registration_errors();

// The running libbackend_sdk's version (its BACKEND_SDK_VERSION, BACKEND_SDK_VERSION_NUMBER), which
// may differ from the headers a kernel library was compiled with.
SDK_API const char* sdk_version();
SDK_API int sdk_version_number();

}  // namespace sdk

#define SDK_CONCAT_INNER(a, b) a##b
#define SDK_CONCAT(a, b) SDK_CONCAT_INNER(a, b)
#define SDK_UID __COUNTER__

#define SDK_LIBRARY(ns, m)                                                                              \
  static void SDK_LIBRARY_init_##ns(::sdk::Library&);                                                   \
  static const ::sdk::detail::StaticLibrary SDK_LIBRARY_static_init_##ns(                               \
      ::sdk::Library::DEF, &SDK_LIBRARY_init_##ns, #ns, std::nullopt, __FILE__, __LINE__);              \
  void SDK_LIBRARY_init_##ns(::sdk::Library& m)

#define SDK_LIBRARY_FRAGMENT(ns, m) SDK_LIBRARY_FRAGMENT_UID(ns, m, SDK_UID)
#define SDK_LIBRARY_FRAGMENT_UID(ns, m, uid)                                                            \
  static void SDK_CONCAT(SDK_LIBRARY_FRAGMENT_init_##ns##_, uid)(::sdk::Library&);                      \
  static const ::sdk::detail::StaticLibrary SDK_CONCAT(SDK_LIBRARY_FRAGMENT_static_init_##ns##_, uid)(  \
      ::sdk::Library::FRAGMENT, &SDK_CONCAT(SDK_LIBRARY_FRAGMENT_init_##ns##_, uid), #ns, std::nullopt, \
      __FILE__, __LINE__);                                                                              \
  void SDK_CONCAT(SDK_LIBRARY_FRAGMENT_init_##ns##_, uid)(::sdk::Library & m)

#define SDK_LIBRARY_IMPL(ns, k, m) SDK_LIBRARY_IMPL_UID(ns, k, m, SDK_UID)
#define SDK_LIBRARY_IMPL_UID(ns, k, m, uid)                                                             \
  static void SDK_CONCAT(SDK_LIBRARY_IMPL_init_##ns##_##k##_, uid)(::sdk::Library&);                    \
  static const ::sdk::detail::StaticLibrary SDK_CONCAT(SDK_LIBRARY_IMPL_static_init_##ns##_##k##_, uid)( \
      ::sdk::Library::IMPL, &SDK_CONCAT(SDK_LIBRARY_IMPL_init_##ns##_##k##_, uid), #ns,                 \
      std::make_optional(::sdk::DispatchKey::k), __FILE__, __LINE__);                                   \
  void SDK_CONCAT(SDK_LIBRARY_IMPL_init_##ns##_##k##_, uid)(::sdk::Library & m)
