#include "SimDevice.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace device_sim {

// Defined in SimApi.cpp: wakes the workers of every device (an event some
// stream may be waiting on has completed).
void notify_event_completed();

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void event_ref(SimEvent* e) { e->refs.fetch_add(1, std::memory_order_relaxed); }
void event_unref(SimEvent* e) {
  if (e->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete e;
}

SimDevice::SimDevice(int index, size_t capacity, int workers) : index_(index), memory_(index, capacity) {
  for (int i = 0; i < workers; ++i) {
    workers_.emplace_back([this] { worker_loop(); });
    // Workers live until the process exits (the simulator is immortal): a
    // kernel may still be running while the interpreter shuts down.
    workers_.back().detach();
  }
}

SimStream* SimDevice::create_stream(int priority) {
  auto* s = new SimStream(index_, priority);
  std::lock_guard<std::mutex> lock(mutex_);
  streams_.push_back(s);
  return s;
}

void SimDevice::destroy_stream(SimStream* s) {
  std::lock_guard<std::mutex> lock(mutex_);
  s->magic = 0;
  if (s->queue.empty() && !s->running) {
    streams_.erase(std::find(streams_.begin(), streams_.end(), s));
    delete s;
  } else {
    s->destroyed = true;  // the worker deletes it after its last op
  }
}

void SimDevice::enqueue(SimStream* s, Op op) {
  std::lock_guard<std::mutex> lock(mutex_);
  s->queue.push_back(std::move(op));
  s->seqs.push_back(next_seq_++);
  s->enqueued++;
  if (sleeping_ > 0) work_cv_.notify_one();
}

bool SimDevice::stream_idle(SimStream* s) {
  std::lock_guard<std::mutex> lock(mutex_);
  return s->done.load(std::memory_order_acquire) >= s->enqueued;
}

void SimDevice::synchronize_stream(SimStream* s) {
  uint64_t target;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    target = s->enqueued;
  }
  // Short work finishes within microseconds: spin briefly before sleeping
  // (a futex round trip costs more than the work itself).
  int64_t deadline = now_ns() + 20000;
  while (s->done.load(std::memory_order_acquire) < target) {
    if (now_ns() > deadline) {
      std::unique_lock<std::mutex> lock(mutex_);
      done_cv_.wait(lock, [&] { return s->done.load(std::memory_order_acquire) >= target; });
      return;
    }
    sched_yield();
  }
}

void SimDevice::synchronize() {
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, [&] {
    for (SimStream* s : streams_)
      if (!s->queue.empty() || s->running) return false;
    return true;
  });
}

void SimDevice::wait_event(SimEvent* e, uint64_t gen, bool blocking) {
  if (!blocking) {
    int64_t deadline = now_ns() + 20000;
    while (e->completed.load(std::memory_order_acquire) < gen && now_ns() < deadline) sched_yield();
  }
  if (e->completed.load(std::memory_order_acquire) >= gen) return;
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, [&] { return e->completed.load(std::memory_order_acquire) >= gen; });
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

void SimDevice::worker_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    SimStream* s = pick_locked();
    if (s == nullptr) {
      ++sleeping_;
      work_cv_.wait(lock);
      --sleeping_;
      continue;
    }
    Op op = std::move(s->queue.front());
    s->queue.pop_front();
    s->seqs.pop_front();
    if (op.kind == Op::Record) {
      // Completed under the lock, stream first: whoever sees the event
      // complete also sees the stream's work up to it complete.
      complete_record(s, op);
      lock.unlock();
      notify_event_completed();  // other devices' locks: never while holding ours
      lock.lock();
      continue;
    }
    s->running = true;
    lock.unlock();
    run(op);
    lock.lock();
    s->running = false;
    s->done.fetch_add(1, std::memory_order_release);
    if (s->destroyed && s->queue.empty()) {
      streams_.erase(std::find(streams_.begin(), streams_.end(), s));
      delete s;
    }
    done_cv_.notify_all();
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

void SimDevice::run(Op& op) {
  switch (op.kind) {
    case Op::HostFn:
      op.fn(op.user);
      break;
    case Op::Kernel:
      op.kernel(op.args.data());
      break;
    case Op::Copy:
      std::memmove(op.dst, op.src, op.n);
      break;
    case Op::Memset:
      std::memset(op.dst, op.value, op.n);
      break;
    case Op::Record:
    case Op::Wait:
      break;  // handled by worker_loop and pick_locked under the lock
  }
}

}  // namespace device_sim
