// Attaching a device implementation (the C ABI of runtime/DeviceApi.h) to a
// backend, and turning the contract's statuses into typed errors.
//
// Note [Device attachment]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// Each PrivateUse backend has at most one device implementation, attached
// once per process, either from C++ (attach_device, e.g. a vendor's extension
// passing its own struct and context) or by loading a shared library that
// exports `sdk_device_entry` (version 2) or `sdk_device_api_entry` (version 1)
// (load_device_library). Attaching checks the struct's major/minor version
// and size (Note [Device API versioning]), that every required slot is set,
// and the extension chain (Note [Device API extensions]); it then builds the
// backend's normalized table (DeviceApi: every slot of this SDK's minor set,
// defaults filled in, a v1 device adapted) and registers the backend's
// caching allocator with sdk::set_allocator so tensor factories allocate on
// the device. Attaching the same struct and context again is a no-op;
// attaching another one is an error (streams, events and cached memory of the
// first would dangle). The struct, its context and the normalized table are
// never freed and a loaded library is never closed: their code may be running
// on device worker threads until the process exits.
#pragma once

#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include <backend_sdk/core/DeviceType.h>
#include <backend_sdk/core/Macros.h>
#include <backend_sdk/runtime/DeviceApi.h>

namespace sdk::runtime {

// The most devices of one backend the runtime tracks (Device::index is int8_t).
constexpr int kMaxDevicesPerType = 64;

// The attached device as the SDK calls it: the normalized table (every slot of
// SDK_DEVICE_API_MINOR non-NULL) and the device's context, with one member per
// slot that passes the context (`api.malloc(device, &p, n)` calls
// table.malloc(context, device, &p, n)). Generated from SDK_DEVICE_API_SLOTS.
class DeviceApi {
 public:
  DeviceApi(const sdk_device_api& table, void* context, uint32_t major, uint32_t minor)
      : table_(table), context_(context), major_(major), minor_(minor) {}
#define SDK_DEVICE_API_MEMBER_(name, ret, params, presence, minor)      \
  template <class... Args>                                              \
  ret name(Args&&... args) const {                                      \
    return table_.name(context_, std::forward<Args>(args)...);          \
  }
  SDK_DEVICE_API_SLOTS(SDK_DEVICE_API_MEMBER_)
#undef SDK_DEVICE_API_MEMBER_
  const sdk_device_api& table() const { return table_; }
  void* context() const { return context_; }
  // The version the device declared (major 1: adapted, Note [Device API v1 adapter]).
  uint32_t major_version() const { return major_; }
  uint32_t minor_version() const { return minor_; }

 private:
  sdk_device_api table_;
  void* context_;
  uint32_t major_, minor_;
};

// Attaches `api` (with its `context`, Note [Device context]) to `type`
// (PrivateUse1/2/3). `api` may be a version-1 struct (detail/DeviceApiV1.h;
// its context is ignored). `source` names where it came from in messages
// ("device_sim", a library path). Throws ValueError on a version/size
// mismatch, a missing required slot or a malformed extension chain.
SDK_API void attach_device(DeviceType type, const sdk_device_api* api, void* context,
                           const std::string& source = "C++");
inline void attach_device(DeviceType type, const sdk_device_api* api, const std::string& source = "C++") {
  attach_device(type, api, nullptr, source);
}
// dlopen()s `path`, calls its sdk_device_entry() (or v1 sdk_device_api_entry())
// and attaches the result.
SDK_API void load_device_library(DeviceType type, const std::string& path);

SDK_API bool has_device(DeviceType type);
// The attached device; throws RuntimeError naming the backend if none is.
SDK_API const DeviceApi& device_api(DeviceType type);
// The attached device's extension named `name` (Note [Device API extensions]),
// or nullptr if the device has none of that name (or no device is attached).
// Cast it to the extension's struct after checking base.version; pass
// device_api(type).context() to its functions.
SDK_API const sdk_device_extension_base* find_device_extension(DeviceType type, const char* name);
// Names and versions of the attached device's extensions, in chain order.
SDK_API std::vector<std::pair<std::string, uint32_t>> device_extensions(DeviceType type);
// Where the attached device came from ("" if none).
SDK_API std::string device_source(DeviceType type);
// Number of devices of the backend (0 if no device is attached).
SDK_API int device_count(DeviceType type);
// Throws IndexError unless 0 <= index < device_count(type).
SDK_API void check_device_index(DeviceType type, int index, const char* what);

struct DeviceProperties {
  std::string name;
  uint64_t total_memory = 0;
  // Bit i: ScalarType i is supported (mapped by the loader from the
  // device's SDK_DTYPE_* bits, Note [Device dtype numbers]).
  uint64_t supported_dtypes = 0;
  int stream_priority_least = 0;
  int stream_priority_greatest = 0;
};
SDK_API const DeviceProperties& device_properties(DeviceType type, int index);

// One slot of the contract, from SDK_DEVICE_API_SLOTS (for the Python device's
// trampolines and the tests that call raw slots): its name, C return type and
// parameter list as written in the header, whether it is required, the minor
// that added it, and its offset in sdk_device_api.
struct DeviceApiSlotInfo {
  const char* name;
  const char* return_type;
  const char* params;
  bool required;
  uint32_t minor;
  size_t offset;
};
SDK_API const std::vector<DeviceApiSlotInfo>& device_api_slots();
// sizeof the struct of minor `minor` of the current major (end of its last slot).
SDK_API size_t device_api_size_of_minor(uint32_t minor);

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
