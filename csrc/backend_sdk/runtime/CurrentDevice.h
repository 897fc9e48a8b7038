// The calling thread's current device of a backend: the one light runtime
// declaration the tensor layer needs (factories resolve index -1 with it).
#pragma once

#include <cstdint>

#include <backend_sdk/core/DeviceType.h>
#include <backend_sdk/core/Macros.h>

namespace sdk::runtime {

// The current device index of `type` on this thread (0 until set; 0 for a
// backend without an attached device; -1 for CPU and Meta, which have none).
SDK_API int8_t current_device_index(DeviceType type);

}  // namespace sdk::runtime
