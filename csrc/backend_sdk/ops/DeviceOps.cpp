#include <backend_sdk/ops/DeviceOps.h>

#include <atomic>
#include <mutex>
#include <set>
#include <string>

#include <backend_sdk/dispatch/Decline.h>
#include <backend_sdk/ops/Factories.h>
#include <backend_sdk/ops/Functions.h>
#include <backend_sdk/ops/detail/Resize.h>
#include <backend_sdk/tensor/Generator.h>
#include <backend_sdk/runtime/DeviceGuard.h>
#include <backend_sdk/runtime/DeviceRegistry.h>
#include <backend_sdk/runtime/Event.h>
#include <backend_sdk/runtime/HostAllocator.h>
#include <backend_sdk/runtime/Stream.h>

namespace sdk::ops {
namespace device {
namespace {

using runtime::DeviceGuard;
using runtime::Stream;

// The device of a factory call: BackendSelect brought the call to this
// backend's kernel, so `device` names it; index -1 is the current device.
Device factory_device(std::optional<Device> device, const char* op) {
  SDK_CHECK_VALUE(device.has_value(), op, ": a device backend's factory kernel was called without a device");
  return runtime::resolve_device(*device, op);
}

void memcpy_on(Stream stream, void* dst, const void* src, size_t nbytes, sdk_memcpy_kind kind, const char* what) {
  const DeviceType type = stream.device().type;
  runtime::check_status(type, runtime::device_api(type).memcpy_async(dst, src, nbytes, kind, stream.native()), what);
}

// A contiguous tensor of `src`'s sizes and dtype on `device` (under a guard).
Tensor empty_contiguous_on(Device device, IntArrayRef sizes, ScalarType dtype) {
  DeviceGuard guard(device);
  return empty_on(device, sizes, dtype, std::nullopt, std::nullopt);
}

// `src` as a contiguous tensor on its own device (itself when it already is).
Tensor contiguous_on_device(const Tensor& src, LocalCopy local_copy) {
  if (src.is_contiguous()) return src;
  Tensor out = empty_contiguous_on(src.device(), src.sizes(), src.dtype());
  DeviceGuard guard(src.device());
  local_copy(out, src);
  return out;
}

// src viewed with `sizes` by broadcasting, with PyTorch's expand error.
Tensor expand_to(const Tensor& src, IntArrayRef sizes) {
  if (src.sizes().equals(sizes)) return src;
  const int64_t nd = static_cast<int64_t>(sizes.size()), ns = src.dim();
  SDK_CHECK_VALUE(ns <= nd, "copy_: the number of sizes provided (", nd,
                  ") must be greater or equal to the number of dimensions in the tensor (", ns, ")");
  DimVector strides(sizes.size(), 0);
  for (int64_t i = nd - 1, j = ns - 1; i >= 0; --i, --j) {
    if (j < 0) continue;
    if (src.size(j) == sizes[i]) {
      strides[i] = src.stride(j);
    } else {
      SDK_CHECK_VALUE(src.size(j) == 1, "copy_: The expanded size of the tensor (", sizes[i],
                      ") must match the existing size (", src.size(j), ") at non-singleton dimension ", i,
                      ".  Target sizes: ", sizes, ".  Tensor sizes: ", src.sizes());
    }
  }
  return make_view(src, sizes, strides, src.storage_offset(), "copy_");
}

Tensor copy_from_host(const Tensor& self, const Tensor& src, bool non_blocking, LocalCopy local_copy) {
  const Device device = self.device();
  DeviceGuard guard(device);
  Stream stream = runtime::current_stream(device);
  // The bytes to send: src broadcast and converted on the host.
  const bool as_is = src.dtype() == self.dtype() && src.sizes().equals(self.sizes()) && src.is_contiguous();
  Tensor host = src;
  if (!as_is) {
    host = make_tensor(self.sizes(), self.dtype(), Device(DeviceType::CPU));
    ops::copy_(host, src);
  }
  Tensor target = self.is_contiguous() ? self : empty_contiguous_on(device, self.sizes(), self.dtype());
  if (non_blocking) {
    // Pinned memory is sent as it is; pageable memory is staged through a
    // pinned block first, so the caller may reuse it at once.
    runtime::copy_async(stream, target.data_ptr(), host.data_ptr(), self.nbytes(), SDK_MEMCPY_HOST_TO_DEVICE);
  } else {
    memcpy_on(stream, target.data_ptr(), host.data_ptr(), self.nbytes(), SDK_MEMCPY_HOST_TO_DEVICE,
              "copy_ (host to device)");
    stream.synchronize();
  }
  if (!target.is_same(self)) local_copy(self, target);
  return self;
}

Tensor copy_to_host(const Tensor& self, const Tensor& src, bool non_blocking, LocalCopy local_copy) {
  const Device device = src.device();
  Tensor dsrc = contiguous_on_device(src, local_copy);
  DeviceGuard guard(device);
  Stream stream = runtime::current_stream(device);
  const bool direct = self.is_contiguous() && self.dtype() == src.dtype() && self.sizes().equals(src.sizes());
  Tensor host = direct ? self : make_tensor(src.sizes(), src.dtype(), Device(DeviceType::CPU));
  // Only bytes landing directly in pinned memory may arrive later
  // (non_blocking); a copy into pageable memory completes before returning.
  if (direct && non_blocking && runtime::host_allocator(device.type)->is_pinned(self.data_ptr())) {
    runtime::copy_async(stream, host.data_ptr(), dsrc.data_ptr(), src.nbytes(), SDK_MEMCPY_DEVICE_TO_HOST);
    return self;
  }
  memcpy_on(stream, host.data_ptr(), dsrc.data_ptr(), src.nbytes(), SDK_MEMCPY_DEVICE_TO_HOST,
            "copy_ (device to host)");
  stream.synchronize();
  if (!direct) ops::copy_(self, host);  // broadcast and convert on the host
  return self;
}

Tensor copy_between_devices(const Tensor& self, const Tensor& src, LocalCopy local_copy) {
  const Device from = src.device(), to = self.device();
  Tensor dsrc = contiguous_on_device(src, local_copy);
  const bool direct = self.is_contiguous() && self.dtype() == src.dtype() && self.sizes().equals(src.sizes());
  Tensor target = direct ? self : empty_contiguous_on(to, src.sizes(), src.dtype());
  Stream from_stream = runtime::current_stream(from), to_stream = runtime::current_stream(to);
  runtime::Event target_free, copied;
  target_free.record(to_stream);  // to's queued work (which may still use target) first
  from_stream.wait(target_free);
  {
    DeviceGuard guard(from);
    memcpy_on(from_stream, target.data_ptr(), dsrc.data_ptr(), src.nbytes(), SDK_MEMCPY_DEVICE_TO_DEVICE,
              "copy_ (device to device)");
  }
  copied.record(from_stream);
  to_stream.wait(copied);  // to's later work sees the bytes
  if (!direct) {
    DeviceGuard guard(to);
    local_copy(self, expand_to(target, self.sizes()));
  }
  return self;
}

}  // namespace

Tensor empty(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<int64_t> layout,
             std::optional<Device> device, std::optional<bool> pin_memory, std::optional<int64_t> memory_format) {
  Device d = factory_device(device, "empty.memory_format");
  DeviceGuard guard(d);
  return empty_on(d, size, dtype, layout, memory_format);
}

Tensor empty_strided(IntArrayRef size, IntArrayRef stride, std::optional<ScalarType> dtype,
                     std::optional<int64_t> layout, std::optional<Device> device, std::optional<bool> pin_memory) {
  Device d = factory_device(device, "empty_strided");
  DeviceGuard guard(d);
  return empty_strided_on(d, size, stride, dtype, layout);
}

Tensor resize_(const Tensor& self, IntArrayRef size, std::optional<int64_t> memory_format) {
  DeviceGuard guard(self.device());
  return resize_kernel(self, size, memory_format);
}

Scalar local_scalar_dense(const Tensor& self) {
  SDK_CHECK_VALUE(self.numel() == 1, "_local_scalar_dense: a Tensor with ", self.numel(),
                  " elements cannot be converted to Scalar");
  Tensor host = make_tensor({}, self.dtype(), Device(DeviceType::CPU));
  DeviceGuard guard(self.device());
  Stream stream = runtime::current_stream(self.device());
  memcpy_on(stream, host.data_ptr(), self.data_ptr(), self.itemsize(), SDK_MEMCPY_DEVICE_TO_HOST,
            "_local_scalar_dense (device to host)");
  stream.synchronize();
  return ops::_local_scalar_dense(host);
}

Tensor copy_(const Tensor& self, const Tensor& src, bool non_blocking, LocalCopy local_copy) {
  const Device to = self.device(), from = src.device();
  SDK_CHECK_NOT_IMPLEMENTED(!src.is_meta() || self.is_meta(), "copy_: Cannot copy out of meta tensor; no data!");
  Tensor source = expand_to(src, self.sizes());  // shape check for every direction
  if (self.is_meta()) return self;
  const bool to_host = to.type == DeviceType::CPU, from_host = from.type == DeviceType::CPU;
  SDK_CHECK_NOT_IMPLEMENTED(to_host || from_host || to.type == from.type, "copy_: copying from ", from, " to ", to,
                            " is not supported: copy through the CPU");
  self.impl()->bump_version();
  if (self.numel() == 0) return self;
  if (from_host) return copy_from_host(self, src, non_blocking, local_copy);
  if (to_host) return copy_to_host(self, src, non_blocking, local_copy);
  if (to.index == from.index) {
    DeviceGuard guard(to);
    local_copy(self, source);
    return self;
  }
  return copy_between_devices(self, src, local_copy);
}

// Note [Contract kernel registration]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// register_contract_kernels registers one copy_ kernel for every backend; it finds the backend's
// LocalCopy from the call's key set (the highest backend bit: the device side of any copy, CPU being
// the lowest). The table is written once per backend, when its library loads (the dispatcher's
// registration lock orders that write before any call that reaches the kernel) and read with
// acquire loads, so calls on other threads see it.
namespace {
std::atomic<LocalCopy> g_local_copies[kNumBackends + 1];

Tensor contract_copy_(DispatchKeySet keys, const Tensor& self, const Tensor& src, bool non_blocking) {
  const BackendComponent b = keys.highest_backend();
  const LocalCopy local_copy = g_local_copies[static_cast<int>(b)].load(std::memory_order_acquire);
  SDK_CHECK(local_copy != nullptr, "copy_: no copy within the device registered for backend ", to_string(b));
  return copy_(self, src, non_blocking, local_copy);
}
}  // namespace

void register_contract_kernels(Library& m, LocalCopy local_copy) {
  const BackendComponent b = m.key() ? to_backend_component(*m.key()) : BackendComponent::InvalidBit;
  SDK_CHECK_VALUE(b != BackendComponent::InvalidBit && b != BackendComponent::CPUBit && b != BackendComponent::MetaBit,
                  "register_contract_kernels: expected the library of a device backend (SDK_LIBRARY_IMPL(aten, "
                  "PrivateUse1, m)), got one for ", m.key() ? to_string(*m.key()) : std::string("no key"));
  SDK_CHECK_VALUE(local_copy != nullptr, "register_contract_kernels: local_copy must not be null");
  g_local_copies[static_cast<int>(b)].store(local_copy, std::memory_order_release);
  m.impl("empty.memory_format", &empty);
  m.impl("empty_strided", &empty_strided);
  m.impl("resize_", &resize_);
  m.impl("_local_scalar_dense", &local_scalar_dense);
  m.impl("copy_", &contract_copy_);
}

}  // namespace device

// ---- CPU fallback (Note [CPU fallback]) ----

namespace {

bool on_device(const Tensor& t) { return t.defined() && !t.is_cpu() && !t.is_meta(); }

Tensor to_cpu(const Tensor& t) {
  Tensor host = make_tensor(t.sizes(), t.dtype(), Device(DeviceType::CPU));
  ops::copy_(host, t);
  return host;
}

Tensor to_device(const Tensor& t, Device device) {
  Tensor out = ops::empty(t.sizes(), t.dtype(), device);
  ops::copy_(out, t);
  return out;
}

// Once per operator, and once per operator and reason for a declined call (Note [Declining kernels]).
void warn_once(const OperatorHandle& op, DeviceType backend) {
  static std::mutex mutex;
  static std::set<std::pair<std::string, std::string>> warned;
  const std::string* reason = current_decline_reason();
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!warned.insert({op.name(), reason ? "\x01" + *reason : std::string()}).second) return;
  }
  const std::string& name = device_type_name(backend);
  if (reason) {
    warn(name + "'s kernel for " + op.name() + " declined this call (" + *reason +
         "); running on the CPU. This may have performance implications.");
    return;
  }
  warn("The operator '" + op.name() + "' is not currently supported on the " + name +
       " backend and will fall back to run on the CPU. This may have performance implications.");
}

// One device argument replaced by its CPU copy; written back if mutable.
struct Moved {
  Tensor original;
  Tensor host;
  Tensor device_bytes;  // the original's whole storage, flat (see host_copy_of_storage)
  Tensor host_bytes;    // its host copy, which `host` views
};

// Note [CPU fallback: devices, overlap and generators]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Details of Note [CPU fallback] (ops/DeviceOps.h) that make a fallback call
// behave like a device kernel, not like a CPU one:
//  - devices: tensors on two devices, or a device tensor with a CPU tensor
//    that is not a 0-dim scalar, are refused with PyTorch's "Expected all
//    tensors to be on the same device" before anything is copied (the host
//    copies would otherwise hide the mistake). Tensor?[] indices may be CPU
//    tensors, as in PyTorch's index and index_put_.
//  - overlap: a mutated argument's host copy is the whole storage with the
//    argument's geometry, so the CPU kernel sees the same aliasing (an
//    expanded `self` of an in-place op is refused as on the CPU) and the
//    write-back copies the storage back; only an out= argument the kernel
//    resized is written back element by element. A read-only argument with
//    fewer storage elements than elements (expanded) is copied the same way,
//    so the CPU kernel sees its geometry and reports its sizes' overflow.
//  - generators: a `Generator?` argument (None: the device's default
//    generator) is replaced by a CPU generator holding the device
//    generator's state, and the state the CPU kernel leaves is stored back;
//    Philox numbers depend only on (seed, offset, index), so a random
//    operator served by the fallback gives the device's numbers and advances
//    the device's generator, not the CPU's.

class CpuFallback {
 public:
  CpuFallback(const OperatorHandle& op, Stack* stack) : op_(op), schema_(op.schema()), stack_(*stack) {}

  void run() {
    for (const Argument& r : schema_.returns) {
      SDK_CHECK_NOT_IMPLEMENTED(!(r.alias_info && !r.alias_info->is_write), "The operator '", op_.name(),
                                "' returns a view of its input and cannot run through the CPU fallback; the "
                                "backend must implement it");
    }
    const size_t n = schema_.arguments.size();
    const size_t base = stack_.size() - n;
    for (size_t i = 0; i < n; ++i) check_device(stack_[base + i]);
    for (size_t i = 0; i < n; ++i) move_argument(stack_[base + i], i);
    SDK_CHECK_NOT_IMPLEMENTED(device_.has_value(), "cpu_fallback: '", op_.name(),
                              "' has no tensor or device argument on a device");
    warn_once(op_, device_->type);
    for (size_t i = 0; i < n; ++i) {
      if (schema_.arguments[i].type->base_kind() == TypeKind::Generator) use_host_generator(stack_[base + i]);
    }
    op_.call_boxed(&stack_);
    for (const auto& [device_generator, host_generator] : generators_) {
      device_generator->set_state(host_generator->get_state());
    }
    write_back();
    const size_t m = schema_.returns.size();
    for (size_t i = 0; i < m; ++i) move_result(stack_[stack_.size() - m + i], schema_.returns[i]);
  }

 private:
  // Note [CPU fallback: devices, overlap and generators], devices.
  void check_device(const IValue& v) {
    auto visit = [&](const Tensor& t) {
      if (!t.defined() || t.is_meta() || (t.is_cpu() && t.dim() == 0)) return;
      if (!first_) {
        first_ = t;
      } else if (t.device() != first_->device() && (on_device(t) || on_device(*first_))) {
        check_same_device(op_.name().c_str(), *first_, t);
      }
    };
    if (v.is_tensor()) {
      visit(v.to_tensor());
    } else if (v.is_tensor_list()) {
      for (const Tensor& t : v.to_tensor_list()) visit(t);
    }
  }

  // A mutated argument's whole storage on the host, viewed with its geometry
  // (Note [CPU fallback: devices, overlap and generators], overlap).
  static Moved host_copy_of_storage(const Tensor& t) {
    const int64_t itemsize = static_cast<int64_t>(t.itemsize());
    const int64_t elems = static_cast<int64_t>(t.storage()->nbytes()) / itemsize;
    Tensor device_bytes = from_blob(t.storage()->data(), static_cast<size_t>(elems * itemsize), {elems}, {1}, 0,
                                    t.dtype(), t.device());
    Tensor host_bytes = make_tensor({elems}, t.dtype(), Device(DeviceType::CPU));
    if (elems > 0) ops::copy_(host_bytes, device_bytes);
    Tensor host = ops::as_strided(host_bytes, t.sizes(), t.strides(), t.storage_offset());
    return {t, host, device_bytes, host_bytes};
  }

  // Note [CPU fallback: devices, overlap and generators], overlap: an input
  // whose elements overlap (an expanded tensor) is copied as its storage, so
  // a (2**40, 1) view of one element costs one element on the host, not 4 TiB.
  static bool storage_smaller_than_elements(const Tensor& t) {
    return static_cast<int64_t>(t.storage()->nbytes() / t.itemsize()) < t.numel();
  }

  Tensor host_copy(const Tensor& t, size_t arg) {
    if (!on_device(t)) return t;
    if (!device_) device_ = t.device();
    if (schema_.is_mutable_arg(arg)) {
      mutated_.push_back(host_copy_of_storage(t));
      return mutated_.back().host;
    }
    if (storage_smaller_than_elements(t)) return host_copy_of_storage(t).host;
    return to_cpu(t);
  }

  // Note [CPU fallback: devices, overlap and generators], generators.
  void use_host_generator(IValue& v) {
    Generator device_generator = v.is_none() ? default_generator(*device_) : v.to_generator();
    if (device_generator->device().type == DeviceType::CPU) return;
    Generator host_generator = make_generator(Device(DeviceType::CPU));
    host_generator->set_state(device_generator->get_state());
    generators_.emplace_back(device_generator, host_generator);
    v = IValue(host_generator);
  }

  void move_argument(IValue& v, size_t arg) {
    if (v.is_tensor()) {
      v = IValue(host_copy(v.to_tensor(), arg));
    } else if (v.is_tensor_list()) {
      std::vector<Tensor> list = v.to_tensor_list();
      for (Tensor& t : list) t = host_copy(t, arg);
      v = IValue(std::move(list));
    } else if (v.is_list()) {
      GenericList& list = v.to_list();
      for (IValue& e : list) {
        if (e.is_tensor()) e = IValue(host_copy(e.to_tensor(), arg));
      }
    } else if (v.is_device()) {
      Device d = v.to_device();
      if (d.type != DeviceType::CPU && d.type != DeviceType::Meta) {
        if (!device_) device_ = runtime::resolve_device(d, op_.name().c_str());
        v = IValue(Device(DeviceType::CPU));
      }
    }
  }

  void write_back() {
    for (const Moved& m : mutated_) {
      if (!m.original.sizes().equals(m.host.sizes())) {  // an out= argument the kernel resized
        device::resize_(m.original, m.host.sizes(), std::nullopt);
        ops::copy_(m.original, m.host);
      } else if (m.host_bytes.numel() > 0) {
        ops::copy_(m.device_bytes, m.host_bytes);
      }
    }
  }

  // A result aliasing a mutated argument is that argument; others move to the device.
  void move_result(IValue& v, const Argument& ret) {
    if (ret.alias_info && ret.alias_info->is_write) {
      for (const Moved& m : mutated_) {
        if (v.is_tensor() && v.to_tensor().is_same(m.host)) {
          v = IValue(m.original);
          return;
        }
      }
    }
    if (v.is_tensor()) {
      if (v.to_tensor().defined() && v.to_tensor().is_cpu()) v = IValue(to_device(v.to_tensor(), *device_));
    } else if (v.is_tensor_list()) {
      std::vector<Tensor> list = v.to_tensor_list();
      for (Tensor& t : list) t = to_device(t, *device_);
      v = IValue(std::move(list));
    }
  }

  const OperatorHandle& op_;
  const FunctionSchema& schema_;
  Stack& stack_;
  std::optional<Device> device_;
  std::optional<Tensor> first_;  // the first non-scalar tensor argument (device check)
  std::vector<Moved> mutated_;
  std::vector<std::pair<Generator, Generator>> generators_;  // (device's, host stand-in)
};

void cpu_fallback_boxed(OperatorKernel*, const OperatorHandle& op, DispatchKeySet, Stack* stack) {
  cpu_fallback(op, DispatchKeySet(), stack);
}

}  // namespace

void cpu_fallback(const OperatorHandle& op, DispatchKeySet, Stack* stack) { CpuFallback(op, stack).run(); }

CppFunction cpu_fallback_function() { return CppFunction::make_from_boxed(&cpu_fallback_boxed); }

}  // namespace sdk::ops
