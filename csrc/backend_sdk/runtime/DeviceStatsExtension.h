/* The "sdk.stats" device extension: the device's own activity counters, what
 * torch.cuda.utilization() / memory_usage() read from NVML (Note [Device API
 * extensions] in runtime/DeviceApi.h); the SDK's face is runtime/DeviceStats.h,
 * Python's <backend>.utilization() / <backend>.memory_usage().
 *
 * Note [Device stats extension]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * query(ctx, device, &stats) fills an sdk_device_stats for one device of the
 * backend with figures over the device's most recent sample period (a window
 * the device chooses, like NVML's 1/6 s .. 1 s, reported in sample_period_ns;
 * shorter while the device is younger than its window):
 *  - kernel_percent: percent of that period during which one or more kernels
 *    was executing on the device (NVML's "gpu" utilization); concurrent
 *    kernels on several streams count once, not once per stream;
 *  - memory_percent: percent of that period during which device memory was
 *    being read or written by copies and memsets (NVML's "memory"
 *    utilization; a device that can attribute kernel memory traffic may count
 *    it too and says so in its documentation).
 * Both are integers 0..100 (rounded down).
 *
 * Sizes: the caller sets stats->struct_size to the sizeof it compiled (at
 * least SDK_DEVICE_STATS_SIZE_1) and zeroes the rest; the device writes only
 * fields that end within both its own and the caller's struct, so a newer
 * device and an older SDK (or the reverse) agree on the common prefix. Fields
 * are only ever appended (bump SDK_STATS_EXTENSION_VERSION and add a SIZE
 * macro for the new struct).
 *
 * Ownership: `stats` is the caller's; the device keeps no pointer to it. The
 * query is thread-safe and cheap (no device synchronisation: it does not wait
 * for queued work), and may be called while the device runs work. An index
 * out of range returns SDK_ERROR_INVALID_DEVICE, a NULL or too small `stats`
 * SDK_ERROR_INVALID_VALUE; a lost device still answers (figures of the work
 * it ran).
 *
 * Version 1: query (required).
 */
#ifndef SDK_RUNTIME_DEVICE_STATS_EXTENSION_H_
#define SDK_RUNTIME_DEVICE_STATS_EXTENSION_H_

#include <backend_sdk/runtime/DeviceApi.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SDK_STATS_EXTENSION_NAME "sdk.stats"
#define SDK_STATS_EXTENSION_VERSION 1u

typedef struct sdk_device_stats {
  size_t struct_size;        /* set by the caller: sizeof the struct it compiled */
  uint64_t sample_period_ns; /* length of the window the percentages cover */
  uint32_t kernel_percent;   /* 0..100: one or more kernels executing */
  uint32_t memory_percent;   /* 0..100: device memory read or written */
} sdk_device_stats;

#define SDK_DEVICE_STATS_SIZE_1 (offsetof(sdk_device_stats, memory_percent) + sizeof(uint32_t))

typedef struct sdk_stats_extension {
  sdk_device_extension_base base; /* name SDK_STATS_EXTENSION_NAME */
  sdk_status (*query)(void* context, int32_t device, sdk_device_stats* stats);
} sdk_stats_extension;

#define SDK_STATS_EXTENSION_SIZE_1 (offsetof(sdk_stats_extension, query) + sizeof(void*))

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* SDK_RUNTIME_DEVICE_STATS_EXTENSION_H_ */
