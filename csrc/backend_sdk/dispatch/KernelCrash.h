// Naming the operator whose kernel crashed the process.
//
// Note [Kernel crash reports]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A kernel from a vendor's or user's library (a JIT extension built by
// backend_sdk.utils.cpp_extension, a backend's shared library) that
// dereferences a bad pointer kills the process with SIGSEGV, and a bare
// "Segmentation fault" names nothing. So:
//  - At registration (Library::impl, Library::fallback) a kernel whose code
//    lies outside the SDK (libbackend_sdk and the _C bindings module; dladdr
//    of its boxed entry) gets a label
//    ("'ext::op' for CPU, registered from /path/libext.so") and is switched
//    to adapters that set a thread-local "running kernel" for the duration
//    of each call (RunningKernelScope: save, set, restore, so nested calls
//    and exceptions unwind it). The SDK's own kernels are not switched: the
//    dispatch hot path is unchanged for them (a labelled kernel pays two
//    thread-local stores per call). A kernel reached through an adapter
//    of the SDK's own (a boxed wrapper the SDK supplies) is not labelled.
//  - The first such registration installs a handler for SIGSEGV, SIGBUS,
//    SIGFPE and SIGILL (sigaction, on the alternate stack if one is set).
//    When the thread was running a labelled kernel it writes, with write(2)
//    only, which operator's kernel was running and where the faulting
//    instruction is (dladdr of the PC from the ucontext: library and nearest
//    symbol), then puts the previous handler back and returns, so the
//    faulting instruction runs again under it: the process still dies by the
//    same signal (or whatever the previous handler does, e.g. Python's
//    faulthandler dumping the stacks first). Faults on threads not running a
//    labelled kernel go straight to the previous handler.
// dladdr is not on POSIX's async-signal-safe list, but it only reads the
// loader's tables (glibc takes no lock that malloc or the dispatcher holds);
// the process is about to die, which is when crash reporters use it too.
#pragma once

#include <string>

#include <backend_sdk/core/Macros.h>

namespace sdk {
class KernelFunction;
namespace detail {

// The label of the labelled kernel the calling thread runs, or nullptr.
SDK_API extern thread_local const char* t_running_kernel;

struct RunningKernelScope {
  explicit RunningKernelScope(const char* label) : previous_(t_running_kernel) { t_running_kernel = label; }
  ~RunningKernelScope() { t_running_kernel = previous_; }
  RunningKernelScope(const RunningKernelScope&) = delete;
  RunningKernelScope& operator=(const RunningKernelScope&) = delete;

 private:
  const char* previous_;
};

// Note [Kernel crash reports]: labels `k` ("'ns::op' for CPU") and installs
// the handler if its code lies outside libbackend_sdk; otherwise does nothing.
SDK_API void label_external_kernel(KernelFunction& k, const std::string& what);
// Counts the library holding `code` as part of the SDK (the Python bindings
// module): its kernels are not labelled either. At most 8 libraries.
SDK_API void treat_as_sdk_library(const void* code);

}  // namespace detail
}  // namespace sdk
