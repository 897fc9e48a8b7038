// Registering operators and kernels through the stable C shim: sdk::stable::Library and
// the STABLE_SDK_LIBRARY* macros, with kernel adapters. Header-only.
//
//   sdk::stable::Tensor scaled_add_cpu(sdk::stable::Tensor a, sdk::stable::Tensor b, double alpha);
//
//   STABLE_SDK_LIBRARY(myops, m) {
//     m.def("scaled_add(Tensor a, Tensor b, float alpha) -> Tensor");
//   }
//   STABLE_SDK_LIBRARY_IMPL(myops, CPU, m) {
//     m.impl("scaled_add", &scaled_add_cpu);        // unboxed: adapted to a boxed kernel
//     m.impl("other_op", &my_boxed_kernel, ctx);    // boxed: sdk_stable_boxed_kernel
//   }
//
// Kernel argument types: Tensor (by value or const&), int64_t, double, bool, ScalarType,
// Device, IntArrayRef, std::vector<int64_t>, std::string, std::optional of these; returns:
// void, Tensor, int64_t, double, bool, std::optional<Tensor>, std::tuple of these. An adapter
// catches everything the kernel throws and returns it as a status (Note [Stable status codes]).
#pragma once

#include <cstdint>
#include <new>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include <backend_sdk/stable/stableivalue_conversions.h>

namespace sdk::stable {

namespace detail {

// Runs `body`, turning what it throws into a status and the thread's message.
template <typename F>
sdk_stable_status status_guard(F&& body) noexcept {
  try {
    body();
    return SDK_STABLE_OK;
  } catch (const Error& e) {
    sdk_stable_set_last_error_message(e.what());
    return status_of(e.kind());
  } catch (const std::bad_alloc&) {
    sdk_stable_set_last_error_message("out of host memory in a stable kernel");
    return SDK_STABLE_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    sdk_stable_set_last_error_message(e.what());
    return SDK_STABLE_ERROR_RUNTIME;
  } catch (...) {
    sdk_stable_set_last_error_message("unknown C++ exception in a stable kernel");
    return SDK_STABLE_ERROR_RUNTIME;
  }
}

template <typename T>
using plain_t = std::remove_cv_t<std::remove_reference_t<T>>;

template <typename T>
struct ReturnCount {
  static constexpr int64_t value = 1;
};
template <>
struct ReturnCount<void> {
  static constexpr int64_t value = 0;
};
template <typename... Ts>
struct ReturnCount<std::tuple<Ts...>> {
  static constexpr int64_t value = sizeof...(Ts);
};

template <typename T>
void write_returns(StableIValue* stack, const T& r) {
  stack[0] = StableValue<T>::give(r);
}
template <typename... Ts>
void write_returns(StableIValue* stack, const std::tuple<Ts...>& r) {
  std::apply([&](const Ts&... xs) {
    int64_t i = 0;
    ((stack[i++] = StableValue<Ts>::give(xs)), ...);
  }, r);
}

template <typename Ret, typename... Args, size_t... I>
Ret call_with_stack(Ret (*fn)(Args...), const StableIValue* stack, std::index_sequence<I...>) {
  // Every argument is converted (tensors become new references) before the kernel runs,
  // so the returns may overwrite the stack afterwards.
  return fn(StableValue<plain_t<Args>>::to(stack[I])...);
}

// The boxed form of an unboxed kernel `Ret(*)(Args...)`; ctx is the function pointer.
template <typename Ret, typename... Args>
sdk_stable_status unboxed_adapter(void* ctx, StableIValue* stack, int64_t num_args, int64_t num_returns) noexcept {
  return status_guard([&] {
    constexpr int64_t n_args = sizeof...(Args);
    constexpr int64_t n_returns = ReturnCount<Ret>::value;
    SDK_CHECK(num_args == n_args && num_returns == n_returns, "stable kernel: its C++ signature takes ", n_args,
              " arguments and returns ", n_returns, " values, the operator's schema has ", num_args,
              " arguments and ", num_returns, " returns");
    auto fn = reinterpret_cast<Ret (*)(Args...)>(ctx);
    if constexpr (std::is_void_v<Ret>) {
      call_with_stack(fn, stack, std::index_sequence_for<Args...>{});
    } else {
      Ret r = call_with_stack(fn, stack, std::index_sequence_for<Args...>{});
      write_returns(stack, r);
    }
  });
}

// The C callback behind Library::impl_device_kernels: ctx is the C++ function.
inline sdk_stable_status local_copy_adapter(void* ctx, sdk_stable_tensor dst, sdk_stable_tensor src) {
  return status_guard([&] {
    auto fn = reinterpret_cast<void (*)(const Tensor&, const Tensor&)>(ctx);
    fn(Tensor::borrow(dst), Tensor::borrow(src));
  });
}

}  // namespace detail

class Library {
 public:
  enum Kind { DEF = SDK_STABLE_LIBRARY_DEF, FRAGMENT = SDK_STABLE_LIBRARY_FRAGMENT, IMPL = SDK_STABLE_LIBRARY_IMPL };

  // `key`: a dispatch key name for IMPL libraries ("CPU", "PrivateUse1", "Meta", ...), else null.
  Library(Kind kind, const char* ns, const char* key, const char* file, uint32_t line) {
    check_status(sdk_stable_library_create(kind, ns, key, file, line, &handle_));
  }
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  Library(Library&& o) noexcept : handle_(std::exchange(o.handle_, nullptr)) {}
  Library& operator=(Library&& o) noexcept {
    std::swap(handle_, o.handle_);
    return *this;
  }
  // Undoes every registration of this library.
  ~Library() { (void)sdk_stable_library_free(handle_); }

  Library& def(const char* schema) {
    check_status(sdk_stable_library_def(handle_, schema));
    return *this;
  }
  // An unboxed kernel, adapted (detail::unboxed_adapter).
  template <typename Ret, typename... Args>
  Library& impl(const char* name, Ret (*fn)(Args...)) {
    check_status(sdk_stable_library_impl(handle_, name, &detail::unboxed_adapter<Ret, Args...>,
                                         reinterpret_cast<void*>(fn)));
    return *this;
  }
  // A boxed kernel (Note [Stable handle ownership] for what it may do with the stack).
  Library& impl(const char* name, sdk_stable_boxed_kernel fn, void* ctx = nullptr) {
    check_status(sdk_stable_library_impl(handle_, name, fn, ctx));
    return *this;
  }
  // Note [Stable device backends] (stable/c/shim.h), in an IMPL block of aten for the device's
  // key: the SDK's allocation, transfer, resize_ and item() kernels; `local_copy` copies between
  // two tensors of the device (same shape, any strides and dtypes). Needs SDK_STABLE_ABI_VERSION 2.
  Library& impl_device_kernels(void (*local_copy)(const Tensor& dst, const Tensor& src)) {
    check_status(sdk_stable_library_impl_device_kernels(handle_, &detail::local_copy_adapter,
                                                        reinterpret_cast<void*>(local_copy)));
    return *this;
  }
  // In an IMPL block of namespace _ for the device's key: the SDK's CPU fallback for every
  // operator the backend has no kernel for.
  Library& fallback_cpu() {
    check_status(sdk_stable_library_fallback_cpu(handle_));
    return *this;
  }
  sdk_stable_library handle() const { return handle_; }

 private:
  sdk_stable_library handle_ = nullptr;
};

namespace detail {

// The object behind STABLE_SDK_LIBRARY*: registers during static initialisation and
// reports (never throws) what fails there, for the loader to raise (as SDK_LIBRARY does).
class StaticLibrary {
 public:
  using InitFn = void (*)(Library&);
  StaticLibrary(Library::Kind kind, InitFn fn, const char* ns, const char* key, const char* file,
                uint32_t line) noexcept {
    try {
      lib_.emplace(kind, ns, key, file, line);
      fn(*lib_);
    } catch (const std::exception& e) {
      try {
        std::string msg = std::string("while running the STABLE_SDK_LIBRARY block for namespace '") + ns + "' at " +
                          file + ":" + std::to_string(line) + ": " + e.what();
        sdk_stable_report_registration_error(msg.c_str());
      } catch (...) {
        sdk_stable_report_registration_error(e.what());
      }
    }
  }

 private:
  std::optional<Library> lib_;
};

}  // namespace detail
}  // namespace sdk::stable

#define STABLE_SDK_CONCAT_INNER(a, b) a##b
#define STABLE_SDK_CONCAT(a, b) STABLE_SDK_CONCAT_INNER(a, b)

#define STABLE_SDK_LIBRARY(ns, m)                                                                          \
  static void STABLE_SDK_LIBRARY_init_##ns(::sdk::stable::Library&);                                     \
  static const ::sdk::stable::detail::StaticLibrary STABLE_SDK_LIBRARY_static_init_##ns(                 \
      ::sdk::stable::Library::DEF, &STABLE_SDK_LIBRARY_init_##ns, #ns, nullptr, __FILE__, __LINE__);     \
  void STABLE_SDK_LIBRARY_init_##ns(::sdk::stable::Library& m)

#define STABLE_SDK_LIBRARY_FRAGMENT(ns, m) STABLE_SDK_LIBRARY_FRAGMENT_UID(ns, m, __COUNTER__)
#define STABLE_SDK_LIBRARY_FRAGMENT_UID(ns, m, uid)                                                         \
  static void STABLE_SDK_CONCAT(STABLE_SDK_LIBRARY_FRAGMENT_init_##ns##_, uid)(::sdk::stable::Library&);   \
  static const ::sdk::stable::detail::StaticLibrary STABLE_SDK_CONCAT(                                     \
      STABLE_SDK_LIBRARY_FRAGMENT_static_init_##ns##_, uid)(                                               \
      ::sdk::stable::Library::FRAGMENT, &STABLE_SDK_CONCAT(STABLE_SDK_LIBRARY_FRAGMENT_init_##ns##_, uid), \
      #ns, nullptr, __FILE__, __LINE__);                                                                   \
  void STABLE_SDK_CONCAT(STABLE_SDK_LIBRARY_FRAGMENT_init_##ns##_, uid)(::sdk::stable::Library & m)

#define STABLE_SDK_LIBRARY_IMPL(ns, k, m) STABLE_SDK_LIBRARY_IMPL_UID(ns, k, m, __COUNTER__)
#define STABLE_SDK_LIBRARY_IMPL_UID(ns, k, m, uid)                                                          \
  static void STABLE_SDK_CONCAT(STABLE_SDK_LIBRARY_IMPL_init_##ns##_##k##_, uid)(::sdk::stable::Library&); \
  static const ::sdk::stable::detail::StaticLibrary STABLE_SDK_CONCAT(                                     \
      STABLE_SDK_LIBRARY_IMPL_static_init_##ns##_##k##_, uid)(                                             \
      ::sdk::stable::Library::IMPL, &STABLE_SDK_CONCAT(STABLE_SDK_LIBRARY_IMPL_init_##ns##_##k##_, uid),   \
      #ns, #k, __FILE__, __LINE__);                                                                        \
  void STABLE_SDK_CONCAT(STABLE_SDK_LIBRARY_IMPL_init_##ns##_##k##_, uid)(::sdk::stable::Library & m)
