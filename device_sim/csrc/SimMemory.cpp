#include "SimMemory.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <stdexcept>

#ifndef MFD_CLOEXEC
#include <linux/memfd.h>
#endif

namespace device_sim {
namespace {
constexpr size_t kAlign = 512;

std::string hex(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%p", p);
  return buf;
}
}  // namespace

SimMemory::SimMemory(int device, size_t capacity) : device_(device), capacity_(capacity), free_total_(capacity) {
  std::string name = "device_sim" + std::to_string(device);
  fd_ = memfd_create(name.c_str(), MFD_CLOEXEC);
  if (fd_ < 0) throw std::runtime_error("device_sim: memfd_create failed: " + std::string(std::strerror(errno)));
  if (ftruncate(fd_, static_cast<off_t>(capacity)) != 0) {
    close(fd_);
    throw std::runtime_error("device_sim: cannot size device memory: " + std::string(std::strerror(errno)));
  }
  void* view = mmap(nullptr, capacity, PROT_NONE, MAP_SHARED | MAP_NORESERVE, fd_, 0);
  void* alias = mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd_, 0);
  if (view == MAP_FAILED || alias == MAP_FAILED) {
    if (view != MAP_FAILED) munmap(view, capacity);
    if (alias != MAP_FAILED) munmap(alias, capacity);
    close(fd_);
    throw std::runtime_error("device_sim: cannot map device memory: " + std::string(std::strerror(errno)));
  }
  view_ = static_cast<char*>(view);
  alias_ = static_cast<char*>(alias);
  free_[0] = capacity;
}

bool SimMemory::allocate(size_t nbytes, void** out, std::string* why) {
  if (nbytes == 0) {
    *out = nullptr;
    return true;
  }
  size_t size = nbytes > capacity_ ? capacity_ + 1 : (nbytes + kAlign - 1) / kAlign * kAlign;
  std::lock_guard<std::mutex> lock(mutex_);
  size_t largest = 0;
  for (auto it = free_.begin(); it != free_.end(); ++it) {  // first fit
    if (it->second >= size) {
      size_t off = it->first, rest = it->second - size;
      free_.erase(it);
      if (rest) free_[off + size] = rest;
      live_[off] = Extent{size, nbytes};
      free_total_ -= size;
      *out = view_ + off;
      return true;
    }
    largest = std::max(largest, it->second);
  }
  *why = "device " + std::to_string(device_) + " is out of memory: tried to allocate " + std::to_string(nbytes) +
         " bytes with " + std::to_string(free_total_) + " bytes free of " + std::to_string(capacity_) +
         " (largest free range " + std::to_string(largest) + " bytes)";
  return false;
}

bool SimMemory::release(void* p, std::string* why) {
  if (!contains(p)) {
    *why = "free: " + hex(p) + " is not a pointer into the memory of device " + std::to_string(device_);
    return false;
  }
  size_t off = static_cast<size_t>(static_cast<char*>(p) - view_);
  size_t size;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(off);
    if (it == live_.end()) {
      *why = "free: " + hex(p) + " is not a live allocation of device " + std::to_string(device_) +
             " (double free, or a pointer into the middle of an allocation)";
      return false;
    }
    size = it->second.size;
    live_.erase(it);
    // Return the pages before the range can be handed out again.
    fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(off), static_cast<off_t>(size));
    free_total_ += size;
    auto next = free_.lower_bound(off);
    if (next != free_.end() && next->first == off + size) {
      size += next->second;
      next = free_.erase(next);
    }
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == off) {
        prev->second += size;
        return true;
      }
    }
    free_[off] = size;
  }
  return true;
}

bool SimMemory::check_range(const void* p, size_t n, std::string* why) {
  size_t off = static_cast<size_t>(static_cast<const char*>(p) - view_);
  auto range = [&] {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    const bool wraps = n > UINTPTR_MAX - a;
    return std::to_string(n) + " bytes at [" + hex(p) + ", " +
           (wraps ? std::string("the end of the address space") : hex(reinterpret_cast<const void*>(a + n))) + ")";
  };
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.upper_bound(off);
  if (it != live_.begin()) {
    --it;
    const size_t into = off - it->first, requested = it->second.requested;
    // Note [Simulated device memory]: the requested size bounds copies, not
    // the rounded one: an 8-byte allocation's padding belongs to nobody.
    if (into <= requested && n <= requested - into) return true;
    if (into < it->second.size) {
      const char* base = view_ + it->first;
      *why = range() + " run past the end of the allocation [" + hex(base) + ", " + hex(base + requested) + ") of " +
             std::to_string(requested) + " bytes at " + hex(base) + " on device " + std::to_string(device_);
      return false;
    }
  }
  *why = range() + " do not start inside a live allocation of device " + std::to_string(device_);
  return false;
}

size_t SimMemory::free_bytes() {
  std::lock_guard<std::mutex> lock(mutex_);
  return free_total_;
}

namespace {
// Minimal async-signal-safe formatting.
size_t append(char* buf, size_t len, size_t pos, const char* s) {
  while (*s && pos + 1 < len) buf[pos++] = *s++;
  buf[pos < len ? pos : len - 1] = '\0';
  return pos;
}
size_t append_hex(char* buf, size_t len, size_t pos, uintptr_t v) {
  char tmp[19] = "0x";
  char digits[16];
  int n = 0;
  do {
    digits[n++] = "0123456789abcdef"[v & 15];
    v >>= 4;
  } while (v);
  int i = 2;
  while (n) tmp[i++] = digits[--n];
  tmp[i] = '\0';
  return append(buf, len, pos, tmp);
}
size_t append_dec(char* buf, size_t len, size_t pos, uint64_t v) {
  char tmp[24];
  int n = 0;
  do {
    tmp[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v);
  char out[24];
  int i = 0;
  while (n) out[i++] = tmp[--n];
  out[i] = '\0';
  return append(buf, len, pos, out);
}
}  // namespace

void SimMemory::describe_for_signal(const void* p, char* buf, size_t len) {
  size_t pos = 0;
  buf[0] = '\0';
  size_t off = static_cast<size_t>(static_cast<const char*>(p) - view_);
  if (!mutex_.try_lock()) {
    pos = append(buf, len, pos, "device ");
    append_dec(buf, len, pos, static_cast<uint64_t>(device_));
    return;
  }
  auto it = live_.upper_bound(off);
  bool found = false;
  if (it != live_.begin()) {
    --it;
    if (off < it->first + it->second.size) {
      found = true;
      pos = append(buf, len, pos, "allocation of ");
      pos = append_dec(buf, len, pos, it->second.requested);
      pos = append(buf, len, pos, " bytes at ");
      pos = append_hex(buf, len, pos, reinterpret_cast<uintptr_t>(view_ + it->first));
      pos = append(buf, len, pos, " on device ");
      pos = append_dec(buf, len, pos, static_cast<uint64_t>(device_));
    }
  }
  mutex_.unlock();
  if (!found) {
    pos = append(buf, len, pos, "not inside a live allocation; device ");
    append_dec(buf, len, pos, static_cast<uint64_t>(device_));
  }
}

namespace {
constexpr int kMaxDevices = 64;
std::atomic<SimMemory*> g_memories[kMaxDevices];
struct sigaction g_previous;

void on_segv(int sig, siginfo_t* info, void* context) {
  const void* addr = info->si_addr;
  for (auto& slot : g_memories) {
    SimMemory* m = slot.load(std::memory_order_acquire);
    if (m == nullptr || !m->contains(addr)) continue;
    char detail[256];
    m->describe_for_signal(addr, detail, sizeof(detail));
    char msg[512];
    size_t pos = append(msg, sizeof(msg), 0, "device_sim: host access to device memory at ");
    pos = append_hex(msg, sizeof(msg), pos, reinterpret_cast<uintptr_t>(addr));
    pos = append(msg, sizeof(msg), pos, " (");
    pos = append(msg, sizeof(msg), pos, detail);
    pos = append(msg, sizeof(msg), pos,
                 "). Device memory is reachable only through copies and kernels (device_sim_translate).\n");
    ssize_t ignored = write(STDERR_FILENO, msg, pos);
    (void)ignored;
    abort();
  }
  // Not a device address: hand the fault to whoever handled it before us.
  if ((g_previous.sa_flags & SA_SIGINFO) && g_previous.sa_sigaction != nullptr) {
    g_previous.sa_sigaction(sig, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
  } else {
    // Restore the default action; returning re-runs the faulting instruction.
    sigaction(SIGSEGV, &g_previous, nullptr);
  }
}
}  // namespace

void install_fault_handler() {
  static bool installed = [] {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = &on_segv;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigaction(SIGSEGV, &sa, &g_previous);
    return true;
  }();
  (void)installed;
}

void register_memory_for_faults(SimMemory* mem) {
  if (mem->device() >= 0 && mem->device() < kMaxDevices) g_memories[mem->device()].store(mem, std::memory_order_release);
}

}  // namespace device_sim
