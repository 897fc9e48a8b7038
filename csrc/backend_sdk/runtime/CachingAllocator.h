// The caching device allocator, one per backend, over the contract's malloc/free.
//
// Note [Caching allocator]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// Device malloc/free are slow (and on real hardware synchronise), so freed
// blocks are cached and reused, as in PyTorch's CUDA allocator:
//  - Requests are rounded up to 512 bytes. Requests of up to 1 MiB come from
//    the small pool, carved out of 2 MiB segments; larger ones from the large
//    pool (20 MiB segments below 10 MiB, otherwise the size rounded to 2 MiB).
//  - A free block big enough is split (the rest stays cached: small pool if at
//    least 512 bytes remain, large pool if more than 1 MiB); a freed block
//    merges with free neighbours of its segment.
//  - Pools are per stream: a block is allocated on the current stream and only
//    reused by allocations on that stream, so reuse is ordered by the stream
//    itself. A block used on other streams (record_stream) is not reused when
//    freed: an event is recorded on each of those streams and the block
//    returns to its pool once all of them have completed (checked at the next
//    allocation of the device).
//  - When the device is full: wait for pending events, release every cached
//    segment, retry once (num_alloc_retries), then raise OutOfMemoryError
//    (num_ooms). set_per_process_memory_fraction caps the reserved bytes.
//  - One lock per device (Note [Allocator lock], CachingAllocator.cpp). A
//    DataPtr's context is its Block, so freeing needs no lookup; freed small
//    blocks park in per-(stream, size) fast bins (Note [Allocator fast bins]).
//  - A device fault read while waiting for pending frees (OOM retry,
//    empty_cache) is raised from that call as AcceleratorError.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <backend_sdk/core/DeviceType.h>
#include <backend_sdk/core/Macros.h>
#include <backend_sdk/runtime/Stream.h>
#include <backend_sdk/core/Allocator.h>

namespace sdk::runtime {

// Note [Allocation history] (CachingAllocator.cpp): one frame of the Python stack that allocated or freed;
// a stack lists the innermost frame first, as PyTorch's snapshot does.
struct HistoryFrame {
  std::string filename;
  int line = 0;
  std::string name;
};
using HistoryFrames = std::shared_ptr<const std::vector<HistoryFrame>>;
// Gathers the calling thread's stack (nullptr: none, e.g. a thread without the GIL). Installed by the bindings;
// called outside the allocator's lock, never while a device waits.
using HistoryFramesGatherer = HistoryFrames (*)();
SDK_API void set_history_frames_gatherer(HistoryFramesGatherer gather);

// What record_history keeps frames for (PyTorch's `context` argument of _record_memory_history).
enum class HistoryContext : int { None = 0, State = 1, Alloc = 2, All = 3 };

struct BlockInfo {
  uintptr_t address = 0;
  size_t size = 0;
  size_t requested_size = 0;
  std::string state;  // "active_allocated", "active_pending_free", "inactive"
  HistoryFrames frames;  // the allocating stack (context >= State while it was allocated), or nullptr
};

struct SegmentInfo {
  int device = 0;
  uintptr_t address = 0;
  size_t total_size = 0;
  size_t allocated_size = 0;
  size_t active_size = 0;
  int64_t stream = 0;  // Stream::id() of the segment's stream
  std::string segment_type;  // "small" or "large"
  std::vector<BlockInfo> blocks;
};

class DeviceCache;

// Note [Allocation history] (CachingAllocator.cpp): one allocator event.
enum : int { SDK_HISTORY_ALLOC = 0, SDK_HISTORY_FREE_COMPLETED = 1, SDK_HISTORY_SEGMENT_ALLOC = 2, SDK_HISTORY_SEGMENT_FREE = 3 };
struct AllocationTraceEntry {
  int action = 0;  // SDK_HISTORY_*
  uintptr_t addr = 0;
  size_t size = 0;
  int64_t stream = 0;  // Stream::id()
  int64_t time_us = 0;  // wall clock
  HistoryFrames frames;  // Note [Allocation history]: nullptr when no frames were kept
};

// The profiler's observer of allocations (profile_memory; Note [Allocation history]): called on the
// allocating or freeing thread, under the allocator's lock, with bytes > 0 for an allocation (the
// requested size), < 0 for a free, and the device's allocated bytes after the event. It must not
// allocate through a caching allocator. nullptr (the default): none, one relaxed load per event.
using AllocationObserver = void (*)(DeviceType type, int device, uint64_t addr, int64_t bytes,
                                    int64_t total_allocated);
SDK_API void set_allocation_observer(AllocationObserver fn);

class SDK_API CachingAllocator final : public Allocator {
 public:
  explicit CachingAllocator(DeviceType type);
  ~CachingAllocator() override;

  // On the current device, for the current stream of that device.
  DataPtr allocate(size_t nbytes) override;
  DataPtr allocate_on(Stream stream, size_t nbytes);

  // True if p was allocated by this allocator.
  bool owns(const DataPtr& p) const;
  // Marks p (its whole block) as used on `stream` (Note [Caching allocator]).
  void record_stream(const DataPtr& p, Stream stream);

  // Returns every unused cached segment to the device.
  void empty_cache();
  // Caps reserved memory of the device at fraction * total capacity.
  void set_memory_fraction(double fraction, int device);
  double memory_fraction(int device);

  // PyTorch's memory_stats() keys ("allocated_bytes.all.current", ...).
  std::map<std::string, int64_t> memory_stats(int device);
  void reset_peak_stats(int device);
  void reset_accumulated_stats(int device);
  std::string memory_summary(int device);
  std::vector<SegmentInfo> snapshot();

  DeviceType device_type() const { return type_; }

  // Note [Graph memory pools] (CachingAllocator.cpp): blocks allocated for `stream` between begin and end belong
  // to `pool` (a nonzero id) and are held for it when freed, until release_graph_pool.
  void begin_graph_capture(Stream stream, int64_t pool);
  void end_graph_capture(Stream stream);
  void release_graph_pool(int device, int64_t pool);

  // Note [Allocation history]: keep each device's last max_entries allocator events (or stop keeping them).
  // `context` says which events keep the Python stack that caused them (HistoryContext).
  void record_history(bool enabled, size_t max_entries, bool clear, HistoryContext context = HistoryContext::None);
  std::vector<AllocationTraceEntry> history(int device);

  // Note [Allocator guard regions] (CachingAllocator.cpp): "" if p's guard is intact (or p has none), else
  // which guard bytes were overwritten. Waits for the device's queued work.
  std::string check_guard(const DataPtr& p);

 private:
  DeviceCache& cache(int device);

  DeviceType type_;
  std::atomic<DeviceCache*> caches_[64] = {};  // created on first use, never replaced
};

// The allocator of a backend (immortal; created on first use).
SDK_API CachingAllocator* caching_allocator(DeviceType type);

// Note [Allocator guard regions] (CachingAllocator.cpp): blocks allocated while on carry kGuardBytes of guard.
constexpr size_t kGuardBytes = 64;
SDK_API void set_guard_regions(bool enabled);
SDK_API bool guard_regions_enabled();

// "1.50 MiB"
SDK_API std::string format_bytes(uint64_t n);

}  // namespace sdk::runtime
