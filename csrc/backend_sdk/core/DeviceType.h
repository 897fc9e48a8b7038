// DeviceType, Device (header-only: headeronly/DeviceType.h) and backend names (PrivateUse1/2/3 renaming).
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

#include <backend_sdk/core/Macros.h>
#include <backend_sdk/headeronly/DeviceType.h>

namespace sdk {

// Note [Backend renaming]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A PrivateUse backend starts with a placeholder name ("privateuseone",
// "privateusetwo", "privateusethree") and may be renamed once per process to
// the vendor's device name ("accel"). Renaming to the same name again is a
// no-op; renaming to another name, to a name another backend already has, or
// to a built-in device name (cpu, cuda, meta, ...) is an error. After renaming,
// both the placeholder and the new name parse, and every printed device,
// dispatch key and error message uses the new name. Names are published as
// immortal strings through atomics, so readers on other threads never lock.
SDK_API void rename_privateuse_backend(DeviceType type, std::string_view name);
// Lower-case name used in device strings: "cpu", "meta", "accel".
SDK_API const std::string& device_type_name(DeviceType type);
// The placeholder name a PrivateUse backend has before renaming.
SDK_API const char* default_device_type_name(DeviceType type);
SDK_API bool is_backend_renamed(DeviceType type);
// Parses "cpu", "meta", "privateuseone", "accel" (after renaming); returns false if unknown.
SDK_API bool parse_device_type(std::string_view name, DeviceType* out);
// "cpu, meta, accel, privateusetwo, privateusethree": for error messages.
SDK_API std::string valid_device_type_names();

SDK_API std::ostream& operator<<(std::ostream& os, DeviceType t);
SDK_API std::ostream& operator<<(std::ostream& os, const Device& d);

}  // namespace sdk
