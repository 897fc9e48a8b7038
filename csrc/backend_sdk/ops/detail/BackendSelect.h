// BackendSelect: routing operators without tensor arguments (factories) to
// the backend named by their `device` argument.
//
// Note [BackendSelect]
// ~~~~~~~~~~~~~~~~~~~~
// A call's key set comes from its tensor arguments; a factory such as
// empty(size, device=...) has none, so its key set holds only the
// thread-local keys, of which BackendSelect is the one with a kernel. The
// BackendSelect kernel reads `device` (None means cpu), and redispatches
// with the Dense key of that device plus the thread-local keys below
// BackendSelect, as c10's generated BackendSelect kernels do. Operators with
// tensor arguments normally fall through BackendSelect (Fallthroughs.cpp).
#pragma once

#include <optional>

#include <backend_sdk/dispatch/Dispatcher.h>

namespace sdk::ops {

// The key set to redispatch to for `device` (cpu when absent).
SDK_API DispatchKeySet backend_select_keys(std::optional<Device> device);

// A boxed BackendSelect kernel for any operator whose schema has a `device`
// argument (Device or Device?): register it with
//   m.impl("my_factory", DispatchKey::BackendSelect, CppFunction::make_from_boxed(&backend_select_boxed));
// ValueError when the schema has no `device` argument.
SDK_API void backend_select_boxed(OperatorKernel* functor, const OperatorHandle& op, DispatchKeySet ks,
                                  Stack* stack);

}  // namespace sdk::ops
