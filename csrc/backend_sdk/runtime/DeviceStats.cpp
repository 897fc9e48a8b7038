#include <backend_sdk/runtime/DeviceStats.h>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/runtime/DeviceRegistry.h>
#include <backend_sdk/runtime/DeviceStatsExtension.h>

namespace sdk::runtime {

bool has_device_stats(DeviceType type) { return find_device_extension(type, SDK_STATS_EXTENSION_NAME) != nullptr; }

DeviceActivity device_activity(DeviceType type, int index, const char* what) {
  const DeviceApi& api = device_api(type);  // RuntimeError if no device
  const auto* ext = find_device_extension(type, SDK_STATS_EXTENSION_NAME);
  SDK_CHECK_NOT_IMPLEMENTED(ext != nullptr, what, ": the device of backend '", device_type_name(type), "' (",
                            device_source(type), ") does not implement the '", SDK_STATS_EXTENSION_NAME,
                            "' extension, so it reports no ", what, " (Note [Device stats extension])");
  const auto& st = *reinterpret_cast<const sdk_stats_extension*>(ext);  // size checked at attach
  // Note [Device stats extension]: the caller's size first, the rest zeroed; the device writes what fits both.
  sdk_device_stats raw{};
  raw.struct_size = sizeof(raw);
  check_status(type, st.query(api.context(), static_cast<int32_t>(index), &raw), what);
  SDK_CHECK(raw.kernel_percent <= 100 && raw.memory_percent <= 100, what, ": the device of backend '",
            device_type_name(type), "' reported ", raw.kernel_percent, "% kernel and ", raw.memory_percent,
            "% memory activity (percentages are 0..100)");
  DeviceActivity out;
  out.sample_period_ns = static_cast<int64_t>(raw.sample_period_ns);
  out.kernel_percent = static_cast<int>(raw.kernel_percent);
  out.memory_percent = static_cast<int>(raw.memory_percent);
  return out;
}

}  // namespace sdk::runtime
