#include "SimDevice.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

namespace device_sim {

// Defined in SimApi.cpp: wakes the workers of every device (an event some
// stream may be waiting on has completed).
void notify_event_completed();

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Timing g_timing;
thread_local KernelContext t_kernel;

// Note [Simulated timing]
// ~~~~~~~~~~~~~~~~~~~~~~~
// With a launch latency set, a kernel occupies its stream for at least that
// long; with a copy bandwidth set, a copy or memset of n bytes occupies it for
// at least n / bandwidth. The worker pads the operation after running it
// (sleeping for most of a long pad, spinning for the last 50 us), so events
// recorded around the work, and therefore elapsed_time, reflect the model.
void pad_until(int64_t start, int64_t ns) {
  if (ns <= 0) return;
  int64_t deadline = start + ns;
  for (;;) {
    int64_t left = deadline - now_ns();
    if (left <= 0) return;
    if (left > 100000) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(left - 50000));
    } else {
      sched_yield();
    }
  }
}

std::string kernel_fault_prefix(const char* name, const SimStream* s, int device) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(s ? s->handle : 0));  // the handle the user holds
  return std::string("kernel fault in '") + (name ? name : "<kernel>") + "' on stream " + buf + " of device " +
         std::to_string(device);
}

const char* copy_kind_name(int kind) {
  switch (kind) {
    case SDK_MEMCPY_HOST_TO_HOST:
      return "memcpy HtoH";
    case SDK_MEMCPY_HOST_TO_DEVICE:
      return "memcpy HtoD";
    case SDK_MEMCPY_DEVICE_TO_HOST:
      return "memcpy DtoH";
    default:
      return "memcpy DtoD";
  }
}

void event_ref(SimEvent* e) { e->refs.fetch_add(1, std::memory_order_relaxed); }
void event_unref(SimEvent* e) {
  if (e->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete e;
}

// Note [Deferred wake-ups]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// Each launch that finds the worker asleep pays a futex wake-up, and the
// woken worker preempts the launching thread on a machine with no spare core:
// two context switches per small kernel (issue 18's launch row). On a loaded
// machine that is most launches, even with Note [Worker spin]: the caller is
// itself descheduled for longer than kSpinNs, the spin times out, the worker
// sleeps, the next launch wakes it and the wake-up preempts the caller again
// (measured: 2,300 timed-out spins and 5,100 sleeps per 100,000 launches,
// 1,000-4,000 involuntary switches of the caller per 20,000). So the spinning
// worker, when it has just run ops and finds no more (after its spin, or with
// spinning backed off), sleeps in a timed wait (kDeferredWakeNs) instead of an
// untimed one; an enqueue that finds such a timed sleeper does not wake it
// (the worker comes by itself within kDeferredWakeNs) unless kDeferredBatch
// ops have been deferred, and every wait for completion (stream and device
// synchronize, stream query, event waits) wakes it at once
// (flush_deferred_locked). A caller that waits often (a launch +
// synchronize loop, a polling query) gains nothing from deferral and loses
// the wake-up's overlap with its way to the wait (issue 4's round trip, 25 ->
// 55 us loaded), so nothing is deferred within kDeferAfterWaitNs of the last
// wait, counted from its start and from its end: deferral serves streams of
// launches nobody waits for. (Counted from the start only, a loop whose
// synchronize waits longer than kDeferAfterWaitNs, a training step of a
// millisecond of kernels, had the launches of its next step deferred until its
// next synchronize: the device idled while the host launched, 100-250 us a
// step of issue 14's MLP.) A timed wait
// that times out with nothing to run is followed by an untimed one, so an
// idle simulator does not poll. An op nobody waits for may start
// up to kDeferredWakeNs late; back-to-back launches on a quiet machine are
// still taken by the spin.
constexpr int kDeferredBatch = 256;
constexpr int64_t kDeferAfterWaitNs = 1'000'000;
constexpr auto kDeferredWakeNs = std::chrono::microseconds(1000);

SimDevice::SimDevice(int index, size_t capacity, int workers)
    : index_(index), memory_(index, capacity), kernel_activity_(now_ns()), memory_activity_(now_ns()) {
  for (int i = 0; i < workers; ++i) {
    workers_.emplace_back([this, i] {
      // Named so that profilers and debuggers tell the simulated device's
      // threads from the host program's ("sim0:w1": device 0, worker 1).
      char name[16];
      std::snprintf(name, sizeof(name), "sim%d:w%d", index_ % 100, i % 100);
      pthread_setname_np(pthread_self(), name);
      worker_loop(/*spins=*/i == 0);
    });
    // Workers live until the process exits (the simulator is immortal): a
    // kernel may still be running while the interpreter shuts down.
    workers_.back().detach();
  }
}

SimStream* SimDevice::create_stream(int priority) {
  auto* s = new SimStream(index_, priority);
  std::lock_guard<std::mutex> lock(mutex_);
  s->serial = next_serial_++;
  streams_.push_back(s);
  return s;
}

void SimDevice::destroy_stream(SimStream* s) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (s->queue.empty() && !s->running) {
    streams_.erase(std::find(streams_.begin(), streams_.end(), s));
    delete s;
  } else {
    s->destroyed = true;  // the worker deletes it after its last op
  }
}

// Releases what an op that will never run holds (Note [Simulated faults], Note [Simulated graphs]).
void drop_op(Op& op) {
  if (op.kind == Op::Kernel && op.release != nullptr) op.release(op.args.data());
  if (op.kind == Op::HostFn && op.host_release != nullptr) op.host_release(op.user);
  if ((op.kind == Op::Record || op.kind == Op::Wait) && op.event != nullptr) event_unref(op.event);
  if (op.kind == Op::Graph && op.graph != nullptr) graph_unref(op.graph);
  op.event = nullptr;
  op.graph = nullptr;
}

SimGraph::~SimGraph() {
  for (Op& op : ops) drop_op(op);  // recorded kernels' release functions run once, here
}

void graph_unref(SimGraph* g) {
  if (g->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete g;
}

bool SimDevice::begin_capture(SimStream* s, SimGraph* g) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (s->capture != nullptr) return false;
  s->capture = g;
  return true;
}

SimGraph* SimDevice::end_capture(SimStream* s) {
  std::lock_guard<std::mutex> lock(mutex_);
  SimGraph* g = s->capture;
  s->capture = nullptr;
  return g;
}

bool SimDevice::is_capturing(SimStream* s) {
  std::lock_guard<std::mutex> lock(mutex_);
  return s->capture != nullptr;
}

void SimDevice::enqueue(SimStream* s, Op op) {
  op.correlation = t_trace_correlation;  // Note [Simulated trace]
  std::unique_lock<std::mutex> lock(mutex_);
  if (SimGraph* g = s->capture) {  // Note [Simulated graphs]: record, do not run
    const bool replayable = (op.kind == Op::Kernel && op.reusable) || op.kind == Op::Copy || op.kind == Op::Memset;
    if (replayable && g->invalid.empty()) {
      g->ops.push_back(std::move(op));
      return;
    }
    if (g->invalid.empty()) {
      static const char* kNames[] = {"a host function", "a kernel", "a copy", "a memset", "an event record",
                                     "an event wait", "a graph replay"};
      g->invalid = std::string(kNames[op.kind]) +
                   (op.kind == Op::Kernel ? std::string(" ('") + (op.name ? op.name : "<kernel>") +
                                                "') launched without device_sim_launch_kernel_reusable"
                                          : std::string()) +
                   " was enqueued on the capturing stream; it cannot be replayed";
    }
    lock.unlock();
    drop_op(op);
    return;
  }
  if (fault_count_ > 0 && op.kind == Op::Kernel && (fault_stream_ == 0 || fault_stream_ == s->handle)) {
    op.fault = true;  // Note [Simulated faults]
    --fault_count_;
  }
  s->queue.push_back(std::move(op));
  s->seqs.push_back(next_seq_++);
  s->enqueued++;
  enqueued_total_.fetch_add(1, std::memory_order_release);
  // A spinning worker sees the op without a wake-up (Note [Worker spin]); so
  // does the worker running this stream's head, which picks again when done
  // (waking a sleeper for it would cost a futex call and find nothing to run).
  if (sleeping_ > 0 && spinning_ == 0 && !s->running) {
    // Note [Deferred wake-ups]: a worker in a timed wait comes for this op on its own.
    if (timed_sleepers_ > 0 && now_ns() - last_wait_ns_.load(std::memory_order_relaxed) > kDeferAfterWaitNs && ++deferred_ < kDeferredBatch) return;
    deferred_ = 0;
    work_cv_.notify_one();
  }
}

void SimDevice::flush_deferred_locked() {
  last_wait_ns_.store(now_ns(), std::memory_order_relaxed);
  if (deferred_ > 0) {
    deferred_ = 0;
    work_cv_.notify_one();
  }
}

bool SimDevice::stream_idle(SimStream* s) {
  std::lock_guard<std::mutex> lock(mutex_);
  flush_deferred_locked();  // a polling caller wants the work done now
  return s->done.load(std::memory_order_acquire) >= s->enqueued;
}

// Note [Completion wake-ups]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// Waiters for completion sleep on done_cv_. A worker notifies it after an op
// only where the op may have ended a wait: the stream's `done` reached the
// smallest target a synchronize_stream waiter registered (SimStream::wake_at,
// reset when reached; a waiter still short of its target registers again), or
// the stream went idle while a synchronize() waits (idle_waiters_). Event
// records and waits consumed at a stream's head notify always (an event
// waiter's target is its record). Every `done` increment and every check of a
// waiter's condition is under mutex_, so no wake-up is lost. Before, every op
// notified: a synchronize() over the 35 kernels of issue 14's MLP step woke the
// host 30 times, each wake-up taking the mutex from the worker and, on a
// loaded 2-core machine, the worker's core (52 voluntary switches of the host
// and 47 involuntary ones of the worker per step).
void SimDevice::synchronize_stream(SimStream* s) {
  uint64_t target;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    target = s->enqueued;
    flush_deferred_locked();
  }
  // Short work finishes within microseconds: spin briefly before sleeping
  // (a futex round trip costs more than the work itself).
  int64_t deadline = now_ns() + 20000;
  while (s->done.load(std::memory_order_acquire) < target) {
    if (now_ns() > deadline) {
      std::unique_lock<std::mutex> lock(mutex_);
      while (s->done.load(std::memory_order_acquire) < target) {
        s->wake_at = std::min(s->wake_at, target);  // Note [Completion wake-ups]
        done_cv_.wait(lock);
      }
      break;
    }
    sched_yield();
  }
  last_wait_ns_.store(now_ns(), std::memory_order_relaxed);  // Note [Deferred wake-ups]: from the wait's end
}

void SimDevice::synchronize() {
  std::unique_lock<std::mutex> lock(mutex_);
  flush_deferred_locked();
  ++idle_waiters_;  // Note [Completion wake-ups]
  done_cv_.wait(lock, [&] {
    for (SimStream* s : streams_)
      if (!s->queue.empty() || s->running) return false;
    return true;
  });
  --idle_waiters_;
  last_wait_ns_.store(now_ns(), std::memory_order_relaxed);  // Note [Deferred wake-ups]: from the wait's end
}

void SimDevice::wait_event(SimEvent* e, uint64_t gen, bool blocking) {
  if (e->completed.load(std::memory_order_acquire) >= gen) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    flush_deferred_locked();
  }
  if (!blocking) {
    int64_t deadline = now_ns() + 20000;
    while (e->completed.load(std::memory_order_acquire) < gen && now_ns() < deadline) sched_yield();
  }
  if (e->completed.load(std::memory_order_acquire) < gen) {
    std::unique_lock<std::mutex> lock(mutex_);
    done_cv_.wait(lock, [&] { return e->completed.load(std::memory_order_acquire) >= gen; });
  }
  last_wait_ns_.store(now_ns(), std::memory_order_relaxed);  // Note [Deferred wake-ups]: from the wait's end
}

void SimDevice::set_lost() {
  lost_.store(true, std::memory_order_release);
  wake_workers();
}

void SimDevice::reset() {
  synchronize();  // a lost device drains its queues without running them
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fault_stream_ = 0;
    fault_count_ = 0;
  }
  alloc_failures_.store(0, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(error_mutex_);
    error_status_ = SDK_SUCCESS;
    error_message_.clear();
    extra_errors_ = 0;
    has_error_.store(false, std::memory_order_release);
  }
  lost_.store(false, std::memory_order_release);
}

void SimDevice::record_async_error(sdk_status status, std::string message) {
  std::lock_guard<std::mutex> lock(error_mutex_);
  if (has_error_.load(std::memory_order_relaxed)) {
    ++extra_errors_;
    return;
  }
  error_status_ = status;
  error_message_ = std::move(message);
  has_error_.store(true, std::memory_order_release);
}

bool SimDevice::peek_async_error(sdk_status* status, std::string* message) const {
  if (!has_error_.load(std::memory_order_acquire)) return false;
  std::lock_guard<std::mutex> lock(error_mutex_);
  if (!has_error_.load(std::memory_order_relaxed)) return false;
  *status = error_status_;
  *message = error_message_;
  return true;
}

bool SimDevice::take_async_error(sdk_status* status, std::string* message) {
  if (!has_error_.load(std::memory_order_acquire)) return false;
  std::lock_guard<std::mutex> lock(error_mutex_);
  if (!has_error_.load(std::memory_order_relaxed)) return false;
  *status = error_status_;
  *message = std::move(error_message_);
  if (extra_errors_ > 0) {
    *message += " (and " + std::to_string(extra_errors_) + " later fault" + (extra_errors_ == 1 ? "" : "s") +
                " on device " + std::to_string(index_) + ")";
  }
  error_message_.clear();
  extra_errors_ = 0;
  error_status_ = SDK_SUCCESS;
  has_error_.store(false, std::memory_order_release);
  return true;
}

void SimDevice::inject_kernel_faults(uint64_t stream, int64_t count, std::string message) {
  std::lock_guard<std::mutex> lock(mutex_);
  fault_stream_ = stream;
  fault_count_ = count;
  fault_message_ = std::move(message);
}

bool SimDevice::consume_alloc_failure() {
  int64_t n = alloc_failures_.load(std::memory_order_acquire);
  while (n > 0) {
    if (alloc_failures_.compare_exchange_weak(n, n - 1, std::memory_order_acq_rel)) return true;
  }
  return false;
}

void SimDevice::wake_workers() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (sleeping_ > 0) work_cv_.notify_all();
}

// Note [Simulated streams]: the runnable stream of highest priority, oldest
// head first. Satisfied waits at the head are consumed here.
SimStream* SimDevice::pick_locked() {
  SimStream* best = nullptr;
  bool consumed = false;
  for (SimStream* s : streams_) {
    if (s->running) continue;
    while (!s->queue.empty() && s->queue.front().kind == Op::Wait) {
      Op& w = s->queue.front();
      if (w.event->completed.load(std::memory_order_acquire) < w.generation) break;
      event_unref(w.event);
      s->queue.pop_front();
      s->seqs.pop_front();
      s->done.fetch_add(1, std::memory_order_release);
      consumed = true;
    }
    if (s->queue.empty() || s->queue.front().kind == Op::Wait) continue;
    if (best == nullptr || s->priority < best->priority ||
        (s->priority == best->priority && s->seqs.front() < best->seqs.front())) {
      best = s;
    }
  }
  if (consumed) done_cv_.notify_all();
  return best;
}

// Note [Worker spin]
// ~~~~~~~~~~~~~~~~~~
// Waking a sleeping worker costs the launching thread a futex call and the
// worker a context switch, several microseconds per launch when a program
// launches small kernels back to back (as a real device's launch queue would
// absorb them). So one worker per device polls the queue for a short while
// (kSpinNs) before it sleeps; while it spins, enqueue does not notify. The
// other workers sleep at once, so an idle simulator burns at most one core per
// device for kSpinNs after its last op.
// Spinning pays only with a spare core: on a machine with none (a loaded one,
// or one core), the spinner takes the core from the launching thread, which
// then waits out scheduler slices (issue 18 counted 700-4,300 involuntary
// context switches of the caller per 20,000 launches, against torch's 12).
// The spinner sees that as its own involuntary context switches
// (getrusage(RUSAGE_THREAD), one call per spin episode): when it was
// preempted during a spin, spinning stops for kSpinBackoffNs (workers sleep
// at once and enqueue notifies), then is tried again, so the simulator
// adapts as the load comes and goes.
// While it is counted as spinning, enqueue wakes nobody, so two ops enqueued on
// two streams as the spin ends would both wait for the one worker. Whichever
// worker starts an op therefore wakes a sleeper when another stream still has
// runnable work (worker_loop).
constexpr int64_t kSpinNs = 30'000;
constexpr int64_t kSpinBackoffNs = 50'000'000;


int64_t thread_involuntary_switches() {
  struct rusage ru;
  return getrusage(RUSAGE_THREAD, &ru) == 0 ? static_cast<int64_t>(ru.ru_nivcsw) : 0;
}

void SimDevice::worker_loop(bool spins) {
  std::unique_lock<std::mutex> lock(mutex_);
  bool ran_since_sleep = false;  // Note [Deferred wake-ups]
  for (;;) {
    SimStream* s = pick_locked();
    if (s == nullptr && spins && spinning_ == 0 && (spin_backoff_until_ == 0 || now_ns() >= spin_backoff_until_)) {
      const uint64_t seen = enqueued_total_.load(std::memory_order_acquire);
      ++spinning_;
      lock.unlock();
      const int64_t preempted_before = thread_involuntary_switches();
      const int64_t deadline = now_ns() + kSpinNs;
      while (enqueued_total_.load(std::memory_order_acquire) == seen && now_ns() < deadline) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      }
      const bool preempted = thread_involuntary_switches() != preempted_before;
      lock.lock();
      --spinning_;
      spin_backoff_until_ = preempted ? now_ns() + kSpinBackoffNs : 0;
      if (enqueued_total_.load(std::memory_order_acquire) != seen) continue;
    }
    if (s == nullptr) {
      ++sleeping_;
      // Note [Deferred wake-ups]: timed when this (spinning) worker has just run ops.
      if (spins && ran_since_sleep) {
        ++timed_sleepers_;
        work_cv_.wait_for(lock, kDeferredWakeNs);
        --timed_sleepers_;
      } else {
        work_cv_.wait(lock);
      }
      --sleeping_;
      deferred_ = 0;  // this worker now runs whatever was queued
      ran_since_sleep = false;
      continue;
    }
    ran_since_sleep = true;
    Op op = std::move(s->queue.front());
    s->queue.pop_front();
    s->seqs.pop_front();
    if (op.kind == Op::Record) {
      // Completed under the lock, stream first: whoever sees the event
      // complete also sees the stream's work up to it complete.
      if (g_trace_on.load(std::memory_order_relaxed)) {
        int64_t t = now_ns();
        trace_add("event record", "event", index_, s->serial, reinterpret_cast<const void*>(s->handle), t, t, 0);
      }
      complete_record(s, op);
      lock.unlock();
      notify_event_completed();  // other devices' locks: never while holding ours
      lock.lock();
      continue;
    }
    s->running = true;
    // Note [Worker spin]: an op enqueued while this worker was still counted as spinning woke nobody; if
    // another stream has runnable work, a sleeping worker takes it now (streams run concurrently).
    if (sleeping_ > 0 && pick_locked() != nullptr) work_cv_.notify_one();
    lock.unlock();
    run(s, op);
    lock.lock();
    s->running = false;
    const uint64_t done = s->done.fetch_add(1, std::memory_order_release) + 1;
    // Note [Completion wake-ups]: only a waiter whose wait this op may have ended.
    const bool wake = done >= s->wake_at || (idle_waiters_ > 0 && s->queue.empty());
    if (done >= s->wake_at) s->wake_at = UINT64_MAX;
    if (s->destroyed && s->queue.empty()) {
      streams_.erase(std::find(streams_.begin(), streams_.end(), s));
      delete s;
    }
    if (wake) done_cv_.notify_all();
  }
}

void SimDevice::complete_record(SimStream* s, Op& op) {
  SimEvent* e = op.event;
  e->time_ns.store(now_ns(), std::memory_order_relaxed);
  s->done.fetch_add(1, std::memory_order_release);
  if (s->destroyed && s->queue.empty()) {
    streams_.erase(std::find(streams_.begin(), streams_.end(), s));
    delete s;
  }
  uint64_t cur = e->completed.load(std::memory_order_relaxed);
  while (cur < op.generation && !e->completed.compare_exchange_weak(cur, op.generation, std::memory_order_release)) {
  }
  event_unref(e);
  done_cv_.notify_all();
}

// Note [Simulated faults]: a device-to-device copy out of a faulted device
// carries the fault to its destination instead of the bytes.
bool SimDevice::forward_fault_of_copy(const Op& op) {
  sdk_status status;
  std::string message;
  const SimDevice* faulted = nullptr;
  for (const SimDevice* d : {static_cast<const SimDevice*>(this), static_cast<const SimDevice*>(op.copy_src_device)}) {
    if (d && d != op.copy_dst_device && d->peek_async_error(&status, &message)) {
      faulted = d;
      break;
    }
  }
  if (!faulted) return false;
  op.copy_dst_device->record_async_error(
      status, "device-to-device copy from device " + std::to_string(faulted->index()) + " to device " +
                  std::to_string(op.copy_dst_device->index()) +
                  " did not run: the source device has a pending error: " + message);
  return true;
}

void SimDevice::run(SimStream* s, Op& op, bool replay) {
  if (lost()) {
    // Note [Simulated faults]: a lost device runs nothing; a kernel's
    // arguments are still released (device_sim_launch_kernel_ex). A recorded
    // op keeps them: its graph releases them (Note [Simulated graphs]).
    if (!replay) drop_op(op);
    return;
  }
  bool trace = g_trace_on.load(std::memory_order_relaxed);
  int64_t start = now_ns();
  int64_t min_ns = 0;
  // Note [Simulated activity]: until the end of the pad; a graph replay counts each recorded op, not itself.
  ActivityScope activity(op.kind == Op::Kernel && !op.fault              ? &kernel_activity_
                         : op.kind == Op::Copy || op.kind == Op::Memset ? &memory_activity_
                                                                        : nullptr,
                         start);
  const char* name = nullptr;
  const char* category = nullptr;
  size_t bytes = 0;
  switch (op.kind) {
    case Op::HostFn:
      op.fn(op.user);
      name = "host function";
      category = "host";
      break;
    case Op::Kernel: {
      name = op.name ? op.name : "<kernel>";
      category = "kernel";
      min_ns = g_timing.launch_latency_ns.load(std::memory_order_relaxed);
      if (op.fault) {
        std::string msg;
        {
          std::lock_guard<std::mutex> lock(mutex_);
          msg = fault_message_;
        }
        record_async_error(SDK_ERROR_KERNEL_FAULT, kernel_fault_prefix(name, s, index_) +
                                                       (msg.empty() ? std::string(" (injected by device_sim.inject)")
                                                                    : ": " + msg));
        if (op.release != nullptr) op.release(op.args.data());
        break;
      }
      t_kernel = KernelContext{this, s, name};
      op.kernel(op.args.data());
      t_kernel = KernelContext{};
      // Note [Simulated graphs]: a reusable kernel's release runs after its last run (this one, unless recorded).
      if (op.reusable && !replay && op.release != nullptr) op.release(op.args.data());
      break;
    }
    case Op::Graph:
      // Note [Simulated graphs]: one submission, the recorded ops in order.
      for (Op& recorded : op.graph->ops) run(s, recorded, /*replay=*/true);
      graph_unref(op.graph);
      op.graph = nullptr;
      return;
    case Op::Copy:
      if (op.copy_dst_device && forward_fault_of_copy(op)) break;
      std::memmove(op.dst, op.src, op.n);
      name = copy_kind_name(op.copy_kind);
      category = "memcpy";
      bytes = op.n;
      break;
    case Op::Memset:
      std::memset(op.dst, op.value, op.n);
      name = "memset";
      category = "memset";
      bytes = op.n;
      break;
    case Op::Record:
    case Op::Wait:
      return;  // handled by worker_loop and pick_locked under the lock
  }
  if (bytes) {
    double per_byte = g_timing.copy_ns_per_byte.load(std::memory_order_relaxed);
    if (per_byte > 0) min_ns = static_cast<int64_t>(per_byte * static_cast<double>(bytes));
  }
  if (min_ns > 0) pad_until(start, min_ns);
  if (trace) {
    trace_add(name, category, index_, s->serial, reinterpret_cast<const void*>(s->handle), start, now_ns(), bytes,
              op.correlation);
  }
}

}  // namespace device_sim
