#include <backend_sdk/tensor/Tensor.h>

#include <atomic>
#include <cstring>
#include <sstream>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/core/detail/SafeSize.h>
#include <backend_sdk/runtime/CurrentDevice.h>
#include <backend_sdk/tensor/detail/ViewHook.h>

namespace sdk {

std::string Tensor::str() const {
  if (!defined()) return "Tensor(undefined)";
  std::ostringstream os;
  os << "Tensor(sizes=" << sizes() << ", dtype=" << dtype() << ", device=" << device() << ")";
  return os.str();
}

namespace {
Device resolved(Device d) {
  // Index -1 means "the current device of this type" on this thread
  // (Note [Current device and stream], runtime/DeviceGuard.h).
  if (d.index < 0 && d.type != DeviceType::CPU && d.type != DeviceType::Meta) {
    d.index = runtime::current_device_index(d.type);
  }
  return d;
}
}  // namespace

Tensor make_tensor_strided(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype, Device device) {
  device = resolved(device);
  checked_numel(sizes, "empty_strided");
  size_t nbytes = TensorImpl::compute_storage_nbytes(sizes, strides, element_size(dtype), 0, "empty_strided");
  Allocator* allocator = get_allocator(device.type);
  auto storage = make_intrusive<StorageImpl>(nbytes, allocator);
  auto impl = make_intrusive<TensorImpl>(std::move(storage), dtype, device, default_tensor_key_set(device.type));
  impl->set_sizes_and_strides(sizes, strides, 0);
  return Tensor(std::move(impl));
}

Tensor make_tensor(IntArrayRef sizes, ScalarType dtype, Device device) {
  device = resolved(device);
  checked_numel(sizes, "empty");
  // Bytes and strides checked before allocating (Note [Size arithmetic overflow]).
  size_t nbytes = safe_storage_nbytes_contiguous(sizes, element_size(dtype), "empty");
  DimVector strides = safe_contiguous_strides(sizes, "empty");
  Allocator* allocator = get_allocator(device.type);
  auto storage = make_intrusive<StorageImpl>(nbytes, allocator);
  auto impl = make_intrusive<TensorImpl>(std::move(storage), dtype, device, default_tensor_key_set(device.type));
  impl->set_sizes_and_strides(sizes, strides, 0);
  return Tensor(std::move(impl));
}

namespace {
std::atomic<ViewCreatedHook> g_view_created_hook{nullptr};
}  // namespace

void set_view_created_hook(ViewCreatedHook hook) { g_view_created_hook.store(hook, std::memory_order_release); }

Tensor make_view(const Tensor& base, IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset,
                 const char* op) {
  SDK_CHECK_VALUE(sizes.size() == strides.size(), op, ": mismatch in length of strides and shape");
  SDK_CHECK_VALUE(storage_offset >= 0, op, ": Tensor: invalid storage offset ", storage_offset);
  checked_numel(sizes, op);
  for (int64_t s : strides) SDK_CHECK_VALUE(s >= 0, op, ": negative strides are not supported, got ", strides);
  size_t needed = TensorImpl::compute_storage_nbytes(sizes, strides, base.itemsize(), storage_offset, op);
  SDK_CHECK_VALUE(needed <= base.storage()->nbytes(), op, ": setStorage: sizes ", sizes, ", strides ", strides,
                  ", storage offset ", storage_offset, ", and itemsize ", base.itemsize(),
                  " requiring a storage size of ", needed, " are out of bounds for storage of size ",
                  base.storage()->nbytes());
  auto impl = make_intrusive<TensorImpl>(base.storage(), base.dtype(), base.device(), base.key_set());
  impl->set_sizes_and_strides(sizes, strides, storage_offset);
  impl->set_inference(base.impl()->is_inference());  // Note [Inference tensors]: a view is what its base is
  Tensor view(std::move(impl));
  if (ViewCreatedHook hook = g_view_created_hook.load(std::memory_order_acquire)) hook(base, view);
  return view;
}

Tensor from_blob(void* data, size_t nbytes, IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset,
                 ScalarType dtype, Device device) {
  auto storage = make_intrusive<StorageImpl>(DataPtr(data, nullptr, nullptr, device), nbytes, nullptr, false);
  auto impl = make_intrusive<TensorImpl>(std::move(storage), dtype, device, default_tensor_key_set(device.type));
  Tensor base(std::move(impl));
  return make_view(base, sizes, strides, storage_offset, "from_blob");
}

Tensor scalar_to_tensor(const Scalar& s, ScalarType dtype, Device device) {
  Tensor t = make_tensor({}, dtype, device);
  SDK_CHECK(device.type == DeviceType::CPU, "scalar_to_tensor: only CPU tensors can be filled directly");
  SDK_DISPATCH_ALL_TYPES(dtype, "scalar_to_tensor", [&] { *t.data_ptr<scalar_t>() = s.to<scalar_t>(); });
  return t;
}

Tensor wrapped_scalar_tensor(const Scalar& s) {
  Tensor t = scalar_to_tensor(s, s.type(), Device(DeviceType::CPU));
  t.impl()->set_wrapped_number(true);
  return t;
}

void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  if (a.device() == b.device()) return;
  SDK_THROW(Value, "Expected all tensors to be on the same device, but found at least two devices, ", a.device(),
            " and ", b.device(), "! (when checking arguments for ", op, ")");
}

}  // namespace sdk
