// Note [Kernel checker] (dispatch/detail/KernelChecker.h).
#include <backend_sdk/dispatch/detail/KernelChecker.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/dispatch/Dispatcher.h>
#include <backend_sdk/runtime/CachingAllocator.h>

namespace sdk::detail {

namespace {

bool env_requested() {
  static const bool on = [] {
    const char* v = std::getenv("BACKEND_SDK_CHECK_KERNELS");
    const bool requested = v != nullptr && v[0] != '\0' && std::strcmp(v, "0") != 0;
    if (requested) runtime::set_guard_regions(true);  // Note [Allocator guard regions]
    return requested;
  }();
  return on;
}

std::atomic<int> g_switch{-1};  // -1: not set (the environment decides), 0 off, 1 on
std::atomic<int64_t> g_checked{0};

bool is_backend_key(DispatchKey key) {
  return key == DispatchKey::PrivateUse1 || key == DispatchKey::PrivateUse2 || key == DispatchKey::PrivateUse3;
}

bool on_a_device(const Tensor& t) { return t.defined() && !t.is_cpu() && !t.is_meta(); }

Tensor meta_twin(const Tensor& t) {
  const int64_t itemsize = static_cast<int64_t>(t.itemsize());
  const int64_t elems = (static_cast<int64_t>(t.storage()->nbytes()) + itemsize - 1) / itemsize;
  Tensor meta = make_tensor({elems}, t.dtype(), Device(DeviceType::Meta));
  meta.impl()->set_sizes_and_strides(t.sizes(), t.strides(), t.storage_offset());
  return meta;
}

template <typename F>
void for_each_tensor(const IValue& v, F&& f) {
  if (v.is_tensor()) {
    f(v.to_tensor());
  } else if (v.is_tensor_list()) {
    for (const Tensor& t : v.to_tensor_list()) f(t);
  }
}

IValue to_meta(const IValue& v) {
  if (v.is_tensor()) {
    const Tensor& t = v.to_tensor();
    return on_a_device(t) ? IValue(meta_twin(t)) : v;
  }
  if (v.is_tensor_list()) {
    std::vector<Tensor> out;
    for (const Tensor& t : v.to_tensor_list()) out.push_back(on_a_device(t) ? meta_twin(t) : t);
    return IValue(std::move(out));
  }
  return v;
}

// Note [Kernel checker]: a guard overwritten after the storage of `t` (an argument or a result of the call).
void check_guard(const Tensor& t, const std::string& who, const std::string& what) {
  if (!on_a_device(t) || !t.storage() || !is_privateuse(t.device().type)) return;
  std::string overrun = runtime::caching_allocator(t.device().type)->check_guard(t.storage()->data_ptr());
  SDK_CHECK(overrun.empty(), "kernel check (BACKEND_SDK_CHECK_KERNELS): ", who, " wrote past the end of ", what,
            ": ", overrun);
}

std::string sizes_str(IntArrayRef s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

struct CheckedKernel : OperatorKernel {
  KernelFunction inner;
  DispatchKey key;
  explicit CheckedKernel(KernelFunction k, DispatchKey key) : inner(std::move(k)), key(key) {}

  static void call_boxed(OperatorKernel* self, const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
    auto* k = static_cast<CheckedKernel*>(self);
    if (!kernel_checks_enabled()) return k->inner.call_boxed(op, ks, stack);
    const FunctionSchema& schema = op.schema();
    const size_t n = schema.arguments.size();
    SDK_CHECK(stack->size() >= n, "kernel check: the stack of ", op.name(), " holds fewer than ", n, " arguments");
    Stack args(stack->end() - n, stack->end());
    Stack meta;
    meta.reserve(n);
    std::optional<Device> device;
    for (const IValue& v : args) {
      for_each_tensor(v, [&](const Tensor& t) {
        if (!device && on_a_device(t)) device = t.device();
      });
      meta.push_back(to_meta(v));
    }
    const Stack meta_args = meta;  // the boxed call consumes `meta`; a view return is compared with these
    bool have_meta = true;
    try {
      op.redispatch_boxed(DispatchKeySet(DispatchKey::Meta), &meta);
    } catch (const Error&) {
      // No Meta kernel: nothing to compare with. Any other error is the operator's own (bad arguments):
      // the kernel gets to raise it.
      have_meta = false;
    }
    k->inner.call_boxed(op, ks, stack);
    const std::string who = device_type_name(device_type_for(ks.highest_backend())) + "'s kernel for " + op.name();
    const size_t m = schema.returns.size();
    if (runtime::guard_regions_enabled()) {
      // Writes past an allocation (Note [Allocator guard regions]): every device tensor of the call.
      for (size_t i = 0; i < n; ++i) {
        const std::string what = "argument '" + schema.arguments[i].name + "'";
        for_each_tensor(args[i], [&](const Tensor& t) { check_guard(t, who, what); });
      }
      for (size_t j = 0; stack->size() >= m && j < m; ++j) {
        for_each_tensor((*stack)[stack->size() - m + j],
                        [&](const Tensor& t) { check_guard(t, who, "result " + std::to_string(j)); });
      }
    }
    if (!have_meta) return;
    g_checked.fetch_add(1, std::memory_order_relaxed);
    SDK_CHECK(stack->size() >= m && meta.size() >= m, "kernel check: ", who, " left ", stack->size(),
              " values on the stack; the schema returns ", m);
    for (size_t j = 0; j < m; ++j) {
      const IValue& got = (*stack)[stack->size() - m + j];
      const IValue& want = meta[meta.size() - m + j];
      if (!want.is_tensor()) continue;
      if (!want.to_tensor().defined()) {
        // An undefined result (a backward operator's masked-off gradient): the kernel's must be one too.
        SDK_CHECK(!(got.is_tensor() && got.to_tensor().defined()), "kernel check (BACKEND_SDK_CHECK_KERNELS): ", who,
                  " returned a tensor as result ", j, "; the Meta kernel returns an undefined tensor (None)");
        continue;
      }
      SDK_CHECK(got.is_tensor() && got.to_tensor().defined(), "kernel check (BACKEND_SDK_CHECK_KERNELS): ", who,
                " returned no tensor as result ", j, "; the Meta kernel returns one");
      const Tensor& r = got.to_tensor();
      const Tensor& w = want.to_tensor();
      SDK_CHECK(r.sizes().equals(w.sizes()), "kernel check (BACKEND_SDK_CHECK_KERNELS): ", who,
                " returned result ", j, " of shape ", sizes_str(r.sizes()), ", but the operator's Meta kernel gives ",
                sizes_str(w.sizes()));
      SDK_CHECK(r.dtype() == w.dtype(), "kernel check (BACKEND_SDK_CHECK_KERNELS): ", who, " returned result ", j,
                " of dtype ", scalar_type_name(r.dtype()), ", but the operator's Meta kernel gives ",
                scalar_type_name(w.dtype()));
      if (device) {
        SDK_CHECK(r.device() == *device, "kernel check (BACKEND_SDK_CHECK_KERNELS): ", who, " returned result ",
                  j, " on ", r.device().str(), ", but the call's tensors are on ", device->str());
      }
      const Argument& ret = schema.returns[j];
      if (ret.is_write()) {
        // In-place / out=: the return is the argument it names.
        for (size_t i = 0; i < n; ++i) {
          const Argument& a = schema.arguments[i];
          if (!a.alias_info || a.alias_info->before_sets != ret.alias_info->before_sets || !args[i].is_tensor()) {
            continue;
          }
          SDK_CHECK(r.impl() == args[i].to_tensor().impl(), "kernel check (BACKEND_SDK_CHECK_KERNELS): ", who,
                    " returned a new tensor as result ", j, "; an in-place or out= kernel returns its argument '",
                    a.name, "' itself");
        }
      } else if (ret.alias_info) {
        // A view ("Tensor(a)"): where the Meta kernel returns a view of the argument (not a copy, as
        // contiguous() of a non-contiguous tensor may), the operator decides its layout, so the kernel's result
        // must share the argument's storage with the Meta kernel's strides and offset.
        for (size_t i = 0; i < n; ++i) {
          const Argument& a = schema.arguments[i];
          if (!a.alias_info || a.alias_info->before_sets != ret.alias_info->before_sets || !args[i].is_tensor() ||
              !args[i].to_tensor().defined() || !meta_args[i].is_tensor() ||
              meta_args[i].to_tensor().storage().get() != w.storage().get()) {
            continue;
          }
          SDK_CHECK(r.storage().get() == args[i].to_tensor().storage().get(),
                    "kernel check (BACKEND_SDK_CHECK_KERNELS): ", who, " returned result ", j,
                    " in new storage; a view operator returns a view of its argument '", a.name, "'");
          SDK_CHECK(r.strides().equals(w.strides()) && r.storage_offset() == w.storage_offset(),
                    "kernel check (BACKEND_SDK_CHECK_KERNELS): ", who, " returned result ", j, " with strides ",
                    sizes_str(r.strides()), " and storage offset ", r.storage_offset(),
                    ", but the operator's Meta kernel gives strides ", sizes_str(w.strides()), " and offset ",
                    w.storage_offset());
        }
      } else {
        for (size_t i = 0; i < n; ++i) {
          for_each_tensor(args[i], [&](const Tensor& t) {
            SDK_CHECK(!t.defined() || t.storage().get() != r.storage().get(),
                      "kernel check (BACKEND_SDK_CHECK_KERNELS): ", who, " returned result ", j,
                      " sharing storage with its argument '", schema.arguments[i].name,
                      "'; a functional kernel returns fresh storage");
          });
        }
      }
    }
  }
};

}  // namespace

bool kernel_checks_requested() {
  int s = g_switch.load(std::memory_order_relaxed);
  return s < 0 ? env_requested() : s == 1;
}

void set_kernel_checks(bool enabled) {
  g_switch.store(enabled ? 1 : 0, std::memory_order_relaxed);
  runtime::set_guard_regions(enabled);  // Note [Allocator guard regions]
}

bool kernel_checks_enabled() { return kernel_checks_requested(); }

int64_t kernel_checks_run() { return g_checked.load(std::memory_order_relaxed); }

KernelFunction maybe_checked_kernel(const std::string& op, DispatchKey key, KernelFunction kernel) {
  if (!is_backend_key(key) || !kernel_checks_requested() || kernel.is_fallthrough()) return kernel;
  (void)op;
  // Not std::make_shared: see KernelFunction::make_from_unboxed.
  return KernelFunction::make_from_boxed(&CheckedKernel::call_boxed,
                                         std::shared_ptr<OperatorKernel>(new CheckedKernel(std::move(kernel), key)));
}

}  // namespace sdk::detail
