#include <backend_sdk/runtime/detail/BlockingWait.h>

#include <atomic>

namespace sdk::runtime {
namespace {
// Set once by the bindings at import; read on every wait.
std::atomic<BlockingWaitEnter> g_enter{nullptr};
std::atomic<BlockingWaitExit> g_exit{nullptr};
}  // namespace

void set_blocking_wait_hooks(BlockingWaitEnter enter, BlockingWaitExit exit) {
  g_exit.store(exit, std::memory_order_release);
  g_enter.store(enter, std::memory_order_release);
}

BlockingWait::BlockingWait() {
  BlockingWaitEnter enter = g_enter.load(std::memory_order_acquire);
  if (!enter) return;
  exit_ = g_exit.load(std::memory_order_acquire);
  token_ = enter();
}

BlockingWait::~BlockingWait() {
  if (exit_) exit_(token_);
}

}  // namespace sdk::runtime
