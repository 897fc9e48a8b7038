// Event: a marker in a stream's work, for waiting, querying and timing.
//
// Note [Event lifetime]
// ~~~~~~~~~~~~~~~~~~~~~
// As in PyTorch, an Event creates its native event lazily, on the device of
// the stream it is first recorded on, and belongs to that device from then
// on: recording it on another device's stream is an error. An Event that was
// never recorded is complete (query() is true, synchronize() returns) and has
// no time. The native event is destroyed with the Event; the device lets a
// record still queued complete harmlessly.
#pragma once

#include <cstdint>

#include <backend_sdk/core/DeviceType.h>
#include <backend_sdk/core/Macros.h>
#include <backend_sdk/runtime/DeviceApi.h>
#include <backend_sdk/runtime/Stream.h>

namespace sdk::runtime {

class SDK_API Event {
 public:
  explicit Event(bool enable_timing = false, bool blocking = false)
      : enable_timing_(enable_timing), blocking_(blocking) {}
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& o) noexcept;
  Event& operator=(Event&& o) noexcept;

  void record(const Stream& stream);
  bool query() const;
  void synchronize() const;
  // Milliseconds from this event to `end`; both need enable_timing and a record.
  float elapsed_time(const Event& end) const;

  bool is_created() const { return native_ != nullptr; }
  bool was_recorded() const { return was_recorded_; }
  bool enable_timing() const { return enable_timing_; }
  bool blocking() const { return blocking_; }
  // The device of the first record (index -1 until then).
  Device device() const { return device_; }
  sdk_event_t native() const { return native_; }

 private:
  void release() noexcept;

  bool enable_timing_;
  bool blocking_;
  bool was_recorded_ = false;
  Device device_{DeviceType::CPU, -1};
  sdk_event_t native_ = nullptr;
};

}  // namespace sdk::runtime
