// The SDK's face of the "sdk.collectives" device extension (Note [Device
// collectives extension], runtime/DeviceCollectivesExtension.h). Internal:
// the _C bindings (csrc/python/PyCollectives.cpp) drive it for
// backend_sdk.distributed; not installed.
#pragma once

#include <string>

#include <backend_sdk/core/DeviceType.h>
#include <backend_sdk/core/Macros.h>
#include <backend_sdk/runtime/DeviceCollectivesExtension.h>

namespace sdk::runtime {

// True if the backend has a device and the device offers "sdk.collectives".
SDK_API bool has_device_collectives(DeviceType type);
// The device's extension; NotImplementedError naming the backend and `what` if it has none.
SDK_API const sdk_collectives_extension& device_collectives(DeviceType type, const char* what);

namespace detail {
// At attach (DeviceRegistry.cpp, Note [Device API extensions]): version-1 size and required functions.
void validate_collectives_extension(const sdk_device_extension_base* e, const std::string& source);
}  // namespace detail

}  // namespace sdk::runtime
