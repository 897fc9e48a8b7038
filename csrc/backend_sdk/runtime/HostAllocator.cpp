#include <backend_sdk/runtime/HostAllocator.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <vector>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/runtime/DeviceRegistry.h>

namespace sdk::runtime {

namespace {
constexpr size_t kMinHostBlock = 512;

size_t round_pow2(size_t n) {
  size_t r = kMinHostBlock;
  while (r < n) r <<= 1;
  return r;
}

struct HostBlock {
  HostCache* owner;
  char* ptr;
  size_t size;
  bool allocated = false;
  int event_count = 0;
  std::vector<Stream> streams;  // streams it was used on while allocated
};

void host_block_deleter(void* ctx);
}  // namespace

// Note [Pinned host allocator].
class HostCache {
 public:
  explicit HostCache(DeviceType type) : type_(type) {}

  HostBlock* allocate(size_t nbytes) {
    size_t size = round_pow2(nbytes);
    std::lock_guard<std::mutex> lock(mutex_);
    process_events(false);
    HostBlock* b = take_cached(size);
    if (b != nullptr) {
      ++num_reuses_;
    } else {
      const DeviceApi& api = device_api(type_);
      void* p = nullptr;
      sdk_status s = api.host_malloc(&p, size);
      if (s == SDK_ERROR_OUT_OF_MEMORY) {
        process_events(true);
        release_cached();
        s = api.host_malloc(&p, size);
      }
      if (s == SDK_ERROR_OUT_OF_MEMORY) {
        throw Error(ErrorKind::OutOfMemory,
                    detail::str(device_type_name(type_), " out of memory. Tried to allocate ", nbytes,
                                " bytes of pinned host memory (", status_message(type_, s), ")"));
      }
      check_status(type_, s, detail::str("host_malloc of ", size, " bytes"));
      SDK_CHECK(p != nullptr, "host_malloc of ", size, " bytes returned NULL with success");
      b = new HostBlock{this, static_cast<char*>(p), size, false, 0, {}};
      blocks_[reinterpret_cast<uintptr_t>(p)] = b;
      ++num_host_alloc_;
      reserved_ += static_cast<int64_t>(size);
    }
    b->allocated = true;
    allocated_ += static_cast<int64_t>(b->size);
    ++num_allocations_;
    return b;
  }

  void free(HostBlock* b) noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    b->allocated = false;
    allocated_ -= static_cast<int64_t>(b->size);
    for (const Stream& s : b->streams) {
      sdk_event_t e = nullptr;
      const DeviceApi& api = *api_or_null();
      int device = s.device().index;
      auto& pool = free_events_[device];
      if (!pool.empty()) {
        e = pool.back();
        pool.pop_back();
      } else if (api.event_create(device, SDK_EVENT_DEFAULT, &e) != SDK_SUCCESS) {
        e = nullptr;
      }
      sdk_stream_t native = nullptr;
      try {
        native = s.native();
      } catch (...) {
        native = nullptr;
      }
      if (e == nullptr || native == nullptr || api.event_record(e, native) != SDK_SUCCESS) {
        // The device refused: wait for it instead of recording.
        if (e) api.event_destroy(e);
        std::fprintf(stderr, "backend_sdk: pinned-memory bookkeeping failed on %s; synchronising it\n",
                     s.device().str().c_str());
        api.device_synchronize(device);
        continue;
      }
      pending_.push_back({e, device, b});
      b->event_count++;
    }
    b->streams.clear();
    if (b->event_count == 0) cache_block(b);
  }

  bool record_stream(const void* ptr, Stream stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    HostBlock* b = find_locked(ptr);
    if (b == nullptr || !b->allocated) return false;
    if (std::find(b->streams.begin(), b->streams.end(), stream) == b->streams.end()) b->streams.push_back(stream);
    return true;
  }

  bool is_pinned(const void* ptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    HostBlock* b = find_locked(ptr);
    return b != nullptr && b->allocated;
  }

  void empty_cache() {
    std::lock_guard<std::mutex> lock(mutex_);
    process_events(true);
    release_cached();
  }

  std::map<std::string, int64_t> stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    int64_t cached = 0, pending = 0;
    for (const auto& [size, list] : free_) cached += static_cast<int64_t>(size * list.size());
    for (const auto& [addr, b] : blocks_)
      if (!b->allocated && b->event_count > 0) pending += static_cast<int64_t>(b->size);
    return {{"allocated_bytes", allocated_},     {"reserved_bytes", reserved_},
            {"cached_bytes", cached},            {"pending_bytes", pending},
            {"num_host_alloc", num_host_alloc_}, {"num_host_free", num_host_free_},
            {"num_reuses", num_reuses_},         {"num_allocations", num_allocations_}};
  }

 private:
  struct Pending {
    sdk_event_t event;
    int device;
    HostBlock* block;
  };

  const DeviceApi* api_or_null() { return &device_api(type_); }

  HostBlock* find_locked(const void* ptr) {
    auto a = reinterpret_cast<uintptr_t>(ptr);
    auto it = blocks_.upper_bound(a);
    if (it == blocks_.begin()) return nullptr;
    --it;
    HostBlock* b = it->second;
    return a < it->first + b->size ? b : nullptr;
  }

  HostBlock* take_cached(size_t size) {
    auto it = free_.find(size);
    if (it == free_.end() || it->second.empty()) return nullptr;
    HostBlock* b = it->second.back();
    it->second.pop_back();
    return b;
  }

  void cache_block(HostBlock* b) { free_[b->size].push_back(b); }

  void process_events(bool wait) {
    if (pending_.empty()) return;
    const DeviceApi& api = device_api(type_);
    // Events complete in any order across streams: scan them all.
    for (auto it = pending_.begin(); it != pending_.end();) {
      sdk_status s = wait ? api.event_synchronize(it->event) : api.event_query(it->event);
      if (s == SDK_ERROR_NOT_READY) {
        ++it;
        continue;
      }
      // Any other status: the event is done (faults are reported to the user
      // by their own synchronising calls).
      free_events_[it->device].push_back(it->event);
      HostBlock* b = it->block;
      it = pending_.erase(it);
      if (--b->event_count == 0) cache_block(b);
    }
  }

  void release_cached() {
    const DeviceApi& api = device_api(type_);
    for (auto& [size, list] : free_) {
      for (HostBlock* b : list) {
        sdk_status s = api.host_free(b->ptr);
        if (s != SDK_SUCCESS) {
          std::fprintf(stderr, "backend_sdk: freeing pinned host memory failed: %s\n",
                       status_message(type_, s).c_str());
        }
        blocks_.erase(reinterpret_cast<uintptr_t>(b->ptr));
        reserved_ -= static_cast<int64_t>(b->size);
        ++num_host_free_;
        delete b;
      }
      list.clear();
    }
    free_.clear();
  }

  DeviceType type_;
  std::mutex mutex_;
  std::map<uintptr_t, HostBlock*> blocks_;           // every block, by address
  std::map<size_t, std::vector<HostBlock*>> free_;  // reusable blocks by size
  std::deque<Pending> pending_;
  std::map<int, std::vector<sdk_event_t>> free_events_;
  int64_t allocated_ = 0, reserved_ = 0, num_host_alloc_ = 0, num_host_free_ = 0, num_reuses_ = 0,
          num_allocations_ = 0;
};

namespace {
void host_block_deleter(void* ctx) {
  if (SDK_UNLIKELY(in_bad_fork())) return;  // Note [Fork safety]: the parent's memory; leak it
  auto* b = static_cast<HostBlock*>(ctx);
  b->owner->free(b);
}
}  // namespace

HostAllocator::HostAllocator(DeviceType type) : type_(type), cache_(std::make_unique<HostCache>(type)) {}
HostAllocator::~HostAllocator() = default;

DataPtr HostAllocator::allocate(size_t nbytes) {
  if (SDK_UNLIKELY(in_bad_fork())) throw_bad_fork(type_);
  if (nbytes == 0) return DataPtr(nullptr, nullptr, nullptr, Device(DeviceType::CPU, -1));
  HostBlock* b = cache_->allocate(nbytes);
  return DataPtr(b->ptr, b, &host_block_deleter, Device(DeviceType::CPU, -1));
}

bool HostAllocator::owns(const DataPtr& p) const {
  return p.deleter() == &host_block_deleter && static_cast<HostBlock*>(p.ctx())->owner == cache_.get();
}

bool HostAllocator::record_stream(const void* ptr, Stream stream) {
  SDK_CHECK_VALUE(stream.device().type == type_, "record_stream: ", stream, " is not a stream of '",
                  device_type_name(type_), "'");
  return cache_->record_stream(ptr, stream);
}

bool HostAllocator::is_pinned(const void* ptr) {
  if (ptr == nullptr) return false;
  return cache_->is_pinned(ptr);
}

void HostAllocator::empty_cache() {
  if (in_bad_fork()) throw_bad_fork(type_);
  cache_->empty_cache();
}

std::map<std::string, int64_t> HostAllocator::stats() { return cache_->stats(); }

HostAllocator* host_allocator(DeviceType type) {
  SDK_CHECK_VALUE(is_privateuse(type), "host_allocator: '", device_type_name(type),
                  "' is not an accelerator backend");
  static HostAllocator* allocators[kNumDeviceTypes] = {
      nullptr, nullptr, new HostAllocator(DeviceType::PrivateUse1), new HostAllocator(DeviceType::PrivateUse2),
      new HostAllocator(DeviceType::PrivateUse3)};
  return allocators[static_cast<int>(type)];
}

void copy_async(Stream stream, void* dst, const void* src, size_t nbytes, sdk_memcpy_kind kind) {
  DeviceType t = stream.device().type;
  const DeviceApi& api = device_api(t);
  HostAllocator* host = host_allocator(t);
  const char* what = kind == SDK_MEMCPY_HOST_TO_DEVICE   ? "copy_async (host to device)"
                     : kind == SDK_MEMCPY_DEVICE_TO_HOST ? "copy_async (device to host)"
                                                         : "copy_async";
  if (kind == SDK_MEMCPY_HOST_TO_DEVICE && nbytes > 0 && !host->is_pinned(src)) {
    // Stage pageable memory through a pinned block, reused once the copy ran.
    DataPtr staging = host->allocate(nbytes);
    std::memcpy(staging.get(), src, nbytes);
    check_status(t, api.memcpy_async(dst, staging.get(), nbytes, kind, stream.native()), what);
    host->record_stream(staging.get(), stream);
    return;  // staging is freed here; its event keeps it from reuse until the copy ran
  }
  SDK_CHECK_VALUE(kind != SDK_MEMCPY_DEVICE_TO_HOST || nbytes == 0 || host->is_pinned(dst),
                  "copy_async: an asynchronous device-to-host copy needs pinned destination memory "
                  "(allocate it with pinned_empty); use a synchronous copy for pageable memory");
  check_status(t, api.memcpy_async(dst, src, nbytes, kind, stream.native()), what);
  if (kind == SDK_MEMCPY_HOST_TO_DEVICE) host->record_stream(src, stream);
  if (kind == SDK_MEMCPY_DEVICE_TO_HOST) host->record_stream(dst, stream);
}

}  // namespace sdk::runtime
