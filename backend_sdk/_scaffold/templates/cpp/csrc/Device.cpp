// The __NAME__ device: the device runtime contract (runtime/DeviceApi.h) the SDK builds everything
// on (memory, copies, streams, events; the SDK adds guards, the caching allocator, the device module).
//
// Until the hardware exists every entry delegates to the simulator (device_sim), which behaves
// like a device: separate memory, asynchronous streams, finite capacity. Bring-up replaces each
// body marked "REAL DRIVER CALL GOES HERE" with the driver's call and its status mapping; the
// comments in runtime/DeviceApi.h say what each entry must do.
#include <dlfcn.h>

#include <backend_sdk/runtime/DeviceApi.h>

namespace {

// The simulator's contract table (libdevice_sim.so is a dependency of this library, so it is loaded).
const sdk_device_api* sim() {
  static const sdk_device_api* api = [] {
    void* handle = dlopen("libdevice_sim.so", RTLD_NOW | RTLD_NOLOAD);
    auto* entry = handle ? reinterpret_cast<const sdk_device_api* (*)()>(dlsym(handle, SDK_DEVICE_API_ENTRY_NAME))
                         : nullptr;
    return entry ? entry() : nullptr;
  }();
  return api;
}

#define SIM(call) (sim() ? sim()->call : SDK_ERROR_UNKNOWN)

// ---- devices ----
sdk_status device_count(int32_t* count) { return SIM(device_count(count)); }  // REAL DRIVER CALL GOES HERE
sdk_status get_device_properties(int32_t device, sdk_device_properties* props) {
  return SIM(get_device_properties(device, props));  // REAL DRIVER CALL GOES HERE (name, memory, dtypes)
}
sdk_status get_device(int32_t* device) { return SIM(get_device(device)); }  // REAL DRIVER CALL GOES HERE
sdk_status set_device(int32_t device) { return SIM(set_device(device)); }   // REAL DRIVER CALL GOES HERE
sdk_status mem_get_info(int32_t device, size_t* free_bytes, size_t* total_bytes) {
  return SIM(mem_get_info(device, free_bytes, total_bytes));  // REAL DRIVER CALL GOES HERE
}
sdk_status device_synchronize(int32_t device) { return SIM(device_synchronize(device)); }  // REAL DRIVER CALL GOES HERE

// ---- memory ----
sdk_status malloc_(int32_t device, void** ptr, size_t nbytes) { return SIM(malloc(device, ptr, nbytes)); }  // REAL DRIVER CALL GOES HERE
sdk_status free_(int32_t device, void* ptr) { return SIM(free(device, ptr)); }  // REAL DRIVER CALL GOES HERE
sdk_status host_malloc(void** ptr, size_t nbytes) { return SIM(host_malloc(ptr, nbytes)); }  // REAL DRIVER CALL GOES HERE (pinned)
sdk_status host_free(void* ptr) { return SIM(host_free(ptr)); }  // REAL DRIVER CALL GOES HERE
sdk_status memcpy_(void* dst, const void* src, size_t nbytes, sdk_memcpy_kind kind) {
  return SIM(memcpy(dst, src, nbytes, kind));  // REAL DRIVER CALL GOES HERE
}
sdk_status memcpy_async(void* dst, const void* src, size_t nbytes, sdk_memcpy_kind kind, sdk_stream_t stream) {
  return SIM(memcpy_async(dst, src, nbytes, kind, stream));  // REAL DRIVER CALL GOES HERE
}
sdk_status memset_async(void* dst, int32_t value, size_t nbytes, sdk_stream_t stream) {
  return SIM(memset_async(dst, value, nbytes, stream));  // REAL DRIVER CALL GOES HERE
}

// ---- streams ----
sdk_status stream_create(int32_t device, int32_t priority, sdk_stream_t* stream) {
  return SIM(stream_create(device, priority, stream));  // REAL DRIVER CALL GOES HERE
}
sdk_status stream_destroy(sdk_stream_t stream) { return SIM(stream_destroy(stream)); }  // REAL DRIVER CALL GOES HERE
sdk_status stream_query(sdk_stream_t stream) { return SIM(stream_query(stream)); }  // REAL DRIVER CALL GOES HERE
sdk_status stream_synchronize(sdk_stream_t stream) { return SIM(stream_synchronize(stream)); }  // REAL DRIVER CALL GOES HERE
sdk_status stream_wait_event(sdk_stream_t stream, sdk_event_t event) {
  return SIM(stream_wait_event(stream, event));  // REAL DRIVER CALL GOES HERE
}
sdk_status launch_host_func(sdk_stream_t stream, sdk_host_fn fn, void* user_data) {
  return SIM(launch_host_func(stream, fn, user_data));  // REAL DRIVER CALL GOES HERE
}

// ---- events ----
sdk_status event_create(int32_t device, uint32_t flags, sdk_event_t* event) {
  return SIM(event_create(device, flags, event));  // REAL DRIVER CALL GOES HERE
}
sdk_status event_destroy(sdk_event_t event) { return SIM(event_destroy(event)); }  // REAL DRIVER CALL GOES HERE
sdk_status event_record(sdk_event_t event, sdk_stream_t stream) { return SIM(event_record(event, stream)); }  // REAL DRIVER CALL GOES HERE
sdk_status event_query(sdk_event_t event) { return SIM(event_query(event)); }  // REAL DRIVER CALL GOES HERE
sdk_status event_synchronize(sdk_event_t event) { return SIM(event_synchronize(event)); }  // REAL DRIVER CALL GOES HERE
sdk_status event_elapsed_time(float* ms, sdk_event_t start, sdk_event_t end) {
  return SIM(event_elapsed_time(ms, start, end));  // REAL DRIVER CALL GOES HERE
}

const char* get_error_string(sdk_status status) {
  return sim() ? sim()->get_error_string(status) : "__NAME__: the simulator is not loaded";  // REAL DRIVER CALL GOES HERE
}

const char* get_last_error_message() {  // OPTIONAL in the contract: detailed text of the last failure
  return sim() && sim()->get_last_error_message ? sim()->get_last_error_message() : "";  // REAL DRIVER CALL GOES HERE
}

#undef SIM

sdk_device_api make_api() {
  sdk_device_api api{};
  api.struct_size = sizeof(sdk_device_api);
  api.api_version = SDK_DEVICE_API_VERSION;
  api.device_count = &device_count;
  api.get_device_properties = &get_device_properties;
  api.get_device = &get_device;
  api.set_device = &set_device;
  api.mem_get_info = &mem_get_info;
  api.malloc = &malloc_;
  api.free = &free_;
  api.host_malloc = &host_malloc;
  api.host_free = &host_free;
  api.memcpy = &memcpy_;
  api.memcpy_async = &memcpy_async;
  api.memset_async = &memset_async;
  api.stream_create = &stream_create;
  api.stream_destroy = &stream_destroy;
  api.stream_query = &stream_query;
  api.stream_synchronize = &stream_synchronize;
  api.stream_wait_event = &stream_wait_event;
  api.event_create = &event_create;
  api.event_destroy = &event_destroy;
  api.event_record = &event_record;
  api.event_query = &event_query;
  api.event_synchronize = &event_synchronize;
  api.event_elapsed_time = &event_elapsed_time;
  api.launch_host_func = &launch_host_func;
  api.device_synchronize = &device_synchronize;
  api.get_error_string = &get_error_string;
  api.get_last_error_message = &get_last_error_message;
  return api;
}

}  // namespace

// What backend_sdk._runtime.attach_device_library looks up in this library.
extern "C" __attribute__((visibility("default"))) const sdk_device_api* sdk_device_api_entry(void) {
  static const sdk_device_api api = make_api();
  return &api;
}
