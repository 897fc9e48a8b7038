// The kernel checker (Note [Kernel checker]). Internal: not installed.
#pragma once

#include <string>

#include <backend_sdk/dispatch/KernelFunction.h>

namespace sdk::detail {

// Note [Kernel checker]
// ~~~~~~~~~~~~~~~~~~~~~
// With BACKEND_SDK_CHECK_KERNELS=1 in the environment, or backend_sdk.testing.check_kernels(True),
// every kernel registered afterwards for a backend's key (PrivateUse1/2/3: a vendor's native
// kernels, C++ or Python) is wrapped: each call first runs the operator's Meta kernel on meta twins
// of the arguments, then the kernel, and compares what it returned with the Meta kernel's results:
//  - sizes and dtype of every returned tensor, and its device (the call's device);
//  - aliasing: a return the schema marks as written ("Tensor(a!)": in-place and out= forms) must
//    be that argument itself, and a functional return (no alias annotation) must not share storage
//    with any argument;
//  - strides, only where the operator promises them: an in-place or out= return keeps its
//    argument's (implied by the aliasing check); a view return ("Tensor(a)") shares its argument's
//    storage with the Meta kernel's strides and storage offset; a functional return's layout is the
//    kernel's choice, as in PyTorch, and is not compared.
//  - writes past an allocation: while the checker is on the caching allocator puts a guard after each
//    block it hands out (Note [Allocator guard regions], runtime/CachingAllocator.cpp); after the kernel the
//    guards of every device tensor of the call (arguments and results) are read back, which waits for the
//    device (so checks that need work to stay pending turn the checker off, as the runtime conformance area does).
// A mismatch raises a RuntimeError naming the backend, the operator, the return and both values.
// Operators without a Meta kernel are not checked. Only kernels registered while the checker is
// requested are wrapped (wrapping later would mean re-registering them), so turn it on before the
// backend's kernels load: the conformance plugin does so before it imports the backend; the switch
// can turn the checks of wrapped kernels off again. The wrapper is boxed: it costs a Meta run and
// unboxed C++ callers box their arguments, which is why it is opt-in.

// True if kernels registered now are wrapped (the environment variable, or the switch).
bool kernel_checks_requested();
SDK_API void set_kernel_checks(bool enabled);
SDK_API bool kernel_checks_enabled();
// Number of calls the checker has checked since the start.
SDK_API int64_t kernel_checks_run();

// `kernel` wrapped with the checks when the key is a backend's and checks are requested; else itself.
KernelFunction maybe_checked_kernel(const std::string& op, DispatchKey key, KernelFunction kernel);

}  // namespace sdk::detail
