// parallel_for: splits an index range over a small persistent thread pool.
// Internal to csrc/ops (element-wise loops use it through TensorIterator).
//
// Note [Parallel loops]
// ~~~~~~~~~~~~~~~~~~~~~
// One process-wide pool of (hardware threads - 1) workers, started on the
// first parallel loop and never stopped; the calling thread is the last
// worker. A loop is cut into chunks of at least `grain` indices that the
// threads claim from an atomic counter, so a slow thread does not hold the
// others up. A loop runs serially on the calling thread when
//  - the range is shorter than two grains (threads would cost more than
//    they save: waking a worker takes microseconds),
//  - it is called from inside a parallel loop (no nesting), or
//  - another thread's loop holds the pool (two callers never wait on each
//    other: the second just runs alone).
// An exception thrown by f on any thread is rethrown on the calling thread
// once every chunk has finished (the first one wins; the others are dropped),
// so a kernel may throw ("ZeroDivisionError") as in a serial loop.
// SDK_NUM_THREADS in the environment caps the thread count (1: no pool).
// After fork() the child gets a fresh pool: the parent's threads are gone.
#pragma once

#include <cstdint>
#include <type_traits>

#include <backend_sdk/core/Macros.h>

namespace sdk::ops {

// Loops over fewer elements than this run on one thread.
constexpr int64_t kParallelGrain = 32768;

// Threads a parallel loop may use, the calling thread included.
SDK_API int parallel_num_threads();

using RangeFn = void (*)(void* ctx, int64_t begin, int64_t end);
SDK_API void parallel_for(int64_t begin, int64_t end, int64_t grain, RangeFn fn, void* ctx);

// f(begin, end) over disjoint ranges covering [begin, end). f must be safe
// to call from several threads at once.
template <typename F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f) {
  parallel_for(begin, end, grain, [](void* c, int64_t b, int64_t e) { (*static_cast<const F*>(c))(b, e); },
               const_cast<void*>(static_cast<const void*>(&f)));
}

}  // namespace sdk::ops
