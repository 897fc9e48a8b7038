#include "ops/Resize.h"

#include <cstring>

#include "dispatch/Library.h"
#include "ops/Geometry.h"

namespace sdk::ops {

namespace {

void grow_storage(StorageImpl& storage, size_t nbytes, bool keep_data, const char* op) {
  SDK_CHECK_VALUE(storage.resizable(), op, ": Trying to resize storage that is not resizable");
  DeviceType type = storage.device().type;
  bool host = type == DeviceType::CPU;
  bool has_old_bytes = keep_data && storage.nbytes() > 0 && storage.data() != nullptr;
  SDK_CHECK_NOT_IMPLEMENTED(host || !has_old_bytes || type == DeviceType::Meta, op, ": resizing a ",
                            device_type_name(type),
                            " tensor while keeping its data needs the backend's own resize_ kernel");
  DataPtr fresh = storage.allocator()->allocate(nbytes);
  if (has_old_bytes && host && fresh.get()) std::memcpy(fresh.get(), storage.data(), storage.nbytes());
  storage.set_data_ptr(std::move(fresh), nbytes);
}

}  // namespace

void resize_impl(const Tensor& self, IntArrayRef sizes, std::optional<IntArrayRef> strides, bool keep_data,
                 const char* op) {
  checked_numel(sizes, op);
  DimVector st = strides ? DimVector(*strides) : contiguous_strides(sizes);
  check_non_negative_strides(st, op);
  size_t nbytes = checked_storage_nbytes(sizes, st, self.itemsize(), self.storage_offset(), op);
  StorageImpl& storage = *self.storage();
  if (nbytes > storage.nbytes()) grow_storage(storage, nbytes, keep_data, op);
  self.impl()->set_sizes_and_strides(sizes, st, self.storage_offset());
}

namespace {

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

}  // namespace

SDK_LIBRARY_IMPL(aten, CPU, m) { m.impl("resize_", &resize_kernel); }
SDK_LIBRARY_IMPL(aten, Meta, m) { m.impl("resize_", &resize_kernel); }

}  // namespace sdk::ops
