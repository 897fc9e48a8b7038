// Allocator and DataPtr: who owns a buffer and how it is freed.
//
// Note [DataPtr ownership]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A DataPtr owns its buffer: when it is destroyed it calls deleter(ctx) once
// (ctx is usually the pointer itself, or an allocator's block record). It is
// move-only. `data` may differ from `ctx` (a view into a bigger block). A
// DataPtr with a null deleter owns nothing (external memory kept alive
// elsewhere, e.g. by numpy through the Storage's keep-alive).
#pragma once

#include <cstddef>
#include <memory>

#include <backend_sdk/core/DeviceType.h>
#include <backend_sdk/core/Macros.h>

namespace sdk {

using DeleterFn = void (*)(void* ctx);

class SDK_API DataPtr {
 public:
  DataPtr() = default;
  DataPtr(void* data, void* ctx, DeleterFn deleter, Device device)
      : data_(data), ctx_(ctx), deleter_(deleter), device_(device) {}
  DataPtr(const DataPtr&) = delete;
  DataPtr& operator=(const DataPtr&) = delete;
  DataPtr(DataPtr&& o) noexcept { *this = std::move(o); }
  DataPtr& operator=(DataPtr&& o) noexcept {
    if (this != &o) {
      clear();
      data_ = o.data_;
      ctx_ = o.ctx_;
      deleter_ = o.deleter_;
      device_ = o.device_;
      o.data_ = o.ctx_ = nullptr;
      o.deleter_ = nullptr;
    }
    return *this;
  }
  ~DataPtr() { clear(); }

  void* get() const { return data_; }
  void* ctx() const { return ctx_; }
  DeleterFn deleter() const { return deleter_; }
  Device device() const { return device_; }
  void clear() {
    if (deleter_) deleter_(ctx_);
    data_ = ctx_ = nullptr;
    deleter_ = nullptr;
  }

 private:
  void* data_ = nullptr;
  void* ctx_ = nullptr;
  DeleterFn deleter_ = nullptr;
  Device device_;
};

class SDK_API Allocator {
 public:
  virtual ~Allocator() = default;
  // Returns a buffer of at least nbytes (nbytes may be 0). Throws
  // sdk::Error(OutOfMemory) when the device has no room.
  virtual DataPtr allocate(size_t nbytes) = 0;
};

// The allocator new tensors of a device type use. CPU and Meta have built-in
// allocators; a backend registers its own (the caching allocator, normally).
// The pointer is not owned and must outlive every tensor it allocates.
SDK_API void set_allocator(DeviceType type, Allocator* allocator);
SDK_API Allocator* get_allocator(DeviceType type);

// 64-byte aligned host memory, the CPU allocator.
SDK_API Allocator* cpu_allocator();

}  // namespace sdk
