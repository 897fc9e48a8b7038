// Storage: a reference-counted buffer shared by a tensor and its views.
#pragma once

#include <atomic>
#include <cstddef>

#include <backend_sdk/core/IntrusivePtr.h>
#include <backend_sdk/core/Allocator.h>

namespace sdk {

class SDK_API StorageImpl : public intrusive_target {
 public:
  StorageImpl(DataPtr data_ptr, size_t nbytes, Allocator* allocator, bool resizable)
      : data_ptr_(std::move(data_ptr)), nbytes_(nbytes), allocator_(allocator), resizable_(resizable) {}
  // Allocates nbytes from `allocator`.
  StorageImpl(size_t nbytes, Allocator* allocator)
      : StorageImpl(allocator->allocate(nbytes), nbytes, allocator, true) {}

  void* data() const { return data_ptr_.get(); }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return data_ptr_.device(); }
  Allocator* allocator() const { return allocator_; }
  bool resizable() const { return resizable_ && allocator_ != nullptr; }
  const DataPtr& data_ptr() const { return data_ptr_; }
  // Replaces the buffer (resize_). The old buffer is freed.
  void set_data_ptr(DataPtr p, size_t nbytes) {
    data_ptr_ = std::move(p);
    nbytes_ = nbytes;
  }

  // Note [Version counter]
  // ~~~~~~~~~~~~~~~~~~~~~~
  // Every in-place write to a tensor bumps the version of its storage, which
  // all views share, so autograd can detect that a tensor it saved was
  // modified after being saved (PyTorch shares one counter between a tensor
  // and its views; sharing it through the storage gives the same behaviour).
  uint32_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }
  // Only for a storage no other code has seen yet: a factory that fills the tensor it just
  // allocated (zeros, ones, full, tensor, ...) hands it out at version 0, as PyTorch's factories
  // do (their fill runs below ADInplaceOrView, which is what counts writes there).
  void reset_version() { version_.store(0, std::memory_order_relaxed); }

 private:
  DataPtr data_ptr_;
  size_t nbytes_;
  Allocator* allocator_;
  bool resizable_;
  std::atomic<uint32_t> version_{0};
};

using Storage = intrusive_ptr<StorageImpl>;

}  // namespace sdk
