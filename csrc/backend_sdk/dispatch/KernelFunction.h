// KernelFunction: one registered kernel, callable boxed and (for C++ kernels) unboxed.
#pragma once

#include <memory>
#include <typeinfo>

#include <backend_sdk/dispatch/Boxing.h>
#include <backend_sdk/dispatch/KernelCrash.h>

namespace sdk {

class OperatorHandle;

namespace detail {
// Defined in Dispatcher.h (needs the complete OperatorHandle).
template <typename Ret, typename... Args>
Ret redispatch_below_autograd(const OperatorHandle& op, DispatchKeySet keys, Args... args);
}  // namespace detail

// Base of kernel functors (C++ function wrappers, Python callables, ...).
struct SDK_API OperatorKernel {
  virtual ~OperatorKernel() = default;
  // Set for kernels from libraries outside the SDK: what a crash report
  // names (Note [Kernel crash reports], KernelCrash.h).
  const char* crash_label = nullptr;
};

// A boxed kernel pops the operator's arguments from the end of the stack and
// pushes its returns.
using BoxedKernelFn = void (*)(OperatorKernel* functor, const OperatorHandle& op, DispatchKeySet keys,
                               Stack* stack);

class SDK_API KernelFunction {
 public:
  KernelFunction() = default;

  // A fallthrough kernel is never called: its key is removed from the
  // operator's key mask so dispatch goes straight past it.
  static KernelFunction make_fallthrough();
  static KernelFunction make_from_boxed(BoxedKernelFn fn, std::shared_ptr<OperatorKernel> functor = nullptr);
  // A boxed autograd fallback whose unboxed calls skip it (redispatching below
  // Autograd without boxing) when no tensor argument requires grad; see
  // Note [Autograd fallback fast path] (csrc/backend_sdk/ops/detail/Autograd.h).
  static KernelFunction make_autograd_fallback(BoxedKernelFn fn, std::shared_ptr<OperatorKernel> functor = nullptr);
  // From a function pointer `Ret(*)(Args...)` or `Ret(*)(DispatchKeySet, Args...)`,
  // with Args among Note [Kernel argument types]. A boxed adapter is generated.
  template <typename Ret, typename... Args>
  static KernelFunction make_from_unboxed(Ret (*fn)(Args...));

  bool is_valid() const { return boxed_ != nullptr; }
  bool is_fallthrough() const;
  bool has_unboxed() const { return unboxed_ != nullptr; }
  bool skips_without_grad() const { return skip_without_grad_; }
  // The code the boxed entry runs (for telling which library a kernel is from).
  const void* boxed_code() const { return reinterpret_cast<const void*>(boxed_); }
  // Note [Kernel crash reports]: from now on every call of this kernel marks
  // the thread as running `label` (immortal). Once, at registration.
  void track_crashes(const char* label);
  // Number of schema arguments the C++ signature takes (-1 for boxed kernels).
  int num_cpp_args() const { return num_cpp_args_; }
  int num_cpp_returns() const { return num_cpp_returns_; }

  void call_boxed(const OperatorHandle& op, DispatchKeySet keys, Stack* stack) const {
    boxed_(functor_.get(), op, keys, stack);
  }

  // Calls the unboxed kernel directly when it has one with this exact
  // signature, else boxes the arguments and calls the boxed kernel.
  template <typename Ret, typename... Args>
  Ret call(const OperatorHandle& op, DispatchKeySet keys, Args... args) const {
    if (SDK_LIKELY(unboxed_ != nullptr)) {
      if (SDK_LIKELY(signature_ == &typeid(Ret(Args...)) || *signature_ == typeid(Ret(Args...)))) {
        using Unboxed = Ret (*)(OperatorKernel*, DispatchKeySet, Args...);
        return reinterpret_cast<Unboxed>(unboxed_)(functor_.get(), keys, std::forward<Args>(args)...);
      }
      signature_mismatch(op, typeid(Ret(Args...)));
    }
    if (SDK_UNLIKELY(skip_without_grad_) && !boxing::any_requires_grad(args...)) {
      return detail::redispatch_below_autograd<Ret, Args...>(op, keys, std::forward<Args>(args)...);
    }
    Stack stack;
    stack.reserve(sizeof...(Args));
    (stack.push_back(boxing::to_ivalue(args)), ...);
    call_boxed(op, keys, &stack);
    return boxing::Returns<Ret>::pop(stack);
  }

 private:
  [[noreturn]] void signature_mismatch(const OperatorHandle& op, const std::type_info& called) const;

  std::shared_ptr<OperatorKernel> functor_;
  BoxedKernelFn boxed_ = nullptr;
  void* unboxed_ = nullptr;
  const std::type_info* signature_ = nullptr;
  // The adapters track_crashes switches to (make_from_unboxed); a boxed-only
  // kernel is wrapped instead.
  BoxedKernelFn tracked_boxed_ = nullptr;
  void* tracked_unboxed_ = nullptr;
  int num_cpp_args_ = -1;
  int num_cpp_returns_ = -1;
  bool skip_without_grad_ = false;
};

namespace detail {

template <typename Ret, typename... Args>
struct FunctionKernel : OperatorKernel {
  Ret (*fn)(Args...);
  explicit FunctionKernel(Ret (*f)(Args...)) : fn(f) {}

  static Ret call_unboxed(OperatorKernel* self, DispatchKeySet, Args... args) {
    return static_cast<FunctionKernel*>(self)->fn(std::forward<Args>(args)...);
  }
  static void call_boxed(OperatorKernel* self, const OperatorHandle&, DispatchKeySet, Stack* stack) {
    call_boxed_impl(static_cast<FunctionKernel*>(self), stack, std::index_sequence_for<Args...>{});
  }
  using Signature = Ret(Args...);  // of call_unboxed after (self, keys): CrashTracked
  template <size_t... I>
  static void call_boxed_impl(FunctionKernel* self, Stack* stack, std::index_sequence<I...>) {
    constexpr size_t n = sizeof...(Args);
    IValue* base = stack->data() + stack->size() - n;
    (void)base;
    if constexpr (std::is_void_v<Ret>) {
      self->fn(boxing::IValueTo<Args>::get(base[I])...);
      stack->resize(stack->size() - n);
    } else {
      Ret r = self->fn(boxing::IValueTo<Args>::get(base[I])...);
      stack->resize(stack->size() - n);
      boxing::Returns<Ret>::push(*stack, std::move(r));
    }
  }
};

// Same, for kernels whose first parameter is the DispatchKeySet.
template <typename Ret, typename... Args>
struct KeySetFunctionKernel : OperatorKernel {
  Ret (*fn)(DispatchKeySet, Args...);
  explicit KeySetFunctionKernel(Ret (*f)(DispatchKeySet, Args...)) : fn(f) {}

  static Ret call_unboxed(OperatorKernel* self, DispatchKeySet ks, Args... args) {
    return static_cast<KeySetFunctionKernel*>(self)->fn(ks, std::forward<Args>(args)...);
  }
  static void call_boxed(OperatorKernel* self, const OperatorHandle&, DispatchKeySet ks, Stack* stack) {
    call_boxed_impl(static_cast<KeySetFunctionKernel*>(self), ks, stack, std::index_sequence_for<Args...>{});
  }
  using Signature = Ret(Args...);  // of call_unboxed after (self, keys): CrashTracked
  template <size_t... I>
  static void call_boxed_impl(KeySetFunctionKernel* self, DispatchKeySet ks, Stack* stack,
                              std::index_sequence<I...>) {
    constexpr size_t n = sizeof...(Args);
    IValue* base = stack->data() + stack->size() - n;
    (void)base;
    if constexpr (std::is_void_v<Ret>) {
      self->fn(ks, boxing::IValueTo<Args>::get(base[I])...);
      stack->resize(stack->size() - n);
    } else {
      Ret r = self->fn(ks, boxing::IValueTo<Args>::get(base[I])...);
      stack->resize(stack->size() - n);
      boxing::Returns<Ret>::push(*stack, std::move(r));
    }
  }
};

// Note [Kernel crash reports]: a functor's two entries, marking the thread
// while they run (what KernelFunction::track_crashes switches to).
template <typename Functor, typename Sig = typename Functor::Signature>
struct CrashTracked;
template <typename Functor, typename Ret, typename... Args>
struct CrashTracked<Functor, Ret(Args...)> {
  static Ret call_unboxed(OperatorKernel* self, DispatchKeySet ks, Args... args) {
    RunningKernelScope scope(self->crash_label);
    return Functor::call_unboxed(self, ks, std::forward<Args>(args)...);
  }
  static void call_boxed(OperatorKernel* self, const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
    RunningKernelScope scope(self->crash_label);
    Functor::call_boxed(self, op, ks, stack);
  }
};

template <typename Ret, typename... Args>
struct KernelFactory {
  using Functor = FunctionKernel<Ret, Args...>;
  static constexpr int num_args = sizeof...(Args);
  static const std::type_info& signature() { return typeid(Ret(Args...)); }
};
template <typename Ret, typename... Args>
struct KernelFactory<Ret, DispatchKeySet, Args...> {
  using Functor = KeySetFunctionKernel<Ret, Args...>;
  static constexpr int num_args = sizeof...(Args);
  static const std::type_info& signature() { return typeid(Ret(Args...)); }
};

}  // namespace detail

template <typename Ret, typename... Args>
KernelFunction KernelFunction::make_from_unboxed(Ret (*fn)(Args...)) {
  using Factory = detail::KernelFactory<Ret, Args...>;
  using Functor = typename Factory::Functor;
  KernelFunction k;
  // Not std::make_shared: it emits a STB_GNU_UNIQUE symbol into the vendor's
  // library, which glibc then refuses to unload (see test_cpp_registration.py).
  k.functor_ = std::shared_ptr<Functor>(new Functor(fn));
  k.boxed_ = &Functor::call_boxed;
  k.unboxed_ = reinterpret_cast<void*>(&Functor::call_unboxed);
  k.tracked_boxed_ = &detail::CrashTracked<Functor>::call_boxed;
  k.tracked_unboxed_ = reinterpret_cast<void*>(&detail::CrashTracked<Functor>::call_unboxed);
  k.signature_ = &Factory::signature();
  k.num_cpp_args_ = Factory::num_args;
  k.num_cpp_returns_ = static_cast<int>(boxing::Returns<Ret>::count);
  return k;
}

}  // namespace sdk
