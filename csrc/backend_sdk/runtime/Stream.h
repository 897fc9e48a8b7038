// Stream: a handle to an in-order queue of device work, StreamGuard, and the
// per-device stream pools.
//
// Note [Stream pools]
// ~~~~~~~~~~~~~~~~~~~
// A Stream is a small value (backend, device index, slot) and never owns its
// native handle: each device has a default stream (slot 0) and two pools of
// kStreamsPerPool streams, one at normal priority (the device's "least"
// priority) and one at high priority (its "greatest"). stream_from_pool()
// hands pool streams out round-robin, as PyTorch does, so creating Stream
// objects in a loop never exhausts the device. Native streams are created on
// first use and live until the process exits; Stream values therefore stay
// valid forever and compare by slot.
#pragma once

#include <cstdint>
#include <ostream>

#include <backend_sdk/core/DeviceType.h>
#include <backend_sdk/core/Macros.h>
#include <backend_sdk/runtime/DeviceApi.h>

namespace sdk::runtime {

class Event;

constexpr int kStreamsPerPool = 16;
constexpr int kStreamSlotsPerDevice = 1 + 2 * kStreamsPerPool;

class SDK_API Stream {
 public:
  // The default stream of `device` (index must be set).
  explicit Stream(Device device, int16_t slot = 0) : device_(device), slot_(slot) {}

  Device device() const { return device_; }
  int16_t slot() const { return slot_; }
  // A process-unique id: (backend, device, slot) packed into one integer.
  int64_t id() const {
    return (static_cast<int64_t>(device_.type) << 16) | (static_cast<int64_t>(device_.index) << 8) | slot_;
  }
  static Stream from_id(int64_t id);
  bool is_default() const { return slot_ == 0; }
  int priority() const;

  // The device's handle (created on first use).
  sdk_stream_t native() const;
  // True if all work queued so far has completed.
  bool query() const;
  void synchronize() const;
  // Work queued on this stream from now on waits for the event's last record.
  void wait(const Event& event) const;

  bool operator==(const Stream& o) const { return device_ == o.device_ && slot_ == o.slot_; }
  bool operator!=(const Stream& o) const { return !(*this == o); }

 private:
  Device device_;
  int16_t slot_;
};

SDK_API std::ostream& operator<<(std::ostream& os, const Stream& s);

// Index -1 means the current device of d.type.
SDK_API Stream default_stream(Device d);
SDK_API Stream current_stream(Device d);
// Makes s the current stream of its device on this thread (does not change
// the current device).
SDK_API void set_current_stream(Stream s);
// A pool stream (Note [Stream pools]). priority <= greatest picks the high
// priority pool; anything else the normal pool.
SDK_API Stream stream_from_pool(Device d, int priority = 0);

// Makes `s` the current stream of its device and its device the current
// device, until destruction (restores both).
class SDK_API StreamGuard {
 public:
  explicit StreamGuard(Stream s);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Stream original_stream_;
  int8_t original_device_;
};

}  // namespace sdk::runtime
