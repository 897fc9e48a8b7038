#include <backend_sdk/runtime/Event.h>

#include <cstdio>
#include <utility>

#include <backend_sdk/core/Exception.h>
#include <backend_sdk/runtime/detail/BlockingWait.h>
#include <backend_sdk/runtime/DeviceRegistry.h>

namespace sdk::runtime {

Event::~Event() { release(); }

Event::Event(Event&& o) noexcept
    : enable_timing_(o.enable_timing_),
      blocking_(o.blocking_),
      was_recorded_(o.was_recorded_),
      device_(o.device_),
      native_(std::exchange(o.native_, nullptr)) {
  o.was_recorded_ = false;
}

Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    release();
    enable_timing_ = o.enable_timing_;
    blocking_ = o.blocking_;
    was_recorded_ = std::exchange(o.was_recorded_, false);
    device_ = o.device_;
    native_ = std::exchange(o.native_, nullptr);
  }
  return *this;
}

void Event::release() noexcept {
  if (native_ == nullptr) return;
  if (in_bad_fork()) {  // Note [Fork safety]: the parent's event; leak it
    native_ = nullptr;
    return;
  }
  sdk_status s = device_api(device_.type).event_destroy(native_);
  if (s != SDK_SUCCESS) {
    std::fprintf(stderr, "backend_sdk: destroying an event of %s failed: %s\n", device_.str().c_str(),
                 status_message(device_.type, s).c_str());
  }
  native_ = nullptr;
}

void Event::record(const Stream& stream) {
  Device d = stream.device();
  if (native_ == nullptr) {
    uint32_t flags = (enable_timing_ ? SDK_EVENT_TIMING : 0u) | (blocking_ ? SDK_EVENT_BLOCKING : 0u);
    sdk_event_t e = nullptr;
    check_status(d.type, device_api(d.type).event_create(d.index, flags, &e), detail::str("creating an event on ", d));
    native_ = e;
    device_ = d;
  }
  SDK_CHECK_VALUE(device_ == d, "Event.record: the event belongs to ", device_, " and cannot be recorded on ", stream,
                  " (an event is recorded on streams of one device only)");
  check_status(d.type, device_api(d.type).event_record(native_, stream.native()),
               detail::str("recording an event on ", stream));
  was_recorded_ = true;
}

bool Event::query() const {
  if (native_ == nullptr) return true;
  sdk_status s = device_api(device_.type).event_query(native_);
  if (s == SDK_ERROR_NOT_READY) return false;
  check_status(device_.type, s, detail::str("query of an event on ", device_));
  return true;
}

void Event::synchronize() const {
  if (native_ == nullptr) return;
  const std::string what = detail::str("synchronize of an event on ", device_);
  BlockingWait wait(what.c_str());  // Note [Blocking waits release the GIL], Note [Sync debug mode]
  check_status(device_.type, device_api(device_.type).event_synchronize(native_),
               detail::str("synchronize of an event on ", device_));
}

float Event::elapsed_time(const Event& end) const {
  SDK_CHECK_VALUE(enable_timing_ && end.enable_timing_,
                  "Both events must be created with argument 'enable_timing=True'.");
  SDK_CHECK_VALUE(was_recorded_ && end.was_recorded_,
                  "Both events must be recorded before calculating elapsed time.");
  SDK_CHECK_VALUE(device_ == end.device_, "elapsed_time: the events were recorded on different devices (", device_,
                  " and ", end.device_, ")");
  float ms = 0;
  sdk_status s = device_api(device_.type).event_elapsed_time(&ms, native_, end.native_);
  SDK_CHECK_VALUE(s != SDK_ERROR_NOT_READY,
                  "elapsed_time: an event has not completed yet; synchronize it before calling elapsed_time");
  check_status(device_.type, s, "elapsed_time");
  return ms;
}

}  // namespace sdk::runtime
