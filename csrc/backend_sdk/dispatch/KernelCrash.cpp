// Note [Kernel crash reports] (KernelCrash.h).
#include <backend_sdk/dispatch/KernelCrash.h>

#include <dlfcn.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_set>

#include <backend_sdk/dispatch/KernelFunction.h>

namespace sdk {
namespace detail {

thread_local const char* t_running_kernel = nullptr;

namespace {

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
struct sigaction g_previous[sizeof(kSignals) / sizeof(kSignals[0])];

// Async-signal-safe output: write(2) of pieces, no allocation, no stdio.
void put(const char* s) {
  size_t n = std::strlen(s);
  while (n > 0) {
    ssize_t w = write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}
void put_hex(uintptr_t v) {
  char buf[19] = "0x";
  char digits[16];
  int n = 0;
  do {
    digits[n++] = "0123456789abcdef"[v & 15];
    v >>= 4;
  } while (v);
  int i = 2;
  while (n) buf[i++] = digits[--n];
  buf[i] = '\0';
  put(buf);
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "SIGSEGV (segmentation fault)";
    case SIGBUS:
      return "SIGBUS (bus error)";
    case SIGFPE:
      return "SIGFPE (arithmetic exception)";
    default:
      return "SIGILL (illegal instruction)";
  }
}

uintptr_t faulting_pc(void* context) {
  auto* uc = static_cast<ucontext_t*>(context);
  if (uc == nullptr) return 0;
#if defined(__x86_64__)
  return static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  return static_cast<uintptr_t>(uc->uc_mcontext.pc);
#else
  return 0;
#endif
}

int slot_of(int sig) {
  for (size_t i = 0; i < sizeof(kSignals) / sizeof(kSignals[0]); ++i)
    if (kSignals[i] == sig) return static_cast<int>(i);
  return -1;
}

void on_fault(int sig, siginfo_t* info, void* context) {
  const int slot = slot_of(sig);
  const struct sigaction& previous = g_previous[slot < 0 ? 0 : slot];
  const char* label = t_running_kernel;
  if (label == nullptr) {
    // Not inside a labelled kernel: the fault is someone else's to report.
    if ((previous.sa_flags & SA_SIGINFO) && previous.sa_sigaction != nullptr) {
      previous.sa_sigaction(sig, info, context);
      return;
    }
    if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
      previous.sa_handler(sig);
      return;
    }
    sigaction(sig, &previous, nullptr);  // default action when the instruction runs again
    return;
  }
  put("backend_sdk: ");
  put(signal_name(sig));
  put(" while running the kernel of operator ");
  put(label);
  put("\n  faulting instruction ");
  const uintptr_t pc = faulting_pc(context);
  put_hex(pc);
  Dl_info where;
  if (pc != 0 && dladdr(reinterpret_cast<void*>(pc), &where) != 0 && where.dli_fname != nullptr) {
    put(" in ");
    put(where.dli_fname);
    if (where.dli_sname != nullptr) {
      put(" (");
      put(where.dli_sname);
      put("+");
      put_hex(pc - reinterpret_cast<uintptr_t>(where.dli_saddr));
      put(")");
    }
  } else {
    put(" in no loaded library");
  }
  if (sig == SIGSEGV || sig == SIGBUS) {
    put(", accessing address ");
    put_hex(reinterpret_cast<uintptr_t>(info->si_addr));
  }
  put("\n");
  // Report once: the previous handler takes the fault when the instruction runs again.
  sigaction(sig, &previous, nullptr);
}

void install_crash_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = &on_fault;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    for (size_t i = 0; i < sizeof(kSignals) / sizeof(kSignals[0]); ++i) sigaction(kSignals[i], &sa, &g_previous[i]);
  });
}

// Labels are immortal: a crash report may name a kernel whose library was closed.
const char* intern_label(std::string label) {
  static std::mutex m;
  static auto* labels = new std::unordered_set<std::string>();
  std::lock_guard<std::mutex> lock(m);
  return labels->insert(std::move(label)).first->c_str();
}

// A boxed-only kernel, wrapped (make_from_boxed has no typed adapters to switch to).
struct TrackedBoxedKernel final : OperatorKernel {
  BoxedKernelFn inner = nullptr;
  std::shared_ptr<OperatorKernel> inner_functor;
  static void call(OperatorKernel* self, const OperatorHandle& op, DispatchKeySet keys, Stack* stack) {
    auto* k = static_cast<TrackedBoxedKernel*>(self);
    RunningKernelScope scope(k->crash_label);
    k->inner(k->inner_functor.get(), op, keys, stack);
  }
};

// Load addresses of the SDK's libraries besides libbackend_sdk.
std::atomic<const void*> g_sdk_libraries[8] = {};

bool is_sdk_library(const void* base) {
  Dl_info self;
  if (dladdr(reinterpret_cast<const void*>(&install_crash_handler), &self) != 0 && self.dli_fbase == base) return true;
  for (const auto& slot : g_sdk_libraries)
    if (slot.load(std::memory_order_acquire) == base) return true;
  return false;
}

}  // namespace

void treat_as_sdk_library(const void* code) {
  Dl_info info;
  if (dladdr(code, &info) == 0 || is_sdk_library(info.dli_fbase)) return;
  for (auto& slot : g_sdk_libraries) {
    const void* expected = nullptr;
    if (slot.compare_exchange_strong(expected, info.dli_fbase)) return;
  }
}

void label_external_kernel(KernelFunction& k, const std::string& what) {
  if (!k.is_valid() || k.is_fallthrough() || k.skips_without_grad()) return;
  Dl_info kernel;
  if (dladdr(k.boxed_code(), &kernel) == 0 || kernel.dli_fname == nullptr) return;
  if (is_sdk_library(kernel.dli_fbase)) return;  // one of the SDK's own kernels: not tracked (no cost on the hot path)
  k.track_crashes(intern_label(what + ", registered from " + kernel.dli_fname));
  install_crash_handler();
}

}  // namespace detail

void KernelFunction::track_crashes(const char* label) {
  if (tracked_boxed_ != nullptr) {
    boxed_ = tracked_boxed_;
    unboxed_ = tracked_unboxed_;
    if (functor_) functor_->crash_label = label;
    return;
  }
  auto wrapper = std::make_shared<detail::TrackedBoxedKernel>();
  wrapper->inner = boxed_;
  wrapper->inner_functor = std::move(functor_);
  wrapper->crash_label = label;
  functor_ = std::move(wrapper);
  boxed_ = &detail::TrackedBoxedKernel::call;
}

}  // namespace sdk
