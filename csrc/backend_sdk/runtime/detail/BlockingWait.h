// A scope in which the calling thread waits for a device.
//
// Note [Blocking waits release the GIL]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Work queued on a device may need the Python interpreter to run: a host
// function that calls Python, a kernel of a device written in Python, a
// Python kernel reached through the CPU fallback on a worker. A thread that
// waits for that work while holding the GIL never sees it finish. Every
// blocking wait of the runtime (Stream::synchronize, Event::synchronize,
// device_synchronize, and so every copy to the host, item() and tolist())
// runs inside a BlockingWait, which calls the hooks the Python bindings
// install: they release the GIL if this thread holds it and take it back
// afterwards. The runtime itself knows nothing of Python.
//
// Waits made while an SDK lock is held (the caching allocators' retry after
// out-of-memory) do not use it: releasing the GIL there would let another
// thread take the GIL and block on that lock, while the waiter needs the GIL
// back to return (a lock-order inversion). The bindings release the GIL
// before allocating instead.
//
// Note [Sync debug mode]
// ~~~~~~~~~~~~~~~~~~~~~~
// torch.cuda.set_sync_debug_mode for every backend: because every blocking
// wait of the runtime is a BlockingWait, its constructor is the one place
// that sees each synchronising call (synchronize, a copy to the host,
// item()). Mode 0 ("default") does nothing, 1 ("warn") warns, 2 ("error")
// throws a RuntimeError before the wait, naming the call and the device. The
// mode is process-wide, as PyTorch's. Waits the SDK makes for its own
// bookkeeping (the allocators' retry after out-of-memory, freeing pinned
// blocks) are not BlockingWaits and are never reported.
//
// Note [Synchronising during capture]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// While a graph capture is in progress (Note [Graph capture], runtime/Graph.h)
// a synchronising call would wait for work that was recorded, not queued, so
// BlockingWait refuses it before waiting with a RuntimeError naming the call,
// as CUDA refuses it ("operation not permitted when stream is capturing").
// capture_error_mode picks whose calls: "global" / "default" every thread's,
// "thread_local" the capturing thread's, "relaxed" none.
#pragma once

#include <backend_sdk/core/Macros.h>

namespace sdk::runtime {

// Note [Synchronising during capture]: mode 0 global (and default), 1 thread_local, 2 relaxed.
SDK_API void note_capture_begin(int mode);
SDK_API void note_capture_end(int mode);

// Note [Sync debug mode]: 0 default, 1 warn, 2 error.
SDK_API void set_sync_debug_mode(int mode);
SDK_API int sync_debug_mode();
// How mode 1 warns (the bindings route it to Python's warnings; the runtime knows no warning channel).
using SyncDebugWarn = void (*)(const char* message);
SDK_API void set_sync_debug_warn_hook(SyncDebugWarn hook);

// enter() returns a token that exit() receives; both may be null (no hooks).
using BlockingWaitEnter = void* (*)();
using BlockingWaitExit = void (*)(void* token);
SDK_API void set_blocking_wait_hooks(BlockingWaitEnter enter, BlockingWaitExit exit);

class SDK_API BlockingWait {
 public:
  // `what` names the synchronising call for Note [Sync debug mode] (e.g. "synchronize of stream 0 of accel:0").
  explicit BlockingWait(const char* what = nullptr);
  ~BlockingWait();
  BlockingWait(const BlockingWait&) = delete;
  BlockingWait& operator=(const BlockingWait&) = delete;

 private:
  void* token_ = nullptr;
  BlockingWaitExit exit_ = nullptr;
};

}  // namespace sdk::runtime
