// at::DisableRecordFunctionGuard's counterpart: no profiler events from this
// thread while it lives (Note [Record function], dispatch/RecordFunction.h).
//
// For code that stands for device work but runs on a host thread: a
// simulated device's kernels (the accel sample computes its kernels with the
// SDK's CPU operators on device_sim's workers). On real hardware those
// operators would not exist, so the profile must not show them as host
// operators; their device time comes from the device's trace instead.
#pragma once

#include <backend_sdk/core/Macros.h>

namespace sdk::profiler {

class SDK_API DisableRecordFunctionGuard {
 public:
  DisableRecordFunctionGuard();
  ~DisableRecordFunctionGuard();
  DisableRecordFunctionGuard(const DisableRecordFunctionGuard&) = delete;
  DisableRecordFunctionGuard& operator=(const DisableRecordFunctionGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace sdk::profiler
