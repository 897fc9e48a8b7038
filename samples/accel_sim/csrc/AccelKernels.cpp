// The accel backend's kernels: what a vendor registers under PrivateUse1.
//
// Allocation, transfers, resize_ and item() come from the SDK's
// contract-backed kernels (ops/DeviceOps.h); the operators below run as
// simulated kernels (Note [Simulated kernels], SimKernels.h); every other
// operator reaches the SDK's CPU fallback, which warns once per operator.
#include <string>

#include "SimKernels.h"
#include "dispatch/Library.h"
#include "ops/DeviceOps.h"

namespace {

sdk::Tensor copy_(const sdk::Tensor& self, const sdk::Tensor& src, bool non_blocking) {
  return sdk::ops::device::copy_(self, src, non_blocking, &accel::local_copy);
}

// Operators run on the device: every overload with a Meta kernel of its own
// (composite overloads keep decomposing into these).
constexpr const char* kDeviceOperators[] = {
    // elementwise
    "add", "sub", "mul", "div", "remainder", "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge",
    "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "where", "clamp",
    "clamp_min", "clamp_max", "neg", "abs", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan",
    "tanh", "sigmoid", "relu", "gelu", "silu", "erf", "floor", "ceil", "round", "trunc", "sign", "reciprocal",
    "logical_not", "fill_", "masked_fill", "masked_fill_", "lerp", "addcmul", "addcdiv",
    // reductions
    "sum", "mean", "prod", "amax", "amin", "max", "min", "argmax", "argmin", "var", "std", "all", "any", "norm",
    "cumsum", "logsumexp", "_softmax", "_log_softmax", "softmax", "log_softmax",
    // linear algebra
    "mm", "bmm", "addmm", "dot", "matmul",
    // shape and indexing
    "cat", "stack", "flip", "gather", "scatter", "scatter_add", "index_select", "index_put_", "index_put", "repeat",
    // losses
    "mse_loss", "nll_loss_forward", "nll_loss2d_forward",
};

}  // namespace

SDK_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", &sdk::ops::device::empty);
  m.impl("empty_strided", &sdk::ops::device::empty_strided);
  m.impl("resize_", &sdk::ops::device::resize_);
  m.impl("_local_scalar_dense", &sdk::ops::device::local_scalar_dense);
  m.impl("copy_", &copy_);
  sdk::Dispatcher& dispatcher = sdk::Dispatcher::singleton();
  for (const char* name : kDeviceOperators) {
    const std::string qualified = std::string("aten::") + name;
    for (const std::string& overload : dispatcher.overload_names(qualified)) {
      const std::string full = overload.empty() ? qualified : qualified + "." + overload;
      if (!dispatcher.find_schema_or_throw(full).entry().has_kernel_for(sdk::DispatchKey::Meta)) continue;
      m.impl(full.substr(6), sdk::CppFunction::make_from_boxed(&accel::simulated_kernel));
    }
  }
}

SDK_LIBRARY_IMPL(_, PrivateUse1, m) { m.fallback(sdk::ops::cpu_fallback_function()); }
