// The IValue of a schema argument's default, for callers that fill in arguments a call
// left out: the Python argument binder (csrc/python/PyArgs.cpp) and the stable C shim's
// sdk_stable_call_op (csrc/backend_sdk/stable/Shim.cpp).
#pragma once

#include <backend_sdk/dispatch/FunctionSchema.h>
#include <backend_sdk/dispatch/IValue.h>

namespace sdk::detail {

// The IValue for a schema default's text ("1", "None", "[0, 1]", "contiguous_format");
// a RuntimeError when the argument has no default.
SDK_API IValue default_ivalue(const Argument& arg);

}  // namespace sdk::detail
