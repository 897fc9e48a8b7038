// Device memory of one simulated device.
//
// Note [Simulated device memory]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Each device's memory is one memfd of `capacity` bytes mapped twice: a
// PROT_NONE view whose addresses are the device pointers handed out by malloc,
// and a read-write alias used by the copy engines and kernels (translate()).
// A host read or write of a device pointer therefore faults; the SIGSEGV
// handler (install_fault_handler) recognises addresses inside a view, prints
// "device_sim: host access to device memory at 0x... (allocation of N bytes at
// 0x... on device D)" and aborts, and passes every other fault on to the
// previous handler. Both mappings are sparse: capacity costs address space,
// not memory, until written. Freed ranges are punched out of the memfd so
// their pages return to the system.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace device_sim {

class SimMemory {
 public:
  SimMemory(int device, size_t capacity);  // throws std::runtime_error if the OS refuses
  SimMemory(const SimMemory&) = delete;
  SimMemory& operator=(const SimMemory&) = delete;

  // True on success; otherwise fills *why. nbytes 0 gives nullptr.
  bool allocate(size_t nbytes, void** out, std::string* why);
  // False (and *why) if p is not the start of a live allocation.
  bool release(void* p, std::string* why);

  bool contains(const void* p) const {
    auto a = reinterpret_cast<uintptr_t>(p);
    return a >= reinterpret_cast<uintptr_t>(view_) && a < reinterpret_cast<uintptr_t>(view_) + capacity_;
  }
  char* alias(const void* p) const { return alias_ + (static_cast<const char*>(p) - view_); }
  // True if [p, p + n) lies inside the requested bytes of one live
  // allocation; otherwise *why names the range and the allocation (base, size).
  bool check_range(const void* p, size_t n, std::string* why);
  size_t free_bytes();
  size_t capacity() const { return capacity_; }
  int device() const { return device_; }

  // For the fault handler: describes the allocation containing p without
  // blocking (gives up if the allocation table is locked). Async-signal-safe
  // as far as it goes: no allocation, snprintf-free formatting.
  void describe_for_signal(const void* p, char* buf, size_t len);

 private:
  int device_;
  size_t capacity_;
  int fd_ = -1;
  char* view_ = nullptr;
  char* alias_ = nullptr;
  std::mutex mutex_;
  std::map<size_t, size_t> free_;  // offset -> size, coalesced
  struct Extent {
    size_t size;       // rounded to kAlign: what the allocation occupies
    size_t requested;  // what malloc was asked for: copies and kernels may touch only this much
  };
  std::map<size_t, Extent> live_;  // offset -> extent
  size_t free_total_;
};

// Installs the SIGSEGV handler of Note [Simulated device memory] (once).
void install_fault_handler();
// Registers a device's memory with the handler (before any pointer is handed out).
void register_memory_for_faults(SimMemory* mem);

}  // namespace device_sim
