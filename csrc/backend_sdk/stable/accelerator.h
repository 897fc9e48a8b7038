// The device runtime seen from the stable surface (as PyTorch's torch/csrc/stable/accelerator.h):
// the current stream of a device, for kernels that launch work in stream order. Header-only, on
// the C shim (SDK_STABLE_ABI_VERSION >= 2).
#pragma once

#include <backend_sdk/stable/tensor.h>

namespace sdk::stable {

// The native handle of the current stream of `device` (index -1: the current device): the device
// contract's sdk_stream_t (runtime/DeviceApi.h), which the backend's own driver understands.
inline void* current_native_stream(Device device) {
  void* stream = nullptr;
  check_status(sdk_stable_current_stream(static_cast<int32_t>(device.type), device.index, &stream));
  return stream;
}

}  // namespace sdk::stable
