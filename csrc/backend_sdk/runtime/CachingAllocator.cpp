#include <backend_sdk/runtime/CachingAllocator.h>

#include <atomic>

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <thread>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <set>
#include <unordered_map>
#include <sstream>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/runtime/DeviceGuard.h>
#include <backend_sdk/runtime/DeviceRegistry.h>

namespace sdk::runtime {

HistoryFrames gather_frames();  // Note [Allocation history]

namespace {

constexpr size_t kMinBlockSize = 512;         // every size is rounded to this
constexpr size_t kSmallSize = 1 << 20;        // largest "small" request
constexpr size_t kSmallBuffer = 2 << 20;      // segment size of the small pool
constexpr size_t kLargeBuffer = 20 << 20;     // segment size for mid-sized requests
constexpr size_t kMinLargeAlloc = 10 << 20;   // requests above this get their own segment
constexpr size_t kRoundLarge = 2 << 20;       // ... rounded to this
constexpr size_t kFastBinMax = 128 << 10;     // Note [Allocator fast bins]: largest binned size
constexpr int kFastBinClasses = static_cast<int>(kFastBinMax / kMinBlockSize);

std::atomic<AllocationObserver> g_allocation_observer{nullptr};  // set_allocation_observer
std::atomic<bool> g_guard_regions{false};  // Note [Allocator guard regions]
constexpr unsigned char kGuardByte = 0xA5;

size_t round_size(size_t n) { return n < kMinBlockSize ? kMinBlockSize : (n + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize; }

size_t segment_size(size_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return (size + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

struct Stat {
  int64_t current = 0, peak = 0, allocated = 0, freed = 0;
  void increase(int64_t n) {
    current += n;
    allocated += n;
    peak = std::max(peak, current);
  }
  void decrease(int64_t n) {
    current -= n;
    freed += n;
  }
};

enum StatIndex { kAll = 0, kSmallPool = 1, kLargePool = 2 };
constexpr const char* kStatPoolNames[3] = {"all", "small_pool", "large_pool"};

// One statistic split by pool.
struct StatArray {
  Stat s[3];
  void increase(bool small, int64_t n) {
    s[kAll].increase(n);
    s[small ? kSmallPool : kLargePool].increase(n);
  }
  void decrease(bool small, int64_t n) {
    s[kAll].decrease(n);
    s[small ? kSmallPool : kLargePool].decrease(n);
  }
};

// Note [Allocator lock]
// ~~~~~~~~~~~~~~~~~~~~~
// The device cache's critical sections are short (tens of nanoseconds) except
// on the slow paths (a device malloc/free, waiting for pending frees before an
// OOM retry or in empty_cache). A std::mutex costs two atomic read-modify-
// writes per lock/unlock pair; this lock costs one (the unlock is a release
// store), which is most of the allocator's fast-path budget. Waiters spin
// briefly, then yield, then sleep in 50 us steps, so a long hold does not burn
// a core.
class AllocatorLock {
 public:
  void lock() {
    if (SDK_LIKELY(!locked_.exchange(true, std::memory_order_acquire))) return;
    lock_slow();
  }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  void lock_slow() {
    for (int spins = 0;; ++spins) {
      if (!locked_.load(std::memory_order_relaxed) && !locked_.exchange(true, std::memory_order_acquire)) return;
      if (spins < 100) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      } else if (spins < 1000) {
        sched_yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
  }
  std::atomic<bool> locked_{false};
};

}  // namespace

struct Block {
  DeviceCache* owner;
  sdk_stream_t stream;
  int64_t stream_id;
  size_t size;
  char* ptr;
  bool small;                     // the pool of its segment
  bool binned = false;            // in a fast bin (free, not merged, not in a pool)
  Block* bin_next = nullptr;      // next block of its fast bin
  size_t requested = 0;           // bytes asked for (while allocated)
  bool allocated = false;         // held by a DataPtr
  int event_count = 0;            // pending events before it can be reused
  Block* prev = nullptr;          // neighbours in the segment
  Block* next = nullptr;
  std::vector<sdk_stream_t> stream_uses;  // other streams it was used on
  HistoryFrames frames;           // Note [Allocation history]: the allocating stack (while allocated)
  int64_t graph_pool = 0;         // Note [Graph memory pools]: allocated during a capture into this pool
  bool parked = false;            // freed while its pool lives: held for the graph, never reused or merged
  bool guarded = false;           // Note [Allocator guard regions]: kGuardBytes after `requested` (while allocated)

  Block(DeviceCache* o, sdk_stream_t s, int64_t sid, size_t sz, char* p, bool sm)
      : owner(o), stream(s), stream_id(sid), size(sz), ptr(p), small(sm) {}
  bool is_free() const { return !allocated && event_count == 0; }
  // Free and in its pool (not parked in a fast bin): may be merged or released.
  bool mergeable() const { return is_free() && !binned && !parked; }
  int slot() const { return static_cast<int>(stream_id & 0xff); }  // Stream::id() layout
};

namespace {
// Pool order: stream, then size, then address, so lower_bound finds the
// smallest block of the stream that fits (best fit).
struct BlockOrder {
  bool operator()(const Block* a, const Block* b) const {
    if (a->stream != b->stream) return reinterpret_cast<uintptr_t>(a->stream) < reinterpret_cast<uintptr_t>(b->stream);
    if (a->size != b->size) return a->size < b->size;
    return reinterpret_cast<uintptr_t>(a->ptr) < reinterpret_cast<uintptr_t>(b->ptr);
  }
};
struct AddressOrder {
  bool operator()(const Block* a, const Block* b) const {
    return reinterpret_cast<uintptr_t>(a->ptr) < reinterpret_cast<uintptr_t>(b->ptr);
  }
};
using BlockSet = std::set<Block*, BlockOrder>;

void block_deleter(void* ctx);
}  // namespace

// Note [Allocator fast bins]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The common pattern is "allocate n bytes on a stream, free, allocate n bytes
// on that stream again". A freed small-pool block of at most kFastBinMax
// bytes with no other streams' uses is therefore not merged into its pool: it
// is pushed onto the fast bin of (its stream slot, its size), an intrusive
// list, and an allocation of exactly that rounded size on that stream pops it
// without touching the pool's tree, splitting or merging (two O(1) list
// operations under the device mutex instead of four tree operations and a
// heap allocation). A binned block counts as free in every statistic and in
// snapshots ("inactive"). Bins are flushed (merged into their pools) before a
// miss in the pool would reserve a new segment, before releasing cached
// segments and on empty_cache, so they never make the allocator reserve more
// memory than it would without them.
class DeviceCache {
 public:
  DeviceCache(DeviceType type, int device)
      : type_(type), device_(device), api_(device_api(type)), total_(device_properties(type, device).total_memory) {}

  Block* malloc(Stream stream, size_t nbytes) {
    SDK_CHECK_KIND(ErrorKind::OutOfMemory, nbytes <= (SIZE_MAX >> 2), device_str(), " out of memory. Tried to allocate ",
                   format_bytes(nbytes), ", more than any device can hold.");
    // Note [Allocator guard regions]: room for the guard after the requested bytes.
    const bool guard = SDK_UNLIKELY(g_guard_regions.load(std::memory_order_relaxed));
    size_t size = round_size(guard ? nbytes + kGuardBytes : nbytes);
    bool small = size <= kSmallSize;
    // Note [Allocation history]: the stack is gathered before the lock (gathering may run Python's GC).
    HistoryFrames frames = SDK_UNLIKELY(context_.load(std::memory_order_relaxed) != 0) ? gather_frames() : nullptr;
    std::lock_guard<AllocatorLock> lock(mutex_);
    current_frames_ = std::move(frames);
    if (!pending_.empty()) process_events(false, nullptr);
    if (size <= kFastBinMax) {
      // Note [Allocator fast bins]
      Block*& head = fast_bins_[stream.slot()][size / kMinBlockSize - 1];
      if (Block* b = head) {
        head = b->bin_next;
        b->bin_next = nullptr;
        b->binned = false;
        --binned_count_;
        b->allocated = true;
        b->requested = nbytes;
        b->guarded = guard && capturing_.empty();  // Note [Allocator guard regions]: not during a capture
        allocation_.increase(true, 1);
        allocated_bytes_.increase(true, b->size);
        active_.increase(true, 1);
        active_bytes_.increase(true, b->size);
        requested_bytes_.increase(true, nbytes);
        if (SDK_UNLIKELY(!capturing_.empty())) tag_for_capture(b, stream.native());
        note(SDK_HISTORY_ALLOC, b->ptr, nbytes, b->stream_id);
        keep_frames(b);
        observe(b->ptr, static_cast<int64_t>(nbytes));
        return b;
      }
    }
    sdk_stream_t native = stream.native();  // created on first use: not under the lock's fast path
    BlockSet& pool = small ? small_ : large_;
    Block* b = find_free(pool, native, size);
    if (b == nullptr && binned_count_ > 0) {
      flush_bins();
      b = find_free(pool, native, size);
    }
    if (b == nullptr) {
      size_t seg = segment_size(size);
      last_device_oom_.clear();
      b = alloc_segment(seg, small, native, stream.id());
      if (b == nullptr) {
        // Note [Caching allocator]: release what is cached, then retry once.
        // A fault the device reports while we wait for pending frees is the
        // caller's to see (Note [Simulated faults] of device_sim): raise it.
        std::string fault;
        sdk_status fs = process_events(true, &fault);
        if (fs != SDK_SUCCESS) throw_async_fault(fs, fault, "allocation");
        release_cached();
        b = find_free(pool, native, size);
        if (b == nullptr) b = alloc_segment(seg, small, native, stream.id());
        num_alloc_retries_++;
      }
      if (b == nullptr) {
        num_ooms_++;
        throw Error(ErrorKind::OutOfMemory, oom_message(nbytes, seg));
      }
    }
    if (b->size - size >= (small ? kMinBlockSize : kSmallSize + 1)) {
      auto* rest = new Block(this, b->stream, b->stream_id, b->size - size, b->ptr + size, b->small);
      rest->prev = b;
      rest->next = b->next;
      if (b->next) b->next->prev = rest;
      b->next = rest;
      b->size = size;
      pool.insert(rest);
    }
    b->allocated = true;
    b->requested = nbytes;
    b->guarded = guard && capturing_.empty();
    allocation_.increase(small, 1);
    allocated_bytes_.increase(small, b->size);
    active_.increase(small, 1);
    active_bytes_.increase(small, b->size);
    requested_bytes_.increase(small, nbytes);
    if (SDK_UNLIKELY(!capturing_.empty())) tag_for_capture(b, native);
    note(SDK_HISTORY_ALLOC, b->ptr, nbytes, b->stream_id);
    keep_frames(b);
    observe(b->ptr, static_cast<int64_t>(nbytes));
    return b;
  }

  // The deleter's half: never throws (it runs in destructors).
  void free(Block* b) noexcept {
    // Note [Allocation history]: frees keep their stack only with context "all".
    HistoryFrames frames;
    if (SDK_UNLIKELY(context_.load(std::memory_order_relaxed) >= static_cast<int>(HistoryContext::All))) {
      try {
        frames = gather_frames();
      } catch (...) {  // never throw from a deleter: the entry just has no frames
      }
    }
    std::lock_guard<AllocatorLock> lock(mutex_);
    current_frames_ = std::move(frames);
    note(SDK_HISTORY_FREE_COMPLETED, b->ptr, b->requested, b->stream_id);
    current_frames_.reset();
    b->frames.reset();
    b->allocated = false;
    allocation_.decrease(b->small, 1);
    allocated_bytes_.decrease(b->small, b->size);
    requested_bytes_.decrease(b->small, b->requested);
    observe(b->ptr, -static_cast<int64_t>(b->requested));
    b->requested = 0;
    b->guarded = false;
    if (SDK_UNLIKELY(b->graph_pool != 0)) {
      auto it = parked_.find(b->graph_pool);
      if (it != parked_.end()) {  // Note [Graph memory pools]: the graph's replays still write it
        b->parked = true;
        it->second.push_back(b);
        return;
      }
      b->graph_pool = 0;  // the pool was released: an ordinary block again
    }
    if (!b->stream_uses.empty()) {
      if (record_pending_events(b)) return;
    } else if (b->small && b->size <= kFastBinMax) {
      // Note [Allocator fast bins]
      active_.decrease(true, 1);
      active_bytes_.decrease(true, b->size);
      Block*& head = fast_bins_[b->slot()][b->size / kMinBlockSize - 1];
      b->binned = true;
      b->bin_next = head;
      head = b;
      ++binned_count_;
      return;
    }
    free_block(b);
  }

  // Note [Allocation history].
  void record_history(bool enabled, size_t max_entries, bool clear, HistoryContext context) {
    std::lock_guard<AllocatorLock> lock(mutex_);
    recording_ = enabled;
    context_.store(static_cast<int>(context), std::memory_order_relaxed);
    max_history_ = max_entries == 0 ? 1 : max_entries;
    if (clear) history_.clear();
    while (history_.size() > max_history_) history_.pop_front();
  }
  std::vector<AllocationTraceEntry> history() {
    std::lock_guard<AllocatorLock> lock(mutex_);
    return std::vector<AllocationTraceEntry>(history_.begin(), history_.end());
  }

  // Note [Graph memory pools].
  void begin_pool_capture(sdk_stream_t stream, int64_t pool) {
    std::lock_guard<AllocatorLock> lock(mutex_);
    capturing_[stream] = pool;
    parked_.try_emplace(pool);
  }
  void end_pool_capture(sdk_stream_t stream) {
    std::lock_guard<AllocatorLock> lock(mutex_);
    capturing_.erase(stream);
  }
  void release_pool(int64_t pool) {
    std::lock_guard<AllocatorLock> lock(mutex_);
    auto it = parked_.find(pool);
    if (it == parked_.end()) return;
    std::vector<Block*> blocks = std::move(it->second);
    parked_.erase(it);
    for (Block* b : blocks) {
      b->parked = false;
      b->graph_pool = 0;
      free_block(b);
    }
  }

  void record_stream(Block* b, Stream stream) {
    SDK_CHECK_VALUE(stream.device().index == device_, "record_stream: the memory is on ", device_str(),
                    " but the stream is ", stream);
    sdk_stream_t native = stream.native();
    std::lock_guard<AllocatorLock> lock(mutex_);
    SDK_CHECK_VALUE(b->allocated, "record_stream: the memory was already freed");
    if (native == b->stream) return;
    if (std::find(b->stream_uses.begin(), b->stream_uses.end(), native) == b->stream_uses.end())
      b->stream_uses.push_back(native);
  }

  void empty_cache() {
    std::lock_guard<AllocatorLock> lock(mutex_);
    std::string fault;
    sdk_status fs = process_events(true, &fault);
    release_cached();
    if (fs != SDK_SUCCESS) throw_async_fault(fs, fault, "empty_cache");
  }

  void set_fraction(double fraction) {
    SDK_CHECK_VALUE(fraction >= 0.0 && fraction <= 1.0, "set_per_process_memory_fraction: fraction ", fraction,
                    " is not in [0, 1]");
    std::lock_guard<AllocatorLock> lock(mutex_);
    fraction_ = fraction;
    limit_ = static_cast<size_t>(fraction * static_cast<double>(total_));
  }
  double fraction() {
    std::lock_guard<AllocatorLock> lock(mutex_);
    return fraction_;
  }

  std::map<std::string, int64_t> stats() {
    std::lock_guard<AllocatorLock> lock(mutex_);
    std::map<std::string, int64_t> out;
    for (const auto& [name, arr] : named_stats()) {
      for (int p = 0; p < 3; ++p) {
        std::string prefix = std::string(name) + "." + kStatPoolNames[p] + ".";
        out[prefix + "current"] = arr->s[p].current;
        out[prefix + "peak"] = arr->s[p].peak;
        out[prefix + "allocated"] = arr->s[p].allocated;
        out[prefix + "freed"] = arr->s[p].freed;
      }
    }
    out["num_alloc_retries"] = num_alloc_retries_;
    out["num_ooms"] = num_ooms_;
    out["num_device_alloc"] = num_device_alloc_;
    out["num_device_free"] = num_device_free_;
    return out;
  }

  void reset_peak() {
    std::lock_guard<AllocatorLock> lock(mutex_);
    for (const auto& ns : named_stats())
      for (auto& s : ns.second->s) s.peak = s.current;
  }
  void reset_accumulated() {
    std::lock_guard<AllocatorLock> lock(mutex_);
    for (const auto& ns : named_stats())
      for (auto& s : ns.second->s) s.allocated = s.freed = 0;
    num_alloc_retries_ = num_ooms_ = num_device_alloc_ = num_device_free_ = 0;
  }

  void snapshot(std::vector<SegmentInfo>& out) {
    std::lock_guard<AllocatorLock> lock(mutex_);
    for (Block* head : segments_) {
      SegmentInfo seg;
      seg.device = device_;
      seg.address = reinterpret_cast<uintptr_t>(head->ptr);
      seg.stream = head->stream_id;
      seg.segment_type = head->small ? "small" : "large";
      for (Block* b = head; b != nullptr; b = b->next) {
        BlockInfo bi;
        bi.address = reinterpret_cast<uintptr_t>(b->ptr);
        bi.size = b->size;
        bi.requested_size = b->requested;
        if (b->allocated) bi.frames = b->frames;
        bi.state = b->allocated ? "active_allocated" : (b->event_count > 0 ? "active_pending_free" : "inactive");
        seg.total_size += b->size;
        if (b->allocated) seg.allocated_size += b->size;
        if (!b->is_free()) seg.active_size += b->size;
        seg.blocks.push_back(std::move(bi));
      }
      out.push_back(std::move(seg));
    }
  }

  std::string device_str() const { return Device(type_, static_cast<int8_t>(device_)).str(); }

 private:
  std::vector<std::pair<const char*, StatArray*>> named_stats() {
    return {{"allocation", &allocation_},           {"segment", &segment_},
            {"active", &active_},                   {"allocated_bytes", &allocated_bytes_},
            {"reserved_bytes", &reserved_bytes_},   {"active_bytes", &active_bytes_},
            {"requested_bytes", &requested_bytes_}};
  }

  Block* find_free(BlockSet& pool, sdk_stream_t stream, size_t size) {
    Block key(this, stream, 0, size, nullptr, false);
    auto it = pool.lower_bound(&key);
    if (it == pool.end() || (*it)->stream != stream) return nullptr;
    Block* b = *it;
    pool.erase(it);
    return b;
  }

  // A new segment, or nullptr when the device (or the memory fraction) has no room.
  Block* alloc_segment(size_t size, bool small, sdk_stream_t stream, int64_t stream_id) {
    if (static_cast<uint64_t>(reserved_bytes_.s[kAll].current) + size > limit_) return nullptr;
    void* p = nullptr;
    sdk_status s = api_.malloc(device_, &p, size);
    if (s == SDK_ERROR_OUT_OF_MEMORY) {
      last_device_oom_ = status_message(type_, s);
      return nullptr;
    }
    check_status(type_, s, detail::str("malloc of ", size, " bytes on ", device_str()));
    SDK_CHECK(p != nullptr, "malloc of ", size, " bytes on ", device_str(), " returned NULL with success");
    num_device_alloc_++;
    auto* b = new Block(this, stream, stream_id, size, static_cast<char*>(p), small);
    note(SDK_HISTORY_SEGMENT_ALLOC, b->ptr, size, stream_id);
    segments_.insert(b);
    segment_.increase(small, 1);
    reserved_bytes_.increase(small, size);
    return b;
  }

  // Merges every fast-binned block into its pool (Note [Allocator fast bins]).
  void flush_bins() {
    for (auto& per_stream : fast_bins_) {
      for (Block*& head : per_stream) {
        while (Block* b = head) {
          head = b->bin_next;
          b->bin_next = nullptr;
          b->binned = false;
          insert_free(b);
        }
      }
    }
    binned_count_ = 0;
  }

  [[noreturn]] void throw_async_fault(sdk_status status, const std::string& message, const char* during) {
    throw Error(ErrorKind::Accelerator,
                detail::str(device_type_name(type_), " device error on ", device_str(), " (reported while the caching ",
                            "allocator waited for pending frees during ", during, "): ", message));
  }

  // Returns every fully free segment to the device.
  void release_cached() {
    if (binned_count_ > 0) flush_bins();
    for (auto it = segments_.begin(); it != segments_.end();) {
      Block* b = *it;
      if (b->next != nullptr || !b->is_free() || b->parked) {  // parked: Note [Graph memory pools]
        ++it;
        continue;
      }
      (b->small ? small_ : large_).erase(b);
      note(SDK_HISTORY_SEGMENT_FREE, b->ptr, b->size, b->stream_id);
      sdk_status s = api_.free(device_, b->ptr);
      if (s != SDK_SUCCESS) {
        std::fprintf(stderr, "backend_sdk: freeing a cached segment of %s failed: %s\n", device_str().c_str(),
                     status_message(type_, s).c_str());
      }
      num_device_free_++;
      segment_.decrease(b->small, 1);
      reserved_bytes_.decrease(b->small, b->size);
      it = segments_.erase(it);
      delete b;
    }
  }

  // Returns a block to its pool, merging it with free neighbours.
  void free_block(Block* b) {
    active_.decrease(b->small, 1);
    active_bytes_.decrease(b->small, b->size);
    insert_free(b);
  }

  // Inserts a free block into its pool, merging it with mergeable neighbours.
  void insert_free(Block* b) {
    BlockSet& pool = b->small ? small_ : large_;
    if (Block* n = b->next; n != nullptr && n->mergeable()) {
      pool.erase(n);
      b->size += n->size;
      b->next = n->next;
      if (n->next) n->next->prev = b;
      delete n;
    }
    if (Block* p = b->prev; p != nullptr && p->mergeable()) {
      pool.erase(p);
      p->size += b->size;
      p->next = b->next;
      if (b->next) b->next->prev = p;
      delete b;
      b = p;
    }
    pool.insert(b);
  }

  // Records an event on every other stream the block was used on; the block
  // is reused once they complete. False if the device refused (then the
  // caller frees the block after a device synchronisation).
  bool record_pending_events(Block* b) noexcept {
    for (sdk_stream_t s : b->stream_uses) {
      sdk_event_t e = nullptr;
      if (!free_events_.empty()) {
        e = free_events_.back();
        free_events_.pop_back();
      } else if (api_.event_create(device_, SDK_EVENT_DEFAULT, &e) != SDK_SUCCESS) {
        e = nullptr;
      }
      if (e == nullptr || api_.event_record(e, s) != SDK_SUCCESS) {
        if (e) api_.event_destroy(e);
        std::fprintf(stderr, "backend_sdk: record_stream bookkeeping failed on %s; synchronising the device\n",
                     device_str().c_str());
        api_.device_synchronize(device_);
        b->stream_uses.clear();
        return b->event_count > 0;
      }
      pending_.emplace_back(e, b);
      b->event_count++;
    }
    b->stream_uses.clear();
    return true;
  }

  // Frees blocks whose events have completed; `wait` blocks on each event.
  // Returns the first error status a wait reported (its message in *fault),
  // SDK_SUCCESS if none.
  sdk_status process_events(bool wait, std::string* fault) {
    sdk_status first = SDK_SUCCESS;
    while (!pending_.empty()) {
      auto [e, b] = pending_.front();
      sdk_status s = wait ? api_.event_synchronize(e) : api_.event_query(e);
      if (s == SDK_ERROR_NOT_READY) break;
      // Any other status: the event is done. A synchronisation that reported
      // a device fault consumed it, so the caller raises it.
      if (s != SDK_SUCCESS && first == SDK_SUCCESS && fault != nullptr) {
        first = s;
        *fault = status_message(type_, s);
      }
      pending_.pop_front();
      free_events_.push_back(e);
      if (--b->event_count == 0) free_block(b);
    }
    return first;
  }

  std::string oom_message(size_t nbytes, size_t segment) {
    size_t free_bytes = 0, total = total_;
    bool known = false;
    if (api_.mem_get_info(device_, &free_bytes, &total) == SDK_SUCCESS) known = true;  // NOT_SUPPORTED by default
    int64_t allocated = allocated_bytes_.s[kAll].current;
    int64_t reserved = reserved_bytes_.s[kAll].current;
    std::ostringstream os;
    os << device_type_name(type_) << " out of memory. Tried to allocate " << format_bytes(nbytes) << ". Device "
       << device_ << " has a total capacity of " << format_bytes(total) << " of which "
       << (known ? format_bytes(free_bytes) : std::string("an unknown amount")) << " is free. Of the allocated memory "
       << format_bytes(allocated) << " is allocated by the SDK, and " << format_bytes(reserved - allocated)
       << " is reserved by the SDK but unallocated.";
    if (!last_device_oom_.empty()) os << " The device reported: " << last_device_oom_ << ".";
    if (limit_ < total_) {
      os << " This process is limited to " << format_bytes(limit_) << " (set_per_process_memory_fraction("
         << fraction_ << ")) and would need " << format_bytes(reserved + segment) << " reserved.";
    }
    return os.str();
  }

 public:
  // Note [Allocator guard regions]: writes the pattern after b's requested bytes, in order on `stream` (the
  // allocating stream, where the work that uses the block is queued). On failure the block is freed.
  void fill_guard(Block* b, sdk_stream_t stream) {
    sdk_status s = api_.memset_async(b->ptr + b->requested, kGuardByte, kGuardBytes, stream);
    if (SDK_UNLIKELY(s != SDK_SUCCESS)) {
      free(b);
      check_status(type_, s, detail::str("memset_async of the allocation guard on ", device_str()));
    }
  }
  // Reads b's guard back (a synchronous copy: it waits for the device's queued work); "" if intact, else what
  // was overwritten, after restoring the pattern so one overrun is reported once.
  std::string check_guard(const Block* b) {
    {
      std::lock_guard<AllocatorLock> lock(mutex_);
      if (!capturing_.empty()) return std::string();  // a synchronous copy would break the capture
    }
    unsigned char seen[kGuardBytes];
    char* guard = b->ptr + b->requested;
    DeviceGuard device_guard(Device(type_, static_cast<int8_t>(device_)));
    check_status(type_, api_.memcpy(seen, guard, kGuardBytes, SDK_MEMCPY_DEVICE_TO_HOST),
                 detail::str("reading the allocation guard on ", device_str()));
    size_t first = kGuardBytes, last = 0, count = 0;
    for (size_t i = 0; i < kGuardBytes; ++i) {
      if (seen[i] == kGuardByte) continue;
      first = std::min(first, i);
      last = i;
      ++count;
    }
    if (count == 0) return std::string();
    unsigned char pattern[kGuardBytes];
    std::memset(pattern, kGuardByte, sizeof(pattern));
    check_status(type_, api_.memcpy(guard, pattern, kGuardBytes, SDK_MEMCPY_HOST_TO_DEVICE),
                 detail::str("restoring the allocation guard on ", device_str()));
    char where[32];
    std::snprintf(where, sizeof(where), "%p", static_cast<const void*>(b->ptr));
    return detail::str(count, " of the ", kGuardBytes, " guard bytes after the end of its allocation of ",
                       b->requested, " bytes at ", where, " on ", device_str(), " were overwritten (bytes +", first,
                       " to +", last, " past the end)");
  }

 private:

  AllocatorLock mutex_;  // Note [Allocator lock]
  DeviceType type_;
  int device_;
  const DeviceApi& api_;
  uint64_t total_;
  uint64_t limit_ = UINT64_MAX;
  double fraction_ = 1.0;
  BlockSet small_, large_;
  std::set<Block*, AddressOrder> segments_;  // first block of every segment
  std::deque<std::pair<sdk_event_t, Block*>> pending_;
  Block* fast_bins_[kStreamSlotsPerDevice][kFastBinClasses] = {};  // Note [Allocator fast bins]
  size_t binned_count_ = 0;
  std::string last_device_oom_;
  std::vector<sdk_event_t> free_events_;
  // Note [Allocation history] (under mutex_).
  bool recording_ = false;
  size_t max_history_ = 0;
  std::deque<AllocationTraceEntry> history_;
  // The stack of the malloc/free in progress (under mutex_; gathered before the lock was taken).
  HistoryFrames current_frames_;
  std::atomic<int> context_{0};  // HistoryContext; read without the lock to decide whether to gather
  // The profiler's observer (set_allocation_observer; under mutex_).
  void observe(const char* ptr, int64_t bytes) {
    AllocationObserver fn = g_allocation_observer.load(std::memory_order_relaxed);
    if (SDK_LIKELY(fn == nullptr)) return;
    fn(type_, device_, reinterpret_cast<uintptr_t>(ptr), bytes, allocated_bytes_.s[kAll].current);
  }
  void note(int action, const char* ptr, size_t size, int64_t stream_id) {
    if (SDK_LIKELY(!recording_)) return;
    if (history_.size() >= max_history_) history_.pop_front();
    // Trace entries keep frames with context "alloc" (allocations, segment allocations) or "all" (frees too).
    const bool frames = action == SDK_HISTORY_FREE_COMPLETED
                            ? context_.load(std::memory_order_relaxed) >= static_cast<int>(HistoryContext::All)
                            : context_.load(std::memory_order_relaxed) >= static_cast<int>(HistoryContext::Alloc);
    history_.push_back({action, reinterpret_cast<uintptr_t>(ptr), size, stream_id,
                        std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::system_clock::now().time_since_epoch()).count(),
                        frames ? current_frames_ : nullptr});
  }
  // An allocated block keeps its stack for snapshots (context "state" and up); the malloc's stack is done with.
  void keep_frames(Block* b) {
    if (SDK_UNLIKELY(current_frames_ != nullptr)) b->frames = std::move(current_frames_);
    current_frames_.reset();
  }
  // Note [Graph memory pools]: capturing streams and their pools; the blocks of each live pool freed so far.
  std::unordered_map<sdk_stream_t, int64_t> capturing_;
  std::unordered_map<int64_t, std::vector<Block*>> parked_;
  void tag_for_capture(Block* b, sdk_stream_t stream) {
    auto it = capturing_.find(stream);
    if (it != capturing_.end()) b->graph_pool = it->second;
  }
  StatArray allocation_, segment_, active_, allocated_bytes_, reserved_bytes_, active_bytes_, requested_bytes_;
  int64_t num_alloc_retries_ = 0, num_ooms_ = 0, num_device_alloc_ = 0, num_device_free_ = 0;
};

namespace {
void block_deleter(void* ctx) {
  if (SDK_UNLIKELY(in_bad_fork())) return;  // Note [Fork safety]: the parent's memory; leak it
  auto* b = static_cast<Block*>(ctx);
  b->owner->free(b);
}
}  // namespace

CachingAllocator::CachingAllocator(DeviceType type) : type_(type) {}

CachingAllocator::~CachingAllocator() = default;  // immortal in practice (caching_allocator())

DeviceCache& CachingAllocator::cache(int device) {
  DeviceCache* c = caches_[device].load(std::memory_order_acquire);
  if (SDK_LIKELY(c != nullptr)) return *c;
  static std::mutex creation;
  std::lock_guard<std::mutex> lock(creation);
  c = caches_[device].load(std::memory_order_relaxed);
  if (c == nullptr) {
    c = new DeviceCache(type_, device);  // immortal: blocks point at it
    caches_[device].store(c, std::memory_order_release);
  }
  return *c;
}

DataPtr CachingAllocator::allocate(size_t nbytes) {
  return allocate_on(current_stream(Device(type_, -1)), nbytes);
}

DataPtr CachingAllocator::allocate_on(Stream stream, size_t nbytes) {
  Device d = stream.device();
  SDK_CHECK_VALUE(d.type == type_ && d.index >= 0, "allocate: ", stream, " is not a stream of backend '",
                  device_type_name(type_), "'");
  if (SDK_UNLIKELY(in_bad_fork())) throw_bad_fork(type_);
  if (nbytes == 0) return DataPtr(nullptr, nullptr, nullptr, d);
  DeviceCache& c = cache(d.index);
  Block* b = c.malloc(stream, nbytes);
  if (SDK_UNLIKELY(b->guarded)) c.fill_guard(b, stream.native());  // Note [Allocator guard regions]
  return DataPtr(b->ptr, b, &block_deleter, d);
}

// Note [Allocator guard regions]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// For the kernel checker (Note [Kernel checker], dispatch/detail/KernelChecker.h) the allocator can place a
// guard of kGuardBytes after the requested bytes of every block it hands out while guard regions are on: the
// block is sized for nbytes + kGuardBytes (rounded to 512 as always, so most sizes get the same block as
// without a guard) and the guard is set to 0xA5 with a memset_async on the allocating stream, before any work
// that uses the block. check_guard() reads the guard back with a synchronous copy (after the device's queued
// work) and says which bytes a kernel overwrote. While a stream of the device captures a graph, blocks get no
// guard (the memset would be recorded into the graph, not run) and guards are not read (a synchronous copy is
// not allowed during a capture). The guards are here and not in a device's malloc (device_sim's)
// because the allocator sub-allocates segments: a guard after each device allocation would sit after a 2 MiB
// segment, not after a tensor; here they work for every backend. Only blocks allocated while guard regions were
// on carry one; memory_allocated() counts the whole block, guard included, as it counts the rounding. An
// overrun that writes exactly 0xA5 bytes, or jumps over the guard, is not seen.
void set_guard_regions(bool enabled) { g_guard_regions.store(enabled, std::memory_order_relaxed); }
bool guard_regions_enabled() { return g_guard_regions.load(std::memory_order_relaxed); }

std::string CachingAllocator::check_guard(const DataPtr& p) {
  if (p.get() == nullptr || !owns(p)) return std::string();
  auto* b = static_cast<Block*>(p.ctx());
  // The caller holds p, so the block stays allocated and its fields stay put while we read them.
  return b->guarded ? b->owner->check_guard(b) : std::string();
}

// Note [Allocation history]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// record_history(true, n) makes each device's cache keep its last n events
// (alloc, free_completed, segment_alloc, segment_free, with address, size,
// stream and wall-clock microseconds), the device_traces of PyTorch's memory
// snapshot (torch.cuda.memory._record_memory_history). Recording costs one
// branch per allocation while off; entries are appended under the cache's
// lock.
// Stacks: with a context (PyTorch's `context`: "state" keeps the allocating
// stack on each allocated block for the snapshot's blocks, "alloc" also on
// alloc / segment_alloc events, "all" also on frees), malloc and free call the
// gatherer the bindings installed (set_history_frames_gatherer) BEFORE taking
// the cache's lock: it walks the calling thread's Python frames (filename,
// line, name; innermost first, as PyTorch's snapshot) when that thread holds
// the GIL, and returns nothing otherwise (a device worker, a thread that
// released the GIL to wait). It never takes the GIL, so it cannot deadlock
// with a thread that holds the GIL and waits for this lock. It runs outside
// the lock because creating frame objects allocates Python objects, which may
// run the GC and its finalizers, which may free tensors into this very cache
// (the bindings' gatherer also pauses the GC). One relaxed load per malloc/free
// while no context is set. A stack is shared (shared_ptr) by the block and
// its events; C++ frames are not recorded (stacks="all" gives Python's).
namespace {
std::atomic<HistoryFramesGatherer> g_frames_gatherer{nullptr};
}  // namespace

void set_history_frames_gatherer(HistoryFramesGatherer gather) {
  g_frames_gatherer.store(gather, std::memory_order_release);
}

HistoryFrames gather_frames() {
  HistoryFramesGatherer g = g_frames_gatherer.load(std::memory_order_acquire);
  return g ? g() : nullptr;
}

void CachingAllocator::record_history(bool enabled, size_t max_entries, bool clear, HistoryContext context) {
  for (int i = 0; i < device_count(type_); ++i) cache(i).record_history(enabled, max_entries, clear, context);
}

std::vector<AllocationTraceEntry> CachingAllocator::history(int device) { return cache(device).history(); }

// Note [Graph memory pools]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// A captured graph replays its kernels on the memory they used during
// capture, so that memory must not go to anyone else while the graph lives.
// Between begin_graph_capture and end_graph_capture, every block allocated
// for the capturing stream is tagged with the graph's pool id; a tagged block
// freed while its pool lives is parked (held for the graph: not reused, not
// merged, still counted as active and reserved) instead of returning to the
// cache; release_graph_pool (Graph::reset / destruction) returns the parked
// blocks to the cache, and tagged blocks still alive then become ordinary
// blocks. Unlike PyTorch's private pools, blocks freed during the capture are
// not reused by later allocations of the same capture: simpler, at the cost
// of the capture's intermediate memory being held whole.
void CachingAllocator::begin_graph_capture(Stream stream, int64_t pool) {
  cache(stream.device().index).begin_pool_capture(stream.native(), pool);
}

void CachingAllocator::end_graph_capture(Stream stream) {
  cache(stream.device().index).end_pool_capture(stream.native());
}

void CachingAllocator::release_graph_pool(int device, int64_t pool) { cache(device).release_pool(pool); }

bool CachingAllocator::owns(const DataPtr& p) const {
  return p.deleter() == &block_deleter && static_cast<Block*>(p.ctx())->owner != nullptr &&
         p.device().type == type_;
}

void CachingAllocator::record_stream(const DataPtr& p, Stream stream) {
  if (p.get() == nullptr && p.ctx() == nullptr) return;  // empty: nothing to protect
  SDK_CHECK_VALUE(owns(p), "record_stream: the memory was not allocated by the caching allocator of '",
                  device_type_name(type_), "'");
  auto* b = static_cast<Block*>(p.ctx());
  b->owner->record_stream(b, stream);
}

void CachingAllocator::empty_cache() {
  if (in_bad_fork()) throw_bad_fork(type_);
  for (int i = 0; i < device_count(type_); ++i) {
    if (caches_[i].load(std::memory_order_acquire)) cache(i).empty_cache();
  }
}

void CachingAllocator::set_memory_fraction(double fraction, int device) {
  check_device_index(type_, device, "set_per_process_memory_fraction");
  cache(device).set_fraction(fraction);
}

double CachingAllocator::memory_fraction(int device) {
  check_device_index(type_, device, "get_per_process_memory_fraction");
  return cache(device).fraction();
}

std::map<std::string, int64_t> CachingAllocator::memory_stats(int device) {
  check_device_index(type_, device, "memory_stats");
  return cache(device).stats();
}

void CachingAllocator::reset_peak_stats(int device) {
  check_device_index(type_, device, "reset_peak_memory_stats");
  cache(device).reset_peak();
}

void CachingAllocator::reset_accumulated_stats(int device) {
  check_device_index(type_, device, "reset_accumulated_memory_stats");
  cache(device).reset_accumulated();
}

std::vector<SegmentInfo> CachingAllocator::snapshot() {
  std::vector<SegmentInfo> out;
  for (int i = 0; i < device_count(type_); ++i) {
    if (caches_[i].load(std::memory_order_acquire)) cache(i).snapshot(out);
  }
  return out;
}

std::string CachingAllocator::memory_summary(int device) {
  check_device_index(type_, device, "memory_summary");
  auto stats = cache(device).stats();
  std::ostringstream os;
  const std::string rule(82, '=');
  const std::string thin(82, '-');
  char line[160];
  os << "|" << rule << "|\n";
  std::snprintf(line, sizeof(line), "| %-80s |\n",
                ("backend_sdk caching allocator: memory summary, device " + cache(device).device_str()).c_str());
  os << line;
  os << "|" << thin << "|\n";
  std::snprintf(line, sizeof(line), "| %-24s | %-11s | %-11s | %-11s | %-11s |\n", "Metric", "Cur Usage", "Peak Usage",
                "Tot Alloc", "Tot Freed");
  os << line;
  struct Row {
    const char* title;
    const char* key;
    bool bytes;
  };
  const Row rows[] = {{"Allocated memory", "allocated_bytes", true}, {"Active memory", "active_bytes", true},
                      {"Requested memory", "requested_bytes", true}, {"Reserved memory", "reserved_bytes", true},
                      {"Allocations", "allocation", false},          {"Active allocs", "active", false},
                      {"Device reserved segments", "segment", false}};
  for (const Row& r : rows) {
    os << "|" << thin << "|\n";
    for (int p = 0; p < 3; ++p) {
      std::string prefix = std::string(r.key) + "." + kStatPoolNames[p] + ".";
      auto fmt = [&](const char* field) {
        int64_t v = stats[prefix + field];
        return r.bytes ? format_bytes(static_cast<uint64_t>(std::max<int64_t>(v, 0))) : std::to_string(v);
      };
      std::string title = p == 0 ? r.title : (p == 1 ? "      from small pool" : "      from large pool");
      std::snprintf(line, sizeof(line), "| %-24s | %11s | %11s | %11s | %11s |\n", title.c_str(), fmt("current").c_str(),
                    fmt("peak").c_str(), fmt("allocated").c_str(), fmt("freed").c_str());
      os << line;
    }
  }
  os << "|" << thin << "|\n";
  std::snprintf(line, sizeof(line), "| %-24s | %-53" PRId64 " |\n", "Device alloc retries", stats["num_alloc_retries"]);
  os << line;
  std::snprintf(line, sizeof(line), "| %-24s | %-53" PRId64 " |\n", "Out-of-memory errors", stats["num_ooms"]);
  os << line;
  os << "|" << rule << "|\n";
  return os.str();
}

CachingAllocator* caching_allocator(DeviceType type) {
  SDK_CHECK_VALUE(is_privateuse(type), "caching_allocator: '", device_type_name(type), "' is not an accelerator backend");
  static CachingAllocator* allocators[kNumDeviceTypes] = {
      nullptr, nullptr, new CachingAllocator(DeviceType::PrivateUse1), new CachingAllocator(DeviceType::PrivateUse2),
      new CachingAllocator(DeviceType::PrivateUse3)};
  return allocators[static_cast<int>(type)];
}

std::string format_bytes(uint64_t n) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (n < 1024) return std::to_string(n) + " bytes";
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f %s", v, units[u]);
  return buf;
}

void set_allocation_observer(AllocationObserver fn) { g_allocation_observer.store(fn, std::memory_order_release); }

}  // namespace sdk::runtime
