// The __NAME__ device: the device runtime contract (runtime/DeviceApi.h) the SDK builds everything
// on (memory, copies, streams, events; the SDK adds guards, the caching allocator, the device module).
//
// Until the hardware exists every entry delegates to the simulator (device_sim), which behaves
// like a device: separate memory, asynchronous streams, finite capacity. Bring-up replaces each
// body marked "REAL DRIVER CALL GOES HERE" with the driver's call and its status mapping; the
// comments in runtime/DeviceApi.h say what each entry must do.
#include "device_sim.hpp"
#include <backend_sdk/runtime/DeviceApi.h>
#include <backend_sdk/runtime/DeviceCollectivesExtension.h>

namespace {

// Note [Device context] (runtime/DeviceApi.h): the SDK passes the context sdk_device_entry returns to
// every slot. Until the hardware exists it is the simulator's (device_sim::contract(), device_sim.hpp),
// and every slot forwards to the simulator's table; a real driver keeps its per-instance state there.
#define SIM(ctx, slot, ...) device_sim::contract().api->slot(ctx, __VA_ARGS__)

// ---- devices ----
sdk_status dev_device_count(void* ctx, int32_t* count) { return SIM(ctx, device_count, count); }  // REAL DRIVER CALL GOES HERE
sdk_status dev_get_device_properties(void* ctx, int32_t device, sdk_device_properties* props) {
  // REAL DRIVER CALL GOES HERE (name, memory, supported_dtypes as SDK_DTYPE_BIT(SDK_DTYPE_FLOAT32) | ...)
  return SIM(ctx, get_device_properties, device, props);
}
sdk_status dev_get_device(void* ctx, int32_t* device) { return SIM(ctx, get_device, device); }  // REAL DRIVER CALL GOES HERE
sdk_status dev_set_device(void* ctx, int32_t device) { return SIM(ctx, set_device, device); }   // REAL DRIVER CALL GOES HERE
sdk_status dev_mem_get_info(void* ctx, int32_t device, size_t* free_bytes, size_t* total_bytes) {
  return SIM(ctx, mem_get_info, device, free_bytes, total_bytes);  // REAL DRIVER CALL GOES HERE (OPTIONAL slot)
}
sdk_status dev_device_synchronize(void* ctx, int32_t device) { return SIM(ctx, device_synchronize, device); }  // REAL DRIVER CALL GOES HERE
sdk_status dev_can_access_peer(void* ctx, int32_t device, int32_t peer, int32_t* can_access) {
  return SIM(ctx, can_access_peer, device, peer, can_access);  // REAL DRIVER CALL GOES HERE (OPTIONAL slot)
}
const char* dev_get_error_string(void* ctx, sdk_status status) { return SIM(ctx, get_error_string, status); }  // REAL DRIVER CALL GOES HERE
const char* dev_get_last_error_message(void* ctx) {  // OPTIONAL slot: detailed text of the last failure
  return device_sim::contract().api->get_last_error_message(ctx);  // REAL DRIVER CALL GOES HERE
}

// ---- memory ----
sdk_status dev_malloc(void* ctx, int32_t device, void** ptr, size_t nbytes) { return SIM(ctx, malloc, device, ptr, nbytes); }  // REAL DRIVER CALL GOES HERE
sdk_status dev_free(void* ctx, int32_t device, void* ptr) { return SIM(ctx, free, device, ptr); }  // REAL DRIVER CALL GOES HERE
sdk_status dev_host_malloc(void* ctx, void** ptr, size_t nbytes) { return SIM(ctx, host_malloc, ptr, nbytes); }  // REAL DRIVER CALL GOES HERE (pinned)
sdk_status dev_host_free(void* ctx, void* ptr) { return SIM(ctx, host_free, ptr); }  // REAL DRIVER CALL GOES HERE
sdk_status dev_memcpy(void* ctx, void* dst, const void* src, size_t nbytes, sdk_memcpy_kind kind) {
  return SIM(ctx, memcpy, dst, src, nbytes, kind);  // REAL DRIVER CALL GOES HERE
}
sdk_status dev_memcpy_async(void* ctx, void* dst, const void* src, size_t nbytes, sdk_memcpy_kind kind,
                            sdk_stream_t stream) {
  return SIM(ctx, memcpy_async, dst, src, nbytes, kind, stream);  // REAL DRIVER CALL GOES HERE
}
sdk_status dev_memset_async(void* ctx, void* dst, int32_t value, size_t nbytes, sdk_stream_t stream) {
  return SIM(ctx, memset_async, dst, value, nbytes, stream);  // REAL DRIVER CALL GOES HERE
}

// ---- streams ----
sdk_status dev_stream_create(void* ctx, int32_t device, int32_t priority, sdk_stream_t* stream) {
  return SIM(ctx, stream_create, device, priority, stream);  // REAL DRIVER CALL GOES HERE
}
sdk_status dev_stream_destroy(void* ctx, sdk_stream_t stream) { return SIM(ctx, stream_destroy, stream); }  // REAL DRIVER CALL GOES HERE
sdk_status dev_stream_query(void* ctx, sdk_stream_t stream) { return SIM(ctx, stream_query, stream); }  // REAL DRIVER CALL GOES HERE
sdk_status dev_stream_synchronize(void* ctx, sdk_stream_t stream) { return SIM(ctx, stream_synchronize, stream); }  // REAL DRIVER CALL GOES HERE
sdk_status dev_stream_wait_event(void* ctx, sdk_stream_t stream, sdk_event_t event) {
  return SIM(ctx, stream_wait_event, stream, event);  // REAL DRIVER CALL GOES HERE
}
// On success exactly one of fn and release runs (release when the work is dropped, e.g. device lost).
sdk_status dev_launch_host_func(void* ctx, sdk_stream_t stream, sdk_host_fn fn, sdk_host_fn release, void* user_data) {
  return SIM(ctx, launch_host_func, stream, fn, release, user_data);  // REAL DRIVER CALL GOES HERE
}

// ---- events ----
sdk_status dev_event_create(void* ctx, int32_t device, uint32_t flags, sdk_event_t* event) {
  return SIM(ctx, event_create, device, flags, event);  // REAL DRIVER CALL GOES HERE
}
sdk_status dev_event_destroy(void* ctx, sdk_event_t event) { return SIM(ctx, event_destroy, event); }  // REAL DRIVER CALL GOES HERE
sdk_status dev_event_record(void* ctx, sdk_event_t event, sdk_stream_t stream) { return SIM(ctx, event_record, event, stream); }  // REAL DRIVER CALL GOES HERE
sdk_status dev_event_query(void* ctx, sdk_event_t event) { return SIM(ctx, event_query, event); }  // REAL DRIVER CALL GOES HERE
sdk_status dev_event_synchronize(void* ctx, sdk_event_t event) { return SIM(ctx, event_synchronize, event); }  // REAL DRIVER CALL GOES HERE
sdk_status dev_event_elapsed_time(void* ctx, float* ms, sdk_event_t start, sdk_event_t end) {
  return SIM(ctx, event_elapsed_time, ms, start, end);  // REAL DRIVER CALL GOES HERE
}

// ---- collectives: the optional "sdk.collectives" extension (runtime/DeviceCollectivesExtension.h) ----
// Your collective library (your NCCL) plugs in here: communicators from a unique id, then all_reduce,
// all_gather, reduce_scatter, broadcast, send and recv enqueued on a stream. With it, backend_sdk.distributed
// gets the process-group backend "__NAME__:<backend_name>" with no Python code. Until then every call
// delegates to the simulator's simccl, found in its extension chain. Delete the extension (and its link in
// kApi) if the device has no collectives: the SDK then stages device tensors through host memory.
#define CCL(ctx, fn, ...) device_sim::collectives()->fn(ctx, __VA_ARGS__)
sdk_status ccl_get_unique_id(void* ctx, sdk_ccl_unique_id* id) { return CCL(ctx, get_unique_id, id); }  // REAL LIBRARY CALL GOES HERE
sdk_status ccl_comm_init_rank(void* ctx, sdk_ccl_comm_t* comm, int32_t device, const sdk_ccl_unique_id* id, int32_t nranks,
                              int32_t rank, const sdk_ccl_fabric* fabric) {
  // REAL LIBRARY CALL GOES HERE (a library with its own interconnect ignores the SDK's fabric)
  return CCL(ctx, comm_init_rank, comm, device, id, nranks, rank, fabric);
}
sdk_status ccl_comm_destroy(void* ctx, sdk_ccl_comm_t comm) { return CCL(ctx, comm_destroy, comm); }  // REAL LIBRARY CALL GOES HERE
sdk_status ccl_all_reduce(void* ctx, const void* send, void* recv, size_t count, int32_t dtype, sdk_ccl_op op,
                          sdk_ccl_comm_t comm, sdk_stream_t stream) {
  return CCL(ctx, all_reduce, send, recv, count, dtype, op, comm, stream);  // REAL LIBRARY CALL GOES HERE
}
sdk_status ccl_all_gather(void* ctx, const void* send, void* recv, size_t count, int32_t dtype, sdk_ccl_comm_t comm,
                          sdk_stream_t stream) {
  return CCL(ctx, all_gather, send, recv, count, dtype, comm, stream);  // REAL LIBRARY CALL GOES HERE
}
sdk_status ccl_reduce_scatter(void* ctx, const void* send, void* recv, size_t count, int32_t dtype, sdk_ccl_op op,
                              sdk_ccl_comm_t comm, sdk_stream_t stream) {
  return CCL(ctx, reduce_scatter, send, recv, count, dtype, op, comm, stream);  // REAL LIBRARY CALL GOES HERE
}
sdk_status ccl_broadcast(void* ctx, const void* send, void* recv, size_t count, int32_t dtype, int32_t root,
                         sdk_ccl_comm_t comm, sdk_stream_t stream) {
  return CCL(ctx, broadcast, send, recv, count, dtype, root, comm, stream);  // REAL LIBRARY CALL GOES HERE
}
sdk_status ccl_send(void* ctx, const void* buf, size_t count, int32_t dtype, int32_t peer, sdk_ccl_comm_t comm,
                    sdk_stream_t stream) {
  return CCL(ctx, send, buf, count, dtype, peer, comm, stream);  // REAL LIBRARY CALL GOES HERE
}
sdk_status ccl_recv(void* ctx, void* buf, size_t count, int32_t dtype, int32_t peer, sdk_ccl_comm_t comm,
                    sdk_stream_t stream) {
  return CCL(ctx, recv, buf, count, dtype, peer, comm, stream);  // REAL LIBRARY CALL GOES HERE
}

// The extension struct: size and version first, the backend's name, then the functions (only ever appended).
const sdk_collectives_extension kCollectives = {
    {sizeof(sdk_collectives_extension), SDK_COLLECTIVES_EXTENSION_NAME, SDK_COLLECTIVES_EXTENSION_VERSION, 0, nullptr},
    "__NAME__ccl",  // the process-group backend: "__NAME__:__NAME__ccl"
    &ccl_get_unique_id, &ccl_comm_init_rank, &ccl_comm_destroy, &ccl_all_reduce, &ccl_all_gather,
    &ccl_reduce_scatter, &ccl_broadcast, &ccl_send, &ccl_recv,
};

// The table: the header, then every slot as dev_<slot>, from the contract's slot list (SDK_DEVICE_API_SLOTS,
// which the struct's fields follow). When the SDK adds a slot (a new minor, always OPTIONAL) this stops
// compiling until you write dev_<slot> (runtime/DeviceApi.h says what it must do).
const sdk_device_api kApi = {
    sizeof(sdk_device_api), SDK_DEVICE_API_MAJOR, SDK_DEVICE_API_MINOR,
    &kCollectives.base,  // optional features (Note [Device API extensions]): collectives
#define SET_SLOT(name, ret, params, presence, minor) &dev_##name,
    SDK_DEVICE_API_SLOTS(SET_SLOT)
#undef SET_SLOT
};

}  // namespace

// What backend_sdk.utils.register_backend(..., device=LIBRARY_PATH) looks up in this library (Note [Device context]).
extern "C" __attribute__((visibility("default"))) sdk_status sdk_device_entry(sdk_device_instance* instance) {
  if (instance == nullptr) return SDK_ERROR_INVALID_VALUE;
  instance->api = &kApi;
  instance->context = device_sim::contract().context;  // REAL DRIVER CALL GOES HERE (your own state)
  return SDK_SUCCESS;
}
