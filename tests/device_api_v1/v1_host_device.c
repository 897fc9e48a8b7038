/* A version-1 device, compiled against the frozen v1 header (tests/device_api_v1/backend_sdk/runtime/
 * DeviceApi.h, exactly as vendors built devices before version 2): host memory, synchronous streams,
 * events with timestamps. tests/test_device_contract_v2.py loads it into the version-2 SDK and runs
 * tensors on it. Plain C99. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <backend_sdk/runtime/DeviceApi.h>

#if SDK_DEVICE_API_VERSION != 1
#error "this device must be built against the frozen version-1 header"
#endif

#define NDEV 2
static int32_t t_current = 0;
static int64_t g_calls = 0; /* every slot counts itself: the test checks the adapter reached them */

typedef struct { int device; } stream_t;
typedef struct { int device; uint32_t flags; int recorded; double ms; } event_t;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static sdk_status device_count(int32_t* n) { ++g_calls; if (!n) return SDK_ERROR_INVALID_VALUE; *n = NDEV; return SDK_SUCCESS; }
static sdk_status get_device_properties(int32_t d, sdk_device_properties* p) {
  ++g_calls;
  if (d < 0 || d >= NDEV) return SDK_ERROR_INVALID_DEVICE;
  size_t keep = p->struct_size;
  memset(p, 0, keep < sizeof(*p) ? keep : sizeof(*p));
  p->struct_size = keep;
  strcpy(p->name, "v1_host_device");
  p->total_memory = 64u << 20;
  /* v1 numbered bits by the ScalarType order of its time: Bool = 0, Float32 = 8. */
  p->supported_dtypes = (1u << 0) | (1u << 8);
  p->stream_priority_least = 0;
  p->stream_priority_greatest = 0;
  return SDK_SUCCESS;
}
static sdk_status get_device(int32_t* d) { ++g_calls; *d = t_current; return SDK_SUCCESS; }
static sdk_status set_device(int32_t d) { ++g_calls; if (d < 0 || d >= NDEV) return SDK_ERROR_INVALID_DEVICE; t_current = d; return SDK_SUCCESS; }
static sdk_status dmalloc(int32_t d, void** p, size_t n) {
  ++g_calls;
  if (d < 0 || d >= NDEV) return SDK_ERROR_INVALID_DEVICE;
  if (n == 0) { *p = NULL; return SDK_SUCCESS; }
  *p = aligned_alloc(64, (n + 63) / 64 * 64);
  return *p ? SDK_SUCCESS : SDK_ERROR_OUT_OF_MEMORY;
}
static sdk_status dfree(int32_t d, void* p) { ++g_calls; (void)d; free(p); return SDK_SUCCESS; }
static sdk_status host_malloc(void** p, size_t n) { return dmalloc(0, p, n); }
static sdk_status host_free(void* p) { return dfree(0, p); }
static sdk_status dmemcpy(void* dst, const void* src, size_t n, sdk_memcpy_kind k) {
  ++g_calls;
  if (k < 0 || k > 3) return SDK_ERROR_INVALID_VALUE;
  if (n) memmove(dst, src, n);
  return SDK_SUCCESS;
}
static sdk_status memcpy_async(void* dst, const void* src, size_t n, sdk_memcpy_kind k, sdk_stream_t s) {
  if (!s) return SDK_ERROR_INVALID_HANDLE;
  return dmemcpy(dst, src, n, k);
}
static sdk_status memset_async(void* dst, int32_t v, size_t n, sdk_stream_t s) {
  ++g_calls;
  if (!s) return SDK_ERROR_INVALID_HANDLE;
  if (n) memset(dst, v, n);
  return SDK_SUCCESS;
}
static sdk_status stream_create(int32_t d, int32_t prio, sdk_stream_t* out) {
  ++g_calls;
  (void)prio;
  stream_t* s = (stream_t*)malloc(sizeof(stream_t));
  if (!s) return SDK_ERROR_OUT_OF_MEMORY;
  s->device = d;
  *out = (sdk_stream_t)s;
  return SDK_SUCCESS;
}
static sdk_status stream_destroy(sdk_stream_t s) { ++g_calls; free(s); return SDK_SUCCESS; }
static sdk_status stream_ok(sdk_stream_t s) { ++g_calls; return s ? SDK_SUCCESS : SDK_ERROR_INVALID_HANDLE; }
static sdk_status stream_wait_event(sdk_stream_t s, sdk_event_t e) { ++g_calls; return s && e ? SDK_SUCCESS : SDK_ERROR_INVALID_HANDLE; }
static sdk_status event_create(int32_t d, uint32_t flags, sdk_event_t* out) {
  ++g_calls;
  event_t* e = (event_t*)calloc(1, sizeof(event_t));
  if (!e) return SDK_ERROR_OUT_OF_MEMORY;
  e->device = d;
  e->flags = flags;
  *out = (sdk_event_t)e;
  return SDK_SUCCESS;
}
static sdk_status event_destroy(sdk_event_t e) { ++g_calls; free(e); return SDK_SUCCESS; }
static sdk_status event_record(sdk_event_t e, sdk_stream_t s) {
  ++g_calls;
  if (!e || !s) return SDK_ERROR_INVALID_HANDLE;
  ((event_t*)e)->recorded = 1;
  ((event_t*)e)->ms = now_ms();
  return SDK_SUCCESS;
}
static sdk_status event_ok(sdk_event_t e) { ++g_calls; return e ? SDK_SUCCESS : SDK_ERROR_INVALID_HANDLE; }
static sdk_status event_elapsed_time(float* ms, sdk_event_t a, sdk_event_t b) {
  ++g_calls;
  if (!((event_t*)a)->recorded || !((event_t*)b)->recorded) return SDK_ERROR_INVALID_VALUE;
  *ms = (float)(((event_t*)b)->ms - ((event_t*)a)->ms);
  return SDK_SUCCESS;
}
static sdk_status launch_host_func(sdk_stream_t s, sdk_host_fn fn, void* user) {
  ++g_calls;
  if (!s) return SDK_ERROR_INVALID_HANDLE;
  fn(user);
  return SDK_SUCCESS;
}
static sdk_status device_synchronize(int32_t d) { ++g_calls; return d >= 0 && d < NDEV ? SDK_SUCCESS : SDK_ERROR_INVALID_DEVICE; }
static const char* get_error_string(sdk_status s) { return s == SDK_SUCCESS ? "success" : "v1_host_device error"; }

static const sdk_device_api kApi = {
    sizeof(sdk_device_api), SDK_DEVICE_API_VERSION, 0,
    device_count, get_device_properties, get_device, set_device, NULL /* mem_get_info: optional */,
    dmalloc, dfree, host_malloc, host_free, dmemcpy, memcpy_async, memset_async,
    stream_create, stream_destroy, stream_ok, stream_ok, stream_wait_event,
    event_create, event_destroy, event_record, event_ok, event_ok, event_elapsed_time,
    launch_host_func, device_synchronize, get_error_string, NULL /* get_last_error_message: optional */,
};

__attribute__((visibility("default"))) const sdk_device_api* sdk_device_api_entry(void) { return &kApi; }
__attribute__((visibility("default"))) int64_t v1_device_calls(void) { return g_calls; }
