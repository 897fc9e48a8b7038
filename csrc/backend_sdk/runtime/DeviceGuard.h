// Current device per thread, DeviceGuard and device-wide synchronisation.
//
// Note [Current device and stream]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Each thread has one current device per backend (index 0 until changed) and
// one current stream per device (the device's default stream until changed);
// both are thread-local, as in PyTorch. Changing the current device also
// calls the contract's set_device, so vendor code that asks the device for
// its current device agrees with the SDK. Guards restore on destruction;
// nested guards restore in reverse order.
#pragma once

#include <backend_sdk/core/DeviceType.h>
#include <backend_sdk/core/Macros.h>
#include <backend_sdk/runtime/CurrentDevice.h>

namespace sdk::runtime {

// The current device of `type` on this thread (Device(type, -1) for CPU and Meta, which have none).
inline Device current_device(DeviceType type) { return Device(type, current_device_index(type)); }
// Sets the current device of d.type (d.index must be set and valid).
SDK_API void set_current_device(Device d);
// Resolves index -1 to the current device; checks the index otherwise.
SDK_API Device resolve_device(Device d, const char* what);

// Waits for all work on every stream of the device.
SDK_API void device_synchronize(Device d);

class SDK_API DeviceGuard {
 public:
  // Makes d current for d.type until destruction. Index -1: no change.
  explicit DeviceGuard(Device d);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  Device original_device() const { return Device(type_, original_); }

 private:
  DeviceType type_;
  int8_t original_;
  bool active_;
};

}  // namespace sdk::runtime
