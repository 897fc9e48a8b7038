// DeviceType and Device. Header-only (Note [Header-only APIs]) except Device::parse and
// Device::str; backend names and renaming are in core/DeviceType.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include <backend_sdk/headeronly/Macros.h>

namespace sdk {

// The numbers are part of the stable C ABI (SDK_STABLE_DEVICE_*, stable/c/shim.h): never renumber.
enum class DeviceType : int8_t {
  CPU = 0,
  Meta = 1,
  PrivateUse1 = 2,
  PrivateUse2 = 3,
  PrivateUse3 = 4,
};
constexpr int kNumDeviceTypes = 5;

constexpr bool is_privateuse(DeviceType t) {
  return t == DeviceType::PrivateUse1 || t == DeviceType::PrivateUse2 || t == DeviceType::PrivateUse3;
}

// Its layout (two int8_t) is part of the stable surface. Everything is header-only except
// parse() and str(), which use the backend names and are defined in libbackend_sdk.
struct SDK_HEADERONLY_VISIBLE Device {
  DeviceType type = DeviceType::CPU;
  int8_t index = -1;  // -1: "the current device of this type"

  constexpr Device() = default;
  constexpr Device(DeviceType t, int8_t i = -1) : type(t), index(i) {}
  // Parses "cpu", "cpu:0", "meta", "accel:1"; throws ValueError on anything else.
  static Device parse(std::string_view text);  // not header-only

  bool has_index() const { return index >= 0; }
  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_meta() const { return type == DeviceType::Meta; }
  std::string str() const;  // not header-only
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

}  // namespace sdk

template <>
struct std::hash<sdk::Device> {
  size_t operator()(const sdk::Device& d) const noexcept {
    return (static_cast<size_t>(d.type) << 8) | static_cast<uint8_t>(d.index);
  }
};
