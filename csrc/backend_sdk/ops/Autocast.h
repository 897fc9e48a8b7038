// Autocast (automatic mixed precision): the per-thread state behind backend_sdk.autocast and the
// cast-policy kernels registered at the Autocast<backend> keys. See Note [Autocast] (Autocast.cpp).
//
// A vendor whose backend wants another policy for an operator registers its own kernel at its
// Autocast key, which replaces the SDK's:
//   SDK_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
//     m.impl("mm", sdk::CppFunction(sdk::autocast::autocast_kernel(sdk::autocast::CastPolicy::fp32)));
//   }
#pragma once

#include <cstddef>
#include <cstdint>

#include <backend_sdk/core/DeviceType.h>
#include <backend_sdk/core/ScalarType.h>
#include <backend_sdk/dispatch/KernelFunction.h>
#include <backend_sdk/tensor/Tensor.h>

namespace sdk::autocast {

// PyTorch's CastPolicy (aten/src/ATen/autocast_mode.h).
enum class CastPolicy : uint8_t {
  lower_precision_fp,  // cast floating inputs to the autocast dtype of the device type
  fp32,                // cast floating inputs to float32
  fp32_set_opt_dtype,  // set the op's `ScalarType? dtype` to float32 when unset and the first input is eligible
  fp32_append_dtype,   // redispatch to the overload that takes a dtype, with float32 (autocast_append_dtype_kernel)
  promote,             // cast to the widest floating dtype among the eligible inputs
};

// Thread-local state, per device type (PyTorch's at::autocast functions).
SDK_API bool is_autocast_enabled(DeviceType device_type);
SDK_API void set_autocast_enabled(DeviceType device_type, bool enabled);
// The lower-precision dtype (defaults: cpu bfloat16, privateuse backends float16, meta Undefined).
SDK_API ScalarType get_autocast_dtype(DeviceType device_type);
SDK_API void set_autocast_dtype(DeviceType device_type, ScalarType dtype);
SDK_API bool is_autocast_cache_enabled();
SDK_API void set_autocast_cache_enabled(bool enabled);
// Nesting depth of autocast regions on this thread; the region that returns it to 0 clears the cache.
SDK_API int increment_nesting();
SDK_API int decrement_nesting();
// Drops every cached weight cast (all threads' entries, as PyTorch's one cache).
SDK_API void clear_cache();
SDK_API size_t cache_size();

// `arg` cast to `to_type` when it is eligible for autocast on `device_type` (a defined floating
// tensor of that device type other than float64, of another dtype); otherwise `arg` itself.
// Casts of float32 leaves that require grad to the autocast dtype are cached (Note [Autocast cache]).
SDK_API Tensor cached_cast(ScalarType to_type, const Tensor& arg, DeviceType device_type);

// The boxed kernel implementing `policy` for any operator, to register at an Autocast<backend> key.
SDK_API KernelFunction autocast_kernel(CastPolicy policy);
// fp32_append_dtype: runs `target` ("aten::norm.ScalarOpt_dtype") with the call's arguments and dtype appended.
SDK_API KernelFunction autocast_append_dtype_kernel(const char* target);

}  // namespace sdk::autocast
