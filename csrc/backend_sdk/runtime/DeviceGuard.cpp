#include <backend_sdk/runtime/DeviceGuard.h>

#include <cstdio>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/runtime/detail/BlockingWait.h>
#include <backend_sdk/runtime/DeviceRegistry.h>

namespace sdk::runtime {
namespace {
// Note [Current device and stream]. Trivially destructible, so readable at
// any point of thread exit.
thread_local int8_t t_current_device[kNumDeviceTypes] = {};
}  // namespace

int8_t current_device_index(DeviceType type) {
  if (type == DeviceType::CPU || type == DeviceType::Meta) return -1;
  return t_current_device[static_cast<int>(type)];
}

void set_current_device(Device d) {
  SDK_CHECK_VALUE(is_privateuse(d.type), "set_device: '", device_type_name(d.type), "' has no current device");
  check_device_index(d.type, d.index, "set_device");
  int8_t& cur = t_current_device[static_cast<int>(d.type)];
  if (cur == d.index) return;
  check_status(d.type, device_api(d.type).set_device(d.index), "set_device(" + std::to_string(d.index) + ")");
  cur = d.index;
}

Device resolve_device(Device d, const char* what) {
  SDK_CHECK_VALUE(is_privateuse(d.type), what, ": expected a device of an accelerator backend, got '", d, "'");
  if (d.index < 0) d.index = t_current_device[static_cast<int>(d.type)];
  check_device_index(d.type, d.index, what);
  return d;
}

void device_synchronize(Device d) {
  d = resolve_device(d, "synchronize");
  const std::string what = "synchronize(" + d.str() + ")";
  BlockingWait wait(what.c_str());  // Note [Blocking waits release the GIL], Note [Sync debug mode]
  check_status(d.type, device_api(d.type).device_synchronize(d.index), "synchronize(" + d.str() + ")");
}

DeviceGuard::DeviceGuard(Device d) : type_(d.type), original_(0), active_(d.index >= 0) {
  if (!active_) return;
  original_ = current_device_index(d.type);
  set_current_device(d);
}

DeviceGuard::~DeviceGuard() {
  if (!active_) return;
  try {
    set_current_device(Device(type_, original_));
  } catch (const std::exception& e) {
    // A destructor must not throw; the device refusing to switch back is a
    // device fault the next call will report again.
    std::fprintf(stderr, "backend_sdk: DeviceGuard could not restore the current device: %s\n", e.what());
  }
}

}  // namespace sdk::runtime
