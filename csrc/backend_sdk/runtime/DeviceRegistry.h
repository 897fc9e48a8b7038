// Attaching a device implementation (the C ABI of runtime/DeviceApi.h) to a
// backend, and turning the contract's statuses into typed errors.
//
// Note [Device attachment]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// Each PrivateUse backend has at most one device implementation, attached
// once per process, either from C++ (attach_device, e.g. a vendor's extension
// passing its own struct) or by loading a shared library that exports
// `sdk_device_api_entry` (load_device_library). Attaching checks the struct's
// version and size (Note [Device API versioning]) and that every required slot
// is set, then registers the backend's caching allocator with
// sdk::set_allocator so tensor factories allocate on the device. Attaching the
// same struct again is a no-op; attaching another one is an error (streams,
// events and cached memory of the first would dangle). The struct is never
// freed and a loaded library is never closed: their code may be running on
// device worker threads until the process exits.
#pragma once

#include <atomic>
#include <string>

#include <backend_sdk/core/DeviceType.h>
#include <backend_sdk/core/Macros.h>
#include <backend_sdk/runtime/DeviceApi.h>

namespace sdk::runtime {

// The most devices of one backend the runtime tracks (Device::index is int8_t).
constexpr int kMaxDevicesPerType = 64;

// Attaches `api` to `type` (PrivateUse1/2/3). `source` names where it came
// from in messages ("device_sim", a library path). Throws ValueError on a
// version/size mismatch or a missing required slot.
SDK_API void attach_device(DeviceType type, const sdk_device_api* api, const std::string& source = "C++");
// dlopen()s `path`, calls its sdk_device_api_entry() and attaches the result.
SDK_API void load_device_library(DeviceType type, const std::string& path);

SDK_API bool has_device(DeviceType type);
// The attached struct; throws RuntimeError naming the backend if none is.
SDK_API const sdk_device_api& device_api(DeviceType type);
// Where the attached device came from ("" if none).
SDK_API std::string device_source(DeviceType type);
// Number of devices of the backend (0 if no device is attached).
SDK_API int device_count(DeviceType type);
// Throws IndexError unless 0 <= index < device_count(type).
SDK_API void check_device_index(DeviceType type, int index, const char* what);

struct DeviceProperties {
  std::string name;
  uint64_t total_memory = 0;
  uint64_t supported_dtypes = 0;
  int stream_priority_least = 0;
  int stream_priority_greatest = 0;
};
SDK_API const DeviceProperties& device_properties(DeviceType type, int index);

// Throws the typed error for a failing status (see Note [Device status
// mapping] in DeviceRegistry.cpp); `what` names the operation ("malloc of
// 4096 bytes on accel:0"). SDK_SUCCESS returns.
SDK_API void check_status(DeviceType type, sdk_status status, const char* what);
inline void check_status(DeviceType type, sdk_status status, const std::string& what) {
  if (SDK_UNLIKELY(status != SDK_SUCCESS)) check_status(type, status, what.c_str());
}
// The error text for a status: the device's string plus its detailed message.
SDK_API std::string status_message(DeviceType type, sdk_status status);

// Note [Fork safety]
// ~~~~~~~~~~~~~~~~~~
// A device's state (its streams, events, worker threads, and on device_sim
// memory shared with the parent through a MAP_SHARED memfd) does not survive
// fork(). A pthread_atfork child handler, registered when the first device is
// attached, marks a child forked after a device was attached as a "bad fork"
// (PyTorch's _is_in_bad_fork): from then on every use of an attached device
// (device_api(), allocation, stream/event calls) raises RuntimeError
// ("Cannot re-initialize <backend> in forked subprocess ..."), while memory
// and events inherited from the parent are leaked rather than freed (freeing
// them would touch the parent's device). Metadata (device_count, properties,
// statistics) keeps working.
extern SDK_API std::atomic<bool> g_bad_fork;  // set by the atfork child handler only
inline bool in_bad_fork() { return g_bad_fork.load(std::memory_order_relaxed); }
// Throws the RuntimeError of Note [Fork safety] for `type`.
[[noreturn]] SDK_API void throw_bad_fork(DeviceType type);

}  // namespace sdk::runtime
