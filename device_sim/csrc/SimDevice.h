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
// time of their last record (steady clock). The handles the API hands out
// are validated before use (Note [Simulated handles], Handles.h).
//
// Note [Simulated faults]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A device holds at most one pending asynchronous error (the first one; later
// ones while it is pending are counted, not kept). A kernel faults when it was
// marked at launch by an injected "kernel_fault" (SimDevice::enqueue) or when
// it calls device_sim_kernel_fail() while running; the rest of the queued work
// still runs, as after a trap that only kills one kernel. The error is
// returned, and cleared, by the next synchronising call on the device (stream,
// event or device synchronize, a synchronous copy); the device is usable again
// afterwards. A lost device (inject "device_lost") refuses every call until
// reset_device(); its workers drain what was queued without running it
// (records still complete, so waits on other devices never hang). A kernel
// that does not run (injected fault, drained) gets its release function
// called instead (device_sim_launch_kernel_ex), and so does a drained host
// function (launch_host_func's release), so arguments that own host memory
// are not leaked.
//
// Faults cross devices with the data: a device-to-device copy that runs while
// its source device (or the device whose stream runs it) has a pending error
// does not copy, and records an error on the destination device that names
// the source's fault. Otherwise `(x * 2).to("accel:1").cpu()` after a fault on
// accel:0 would return stale bytes with no error, the fault surfacing only
// at a later synchronize of accel:0.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "Activity.h"
#include "SimMemory.h"
#include <backend_sdk/runtime/DeviceApi.h>

namespace device_sim {

struct SimEvent {
  uint64_t handle = 0;  // Note [Simulated handles]
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

// A kernel's argument bytes, copied at launch: inline up to kInline bytes
// (every launch would otherwise allocate), on the heap beyond.
class KernelArgs {
 public:
  static constexpr size_t kInline = 64;
  void assign(const void* data, size_t n) {
    size_ = n;
    if (n > kInline) heap_.reset(new unsigned char[n]);
    if (n) std::memcpy(data_mut(), data, n);
  }
  void* data() { return size_ > kInline ? heap_.get() : static_cast<void*>(inline_); }

 private:
  void* data_mut() { return data(); }
  alignas(16) unsigned char inline_[kInline] = {};
  std::unique_ptr<unsigned char[]> heap_;
  size_t size_ = 0;
};

class SimDevice;
struct SimGraph;

struct Op {
  enum Kind : uint8_t { HostFn, Kernel, Copy, Memset, Record, Wait, Graph } kind;
  explicit Op(Kind k) : kind(k) {}
  sdk_host_fn fn = nullptr;
  sdk_host_fn host_release = nullptr;  // launch_host_func's release: called instead of fn when it does not run
  void (*kernel)(void*) = nullptr;
  void (*release)(void*) = nullptr;  // called instead of `kernel` when it does not run
  void* user = nullptr;
  KernelArgs args;
  char* dst = nullptr;
  const char* src = nullptr;
  size_t n = 0;
  int value = 0;
  SimEvent* event = nullptr;  // holds a reference
  uint64_t generation = 0;
  const char* name = nullptr;  // kernel name (interned, immortal)
  int copy_kind = 0;           // sdk_memcpy_kind of a Copy
  SimDevice* copy_src_device = nullptr;  // device-to-device copies: Note [Simulated faults]
  SimDevice* copy_dst_device = nullptr;
  bool fault = false;          // Note [Simulated faults]: injected kernel fault
  bool reusable = false;       // Note [Simulated graphs]: `kernel` may run again; `release` runs once after
  uint64_t correlation = 0;    // Note [Simulated trace]: the launching thread's correlation id
  SimGraph* graph = nullptr;   // a Graph op (one replay): holds a reference
};

// Note [Simulated graphs]
// ~~~~~~~~~~~~~~~~~~~~~~~
// The "sdk.graph" extension (Note [Device graph extension]). A capturing
// stream's enqueue appends the op to its graph instead of its queue. Kernels
// launched with device_sim_launch_kernel_reusable (whose function leaves its
// arguments alone and whose release runs once, after the last run), copies
// and memsets are recorded; anything else invalidates the capture (the op is
// released, capture_end fails naming it). A replay is ONE Graph op on a
// stream: the worker runs the recorded ops in order with the timing model of
// each (Note [Simulated timing]) and counts the replay as one operation of
// the stream. Injected kernel faults do not mark recorded kernels; a kernel
// that calls device_sim_kernel_fail during a replay faults as usual. The
// graph is reference counted (its owner + one per queued replay); the last
// reference runs the recorded kernels' release functions and frees it.
struct SimGraph {
  uint64_t handle = 0;
  int device;
  std::vector<Op> ops;
  std::string invalid;  // why the capture cannot be replayed (empty: valid)
  std::atomic<int> refs{1};
  explicit SimGraph(int d) : device(d) {}
  ~SimGraph();
};
void graph_unref(SimGraph* g);

struct SimStream {
  uint64_t handle = 0;  // Note [Simulated handles]
  int device;
  int priority;
  std::deque<Op> queue;     // guarded by the device mutex
  uint64_t head_seq = 0;    // enqueue order of the head op (for fairness)
  std::deque<uint64_t> seqs;
  bool running = false;
  bool destroyed = false;
  uint64_t enqueued = 0;
  std::atomic<uint64_t> done{0};
  // Under the device mutex: the smallest `done` a synchronize_stream waiter sleeps for (UINT64_MAX:
  // none); Note [Completion wake-ups].
  uint64_t wake_at = UINT64_MAX;
  uint32_t serial = 0;      // 1, 2, ... per device: the trace's tid
  SimGraph* capture = nullptr;  // guarded by the device mutex: Note [Simulated graphs]
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
  // Note [Simulated graphs]: starts / ends capture mode of s (false: s already is / is not capturing).
  bool begin_capture(SimStream* s, SimGraph* g);
  SimGraph* end_capture(SimStream* s);
  bool is_capturing(SimStream* s);
  bool stream_idle(SimStream* s);
  void synchronize_stream(SimStream* s);
  void synchronize();
  // Waits until e's record generation `gen` has completed (e recorded on this device).
  void wait_event(SimEvent* e, uint64_t gen, bool blocking);
  // Wakes this device's workers (an event another device waits on completed).
  void wake_workers();

  // Note [Simulated faults].
  bool lost() const { return lost_.load(std::memory_order_acquire); }
  void set_lost();
  // Waits for the queues to drain, then clears loss, pending error and injections.
  void reset();
  // Records an asynchronous error (kept if none is pending).
  void record_async_error(sdk_status status, std::string message);
  // Takes the pending error: false if none.
  bool take_async_error(sdk_status* status, std::string* message);
  // The pending error without clearing it (false if none).
  bool peek_async_error(sdk_status* status, std::string* message) const;
  bool has_async_error() const { return has_error_.load(std::memory_order_acquire); }
  // The next `count` kernels launched on the stream of handle `stream` (0: any stream) fault.
  void inject_kernel_faults(uint64_t stream, int64_t count, std::string message);
  // The next `count` mallocs fail.
  void inject_alloc_failures(int64_t count) { alloc_failures_.store(count, std::memory_order_release); }
  // True (and one fewer pending) if an injected allocation failure applies.
  bool consume_alloc_failure();
  // Note [Simulated activity]: busy time of kernels and of copies/memsets ("sdk.stats").
  ActivityMeter& kernel_activity() { return kernel_activity_; }
  ActivityMeter& memory_activity() { return memory_activity_; }

 private:
  void worker_loop(bool spins);
  SimStream* pick_locked();
  void run(SimStream* s, Op& op, bool replay = false);
  bool forward_fault_of_copy(const Op& op);
  void complete_record(SimStream* s, Op& op);  // under mutex_

  int index_;
  SimMemory memory_;
  std::mutex mutex_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::vector<SimStream*> streams_;  // live streams (owned)
  uint64_t next_seq_ = 0;
  uint32_t next_serial_ = 1;
  int sleeping_ = 0;
  int spinning_ = 0;                        // see Note [Worker spin]
  int64_t spin_backoff_until_ = 0;          // under mutex_: no spinning before this time (Note [Worker spin])
  int timed_sleepers_ = 0;                  // under mutex_: workers in a timed wait (Note [Deferred wake-ups])
  int deferred_ = 0;                        // under mutex_: ops enqueued without a wake-up since the last one
  // The start or end of the last wait for completion (Note [Deferred wake-ups]); atomic so that a wait
  // that ends spinning can stamp it without the lock.
  std::atomic<int64_t> last_wait_ns_{0};
  int idle_waiters_ = 0;                    // under mutex_: threads in synchronize() (Note [Completion wake-ups])
  void flush_deferred_locked();             // wakes a worker for deferred ops (Note [Deferred wake-ups])
  std::atomic<uint64_t> enqueued_total_{0};  // every op ever queued, for the spinning worker
  std::vector<std::thread> workers_;

  std::atomic<bool> lost_{false};
  std::atomic<int64_t> alloc_failures_{0};
  uint64_t fault_stream_ = 0;          // under mutex_: a handle (a pointer could be reused by a new stream)
  int64_t fault_count_ = 0;            // under mutex_
  std::string fault_message_;          // under mutex_
  mutable std::mutex error_mutex_;
  std::atomic<bool> has_error_{false};
  sdk_status error_status_ = SDK_SUCCESS;  // under error_mutex_
  std::string error_message_;              // under error_mutex_
  int64_t extra_errors_ = 0;               // under error_mutex_
  ActivityMeter kernel_activity_;
  ActivityMeter memory_activity_;
};

int64_t now_ns();

// The optional timing model (Note [Simulated timing] in SimDevice.cpp).
struct Timing {
  std::atomic<int64_t> launch_latency_ns{0};
  std::atomic<double> copy_ns_per_byte{0.0};  // 0: unlimited bandwidth
};
extern Timing g_timing;
// Waits until at least `ns` have passed since `start` (a now_ns() value).
void pad_until(int64_t start, int64_t ns);

// The running kernel of a worker thread (for device_sim_kernel_fail).
struct KernelContext {
  SimDevice* device = nullptr;
  SimStream* stream = nullptr;
  const char* name = nullptr;
};
extern thread_local KernelContext t_kernel;
// "kernel fault in 'name' on stream 0x.. of device D"
std::string kernel_fault_prefix(const char* name, const SimStream* s, int device);

// Chrome trace (Trace.cpp).
extern std::atomic<bool> g_trace_on;
// Note [Simulated trace]: the "sdk.trace" v2 correlation id the calling thread set (0: none); enqueue
// copies it into the Op so the record of the work carries it.
extern thread_local uint64_t t_trace_correlation;
void trace_add(const char* name, const char* category, int device, uint32_t stream_serial, const void* stream,
               int64_t start_ns, int64_t end_ns, size_t bytes, uint64_t correlation = 0);
const char* copy_kind_name(int kind);  // "memcpy HtoD", ...

}  // namespace device_sim
