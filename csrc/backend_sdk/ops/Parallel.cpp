#include <backend_sdk/ops/Parallel.h>

#include <pthread.h>

#include <algorithm>
#include <atomic>
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

class Pool {
 public:
  explicit Pool(int nthreads) : nthreads_(nthreads) {}

  int nthreads() const { return nthreads_; }

  // False when another thread's loop holds the pool: run serially instead.
  bool try_run(Job& job) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    start_workers();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &job;
      ++generation_;
    }
    wake_.notify_all();
    job.run_chunks();
    std::unique_lock<std::mutex> lock(mutex_);
    // Every chunk is claimed; wait for the workers still running one. A
    // worker that wakes after this sees job_ == nullptr and sleeps again.
    idle_.wait(lock, [&] { return active_ == 0; });
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
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return generation_ != seen; });
      seen = generation_;
      Job* job = job_;
      if (!job) continue;
      ++active_;
      lock.unlock();
      job->run_chunks();
      lock.lock();
      if (--active_ == 0) idle_.notify_all();
    }
  }

  const int nthreads_;
  std::mutex busy_;   // held by the thread whose loop uses the pool
  std::mutex mutex_;  // guards job_, generation_, active_
  std::condition_variable wake_, idle_;
  Job* job_ = nullptr;
  uint64_t generation_ = 0;
  int active_ = 0;
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
