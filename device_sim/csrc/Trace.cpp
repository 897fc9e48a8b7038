// Chrome trace of the simulated devices' work.
//
// Note [Simulated trace]
// ~~~~~~~~~~~~~~~~~~~~~~
// While tracing is on (off by default: one relaxed atomic load per operation
// when off), every kernel, copy, memset, host function and event record that
// runs on a worker, and every synchronous copy, is recorded with its start
// and end time, device and stream into a ring buffer of bounded capacity
// (the oldest records are overwritten; `dropped` counts them). Export writes
// the Chrome trace event format that chrome://tracing and Perfetto open:
// complete events (ph "X", ts/dur in microseconds from the start of tracing),
// pid = device, tid = the stream's serial number on its device (tid 0: the
// synchronous copies of the calling threads), sorted by start time, plus
// metadata events naming each process ("device_sim device D") and thread
// ("stream 0x.. " or "synchronous copies"). Each record also carries the
// "sdk.trace" v2 correlation id (Note [Device trace extension]) the
// launching thread set last (t_trace_correlation): enqueue copies it into
// the Op, synchronous copies read it directly.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <cstring>

#include "SimDevice.h"
#include <backend_sdk/runtime/DeviceTraceExtension.h>

namespace device_sim {

std::atomic<bool> g_trace_on{false};
thread_local uint64_t t_trace_correlation = 0;

namespace {

struct Record {
  const char* name;
  const char* category;
  int device;
  uint32_t stream_serial;
  const void* stream;
  int64_t start_ns;
  int64_t end_ns;
  size_t bytes;
  uint64_t correlation;  // "sdk.trace" v2: the launching thread's id (0: none)
};

std::mutex g_trace_mutex;
std::vector<Record>* g_ring = new std::vector<Record>();  // immortal (workers may trace at exit)
size_t g_capacity = 0;
size_t g_next = 0;       // ring position: records written since start (or the last collect)
uint64_t g_dropped = 0;  // records overwritten since start
uint64_t g_dropped_uncollected = 0;  // ... since the last collect (the "sdk.trace" extension)
int64_t g_origin_ns = 0;

std::string json_escape(const char* s) {
  std::string out;
  for (; *s; ++s) {
    unsigned char c = static_cast<unsigned char>(*s);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

void trace_add(const char* name, const char* category, int device, uint32_t stream_serial, const void* stream,
               int64_t start_ns, int64_t end_ns, size_t bytes, uint64_t correlation) {
  std::lock_guard<std::mutex> lock(g_trace_mutex);
  if (!g_trace_on.load(std::memory_order_relaxed) || g_capacity == 0) return;
  Record r{name, category, device, stream_serial, stream, start_ns, end_ns, bytes, correlation};
  if (g_ring->size() < g_capacity) {
    g_ring->push_back(r);
  } else {
    (*g_ring)[g_next % g_capacity] = r;
    ++g_dropped;
    ++g_dropped_uncollected;
  }
  ++g_next;
}

void trace_start(size_t capacity) {
  std::lock_guard<std::mutex> lock(g_trace_mutex);
  g_ring->clear();
  g_ring->shrink_to_fit();
  g_ring->reserve(std::min<size_t>(capacity, 1 << 16));
  g_capacity = capacity;
  g_next = 0;
  g_dropped = 0;
  g_dropped_uncollected = 0;
  g_origin_ns = now_ns();
  g_trace_on.store(true, std::memory_order_release);
}

void trace_stop() {
  std::lock_guard<std::mutex> lock(g_trace_mutex);
  g_trace_on.store(false, std::memory_order_release);
}

int64_t trace_dropped() {
  std::lock_guard<std::mutex> lock(g_trace_mutex);
  return static_cast<int64_t>(g_dropped);
}

int64_t trace_count() {
  std::lock_guard<std::mutex> lock(g_trace_mutex);
  return static_cast<int64_t>(g_ring->size());
}

int trace_kind(const char* category) {
  if (std::strcmp(category, "kernel") == 0) return SDK_TRACE_KERNEL;
  if (std::strcmp(category, "memcpy") == 0) return SDK_TRACE_MEMCPY;
  if (std::strcmp(category, "memset") == 0) return SDK_TRACE_MEMSET;
  if (std::strcmp(category, "host") == 0) return SDK_TRACE_HOST_FUNC;
  return SDK_TRACE_EVENT_RECORD;
}

// The "sdk.trace" extension's collect (SimApi.cpp): moves the oldest
// `capacity` records out of the ring, oldest first. Shares the ring with the
// Chrome export (Note [Simulated trace]): collected records are no longer
// exported.
size_t trace_collect(sdk_trace_record* out, uint64_t* correlation_ids, size_t capacity, uint64_t* dropped) {
  std::lock_guard<std::mutex> lock(g_trace_mutex);
  std::vector<Record> ordered;
  ordered.reserve(g_ring->size());
  size_t first = g_ring->size() < g_capacity || g_capacity == 0 ? 0 : g_next % g_capacity;
  for (size_t i = 0; i < g_ring->size(); ++i) ordered.push_back((*g_ring)[(first + i) % g_ring->size()]);
  size_t n = std::min(capacity, ordered.size());
  for (size_t i = 0; i < n; ++i) {
    const Record& r = ordered[i];
    sdk_trace_record& o = out[i];
    std::memset(&o, 0, sizeof(o));
    o.kind = trace_kind(r.category);
    o.device = r.device;
    o.stream = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(r.stream));
    o.start_ns = r.start_ns;
    o.end_ns = r.end_ns;
    o.bytes = r.bytes;
    std::snprintf(o.name, sizeof(o.name), "%s", r.name ? r.name : "");
    if (correlation_ids != nullptr) correlation_ids[i] = r.correlation;
  }
  g_ring->assign(ordered.begin() + static_cast<std::ptrdiff_t>(n), ordered.end());
  g_next = g_ring->size();
  *dropped = g_dropped_uncollected;
  g_dropped_uncollected = 0;
  return n;
}

// Writes the JSON; false (and *why) if the file cannot be written.
bool trace_export(const char* path, std::string* why) {
  std::vector<Record> records;
  int64_t origin;
  size_t dropped;
  {
    std::lock_guard<std::mutex> lock(g_trace_mutex);
    records = *g_ring;
    origin = g_origin_ns;
    dropped = static_cast<size_t>(g_dropped);
  }
  std::stable_sort(records.begin(), records.end(), [](const Record& a, const Record& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns < b.end_ns;
  });
  std::string out = "{\"traceEvents\":[";
  bool first = true;
  auto sep = [&] {
    if (!first) out += ",";
    first = false;
    out += "\n";
  };
  char buf[512];
  // Metadata: one process per device, one thread per stream seen.
  std::map<int, std::map<uint32_t, const void*>> seen;
  for (const Record& r : records) seen[r.device][r.stream_serial] = r.stream;
  for (const auto& [device, streams] : seen) {
    sep();
    std::snprintf(buf, sizeof(buf),
                  "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":\"device_sim device "
                  "%d\"}}",
                  device, device);
    out += buf;
    for (const auto& [serial, handle] : streams) {
      sep();
      if (serial == 0) {
        std::snprintf(buf, sizeof(buf),
                      "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":\"synchronous "
                      "copies\"}}",
                      device);
      } else {
        std::snprintf(buf, sizeof(buf),
                      "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"args\":{\"name\":\"stream %p\"}}",
                      device, serial, handle);
      }
      out += buf;
    }
  }
  for (const Record& r : records) {
    sep();
    double ts = static_cast<double>(r.start_ns - origin) / 1000.0;
    double dur = static_cast<double>(r.end_ns - r.start_ns) / 1000.0;
    std::snprintf(buf, sizeof(buf),
                  "{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%u,"
                  "\"args\":{\"stream\":\"%p\",\"bytes\":%zu}}",
                  json_escape(r.name).c_str(), r.category, ts, dur, r.device, r.stream_serial, r.stream, r.bytes);
    out += buf;
  }
  std::snprintf(buf, sizeof(buf), "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"dropped_events\":%zu}}\n", dropped);
  out += buf;
  FILE* f = std::fopen(path, "w");
  if (f == nullptr) {
    *why = std::string("export_chrome_trace: cannot open '") + path + "' for writing";
    return false;
  }
  size_t written = std::fwrite(out.data(), 1, out.size(), f);
  bool ok = written == out.size();
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) *why = std::string("export_chrome_trace: writing '") + path + "' failed";
  return ok;
}

}  // namespace device_sim
