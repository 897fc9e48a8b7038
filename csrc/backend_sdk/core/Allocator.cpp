#include <backend_sdk/core/Allocator.h>
#include <backend_sdk/core/detail/CpuAllocationObserver.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <new>

#include <sys/mman.h>
#include <vector>

#include <backend_sdk/core/Exception.h>

namespace sdk {
namespace {

constexpr size_t kAlignment = 64;

// Note [Small CPU blocks]
// ~~~~~~~~~~~~~~~~~~~~~~~
// Tiny tensors (scalars, 1-element results) are created and freed on every
// small operator call. Aligned allocation of tiny blocks is slow in glibc
// (memalign consolidates the fast bins each time), so blocks of up to
// kSmallClasses * 64 bytes are kept on per-thread free lists, one per 64-byte
// size class, capped at kMaxCachedPerClass blocks. A block freed on another
// thread joins that thread's list: blocks are interchangeable. Each class has
// its own deleter so the DataPtr records the class without extra storage.
constexpr int kSmallClasses = 4;  // 64, 128, 192, 256 bytes
constexpr size_t kMaxCachedPerClass = 64;

// Set when this thread's cache is destroyed at thread exit: a tensor freed
// later in the exit sequence must not touch the dead cache. A trivially
// destructible thread_local stays readable until the thread is gone.
thread_local bool t_cache_destroyed = false;

struct SmallBlockCache {
  std::vector<void*> free_lists[kSmallClasses];
  ~SmallBlockCache() {
    t_cache_destroyed = true;
    for (auto& list : free_lists) {
      for (void* p : list) std::free(p);
    }
  }
};

SmallBlockCache& small_cache() {
  static thread_local SmallBlockCache cache;
  return cache;
}

template <int Class>
void free_small(void* p) {
  if (t_cache_destroyed) {
    std::free(p);
    return;
  }
  auto& list = small_cache().free_lists[Class];
  if (list.size() < kMaxCachedPerClass) {
    list.push_back(p);
  } else {
    std::free(p);
  }
}

constexpr DeleterFn kSmallDeleters[kSmallClasses] = {&free_small<0>, &free_small<1>, &free_small<2>,
                                                     &free_small<3>};

// PyTorch's wording (c10 alloc_cpu.cpp), so that messages users match carry over; the error is an
// OutOfMemoryError, which is a RuntimeError as PyTorch's CPU allocation failure is.
constexpr const char* kCpuOutOfMemory = "DefaultCPUAllocator: can't allocate memory: you tried to allocate ";

void* aligned_or_throw(size_t rounded, size_t nbytes) {
  void* p = std::aligned_alloc(kAlignment, rounded);
  SDK_CHECK_KIND(ErrorKind::OutOfMemory, p != nullptr, kCpuOutOfMemory, nbytes, " bytes (CPU out of memory)");
  return p;
}

// Note [Huge pages for large blocks]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A fresh multi-megabyte result is mostly page faults on first touch (64 MB
// in 4 KiB pages is 16K faults). Like numpy, blocks of kHugePageMin bytes or
// more are aligned to 2 MiB and advised to use transparent huge pages, which
// cuts those faults 512-fold where the kernel allows it (madvise is a hint:
// failure is ignored).
constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kHugePageMin = size_t{4} << 20;

void* allocate_large(size_t nbytes) {
  size_t rounded = (nbytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(kHugePage, rounded);
  SDK_CHECK_KIND(ErrorKind::OutOfMemory, p != nullptr, kCpuOutOfMemory, nbytes, " bytes (CPU out of memory)");
#ifdef MADV_HUGEPAGE
  madvise(p, rounded, MADV_HUGEPAGE);
#endif
  return p;
}

// Note [Reusing large CPU blocks]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Huge pages cut the number of faults, not their cost: the kernel still
// zeroes every fresh page, so `a + b` on 64 MiB into a new block took 1.3-1.8x
// the time of the same operator into out= (issue 18). Freed large blocks are
// therefore kept in one process-wide cache, most recently freed first, and
// handed back (already faulted in) to the next allocation of the same
// 2 MiB-rounded size. The cache holds at most kLargeCacheBlocks blocks and
// kLargeCacheBytes bytes; a block that would overflow it evicts the oldest,
// one larger than the cap goes straight back to the system. This bounds the
// memory kept off the system (a deliberate difference from PyTorch's CPU
// allocator, which caches nothing: docs/architecture.md, "Memory"). The cache
// is immortal (never destroyed), so a tensor freed during process exit still
// finds it; its blocks stay reachable, which leak checkers do not report.
constexpr size_t kLargeCacheBlocks = 8;
constexpr size_t kLargeCacheBytes = size_t{256} << 20;

struct LargeBlock {
  void* ptr;
  size_t size;
};

struct LargeCache {
  std::mutex mu;
  std::vector<LargeBlock> blocks;  // oldest first
  size_t bytes = 0;
};

LargeCache& large_cache() {
  static LargeCache* cache = new LargeCache();  // immortal: see the note
  return *cache;
}

void* take_cached_large(size_t rounded) {
  LargeCache& c = large_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  for (size_t i = c.blocks.size(); i-- > 0;) {
    if (c.blocks[i].size == rounded) {
      void* p = c.blocks[i].ptr;
      c.blocks.erase(c.blocks.begin() + static_cast<std::ptrdiff_t>(i));
      c.bytes -= rounded;
      return p;
    }
  }
  return nullptr;
}

// The deleter of large blocks: ctx is the heap LargeBlock describing the block.
void free_large(void* ctx) {
  LargeBlock* block = static_cast<LargeBlock*>(ctx);
  const LargeBlock b = *block;
  delete block;
  if (b.size > kLargeCacheBytes) {
    std::free(b.ptr);
    return;
  }
  std::vector<void*> evicted;
  {
    LargeCache& c = large_cache();
    std::lock_guard<std::mutex> lock(c.mu);
    while (!c.blocks.empty() && (c.blocks.size() >= kLargeCacheBlocks || c.bytes + b.size > kLargeCacheBytes)) {
      evicted.push_back(c.blocks.front().ptr);
      c.bytes -= c.blocks.front().size;
      c.blocks.erase(c.blocks.begin());
    }
    c.blocks.push_back(b);
    c.bytes += b.size;
  }
  for (void* p : evicted) std::free(p);  // outside the lock: munmap is slow
}

DataPtr allocate_large_cached(size_t nbytes) {
  const size_t rounded = (nbytes + kHugePage - 1) / kHugePage * kHugePage;
  auto* block = new LargeBlock{take_cached_large(rounded), rounded};
  if (block->ptr == nullptr) {
    try {
      block->ptr = allocate_large(nbytes);  // rounds as above; its error names the bytes asked for
    } catch (...) {
      delete block;
      throw;
    }
  }
  return DataPtr(block->ptr, block, &free_large, Device(DeviceType::CPU));
}

// Note [CPU allocation observer] (core/detail/CpuAllocationObserver.h).
std::atomic<detail::CpuAllocationObserver> g_cpu_observer{nullptr};
std::atomic<int64_t> g_cpu_observed_bytes{0};  // live bytes of the buffers allocated while observed

struct ObservedBlock {
  DataPtr inner;  // the allocator's own DataPtr: freeing the record frees the buffer
  int64_t bytes;
};

void free_observed(void* ctx) {
  auto* b = static_cast<ObservedBlock*>(ctx);
  const int64_t total = g_cpu_observed_bytes.fetch_sub(b->bytes, std::memory_order_relaxed) - b->bytes;
  if (detail::CpuAllocationObserver fn = g_cpu_observer.load(std::memory_order_acquire)) {
    fn(reinterpret_cast<uintptr_t>(b->inner.get()), -b->bytes, total);
  }
  delete b;
}

DataPtr observe_allocation(DataPtr d, size_t nbytes, detail::CpuAllocationObserver fn) {
  void* data = d.get();
  const auto bytes = static_cast<int64_t>(nbytes);
  auto* block = new ObservedBlock{std::move(d), bytes};
  const int64_t total = g_cpu_observed_bytes.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  fn(reinterpret_cast<uintptr_t>(data), bytes, total);
  return DataPtr(data, block, &free_observed, Device(DeviceType::CPU));
}

class CPUAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes) override {
    detail::CpuAllocationObserver fn = g_cpu_observer.load(std::memory_order_relaxed);
    if (SDK_UNLIKELY(fn != nullptr)) return observe_allocation(allocate_plain(nbytes), nbytes, fn);
    return allocate_plain(nbytes);
  }

 private:
  static DataPtr allocate_plain(size_t nbytes) {
    size_t rounded = nbytes == 0 ? kAlignment : (nbytes + kAlignment - 1) / kAlignment * kAlignment;
    SDK_CHECK_KIND(ErrorKind::OutOfMemory, rounded >= nbytes, kCpuOutOfMemory, nbytes, " bytes (CPU out of memory)");
    size_t cls = rounded / kAlignment - 1;
    if (cls < kSmallClasses && !t_cache_destroyed) {
      auto& list = small_cache().free_lists[cls];
      void* p;
      if (!list.empty()) {
        p = list.back();
        list.pop_back();
      } else {
        p = aligned_or_throw(rounded, nbytes);
      }
      return DataPtr(p, p, kSmallDeleters[cls], Device(DeviceType::CPU));
    }
    if (rounded >= kHugePageMin) return allocate_large_cached(nbytes);
    void* p = aligned_or_throw(rounded, nbytes);
    return DataPtr(p, p, &std::free, Device(DeviceType::CPU));
  }
};

// Meta tensors have no data: a null DataPtr of the right device.
class MetaAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t) override { return DataPtr(nullptr, nullptr, nullptr, Device(DeviceType::Meta)); }
};

std::atomic<Allocator*>& slot(DeviceType type) {
  static std::atomic<Allocator*> slots[kNumDeviceTypes] = {};
  return slots[static_cast<int>(type)];
}

}  // namespace

void detail::set_cpu_allocation_observer(detail::CpuAllocationObserver fn) {
  g_cpu_observer.store(fn, std::memory_order_release);
}

Allocator* cpu_allocator() {
  static CPUAllocator* a = new CPUAllocator();  // immortal: tensors may die during static destruction
  return a;
}

void set_allocator(DeviceType type, Allocator* allocator) { slot(type).store(allocator); }

Allocator* get_allocator(DeviceType type) {
  Allocator* a = slot(type).load(std::memory_order_acquire);
  if (a) return a;
  if (type == DeviceType::CPU) return cpu_allocator();
  if (type == DeviceType::Meta) {
    static MetaAllocator* meta = new MetaAllocator();
    return meta;
  }
  SDK_THROW(Runtime, "No allocator is registered for device type '", device_type_name(type),
            "'. A backend must register its device (and its allocator) before tensors can be created on it.");
}

}  // namespace sdk
