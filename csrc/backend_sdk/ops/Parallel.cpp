#include <backend_sdk/ops/Parallel.h>

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace sdk::ops {
namespace {

thread_local bool t_in_parallel = false;

// One parallel loop, on the calling thread's stack (Note [Parallel loops]).
struct Job {
  RangeFn fn;
  void* ctx;
  int64_t begin, end, chunk, nchunks;
  std::atomic<int64_t> next{0};
  std::mutex error_mutex;
  std::exception_ptr error;

  void run_chunks() {
    const bool was = t_in_parallel;
    t_in_parallel = true;
    for (;;) {
      const int64_t c = next.fetch_add(1, std::memory_order_relaxed);
      if (c >= nchunks) break;
      const int64_t b = begin + c * chunk;
      try {
        fn(ctx, b, std::min(end, b + chunk));
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    }
    t_in_parallel = was;
  }
};

int configured_threads() {
  int n = static_cast<int>(std::thread::hardware_concurrency());
  if (const char* env = std::getenv("SDK_NUM_THREADS")) {
    int v = std::atoi(env);
    if (v > 0) n = v;
  }
  return std::clamp(n, 1, 64);
}

// A pause in a spin loop: cheaper for the sibling hyperthread than a bare loop.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#else
  std::this_thread::yield();
#endif
}

// Note [Pool spin]
// ~~~~~~~~~~~~~~~~
// A worker that finishes a loop spins for kWorkerSpinNs on the generation
// counter before it sleeps on the condition variable, and the caller spins
// up to kCallerSpinNs for the last worker before it sleeps on `idle_`. A
// futex wake-up of a sleeping worker costs the caller microseconds and the
// worker tens of microseconds before it runs (more on a loaded machine), so
// with sleeping workers a loop over 500k floats (~40 us on one thread) was
// slower on two threads than on one: mul_ 44 -> 66 us, and an AdamW step of
// 20 such tensors 22.7 -> 24.2 ms. OpenMP's workers (PyTorch's) spin the same
// way between loops. The caller notifies only when a worker sleeps
// (`sleepers_`), so back-to-back loops make no system call. Every change of
// job_, generation_ and active_ is under mutex_ and a sleeper re-checks its
// condition under it, so no wake-up is lost; the spins only read atomics.
constexpr int64_t kWorkerSpinNs = 100'000;
constexpr int64_t kCallerSpinNs = 20'000;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Spins until pred() holds or budget_ns pass; true if it held.
template <typename Pred>
bool spin_until(const Pred& pred, int64_t budget_ns) {
  const int64_t deadline = now_ns() + budget_ns;
  for (int i = 1;; ++i) {
    if (pred()) return true;
    cpu_relax();
    if ((i & 63) == 0 && now_ns() > deadline) return pred();
  }
}

class Pool {
 public:
  explicit Pool(int nthreads) : nthreads_(nthreads) {}

  int nthreads() const { return nthreads_; }

  // False when another thread's loop holds the pool: run serially instead.
  bool try_run(Job& job) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    start_workers();
    bool wake;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &job;
      generation_.fetch_add(1, std::memory_order_release);
      wake = sleepers_ > 0;  // Note [Pool spin]: spinning workers see the generation
    }
    if (wake) wake_.notify_all();
    job.run_chunks();
    // Every chunk is claimed; wait for the workers still running one. A
    // worker that comes after this sees job_ == nullptr and waits again.
    spin_until([&] { return active_.load(std::memory_order_acquire) == 0; }, kCallerSpinNs);
    std::unique_lock<std::mutex> lock(mutex_);
    idle_.wait(lock, [&] { return active_.load(std::memory_order_relaxed) == 0; });
    job_ = nullptr;
    return true;
  }

 private:
  void start_workers() {
    if (!workers_.empty()) return;
    for (int i = 1; i < nthreads_; ++i) workers_.emplace_back([this] { work(); });
  }

  void work() {
    uint64_t seen = 0;
    for (;;) {
      spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; }, kWorkerSpinNs);
      std::unique_lock<std::mutex> lock(mutex_);
      if (generation_.load(std::memory_order_relaxed) == seen) {
        ++sleepers_;
        wake_.wait(lock, [&] { return generation_.load(std::memory_order_relaxed) != seen; });
        --sleepers_;
      }
      seen = generation_.load(std::memory_order_relaxed);
      Job* job = job_;
      if (!job) continue;
      active_.fetch_add(1, std::memory_order_relaxed);
      lock.unlock();
      job->run_chunks();
      lock.lock();
      if (active_.fetch_sub(1, std::memory_order_release) == 1) idle_.notify_all();
    }
  }

  const int nthreads_;
  std::mutex busy_;   // held by the thread whose loop uses the pool
  std::mutex mutex_;  // guards every change of job_, generation_, active_ and sleepers_
  std::condition_variable wake_, idle_;
  Job* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};  // read without the lock by spinning workers (Note [Pool spin])
  std::atomic<int> active_{0};           // read without the lock by the spinning caller
  int sleepers_ = 0;                     // workers asleep on wake_
  std::vector<std::thread> workers_;  // never joined: the pool lives as long as the process
};

std::atomic<Pool*> g_pool{nullptr};
std::once_flag g_atfork_once;

Pool* pool() {
  Pool* p = g_pool.load(std::memory_order_acquire);
  if (p) return p;
  std::call_once(g_atfork_once, [] {
    // The child of a fork has none of the parent's threads: it starts over
    // (the parent's pool object is leaked there, not touched).
    pthread_atfork(nullptr, nullptr, [] { g_pool.store(nullptr, std::memory_order_release); });
  });
  auto* fresh = new Pool(configured_threads());
  if (!g_pool.compare_exchange_strong(p, fresh, std::memory_order_acq_rel)) {
    delete fresh;
    return p;
  }
  return fresh;
}

}  // namespace

int parallel_num_threads() { return pool()->nthreads(); }

void parallel_for(int64_t begin, int64_t end, int64_t grain, RangeFn fn, void* ctx) {
  const int64_t n = end - begin;
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  Pool* p = (n >= 2 * grain && !t_in_parallel) ? pool() : nullptr;
  if (!p || p->nthreads() == 1) {
    fn(ctx, begin, end);
    return;
  }
  // A few chunks per thread balance the load; none smaller than grain.
  const int64_t target = static_cast<int64_t>(p->nthreads()) * 4;
  const int64_t chunk = std::max(grain, (n + target - 1) / target);
  Job job;
  job.fn = fn;
  job.ctx = ctx;
  job.begin = begin;
  job.end = end;
  job.chunk = chunk;
  job.nchunks = (n + chunk - 1) / chunk;
  if (!p->try_run(job)) {
    fn(ctx, begin, end);
    return;
  }
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace sdk::ops
