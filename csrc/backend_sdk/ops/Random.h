// Random operators' building blocks: the CPU fill kernels with an explicit
// (seed, offset), so a simulated or real device can produce the CPU's numbers
// later (see Note [Philox random numbers] in core/Philox.h), and the
// reservation of Philox counters from a generator.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>

#include <backend_sdk/tensor/Generator.h>
#include <backend_sdk/tensor/Tensor.h>

namespace sdk::ops {

// The generator an operator on `device` uses: `generator` if given (ValueError
// unless its device type is device's: "op: Expected a 'cpu' device type for
// generator but found 'accel'"), else the device's default generator.
SDK_API Generator generator_or_default(const std::optional<Generator>& generator, Device device, const char* op);
// Reserves `counters` Philox counters from that generator: (seed, offset).
SDK_API std::pair<uint64_t, uint64_t> philox_reserve(const std::optional<Generator>& generator, Device device,
                                                      uint64_t counters, const char* op);

// Counters each fill of `numel` elements of dtype t reserves.
SDK_API uint64_t philox_uniform_counters(ScalarType t, int64_t numel);
SDK_API uint64_t philox_normal_counters(int64_t numel);
SDK_API uint64_t philox_random_counters(uint64_t range, int64_t numel);  // range 0 means 2^64
SDK_API uint64_t philox_double_counters(int64_t numel);                  // bernoulli, exponential

// The fills: `self` must be a CPU tensor (any strides); element i in
// row-major logical order gets the value of Note [Philox random numbers].
// No argument checks: the operators check before calling them.
// Uniform in [from, to) (floating dtypes).
SDK_API void philox_uniform_fill(const Tensor& self, double from, double to, uint64_t seed, uint64_t offset);
// Normal with mean and std (floating dtypes).
SDK_API void philox_normal_fill(const Tensor& self, double mean, double std, uint64_t seed, uint64_t offset);
// Integers from + (word % range); range 0 means 2^64 (every int64).
SDK_API void philox_random_fill(const Tensor& self, int64_t from, uint64_t range, uint64_t seed, uint64_t offset);
// 1 where u < p (u uniform double), else 0. p_tensor (if defined) is a CPU
// float64 tensor of self's shape holding each element's p.
SDK_API void philox_bernoulli_fill(const Tensor& self, double p, const Tensor& p_tensor, uint64_t seed,
                                   uint64_t offset);
// -log(1 - u) / lambd.
SDK_API void philox_exponential_fill(const Tensor& self, double lambd, uint64_t seed, uint64_t offset);

// ---- the operators, through the dispatcher (any backend) ----
SDK_API Tensor rand(IntArrayRef size, const std::optional<Generator>& generator = std::nullopt,
                    std::optional<ScalarType> dtype = std::nullopt, std::optional<Device> device = std::nullopt);
SDK_API Tensor randn(IntArrayRef size, const std::optional<Generator>& generator = std::nullopt,
                     std::optional<ScalarType> dtype = std::nullopt, std::optional<Device> device = std::nullopt);
// Integers in [low, high); dtype defaults to int64.
SDK_API Tensor randint(int64_t low, int64_t high, IntArrayRef size,
                       const std::optional<Generator>& generator = std::nullopt,
                       std::optional<ScalarType> dtype = std::nullopt, std::optional<Device> device = std::nullopt);
SDK_API Tensor uniform_(const Tensor& self, double from = 0.0, double to = 1.0,
                        const std::optional<Generator>& generator = std::nullopt);
SDK_API Tensor normal_(const Tensor& self, double mean = 0.0, double stddev = 1.0,
                       const std::optional<Generator>& generator = std::nullopt);
SDK_API Tensor bernoulli_(const Tensor& self, double p, const std::optional<Generator>& generator = std::nullopt);

}  // namespace sdk::ops
