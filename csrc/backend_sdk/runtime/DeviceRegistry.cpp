#include <backend_sdk/runtime/DeviceRegistry.h>

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include <cstring>

#include <backend_sdk/core/Allocator.h>
#include <backend_sdk/core/Exception.h>
#include <backend_sdk/core/ScalarType.h>
#include <backend_sdk/runtime/CachingAllocator.h>
#include <backend_sdk/runtime/DeviceGraphExtension.h>
#include <backend_sdk/runtime/DeviceStatsExtension.h>
#include <backend_sdk/runtime/DeviceTraceExtension.h>
#include <backend_sdk/runtime/detail/DeviceCollectives.h>
#include <backend_sdk/runtime/detail/DeviceApiV1.h>

namespace sdk::runtime {
using detail::sdk_device_api_v1;

// Note [Fork safety].
std::atomic<bool> g_bad_fork{false};

namespace {

struct AttachedExtension {
  std::string name;
  uint32_t version;
  const sdk_device_extension_base* ext;
};

struct AttachedDevice {
  const sdk_device_api* api = nullptr;  // as the device handed it over (identity)
  void* raw_context = nullptr;
  DeviceApi normalized;
  std::string source;
  int count = 0;
  std::vector<DeviceProperties> props;
  std::vector<AttachedExtension> extensions;
  AttachedDevice(const sdk_device_api& table, void* context, uint32_t major, uint32_t minor)
      : normalized(table, context, major, minor) {}
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

// ---- defaults of the OPTIONAL slots (documented in runtime/DeviceApi.h) ----
sdk_status default_mem_get_info(void*, int32_t, size_t*, size_t*) { return SDK_ERROR_NOT_SUPPORTED; }
const char* default_get_last_error_message(void*) { return ""; }
sdk_status default_can_access_peer(void*, int32_t device, int32_t peer, int32_t* can_access) {
  if (can_access == nullptr) return SDK_ERROR_INVALID_VALUE;
  *can_access = device == peer ? 1 : 0;
  return SDK_SUCCESS;
}

// Fills every NULL OPTIONAL slot with its default; the names of NULL REQUIRED slots.
std::vector<const char*> fill_defaults(sdk_device_api& t) {
  std::vector<const char*> missing;
  // The presence token is pasted, not evaluated: only OPTIONAL slots name a default_ function.
#define SDK_SLOT_ON_NULL_SDK_SLOT_REQUIRED(name) missing.push_back(#name);
#define SDK_SLOT_ON_NULL_SDK_SLOT_OPTIONAL(name) t.name = &default_##name;
#define SDK_SLOT_DEFAULT_(name, ret, params, presence, minor) \
  if (t.name == nullptr) {                                    \
    SDK_SLOT_ON_NULL_##presence(name)                         \
  }
  SDK_DEVICE_API_SLOTS(SDK_SLOT_DEFAULT_)
#undef SDK_SLOT_DEFAULT_
#undef SDK_SLOT_ON_NULL_SDK_SLOT_REQUIRED
#undef SDK_SLOT_ON_NULL_SDK_SLOT_OPTIONAL
  return missing;
}

// Note [Device API v1 adapter]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A version-1 device has no context and its slots lack the context argument.
// The loader gives it a version-2 table of adapters whose context is the v1
// struct itself: adapter `malloc(ctx, args...)` calls
// `((const sdk_device_api_v1*)ctx)->malloc(args...)`. Slots whose signature
// changed in v2 are adapted by hand: launch_host_func has no release callback
// in v1, so a host function dropped by a v1 device leaks its user_data (as
// it always did). v1's supported_dtypes bits follow the C++ ScalarType order
// of its time (detail::kDeviceApiV1DtypeBits). v1 devices have no extensions.
template <class Fn>
struct V1Adapter;
template <class R, class... A>
struct V1Adapter<R (*)(void*, A...)> {
  template <R (*sdk_device_api_v1::*Slot)(A...)>
  static R call(void* ctx, A... args) {
    return (static_cast<const sdk_device_api_v1*>(ctx)->*Slot)(args...);
  }
};
sdk_status v1_launch_host_func(void* ctx, sdk_stream_t stream, sdk_host_fn fn, sdk_host_fn /*release*/,
                               void* user_data) {
  return static_cast<const sdk_device_api_v1*>(ctx)->launch_host_func(stream, fn, user_data);
}

sdk_device_api adapt_v1(const sdk_device_api_v1* v1) {
  sdk_device_api t{};
  t.struct_size = sizeof(sdk_device_api);
  t.major_version = SDK_DEVICE_API_MAJOR;
  t.minor_version = SDK_DEVICE_API_MINOR;
#define SDK_V1_ADAPT_(name, ret, params) \
  if (v1->name != nullptr) t.name = &V1Adapter<decltype(t.name)>::call<&sdk_device_api_v1::name>;
#define SDK_V1_ADAPT_SLOTS_(X)                                                                                     \
  X(device_count, , ) X(get_device_properties, , ) X(get_device, , ) X(set_device, , ) X(mem_get_info, , )         \
  X(malloc, , ) X(free, , ) X(host_malloc, , ) X(host_free, , ) X(memcpy, , ) X(memcpy_async, , )                 \
  X(memset_async, , ) X(stream_create, , ) X(stream_destroy, , ) X(stream_query, , ) X(stream_synchronize, , )    \
  X(stream_wait_event, , ) X(event_create, , ) X(event_destroy, , ) X(event_record, , ) X(event_query, , )       \
  X(event_synchronize, , ) X(event_elapsed_time, , ) X(device_synchronize, , ) X(get_error_string, , )           \
  X(get_last_error_message, , )
  SDK_V1_ADAPT_SLOTS_(SDK_V1_ADAPT_)
#undef SDK_V1_ADAPT_SLOTS_
#undef SDK_V1_ADAPT_
  if (v1->launch_host_func != nullptr) t.launch_host_func = &v1_launch_host_func;
  return t;
}

uint64_t map_dtype_bits(uint64_t device_bits, uint32_t major) {
  // ScalarType order -> SDK_DTYPE_* number (Note [Device dtype numbers]).
  static constexpr int kV2Numbers[kNumScalarTypes] = {
      SDK_DTYPE_BOOL,    SDK_DTYPE_UINT8,   SDK_DTYPE_INT8,    SDK_DTYPE_INT16, SDK_DTYPE_INT32,
      SDK_DTYPE_INT64,   SDK_DTYPE_FLOAT16, SDK_DTYPE_BFLOAT16, SDK_DTYPE_FLOAT32, SDK_DTYPE_FLOAT64};
  static_assert(static_cast<int>(ScalarType::Bool) == 0 && static_cast<int>(ScalarType::Float64) == 9 &&
                    kNumScalarTypes == 10,
                "a new ScalarType needs its SDK_DTYPE_* number here and in DeviceApi.h");
  if (major == detail::kDeviceApiV1Major) {
    // v1 bit i: the dtype detail::kDeviceApiV1DtypeBits[i]; rewritten as SDK_DTYPE_* bits first.
    uint64_t v2_bits = device_bits == ~uint64_t(0) ? ~uint64_t(0) : 0;
    for (size_t i = 0; i < sizeof(detail::kDeviceApiV1DtypeBits) / sizeof(int); ++i)
      if ((device_bits >> i) & 1u) v2_bits |= uint64_t(1) << detail::kDeviceApiV1DtypeBits[i];
    device_bits = v2_bits;
  }
  uint64_t out = 0;
  for (int st = 0; st < kNumScalarTypes; ++st)
    if ((device_bits >> kV2Numbers[st]) & 1u) out |= uint64_t(1) << st;
  return out;
}

// Note [Device API extensions]: walks and checks the chain at attach time.
std::vector<AttachedExtension> validate_extension_chain(const sdk_device_extension_base* first,
                                                        const std::string& source) {
  std::vector<AttachedExtension> out;
  std::vector<const sdk_device_extension_base*> seen;
  int position = 0;
  for (const sdk_device_extension_base* e = first; e != nullptr; e = e->next, ++position) {
    SDK_CHECK_VALUE(position < SDK_DEVICE_MAX_EXTENSIONS, "attach_device: the extension chain of '", source,
                    "' has more than ", SDK_DEVICE_MAX_EXTENSIONS, " extensions (malformed chain)");
    for (const auto* s : seen) {
      SDK_CHECK_VALUE(s != e, "attach_device: the extension chain of '", source, "' has a cycle: extension #",
                      position, " is an extension seen before ('", (e->name ? e->name : "?"), "')");
    }
    seen.push_back(e);
    SDK_CHECK_VALUE(e->struct_size >= sizeof(sdk_device_extension_base), "attach_device: extension #", position,
                    " of '", source, "' declares struct_size ", e->struct_size, ", smaller than the ",
                    sizeof(sdk_device_extension_base), " bytes of sdk_device_extension_base (malformed chain)");
    size_t len = e->name ? strnlen(e->name, SDK_DEVICE_EXTENSION_NAME_MAX) : 0;
    SDK_CHECK_VALUE(len > 0 && len < SDK_DEVICE_EXTENSION_NAME_MAX, "attach_device: extension #", position, " of '",
                    source, "' has a NULL, empty or over-long name (malformed chain)");
    std::string name(e->name, len);
    for (const auto& x : out) {
      SDK_CHECK_VALUE(x.name != name, "attach_device: '", source, "' lists the extension '", name,
                      "' twice (malformed chain)");
    }
    SDK_CHECK_VALUE(e->version >= 1, "attach_device: extension '", name, "' of '", source,
                    "' declares version 0 (versions start at 1)");
    if (name == SDK_TRACE_EXTENSION_NAME) {
      auto* t = reinterpret_cast<const sdk_trace_extension*>(e);
      SDK_CHECK_VALUE(e->struct_size >= SDK_TRACE_EXTENSION_SIZE_1, "attach_device: extension '", name, "' of '",
                      source, "' declares struct_size ", e->struct_size, ", smaller than the ",
                      SDK_TRACE_EXTENSION_SIZE_1, " bytes of its version 1");
      SDK_CHECK_VALUE(t->start && t->stop && t->collect, "attach_device: extension '", name, "' of '", source,
                      "' leaves start, stop or collect NULL");
      if (e->version >= 2) {  // Note [Device trace extension]: version 2
        SDK_CHECK_VALUE(e->struct_size >= SDK_TRACE_EXTENSION_SIZE_2, "attach_device: extension '", name, "' of '",
                        source, "' declares version ", e->version, " but struct_size ", e->struct_size,
                        ", smaller than the ", SDK_TRACE_EXTENSION_SIZE_2, " bytes of its version 2");
        SDK_CHECK_VALUE(t->set_correlation_id && t->collect_correlated, "attach_device: extension '", name,
                        "' of '", source, "' declares version ", e->version,
                        " but leaves set_correlation_id or collect_correlated NULL");
      }
    }
    if (name == SDK_GRAPH_EXTENSION_NAME) {  // Note [Device graph extension]
      auto* g = reinterpret_cast<const sdk_graph_extension*>(e);
      SDK_CHECK_VALUE(e->struct_size >= SDK_GRAPH_EXTENSION_SIZE_1, "attach_device: extension '", name, "' of '",
                      source, "' declares struct_size ", e->struct_size, ", smaller than the ",
                      SDK_GRAPH_EXTENSION_SIZE_1, " bytes of its version 1");
      SDK_CHECK_VALUE(g->capture_begin && g->capture_end && g->instantiate && g->launch && g->destroy &&
                          g->is_capturing,
                      "attach_device: extension '", name, "' of '", source, "' leaves one of its functions NULL");
    }
    if (name == SDK_COLLECTIVES_EXTENSION_NAME) detail::validate_collectives_extension(e, source);  // issue 21
    if (name == SDK_STATS_EXTENSION_NAME) {  // Note [Device stats extension]
      auto* st = reinterpret_cast<const sdk_stats_extension*>(e);
      SDK_CHECK_VALUE(e->struct_size >= SDK_STATS_EXTENSION_SIZE_1, "attach_device: extension '", name, "' of '",
                      source, "' declares struct_size ", e->struct_size, ", smaller than the ",
                      SDK_STATS_EXTENSION_SIZE_1, " bytes of its version 1");
      SDK_CHECK_VALUE(st->query != nullptr, "attach_device: extension '", name, "' of '", source,
                      "' leaves query NULL");
    }
    out.push_back({std::move(name), e->version, e});
  }
  return out;
}

// A slot that appeared in `slot_minor` exists in a struct of `minor` (a function: no
// "always true" warning for the slots of minor 0).
bool slot_known_in(uint32_t slot_minor, uint32_t minor) { return slot_minor <= minor; }

std::string version_string(uint32_t major, uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace

void attach_device(DeviceType type, const sdk_device_api* api, void* context, const std::string& source) {
  SDK_CHECK_VALUE(is_privateuse(type), "attach_device: a device can only be attached to a PrivateUse backend, not '",
                  device_type_name(type), "'");
  SDK_CHECK_VALUE(api != nullptr, "attach_device: the device API of '", source, "' is NULL (the device did not start)");
  std::lock_guard<std::mutex> lock(attach_mutex());
  if (AttachedDevice* existing = attached(type)) {
    if (existing->api == api && existing->raw_context == context) return;
    SDK_THROW(Value, "attach_device: backend '", device_type_name(type), "' already has a device attached (",
              existing->source, "); a backend's device can be attached once per process");
  }
  // Note [Device API versioning]: refuse what we cannot call safely. Offsets
  // 0..15 mean the same in every major (v1: struct_size, api_version, 0).
  const uint32_t major = api->major_version;
  const uint32_t minor = major == detail::kDeviceApiV1Major ? 0 : api->minor_version;
  SDK_CHECK_VALUE(major == detail::kDeviceApiV1Major || major == SDK_DEVICE_API_MAJOR, "attach_device: '", source,
                  "' implements device API version ", version_string(major, api->minor_version),
                  ", but this SDK (device API ", version_string(SDK_DEVICE_API_MAJOR, SDK_DEVICE_API_MINOR),
                  ") supports major versions 1 and ", SDK_DEVICE_API_MAJOR, " (any minor of major ",
                  SDK_DEVICE_API_MAJOR, "); rebuild the device against this SDK's runtime/DeviceApi.h");
  sdk_device_api table{};
  std::vector<AttachedExtension> extensions;
  void* call_context = context;
  if (major == detail::kDeviceApiV1Major) {
    auto* v1 = reinterpret_cast<const sdk_device_api_v1*>(api);
    SDK_CHECK_VALUE(v1->struct_size >= detail::kDeviceApiV1Size, "attach_device: '", source,
                    "' declares device API version 1 with struct_size ", v1->struct_size, ", smaller than the ",
                    detail::kDeviceApiV1Size, " bytes of version 1: it was built against a different header");
    table = adapt_v1(v1);
    call_context = const_cast<sdk_device_api_v1*>(v1);  // Note [Device API v1 adapter]
  } else {
    const uint32_t known = minor < SDK_DEVICE_API_MINOR ? minor : SDK_DEVICE_API_MINOR;
    const size_t need = device_api_size_of_minor(known);
    SDK_CHECK_VALUE(api->struct_size >= need, "attach_device: '", source, "' declares device API version ",
                    version_string(major, minor), " with struct_size ", api->struct_size, ", smaller than the ", need,
                    " bytes of version ", version_string(major, known),
                    " in this SDK: it was built against a different header");
    table.struct_size = sizeof(sdk_device_api);
    table.major_version = SDK_DEVICE_API_MAJOR;
    table.minor_version = SDK_DEVICE_API_MINOR;
    // Slots of minors the device knows are read; later ones (and any slot a
    // newer minor appended beyond ours) are not touched.
#define SDK_SLOT_COPY_(name, ret, params, presence, slot_minor) \
  if (slot_known_in(slot_minor, minor)) table.name = api->name;
    SDK_DEVICE_API_SLOTS(SDK_SLOT_COPY_)
#undef SDK_SLOT_COPY_
    extensions = validate_extension_chain(api->extension_start, source);
  }
  auto missing = fill_defaults(table);
  if (!missing.empty()) {
    std::string names;
    for (const char* n : missing) names += (names.empty() ? "" : ", ") + std::string(n);
    SDK_THROW(Value, "attach_device: '", source, "' leaves required device API slots NULL: ", names);
  }

  auto dev = std::make_unique<AttachedDevice>(table, call_context, major, minor);
  dev->api = api;
  dev->raw_context = context;
  dev->source = source;
  dev->extensions = std::move(extensions);
  const DeviceApi& d = dev->normalized;
  int32_t count = 0;
  sdk_status s = d.device_count(&count);
  SDK_CHECK(s == SDK_SUCCESS, "attach_device: device_count of '", source, "' failed: ", d.get_error_string(s));
  SDK_CHECK_VALUE(count >= 0 && count <= kMaxDevicesPerType, "attach_device: '", source, "' reports ", count,
                  " devices; the SDK supports 0 to ", kMaxDevicesPerType);
  dev->count = count;
  for (int i = 0; i < count; ++i) {
    sdk_device_properties p{};
    p.struct_size = sizeof(p);
    s = d.get_device_properties(i, &p);
    SDK_CHECK(s == SDK_SUCCESS, "attach_device: get_device_properties(", i, ") of '", source,
              "' failed: ", d.get_error_string(s));
    p.name[SDK_DEVICE_NAME_MAX - 1] = '\0';
    DeviceProperties props;
    props.name = p.name;
    props.total_memory = p.total_memory;
    props.supported_dtypes = map_dtype_bits(p.supported_dtypes, major);
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
  // The handle is intentionally never closed (Note [Device attachment]).
  if (auto entry = reinterpret_cast<sdk_device_entry_fn>(dlsym(handle, SDK_DEVICE_ENTRY_NAME))) {
    sdk_device_instance inst{};
    inst.struct_size = sizeof(inst);
    inst.sdk_major_version = SDK_DEVICE_API_MAJOR;
    inst.sdk_minor_version = SDK_DEVICE_API_MINOR;
    sdk_status s = entry(&inst);
    SDK_CHECK_VALUE(s == SDK_SUCCESS && inst.api != nullptr, "load_device_library: ", SDK_DEVICE_ENTRY_NAME,
                    "() of '", path, "' failed with status ", s, " (the device did not start)");
    attach_device(type, inst.api, inst.context, path);
    return;
  }
  using V1Entry = const sdk_device_api* (*)();
  auto v1_entry = reinterpret_cast<V1Entry>(dlsym(handle, detail::kDeviceApiV1EntryName));
  SDK_CHECK_VALUE(v1_entry != nullptr, "load_device_library: '", path, "' does not export ", SDK_DEVICE_ENTRY_NAME,
                  "() (version 2) or ", detail::kDeviceApiV1EntryName,
                  "() (version 1) (declare it extern \"C\" with default visibility)");
  const sdk_device_api* api = v1_entry();
  SDK_CHECK_VALUE(api != nullptr, "load_device_library: ", detail::kDeviceApiV1EntryName, "() of '", path,
                  "' returned NULL (the device did not start)");
  SDK_CHECK_VALUE(api->major_version == detail::kDeviceApiV1Major, "load_device_library: '", path, "' exports ",
                  detail::kDeviceApiV1EntryName, "() (the version-1 entry) but its struct declares version ",
                  version_string(api->major_version, api->minor_version), "; a version-2 device exports ",
                  SDK_DEVICE_ENTRY_NAME, "()");
  attach_device(type, api, nullptr, path);
}

const sdk_device_extension_base* find_device_extension(DeviceType type, const char* name) {
  AttachedDevice* d = attached(type);
  if (d == nullptr || name == nullptr) return nullptr;
  for (const auto& e : d->extensions)
    if (e.name == name) return e.ext;
  return nullptr;
}

std::vector<std::pair<std::string, uint32_t>> device_extensions(DeviceType type) {
  std::vector<std::pair<std::string, uint32_t>> out;
  if (AttachedDevice* d = attached(type))
    for (const auto& e : d->extensions) out.emplace_back(e.name, e.version);
  return out;
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

const DeviceApi& device_api(DeviceType type) {
  if (SDK_UNLIKELY(in_bad_fork())) throw_bad_fork(type);
  AttachedDevice* d = attached(type);
  SDK_CHECK(d != nullptr, "No device is attached to backend '", device_type_name(type),
            "'. Attach one first (backend_sdk._runtime.attach_device_library, or "
            "sdk::runtime::attach_device from C++).");
  return d->normalized;
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
  const DeviceApi& api = dev->normalized;
  const char* base = api.get_error_string(status);
  std::string msg = base ? base : "unknown error";
  const char* detail = api.get_last_error_message();  // "" by default
  if (detail && *detail) msg += std::string(": ") + detail;
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
