// Busy-time meters of a simulated device, for the "sdk.stats" extension
// (Note [Device stats extension] in runtime/DeviceStatsExtension.h).
//
// Note [Simulated activity]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// Each device has two meters: kernels (every kernel a worker runs, replayed
// graph kernels included, from the start of its function to the end of its
// timing-model pad, Note [Simulated timing]) and memory (copies and memsets,
// on streams and synchronous, with their bandwidth pads). Host functions,
// event records and waits are neither. Kernel memory traffic is not counted
// in memory (the simulator cannot see it), which the docs say.
// A meter counts the *union* of its busy intervals: ops running at once on
// several workers (several streams) count once, so the figure is NVML's
// "percent of time one or more kernels was executing", never above 100.
// The meter keeps an active count; the interval from 0 -> 1 to 1 -> 0 is
// spread over a ring of kBuckets buckets of kBucketNs (each tagged with its
// bucket number, so a stale slot reads as empty). A sample covers the whole
// buckets of the last kSamplePeriodNs up to now, plus the part of a still open
// interval inside them; it is shorter while the device is younger than that
// (never before its creation). One small mutex per meter: two lock pairs per
// op on the worker, not on the launching thread.
#pragma once

#include <cstdint>
#include <mutex>

namespace device_sim {

class ActivityMeter {
 public:
  static constexpr int64_t kBucketNs = 2'000'000;  // 2 ms
  static constexpr int kBuckets = 100;              // a 200 ms sample period (NVML's: 1/6 s .. 1 s)
  static constexpr int64_t kSamplePeriodNs = kBucketNs * kBuckets;

  explicit ActivityMeter(int64_t created_ns) : created_ns_(created_ns) {}
  void begin(int64_t t);
  void end(int64_t t);
  // Busy time and length of the sample period ending at `now` (a now_ns() value).
  void sample(int64_t now, int64_t* busy_ns, int64_t* period_ns);

 private:
  void add_locked(int64_t a, int64_t b);

  const int64_t created_ns_;
  std::mutex mutex_;
  int active_ = 0;          // ops of this meter running now
  int64_t busy_since_ = 0;  // start of the open interval (active_ > 0)
  int64_t bucket_[kBuckets] = {};   // bucket number the slot holds
  int64_t busy_[kBuckets] = {};     // busy ns of that bucket
};

// Counts an op on `m` for the scope: begin at construction, end at destruction.
class ActivityScope {
 public:
  ActivityScope(ActivityMeter* m, int64_t start) : m_(m) {
    if (m_) m_->begin(start);
  }
  ~ActivityScope();
  ActivityScope(const ActivityScope&) = delete;
  ActivityScope& operator=(const ActivityScope&) = delete;

 private:
  ActivityMeter* m_;
};

}  // namespace device_sim
