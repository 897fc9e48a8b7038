// The accel backend's kernels: what a vendor registers under PrivateUse1.
//
// Allocation, transfers, resize_ and item() come from the SDK's
// contract-backed kernels (ops/DeviceOps.h); the operators below run as
// simulated kernels (Note [Simulated kernels], SimKernels.h); every other
// operator reaches the SDK's CPU fallback, which warns once per operator.
#include <algorithm>
#include <cstring>
#include <iterator>
#include <string>

#include "SimKernels.h"
#include "device_sim.hpp"
#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/DeviceOps.h>
#include <backend_sdk/ops/Functions.h>
#include <backend_sdk/ops/Random.h>

namespace {

// Random fills: the Philox counters are reserved from accel's generator at
// launch, in program order, and the device computes the numbers the CPU
// computes for the same seed (Note [Philox random numbers], core/Philox.h).
template <typename Fill>
sdk::Tensor random_fill(const sdk::Tensor& self, const char* op, const std::optional<sdk::Generator>& generator,
                        uint64_t counters, Fill fill) {
  auto [seed, offset] = sdk::ops::philox_reserve(generator, self.device(), counters, op);
  sdk::Tensor host = device_sim::host_alias(self);
  device_sim::launch(self.device(), op, [host, seed = seed, offset = offset, fill] { fill(host, seed, offset); });
  self.impl()->bump_version();
  return self;
}

sdk::Tensor uniform_(const sdk::Tensor& self, double from, double to, const std::optional<sdk::Generator>& g) {
  sdk::ops::uniform_(accel::meta_like(self), from, to);  // argument checks
  return random_fill(self, "uniform_", g, sdk::ops::philox_uniform_counters(self.dtype(), self.numel()),
                     [from, to](const sdk::Tensor& t, uint64_t seed, uint64_t offset) {
                       sdk::ops::philox_uniform_fill(t, from, to, seed, offset);
                     });
}

sdk::Tensor normal_(const sdk::Tensor& self, double mean, double std, const std::optional<sdk::Generator>& g) {
  sdk::ops::normal_(accel::meta_like(self), mean, std);
  return random_fill(self, "normal_", g, sdk::ops::philox_normal_counters(self.numel()),
                     [mean, std](const sdk::Tensor& t, uint64_t seed, uint64_t offset) {
                       sdk::ops::philox_normal_fill(t, mean, std, seed, offset);
                     });
}

sdk::Tensor bernoulli_(const sdk::Tensor& self, double p, const std::optional<sdk::Generator>& g) {
  sdk::ops::bernoulli_(accel::meta_like(self), p);
  return random_fill(self, "bernoulli_", g, sdk::ops::philox_double_counters(self.numel()),
                     [p](const sdk::Tensor& t, uint64_t seed, uint64_t offset) {
                       sdk::ops::philox_bernoulli_fill(t, p, sdk::Tensor(), seed, offset);
                     });
}

// Note [CPU index tensors]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// Advanced indexing (index.Tensor, index_put(_)) takes index tensors on the
// CPU too, as PyTorch's: it moves them to self's device (x_accel[[0, 2]],
// x_accel[cpu_long_tensor], x_accel[cpu_bool_mask] = v). The copies are
// non-blocking (staged), so the launch does not wait for the stream. Index
// tensors on another device are refused with PyTorch's IndexError. Other
// operators with index arguments (index_select, gather, scatter) keep
// PyTorch's same-device check.
void index_kernel(sdk::OperatorKernel* kernel, const sdk::OperatorHandle& op, sdk::DispatchKeySet keys,
                  sdk::Stack* stack) {
  const sdk::FunctionSchema& schema = op.schema();
  const size_t n = schema.arguments.size(), base = stack->size() - n;
  const sdk::IValue& self = (*stack)[base];
  if (self.is_tensor() && self.to_tensor().defined() && !self.to_tensor().is_cpu() && !self.to_tensor().is_meta()) {
    const sdk::Device device = self.to_tensor().device();
    for (size_t i = 1; i < n; ++i) {
      sdk::IValue& v = (*stack)[base + i];
      if (schema.arguments[i].name != "indices" || !v.is_list()) continue;
      for (sdk::IValue& e : v.to_list()) {
        if (!e.is_tensor() || !e.to_tensor().defined()) continue;
        const sdk::Tensor& index = e.to_tensor();
        SDK_CHECK_INDEX(index.is_cpu() || index.device() == device,
                        "indices should be either on cpu or on the same device as the indexed tensor (",
                        device.str(), ")");
        if (index.is_cpu()) e = sdk::IValue(sdk::ops::_to_copy(index, std::nullopt, device, /*non_blocking=*/true));
      }
    }
  }
  accel::simulated_kernel(kernel, op, keys, stack);
}

// Note [Host-side dtype checks]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A device library checks a kernel's dtypes on the host when it launches
// (CUDA's dispatch macros do), so an unsupported dtype raises at the call,
// as PyTorch's, not as a kernel fault at the next synchronisation. accel's
// matrix products run the CPU's kernels on the simulator, and those have no
// bool version (a bool gemm raised on the worker): a bool tensor argument is
// refused at launch with the CPU kernel's error type.
constexpr const char* kNoBoolOperators[] = {"mm", "bmm", "addmm", "dot", "matmul"};

void no_bool_kernel(sdk::OperatorKernel* kernel, const sdk::OperatorHandle& op, sdk::DispatchKeySet keys,
                    sdk::Stack* stack) {
  const sdk::FunctionSchema& schema = op.schema();
  const size_t n = schema.arguments.size(), base = stack->size() - n;
  for (size_t i = 0; i < n; ++i) {
    const sdk::IValue& v = (*stack)[base + i];
    SDK_CHECK_TYPE(!(v.is_tensor() && v.to_tensor().defined() && v.to_tensor().dtype() == sdk::ScalarType::Bool),
                   schema.name, schema.overload_name.empty() ? "" : ".", schema.overload_name,
                   ": not implemented for 'Bool' on ", v.to_tensor().device().str());
  }
  accel::simulated_kernel(kernel, op, keys, stack);
}

sdk::CppFunction device_kernel(const char* name) {
  const auto is = [name](const char* other) { return std::strcmp(name, other) == 0; };
  if (is("index") || is("index_put")) return sdk::CppFunction::make_from_boxed(&index_kernel);
  if (std::any_of(std::begin(kNoBoolOperators), std::end(kNoBoolOperators), is)) {
    return sdk::CppFunction::make_from_boxed(&no_bool_kernel);
  }
  return sdk::CppFunction::make_from_boxed(&accel::simulated_kernel);
}

// Operators run on the device, with their in-place forms ("add" and "add_"):
// every overload with a Meta kernel of its own (composite overloads keep
// decomposing into these).
constexpr const char* kDeviceOperators[] = {
    // elementwise
    "add", "sub", "mul", "div", "remainder", "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge",
    "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "floor_divide", "where", "clamp",
    "clamp_min", "clamp_max", "neg", "abs", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan",
    "tanh", "sigmoid", "relu", "gelu", "silu", "erf", "floor", "ceil", "round", "trunc", "sign", "reciprocal",
    "logical_not", "bitwise_not", "fill", "masked_fill", "lerp", "addcmul", "addcdiv",
    "acos", "asin", "atan", "acosh", "asinh", "atanh", "sinh", "cosh", "atan2", "fmod",
    // reductions
    "sum", "mean", "prod", "amax", "amin", "max", "min", "argmax", "argmin", "var", "std", "all", "any", "norm",
    "cumsum", "logsumexp", "_softmax", "_log_softmax", "softmax", "log_softmax", "_softmax_backward_data",
    "_log_softmax_backward_data",
    // linear algebra
    "mm", "bmm", "addmm", "dot", "matmul",
    // shape and indexing
    "cat", "stack", "flip", "gather", "index", "scatter", "scatter_add", "index_select", "index_put", "repeat",
    // losses
    "mse_loss", "nll_loss_forward", "nll_loss2d_forward",
    // nn kernels the acceptance models run (issue 20): on the stream, not through the synchronising fallback;
    // the backward operators with a `bool[3] output_mask` return its masked-off results undefined (Note
    // [Undefined results], SimKernels.cpp).
    "native_layer_norm", "linalg_vector_norm", "convolution", "native_batch_norm", "max_pool2d_with_indices",
    "max_pool2d_with_indices_backward", "convolution_backward", "native_layer_norm_backward",
    "native_batch_norm_backward",  // (native_group_norm_backward is a composite of operators served here)
    // the in-place multi-tensor and the fused optimizer operators: one launch per list (Note [Foreach
    // kernels]); the functional _foreach_ forms return Tensor[], which simulated kernels do not, so they
    // run their CompositeExplicitAutograd loop (one launch per tensor)
    "_foreach_add_", "_foreach_sub_", "_foreach_mul_", "_foreach_div_", "_foreach_addcmul_", "_foreach_addcdiv_",
    "_foreach_lerp_", "_foreach_sqrt_", "_foreach_neg_", "_foreach_reciprocal_", "_foreach_zero_", "_foreach_copy_",
    "_foreach_maximum_", "_fused_adam_", "_fused_adamw_", "_fused_sgd_",
};

}  // namespace

SDK_LIBRARY_IMPL(aten, PrivateUse1, m) {
  sdk::ops::device::register_contract_kernels(m, &device_sim::local_copy);  // empty, copy_, resize_, item
  m.impl("uniform_", &uniform_);
  m.impl("normal_", &normal_);
  m.impl("bernoulli_.float", &bernoulli_);
  sdk::Dispatcher& dispatcher = sdk::Dispatcher::singleton();
  for (const char* name : kDeviceOperators) {
    for (const std::string& qualified : {std::string("aten::") + name, std::string("aten::") + name + "_"}) {
      for (const std::string& overload : dispatcher.overload_names(qualified)) {
        const std::string full = overload.empty() ? qualified : qualified + "." + overload;
        if (!dispatcher.find_schema_or_throw(full).entry().has_kernel_for(sdk::DispatchKey::Meta)) continue;
        m.impl(full.substr(6), device_kernel(name));
      }
    }
  }
}

SDK_LIBRARY_IMPL(_, PrivateUse1, m) { m.fallback(sdk::ops::cpu_fallback_function()); }
