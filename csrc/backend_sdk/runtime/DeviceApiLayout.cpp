// Freezes the layout of the device runtime contract and describes its slots.
//
// These asserts are the test of Note [Device API versioning]
// (runtime/DeviceApi.h): a device compiled against an older version must keep
// working with every later SDK, so no field may move. Appending a slot leaves
// them all true; reordering, removing or resizing one breaks the build here.
// Every expectation is computed from the slot X-macros (no hand-counted
// offsets). The layout assumes an LP64 / LLP64 target with 8-byte pointers
// (every platform the SDK supports).
#include <cstddef>

#include <backend_sdk/runtime/DeviceApi.h>
#include <backend_sdk/runtime/DeviceRegistry.h>
#include <backend_sdk/runtime/DeviceStatsExtension.h>
#include <backend_sdk/runtime/DeviceTraceExtension.h>
#include <backend_sdk/runtime/detail/DeviceApiV1.h>

namespace sdk::runtime {
namespace {
constexpr size_t kPtr = sizeof(void*);
static_assert(kPtr == 8, "the device ABI is defined for 64-bit targets");

// ---- version 2 ----
static_assert(offsetof(sdk_device_api, struct_size) == 0, "v2 layout: struct_size");
static_assert(offsetof(sdk_device_api, major_version) == 8, "v2 layout: major_version (v1's api_version)");
static_assert(offsetof(sdk_device_api, minor_version) == 12, "v2 layout: minor_version (v1's reserved0)");
static_assert(offsetof(sdk_device_api, extension_start) == 16, "v2 layout: extension_start");
constexpr size_t kV2Header = 16 + kPtr;

enum V2SlotIndex : size_t {
#define SDK_SLOT_INDEX_(name, ret, params, presence, minor) kV2Index_##name,
  SDK_DEVICE_API_SLOTS(SDK_SLOT_INDEX_)
#undef SDK_SLOT_INDEX_
  kV2SlotCount
};
#define SDK_SLOT_ASSERT_(name, ret, params, presence, minor)                                    \
  static_assert(offsetof(sdk_device_api, name) == kV2Header + kPtr * kV2Index_##name,           \
                "v2 layout: " #name " moved");                                                   \
  static_assert(sizeof(sdk_device_api::name) == kPtr, "v2 layout: " #name " is not a pointer"); \
  static_assert((minor) == 0 || (presence) == SDK_SLOT_OPTIONAL,                                \
                "v2: a slot added in a later minor must be OPTIONAL (Note [Device API versioning])");
SDK_DEVICE_API_SLOTS(SDK_SLOT_ASSERT_)
#undef SDK_SLOT_ASSERT_
static_assert(sizeof(sdk_device_api) == kV2Header + kPtr * kV2SlotCount, "v2 layout: padding or a non-slot field");

// A function, so the slots of minor 0 draw no "always true" warning.
constexpr bool slot_in_minor(uint32_t slot_minor, uint32_t m) { return slot_minor <= m; }

// The size of a minor, computed from the X-macro: the end of its last slot.
constexpr size_t size_of_minor(uint32_t m) {
  size_t end = kV2Header;
#define SDK_SLOT_END_(name, ret, params, presence, minor) \
  if (slot_in_minor(minor, m)) end = offsetof(sdk_device_api, name) + kPtr;
  SDK_DEVICE_API_SLOTS(SDK_SLOT_END_)
#undef SDK_SLOT_END_
  return end;
}
static_assert(SDK_DEVICE_API_SIZE_2_0 == size_of_minor(0), "SDK_DEVICE_API_LAST_SLOT_2_0 is not minor 0's last slot");
static_assert(SDK_DEVICE_API_SIZE_2_1 == size_of_minor(1), "SDK_DEVICE_API_LAST_SLOT_2_1 is not minor 1's last slot");
static_assert(sizeof(sdk_device_api) == size_of_minor(SDK_DEVICE_API_MINOR),
              "a slot was appended without bumping SDK_DEVICE_API_MINOR and its SIZE macro");
static_assert(SDK_DEVICE_API_MAJOR == 2 && SDK_DEVICE_API_MINOR == 1,
              "update the per-minor asserts above when bumping the version");

static_assert(offsetof(sdk_device_extension_base, struct_size) == 0, "extension base: struct_size first");
static_assert(offsetof(sdk_device_extension_base, next) == 24 && sizeof(sdk_device_extension_base) == 32,
              "extension base layout");
static_assert(offsetof(sdk_trace_extension, start) == sizeof(sdk_device_extension_base), "trace extension layout");
static_assert(SDK_TRACE_EXTENSION_SIZE_1 == offsetof(sdk_trace_extension, set_correlation_id), "trace extension v1 size");
static_assert(SDK_TRACE_EXTENSION_SIZE_2 == sizeof(sdk_trace_extension), "trace extension v2 size");
static_assert(SDK_STATS_EXTENSION_SIZE_1 == sizeof(sdk_stats_extension), "stats extension v1 size");
static_assert(SDK_DEVICE_STATS_SIZE_1 == sizeof(sdk_device_stats) && sizeof(sdk_device_stats) == 24,
              "device stats v1 layout");
static_assert(sizeof(sdk_trace_record) == 40 + SDK_TRACE_NAME_MAX, "trace record layout");
static_assert(offsetof(sdk_device_instance, api) == 16 && offsetof(sdk_device_instance, context) == 24,
              "instance layout");

// ---- version 1 (frozen: detail/DeviceApiV1.h) ----
static_assert(offsetof(detail::sdk_device_api_v1, api_version) == 8, "v1 layout: api_version");
static_assert(offsetof(detail::sdk_device_api_v1, reserved0) == 12, "v1 layout: reserved0");
enum V1SlotIndex : size_t {
#define SDK_SLOT_INDEX_(name, ret, params) kV1Index_##name,
  SDK_DEVICE_API_V1_SLOTS(SDK_SLOT_INDEX_)
#undef SDK_SLOT_INDEX_
  kV1SlotCount
};
#define SDK_SLOT_ASSERT_(name, ret, params) \
  static_assert(offsetof(detail::sdk_device_api_v1, name) == 16 + kPtr * kV1Index_##name, "v1 layout: " #name);
SDK_DEVICE_API_V1_SLOTS(SDK_SLOT_ASSERT_)
#undef SDK_SLOT_ASSERT_
static_assert(kV1SlotCount == 27 && detail::kDeviceApiV1Size == sizeof(detail::sdk_device_api_v1),
              "v1 is frozen: 27 slots");

static_assert(offsetof(sdk_device_properties, struct_size) == 0, "properties.struct_size");
static_assert(offsetof(sdk_device_properties, name) == 8, "properties.name");
static_assert(offsetof(sdk_device_properties, total_memory) == 8 + SDK_DEVICE_NAME_MAX, "properties.total_memory");
static_assert(offsetof(sdk_device_properties, supported_dtypes) == 16 + SDK_DEVICE_NAME_MAX,
              "properties.supported_dtypes");
static_assert(offsetof(sdk_device_properties, stream_priority_least) == 24 + SDK_DEVICE_NAME_MAX,
              "properties.stream_priority_least");
static_assert(offsetof(sdk_device_properties, stream_priority_greatest) == 28 + SDK_DEVICE_NAME_MAX,
              "properties.stream_priority_greatest");
static_assert(sizeof(sdk_device_properties) == 32 + SDK_DEVICE_NAME_MAX, "properties size");
static_assert(sizeof(sdk_status) == 4 && sizeof(sdk_memcpy_kind) == 4, "status and kind are 32-bit");
}  // namespace

size_t device_api_size_of_minor(uint32_t minor) { return size_of_minor(minor); }

const std::vector<DeviceApiSlotInfo>& device_api_slots() {
  static const std::vector<DeviceApiSlotInfo> slots = {
#define SDK_SLOT_INFO_(name, ret, params, presence, minor) \
  {#name, #ret, #params, (presence) == SDK_SLOT_REQUIRED, (minor), offsetof(sdk_device_api, name)},
      SDK_DEVICE_API_SLOTS(SDK_SLOT_INFO_)
#undef SDK_SLOT_INFO_
  };
  return slots;
}

}  // namespace sdk::runtime
