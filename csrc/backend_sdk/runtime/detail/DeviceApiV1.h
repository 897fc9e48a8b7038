// The loader's frozen view of major version 1 of the device contract (the
// struct before the context handle), for Note [Device API v1 adapter]
// (DeviceRegistry.cpp). Internal: a device is written against
// <backend_sdk/runtime/DeviceApi.h> (version 2). The verbatim v1 header, as
// vendors compiled it, is kept in tests/device_api_v1/ and a test builds a
// device from it (tests/test_device_contract_v2.py); DeviceApiLayout.cpp pins
// this struct to that layout.
#pragma once

#include <cstddef>
#include <cstdint>

#include <backend_sdk/runtime/DeviceApi.h>

namespace sdk::runtime::detail {

constexpr uint32_t kDeviceApiV1Major = 1;
// v1's exported entry: `const sdk_device_api_v1* sdk_device_api_entry(void)`.
constexpr const char* kDeviceApiV1EntryName = "sdk_device_api_entry";

// X(name, return type, parameters) of version 1, in its order. Every slot but
// mem_get_info and get_last_error_message was required.
#define SDK_DEVICE_API_V1_SLOTS(X)                                                                   \
  X(device_count, sdk_status, (int32_t*))                                                            \
  X(get_device_properties, sdk_status, (int32_t, sdk_device_properties*))                            \
  X(get_device, sdk_status, (int32_t*))                                                              \
  X(set_device, sdk_status, (int32_t))                                                               \
  X(mem_get_info, sdk_status, (int32_t, size_t*, size_t*))                                           \
  X(malloc, sdk_status, (int32_t, void**, size_t))                                                   \
  X(free, sdk_status, (int32_t, void*))                                                              \
  X(host_malloc, sdk_status, (void**, size_t))                                                       \
  X(host_free, sdk_status, (void*))                                                                  \
  X(memcpy, sdk_status, (void*, const void*, size_t, sdk_memcpy_kind))                               \
  X(memcpy_async, sdk_status, (void*, const void*, size_t, sdk_memcpy_kind, sdk_stream_t))           \
  X(memset_async, sdk_status, (void*, int32_t, size_t, sdk_stream_t))                                \
  X(stream_create, sdk_status, (int32_t, int32_t, sdk_stream_t*))                                    \
  X(stream_destroy, sdk_status, (sdk_stream_t))                                                      \
  X(stream_query, sdk_status, (sdk_stream_t))                                                        \
  X(stream_synchronize, sdk_status, (sdk_stream_t))                                                  \
  X(stream_wait_event, sdk_status, (sdk_stream_t, sdk_event_t))                                      \
  X(event_create, sdk_status, (int32_t, uint32_t, sdk_event_t*))                                     \
  X(event_destroy, sdk_status, (sdk_event_t))                                                        \
  X(event_record, sdk_status, (sdk_event_t, sdk_stream_t))                                           \
  X(event_query, sdk_status, (sdk_event_t))                                                          \
  X(event_synchronize, sdk_status, (sdk_event_t))                                                    \
  X(event_elapsed_time, sdk_status, (float*, sdk_event_t, sdk_event_t))                              \
  X(launch_host_func, sdk_status, (sdk_stream_t, sdk_host_fn, void*))                                \
  X(device_synchronize, sdk_status, (int32_t))                                                       \
  X(get_error_string, const char*, (sdk_status))                                                     \
  X(get_last_error_message, const char*, (void))

struct sdk_device_api_v1 {
  size_t struct_size;
  uint32_t api_version;  // 1
  uint32_t reserved0;
#define SDK_DEVICE_API_V1_FIELD_(name, ret, params) ret(*name) params;
  SDK_DEVICE_API_V1_SLOTS(SDK_DEVICE_API_V1_FIELD_)
#undef SDK_DEVICE_API_V1_FIELD_
};

// The size of version 1: the end of its last slot.
constexpr size_t kDeviceApiV1Size =
    offsetof(sdk_device_api_v1, get_last_error_message) + sizeof(sdk_device_api_v1::get_last_error_message);

// v1's supported_dtypes numbered bits by the C++ ScalarType order of its
// time; frozen here (the enum may grow) as SDK_DTYPE_* numbers, by bit.
constexpr int kDeviceApiV1DtypeBits[] = {
    SDK_DTYPE_BOOL,  SDK_DTYPE_UINT8,   SDK_DTYPE_INT8,    SDK_DTYPE_INT16,   SDK_DTYPE_INT32,
    SDK_DTYPE_INT64, SDK_DTYPE_FLOAT16, SDK_DTYPE_BFLOAT16, SDK_DTYPE_FLOAT32, SDK_DTYPE_FLOAT64,
};

}  // namespace sdk::runtime::detail
