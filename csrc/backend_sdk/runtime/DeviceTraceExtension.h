/* The "sdk.trace" device extension: timestamped records of the work a
 * device ran (kernels, copies, memsets, host functions, event records), per
 * device and stream, for the profiler (Note [Device API extensions] in
 * runtime/DeviceApi.h).
 *
 * Note [Device trace extension]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * start(context, capacity) clears the device's trace buffer and records from
 * then on, keeping at most `capacity` records (the oldest are overwritten and
 * counted as dropped); stop ends recording (what was recorded stays
 * collectable). collect(context, records, capacity, &count, &dropped) moves
 * up to `capacity` of the oldest records into `records` (oldest first) and
 * sets *dropped to the number overwritten since the previous collect; call it
 * until *count < capacity to drain the buffer. Times are nanoseconds of the
 * host's monotonic clock (CLOCK_MONOTONIC, std::chrono::steady_clock on
 * Linux), so the profiler can place device records among host events. The
 * stream of a record is the sdk_stream_t the SDK holds (0: work of no stream,
 * e.g. a synchronous memcpy). All three functions are thread-safe; recording
 * must cost the device nothing measurable while stopped.
 *
 * Version 1: start, stop, collect (all required).
 * Version 2 (appended; both required when a device declares version >= 2):
 *   set_correlation_id(context, id): work the calling thread enqueues from
 *     now on (kernels, copies, memsets, host functions, synchronous copies)
 *     carries `id` (0: none) until the thread sets another. The profiler sets
 *     the id of the operator that is running on the thread, so it can draw
 *     flow arrows from the operator to the device work it launched (Note
 *     [Record function], dispatch/RecordFunction.h). Must be cheap: it is
 *     called twice per operator while a profiler with a device activity runs.
 *   collect_correlated(context, records, correlation_ids, capacity, &count,
 *     &dropped): collect, also writing each record's correlation id to
 *     correlation_ids[i]. The record struct is unchanged, so version 1
 *     devices and the SDK's version 1 callers are unaffected.
 */
#ifndef SDK_RUNTIME_DEVICE_TRACE_EXTENSION_H_
#define SDK_RUNTIME_DEVICE_TRACE_EXTENSION_H_

#include <backend_sdk/runtime/DeviceApi.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SDK_TRACE_EXTENSION_NAME "sdk.trace"
#define SDK_TRACE_EXTENSION_VERSION 2u

/* Kinds of records (fixed numbers; only ever added). */
#define SDK_TRACE_KERNEL 1
#define SDK_TRACE_MEMCPY 2
#define SDK_TRACE_MEMSET 3
#define SDK_TRACE_HOST_FUNC 4
#define SDK_TRACE_EVENT_RECORD 5

#define SDK_TRACE_NAME_MAX 64

typedef struct sdk_trace_record {
  int32_t kind;      /* SDK_TRACE_* */
  int32_t device;    /* device index */
  uint64_t stream;   /* the sdk_stream_t's bits; 0: no stream */
  int64_t start_ns;  /* monotonic clock */
  int64_t end_ns;
  uint64_t bytes;    /* bytes copied or set; 0 for kernels */
  char name[SDK_TRACE_NAME_MAX]; /* NUL-terminated: kernel name, "host-to-device", "memset", ... */
} sdk_trace_record;

typedef struct sdk_trace_extension {
  sdk_device_extension_base base; /* name SDK_TRACE_EXTENSION_NAME */
  sdk_status (*start)(void* context, int64_t capacity);
  sdk_status (*stop)(void* context);
  sdk_status (*collect)(void* context, sdk_trace_record* records, size_t capacity, size_t* count,
                        uint64_t* dropped);
  /* ---- version 2 ---- */
  sdk_status (*set_correlation_id)(void* context, uint64_t id);
  sdk_status (*collect_correlated)(void* context, sdk_trace_record* records, uint64_t* correlation_ids,
                                   size_t capacity, size_t* count, uint64_t* dropped);
} sdk_trace_extension;

#define SDK_TRACE_EXTENSION_SIZE_1 (offsetof(sdk_trace_extension, collect) + sizeof(void*))
#define SDK_TRACE_EXTENSION_SIZE_2 (offsetof(sdk_trace_extension, collect_correlated) + sizeof(void*))

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* SDK_RUNTIME_DEVICE_TRACE_EXTENSION_H_ */
