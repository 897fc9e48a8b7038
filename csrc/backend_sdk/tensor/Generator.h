// Generator: the state of a random number stream (a Philox seed and offset),
// and the default generator of each device.
//
// Note [Generators]
// ~~~~~~~~~~~~~~~~~
// A GeneratorImpl is intrusively reference counted and thread safe: every
// method takes its mutex. Random operators never draw numbers from it
// directly; they reserve a range of Philox counters with
// philox_engine_inputs(n) (as PyTorch's CUDA generator does), which returns
// the (seed, offset) to compute with and advances the offset by n, so a
// kernel may run later (on an asynchronous stream) and still produce the
// numbers of the moment it was called. See Note [Philox random numbers]
// (core/Philox.h) for how (seed, offset, element index) become values.
//
// The state (get_state/set_state) is a CPU uint8 tensor of 16 bytes: the
// seed then the offset, each a little-endian uint64. manual seeding
// (set_current_seed) resets the offset to 0.
//
// Default generators: one for cpu and one per (device type, index) of every
// other backend, created on first use with seed kDefaultRngSeed (PyTorch's
// default_rng_seed_val), or with the seed of the last manual_seed_all, and
// never destroyed. A device without an index means
// the current device of its type. Meta has no generator.
#pragma once

#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include <backend_sdk/core/DeviceType.h>
#include <backend_sdk/core/IntrusivePtr.h>
#include <backend_sdk/tensor/Tensor.h>

namespace sdk {

constexpr uint64_t kDefaultRngSeed = 67280421310721ULL;
constexpr int64_t kGeneratorStateSize = 16;  // bytes: seed, offset

class SDK_API GeneratorImpl : public intrusive_target {
 public:
  // ValueError for meta.
  explicit GeneratorImpl(Device device, uint64_t seed = kDefaultRngSeed);

  Device device() const { return device_; }
  // Sets the seed and resets the offset to 0.
  void set_current_seed(uint64_t seed);
  uint64_t current_seed() const;
  // Seeds from a non-deterministic source; returns the new seed.
  uint64_t seed();
  void set_offset(uint64_t offset);
  uint64_t get_offset() const;
  // Reserves `increment` Philox counters: returns (seed, offset before) and
  // advances the offset by `increment`.
  std::pair<uint64_t, uint64_t> philox_engine_inputs(uint64_t increment);
  // A new CPU uint8 tensor of kGeneratorStateSize bytes.
  Tensor get_state() const;
  // ValueError/TypeError unless `state` is a CPU uint8 tensor of kGeneratorStateSize elements.
  void set_state(const Tensor& state);

 private:
  Device device_;
  mutable std::mutex mutex_;
  uint64_t seed_;
  uint64_t offset_ = 0;
};

// A handle to a GeneratorImpl, like at::Generator.
class SDK_API Generator {
 public:
  Generator() = default;
  explicit Generator(intrusive_ptr<GeneratorImpl> impl) : impl_(std::move(impl)) {}
  bool defined() const { return static_cast<bool>(impl_); }
  GeneratorImpl* impl() const { return impl_.get(); }
  GeneratorImpl* operator->() const { return impl_.get(); }
  bool operator==(const Generator& o) const { return impl_ == o.impl_; }
  bool operator!=(const Generator& o) const { return impl_ != o.impl_; }

 private:
  intrusive_ptr<GeneratorImpl> impl_;
};

// A new generator of `device` seeded with kDefaultRngSeed.
SDK_API Generator make_generator(Device device);
// The default generator of `device` (created on first use); ValueError for meta.
SDK_API Generator default_generator(Device device);
// Every default generator created so far, cpu's first.
SDK_API std::vector<Generator> default_generators();
// Seeds every default generator, and those created later, with `seed`
// (torch.manual_seed: one seed gives the same numbers on every device).
SDK_API void manual_seed_all(uint64_t seed);
// 64 bits from a non-deterministic source (std::random_device and the clock).
SDK_API uint64_t nondeterministic_seed();

}  // namespace sdk
