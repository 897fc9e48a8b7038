// randperm and multinomial: CPU and Meta kernels (randperm is a factory: a
// BackendSelect kernel picks the backend from `device`).
//
// Note [Sampling with Philox]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Both draw their randomness as one Philox fill (Note [Philox random numbers])
// from the generator of the operator's device, so manual_seed reproduces them
// (the numbers are the SDK's, not PyTorch's mt19937 ones):
//   randperm(n):  n random 64-bit keys; the permutation sorts them (ties, which
//                 need two equal 64-bit words, broken by index).
//   multinomial with replacement: one uniform u per sample, mapped through the
//                 row's cumulative distribution (the first category whose
//                 cumulative probability exceeds u * total).
//   multinomial without replacement: one uniform u per category; the
//                 categories with the smallest -log(u) / p are chosen, in that
//                 order (the exponential race: the same distribution as drawing
//                 one at a time and renormalising).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/Random.h>
#include <backend_sdk/ops/detail/BackendSelect.h>
#include <backend_sdk/ops/detail/CompositeOps.h>

namespace sdk::ops {
namespace {

template <DeviceType kType>
Tensor randperm_impl(int64_t n, const std::optional<Generator>& generator, std::optional<ScalarType> dtype,
                     std::optional<Device> device) {
  SDK_CHECK_VALUE(n >= 0, "n must be non-negative, got", n);
  const ScalarType t = dtype.value_or(ScalarType::Int64);
  SDK_CHECK_TYPE(t != ScalarType::Bool, "randperm is only implemented for numeric dtypes, got bool");
  const Device dev = device.value_or(Device(kType));
  if constexpr (kType == DeviceType::Meta) {
    return make_tensor({n}, t, dev);
  } else {
    Tensor keys = make_tensor({n}, ScalarType::Int64, Device(DeviceType::CPU));
    auto [seed, offset] = philox_reserve(generator, Device(DeviceType::CPU), philox_random_counters(0, n), "randperm");
    philox_random_fill(keys, 0, 0, seed, offset);
    const int64_t* k = keys.data_ptr<int64_t>();
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), int64_t{0});
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return k[a] < k[b] || (k[a] == k[b] && a < b); });
    Tensor perm = cx::index_tensor(order, Device(DeviceType::CPU));
    Tensor out = make_tensor({n}, t, dev);
    return copy_(out, perm);
  }
}

using OptDtype = std::optional<ScalarType>;
using OptLayout = std::optional<int64_t>;
using OptDevice = std::optional<Device>;
using OptBool = std::optional<bool>;

template <DeviceType kType>
Tensor randperm_kernel(int64_t n, OptDtype dtype, OptLayout, OptDevice device, OptBool) {
  return randperm_impl<kType>(n, std::nullopt, dtype, device);
}
template <DeviceType kType>
Tensor randperm_generator_kernel(int64_t n, const std::optional<Generator>& generator, OptDtype dtype, OptLayout,
                                 OptDevice device, OptBool) {
  return randperm_impl<kType>(n, generator, dtype, device);
}

template <bool kCpu>
Tensor multinomial_kernel(const Tensor& self, int64_t num_samples, bool replacement,
                          const std::optional<Generator>& generator) {
  SDK_CHECK_VALUE(self.dim() == 1 || self.dim() == 2, "prob_dist must be 1 or 2 dim");
  SDK_CHECK_TYPE(is_floating_type(self.dtype()), "multinomial only supports floating-point dtypes for input, got: ",
                 scalar_type_name(self.dtype()));
  SDK_CHECK_VALUE(num_samples > 0, "cannot sample n_sample <= 0 samples");
  const int64_t k = self.size(-1), rows = self.dim() == 2 ? self.size(0) : 1;
  SDK_CHECK_VALUE(replacement || num_samples <= k, "cannot sample n_sample > prob_dist.size(-1) samples without "
                  "replacement");
  DimVector out_sizes = self.dim() == 2 ? DimVector({rows, num_samples}) : DimVector({num_samples});
  if constexpr (!kCpu) {
    return make_tensor(out_sizes, ScalarType::Int64, self.device());
  } else {
    Tensor p = cx::dense(self, ScalarType::Float64);
    const double* pp = p.data_ptr<double>();
    for (int64_t r = 0; r < rows; ++r) {
      double total = 0;
      for (int64_t j = 0; j < k; ++j) {
        const double v = pp[r * k + j];
        SDK_CHECK_VALUE(std::isfinite(v) && v >= 0, "probability tensor contains either `inf`, `nan` or element < 0");
        total += v;
      }
      SDK_CHECK_VALUE(total > 0, "invalid multinomial distribution (sum of probabilities <= 0)");
    }
    const int64_t draws = replacement ? rows * num_samples : rows * k;
    Tensor u = make_tensor({draws}, ScalarType::Float64, Device(DeviceType::CPU));
    auto [seed, offset] = philox_reserve(generator, self.device(), philox_uniform_counters(ScalarType::Float64, draws),
                                         "multinomial");
    philox_uniform_fill(u, 0.0, 1.0, seed, offset);
    const double* pu = u.data_ptr<double>();
    Tensor out = make_tensor(out_sizes, ScalarType::Int64, Device(DeviceType::CPU));
    int64_t* po = out.data_ptr<int64_t>();
    std::vector<double> cdf(static_cast<size_t>(k));
    std::vector<int64_t> order(static_cast<size_t>(k));
    std::vector<double> keys(static_cast<size_t>(k));
    for (int64_t r = 0; r < rows; ++r) {
      const double* row = pp + r * k;
      if (replacement) {
        std::partial_sum(row, row + k, cdf.begin());
        const double total = cdf.back();
        for (int64_t s = 0; s < num_samples; ++s) {
          const double target = pu[r * num_samples + s] * total;
          int64_t j = std::upper_bound(cdf.begin(), cdf.end(), target) - cdf.begin();
          j = std::min(j, k - 1);
          while (j > 0 && row[j] == 0) --j;  // never a zero-probability category (rounding at the end)
          po[r * num_samples + s] = j;
        }
      } else {
        for (int64_t j = 0; j < k; ++j) {
          const double e = -std::log1p(-pu[r * k + j]);  // exponential(1); u in [0, 1)
          keys[static_cast<size_t>(j)] = row[j] > 0 ? e / row[j] : INFINITY;
        }
        std::iota(order.begin(), order.end(), int64_t{0});
        std::partial_sort(order.begin(), order.begin() + num_samples, order.end(), [&](int64_t a, int64_t b) {
          return keys[static_cast<size_t>(a)] < keys[static_cast<size_t>(b)] ||
                 (keys[static_cast<size_t>(a)] == keys[static_cast<size_t>(b)] && a < b);
        });
        int64_t positive = 0;
        for (int64_t j = 0; j < k; ++j) positive += row[j] > 0 ? 1 : 0;
        SDK_CHECK_VALUE(num_samples <= positive, "multinomial: cannot sample ", num_samples, " categories without "
                        "replacement from a row with ", positive, " non-zero probabilities");
        for (int64_t s = 0; s < num_samples; ++s) po[r * num_samples + s] = order[static_cast<size_t>(s)];
      }
    }
    if (self.is_cpu()) return out;
    return _to_copy(out, std::nullopt, self.device());
  }
}

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_FRAGMENT(aten, m) {
  m.def("randperm(SymInt n, *, ScalarType? dtype=long, Layout? layout=None, Device? device=None, "
        "bool? pin_memory=None) -> Tensor");
  m.def("randperm.generator(SymInt n, *, Generator? generator, ScalarType? dtype=long, Layout? layout=None, "
        "Device? device=None, bool? pin_memory=None) -> Tensor");
  m.def("multinomial(Tensor self, SymInt num_samples, bool replacement=False, *, Generator? generator=None) -> Tensor");
}

SDK_LIBRARY_IMPL(aten, CPU, m) {
  m.impl("randperm", &sdk::ops::randperm_kernel<sdk::DeviceType::CPU>);
  m.impl("randperm.generator", &sdk::ops::randperm_generator_kernel<sdk::DeviceType::CPU>);
  m.impl("multinomial", &sdk::ops::multinomial_kernel<true>);
}
SDK_LIBRARY_IMPL(aten, Meta, m) {
  m.impl("randperm", &sdk::ops::randperm_kernel<sdk::DeviceType::Meta>);
  m.impl("randperm.generator", &sdk::ops::randperm_generator_kernel<sdk::DeviceType::Meta>);
  m.impl("multinomial", &sdk::ops::multinomial_kernel<false>);
}
SDK_LIBRARY_IMPL(aten, BackendSelect, m) {
  for (const char* name : {"randperm", "randperm.generator"}) {
    m.impl(name, sdk::CppFunction::make_from_boxed(&sdk::ops::backend_select_boxed));
  }
}
