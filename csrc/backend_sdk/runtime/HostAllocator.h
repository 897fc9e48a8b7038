// The caching pinned-host allocator of a backend, over the contract's
// host_malloc/host_free.
//
// Note [Pinned host allocator]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Pinned (page-locked) host memory is what asynchronous copies need on the
// host side: the device's copy engine reads or writes it after the call
// returned, so it must stay allocated, and must not be handed out again,
// until the copy has run. As PyTorch's CachingHostAllocator:
//  - Requests are rounded up to a power of two (at least 512 bytes); freed
//    blocks are cached by size and reused, host_malloc is called only on a
//    miss (after one retry with the cache released).
//  - A block used by stream work (record_stream, done automatically by
//    backend_sdk._runtime.memcpy with a stream, and by copy_async below) gets
//    an event recorded on each such stream when it is freed; it becomes
//    reusable only once all of them have completed (checked at the next
//    allocation, waited for by empty_cache).
//  - Memory is returned to the device only by empty_cache.
//  - One mutex per backend; is_pinned looks the pointer up in the live and
//    cached blocks (a pointer anywhere inside a block is pinned).
// The DataPtrs it returns are on the CPU device.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <backend_sdk/core/DeviceType.h>
#include <backend_sdk/core/Macros.h>
#include <backend_sdk/runtime/Stream.h>
#include <backend_sdk/core/Allocator.h>

namespace sdk::runtime {

class HostCache;

class SDK_API HostAllocator final : public Allocator {
 public:
  explicit HostAllocator(DeviceType type);
  ~HostAllocator() override;

  DataPtr allocate(size_t nbytes) override;
  // True if p was allocated by this allocator.
  bool owns(const DataPtr& p) const;
  // Marks the block containing `ptr` as used by work queued on `stream` so
  // far. Returns false (and does nothing) if ptr is not inside a live block.
  bool record_stream(const void* ptr, Stream stream);
  // True if ptr lies inside a live (allocated) pinned block of this backend.
  bool is_pinned(const void* ptr);
  // Waits for pending events, then returns every cached block to the device.
  void empty_cache();
  // allocated_bytes, reserved_bytes (allocated + cached + pending), cached_bytes,
  // pending_bytes, num_host_alloc, num_host_free, num_reuses, num_allocations.
  std::map<std::string, int64_t> stats();

  DeviceType device_type() const { return type_; }

 private:
  DeviceType type_;
  std::unique_ptr<HostCache> cache_;
};

// The pinned-host allocator of a backend (immortal; created on first use).
SDK_API HostAllocator* host_allocator(DeviceType type);

// Asynchronous copy on `stream` between device memory and host memory
// (kind H2D or D2H). A host side that is pinned memory of this backend is
// used directly and recorded on the stream; pageable host memory is staged
// through a pinned block (host to device: copied into the block now, so the
// caller may reuse `src` at once; device to host: not supported
// asynchronously into pageable memory, ValueError). Device to device and
// host to host are queued as they are.
SDK_API void copy_async(Stream stream, void* dst, const void* src, size_t nbytes, sdk_memcpy_kind kind);

}  // namespace sdk::runtime
