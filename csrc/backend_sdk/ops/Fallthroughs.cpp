// Backend fallbacks that let a call pass keys with nothing to do yet.
//
// Note [Fallthrough keys]
// ~~~~~~~~~~~~~~~~~~~~~~~
// Every tensor carries ADInplaceOrView, Autograd<Backend> and
// Autocast<Backend> keys, and BackendSelect is always included by the
// thread-local set (Note [TLS key sets]). An operator without a kernel at
// those keys must skip them rather than fail, so each gets a fallthrough
// fallback, as in c10 (BackendSelect, ADInplaceOrView and Autocast are
// fallthrough fallbacks there too). The Autograd keys have the autograd
// layer's boxed fallback instead (Note [Autograd fallback fast path],
// csrc/backend_sdk/ops/detail/Autograd.h).
#include <backend_sdk/dispatch/Library.h>

#define SDK_FALLTHROUGH(key) \
  SDK_LIBRARY_IMPL(_, key, m) { m.fallback(::sdk::CppFunction::make_fallthrough()); }

SDK_FALLTHROUGH(BackendSelect)
SDK_FALLTHROUGH(ADInplaceOrView)

SDK_FALLTHROUGH(AutocastCPU)
SDK_FALLTHROUGH(AutocastMeta)
SDK_FALLTHROUGH(AutocastPrivateUse1)
SDK_FALLTHROUGH(AutocastPrivateUse2)
SDK_FALLTHROUGH(AutocastPrivateUse3)

// Thread-included while a vmap runs (Note [Batched tensors], backend_sdk/_functorch/vmap.py): only
// the random operators have kernels there (registered from Python); every other operator skips it.
SDK_FALLTHROUGH(FuncTorchVmapMode)
