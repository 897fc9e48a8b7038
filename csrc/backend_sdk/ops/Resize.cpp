#include <backend_sdk/ops/detail/Resize.h>

#include <cstring>
#include <sstream>

#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/detail/Geometry.h>
#include <backend_sdk/runtime/DeviceGuard.h>
#include <backend_sdk/runtime/DeviceRegistry.h>
#include <backend_sdk/runtime/Stream.h>

namespace sdk::ops {

namespace {

// Device memory is not host-addressable: its old bytes move with the
// backend's device-to-device copy on the current stream (Note [Contract-backed
// kernels], ops/DeviceOps.h); the old block is freed at once, which is safe
// because the caching allocator reuses it only in that stream's order.
void grow_storage(StorageImpl& storage, size_t nbytes, bool keep_data, const char* op) {
  SDK_CHECK_VALUE(storage.resizable(), op, ": Trying to resize storage that is not resizable");
  const Device device = storage.device();
  const bool host = device.type == DeviceType::CPU || device.type == DeviceType::Meta;
  const bool has_old_bytes = keep_data && storage.nbytes() > 0 && storage.data() != nullptr;
  if (host) {
    DataPtr fresh = storage.allocator()->allocate(nbytes);
    if (has_old_bytes && device.type == DeviceType::CPU && fresh.get()) {
      std::memcpy(fresh.get(), storage.data(), storage.nbytes());
    }
    storage.set_data_ptr(std::move(fresh), nbytes);
    return;
  }
  SDK_CHECK_NOT_IMPLEMENTED(runtime::has_device(device.type), op, ": no device is attached to the '",
                            device_type_name(device.type), "' backend");
  runtime::DeviceGuard guard(device);
  DataPtr fresh = storage.allocator()->allocate(nbytes);
  if (has_old_bytes) {
    runtime::Stream stream = runtime::current_stream(device);
    runtime::check_status(device.type,
                          runtime::device_api(device.type)
                              .memcpy_async(fresh.get(), storage.data(), storage.nbytes(),
                                            SDK_MEMCPY_DEVICE_TO_DEVICE, stream.native()),
                          std::string(op) + ": copying the old bytes on " + device.str());
  }
  storage.set_data_ptr(std::move(fresh), nbytes);
}

}  // namespace

void resize_impl(const Tensor& self, IntArrayRef sizes, std::optional<IntArrayRef> strides, bool keep_data,
                 const char* op) {
  checked_numel(sizes, op);
  DimVector st = strides ? DimVector(*strides) : contiguous_strides(sizes, op);
  check_non_negative_strides(st, op);
  size_t nbytes = checked_storage_nbytes(sizes, st, self.itemsize(), self.storage_offset(), op);
  StorageImpl& storage = *self.storage();
  if (nbytes > storage.nbytes()) grow_storage(storage, nbytes, keep_data, op);
  self.impl()->set_sizes_and_strides(sizes, st, self.storage_offset());
}

bool resize_output(const Tensor& out, IntArrayRef sizes, const char* op) {
  if (out.sizes().equals(sizes)) return false;
  if (out.numel() != 0) {
    std::ostringstream msg;
    msg << op << ": An output with one or more elements was resized since it had shape " << out.sizes()
        << ", which does not match the required output shape " << sizes
        << ". This behavior is deprecated, and in a future PyTorch release outputs will not be resized unless they "
           "have zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero elements "
           "with t.resize_(0).";
    warn(msg.str());
  }
  resize_impl(out, sizes, std::nullopt, /*keep_data=*/false, op);
  return true;
}

// resize_(Tensor(a!) self, SymInt[] size, *, MemoryFormat? memory_format=None)
// Same sizes and no memory format: nothing changes (strides included), as in
// PyTorch. Only contiguous_format (0) is supported as a memory format.
Tensor resize_kernel(const Tensor& self, IntArrayRef size, std::optional<int64_t> memory_format) {
  SDK_CHECK_VALUE(!memory_format || *memory_format == 0, "resize_: memory_format ", *memory_format,
                  " is not supported; only contiguous_format is (preserve_format is never valid for resize_)");
  if (!(self.sizes().equals(size) && !memory_format)) {
    resize_impl(self, size, std::nullopt, /*keep_data=*/true, "resize_");
  }
  self.impl()->bump_version();
  return self;
}

SDK_LIBRARY_IMPL(aten, CPU, m) { m.impl("resize_", &resize_kernel); }
SDK_LIBRARY_IMPL(aten, Meta, m) { m.impl("resize_", &resize_kernel); }

}  // namespace sdk::ops
