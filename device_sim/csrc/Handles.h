// Stream and event handles of the simulated devices.
//
// Note [Simulated handles]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A handle the simulator hands out (sdk_stream_t, sdk_event_t) is not the
// address of its object: it is a number
//
//     tag (16 bits) | generation (24 bits) | slot (24 bits)
//
// looked up in a table of slots, the way real drivers validate handles
// before use. So any integer passed as a handle (device_sim.inject(...,
// stream=12345), a handle of the other kind, a pointer) is refused with
// SDK_ERROR_INVALID_HANDLE instead of being dereferenced, and so is a handle
// whose object was destroyed: destroying bumps the slot's generation, and a
// freed slot goes to the back of a FIFO, so a stale handle stays invalid even
// after its slot was reused (until the 24-bit generation wraps, 16 million
// reuses of one slot later). The tag makes handles of each kind disjoint from
// each other and from every host pointer (whose top 16 bits are 0 on the
// platforms we run on).
//
// Lookups take no lock (three atomic loads: generation, object, generation
// again, so a lookup racing a destroy and a reuse of the slot never returns
// the new object under the old handle). Slots live in chunks that are never
// freed, so a lookup never reads freed memory. The object itself is owned by
// its device as before (a stream is deleted once its queue drains, an event
// when its last reference goes): using a handle while another thread destroys
// it is the caller's race, as on every driver.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>

namespace device_sim {

template <typename T>
class HandleTable {
 public:
  static constexpr int kSlotBits = 24;
  static constexpr int kGenBits = 24;
  static constexpr int kChunkBits = 12;
  static constexpr uint32_t kMaxSlots = 1u << kSlotBits;

  explicit HandleTable(uint16_t tag) : tag_(tag) {}
  HandleTable(const HandleTable&) = delete;
  HandleTable& operator=(const HandleTable&) = delete;

  // A new handle for `obj`; 0 if every slot is in use (16 million live handles).
  uint64_t add(T* obj) {
    std::lock_guard<std::mutex> lock(mutex_);
    uint32_t index;
    if (free_.size() > kReuseAfter || next_ == kMaxSlots) {
      if (free_.empty()) return 0;
      index = free_.front();
      free_.pop_front();
    } else {
      index = next_;
      Slot*& chunk = chunk_ref(index);
      if (chunk == nullptr) {
        chunk = new Slot[kChunkSize];  // immortal: lookups may read it at any time
        chunks_[index >> kChunkBits].store(chunk, std::memory_order_release);
      }
      next_.store(index + 1, std::memory_order_release);
    }
    Slot& s = slot(index);
    const uint64_t gen = s.gen.load(std::memory_order_relaxed);
    s.obj.store(obj, std::memory_order_seq_cst);
    return (uint64_t(tag_) << 48) | (gen << kSlotBits) | index;
  }

  // The object of a live handle, or nullptr.
  T* get(uint64_t h) const {
    const Slot* s = find(h);
    if (s == nullptr) return nullptr;
    const uint64_t gen = (h >> kSlotBits) & kGenMask;
    if (s->gen.load(std::memory_order_seq_cst) != gen) return nullptr;
    T* obj = s->obj.load(std::memory_order_seq_cst);
    if (s->gen.load(std::memory_order_seq_cst) != gen) return nullptr;
    return obj;
  }

  // Invalidates a live handle and returns its object; nullptr if it was not live.
  T* remove(uint64_t h) {
    std::lock_guard<std::mutex> lock(mutex_);
    Slot* s = const_cast<Slot*>(find(h));
    if (s == nullptr) return nullptr;
    const uint64_t gen = (h >> kSlotBits) & kGenMask;
    if (s->gen.load(std::memory_order_relaxed) != gen) return nullptr;
    T* obj = s->obj.load(std::memory_order_relaxed);
    if (obj == nullptr) return nullptr;
    s->obj.store(nullptr, std::memory_order_seq_cst);
    s->gen.store((gen + 1) & kGenMask, std::memory_order_seq_cst);
    free_.push_back(static_cast<uint32_t>(h & (kMaxSlots - 1)));
    return obj;
  }

 private:
  static constexpr uint32_t kChunkSize = 1u << kChunkBits;
  static constexpr uint64_t kGenMask = (uint64_t(1) << kGenBits) - 1;
  // Fresh slots are used until this many freed ones wait: a stale handle's
  // slot is then reused only after many others (and its generation differs).
  static constexpr size_t kReuseAfter = 1024;

  struct Slot {
    std::atomic<uint64_t> gen{0};
    std::atomic<T*> obj{nullptr};
  };

  const Slot* find(uint64_t h) const {
    if ((h >> 48) != tag_) return nullptr;
    const uint32_t index = static_cast<uint32_t>(h & (kMaxSlots - 1));
    if (index == 0 || index >= next_.load(std::memory_order_acquire)) return nullptr;
    const Slot* chunk = chunks_[index >> kChunkBits].load(std::memory_order_acquire);
    return chunk == nullptr ? nullptr : &chunk[index & (kChunkSize - 1)];
  }
  Slot*& chunk_ref(uint32_t index) { return raw_chunks_[index >> kChunkBits]; }
  Slot& slot(uint32_t index) { return raw_chunks_[index >> kChunkBits][index & (kChunkSize - 1)]; }

  const uint16_t tag_;
  std::mutex mutex_;
  std::atomic<uint32_t> next_{1};  // slot 0 is never used: no valid handle has slot bits 0
  std::deque<uint32_t> free_;      // under mutex_
  std::atomic<Slot*> chunks_[kMaxSlots >> kChunkBits] = {};
  Slot* raw_chunks_[kMaxSlots >> kChunkBits] = {};  // under mutex_ (the same pointers)
};

}  // namespace device_sim
