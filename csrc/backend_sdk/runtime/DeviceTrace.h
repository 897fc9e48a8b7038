// The SDK's face of the "sdk.trace" device extension (Note [Device trace
// extension], runtime/DeviceTraceExtension.h): what the profiler calls.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <backend_sdk/core/DeviceType.h>
#include <backend_sdk/core/Macros.h>

namespace sdk::runtime {

struct DeviceTraceRecord {
  int kind = 0;  // SDK_TRACE_*
  int device = 0;
  uint64_t stream = 0;  // the sdk_stream_t's bits (Stream::native()); 0: no stream
  int64_t start_ns = 0;  // host monotonic clock
  int64_t end_ns = 0;
  uint64_t bytes = 0;
  std::string name;
  uint64_t correlation_id = 0;  // version 2: the id set_correlation_id gave the launching thread; 0: none
};

// A device's "sdk.trace" version 2 set_correlation_id and its context (fn NULL: no device or version 1).
struct DeviceCorrelationHook {
  int32_t (*fn)(void* context, uint64_t id) = nullptr;  // sdk_status
  void* context = nullptr;
};
SDK_API DeviceCorrelationHook device_trace_correlation_hook(DeviceType type);

// Whether the backend's device implements "sdk.trace" (false if no device).
SDK_API bool has_device_trace(DeviceType type);
// start/stop/collect of the extension; NotImplementedError naming the backend
// and its device when the device has no "sdk.trace", typed errors from the
// device's statuses otherwise.
SDK_API void device_trace_start(DeviceType type, int64_t capacity);
SDK_API void device_trace_stop(DeviceType type);
// Drains every record collected so far (oldest first); *dropped (if not
// NULL) gets the number the device overwrote since the previous collect.
SDK_API std::vector<DeviceTraceRecord> device_trace_collect(DeviceType type, uint64_t* dropped = nullptr);

}  // namespace sdk::runtime
