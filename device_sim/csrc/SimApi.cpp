// The device runtime contract implemented by the simulator, plus its own C API
// (include/device_sim.h).
#include <dlfcn.h>
#include <pthread.h>
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_set>
#include <thread>
#include <vector>

#include "Handles.h"
#include <backend_sdk/runtime/DeviceGraphExtension.h>
#include "SimCollectives.h"
#include <backend_sdk/runtime/DeviceStatsExtension.h>
#include "SimDevice.h"
#include "device_sim.h"
#include <backend_sdk/runtime/DeviceTraceExtension.h>

namespace device_sim {
// Trace.cpp
void trace_start(size_t capacity);
void trace_stop();
int64_t trace_dropped();
int64_t trace_count();
bool trace_export(const char* path, std::string* why);
size_t trace_collect(sdk_trace_record* out, uint64_t* correlation_ids, size_t capacity, uint64_t* dropped);

namespace {

constexpr int kMaxDevices = 64;
constexpr int kWorkersPerDevice = 2;
constexpr size_t kMaxKernelArgs = 4096;
constexpr int32_t kPriorityLeast = 0;
constexpr int32_t kPriorityGreatest = -1;

struct Config {
  int32_t num_devices = 2;
  int64_t memory_bytes = int64_t(1) << 30;
};

std::mutex g_config_mutex;
Config g_config;
bool g_configured_env = false;
std::once_flag g_init_once;
std::atomic<bool> g_initialized{false};
std::string g_init_error;
// Immortal after initialisation (workers and the fault handler use them until exit).
SimDevice* g_devices[kMaxDevices] = {};
int g_num_devices = 0;

std::mutex g_host_mutex;
std::set<void*>* g_host_blocks = new std::set<void*>();  // live pinned blocks

// Note [device_sim and fork]: set in a child forked after the simulator
// started; its worker threads do not exist there and its memory is shared
// with the parent (MAP_SHARED memfd), so every call is refused.
std::atomic<bool> g_forked_child{false};

thread_local int t_current_device = 0;
thread_local std::string t_last_error;

sdk_status fail(sdk_status s, std::string msg) {
  t_last_error = std::move(msg);
  return s;
}

// DEVICE_SIM_LAUNCH_LATENCY_US and DEVICE_SIM_COPY_BANDWIDTH_GBPS (GB/s = bytes per ns).
void read_timing_env() {
  static bool done = [] {
    if (const char* l = std::getenv("DEVICE_SIM_LAUNCH_LATENCY_US")) {
      double v = std::atof(l);
      if (v > 0) g_timing.launch_latency_ns.store(static_cast<int64_t>(v * 1000.0));
    }
    if (const char* b = std::getenv("DEVICE_SIM_COPY_BANDWIDTH_GBPS")) {
      double v = std::atof(b);
      if (v > 0) g_timing.copy_ns_per_byte.store(1.0 / v);
    }
    return true;
  }();
  (void)done;
}

void read_env_locked() {
  read_timing_env();
  if (g_configured_env) return;
  g_configured_env = true;
  if (const char* n = std::getenv("DEVICE_SIM_NUM_DEVICES")) {
    int v = std::atoi(n);
    if (v >= 1 && v <= kMaxDevices) g_config.num_devices = v;
  }
  if (const char* m = std::getenv("DEVICE_SIM_MEMORY_BYTES")) {
    long long v = std::atoll(m);
    if (v >= (1 << 20)) g_config.memory_bytes = v;
  }
}

void on_fork_child() {
  if (g_initialized.load(std::memory_order_relaxed)) g_forked_child.store(true, std::memory_order_relaxed);
}

bool refuse_forked_child() {
  t_last_error =
      "device_sim was started in the parent process before fork(); its worker threads do not exist in this child "
      "process and its device memory is shared with the parent. Use the simulator only in the parent, or start "
      "child processes with the 'spawn' start method";
  return false;
}

// Starts the simulator on first use; false (and the reason in t_last_error) if it cannot.
bool ensure_initialized() {
  if (__builtin_expect(g_initialized.load(std::memory_order_acquire), 1)) {
    if (__builtin_expect(g_forked_child.load(std::memory_order_relaxed), 0)) return refuse_forked_child();
    return true;
  }
  std::call_once(g_init_once, [] {
    std::lock_guard<std::mutex> lock(g_config_mutex);
    read_env_locked();
    size_t capacity = (static_cast<size_t>(g_config.memory_bytes) + 65535) / 65536 * 65536;
    try {
      pthread_atfork(nullptr, nullptr, &on_fork_child);
      install_fault_handler();
      for (int i = 0; i < g_config.num_devices; ++i) {
        g_devices[i] = new SimDevice(i, capacity, kWorkersPerDevice);
        register_memory_for_faults(&g_devices[i]->memory());
      }
      g_num_devices = g_config.num_devices;
    } catch (const std::exception& e) {
      g_init_error = e.what();
      g_num_devices = 0;
    }
    g_initialized.store(true, std::memory_order_release);
  });
  if (!g_init_error.empty()) {
    t_last_error = "device_sim failed to start: " + g_init_error;
    return false;
  }
  return true;
}

// Note [device_sim context]: the context sdk_device_entry hands out. One
// simulator per process serves every backend it is attached to (its devices
// are process-wide), so the context only identifies it: a slot called with
// another context is refused instead of touching state that is not its own.
struct SimContext {
  uint64_t magic;
};
constexpr uint64_t kContextMagic = 0x64657673696d3031ull;  // "devsim01"
SimContext g_context{kContextMagic};

bool valid_context(const void* ctx) { return ctx == &g_context; }

sdk_status bad_context(const void* ctx) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%p", ctx);
  return fail(SDK_ERROR_INVALID_HANDLE, std::string("device_sim: context ") + buf +
                                            " is not the context sdk_device_entry() returned");
}

#define SIM_ENTER(ctx)                                        \
  do {                                                        \
    if (__builtin_expect(!valid_context(ctx), 0)) return bad_context(ctx); \
    if (!ensure_initialized()) return SDK_ERROR_UNKNOWN;      \
  } while (0)

#define SIM_INIT()                                 \
  do {                                             \
    if (!ensure_initialized()) return SDK_ERROR_UNKNOWN; \
  } while (0)

SimDevice* device_or_null(int32_t d) { return d >= 0 && d < g_num_devices ? g_devices[d] : nullptr; }

sdk_status bad_device(int32_t d) {
  return fail(SDK_ERROR_INVALID_DEVICE,
              "device index " + std::to_string(d) + " is out of range (device_sim has " + std::to_string(g_num_devices) +
                  " devices)");
}

SimDevice* owner_of(const void* p) {
  for (int i = 0; i < g_num_devices; ++i)
    if (g_devices[i]->memory().contains(p)) return g_devices[i];
  return nullptr;
}

// Note [Simulated handles] (Handles.h). Immortal: a call may run during exit.
HandleTable<SimStream>* const g_streams = new HandleTable<SimStream>(0x5354);  // "ST"
HandleTable<SimEvent>* const g_events = new HandleTable<SimEvent>(0x4556);     // "EV"

uint64_t handle_bits(const void* h) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(h)); }
SimStream* as_stream(sdk_stream_t h) { return g_streams->get(handle_bits(h)); }
SimEvent* as_event(sdk_event_t h) { return g_events->get(handle_bits(h)); }

std::string hex(const void* p);

sdk_status bad_stream(const char* what, sdk_stream_t h) {
  return fail(SDK_ERROR_INVALID_HANDLE, std::string(what) + ": " + hex(h) +
                                            " is not a valid stream handle of device_sim (never created by "
                                            "stream_create, or already destroyed)");
}
sdk_status bad_event(const char* what, sdk_event_t h) {
  return fail(SDK_ERROR_INVALID_HANDLE, std::string(what) + ": " + hex(h) +
                                            " is not a valid event handle of device_sim (never created by "
                                            "event_create, or already destroyed)");
}

// Note [Simulated faults] (SimDevice.h).
sdk_status lost_error(const SimDevice* d, const char* what) {
  return fail(SDK_ERROR_DEVICE_LOST, std::string(what) + ": device " + std::to_string(d->index()) +
                                         " was lost (device_sim.inject('device_lost')); every call on it fails until "
                                         "device_sim.reset_device(" +
                                         std::to_string(d->index()) + ")");
}

#define SIM_CHECK_LOST(dev, what)                                       \
  do {                                                                   \
    if (__builtin_expect((dev)->lost(), 0)) return lost_error((dev), (what)); \
  } while (0)

// Returns (and clears) the device's pending asynchronous error, or SDK_SUCCESS.
sdk_status report_async_error(SimDevice* d) {
  if (__builtin_expect(!d->has_async_error(), 1)) return SDK_SUCCESS;
  sdk_status status;
  std::string message;
  if (!d->take_async_error(&status, &message)) return SDK_SUCCESS;
  return fail(status, std::move(message));
}

// Interned kernel names (immortal: trace records and messages point at them).
// A launch names its kernel every time, so a small per-thread cache keyed by
// the caller's pointer (and checked by content: the caller's buffer may be
// reused for another name) skips the lock and the string copy.
const char* intern_name_slow(const char* name);
const char* intern_name(const char* name) {
  if (name == nullptr) return intern_name_slow(name);
  struct Entry {
    const char* key = nullptr;
    const char* interned = nullptr;
  };
  thread_local Entry cache[64];
  Entry& e = cache[(reinterpret_cast<uintptr_t>(name) >> 3) & 63];
  if (e.key == name && std::strncmp(e.interned, name, 200) == 0 && std::strlen(name) <= 200) return e.interned;
  e.interned = intern_name_slow(name);
  e.key = name;
  return e.interned;
}

const char* intern_name_slow(const char* name) {
  static std::mutex m;
  static auto* names = new std::unordered_set<std::string>();
  std::string n(name ? name : "<kernel>");
  if (n.size() > 200) n.resize(200);
  std::lock_guard<std::mutex> lock(m);
  return names->insert(std::move(n)).first->c_str();
}

// The name of an unnamed kernel: its symbol if exported, else its address.
const char* kernel_name_of(device_sim_kernel_fn fn) {
  static std::mutex m;
  static auto* cache = new std::map<void*, const char*>();
  void* key = reinterpret_cast<void*>(fn);
  {
    std::lock_guard<std::mutex> lock(m);
    auto it = cache->find(key);
    if (it != cache->end()) return it->second;
  }
  Dl_info info;
  std::string name;
  if (dladdr(key, &info) != 0 && info.dli_sname != nullptr && info.dli_saddr == key) {
    name = info.dli_sname;
  } else {
    char buf[40];
    std::snprintf(buf, sizeof(buf), "kernel@%p", key);
    name = buf;
  }
  const char* interned = intern_name(name.c_str());
  std::lock_guard<std::mutex> lock(m);
  (*cache)[key] = interned;
  return interned;
}

const char* kind_name(sdk_memcpy_kind k) {
  switch (k) {
    case SDK_MEMCPY_HOST_TO_HOST:
      return "host-to-host";
    case SDK_MEMCPY_HOST_TO_DEVICE:
      return "host-to-device";
    case SDK_MEMCPY_DEVICE_TO_HOST:
      return "device-to-host";
    case SDK_MEMCPY_DEVICE_TO_DEVICE:
      return "device-to-device";
    default:
      return "unknown";
  }
}

std::string hex(const void* p) {
  if (p == nullptr) return "NULL";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%p", p);
  return buf;
}

// Validates one side of a copy and translates it. `device_side` says what
// the kind claims it is.
sdk_status resolve_side(const void* p, size_t n, bool device_side, const char* role, sdk_memcpy_kind kind,
                        SimDevice** dev, const char** out) {
  SimDevice* d = owner_of(p);
  if (device_side) {
    if (d == nullptr) {
      return fail(SDK_ERROR_INVALID_VALUE, std::string("memcpy: the copy is ") + kind_name(kind) + " but " + role +
                                               " " + hex(p) + " is not a device pointer");
    }
    std::string why;
    if (!d->memory().check_range(p, n, &why)) return fail(SDK_ERROR_INVALID_VALUE, "memcpy: " + std::string(role) + ": " + why);
    *out = d->memory().alias(p);
  } else {
    if (d != nullptr) {
      return fail(SDK_ERROR_INVALID_VALUE, std::string("memcpy: the copy is ") + kind_name(kind) + " but " + role +
                                               " " + hex(p) + " is a pointer into device " +
                                               std::to_string(d->index()) + "'s memory");
    }
    if (p == nullptr) return fail(SDK_ERROR_INVALID_VALUE, std::string("memcpy: ") + role + " is NULL");
    *out = static_cast<const char*>(p);
  }
  *dev = d;
  return SDK_SUCCESS;
}

sdk_status prepare_copy(void* dst, const void* src, size_t nbytes, sdk_memcpy_kind kind, char** adst,
                        const char** asrc, SimDevice** ddev, SimDevice** sdev) {
  if (kind < SDK_MEMCPY_HOST_TO_HOST || kind > SDK_MEMCPY_DEVICE_TO_DEVICE)
    return fail(SDK_ERROR_INVALID_VALUE, "memcpy: unknown copy kind " + std::to_string(kind));
  bool dst_dev = kind == SDK_MEMCPY_HOST_TO_DEVICE || kind == SDK_MEMCPY_DEVICE_TO_DEVICE;
  bool src_dev = kind == SDK_MEMCPY_DEVICE_TO_HOST || kind == SDK_MEMCPY_DEVICE_TO_DEVICE;
  const char* d = nullptr;
  sdk_status s = resolve_side(dst, nbytes, dst_dev, "dst", kind, ddev, &d);
  if (s != SDK_SUCCESS) return s;
  s = resolve_side(src, nbytes, src_dev, "src", kind, sdev, asrc);
  if (s != SDK_SUCCESS) return s;
  *adst = const_cast<char*>(d);
  return SDK_SUCCESS;
}

// ---- the contract ----

sdk_status sim_device_count(void* ctx, int32_t* count) {
  SIM_ENTER(ctx);
  if (count == nullptr) return fail(SDK_ERROR_INVALID_VALUE, "device_count: count is NULL");
  *count = g_num_devices;
  return SDK_SUCCESS;
}

sdk_status sim_get_device_properties(void* ctx, int32_t device, sdk_device_properties* props) {
  SIM_ENTER(ctx);
  SimDevice* d = device_or_null(device);
  if (!d) return bad_device(device);
  if (props == nullptr || props->struct_size < sizeof(size_t))
    return fail(SDK_ERROR_INVALID_VALUE, "get_device_properties: props->struct_size is not set");
  sdk_device_properties p;
  std::memset(&p, 0, sizeof(p));
  p.struct_size = sizeof(p);
  std::snprintf(p.name, sizeof(p.name), "device_sim");
  p.total_memory = d->memory().capacity();
  p.supported_dtypes = ~uint64_t(0);
  p.stream_priority_least = kPriorityLeast;
  p.stream_priority_greatest = kPriorityGreatest;
  size_t n = props->struct_size < sizeof(p) ? props->struct_size : sizeof(p);
  size_t caller_size = props->struct_size;
  std::memcpy(props, &p, n);
  props->struct_size = caller_size;
  return SDK_SUCCESS;
}

sdk_status sim_get_device(void* ctx, int32_t* device) {
  SIM_ENTER(ctx);
  if (device == nullptr) return fail(SDK_ERROR_INVALID_VALUE, "get_device: device is NULL");
  *device = t_current_device;
  return SDK_SUCCESS;
}

sdk_status sim_set_device(void* ctx, int32_t device) {
  SIM_ENTER(ctx);
  if (!device_or_null(device)) return bad_device(device);
  t_current_device = device;
  return SDK_SUCCESS;
}

sdk_status sim_mem_get_info(void* ctx, int32_t device, size_t* free_bytes, size_t* total) {
  SIM_ENTER(ctx);
  SimDevice* d = device_or_null(device);
  if (!d) return bad_device(device);
  if (free_bytes == nullptr || total == nullptr)
    return fail(SDK_ERROR_INVALID_VALUE, "mem_get_info: free_bytes or total_bytes is NULL");
  SIM_CHECK_LOST(d, "mem_get_info");
  *free_bytes = d->memory().free_bytes();
  *total = d->memory().capacity();
  return SDK_SUCCESS;
}

sdk_status sim_malloc(void* ctx, int32_t device, void** ptr, size_t nbytes) {
  SIM_ENTER(ctx);
  SimDevice* d = device_or_null(device);
  if (!d) return bad_device(device);
  if (ptr == nullptr) return fail(SDK_ERROR_INVALID_VALUE, "malloc: ptr is NULL");
  SIM_CHECK_LOST(d, "malloc");
  if (nbytes > 0 && d->consume_alloc_failure()) {
    return fail(SDK_ERROR_OUT_OF_MEMORY, "malloc of " + std::to_string(nbytes) + " bytes on device " +
                                             std::to_string(device) +
                                             " failed: injected allocation failure (device_sim.inject('alloc_failure'))");
  }
  std::string why;
  if (!d->memory().allocate(nbytes, ptr, &why)) return fail(SDK_ERROR_OUT_OF_MEMORY, why);
  return SDK_SUCCESS;
}

sdk_status sim_free(void* ctx, int32_t device, void* ptr) {
  SIM_ENTER(ctx);
  SimDevice* d = device_or_null(device);
  if (!d) return bad_device(device);
  if (ptr == nullptr) return SDK_SUCCESS;
  std::string why;
  if (!d->memory().release(ptr, &why)) return fail(SDK_ERROR_INVALID_VALUE, why);
  return SDK_SUCCESS;
}

sdk_status sim_host_malloc(void* ctx, void** ptr, size_t nbytes) {
  SIM_ENTER(ctx);
  if (ptr == nullptr) return fail(SDK_ERROR_INVALID_VALUE, "host_malloc: ptr is NULL");
  if (nbytes == 0) {
    *ptr = nullptr;
    return SDK_SUCCESS;
  }
  void* p = std::aligned_alloc(4096, (nbytes + 4095) / 4096 * 4096);
  if (p == nullptr) return fail(SDK_ERROR_OUT_OF_MEMORY, "host_malloc: cannot allocate " + std::to_string(nbytes) + " bytes");
  std::lock_guard<std::mutex> lock(g_host_mutex);
  g_host_blocks->insert(p);
  *ptr = p;
  return SDK_SUCCESS;
}

sdk_status sim_host_free(void* ctx, void* ptr) {
  SIM_ENTER(ctx);
  if (ptr == nullptr) return SDK_SUCCESS;
  {
    std::lock_guard<std::mutex> lock(g_host_mutex);
    if (g_host_blocks->erase(ptr) == 0)
      return fail(SDK_ERROR_INVALID_VALUE,
                  "host_free: " + hex(ptr) + " is not a live pinned allocation (double free, or a foreign pointer)");
  }
  std::free(ptr);
  return SDK_SUCCESS;
}

sdk_status sim_memcpy(void* ctx, void* dst, const void* src, size_t nbytes, sdk_memcpy_kind kind) {
  SIM_ENTER(ctx);
  char* adst;
  const char* asrc;
  SimDevice *ddev = nullptr, *sdev = nullptr;
  sdk_status s = prepare_copy(dst, src, nbytes, kind, &adst, &asrc, &ddev, &sdev);
  if (s != SDK_SUCCESS) return s;
  if (ddev) SIM_CHECK_LOST(ddev, "memcpy");
  if (sdev) SIM_CHECK_LOST(sdev, "memcpy");
  if (ddev) ddev->synchronize();
  if (sdev && sdev != ddev) sdev->synchronize();
  // Note [Simulated faults]: a synchronous copy reports pending faults and then does not copy.
  if (ddev && (s = report_async_error(ddev)) != SDK_SUCCESS) return s;
  if (sdev && sdev != ddev && (s = report_async_error(sdev)) != SDK_SUCCESS) return s;
  int64_t start = now_ns();
  // Note [Simulated activity]: a synchronous copy reads or writes the memory of each device it touches.
  ActivityScope dst_activity(ddev ? &ddev->memory_activity() : nullptr, start);
  ActivityScope src_activity(sdev && sdev != ddev ? &sdev->memory_activity() : nullptr, start);
  std::memmove(adst, asrc, nbytes);
  if (ddev || sdev) {
    double per_byte = g_timing.copy_ns_per_byte.load(std::memory_order_relaxed);
    if (per_byte > 0) pad_until(start, static_cast<int64_t>(per_byte * static_cast<double>(nbytes)));
    if (g_trace_on.load(std::memory_order_relaxed)) {
      trace_add(copy_kind_name(kind), "memcpy", (sdev ? sdev : ddev)->index(), 0, nullptr, start, now_ns(), nbytes,
                t_trace_correlation);
    }
  }
  return SDK_SUCCESS;
}

sdk_status sim_memcpy_async(void* ctx, void* dst, const void* src, size_t nbytes, sdk_memcpy_kind kind, sdk_stream_t stream) {
  SIM_ENTER(ctx);
  SimStream* st = as_stream(stream);
  if (!st) return bad_stream("memcpy_async", stream);
  char* adst;
  const char* asrc;
  SimDevice *ddev = nullptr, *sdev = nullptr;
  sdk_status s = prepare_copy(dst, src, nbytes, kind, &adst, &asrc, &ddev, &sdev);
  if (s != SDK_SUCCESS) return s;
  // A stream's copy engine reaches its own device's memory (and, for a copy
  // between devices, the peer's): a copy none of whose device sides is on
  // the stream's device is a foreign-device stream.
  SimDevice* sd = g_devices[st->device];
  if ((ddev || sdev) && ddev != sd && sdev != sd) {
    return fail(SDK_ERROR_INVALID_VALUE, std::string("memcpy_async: the ") + kind_name(kind) + " copy touches device " +
                                             std::to_string((ddev ? ddev : sdev)->index()) + "'s memory but stream " +
                                             hex(stream) + " belongs to device " + std::to_string(st->device));
  }
  SIM_CHECK_LOST(g_devices[st->device], "memcpy_async");
  if (ddev) SIM_CHECK_LOST(ddev, "memcpy_async");
  if (sdev) SIM_CHECK_LOST(sdev, "memcpy_async");
  Op op{Op::Copy};
  op.dst = adst;
  op.src = asrc;
  op.n = nbytes;
  op.copy_kind = kind;
  if (kind == SDK_MEMCPY_DEVICE_TO_DEVICE) {
    op.copy_src_device = sdev;
    op.copy_dst_device = ddev;
  }
  g_devices[st->device]->enqueue(st, std::move(op));
  return SDK_SUCCESS;
}

sdk_status sim_memset_async(void* ctx, void* dst, int32_t value, size_t nbytes, sdk_stream_t stream) {
  SIM_ENTER(ctx);
  SimStream* st = as_stream(stream);
  if (!st) return bad_stream("memset_async", stream);
  SimDevice* d = owner_of(dst);
  if (!d) return fail(SDK_ERROR_INVALID_VALUE, "memset_async: " + hex(dst) + " is not a device pointer");
  std::string why;
  if (!d->memory().check_range(dst, nbytes, &why)) return fail(SDK_ERROR_INVALID_VALUE, "memset_async: " + why);
  if (d->index() != st->device) {
    return fail(SDK_ERROR_INVALID_VALUE, "memset_async: " + hex(dst) + " is in device " + std::to_string(d->index()) +
                                             "'s memory but stream " + hex(stream) + " belongs to device " +
                                             std::to_string(st->device));
  }
  SIM_CHECK_LOST(d, "memset_async");
  SIM_CHECK_LOST(g_devices[st->device], "memset_async");
  Op op{Op::Memset};
  op.dst = d->memory().alias(dst);
  op.n = nbytes;
  op.value = value;
  g_devices[st->device]->enqueue(st, std::move(op));
  return SDK_SUCCESS;
}

sdk_status sim_stream_create(void* ctx, int32_t device, int32_t priority, sdk_stream_t* stream) {
  SIM_ENTER(ctx);
  SimDevice* d = device_or_null(device);
  if (!d) return bad_device(device);
  if (stream == nullptr) return fail(SDK_ERROR_INVALID_VALUE, "stream_create: stream is NULL");
  SIM_CHECK_LOST(d, "stream_create");
  if (priority > kPriorityLeast) priority = kPriorityLeast;
  if (priority < kPriorityGreatest) priority = kPriorityGreatest;
  SimStream* s = d->create_stream(priority);
  s->handle = g_streams->add(s);
  if (s->handle == 0) {
    d->destroy_stream(s);
    return fail(SDK_ERROR_OUT_OF_MEMORY, "stream_create: too many live streams (the handle table is full)");
  }
  *stream = reinterpret_cast<sdk_stream_t>(static_cast<uintptr_t>(s->handle));
  return SDK_SUCCESS;
}

sdk_status sim_stream_destroy(void* ctx, sdk_stream_t stream) {
  SIM_ENTER(ctx);
  // Invalidated first (Note [Simulated handles]): a second destroy is refused.
  SimStream* s = g_streams->remove(handle_bits(stream));
  if (!s) return bad_stream("stream_destroy", stream);
  g_devices[s->device]->destroy_stream(s);
  return SDK_SUCCESS;
}

sdk_status sim_stream_query(void* ctx, sdk_stream_t stream) {
  SIM_ENTER(ctx);
  SimStream* s = as_stream(stream);
  if (!s) return bad_stream("stream_query", stream);
  SIM_CHECK_LOST(g_devices[s->device], "stream_query");
  return g_devices[s->device]->stream_idle(s) ? SDK_SUCCESS : SDK_ERROR_NOT_READY;
}

sdk_status sim_stream_synchronize(void* ctx, sdk_stream_t stream) {
  SIM_ENTER(ctx);
  SimStream* s = as_stream(stream);
  if (!s) return bad_stream("stream_synchronize", stream);
  SimDevice* d = g_devices[s->device];
  SIM_CHECK_LOST(d, "stream_synchronize");
  if (d->is_capturing(s))  // Note [Simulated graphs]: its work is recorded, not queued: waiting means nothing
    return fail(SDK_ERROR_NOT_SUPPORTED, "stream_synchronize: operation not permitted when stream is capturing "
                                         "(stream " + hex(stream) + " of device " + std::to_string(s->device) + ")");
  d->synchronize_stream(s);
  if (d->lost()) return lost_error(d, "stream_synchronize");
  return report_async_error(d);
}

sdk_status sim_stream_wait_event(void* ctx, sdk_stream_t stream, sdk_event_t event) {
  SIM_ENTER(ctx);
  SimStream* s = as_stream(stream);
  if (!s) return bad_stream("stream_wait_event", stream);
  SimEvent* e = as_event(event);
  if (!e) return bad_event("stream_wait_event", event);
  SIM_CHECK_LOST(g_devices[s->device], "stream_wait_event");
  uint64_t gen = e->recorded.load(std::memory_order_acquire);
  if (gen == 0) return SDK_SUCCESS;  // never recorded: nothing to wait for
  event_ref(e);
  Op op{Op::Wait};
  op.event = e;
  op.generation = gen;
  g_devices[s->device]->enqueue(s, std::move(op));
  return SDK_SUCCESS;
}

sdk_status sim_event_create(void* ctx, int32_t device, uint32_t flags, sdk_event_t* event) {
  SIM_ENTER(ctx);
  if (!device_or_null(device)) return bad_device(device);
  if (event == nullptr) return fail(SDK_ERROR_INVALID_VALUE, "event_create: event is NULL");
  SIM_CHECK_LOST(g_devices[device], "event_create");
  if (flags & ~(SDK_EVENT_TIMING | SDK_EVENT_BLOCKING))
    return fail(SDK_ERROR_INVALID_VALUE, "event_create: unknown flags " + std::to_string(flags));
  auto* e = new SimEvent(device, flags);
  e->handle = g_events->add(e);
  if (e->handle == 0) {
    event_unref(e);
    return fail(SDK_ERROR_OUT_OF_MEMORY, "event_create: too many live events (the handle table is full)");
  }
  *event = reinterpret_cast<sdk_event_t>(static_cast<uintptr_t>(e->handle));
  return SDK_SUCCESS;
}

sdk_status sim_event_destroy(void* ctx, sdk_event_t event) {
  SIM_ENTER(ctx);
  // Invalidated first (Note [Simulated handles]); queued records and waits keep their references.
  SimEvent* e = g_events->remove(handle_bits(event));
  if (!e) return bad_event("event_destroy", event);
  event_unref(e);
  return SDK_SUCCESS;
}

sdk_status sim_event_record(void* ctx, sdk_event_t event, sdk_stream_t stream) {
  SIM_ENTER(ctx);
  SimEvent* e = as_event(event);
  if (!e) return bad_event("event_record", event);
  SimStream* s = as_stream(stream);
  if (!s) return bad_stream("event_record", stream);
  if (s->device != e->device) {
    return fail(SDK_ERROR_INVALID_VALUE, "event_record: the event belongs to device " + std::to_string(e->device) +
                                             " but the stream to device " + std::to_string(s->device));
  }
  SIM_CHECK_LOST(g_devices[s->device], "event_record");
  event_ref(e);
  Op op{Op::Record};
  op.event = e;
  // Generations only grow; completion keeps the largest completed one, so a
  // query after two records of one event waits for the later record.
  op.generation = e->recorded.fetch_add(1, std::memory_order_acq_rel) + 1;
  g_devices[s->device]->enqueue(s, std::move(op));
  return SDK_SUCCESS;
}

sdk_status sim_event_query(void* ctx, sdk_event_t event) {
  SIM_ENTER(ctx);
  SimEvent* e = as_event(event);
  if (!e) return bad_event("event_query", event);
  SIM_CHECK_LOST(g_devices[e->device], "event_query");
  return e->completed.load(std::memory_order_acquire) >= e->recorded.load(std::memory_order_acquire)
             ? SDK_SUCCESS
             : SDK_ERROR_NOT_READY;
}

sdk_status sim_event_synchronize(void* ctx, sdk_event_t event) {
  SIM_ENTER(ctx);
  SimEvent* e = as_event(event);
  if (!e) return bad_event("event_synchronize", event);
  SimDevice* d = g_devices[e->device];
  SIM_CHECK_LOST(d, "event_synchronize");
  uint64_t gen = e->recorded.load(std::memory_order_acquire);
  if (gen != 0) d->wait_event(e, gen, (e->flags & SDK_EVENT_BLOCKING) != 0);
  if (d->lost()) return lost_error(d, "event_synchronize");
  return report_async_error(d);
}

sdk_status sim_event_elapsed_time(void* ctx, float* ms, sdk_event_t start, sdk_event_t end) {
  SIM_ENTER(ctx);
  SimEvent* a = as_event(start);
  SimEvent* b = as_event(end);
  if (!a || !b) return bad_event("event_elapsed_time", a ? end : start);
  if (ms == nullptr) return fail(SDK_ERROR_INVALID_VALUE, "event_elapsed_time: ms is NULL");
  if (a->device != b->device) {
    return fail(SDK_ERROR_INVALID_VALUE, "event_elapsed_time: the start event belongs to device " +
                                             std::to_string(a->device) + " but the end event to device " +
                                             std::to_string(b->device));
  }
  SIM_CHECK_LOST(g_devices[a->device], "event_elapsed_time");
  if (!(a->flags & SDK_EVENT_TIMING) || !(b->flags & SDK_EVENT_TIMING))
    return fail(SDK_ERROR_INVALID_VALUE, "event_elapsed_time: both events need SDK_EVENT_TIMING");
  if (a->recorded.load() == 0 || b->recorded.load() == 0)
    return fail(SDK_ERROR_INVALID_VALUE, "event_elapsed_time: both events must be recorded");
  if (a->completed.load() < a->recorded.load() || b->completed.load() < b->recorded.load())
    return fail(SDK_ERROR_NOT_READY, "event_elapsed_time: an event has not completed");
  *ms = static_cast<float>(static_cast<double>(b->time_ns.load() - a->time_ns.load()) / 1e6);
  return SDK_SUCCESS;
}

sdk_status sim_launch_host_func(void* ctx, sdk_stream_t stream, sdk_host_fn fn, sdk_host_fn release,
                                void* user_data) {
  SIM_ENTER(ctx);
  SimStream* s = as_stream(stream);
  if (!s) return bad_stream("launch_host_func", stream);
  if (fn == nullptr) return fail(SDK_ERROR_INVALID_VALUE, "launch_host_func: fn is NULL");
  SIM_CHECK_LOST(g_devices[s->device], "launch_host_func");
  Op op{Op::HostFn};
  op.fn = fn;
  op.host_release = release;  // Note [Simulated faults]: called instead of fn when the op is drained
  op.user = user_data;
  g_devices[s->device]->enqueue(s, std::move(op));
  return SDK_SUCCESS;
}

sdk_status sim_device_synchronize(void* ctx, int32_t device) {
  SIM_ENTER(ctx);
  SimDevice* d = device_or_null(device);
  if (!d) return bad_device(device);
  SIM_CHECK_LOST(d, "device_synchronize");
  d->synchronize();
  if (d->lost()) return lost_error(d, "device_synchronize");
  return report_async_error(d);
}

const char* sim_get_error_string(void* /*ctx*/, sdk_status s) {
  switch (s) {
    case SDK_SUCCESS:
      return "success";
    case SDK_ERROR_INVALID_VALUE:
      return "invalid value";
    case SDK_ERROR_OUT_OF_MEMORY:
      return "out of memory";
    case SDK_ERROR_INVALID_DEVICE:
      return "invalid device";
    case SDK_ERROR_INVALID_HANDLE:
      return "invalid handle";
    case SDK_ERROR_NOT_READY:
      return "not ready";
    case SDK_ERROR_NOT_SUPPORTED:
      return "not supported";
    case SDK_ERROR_KERNEL_FAULT:
      return "kernel fault";
    case SDK_ERROR_DEVICE_LOST:
      return "device lost";
    default:
      return "unknown error";
  }
}

const char* sim_get_last_error_message(void* /*ctx*/) { return t_last_error.c_str(); }

sdk_status sim_can_access_peer(void* ctx, int32_t device, int32_t peer, int32_t* can_access) {
  SIM_ENTER(ctx);
  if (!device_or_null(device)) return bad_device(device);
  if (!device_or_null(peer)) return bad_device(peer);
  if (can_access == nullptr) return fail(SDK_ERROR_INVALID_VALUE, "can_access_peer: can_access is NULL");
  *can_access = 1;  // one host address space: every simulated kernel reaches every device's memory
  return SDK_SUCCESS;
}

// ---- the "sdk.trace" extension (Note [Device trace extension], from Note [Simulated trace]) ----

sdk_status sim_trace_start(void* ctx, int64_t capacity) {
  if (!valid_context(ctx)) return bad_context(ctx);
  if (capacity <= 0) return fail(SDK_ERROR_INVALID_VALUE, "trace start: capacity must be positive");
  trace_start(static_cast<size_t>(capacity));
  return SDK_SUCCESS;
}

sdk_status sim_trace_stop(void* ctx) {
  if (!valid_context(ctx)) return bad_context(ctx);
  trace_stop();
  return SDK_SUCCESS;
}

sdk_status sim_trace_collect(void* ctx, sdk_trace_record* records, size_t capacity, size_t* count,
                             uint64_t* dropped) {
  if (!valid_context(ctx)) return bad_context(ctx);
  if (count == nullptr || dropped == nullptr || (capacity > 0 && records == nullptr))
    return fail(SDK_ERROR_INVALID_VALUE, "trace collect: records, count or dropped is NULL");
  *count = trace_collect(records, nullptr, capacity, dropped);
  return SDK_SUCCESS;
}

sdk_status sim_trace_set_correlation_id(void* ctx, uint64_t id) {
  if (!valid_context(ctx)) return bad_context(ctx);
  t_trace_correlation = id;
  return SDK_SUCCESS;
}

sdk_status sim_trace_collect_correlated(void* ctx, sdk_trace_record* records, uint64_t* correlation_ids,
                                        size_t capacity, size_t* count, uint64_t* dropped) {
  if (!valid_context(ctx)) return bad_context(ctx);
  if (count == nullptr || dropped == nullptr || (capacity > 0 && (records == nullptr || correlation_ids == nullptr)))
    return fail(SDK_ERROR_INVALID_VALUE, "trace collect_correlated: records, correlation_ids, count or dropped is NULL");
  *count = trace_collect(records, correlation_ids, capacity, dropped);
  return SDK_SUCCESS;
}

// ---- "sdk.graph" (Note [Simulated graphs], SimDevice.h) ----
HandleTable<SimGraph>* const g_graphs = new HandleTable<SimGraph>(0x4752);  // "GR"

sdk_status bad_graph(const char* what, sdk_graph_t h) {
  return fail(SDK_ERROR_INVALID_HANDLE, std::string(what) + ": " + hex(h) +
                                            " is not a valid graph handle of device_sim (never returned by "
                                            "capture_end, or already destroyed)");
}

sdk_status sim_graph_capture_begin(void* ctx, sdk_stream_t stream) {
  SIM_ENTER(ctx);
  SimStream* s = as_stream(stream);
  if (!s) return bad_stream("graph capture_begin", stream);
  SIM_CHECK_LOST(g_devices[s->device], "graph capture_begin");
  auto* g = new SimGraph(s->device);
  if (!g_devices[s->device]->begin_capture(s, g)) {
    delete g;
    return fail(SDK_ERROR_INVALID_VALUE, "graph capture_begin: stream " + hex(stream) + " is already capturing");
  }
  return SDK_SUCCESS;
}

sdk_status sim_graph_capture_end(void* ctx, sdk_stream_t stream, sdk_graph_t* graph) {
  SIM_ENTER(ctx);
  SimStream* s = as_stream(stream);
  if (!s) return bad_stream("graph capture_end", stream);
  if (graph == nullptr) return fail(SDK_ERROR_INVALID_VALUE, "graph capture_end: graph is NULL");
  SimGraph* g = g_devices[s->device]->end_capture(s);
  if (g == nullptr) return fail(SDK_ERROR_INVALID_VALUE, "graph capture_end: stream " + hex(stream) + " is not capturing");
  if (!g->invalid.empty()) {
    std::string why = g->invalid;
    graph_unref(g);
    return fail(SDK_ERROR_NOT_SUPPORTED, "graph capture_end: the capture was invalidated: " + why);
  }
  g->handle = g_graphs->add(g);
  *graph = reinterpret_cast<sdk_graph_t>(static_cast<uintptr_t>(g->handle));
  return SDK_SUCCESS;
}

sdk_status sim_graph_instantiate(void* ctx, sdk_graph_t graph) {
  SIM_ENTER(ctx);
  if (!g_graphs->get(handle_bits(graph))) return bad_graph("graph instantiate", graph);
  return SDK_SUCCESS;  // the recorded ops are replayed as they are
}

sdk_status sim_graph_launch(void* ctx, sdk_graph_t graph, sdk_stream_t stream) {
  SIM_ENTER(ctx);
  SimGraph* g = g_graphs->get(handle_bits(graph));
  if (!g) return bad_graph("graph launch", graph);
  SimStream* s = as_stream(stream);
  if (!s) return bad_stream("graph launch", stream);
  if (s->device != g->device)
    return fail(SDK_ERROR_INVALID_VALUE, "graph launch: the graph was captured on device " + std::to_string(g->device) +
                                             ", the stream " + hex(stream) + " is of device " + std::to_string(s->device));
  SIM_CHECK_LOST(g_devices[s->device], "graph launch");
  g->refs.fetch_add(1, std::memory_order_relaxed);
  Op op{Op::Graph};
  op.graph = g;
  g_devices[s->device]->enqueue(s, std::move(op));
  return SDK_SUCCESS;
}

sdk_status sim_graph_destroy(void* ctx, sdk_graph_t graph) {
  if (!valid_context(ctx)) return bad_context(ctx);
  SimGraph* g = g_graphs->remove(handle_bits(graph));
  if (!g) return bad_graph("graph destroy", graph);
  graph_unref(g);  // freed now, or by the last queued replay
  return SDK_SUCCESS;
}

sdk_status sim_graph_is_capturing(void* ctx, sdk_stream_t stream, int32_t* capturing) {
  SIM_ENTER(ctx);
  SimStream* s = as_stream(stream);
  if (!s) return bad_stream("graph is_capturing", stream);
  if (capturing == nullptr) return fail(SDK_ERROR_INVALID_VALUE, "graph is_capturing: capturing is NULL");
  *capturing = g_devices[s->device]->is_capturing(s) ? 1 : 0;
  return SDK_SUCCESS;
}

const sdk_graph_extension kGraphExtension = {
    {sizeof(sdk_graph_extension), SDK_GRAPH_EXTENSION_NAME, SDK_GRAPH_EXTENSION_VERSION, 0,
     &kCollectivesExtension.base},  // "sdk.collectives": SimCollectives.cpp
    &sim_graph_capture_begin, &sim_graph_capture_end, &sim_graph_instantiate, &sim_graph_launch,
    &sim_graph_destroy, &sim_graph_is_capturing,
};

const sdk_trace_extension kTraceExtension = {
    {sizeof(sdk_trace_extension), SDK_TRACE_EXTENSION_NAME, SDK_TRACE_EXTENSION_VERSION, 0, &kGraphExtension.base},
    &sim_trace_start,
    &sim_trace_stop,
    &sim_trace_collect,
    &sim_trace_set_correlation_id,
    &sim_trace_collect_correlated,
};

// ---- "sdk.stats" (Note [Device stats extension], Note [Simulated activity]) ----
sdk_status sim_stats_query(void* ctx, int32_t device, sdk_device_stats* stats) {
  SIM_ENTER(ctx);
  SimDevice* d = device_or_null(device);
  if (!d) return bad_device(device);
  if (stats == nullptr || stats->struct_size < SDK_DEVICE_STATS_SIZE_1)
    return fail(SDK_ERROR_INVALID_VALUE, "stats query: stats is NULL or its struct_size is below version 1's " +
                                             std::to_string(SDK_DEVICE_STATS_SIZE_1) + " bytes");
  const int64_t now = now_ns();
  int64_t kernel_busy = 0, memory_busy = 0, kernel_period = 1, memory_period = 1;
  d->kernel_activity().sample(now, &kernel_busy, &kernel_period);
  d->memory_activity().sample(now, &memory_busy, &memory_period);
  // Version 1's fields (the caller's struct is at least that big; later fields only where both structs have them).
  stats->sample_period_ns = static_cast<uint64_t>(kernel_period);
  stats->kernel_percent = static_cast<uint32_t>(kernel_busy * 100 / kernel_period);
  stats->memory_percent = static_cast<uint32_t>(memory_busy * 100 / memory_period);
  return SDK_SUCCESS;
}

const sdk_stats_extension kStatsExtension = {
    {sizeof(sdk_stats_extension), SDK_STATS_EXTENSION_NAME, SDK_STATS_EXTENSION_VERSION, 0, &kTraceExtension.base},
    &sim_stats_query,
};

// Generated from the slot list: a slot added to the header without a sim_
// function fails to compile here.
const sdk_device_api kApi = {
    sizeof(sdk_device_api), SDK_DEVICE_API_MAJOR, SDK_DEVICE_API_MINOR, &kStatsExtension.base,
#define SIM_SLOT_(name, ret, params, presence, minor) &sim_##name,
    SDK_DEVICE_API_SLOTS(SIM_SLOT_)
#undef SIM_SLOT_
};

}  // namespace

// ---- shared with SimCollectives.cpp (SimCollectives.h) ----
bool context_is_valid(const void* ctx) { return valid_context(ctx); }
bool simulator_started() { return ensure_initialized(); }
int stream_device(sdk_stream_t stream) {
  SimStream* s = as_stream(stream);
  return s ? s->device : -1;
}
int device_count() { return g_num_devices; }
bool device_is_lost(int device) {
  SimDevice* d = device_or_null(device);
  return d != nullptr && d->lost();
}
sdk_status record_call_error(sdk_status status, std::string message) { return fail(status, std::move(message)); }

namespace {

// ---- built-in kernels ----
struct SleepArgs {
  int64_t us;
};
void sleep_kernel(void* a) { std::this_thread::sleep_for(std::chrono::microseconds(static_cast<SleepArgs*>(a)->us)); }

struct AxpbArgs {
  float* y;
  const float* x;
  int64_t n;
  float a, b;
};
void axpb_kernel(void* p) {
  auto* a = static_cast<AxpbArgs*>(p);
  float* y = static_cast<float*>(device_sim_translate(a->y));
  const float* x = static_cast<const float*>(device_sim_translate(a->x));
  for (int64_t i = 0; i < a->n; ++i) y[i] = a->a * x[i] + a->b;
}
void empty_kernel(void*) {}

}  // namespace

void notify_event_completed() {
  for (int i = 0; i < g_num_devices; ++i) g_devices[i]->wake_workers();
}

}  // namespace device_sim

using namespace device_sim;

namespace {
sdk_status fill_instance(sdk_device_instance* instance) {
  if (instance == nullptr || instance->struct_size < offsetof(sdk_device_instance, context) + sizeof(void*))
    return SDK_ERROR_INVALID_VALUE;
  instance->api = &kApi;
  instance->context = &g_context;  // Note [device_sim context]
  return SDK_SUCCESS;
}
}  // namespace

extern "C" {

sdk_status sdk_device_entry(sdk_device_instance* instance) { return fill_instance(instance); }

// sdk_device_entry under a name of its own, which a delegating backend can call (device_sim.h).
sdk_status device_sim_get_contract(sdk_device_instance* instance) { return fill_instance(instance); }

const char* device_sim_last_error_message(void) { return t_last_error.c_str(); }

sdk_status device_sim_configure(int32_t num_devices, int64_t memory_bytes) {
  std::lock_guard<std::mutex> lock(g_config_mutex);
  read_env_locked();
  if (num_devices > kMaxDevices)
    return fail(SDK_ERROR_INVALID_VALUE, "device_sim_configure: at most " + std::to_string(kMaxDevices) + " devices");
  if (memory_bytes > 0 && memory_bytes < (1 << 20))
    return fail(SDK_ERROR_INVALID_VALUE, "device_sim_configure: memory_bytes must be at least 1 MiB");
  Config next = g_config;
  if (num_devices > 0) next.num_devices = num_devices;
  if (memory_bytes > 0) next.memory_bytes = (memory_bytes + 65535) / 65536 * 65536;
  if (g_initialized.load(std::memory_order_acquire)) {
    if (next.num_devices == g_config.num_devices && next.memory_bytes == g_config.memory_bytes) return SDK_SUCCESS;
    return fail(SDK_ERROR_INVALID_VALUE,
                "device_sim_configure: the simulator is already running (" + std::to_string(g_config.num_devices) +
                    " devices of " + std::to_string(g_config.memory_bytes) +
                    " bytes); configure it before its first use");
  }
  g_config = next;
  return SDK_SUCCESS;
}

int32_t device_sim_is_initialized(void) { return g_initialized.load(std::memory_order_acquire) ? 1 : 0; }

int32_t device_sim_num_devices(void) {
  std::lock_guard<std::mutex> lock(g_config_mutex);
  read_env_locked();
  return g_config.num_devices;
}

int64_t device_sim_memory_bytes(void) {
  std::lock_guard<std::mutex> lock(g_config_mutex);
  read_env_locked();
  return g_config.memory_bytes;
}

sdk_status device_sim_launch_kernel_ex(sdk_stream_t stream, const char* name, device_sim_kernel_fn fn,
                                       device_sim_kernel_fn release, const void* args, size_t args_size) {
  SIM_INIT();
  SimStream* s = as_stream(stream);
  if (!s) return bad_stream("device_sim_launch_kernel", stream);
  if (fn == nullptr) return fail(SDK_ERROR_INVALID_VALUE, "device_sim_launch_kernel: fn is NULL");
  if (args_size > kMaxKernelArgs || (args_size > 0 && args == nullptr))
    return fail(SDK_ERROR_INVALID_VALUE, "device_sim_launch_kernel: args must be at most 4096 bytes and not NULL");
  SIM_CHECK_LOST(g_devices[s->device], "device_sim_launch_kernel");
  Op op{Op::Kernel};
  op.kernel = fn;
  op.release = release;
  op.name = name != nullptr ? intern_name(name) : kernel_name_of(fn);
  op.args.assign(args, args_size);
  g_devices[s->device]->enqueue(s, std::move(op));
  return SDK_SUCCESS;
}

sdk_status device_sim_launch_kernel_reusable(sdk_stream_t stream, const char* name, device_sim_kernel_fn fn,
                                             device_sim_kernel_fn release, const void* args, size_t args_size) {
  SIM_INIT();
  SimStream* s = as_stream(stream);
  if (!s) return bad_stream("device_sim_launch_kernel_reusable", stream);
  if (fn == nullptr) return fail(SDK_ERROR_INVALID_VALUE, "device_sim_launch_kernel_reusable: fn is NULL");
  if (args_size > kMaxKernelArgs || (args_size > 0 && args == nullptr))
    return fail(SDK_ERROR_INVALID_VALUE,
                "device_sim_launch_kernel_reusable: args must be at most 4096 bytes and not NULL");
  SIM_CHECK_LOST(g_devices[s->device], "device_sim_launch_kernel_reusable");
  Op op{Op::Kernel};
  op.kernel = fn;
  op.release = release;
  op.reusable = true;  // Note [Simulated graphs]
  op.name = name != nullptr ? intern_name(name) : kernel_name_of(fn);
  op.args.assign(args, args_size);
  g_devices[s->device]->enqueue(s, std::move(op));
  return SDK_SUCCESS;
}

sdk_status device_sim_launch_kernel_named(sdk_stream_t stream, const char* name, device_sim_kernel_fn fn,
                                          const void* args, size_t args_size) {
  return device_sim_launch_kernel_ex(stream, name, fn, nullptr, args, args_size);
}

sdk_status device_sim_launch_kernel(sdk_stream_t stream, device_sim_kernel_fn fn, const void* args, size_t args_size) {
  return device_sim_launch_kernel_ex(stream, nullptr, fn, nullptr, args, args_size);
}

void* device_sim_translate(const void* device_ptr) {
  SimDevice* d = owner_of(device_ptr);
  return d ? d->memory().alias(device_ptr) : nullptr;
}

int32_t device_sim_device_of(const void* device_ptr) {
  SimDevice* d = owner_of(device_ptr);
  return d ? d->index() : -1;
}

sdk_status device_sim_kernel_sleep(sdk_stream_t stream, int64_t microseconds) {
  if (microseconds < 0) return fail(SDK_ERROR_INVALID_VALUE, "device_sim_kernel_sleep: negative duration");
  SleepArgs a{microseconds};
  return device_sim_launch_kernel_named(stream, "sleep", &sleep_kernel, &a, sizeof(a));
}

sdk_status device_sim_kernel_axpb_f32(sdk_stream_t stream, float* y, const float* x, int64_t n, float a, float b) {
  SIM_INIT();
  SimStream* s = as_stream(stream);
  if (!s) return bad_stream("device_sim_kernel_axpb_f32", stream);
  if (n < 0) return fail(SDK_ERROR_INVALID_VALUE, "device_sim_kernel_axpb_f32: negative n");
  if (n > static_cast<int64_t>(SIZE_MAX / sizeof(float)))
    return fail(SDK_ERROR_INVALID_VALUE, "device_sim_kernel_axpb_f32: n = " + std::to_string(n) + " is too large");
  std::string why;
  size_t bytes = static_cast<size_t>(n) * sizeof(float);
  SimDevice* dy = owner_of(y);
  SimDevice* dx = owner_of(x);
  if (!dy || !dx) return fail(SDK_ERROR_INVALID_VALUE, "device_sim_kernel_axpb_f32: x and y must be device pointers");
  if (!dy->memory().check_range(y, bytes, &why) || !dx->memory().check_range(x, bytes, &why))
    return fail(SDK_ERROR_INVALID_VALUE, "device_sim_kernel_axpb_f32: " + why);
  if (dy->index() != s->device || dx->index() != s->device) {
    return fail(SDK_ERROR_INVALID_VALUE, "device_sim_kernel_axpb_f32: x and y must be in the memory of the stream's "
                                         "device " + std::to_string(s->device) + " (x: device " +
                                             std::to_string(dx->index()) + ", y: device " +
                                             std::to_string(dy->index()) + ")");
  }
  AxpbArgs args{y, x, n, a, b};
  return device_sim_launch_kernel_named(stream, "axpb_f32", &axpb_kernel, &args, sizeof(args));
}

sdk_status device_sim_kernel_empty(sdk_stream_t stream) {
  return device_sim_launch_kernel_named(stream, "empty", &empty_kernel, nullptr, 0);
}

// ---- faults (Note [Simulated faults]) ----

sdk_status device_sim_inject(int32_t kind, int32_t device, sdk_stream_t stream, int64_t count, const char* message) {
  SIM_INIT();
  SimDevice* d = device_or_null(device);
  if (!d) return bad_device(device);
  SimStream* s = nullptr;
  if (stream != nullptr) {
    s = as_stream(stream);
    if (!s) return bad_stream("device_sim_inject", stream);
    if (s->device != device) {
      return fail(SDK_ERROR_INVALID_VALUE, "device_sim_inject: the stream belongs to device " +
                                               std::to_string(s->device) + ", not device " + std::to_string(device));
    }
  }
  if (count < 0) return fail(SDK_ERROR_INVALID_VALUE, "device_sim_inject: count must be non-negative");
  switch (kind) {
    case DEVICE_SIM_FAULT_ALLOC_FAILURE:
      d->inject_alloc_failures(count);
      return SDK_SUCCESS;
    case DEVICE_SIM_FAULT_KERNEL_FAULT:
      d->inject_kernel_faults(s ? s->handle : 0, count, message ? message : "");
      return SDK_SUCCESS;
    case DEVICE_SIM_FAULT_DEVICE_LOST:
      d->set_lost();
      return SDK_SUCCESS;
    default:
      return fail(SDK_ERROR_INVALID_VALUE, "device_sim_inject: unknown fault kind " + std::to_string(kind));
  }
}

sdk_status device_sim_reset_device(int32_t device) {
  SIM_INIT();
  SimDevice* d = device_or_null(device);
  if (!d) return bad_device(device);
  d->reset();
  return SDK_SUCCESS;
}

int32_t device_sim_is_device_lost(int32_t device) {
  if (!g_initialized.load(std::memory_order_acquire)) return 0;
  SimDevice* d = device_or_null(device);
  return d != nullptr && d->lost() ? 1 : 0;
}

sdk_status device_sim_kernel_fail(const char* message) {
  KernelContext& k = t_kernel;
  if (k.device == nullptr) {
    return fail(SDK_ERROR_INVALID_VALUE, "device_sim_kernel_fail: not called from inside a running kernel");
  }
  std::string msg = kernel_fault_prefix(k.name, k.stream, k.device->index());
  if (message != nullptr && *message) msg += std::string(": ") + message;
  k.device->record_async_error(SDK_ERROR_KERNEL_FAULT, std::move(msg));
  return SDK_SUCCESS;
}

// ---- trace (Note [Simulated trace], Trace.cpp) ----

sdk_status device_sim_start_trace(int64_t capacity) {
  if (capacity <= 0) return fail(SDK_ERROR_INVALID_VALUE, "device_sim_start_trace: capacity must be positive");
  trace_start(static_cast<size_t>(capacity));
  return SDK_SUCCESS;
}

sdk_status device_sim_stop_trace(void) {
  trace_stop();
  return SDK_SUCCESS;
}

int64_t device_sim_trace_event_count(void) { return trace_count(); }
int64_t device_sim_trace_dropped(void) { return trace_dropped(); }

sdk_status device_sim_export_chrome_trace(const char* path) {
  if (path == nullptr) return fail(SDK_ERROR_INVALID_VALUE, "device_sim_export_chrome_trace: path is NULL");
  std::string why;
  if (!trace_export(path, &why)) return fail(SDK_ERROR_INVALID_VALUE, why);
  return SDK_SUCCESS;
}

// ---- timing model (Note [Simulated timing], SimDevice.cpp) ----

sdk_status device_sim_set_timing(double launch_latency_us, double copy_bandwidth_gbps) {
  read_timing_env();  // explicit settings win over the environment
  if (launch_latency_us != launch_latency_us || copy_bandwidth_gbps != copy_bandwidth_gbps)
    return fail(SDK_ERROR_INVALID_VALUE, "device_sim_set_timing: NaN is not a valid setting");
  if (launch_latency_us >= 0.0)
    g_timing.launch_latency_ns.store(static_cast<int64_t>(launch_latency_us * 1000.0), std::memory_order_relaxed);
  if (copy_bandwidth_gbps >= 0.0)
    g_timing.copy_ns_per_byte.store(copy_bandwidth_gbps > 0.0 ? 1.0 / copy_bandwidth_gbps : 0.0,
                                    std::memory_order_relaxed);
  return SDK_SUCCESS;
}

void device_sim_get_timing(double* launch_latency_us, double* copy_bandwidth_gbps) {
  read_timing_env();
  if (launch_latency_us)
    *launch_latency_us = static_cast<double>(g_timing.launch_latency_ns.load(std::memory_order_relaxed)) / 1000.0;
  if (copy_bandwidth_gbps) {
    double per_byte = g_timing.copy_ns_per_byte.load(std::memory_order_relaxed);
    *copy_bandwidth_gbps = per_byte > 0.0 ? 1.0 / per_byte : 0.0;
  }
}

}  // extern "C"
