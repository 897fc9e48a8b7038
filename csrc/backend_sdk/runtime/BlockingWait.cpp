#include <backend_sdk/runtime/detail/BlockingWait.h>

#include <atomic>

#include <backend_sdk/core/Exception.h>

namespace sdk::runtime {
namespace {
// Set once by the bindings at import; read on every wait.
std::atomic<BlockingWaitEnter> g_enter{nullptr};
std::atomic<BlockingWaitExit> g_exit{nullptr};
std::atomic<int> g_sync_debug_mode{0};
std::atomic<SyncDebugWarn> g_sync_debug_warn{nullptr};
// Note [Synchronising during capture].
std::atomic<int> g_global_captures{0};
thread_local int t_captures = 0;
}  // namespace

void note_capture_begin(int mode) {
  if (mode == 0) g_global_captures.fetch_add(1, std::memory_order_relaxed);
  if (mode == 1) ++t_captures;
}

void note_capture_end(int mode) {
  if (mode == 0) g_global_captures.fetch_sub(1, std::memory_order_relaxed);
  if (mode == 1) --t_captures;
}

void set_sync_debug_warn_hook(SyncDebugWarn hook) { g_sync_debug_warn.store(hook, std::memory_order_release); }

void set_sync_debug_mode(int mode) {
  SDK_CHECK_VALUE(mode >= 0 && mode <= 2, "set_sync_debug_mode: invalid value of debug_mode, expected one of 0, 1, 2 "
                  "(\"default\", \"warn\", \"error\"), got ", mode);
  g_sync_debug_mode.store(mode, std::memory_order_relaxed);
}

int sync_debug_mode() { return g_sync_debug_mode.load(std::memory_order_relaxed); }

void set_blocking_wait_hooks(BlockingWaitEnter enter, BlockingWaitExit exit) {
  g_exit.store(exit, std::memory_order_release);
  g_enter.store(enter, std::memory_order_release);
}

BlockingWait::BlockingWait(const char* what) {
  if (SDK_UNLIKELY(t_captures > 0 || g_global_captures.load(std::memory_order_relaxed) > 0)) {
    SDK_THROW(Runtime, what ? what : "a device wait", ": operation not permitted when stream is capturing (a graph "
              "capture is in progress; synchronizing calls such as synchronize(), item() and copies to the host are "
              "refused until capture_end, Note [Synchronising during capture])");
  }
  // Note [Sync debug mode]: report before waiting (and before releasing the GIL).
  if (SDK_UNLIKELY(g_sync_debug_mode.load(std::memory_order_relaxed) != 0)) {
    const char* call = what ? what : "a device wait";
    if (g_sync_debug_mode.load(std::memory_order_relaxed) == 2) {
      SDK_THROW(Runtime, "called a synchronizing device operation: ", call,
                " (sync debug mode is \"error\", see set_sync_debug_mode)");
    }
    if (SyncDebugWarn w = g_sync_debug_warn.load(std::memory_order_acquire)) {
      w(detail::str("called a synchronizing device operation: ", call).c_str());
    }
  }
  BlockingWaitEnter enter = g_enter.load(std::memory_order_acquire);
  if (!enter) return;
  exit_ = g_exit.load(std::memory_order_acquire);
  token_ = enter();
}

BlockingWait::~BlockingWait() {
  if (exit_) exit_(token_);
}

}  // namespace sdk::runtime
