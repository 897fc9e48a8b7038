// Freezes the layout of version 1 of the device runtime contract.
//
// These asserts are the test of Note [Device API versioning]
// (runtime/DeviceApi.h): a device compiled against version 1 must keep working
// with every later SDK, so no v1 field may move. Adding a field at the end
// (version 2) leaves them all true; reordering, removing or resizing one
// breaks the build here. The layout assumes an LP64 / LLP64 target with 8-byte
// pointers (every platform the SDK supports).
#include <cstddef>

#include <backend_sdk/runtime/DeviceApi.h>

namespace {
constexpr size_t kPtr = sizeof(void*);
static_assert(kPtr == 8, "the device ABI is defined for 64-bit targets");

static_assert(offsetof(sdk_device_api, struct_size) == 0, "v1 layout: struct_size");
static_assert(offsetof(sdk_device_api, api_version) == 8, "v1 layout: api_version");
static_assert(offsetof(sdk_device_api, reserved0) == 12, "v1 layout: reserved0");
static_assert(offsetof(sdk_device_api, device_count) == 16 + 0 * kPtr, "v1 layout: device_count");
static_assert(offsetof(sdk_device_api, get_device_properties) == 16 + 1 * kPtr, "v1 layout: get_device_properties");
static_assert(offsetof(sdk_device_api, get_device) == 16 + 2 * kPtr, "v1 layout: get_device");
static_assert(offsetof(sdk_device_api, set_device) == 16 + 3 * kPtr, "v1 layout: set_device");
static_assert(offsetof(sdk_device_api, mem_get_info) == 16 + 4 * kPtr, "v1 layout: mem_get_info");
static_assert(offsetof(sdk_device_api, malloc) == 16 + 5 * kPtr, "v1 layout: malloc");
static_assert(offsetof(sdk_device_api, free) == 16 + 6 * kPtr, "v1 layout: free");
static_assert(offsetof(sdk_device_api, host_malloc) == 16 + 7 * kPtr, "v1 layout: host_malloc");
static_assert(offsetof(sdk_device_api, host_free) == 16 + 8 * kPtr, "v1 layout: host_free");
static_assert(offsetof(sdk_device_api, memcpy) == 16 + 9 * kPtr, "v1 layout: memcpy");
static_assert(offsetof(sdk_device_api, memcpy_async) == 16 + 10 * kPtr, "v1 layout: memcpy_async");
static_assert(offsetof(sdk_device_api, memset_async) == 16 + 11 * kPtr, "v1 layout: memset_async");
static_assert(offsetof(sdk_device_api, stream_create) == 16 + 12 * kPtr, "v1 layout: stream_create");
static_assert(offsetof(sdk_device_api, stream_destroy) == 16 + 13 * kPtr, "v1 layout: stream_destroy");
static_assert(offsetof(sdk_device_api, stream_query) == 16 + 14 * kPtr, "v1 layout: stream_query");
static_assert(offsetof(sdk_device_api, stream_synchronize) == 16 + 15 * kPtr, "v1 layout: stream_synchronize");
static_assert(offsetof(sdk_device_api, stream_wait_event) == 16 + 16 * kPtr, "v1 layout: stream_wait_event");
static_assert(offsetof(sdk_device_api, event_create) == 16 + 17 * kPtr, "v1 layout: event_create");
static_assert(offsetof(sdk_device_api, event_destroy) == 16 + 18 * kPtr, "v1 layout: event_destroy");
static_assert(offsetof(sdk_device_api, event_record) == 16 + 19 * kPtr, "v1 layout: event_record");
static_assert(offsetof(sdk_device_api, event_query) == 16 + 20 * kPtr, "v1 layout: event_query");
static_assert(offsetof(sdk_device_api, event_synchronize) == 16 + 21 * kPtr, "v1 layout: event_synchronize");
static_assert(offsetof(sdk_device_api, event_elapsed_time) == 16 + 22 * kPtr, "v1 layout: event_elapsed_time");
static_assert(offsetof(sdk_device_api, launch_host_func) == 16 + 23 * kPtr, "v1 layout: launch_host_func");
static_assert(offsetof(sdk_device_api, device_synchronize) == 16 + 24 * kPtr, "v1 layout: device_synchronize");
static_assert(offsetof(sdk_device_api, get_error_string) == 16 + 25 * kPtr, "v1 layout: get_error_string");
static_assert(offsetof(sdk_device_api, get_last_error_message) == 16 + 26 * kPtr, "v1 layout: get_last_error_message");
static_assert(sizeof(sdk_device_api) == 16 + 27 * kPtr, "v1 layout: a field was added without bumping the version");

static_assert(offsetof(sdk_device_properties, struct_size) == 0, "v1 layout: properties.struct_size");
static_assert(offsetof(sdk_device_properties, name) == 8, "v1 layout: properties.name");
static_assert(offsetof(sdk_device_properties, total_memory) == 8 + SDK_DEVICE_NAME_MAX, "v1 layout: properties.total_memory");
static_assert(offsetof(sdk_device_properties, supported_dtypes) == 16 + SDK_DEVICE_NAME_MAX,
              "v1 layout: properties.supported_dtypes");
static_assert(offsetof(sdk_device_properties, stream_priority_least) == 24 + SDK_DEVICE_NAME_MAX,
              "v1 layout: properties.stream_priority_least");
static_assert(offsetof(sdk_device_properties, stream_priority_greatest) == 28 + SDK_DEVICE_NAME_MAX,
              "v1 layout: properties.stream_priority_greatest");
static_assert(sizeof(sdk_device_properties) == 32 + SDK_DEVICE_NAME_MAX, "v1 layout: properties size");

static_assert(sizeof(sdk_status) == 4 && sizeof(sdk_memcpy_kind) == 4, "status and kind are 32-bit");
static_assert(SDK_DEVICE_API_VERSION == 1, "update the v1 asserts' comment when bumping the version");
}  // namespace

namespace sdk::runtime::detail {
// The size of version 1 of the struct, used by the loader (DeviceRegistry.cpp).
extern const size_t kDeviceApiV1Size;
const size_t kDeviceApiV1Size = 16 + 27 * kPtr;
}  // namespace sdk::runtime::detail
