/* The device runtime contract: the C ABI a device implements (version 2).
 *
 * Note [Device API versioning]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A device is one `sdk_device_api` struct of function pointers plus an
 * opaque `void* context` (Note [Device context]). The struct begins with a
 * fixed header that every version keeps:
 *
 *   struct_size      sizeof(sdk_device_api) as compiled by the device
 *   major_version    SDK_DEVICE_API_MAJOR the device was built against
 *   minor_version    SDK_DEVICE_API_MINOR the device was built against
 *   extension_start  first optional extension (Note [Device API extensions])
 *
 * Versions are major.minor, as PJRT's PJRT_Api_Version:
 *  - a MINOR version only appends slots at the end (never reorders, removes
 *    or retypes one). A device built for a newer minor of the SDK's major is
 *    accepted: the SDK reads the slots it knows and ignores the rest. A device
 *    built for an older minor is accepted too: every slot added after its
 *    minor is OPTIONAL and gets the default documented next to it. Slots
 *    added in a minor > 0 must be OPTIONAL (a static_assert in
 *    DeviceApiLayout.cpp enforces it).
 *  - a MAJOR version may change anything; the SDK refuses a major it does not
 *    know, naming the device library, its version and the supported majors.
 *    Major 1 (the struct before the context handle, frozen in
 *    runtime/detail/DeviceApiV1.h) is still loaded: the loader adapts it
 *    (DeviceRegistry.cpp, Note [Device API v1 adapter]).
 *  - struct_size must cover every slot of the minor the device declares (as
 *    far as the SDK knows that minor): a smaller struct was built against a
 *    different header and is refused.
 *
 * The slot list is ONE X-macro, SDK_DEVICE_API_SLOTS(X) below. Everything
 * that lists slots is generated from it: the struct, its layout asserts and
 * the sizes of each minor (DeviceApiLayout.cpp), the loader's required/NULL
 * checks and defaults (DeviceRegistry.cpp), the C++ call wrapper
 * (sdk::runtime::DeviceApi), the Python device's ctypes trampolines
 * (backend_sdk._C._runtime._device_api_slots(), utils/python_device.py), the
 * simulator's table (device_sim/csrc/SimApi.cpp) and the tests that call the
 * raw slots. To add a slot: append an X(...) line with the next minor, mark it
 * SDK_SLOT_OPTIONAL, document its default here, implement it as
 * default_<slot> in DeviceRegistry.cpp, bump SDK_DEVICE_API_MINOR, add the
 * minor's SDK_DEVICE_API_LAST_SLOT_2_<m> and SDK_DEVICE_API_SIZE_2_<m> and
 * point SDK_DEVICE_API_LAST_SLOT at it (DeviceApiLayout.cpp checks them all).
 *
 * The header is plain C (C99 and C++), with no SDK types, so a device may be
 * written in any language that can export a C function. Nothing crosses it but
 * status codes: an implementation must never let a C++ exception, a longjmp or
 * a signal escape a call.
 *
 * Conventions for every slot:
 *  - The first argument is the device's `context` (Note [Device context]).
 *  - Devices are numbered 0 .. count-1 (int32_t). Device pointers are unique
 *    across all devices of one instance (unified addressing), so a copy
 *    between two devices needs no device argument.
 *  - Out-parameters are written only on SDK_SUCCESS.
 *  - Calls are thread-safe: the SDK calls from any thread, concurrently.
 *  - A stream or event handle is owned by the SDK from *_create until it
 *    passes it to *_destroy; the implementation owns what it points to.
 *  - Asynchronous errors (a kernel that faulted on a worker) are reported by
 *    the next synchronising call on that device (stream/event/device
 *    synchronize, a synchronous copy); that call returns the error's status
 *    (SDK_ERROR_KERNEL_FAULT) and get_last_error_message names the kernel and
 *    stream. Where the hardware allows, returning the error clears it and the
 *    device is usable again. A device that is gone returns
 *    SDK_ERROR_DEVICE_LOST from every call on it until it is reset by the
 *    vendor's own means; free and *_destroy should still succeed so the SDK
 *    can release what it holds. The SDK maps statuses to errors in one place
 *    (Note [Device status mapping], DeviceRegistry.cpp).
 *
 * Note [Device context]
 * ~~~~~~~~~~~~~~~~~~~~~
 * The entry point (SDK_DEVICE_ENTRY_NAME) returns the api table and a
 * `void* context`; the SDK passes that context, unchanged, as the first
 * argument of every slot and of every extension function. One library can so
 * serve several device instances (several backends, or one table shared by
 * many devices written in Python) with one static table. Ownership: the
 * context belongs to the device library. The SDK never frees, dereferences
 * or compares it other than for identity, and keeps using it (from any
 * thread, including device worker threads) until the process exits: a device
 * is never detached (Note [Device attachment]). The context may be NULL.
 */
#ifndef SDK_RUNTIME_DEVICE_API_H_
#define SDK_RUNTIME_DEVICE_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SDK_DEVICE_API_MAJOR 2u
#define SDK_DEVICE_API_MINOR 1u

/* The name of the function a version-2 device library exports:
 *   sdk_status sdk_device_entry(sdk_device_instance* instance);
 * The SDK sets instance->struct_size and the sdk_*_version fields; the
 * device fills `api` (a struct with static storage duration: never freed)
 * and `context` (Note [Device context]) and returns SDK_SUCCESS, or a status
 * (and no api) if it cannot start. A library exporting only the version-1
 * name "sdk_device_api_entry" is loaded as a version-1 device. */
#define SDK_DEVICE_ENTRY_NAME "sdk_device_entry"

/* Status codes. A plain int32_t (not an enum) so that the type's size never
 * depends on the compiler. Codes are only ever added. */
typedef int32_t sdk_status;
#define SDK_SUCCESS 0
#define SDK_ERROR_INVALID_VALUE 1    /* bad argument: size, pointer, direction, flags */
#define SDK_ERROR_OUT_OF_MEMORY 2    /* allocation failed: the device (or host) is full */
#define SDK_ERROR_INVALID_DEVICE 3   /* device index out of range */
#define SDK_ERROR_INVALID_HANDLE 4   /* stream, event or context handle not valid */
#define SDK_ERROR_NOT_READY 5        /* query: work still pending (not an error) */
#define SDK_ERROR_NOT_SUPPORTED 6    /* the device does not implement the request */
#define SDK_ERROR_KERNEL_FAULT 7     /* a kernel or copy faulted on the device */
#define SDK_ERROR_DEVICE_LOST 8      /* the device is gone until reset */
#define SDK_ERROR_UNKNOWN 9

/* Direction of a copy. */
typedef int32_t sdk_memcpy_kind;
#define SDK_MEMCPY_HOST_TO_HOST 0
#define SDK_MEMCPY_HOST_TO_DEVICE 1
#define SDK_MEMCPY_DEVICE_TO_HOST 2
#define SDK_MEMCPY_DEVICE_TO_DEVICE 3

/* Event flags (bit mask). */
#define SDK_EVENT_DEFAULT 0u
#define SDK_EVENT_TIMING 1u   /* the event records a timestamp: elapsed_time works */
#define SDK_EVENT_BLOCKING 2u /* event_synchronize sleeps instead of spinning */

/* Note [Device dtype numbers]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * The dtypes of sdk_device_properties.supported_dtypes: bit SDK_DTYPE_X set
 * means the device supports X. The numbers are fixed forever (they are
 * PyTorch's c10::ScalarType numbers, themselves frozen by PyTorch's stable
 * ABI) and independent of the SDK's C++ ScalarType order; the loader maps
 * them to ScalarType (DeviceRegistry.cpp). Numbers are only ever added; a
 * bit the SDK does not know is ignored. All ones: every dtype. */
#define SDK_DTYPE_UINT8 0
#define SDK_DTYPE_INT8 1
#define SDK_DTYPE_INT16 2
#define SDK_DTYPE_INT32 3
#define SDK_DTYPE_INT64 4
#define SDK_DTYPE_FLOAT16 5
#define SDK_DTYPE_FLOAT32 6
#define SDK_DTYPE_FLOAT64 7
#define SDK_DTYPE_BOOL 11
#define SDK_DTYPE_BFLOAT16 15
#define SDK_DTYPE_BIT(d) (UINT64_C(1) << (d))
#define SDK_DTYPES_ALL (~UINT64_C(0))

/* Opaque handles, defined by the implementation. */
typedef struct sdk_stream_st* sdk_stream_t;
typedef struct sdk_event_st* sdk_event_t;

/* A host function run on a stream, in order with the stream's other work.
 * It must not call back into the device API for the same stream's
 * synchronisation (it would wait for itself). The same type is used for the
 * release callback of launch_host_func. */
typedef void (*sdk_host_fn)(void* user_data);

#define SDK_DEVICE_NAME_MAX 256

typedef struct sdk_device_properties {
  /* Set by the caller to sizeof(sdk_device_properties) before the call; the
   * implementation fills at most that many bytes (fields are only appended). */
  size_t struct_size;
  char name[SDK_DEVICE_NAME_MAX]; /* NUL-terminated, e.g. "device_sim" */
  uint64_t total_memory;          /* bytes of device memory */
  /* Bit SDK_DTYPE_X set: dtype X is supported (Note [Device dtype numbers]). */
  uint64_t supported_dtypes;
  /* Stream priorities: lower numbers are higher priority (as in CUDA). Valid
   * priorities are greatest <= p <= least; out-of-range values are clamped. */
  int32_t stream_priority_least;    /* normal priority, normally 0 */
  int32_t stream_priority_greatest; /* highest priority, e.g. -1 */
} sdk_device_properties;

/* Note [Device API extensions]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Optional features live outside the slot list, in a singly linked chain of
 * extension structs, as PJRT's `extension_start`. Every extension struct
 * begins with sdk_device_extension_base: its struct_size (sizeof the whole
 * extension struct the device compiled), a unique dotted name ("sdk.trace"),
 * the extension's own version (from 1, bumped when fields are appended) and
 * the next extension (NULL ends the chain). The SDK looks extensions up by
 * name (sdk::runtime::find_device_extension, Python
 * backend_sdk._runtime.device_extensions); names it does not know are
 * ignored. At load the chain is checked and a malformed one refused: a cycle,
 * more than SDK_DEVICE_MAX_EXTENSIONS links, a struct_size smaller than the
 * base, a NULL/empty/over-long name, a name twice, or a known extension whose
 * struct_size is smaller than its version's or whose required functions are
 * NULL. The chain, like the table, is static: never freed, never changed.
 * Every extension function takes the device's context first.
 *
 * Defined extensions (one header each, next to this one):
 *  - "sdk.trace"  (runtime/DeviceTraceExtension.h): timestamped device
 *    records for the profiler (issue 19); device_sim implements it.
 *  - "sdk.graph"  (runtime/DeviceGraphExtension.h): stream capture and
 *    replay (issue 15, Note [Device graph extension]); device_sim
 *    implements it, runtime/Graph.h is the SDK's face.
 *  - "sdk.collectives" (runtime/DeviceCollectivesExtension.h): the device's
 *    collective library on its streams (issue 21, Note [Device collectives
 *    extension]); device_sim implements it as "simccl".
 *  - "sdk.stats"  (runtime/DeviceStatsExtension.h): kernel and memory
 *    activity over a sample period, for <backend>.utilization() and
 *    memory_usage() (Note [Device stats extension]); device_sim implements it.
 * To add one (collectives for issue 21 as "sdk.collectives"): write runtime/Device<Name>Extension.h with a
 * struct beginning with sdk_device_extension_base, a NAME macro, a version
 * macro and the size of each version (offsetof the end of its last field);
 * add its size/required-function check to validate_extension_chain in
 * DeviceRegistry.cpp; give the SDK a C++ wrapper that finds it with
 * find_device_extension and passes the context; implement it in device_sim
 * (link it into the chain in SimApi.cpp). Nothing in this header changes. */
#define SDK_DEVICE_MAX_EXTENSIONS 64
#define SDK_DEVICE_EXTENSION_NAME_MAX 128
typedef struct sdk_device_extension_base {
  size_t struct_size;                            /* sizeof the whole extension struct */
  const char* name;                              /* unique, NUL-terminated: "sdk.trace" */
  uint32_t version;                              /* the extension's version, from 1 */
  uint32_t reserved0;                            /* 0 */
  const struct sdk_device_extension_base* next;  /* NULL ends the chain */
} sdk_device_extension_base;

/* Slot presence, for SDK_DEVICE_API_SLOTS. */
#define SDK_SLOT_REQUIRED 1
#define SDK_SLOT_OPTIONAL 0

/* The slots: X(name, return type, parameters, presence, minor it appeared in).
 * Defaults of OPTIONAL slots (what the SDK does when the slot is NULL or the
 * device's minor predates it) are in the comments.
 *
 * ---- minor 0 ----
 * device_count: number of devices (>= 0).
 * get_device_properties: fills *props (see sdk_device_properties.struct_size).
 * get_device / set_device: the calling thread's current device (default 0).
 *   The SDK keeps its own current device per thread and calls set_device when
 *   it changes, so vendor code that relies on the device's notion agrees.
 * mem_get_info: free and total bytes of a device. OPTIONAL. Default: returns
 *   SDK_ERROR_NOT_SUPPORTED; the SDK then reports the total from the
 *   properties and free as unknown.
 * malloc / free: device memory. malloc of 0 bytes returns SDK_SUCCESS and
 *   *ptr = NULL. The pointer is owned by the caller until free; free(NULL) is
 *   a no-op; freeing a pointer that is not a live allocation of `device`
 *   (double free, foreign pointer) returns SDK_ERROR_INVALID_VALUE and changes
 *   nothing. free does not wait for streams: the SDK frees only memory whose
 *   work is done (the caching allocator tracks it with events).
 * host_malloc / host_free: pinned (page-locked) host memory, usable as the
 *   host side of async copies; readable and writable by the host. Same rules.
 * memcpy: synchronous copy: waits for all work queued on the devices
 *   involved, then copies, then returns. `kind` must match the pointers
 *   (SDK_ERROR_INVALID_VALUE otherwise).
 * memcpy_async: asynchronous copy, in order on `stream`. The host side must
 *   stay valid until the copy has run.
 * memset_async: asynchronous memset of device memory to the byte `value`.
 * stream_create / stream_destroy: priority: see sdk_device_properties
 *   (clamped). Work on a stream runs in order. destroy waits for nothing:
 *   queued work still runs, then the stream's resources are released.
 * stream_query: SDK_SUCCESS if all work queued so far has completed,
 *   SDK_ERROR_NOT_READY if not.
 * stream_synchronize: waits until all work queued so far has completed.
 * stream_wait_event: work queued on `stream` after this call waits until the
 *   most recent record of `event` (at the time of this call) has completed.
 *   The event may belong to another device. An event never recorded: no wait.
 * event_create: flags: SDK_EVENT_* bits. An event belongs to `device`;
 *   recording it on a stream of another device returns INVALID_VALUE.
 * event_destroy: releases the event; a record still queued completes harmlessly.
 * event_record: captures the work queued on `stream` so far; re-recording
 *   replaces the capture.
 * event_query: SDK_SUCCESS if the captured work has completed (or the event
 *   was never recorded), SDK_ERROR_NOT_READY if not.
 * event_synchronize: waits for the captured work.
 * event_elapsed_time: milliseconds between the completion of `start` and of
 *   `end`. Both need SDK_EVENT_TIMING and a record (INVALID_VALUE otherwise);
 *   SDK_ERROR_NOT_READY if either has not completed yet.
 * launch_host_func: runs fn(user_data) on the stream, in order. On
 *   SDK_SUCCESS exactly one of fn and `release` is called, once, on any
 *   thread: fn when the function runs, release (if not NULL) when it never
 *   will (its device was lost and the queue was drained, or the work was
 *   dropped), so user_data owning resources is freed either way. On a
 *   failing status neither is called and user_data stays the caller's.
 * device_synchronize: waits for all work on every stream of `device`.
 * get_error_string: a static, human-readable name for a status ("out of
 *   memory"). Never NULL.
 * get_last_error_message: a detailed message for the last failing call on
 *   the calling thread ("free: 0x7f.. is not a live allocation of device 0"),
 *   valid until the next call on this thread. OPTIONAL. Default: "" (only
 *   get_error_string is shown).
 *
 * ---- minor 1 ----
 * can_access_peer: *can_access = 1 if a kernel running on `device` can read
 *   and write memory of `peer` directly (torch.cuda.can_device_access_peer),
 *   else 0. INVALID_DEVICE for an index out of range. OPTIONAL. Default: 1
 *   when device == peer, 0 otherwise (copies between devices still work:
 *   memcpy of kind DEVICE_TO_DEVICE is part of the contract).
 */
#define SDK_DEVICE_API_SLOTS(X)                                                                                \
  /* ---- minor 0 ---- */                                                                                      \
  X(device_count, sdk_status, (void* context, int32_t* count), SDK_SLOT_REQUIRED, 0)                           \
  X(get_device_properties, sdk_status, (void* context, int32_t device, sdk_device_properties* props),          \
    SDK_SLOT_REQUIRED, 0)                                                                                      \
  X(get_device, sdk_status, (void* context, int32_t* device), SDK_SLOT_REQUIRED, 0)                            \
  X(set_device, sdk_status, (void* context, int32_t device), SDK_SLOT_REQUIRED, 0)                             \
  X(mem_get_info, sdk_status, (void* context, int32_t device, size_t* free_bytes, size_t* total_bytes),        \
    SDK_SLOT_OPTIONAL, 0)                                                                                      \
  X(malloc, sdk_status, (void* context, int32_t device, void** ptr, size_t nbytes), SDK_SLOT_REQUIRED, 0)      \
  X(free, sdk_status, (void* context, int32_t device, void* ptr), SDK_SLOT_REQUIRED, 0)                        \
  X(host_malloc, sdk_status, (void* context, void** ptr, size_t nbytes), SDK_SLOT_REQUIRED, 0)                 \
  X(host_free, sdk_status, (void* context, void* ptr), SDK_SLOT_REQUIRED, 0)                                   \
  X(memcpy, sdk_status, (void* context, void* dst, const void* src, size_t nbytes, sdk_memcpy_kind kind),      \
    SDK_SLOT_REQUIRED, 0)                                                                                      \
  X(memcpy_async, sdk_status,                                                                                  \
    (void* context, void* dst, const void* src, size_t nbytes, sdk_memcpy_kind kind, sdk_stream_t stream),     \
    SDK_SLOT_REQUIRED, 0)                                                                                      \
  X(memset_async, sdk_status, (void* context, void* dst, int32_t value, size_t nbytes, sdk_stream_t stream),   \
    SDK_SLOT_REQUIRED, 0)                                                                                      \
  X(stream_create, sdk_status, (void* context, int32_t device, int32_t priority, sdk_stream_t* stream),        \
    SDK_SLOT_REQUIRED, 0)                                                                                      \
  X(stream_destroy, sdk_status, (void* context, sdk_stream_t stream), SDK_SLOT_REQUIRED, 0)                    \
  X(stream_query, sdk_status, (void* context, sdk_stream_t stream), SDK_SLOT_REQUIRED, 0)                      \
  X(stream_synchronize, sdk_status, (void* context, sdk_stream_t stream), SDK_SLOT_REQUIRED, 0)                \
  X(stream_wait_event, sdk_status, (void* context, sdk_stream_t stream, sdk_event_t event), SDK_SLOT_REQUIRED, \
    0)                                                                                                         \
  X(event_create, sdk_status, (void* context, int32_t device, uint32_t flags, sdk_event_t* event),             \
    SDK_SLOT_REQUIRED, 0)                                                                                      \
  X(event_destroy, sdk_status, (void* context, sdk_event_t event), SDK_SLOT_REQUIRED, 0)                       \
  X(event_record, sdk_status, (void* context, sdk_event_t event, sdk_stream_t stream), SDK_SLOT_REQUIRED, 0)   \
  X(event_query, sdk_status, (void* context, sdk_event_t event), SDK_SLOT_REQUIRED, 0)                         \
  X(event_synchronize, sdk_status, (void* context, sdk_event_t event), SDK_SLOT_REQUIRED, 0)                   \
  X(event_elapsed_time, sdk_status, (void* context, float* milliseconds, sdk_event_t start, sdk_event_t end),  \
    SDK_SLOT_REQUIRED, 0)                                                                                      \
  X(launch_host_func, sdk_status,                                                                              \
    (void* context, sdk_stream_t stream, sdk_host_fn fn, sdk_host_fn release, void* user_data),                \
    SDK_SLOT_REQUIRED, 0)                                                                                      \
  X(device_synchronize, sdk_status, (void* context, int32_t device), SDK_SLOT_REQUIRED, 0)                     \
  X(get_error_string, const char*, (void* context, sdk_status status), SDK_SLOT_REQUIRED, 0)                   \
  X(get_last_error_message, const char*, (void* context), SDK_SLOT_OPTIONAL, 0)                                \
  /* ---- minor 1 ---- */                                                                                      \
  X(can_access_peer, sdk_status, (void* context, int32_t device, int32_t peer, int32_t* can_access),           \
    SDK_SLOT_OPTIONAL, 1)

typedef struct sdk_device_api {
  size_t struct_size;     /* sizeof(sdk_device_api) as compiled by the device */
  uint32_t major_version; /* SDK_DEVICE_API_MAJOR (offset 8: version 1's api_version) */
  uint32_t minor_version; /* SDK_DEVICE_API_MINOR (offset 12: version 1's reserved 0) */
  const sdk_device_extension_base* extension_start; /* NULL: no extensions */
#define SDK_DEVICE_API_FIELD_(name, ret, params, presence, minor) ret(*name) params;
  SDK_DEVICE_API_SLOTS(SDK_DEVICE_API_FIELD_)
#undef SDK_DEVICE_API_FIELD_
} sdk_device_api;

/* The last slot of each minor, and the struct size of each minor: what a
 * device of that minor must at least declare as struct_size. */
#define SDK_DEVICE_API_LAST_SLOT_2_0 get_last_error_message
#define SDK_DEVICE_API_LAST_SLOT_2_1 can_access_peer
#define SDK_DEVICE_API_SIZE_(last) (offsetof(sdk_device_api, last) + sizeof(((sdk_device_api*)0)->last))
#define SDK_DEVICE_API_SIZE_2_0 SDK_DEVICE_API_SIZE_(get_last_error_message)
#define SDK_DEVICE_API_SIZE_2_1 SDK_DEVICE_API_SIZE_(can_access_peer)
#define SDK_DEVICE_API_LAST_SLOT SDK_DEVICE_API_LAST_SLOT_2_1

/* What the entry point fills (Note [Device context]). */
typedef struct sdk_device_instance {
  size_t struct_size;         /* in: sizeof(sdk_device_instance) of the SDK */
  uint32_t sdk_major_version; /* in: the SDK's SDK_DEVICE_API_MAJOR */
  uint32_t sdk_minor_version; /* in: the SDK's SDK_DEVICE_API_MINOR */
  const sdk_device_api* api;  /* out: static table, never freed */
  void* context;              /* out: passed to every slot; owned by the device */
} sdk_device_instance;

/* The entry function type a device library exports as SDK_DEVICE_ENTRY_NAME. */
typedef sdk_status (*sdk_device_entry_fn)(sdk_device_instance* instance);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* SDK_RUNTIME_DEVICE_API_H_ */
