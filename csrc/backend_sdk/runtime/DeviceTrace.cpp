#include <backend_sdk/runtime/DeviceTrace.h>

#include <cstring>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/runtime/DeviceRegistry.h>
#include <backend_sdk/runtime/DeviceTraceExtension.h>

namespace sdk::runtime {
namespace {

const sdk_trace_extension& trace_extension(DeviceType type, const char* what) {
  const DeviceApi& api = device_api(type);  // RuntimeError if no device
  (void)api;
  const auto* ext = find_device_extension(type, SDK_TRACE_EXTENSION_NAME);
  SDK_CHECK_NOT_IMPLEMENTED(ext != nullptr, what, ": the device of backend '", device_type_name(type), "' (",
                            device_source(type), ") does not implement the '", SDK_TRACE_EXTENSION_NAME,
                            "' extension (Note [Device trace extension])");
  return *reinterpret_cast<const sdk_trace_extension*>(ext);  // size checked at attach
}

}  // namespace

bool has_device_trace(DeviceType type) { return find_device_extension(type, SDK_TRACE_EXTENSION_NAME) != nullptr; }

DeviceCorrelationHook device_trace_correlation_hook(DeviceType type) {
  DeviceCorrelationHook h;
  const auto* ext = find_device_extension(type, SDK_TRACE_EXTENSION_NAME);
  if (ext == nullptr || ext->version < 2) return h;  // checked at attach: a version 2 struct has both functions
  h.fn = reinterpret_cast<const sdk_trace_extension*>(ext)->set_correlation_id;
  h.context = device_api(type).context();
  return h;
}

void device_trace_start(DeviceType type, int64_t capacity) {
  SDK_CHECK_VALUE(capacity > 0, "trace_start: capacity must be positive, got ", capacity);
  const auto& t = trace_extension(type, "trace_start");
  check_status(type, t.start(device_api(type).context(), capacity), "trace_start");
}

void device_trace_stop(DeviceType type) {
  const auto& t = trace_extension(type, "trace_stop");
  check_status(type, t.stop(device_api(type).context()), "trace_stop");
}

std::vector<DeviceTraceRecord> device_trace_collect(DeviceType type, uint64_t* dropped) {
  const auto& t = trace_extension(type, "trace_collect");
  void* ctx = device_api(type).context();
  std::vector<DeviceTraceRecord> out;
  std::vector<sdk_trace_record> buf(4096);
  // Note [Device trace extension]: version 2 also returns each record's correlation id.
  const bool correlated = t.base.version >= 2;
  std::vector<uint64_t> ids(correlated ? buf.size() : 0);
  uint64_t total_dropped = 0;
  for (;;) {
    size_t count = 0;
    uint64_t d = 0;
    check_status(type,
                 correlated ? t.collect_correlated(ctx, buf.data(), ids.data(), buf.size(), &count, &d)
                            : t.collect(ctx, buf.data(), buf.size(), &count, &d),
                 "trace_collect");
    SDK_CHECK(count <= buf.size(), "trace_collect: the device of backend '", device_type_name(type),
              "' returned ", count, " records for a buffer of ", buf.size());
    total_dropped += d;
    for (size_t i = 0; i < count; ++i) {
      const sdk_trace_record& r = buf[i];
      DeviceTraceRecord x;
      x.kind = r.kind;
      x.device = r.device;
      x.stream = r.stream;
      x.start_ns = r.start_ns;
      x.end_ns = r.end_ns;
      x.bytes = r.bytes;
      x.name.assign(r.name, strnlen(r.name, SDK_TRACE_NAME_MAX));
      if (correlated) x.correlation_id = ids[i];
      out.push_back(std::move(x));
    }
    if (count < buf.size()) break;
  }
  if (dropped) *dropped = total_dropped;
  return out;
}

}  // namespace sdk::runtime
