#include <backend_sdk/runtime/Stream.h>

#include <atomic>
#include <cstdio>
#include <mutex>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/runtime/DeviceGuard.h>
#include <backend_sdk/runtime/detail/BlockingWait.h>
#include <backend_sdk/runtime/DeviceRegistry.h>
#include <backend_sdk/runtime/Event.h>
#include <backend_sdk/runtime/ExternalStream.h>

namespace sdk::runtime {
namespace {

// Note [Stream pools]: native handles per device, created on first use.
struct DeviceStreams {
  std::mutex mutex;  // serialises creation only
  // Pool slots, then Note [External streams]' slots (filled by external_stream, never created here).
  std::atomic<sdk_stream_t> handles[kStreamSlotsPerDevice + kMaxExternalStreams] = {};
  int external_count = 0;  // under mutex
  std::atomic<uint32_t> next_normal{0};
  std::atomic<uint32_t> next_high{0};
};

DeviceStreams& streams_of(Device d) {
  static DeviceStreams table[kNumDeviceTypes][kMaxDevicesPerType];
  return table[static_cast<int>(d.type)][d.index];
}

// Note [Current device and stream]: slot of the current stream per device;
// trivially destructible so it is readable during thread exit.
thread_local int16_t t_current_slot[kNumDeviceTypes][kMaxDevicesPerType] = {};

bool is_high_priority_slot(int16_t slot) { return slot > kStreamsPerPool && slot < kStreamSlotsPerDevice; }

}  // namespace

Stream Stream::from_id(int64_t id) {
  auto type = static_cast<DeviceType>((id >> 16) & 0xff);
  auto index = static_cast<int8_t>((id >> 8) & 0xff);
  auto slot = static_cast<int16_t>(id & 0xff);
  SDK_CHECK_VALUE(is_privateuse(type) && slot >= 0 && slot < kStreamSlotsPerDevice + kMaxExternalStreams,
                  "Stream.from_id: ", id, " is not a stream id");
  check_device_index(type, index, "Stream.from_id");
  SDK_CHECK_VALUE(slot < kStreamSlotsPerDevice ||
                      streams_of(Device(type, index)).handles[slot].load(std::memory_order_acquire) != nullptr,
                  "Stream.from_id: ", id, " is not a stream id (no external stream has that slot)");
  return Stream(Device(type, index), slot);
}

int Stream::priority() const {
  const DeviceProperties& p = device_properties(device_.type, device_.index);
  return is_high_priority_slot(slot_) ? p.stream_priority_greatest : p.stream_priority_least;
}

sdk_stream_t Stream::native() const {
  DeviceStreams& ds = streams_of(device_);
  sdk_stream_t h = ds.handles[slot_].load(std::memory_order_acquire);
  if (SDK_LIKELY(h != nullptr)) return h;
  std::lock_guard<std::mutex> lock(ds.mutex);
  h = ds.handles[slot_].load(std::memory_order_relaxed);
  if (h != nullptr) return h;
  check_status(device_.type, device_api(device_.type).stream_create(device_.index, priority(), &h),
               detail::str("creating stream ", slot_, " of ", device_));
  SDK_CHECK(h != nullptr, "stream_create of ", device_, " returned a NULL stream");
  ds.handles[slot_].store(h, std::memory_order_release);
  return h;
}

bool Stream::query() const {
  sdk_status s = device_api(device_.type).stream_query(native());
  if (s == SDK_ERROR_NOT_READY) return false;
  check_status(device_.type, s, detail::str("query of ", *this));
  return true;
}

void Stream::synchronize() const {
  const std::string what = detail::str("synchronize of ", *this);
  BlockingWait wait(what.c_str());  // Note [Blocking waits release the GIL], Note [Sync debug mode]
  check_status(device_.type, device_api(device_.type).stream_synchronize(native()),
               detail::str("synchronize of ", *this));
}

void Stream::wait(const Event& event) const {
  if (!event.is_created()) return;  // never recorded: nothing to wait for
  check_status(device_.type, device_api(device_.type).stream_wait_event(native(), event.native()),
               detail::str("wait_event on ", *this));
}

std::ostream& operator<<(std::ostream& os, const Stream& s) {
  return os << "stream " << s.slot() << " of " << s.device();
}

Stream default_stream(Device d) { return Stream(resolve_device(d, "default_stream"), 0); }

Stream current_stream(Device d) {
  d = resolve_device(d, "current_stream");
  return Stream(d, t_current_slot[static_cast<int>(d.type)][d.index]);
}

void set_current_stream(Stream s) {
  Device d = resolve_device(s.device(), "set_stream");
  t_current_slot[static_cast<int>(d.type)][d.index] = s.slot();
}

// Note [External streams].
Stream external_stream(Device d, sdk_stream_t handle) {
  SDK_CHECK_VALUE(is_privateuse(d.type), "ExternalStream: ", d, " is not an accelerator device");
  check_device_index(d.type, d.index, "ExternalStream");
  SDK_CHECK_VALUE(handle != nullptr, "ExternalStream: the stream handle is NULL");
  sdk_status st = device_api(d.type).stream_query(handle);
  if (st != SDK_ERROR_NOT_READY) check_status(d.type, st, detail::str("ExternalStream: checking the handle on ", d));
  DeviceStreams& ds = streams_of(d);
  std::lock_guard<std::mutex> lock(ds.mutex);
  for (int i = 0; i < ds.external_count; ++i) {
    if (ds.handles[kStreamSlotsPerDevice + i].load(std::memory_order_relaxed) == handle) {
      return Stream(d, static_cast<int16_t>(kStreamSlotsPerDevice + i));
    }
  }
  SDK_CHECK(ds.external_count < kMaxExternalStreams, "ExternalStream: ", d, " already has ", kMaxExternalStreams,
            " external streams (Note [External streams])");
  const int slot = kStreamSlotsPerDevice + ds.external_count++;
  ds.handles[slot].store(handle, std::memory_order_release);
  return Stream(d, static_cast<int16_t>(slot));
}

Stream stream_from_pool(Device d, int priority) {
  d = resolve_device(d, "Stream");
  DeviceStreams& ds = streams_of(d);
  const DeviceProperties& p = device_properties(d.type, d.index);
  bool high = p.stream_priority_greatest < p.stream_priority_least && priority <= p.stream_priority_greatest;
  uint32_t n = (high ? ds.next_high : ds.next_normal).fetch_add(1, std::memory_order_relaxed) % kStreamsPerPool;
  return Stream(d, static_cast<int16_t>(1 + n + (high ? kStreamsPerPool : 0)));
}

StreamGuard::StreamGuard(Stream s)
    : original_stream_(current_stream(s.device())), original_device_(current_device_index(s.device().type)) {
  set_current_device(s.device());
  set_current_stream(s);
}

StreamGuard::~StreamGuard() {
  t_current_slot[static_cast<int>(original_stream_.device().type)][original_stream_.device().index] =
      original_stream_.slot();
  try {
    set_current_device(Device(original_stream_.device().type, original_device_));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "backend_sdk: StreamGuard could not restore the current device: %s\n", e.what());
  }
}

}  // namespace sdk::runtime
