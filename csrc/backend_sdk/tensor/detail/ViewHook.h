// A hook called when make_view creates a view (Note [View creation hook]).
#pragma once

#include <backend_sdk/tensor/Tensor.h>

namespace sdk {

// Note [View creation hook]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// make_view calls the installed hook with (base, view) after creating every
// view. The autograd layer installs one that remembers the base of views made
// in grad mode (Note [Autograd view bases], ops/detail/Autograd.h); the tensor layer
// knows nothing of autograd. One relaxed atomic load per view when unset.
using ViewCreatedHook = void (*)(const Tensor& base, const Tensor& view);
SDK_API void set_view_created_hook(ViewCreatedHook hook);

}  // namespace sdk
