// Streams, events and workers of the simulated devices.
//
// Note [Simulated streams]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// Every operation enqueued on a stream (kernel, host function, copy, memset,
// event record, event wait) returns at once; each device has a few worker
// threads that run the queued operations. A stream's operations run one at a
// time and in order (a stream is "busy" while a worker runs its head). When a
// worker picks work it takes, among the streams whose head is runnable, the
// one of highest priority (lowest number), and among those the oldest head.
// A wait on an event is runnable once the record it captured has completed;
// it never blocks a worker, so waits between streams of one device and
// between devices cannot deadlock the workers. Events carry the completion
// time of their last record (steady clock). Handles are checked by a magic
// number, so a stale handle is an error rather than a crash where possible.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "SimMemory.h"
#include "runtime/DeviceApi.h"

namespace device_sim {

constexpr uint32_t kStreamMagic = 0x5354524du;  // "STRM"
constexpr uint32_t kEventMagic = 0x45564e54u;   // "EVNT"

struct SimEvent {
  uint32_t magic = kEventMagic;
  int device;
  uint32_t flags;
  std::atomic<uint64_t> recorded{0};   // generation of the last record call
  std::atomic<uint64_t> completed{0};  // generation of the last completed record
  std::atomic<int64_t> time_ns{0};     // completion time of `completed`
  std::atomic<int> refs{1};            // the owner's + one per queued op
  SimEvent(int d, uint32_t f) : device(d), flags(f) {}
};

void event_ref(SimEvent* e);
void event_unref(SimEvent* e);

struct Op {
  enum Kind : uint8_t { HostFn, Kernel, Copy, Memset, Record, Wait } kind;
  explicit Op(Kind k) : kind(k) {}
  sdk_host_fn fn = nullptr;
  void (*kernel)(void*) = nullptr;
  void* user = nullptr;
  std::vector<unsigned char> args;
  char* dst = nullptr;
  const char* src = nullptr;
  size_t n = 0;
  int value = 0;
  SimEvent* event = nullptr;  // holds a reference
  uint64_t generation = 0;
};

struct SimStream {
  uint32_t magic = kStreamMagic;
  int device;
  int priority;
  std::deque<Op> queue;     // guarded by the device mutex
  uint64_t head_seq = 0;    // enqueue order of the head op (for fairness)
  std::deque<uint64_t> seqs;
  bool running = false;
  bool destroyed = false;
  uint64_t enqueued = 0;
  std::atomic<uint64_t> done{0};
  SimStream(int d, int p) : device(d), priority(p) {}
};

class SimDevice {
 public:
  SimDevice(int index, size_t capacity, int workers);
  SimMemory& memory() { return memory_; }
  int index() const { return index_; }

  SimStream* create_stream(int priority);
  void destroy_stream(SimStream* s);
  void enqueue(SimStream* s, Op op);
  bool stream_idle(SimStream* s);
  void synchronize_stream(SimStream* s);
  void synchronize();
  // Waits until e's record generation `gen` has completed (e recorded on this device).
  void wait_event(SimEvent* e, uint64_t gen, bool blocking);
  // Wakes this device's workers (an event another device waits on completed).
  void wake_workers();

 private:
  void worker_loop();
  SimStream* pick_locked();
  void run(Op& op);
  void complete_record(SimStream* s, Op& op);  // under mutex_

  int index_;
  SimMemory memory_;
  std::mutex mutex_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::vector<SimStream*> streams_;  // live streams (owned)
  uint64_t next_seq_ = 0;
  int sleeping_ = 0;
  std::vector<std::thread> workers_;
};

int64_t now_ns();

}  // namespace device_sim
