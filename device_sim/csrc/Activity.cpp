#include "Activity.h"

#include <algorithm>

namespace device_sim {

int64_t now_ns();  // SimDevice.cpp

void ActivityMeter::begin(int64_t t) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (active_++ == 0) busy_since_ = t;
}

void ActivityMeter::end(int64_t t) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (active_ <= 0) return;  // unbalanced: ignore rather than corrupt the count
  if (--active_ == 0) add_locked(busy_since_, t);
}

// Note [Simulated activity]: spreads [a, b) over the buckets it overlaps (only the last kBuckets matter).
void ActivityMeter::add_locked(int64_t a, int64_t b) {
  if (b <= a) return;
  const int64_t last = (b - 1) / kBucketNs;
  for (int64_t k = std::max(a / kBucketNs, last - kBuckets + 1); k <= last; ++k) {
    const int64_t lo = std::max(a, k * kBucketNs), hi = std::min(b, (k + 1) * kBucketNs);
    const int slot = static_cast<int>(k % kBuckets);
    if (bucket_[slot] != k) {
      bucket_[slot] = k;
      busy_[slot] = 0;
    }
    busy_[slot] += hi - lo;
  }
}

void ActivityMeter::sample(int64_t now, int64_t* busy_ns, int64_t* period_ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t current = now / kBucketNs;
  const int64_t first = current - kBuckets + 1;
  const int64_t start = std::max(first * kBucketNs, created_ns_);
  int64_t busy = 0;
  for (int i = 0; i < kBuckets; ++i)
    if (bucket_[i] >= first && bucket_[i] <= current) busy += busy_[i];
  if (active_ > 0) busy += now - std::max(busy_since_, start);
  *period_ns = std::max<int64_t>(now - start, 1);
  *busy_ns = std::clamp<int64_t>(busy, 0, *period_ns);
}

ActivityScope::~ActivityScope() {
  if (m_) m_->end(now_ns());
}

}  // namespace device_sim
