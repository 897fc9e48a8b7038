#include <backend_sdk/runtime/DeviceRegistry.h>

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/runtime/CachingAllocator.h>
#include <backend_sdk/core/Allocator.h>

namespace sdk::runtime {
namespace detail {
extern const size_t kDeviceApiV1Size;
}
// Note [Fork safety].
std::atomic<bool> g_bad_fork{false};

namespace {

struct AttachedDevice {
  const sdk_device_api* api = nullptr;
  std::string source;
  int count = 0;
  std::vector<DeviceProperties> props;
};

std::mutex& attach_mutex() {
  static std::mutex m;
  return m;
}

// Published once under attach_mutex and never changed after: readers load the
// pointer without locking.
std::atomic<AttachedDevice*> g_devices[kNumDeviceTypes];

AttachedDevice* attached(DeviceType type) {
  return g_devices[static_cast<int>(type)].load(std::memory_order_acquire);
}

void on_fork_child() {
  for (auto& slot : g_devices) {
    if (slot.load(std::memory_order_relaxed) != nullptr) g_bad_fork.store(true, std::memory_order_relaxed);
  }
}

// The required slots of version 1, by name, for the missing-slot message.
std::vector<const char*> missing_required_slots(const sdk_device_api* api) {
  std::vector<const char*> missing;
#define SDK_REQUIRE_SLOT(f) \
  if (api->f == nullptr) missing.push_back(#f);
  SDK_REQUIRE_SLOT(device_count)
  SDK_REQUIRE_SLOT(get_device_properties)
  SDK_REQUIRE_SLOT(get_device)
  SDK_REQUIRE_SLOT(set_device)
  SDK_REQUIRE_SLOT(malloc)
  SDK_REQUIRE_SLOT(free)
  SDK_REQUIRE_SLOT(host_malloc)
  SDK_REQUIRE_SLOT(host_free)
  SDK_REQUIRE_SLOT(memcpy)
  SDK_REQUIRE_SLOT(memcpy_async)
  SDK_REQUIRE_SLOT(memset_async)
  SDK_REQUIRE_SLOT(stream_create)
  SDK_REQUIRE_SLOT(stream_destroy)
  SDK_REQUIRE_SLOT(stream_query)
  SDK_REQUIRE_SLOT(stream_synchronize)
  SDK_REQUIRE_SLOT(stream_wait_event)
  SDK_REQUIRE_SLOT(event_create)
  SDK_REQUIRE_SLOT(event_destroy)
  SDK_REQUIRE_SLOT(event_record)
  SDK_REQUIRE_SLOT(event_query)
  SDK_REQUIRE_SLOT(event_synchronize)
  SDK_REQUIRE_SLOT(event_elapsed_time)
  SDK_REQUIRE_SLOT(launch_host_func)
  SDK_REQUIRE_SLOT(device_synchronize)
  SDK_REQUIRE_SLOT(get_error_string)
#undef SDK_REQUIRE_SLOT
  return missing;
}

}  // namespace

void attach_device(DeviceType type, const sdk_device_api* api, const std::string& source) {
  SDK_CHECK_VALUE(is_privateuse(type), "attach_device: a device can only be attached to a PrivateUse backend, not '",
                  device_type_name(type), "'");
  SDK_CHECK_VALUE(api != nullptr, "attach_device: the device API of '", source, "' is NULL (the device did not start)");
  std::lock_guard<std::mutex> lock(attach_mutex());
  if (AttachedDevice* existing = attached(type)) {
    if (existing->api == api) return;
    SDK_THROW(Value, "attach_device: backend '", device_type_name(type), "' already has a device attached (",
              existing->source, "); a backend's device can be attached once per process");
  }
  // Note [Device API versioning]: refuse what we cannot call safely.
  SDK_CHECK_VALUE(api->api_version >= 1 && api->api_version <= SDK_DEVICE_API_VERSION, "attach_device: '", source,
                  "' implements device API version ", api->api_version, ", but this SDK implements version ",
                  SDK_DEVICE_API_VERSION, " (supported versions: 1 to ", SDK_DEVICE_API_VERSION, ")");
  SDK_CHECK_VALUE(api->struct_size >= detail::kDeviceApiV1Size, "attach_device: '", source,
                  "' declares device API version ", api->api_version, " with struct_size ", api->struct_size,
                  ", smaller than the ", detail::kDeviceApiV1Size, " bytes of version 1 in this SDK (version ",
                  SDK_DEVICE_API_VERSION, "): it was built against a different header");
  auto missing = missing_required_slots(api);
  if (!missing.empty()) {
    std::string names;
    for (const char* n : missing) names += (names.empty() ? "" : ", ") + std::string(n);
    SDK_THROW(Value, "attach_device: '", source, "' leaves required device API slots NULL: ", names);
  }

  auto dev = std::make_unique<AttachedDevice>();
  dev->api = api;
  dev->source = source;
  int32_t count = 0;
  sdk_status s = api->device_count(&count);
  SDK_CHECK(s == SDK_SUCCESS, "attach_device: device_count of '", source, "' failed: ", api->get_error_string(s));
  SDK_CHECK_VALUE(count >= 0 && count <= kMaxDevicesPerType, "attach_device: '", source, "' reports ", count,
                  " devices; the SDK supports 0 to ", kMaxDevicesPerType);
  dev->count = count;
  for (int i = 0; i < count; ++i) {
    sdk_device_properties p{};
    p.struct_size = sizeof(p);
    s = api->get_device_properties(i, &p);
    SDK_CHECK(s == SDK_SUCCESS, "attach_device: get_device_properties(", i, ") of '", source,
              "' failed: ", api->get_error_string(s));
    p.name[SDK_DEVICE_NAME_MAX - 1] = '\0';
    DeviceProperties props;
    props.name = p.name;
    props.total_memory = p.total_memory;
    props.supported_dtypes = p.supported_dtypes;
    props.stream_priority_least = p.stream_priority_least;
    props.stream_priority_greatest = p.stream_priority_greatest;
    dev->props.push_back(std::move(props));
  }
  static bool atfork_registered = [] {
    pthread_atfork(nullptr, nullptr, &on_fork_child);
    return true;
  }();
  (void)atfork_registered;
  g_devices[static_cast<int>(type)].store(dev.release(), std::memory_order_release);  // immortal
  set_allocator(type, caching_allocator(type));
}

void load_device_library(DeviceType type, const std::string& path) {
  // RTLD_LOCAL: two device libraries may export the same entry name.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    SDK_THROW(Value, "load_device_library: cannot load '", path, "': ", err ? err : "unknown dlopen error");
  }
  auto entry = reinterpret_cast<sdk_device_api_entry_fn>(dlsym(handle, SDK_DEVICE_API_ENTRY_NAME));
  SDK_CHECK_VALUE(entry != nullptr, "load_device_library: '", path, "' does not export ", SDK_DEVICE_API_ENTRY_NAME,
                  "() (declare it extern \"C\" with default visibility)");
  const sdk_device_api* api = entry();
  SDK_CHECK_VALUE(api != nullptr, "load_device_library: ", SDK_DEVICE_API_ENTRY_NAME, "() of '", path,
                  "' returned NULL (the device did not start)");
  attach_device(type, api, path);
  // The handle is intentionally never closed (Note [Device attachment]).
}

bool has_device(DeviceType type) { return attached(type) != nullptr; }

void throw_bad_fork(DeviceType type) {
  AttachedDevice* d = attached(type);
  std::string name = device_type_name(type);
  SDK_THROW(Runtime, "Cannot re-initialize ", name, " in forked subprocess: the device backend '", name, "' (",
            d ? d->source : std::string("unknown"),
            ") was initialised in the parent process, and its streams, events, memory and worker threads do not "
            "carry over to a process created by fork(). To use '",
            name, "' with multiprocessing, use the 'spawn' start method (multiprocessing.set_start_method('spawn')).");
}

const sdk_device_api& device_api(DeviceType type) {
  if (SDK_UNLIKELY(in_bad_fork())) throw_bad_fork(type);
  AttachedDevice* d = attached(type);
  SDK_CHECK(d != nullptr, "No device is attached to backend '", device_type_name(type),
            "'. Attach one first (backend_sdk._runtime.attach_device_library, or "
            "sdk::runtime::attach_device from C++).");
  return *d->api;
}

std::string device_source(DeviceType type) {
  AttachedDevice* d = attached(type);
  return d ? d->source : std::string();
}

int device_count(DeviceType type) {
  AttachedDevice* d = attached(type);
  return d ? d->count : 0;
}

void check_device_index(DeviceType type, int index, const char* what) {
  int count = device_count(type);
  if (SDK_UNLIKELY(index < 0 || index >= count)) {
    SDK_CHECK(has_device(type), what, ": no device is attached to backend '", device_type_name(type), "'");
    SDK_THROW(Index, what, ": Invalid device ordinal: device index ", index, " is out of range for backend '",
              device_type_name(type), "', which has ", count, count == 1 ? " device" : " devices");
  }
}

const DeviceProperties& device_properties(DeviceType type, int index) {
  check_device_index(type, index, "get_device_properties");
  return attached(type)->props[index];
}

std::string status_message(DeviceType type, sdk_status status) {
  AttachedDevice* dev = attached(type);
  if (dev == nullptr) return "status " + std::to_string(status) + " (no device attached)";
  const sdk_device_api& api = *dev->api;
  const char* base = api.get_error_string(status);
  std::string msg = base ? base : "unknown error";
  if (api.get_last_error_message) {
    const char* detail = api.get_last_error_message();
    if (detail && *detail) msg += std::string(": ") + detail;
  }
  return msg;
}

// Note [Device status mapping]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
//   OUT_OF_MEMORY                           -> OutOfMemory (backend_sdk.OutOfMemoryError)
//   INVALID_VALUE, INVALID_HANDLE           -> Value
//   INVALID_DEVICE                          -> Index
//   NOT_SUPPORTED                           -> NotImplemented
//   KERNEL_FAULT, DEVICE_LOST, NOT_READY,
//   UNKNOWN and any unknown code            -> Accelerator (backend_sdk.AcceleratorError)
// NOT_READY is only an error where the caller did not expect it (queries
// handle it themselves).
void check_status(DeviceType type, sdk_status status, const char* what) {
  if (status == SDK_SUCCESS) return;
  std::string msg = sdk::detail::str(what, ": ", device_type_name(type), " device error: ", status_message(type, status));
  switch (status) {
    case SDK_ERROR_OUT_OF_MEMORY:
      throw Error(ErrorKind::OutOfMemory, msg);
    case SDK_ERROR_INVALID_VALUE:
    case SDK_ERROR_INVALID_HANDLE:
      throw Error(ErrorKind::Value, msg);
    case SDK_ERROR_INVALID_DEVICE:
      throw Error(ErrorKind::Index, msg);
    case SDK_ERROR_NOT_SUPPORTED:
      throw Error(ErrorKind::NotImplemented, msg);
    default:
      throw Error(ErrorKind::Accelerator, msg);
  }
}

}  // namespace sdk::runtime
