// Autocast: per-thread state and the cast-policy kernels at the Autocast<backend> keys.
//
// Note [Autocast]
// ~~~~~~~~~~~~~~~
// As in PyTorch, autocast is a dispatch functionality above Autograd: a kernel at
// Autocast<backend> casts the floating inputs per the operator's CastPolicy and calls the operator
// again with the Autocast functionality excluded, so the casts are recorded by autograd (backward
// runs in the dtypes forward used) and the operators a composite decomposes into are not cast a
// second time. Every tensor carries its backend's Autocast key; the functionality is excluded on
// every thread by default (Note [TLS key sets]), so with autocast off no call reaches these kernels.
//
// Per-device-type enabling: PyTorch keeps one excluded bit per Autocast<backend> runtime key. Our
// key sets cannot exclude a runtime key without removing its backend (Note [TLS key sets]), so the
// thread keeps a mask of enabled device types and excludes the Autocast *functionality* exactly when
// the mask is empty. A kernel reached for a device type whose autocast is off (cpu autocast on, an
// accel tensor) redispatches below Autocast unchanged.
//
// The table: ops/detail/AutocastPolicies.def, PyTorch 2.13's lists (AutocastCPU's for cpu, the
// shared AT_FORALL_* lists for the privateuse backends). Operators without an entry keep the
// fallthrough (ops/Fallthroughs.cpp), so their inner operators are still autocast. A vendor
// replaces an entry by registering its own kernel at its Autocast key (ops/Autocast.h); Python
// custom operators use library.register_autocast (backend_sdk/library.py).
//
// Note [Autocast cache]
// ~~~~~~~~~~~~~~~~~~~~~
// PyTorch's heuristic: the cast of a float32 leaf that requires grad (a weight) to the autocast
// dtype is cached, so a weight used by many operators in one forward is cast once. One cache for
// the process, behind a mutex, keyed by TensorImpl*; an entry holds the source tensor too, so its
// address cannot be reused by another tensor while the entry lives. PyTorch holds a weak reference
// for the same reason, so a weight dropped inside a region does not stay alive because of the cache;
// our intrusive_ptr has no weak count, so the entry holds a strong one and each new cache entry
// first sweeps the entries whose source only the cache still holds (use_count() == 1: nothing else
// can reach that tensor, so its entry can never be hit again) and frees them with their casts. A
// dropped weight's memory and its cast are so freed at the next cached cast of the region (PyTorch:
// the weight's storage at once, its cast at the region's end), and everything at the region's end,
// when the cache is cleared: the outermost autocast region's exit, decrement_nesting() == 0.
// Views and tensors with a grad_fn are never cached (their values can change under the same
// TensorImpl without the leaf's identity); neither are casts with cache_enabled=False.
#include <backend_sdk/ops/Autocast.h>

#include <array>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/dispatch/Dispatcher.h>
#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/Functions.h>
#include <backend_sdk/ops/detail/Autograd.h>

namespace sdk::autocast {
namespace {

constexpr uint8_t bit_of(DeviceType t) { return static_cast<uint8_t>(1u << static_cast<int>(t)); }

thread_local uint8_t enabled_mask = 0;
thread_local std::array<ScalarType, kNumDeviceTypes> autocast_dtype = {
    ScalarType::BFloat16,   // CPU
    ScalarType::Undefined,  // Meta
    ScalarType::Float16,    // PrivateUse1
    ScalarType::Float16,    // PrivateUse2
    ScalarType::Float16,    // PrivateUse3
};
thread_local bool cache_enabled = true;
thread_local int nesting = 0;

struct CacheEntry {
  Tensor source;  // keeps the key's TensorImpl alive (Note [Autocast cache])
  Tensor cast;
};
std::mutex cache_mutex;
std::unordered_map<const TensorImpl*, CacheEntry>& cache() {
  static auto* c = new std::unordered_map<const TensorImpl*, CacheEntry>();  // never destroyed: exit order
  return *c;
}

int index_of(DeviceType t) {
  int i = static_cast<int>(t);
  SDK_CHECK_VALUE(i >= 0 && i < kNumDeviceTypes, "autocast: invalid device type ", i);
  return i;
}

bool is_eligible(const Tensor& t, DeviceType device_type) {
  return t.defined() && t.device().type == device_type && is_floating_type(t.scalar_type()) &&
         t.scalar_type() != ScalarType::Float64;
}

bool is_cacheable(const Tensor& arg) {
  if (!cache_enabled || arg.scalar_type() != ScalarType::Float32 || !autograd::requires_grad(arg)) return false;
  const auto* meta = autograd::maybe_autograd_meta(arg);
  if (meta != nullptr && meta->grad_fn) return false;  // not a leaf
  return !autograd::view_base(arg).defined();
}

// PyTorch's at::autocast::prioritize: float32 wins over the lower precision; float64 inputs are ignored.
ScalarType prioritize(ScalarType current, const Tensor& t, DeviceType device_type, const std::string& op) {
  if (!is_eligible(t, device_type)) return current;
  ScalarType lower = get_autocast_dtype(device_type);
  ScalarType next = t.scalar_type();
  if (current == ScalarType::Float32 || next == ScalarType::Float32) return ScalarType::Float32;
  SDK_CHECK(current == lower && next == lower, op, ": unexpected floating ScalarType ", scalar_type_name(next),
            " in at::autocast::prioritize (the autocast dtype is ", scalar_type_name(lower), ")");
  return lower;
}

// Applies `f` to every tensor argument of the call (Tensor, Tensor?, Tensor[], Tensor?[]).
template <typename F>
void for_each_tensor(IValue* args, size_t n, F&& f) {
  for (size_t i = 0; i < n; ++i) {
    IValue& v = args[i];
    if (v.is_tensor()) {
      f(v.to_tensor());
    } else if (v.is_tensor_list()) {
      auto list = v.to_tensor_list();
      for (auto& t : list) f(t);
      v = IValue(std::move(list));
    } else if (v.is_list()) {
      for (auto& e : v.to_list())
        if (e.is_tensor()) f(e.to_tensor());
    }
  }
}

DispatchKeySet below_autocast(DispatchKeySet ks) { return ks & keys_after(DispatchKey::AutocastFunctionality); }

struct PolicyKernel final : OperatorKernel {
  explicit PolicyKernel(CastPolicy p) : policy(p) {}
  CastPolicy policy;
};

void autocast_boxed(OperatorKernel* functor, const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  DeviceType device_type = device_type_for(ks.highest_backend());
  if (!is_autocast_enabled(device_type)) {
    op.redispatch_boxed(below_autocast(ks), stack);
    return;
  }
  CastPolicy policy = static_cast<PolicyKernel*>(functor)->policy;
  const auto& schema = op.schema();
  size_t n = schema.arguments.size();
  SDK_CHECK(stack->size() >= n, op.name(), ": autocast kernel called with ", stack->size(), " arguments, expected ", n);
  IValue* args = stack->data() + (stack->size() - n);
  ExcludeDispatchKeyGuard no_autocast(DispatchKey::AutocastFunctionality);
  switch (policy) {
    case CastPolicy::lower_precision_fp: {
      ScalarType to = get_autocast_dtype(device_type);
      for_each_tensor(args, n, [&](Tensor& t) { t = cached_cast(to, t, device_type); });
      break;
    }
    case CastPolicy::fp32:
      for_each_tensor(args, n, [&](Tensor& t) { t = cached_cast(ScalarType::Float32, t, device_type); });
      break;
    case CastPolicy::fp32_set_opt_dtype: {
      // PyTorch: only when the first argument is eligible; an explicit dtype is respected.
      if (n > 0 && args[0].is_tensor() && is_eligible(args[0].to_tensor(), device_type)) {
        for (size_t i = 0; i < n; ++i) {
          const auto& a = schema.arguments[i];
          if (a.name == "dtype" && a.type->base_kind() == TypeKind::ScalarType && args[i].is_none()) {
            args[i] = IValue(ScalarType::Float32);
          }
        }
      }
      break;
    }
    case CastPolicy::promote: {
      ScalarType to = get_autocast_dtype(device_type);
      for_each_tensor(args, n, [&](Tensor& t) { to = prioritize(to, t, device_type, op.name()); });
      for_each_tensor(args, n, [&](Tensor& t) { t = cached_cast(to, t, device_type); });
      break;
    }
    case CastPolicy::fp32_append_dtype:
      SDK_CHECK(false, op.name(), ": the fp32_append_dtype policy needs autocast_append_dtype_kernel(target)");
  }
  op.call_boxed(stack);
}

struct AppendDtypeKernel final : OperatorKernel {
  explicit AppendDtypeKernel(const char* t) : target_name(t) {}
  const char* target_name;
  std::once_flag once;
  std::optional<OperatorHandle> target;
};

void append_dtype_boxed(OperatorKernel* functor, const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  DeviceType device_type = device_type_for(ks.highest_backend());
  if (!is_autocast_enabled(device_type)) {
    op.redispatch_boxed(below_autocast(ks), stack);
    return;
  }
  auto* self = static_cast<AppendDtypeKernel*>(functor);
  std::call_once(self->once, [&] { self->target = Dispatcher::singleton().find_schema_or_throw(self->target_name); });
  size_t n = op.schema().arguments.size();
  SDK_CHECK(n > 0 && stack->size() >= n && (*stack)[stack->size() - n].is_tensor(), op.name(),
            ": the fp32_append_dtype policy needs a Tensor first argument");
  const Tensor& first = (*stack)[stack->size() - n].to_tensor();
  // PyTorch's type_from_firstarg: float32 when the first argument is eligible, else its own dtype.
  ScalarType out = is_eligible(first, device_type) ? ScalarType::Float32 : first.scalar_type();
  ExcludeDispatchKeyGuard no_autocast(DispatchKey::AutocastFunctionality);
  stack->emplace_back(out);
  self->target->call_boxed(stack);
}

}  // namespace

bool is_autocast_enabled(DeviceType device_type) { return (enabled_mask & bit_of(device_type)) != 0; }

void set_autocast_enabled(DeviceType device_type, bool enabled) {
  index_of(device_type);
  enabled_mask = enabled ? (enabled_mask | bit_of(device_type)) : (enabled_mask & ~bit_of(device_type));
  // Note [Autocast]: the functionality is excluded exactly when no device type is enabled.
  LocalDispatchKeySet s = tls_local_dispatch_key_set();
  DispatchKeySet f(DispatchKey::AutocastFunctionality);
  s.excluded = enabled_mask == 0 ? (s.excluded | f) : (s.excluded - f);
  tls_set_local_dispatch_key_set(s);
}

ScalarType get_autocast_dtype(DeviceType device_type) { return autocast_dtype[index_of(device_type)]; }
void set_autocast_dtype(DeviceType device_type, ScalarType dtype) { autocast_dtype[index_of(device_type)] = dtype; }
bool is_autocast_cache_enabled() { return cache_enabled; }
void set_autocast_cache_enabled(bool enabled) { cache_enabled = enabled; }
int increment_nesting() { return ++nesting; }
int decrement_nesting() { return --nesting; }

void clear_cache() {
  std::unordered_map<const TensorImpl*, CacheEntry> dropped;
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    dropped.swap(cache());
  }
  // `dropped` frees the casts here, outside the lock (a free may call into a device).
}

size_t cache_size() {
  std::lock_guard<std::mutex> lock(cache_mutex);
  return cache().size();
}

Tensor cached_cast(ScalarType to_type, const Tensor& arg, DeviceType device_type) {
  if (!is_eligible(arg, device_type) || arg.scalar_type() == to_type) return arg;
  if (to_type != get_autocast_dtype(device_type) || !is_cacheable(arg)) return ops::to(arg, to_type);
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    auto it = cache().find(arg.impl());
    if (it != cache().end()) return it->second.cast;
  }
  // Cast outside the lock (it dispatches, and may run Python kernels); two threads casting the same
  // weight at once both cast, and the first entry stays.
  Tensor cast = ops::to(arg, to_type);
  std::vector<CacheEntry> dropped;  // destroyed after the lock is released (a free may call into a device)
  std::lock_guard<std::mutex> lock(cache_mutex);
  auto& entries = cache();
  for (auto e = entries.begin(); e != entries.end();) {  // Note [Autocast cache]: dropped weights go
    if (e->second.source.impl_ptr().use_count() == 1) {
      dropped.push_back(std::move(e->second));
      e = entries.erase(e);
    } else {
      ++e;
    }
  }
  auto [it, inserted] = entries.emplace(arg.impl(), CacheEntry{arg, cast});
  return it->second.cast;
}

KernelFunction autocast_kernel(CastPolicy policy) {
  SDK_CHECK_VALUE(policy != CastPolicy::fp32_append_dtype,
                  "autocast_kernel: fp32_append_dtype needs a target overload: use autocast_append_dtype_kernel");
  return KernelFunction::make_from_boxed(&autocast_boxed, std::make_shared<PolicyKernel>(policy));
}

KernelFunction autocast_append_dtype_kernel(const char* target) {
  return KernelFunction::make_from_boxed(&append_dtype_boxed, std::make_shared<AppendDtypeKernel>(target));
}

}  // namespace sdk::autocast

// ---- registration from the table (ops/detail/AutocastPolicies.def) ----
namespace {
using sdk::CppFunction;
using sdk::autocast::CastPolicy;

void register_cpu(sdk::Library& m) {
#define AUTOCAST_CPU(op, policy) m.impl(#op, CppFunction(sdk::autocast::autocast_kernel(CastPolicy::policy)));
#define AUTOCAST_DEVICE(op, policy)
#define AUTOCAST_DEVICE_APPEND_DTYPE(op, target)
#include <backend_sdk/ops/detail/AutocastPolicies.def>
#undef AUTOCAST_CPU
#undef AUTOCAST_DEVICE
#undef AUTOCAST_DEVICE_APPEND_DTYPE
}

void register_device(sdk::Library& m) {
#define AUTOCAST_CPU(op, policy)
#define AUTOCAST_DEVICE(op, policy) m.impl(#op, CppFunction(sdk::autocast::autocast_kernel(CastPolicy::policy)));
#define AUTOCAST_DEVICE_APPEND_DTYPE(op, target) \
  m.impl(#op, CppFunction(sdk::autocast::autocast_append_dtype_kernel("aten::" #target)));
#include <backend_sdk/ops/detail/AutocastPolicies.def>
#undef AUTOCAST_CPU
#undef AUTOCAST_DEVICE
#undef AUTOCAST_DEVICE_APPEND_DTYPE
}
}  // namespace

SDK_LIBRARY_IMPL(aten, AutocastCPU, m) { register_cpu(m); }
SDK_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) { register_device(m); }
SDK_LIBRARY_IMPL(aten, AutocastPrivateUse2, m) { register_device(m); }
SDK_LIBRARY_IMPL(aten, AutocastPrivateUse3, m) { register_device(m); }
