// Typed errors and the SDK_CHECK family of macros. Header-only (Note [Header-only
// APIs], headeronly/header_only_apis.txt): an ABI-stable extension throws these in its
// own code, and the stable kernel adapters turn them into the C shim's statuses
// (Note [Stable status codes], stable/c/shim.h), so no exception crosses the C boundary.
//
// Note [Error kinds]
// ~~~~~~~~~~~~~~~~~~
// C++ code never aborts on user input: it throws sdk::Error carrying an
// ErrorKind. The Python bindings translate the kind into a Python exception
// type (see csrc/python/Errors.cpp):
//   Runtime        -> RuntimeError
//   Value          -> backend_sdk.ValueRuntimeError (ValueError + RuntimeError: bad argument value)
//   Type           -> backend_sdk.TypeRuntimeError  (TypeError + RuntimeError: bad type / dtype)
//   Index          -> IndexError        (index or dim out of range)
//   NotImplemented -> NotImplementedError (missing kernel)
//   OutOfMemory    -> backend_sdk.OutOfMemoryError (a MemoryError)
//   Accelerator    -> backend_sdk.AcceleratorError (a RuntimeError)
// Messages name the operator, argument and device concerned; callers add
// context with sdk::Error::add_context rather than catching and rewording.
#pragma once

#include <exception>
#include <sstream>
#include <string>

#include <backend_sdk/headeronly/Macros.h>

namespace sdk {

enum class ErrorKind : unsigned char {
  Runtime,
  Value,
  Type,
  Index,
  NotImplemented,
  OutOfMemory,
  Accelerator,
};

// Every member is inline (no key function): the class's vtable and typeinfo are emitted
// wherever it is used, so code that throws it needs nothing from libbackend_sdk. They keep
// default visibility (SDK_HEADERONLY_VISIBLE) so that a catch in one library matches a throw in another,
// which is why the layout of this class is frozen like the rest of the header-only surface.
class SDK_HEADERONLY_VISIBLE Error : public std::exception {
 public:
  Error(ErrorKind kind, std::string msg) : kind_(kind), msg_(std::move(msg)) {}
  const char* what() const noexcept override { return msg_.c_str(); }
  ErrorKind kind() const noexcept { return kind_; }
  const std::string& msg() const noexcept { return msg_; }
  // Appends a line of context ("while calling aten::add.Tensor") to the message.
  void add_context(const std::string& context) { msg_ += "\n" + context; }

 private:
  ErrorKind kind_;
  std::string msg_;
};

namespace detail {

inline void stream_all(std::ostringstream&) {}
template <typename T, typename... Rest>
void stream_all(std::ostringstream& os, const T& first, const Rest&... rest) {
  os << first;
  stream_all(os, rest...);
}

template <typename... Args>
std::string str(const Args&... args) {
  std::ostringstream os;
  stream_all(os, args...);
  return os.str();
}
// Avoid a stringstream for the common single-literal message.
inline std::string str(const char* s) { return std::string(s); }
inline std::string str(const std::string& s) { return s; }

[[noreturn]] inline void throw_error(ErrorKind kind, const char* condition, std::string msg) {
  if (msg.empty()) {
    msg = std::string("Expected ") + condition + " to be true, but got false.";
  }
  throw Error(kind, std::move(msg));
}

}  // namespace detail
}  // namespace sdk

// SDK_CHECK_KIND(kind, cond, msg...): throws sdk::Error(kind) with the streamed
// message when cond is false. The message arguments are only evaluated on failure.
//
// Note [Cold checks]
// ~~~~~~~~~~~~~~~~~~
// The message formatting lives in a noinline, cold lambda: formatted inline,
// the compiler prepares part of it (stream objects, a large stack frame) even
// when the check passes, which costs ~20 instructions per check on hot paths
// such as `a + b` on small tensors. This way a passing check is a compare and
// a branch.
#define SDK_CHECK_KIND(kind, cond, ...)                                                          \
  do {                                                                                           \
    if (SDK_UNLIKELY(!(cond))) {                                                                 \
      [&]() __attribute__((noinline, cold)) {                                                    \
        ::sdk::detail::throw_error(kind, #cond, ::sdk::detail::str("" __VA_OPT__(, ) __VA_ARGS__)); \
      }();                                                                                       \
    }                                                                                            \
  } while (0)

#define SDK_CHECK(cond, ...) SDK_CHECK_KIND(::sdk::ErrorKind::Runtime, cond, __VA_ARGS__)
#define SDK_CHECK_VALUE(cond, ...) SDK_CHECK_KIND(::sdk::ErrorKind::Value, cond, __VA_ARGS__)
#define SDK_CHECK_TYPE(cond, ...) SDK_CHECK_KIND(::sdk::ErrorKind::Type, cond, __VA_ARGS__)
#define SDK_CHECK_INDEX(cond, ...) SDK_CHECK_KIND(::sdk::ErrorKind::Index, cond, __VA_ARGS__)
#define SDK_CHECK_NOT_IMPLEMENTED(cond, ...) \
  SDK_CHECK_KIND(::sdk::ErrorKind::NotImplemented, cond, __VA_ARGS__)

// SDK_THROW(kind, msg...): unconditional throw.
#define SDK_THROW(kind, ...) ::sdk::detail::throw_error(::sdk::ErrorKind::kind, "", ::sdk::detail::str("" __VA_OPT__(, ) __VA_ARGS__))
