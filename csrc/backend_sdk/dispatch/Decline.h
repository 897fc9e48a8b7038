// Typed kernels that can decline a call: the call then runs through the backend's fallback.
//
//   sdk::Tensor acme_add(const sdk::Tensor& self, const sdk::Tensor& other, const sdk::Scalar& alpha) {
//     SDK_DECLINE_IF(self.dtype() != other.dtype(), "mixed dtypes");   // before writing anything
//     ...
//   }
//   SDK_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("add.Tensor", sdk::declinable(&acme_add)); }
//
// Note [Declining kernels]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A vendor's kernel often covers part of an operator (some dtypes, contiguous inputs, equal shapes);
// the rest is served well enough by the backend's fallback (normally the SDK's CPU fallback,
// ops/DeviceOps.h). Instead of re-boxing the arguments and calling the fallback by hand, the kernel
// calls sdk::decline(reason) (or SDK_DECLINE_IF) before it has written anything; the wrapper made by
// sdk::declinable() catches it and runs the fallback registered for the kernel's backend with the
// same arguments, still on the stack, and the same key set. The fallback's warning then names the
// backend, the operator and the reason ("accel's kernel for aten::add.Tensor declined this call
// (mixed dtypes); running on the CPU") once per operator and reason
// (current_decline_reason()), and every declined call is counted (decline_counts(), which the
// conformance report shows). A backend without a fallback raises NotImplementedError naming the
// operator and the reason.
//
// The wrapper is a boxed kernel (the stack must still hold the arguments when the fallback runs), so
// C++ callers of the operator box their arguments for it; Python calls are boxed anyway. A decline
// after the kernel wrote an output is the kernel's bug: the fallback recomputes, but an in-place
// argument may already have been changed.
#pragma once

#include <exception>
#include <string>
#include <tuple>
#include <vector>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/dispatch/Library.h>

namespace sdk {

// What sdk::decline() throws: not an error; a declinable() wrapper turns it into a fallback call.
class SDK_API KernelDeclined : public std::exception {
 public:
  explicit KernelDeclined(std::string reason) : reason_(std::move(reason)) {}
  const char* what() const noexcept override { return reason_.c_str(); }
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
};

// Hands the current call to the backend's fallback (Note [Declining kernels]). Only inside a kernel
// registered through sdk::declinable(); elsewhere it propagates as an error naming the reason.
[[noreturn]] SDK_API void decline(std::string reason);

namespace detail {
// Runs the fallback of `keys`' backend for a call whose arguments are still on the stack.
SDK_API void run_declined(const OperatorHandle& op, DispatchKeySet keys, Stack* stack, const std::string& reason);

// The plain function kernel's boxed adapter (KernelFunction.h), with a decline turned into the fallback's run.
template <typename Ret, typename... Args>
struct DeclinableKernel : OperatorKernel {
  FunctionKernel<Ret, Args...> inner;
  explicit DeclinableKernel(Ret (*f)(Args...)) : inner(f) {}

  static void call_boxed(OperatorKernel* self, const OperatorHandle& op, DispatchKeySet keys, Stack* stack) {
    auto* k = static_cast<DeclinableKernel*>(self);
    try {
      FunctionKernel<Ret, Args...>::call_boxed(&k->inner, op, keys, stack);  // the stack is intact until it returns
    } catch (const KernelDeclined& d) {
      run_declined(op, keys, stack, d.reason());
    }
  }
};
}  // namespace detail

// A kernel that may call sdk::decline() (Note [Declining kernels]); register it with m.impl.
template <typename Ret, typename... Args>
CppFunction declinable(Ret (*fn)(Args...)) {
  using Functor = detail::DeclinableKernel<Ret, Args...>;
  // Not std::make_shared: see KernelFunction::make_from_unboxed.
  return CppFunction::make_from_boxed(&Functor::call_boxed, std::shared_ptr<OperatorKernel>(new Functor(fn)));
}

// While a declined call's fallback runs on this thread: its reason (else null). The fallback's
// warning reads it.
SDK_API const std::string* current_decline_reason();

struct DeclineCount {
  std::string op;      // "aten::add.Tensor"
  std::string reason;  // what the kernel passed to decline()
  int64_t count;
};
// Declined calls since the start (or the last reset), by operator and reason.
SDK_API std::vector<DeclineCount> decline_counts();
SDK_API void reset_decline_counts();

}  // namespace sdk

// Declines the call (Note [Declining kernels]) when `cond` holds; the message parts are streamed.
#define SDK_DECLINE_IF(cond, ...)                                     \
  do {                                                                \
    if (cond) ::sdk::decline(::sdk::detail::str(__VA_ARGS__));        \
  } while (0)
