/* The device runtime contract: the C ABI a device implements.
 *
 * Note [Device API versioning]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A device is one `sdk_device_api` struct of function pointers. It begins with
 * `struct_size` (sizeof the struct the device was compiled against) and
 * `api_version`; fields are only ever appended, never reordered or removed, and
 * the layout of version 1 is frozen by static_asserts (DeviceApiLayout.cpp).
 * The SDK refuses a struct whose version is newer than its own or whose size
 * is smaller than the size of the version it claims. A slot documented as
 * OPTIONAL may be NULL; the SDK then uses the default written next to it.
 *
 * The header is plain C (C99 and C++), with no SDK types, so a device may be
 * written in any language that can export a C function. Nothing crosses it but
 * status codes: an implementation must never let a C++ exception, a longjmp or
 * a signal escape a call.
 *
 * Conventions for every slot:
 *  - Devices are numbered 0 .. count-1 (int32_t). Device pointers are unique
 *    across all devices of one implementation (unified addressing), so a copy
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
 */
#ifndef SDK_RUNTIME_DEVICE_API_H_
#define SDK_RUNTIME_DEVICE_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SDK_DEVICE_API_VERSION 1u
/* The name of the function a device library exports:
 *   const sdk_device_api* sdk_device_api_entry(void);
 * It returns a pointer to a struct with static storage duration (the SDK never
 * frees it), or NULL if the device cannot start (no hardware). */
#define SDK_DEVICE_API_ENTRY_NAME "sdk_device_api_entry"

/* Status codes. A plain int32_t (not an enum) so that the type's size never
 * depends on the compiler. Codes are only ever added. */
typedef int32_t sdk_status;
#define SDK_SUCCESS 0
#define SDK_ERROR_INVALID_VALUE 1    /* bad argument: size, pointer, direction, flags */
#define SDK_ERROR_OUT_OF_MEMORY 2    /* allocation failed: the device (or host) is full */
#define SDK_ERROR_INVALID_DEVICE 3   /* device index out of range */
#define SDK_ERROR_INVALID_HANDLE 4   /* stream or event handle not valid */
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

/* Opaque handles, defined by the implementation. */
typedef struct sdk_stream_st* sdk_stream_t;
typedef struct sdk_event_st* sdk_event_t;

/* A host function run on a stream, in order with the stream's other work.
 * It must not call back into the device API for the same stream's
 * synchronisation (it would wait for itself). */
typedef void (*sdk_host_fn)(void* user_data);

#define SDK_DEVICE_NAME_MAX 256

typedef struct sdk_device_properties {
  /* Set by the caller to sizeof(sdk_device_properties) before the call; the
   * implementation fills at most that many bytes (fields are only appended). */
  size_t struct_size;
  char name[SDK_DEVICE_NAME_MAX]; /* NUL-terminated, e.g. "device_sim" */
  uint64_t total_memory;          /* bytes of device memory */
  /* Bit i set: the dtype numbered i in the SDK's ScalarType enumeration
   * (csrc/backend_sdk/core/ScalarType.h) is supported. All ones: every dtype. */
  uint64_t supported_dtypes;
  /* Stream priorities: lower numbers are higher priority (as in CUDA). Valid
   * priorities are greatest <= p <= least; out-of-range values are clamped. */
  int32_t stream_priority_least;    /* normal priority, normally 0 */
  int32_t stream_priority_greatest; /* highest priority, e.g. -1 */
} sdk_device_properties;

typedef struct sdk_device_api {
  size_t struct_size;   /* sizeof(sdk_device_api) as compiled by the device */
  uint32_t api_version; /* SDK_DEVICE_API_VERSION the device implements */
  uint32_t reserved0;   /* 0 */

  /* ---- version 1 ---- */

  /* Number of devices (>= 0). */
  sdk_status (*device_count)(int32_t* count);
  /* Fills *props (see sdk_device_properties.struct_size). */
  sdk_status (*get_device_properties)(int32_t device, sdk_device_properties* props);
  /* The calling thread's current device (default 0). The SDK keeps its own
   * current device per thread and calls set_device when it changes, so that
   * vendor code that relies on the device's notion agrees. */
  sdk_status (*get_device)(int32_t* device);
  sdk_status (*set_device)(int32_t device);
  /* Free and total bytes of a device. OPTIONAL: NULL means unknown (the
   * SDK then reports the total from the properties and free as unknown). */
  sdk_status (*mem_get_info)(int32_t device, size_t* free_bytes, size_t* total_bytes);

  /* Device memory. malloc of 0 bytes returns SDK_SUCCESS and *ptr = NULL.
   * The returned pointer is owned by the caller until free; free(NULL) is a
   * no-op; freeing a pointer that is not a live allocation of `device` (double
   * free, foreign pointer) returns SDK_ERROR_INVALID_VALUE and changes nothing.
   * free does not wait for streams: the SDK frees only memory whose work is
   * done (the caching allocator tracks it with events). */
  sdk_status (*malloc)(int32_t device, void** ptr, size_t nbytes);
  sdk_status (*free)(int32_t device, void* ptr);
  /* Pinned (page-locked) host memory, usable as the host side of async
   * copies; readable and writable by the host. Same ownership rules. */
  sdk_status (*host_malloc)(void** ptr, size_t nbytes);
  sdk_status (*host_free)(void* ptr);

  /* Synchronous copy: waits for all work queued on the devices involved,
   * then copies, then returns. `kind` must match the pointers
   * (SDK_ERROR_INVALID_VALUE otherwise). */
  sdk_status (*memcpy)(void* dst, const void* src, size_t nbytes, sdk_memcpy_kind kind);
  /* Asynchronous copy, in order on `stream`. The host side must stay valid
   * until the copy has run (the caller synchronizes or records an event). */
  sdk_status (*memcpy_async)(void* dst, const void* src, size_t nbytes, sdk_memcpy_kind kind,
                             sdk_stream_t stream);
  /* Asynchronous memset of device memory to the byte `value`. */
  sdk_status (*memset_async)(void* dst, int32_t value, size_t nbytes, sdk_stream_t stream);

  /* Streams. priority: see sdk_device_properties (clamped). A stream is
   * created on `device`; work on it runs in order. destroy waits for nothing:
   * queued work still runs, then the stream's resources are released. */
  sdk_status (*stream_create)(int32_t device, int32_t priority, sdk_stream_t* stream);
  sdk_status (*stream_destroy)(sdk_stream_t stream);
  /* SDK_SUCCESS if all work queued so far has completed, SDK_ERROR_NOT_READY if not. */
  sdk_status (*stream_query)(sdk_stream_t stream);
  /* Waits until all work queued so far has completed. */
  sdk_status (*stream_synchronize)(sdk_stream_t stream);
  /* Work queued on `stream` after this call waits until the most recent
   * record of `event` (at the time of this call) has completed. The event may
   * belong to another device. An event never recorded: no wait. */
  sdk_status (*stream_wait_event)(sdk_stream_t stream, sdk_event_t event);

  /* Events. flags: SDK_EVENT_* bits. An event belongs to `device`; recording
   * it on a stream of another device returns SDK_ERROR_INVALID_VALUE. */
  sdk_status (*event_create)(int32_t device, uint32_t flags, sdk_event_t* event);
  /* Releases the event; a record still queued completes harmlessly. */
  sdk_status (*event_destroy)(sdk_event_t event);
  /* Captures the work queued on `stream` so far; re-recording replaces the capture. */
  sdk_status (*event_record)(sdk_event_t event, sdk_stream_t stream);
  /* SDK_SUCCESS if the captured work has completed (or the event was never
   * recorded), SDK_ERROR_NOT_READY if not. */
  sdk_status (*event_query)(sdk_event_t event);
  sdk_status (*event_synchronize)(sdk_event_t event);
  /* Milliseconds between the completion of `start` and of `end`. Both must
   * have SDK_EVENT_TIMING and have been recorded (SDK_ERROR_INVALID_VALUE
   * otherwise); SDK_ERROR_NOT_READY if either has not completed yet. */
  sdk_status (*event_elapsed_time)(float* milliseconds, sdk_event_t start, sdk_event_t end);

  /* Runs fn(user_data) on the stream, in order. user_data is owned by the
   * caller and must stay valid until fn has run. */
  sdk_status (*launch_host_func)(sdk_stream_t stream, sdk_host_fn fn, void* user_data);
  /* Waits for all work on every stream of `device`. */
  sdk_status (*device_synchronize)(int32_t device);

  /* A static, human-readable name for a status ("out of memory"). Never NULL. */
  const char* (*get_error_string)(sdk_status status);
  /* A detailed message for the last failing call on the calling thread
   * ("free: 0x7f.. is not a live allocation of device 0"), valid until the
   * next call on this thread. OPTIONAL: NULL means only get_error_string. */
  const char* (*get_last_error_message)(void);

  /* ---- version 2 and later append here ---- */
} sdk_device_api;

/* The entry function type a device library exports as SDK_DEVICE_API_ENTRY_NAME. */
typedef const sdk_device_api* (*sdk_device_api_entry_fn)(void);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* SDK_RUNTIME_DEVICE_API_H_ */
