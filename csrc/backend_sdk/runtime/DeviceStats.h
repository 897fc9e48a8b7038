// The SDK's face of the "sdk.stats" device extension (Note [Device stats
// extension], runtime/DeviceStatsExtension.h): what <backend>.utilization()
// and <backend>.memory_usage() call.
#pragma once

#include <cstdint>

#include <backend_sdk/core/DeviceType.h>
#include <backend_sdk/core/Macros.h>

namespace sdk::runtime {

struct DeviceActivity {
  int64_t sample_period_ns = 0;  // the window the percentages cover
  int kernel_percent = 0;        // 0..100: one or more kernels executing
  int memory_percent = 0;        // 0..100: device memory read or written
};

// Whether the backend's device implements "sdk.stats" (false if no device).
SDK_API bool has_device_stats(DeviceType type);
// The device's figures for device `index` of the backend; `what` names the
// caller in errors ("utilization"). RuntimeError if no device is attached,
// NotImplementedError naming the backend and its device library when the
// device has no "sdk.stats", typed errors from the device's statuses
// otherwise (an index out of range: the device's INVALID_DEVICE).
SDK_API DeviceActivity device_activity(DeviceType type, int index, const char* what);

}  // namespace sdk::runtime
