// Random operators.
//   uniform_, normal_, random_ (.from, .to, plain), bernoulli_ (.float,
//   .Tensor), exponential_           CPU and Meta kernels (the primitives a
//                                    device backend implements)
//   rand, randn, randint, normal.float_float (and their .generator and out=
//   overloads), rand_like, randn_like, randint_like (and their .generator
//   overloads), bernoulli (.p, .out),
//   normal.Tensor_float/.float_Tensor/.Tensor_Tensor
//                                    CompositeExplicitAutograd over empty and
//                                    the primitives; the factories also have
//                                    BackendSelect kernels (Note [BackendSelect])
// Numbers: Note [Philox random numbers] (core/Philox.h). Generators: Note
// [Generators] (tensor/Generator.h).
#include <backend_sdk/ops/Random.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include <backend_sdk/core/Philox.h>
#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/detail/BackendSelect.h>
#include <backend_sdk/ops/Functions.h>
#include <backend_sdk/ops/Parallel.h>
#include <backend_sdk/ops/detail/VecMath.h>

namespace sdk::ops {

// ---------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------
Generator generator_or_default(const std::optional<Generator>& generator, Device device, const char* op) {
  if (generator && generator->defined()) {
    DeviceType want = device.type;
    DeviceType have = (*generator)->device().type;
    SDK_CHECK_VALUE(want == have, op, ": Expected a '", device_type_name(want),
                    "' device type for generator but found '", device_type_name(have), "'");
    return *generator;
  }
  return default_generator(device);
}

std::pair<uint64_t, uint64_t> philox_reserve(const std::optional<Generator>& generator, Device device,
                                             uint64_t counters, const char* op) {
  return generator_or_default(generator, device, op)->philox_engine_inputs(counters);
}

namespace {

int mantissa_digits(ScalarType t) {
  switch (t) {
    case ScalarType::Float16: return 11;
    case ScalarType::BFloat16: return 8;
    case ScalarType::Float32: return 24;
    default: return 53;
  }
}

template <typename T>
T cast_to(double v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return T(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}
template <typename T>
T cast_int_to(int64_t v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return T(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else {
    return static_cast<T>(v);
  }
}

// Note [Philox in batches]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// The fills take the blocks of consecutive counters from a buffer computed
// several at a time: vec::philox_blocks runs eight Philox4x32-10 blocks per
// AVX2 instruction stream (ops/detail/VecMath.h), philox::block one at a time
// elsewhere; both give the words of Note [Philox random numbers] exactly, so
// which one ran never shows. A cache starts with one vector of 8 blocks and
// doubles its batch up to kMaxBatch, so a 3-element fill computes 8 blocks,
// not 64, while long fills amortise the refill.
struct BlockCache {
  static constexpr int64_t kMaxBatch = 64;
  uint64_t seed, offset;
  uint64_t first = ~uint64_t{0};  // block index (from offset) of words[0]
  uint64_t count = 0;
  int64_t batch = 8;
  alignas(32) uint32_t words[4 * kMaxBatch];
  BlockCache(uint64_t s, uint64_t o) : seed(s), offset(o) {}
  void refill(uint64_t index) {
    first = index;
    count = static_cast<uint64_t>(batch);
    philox_words(seed, offset + index, batch, words);
    batch = std::min(kMaxBatch, 2 * batch);
  }
  const uint32_t* block_words(uint64_t index) {
    if (index - first >= count) refill(index);  // also when index < first (wraps)
    return words + 4 * (index - first);
  }
  philox::Block at(uint64_t index) {
    const uint32_t* w = block_words(index);
    return philox::Block{{w[0], w[1], w[2], w[3]}};
  }
  uint32_t word32(uint64_t i) { return block_words(i / 4)[i % 4]; }
  uint64_t word64(uint64_t i) {
    const uint32_t* w = block_words(i / 2);
    unsigned j = static_cast<unsigned>(i % 2) * 2;
    return philox::join(w[j], w[j + 1]);
  }
  // words[4 k + w] = block(seed, counter + k).x[w] for k < n (Note [Philox in batches]).
  static void philox_words(uint64_t seed, uint64_t counter, int64_t n, uint32_t* words) {
    if (vec::philox_blocks(seed, counter, n, words)) return;
    for (int64_t k = 0; k < n; ++k) {
      const philox::Block b = philox::block(seed, counter + static_cast<uint64_t>(k));
      for (int w = 0; w < 4; ++w) words[4 * k + w] = b.x[w];
    }
  }
};

// Runs body(p, b, e) over chunks [b, e) of the elements of self in row-major
// logical order, p pointing at element 0 (each chunk of the parallel loop
// writes only its own elements). A non-contiguous self is filled through a
// contiguous buffer.
template <typename T, typename Body>
void fill_chunks(const Tensor& self, const Body& body) {
  int64_t n = self.numel();
  if (n == 0) return;
  SDK_CHECK_VALUE(self.is_cpu(), "philox fill: expected a cpu tensor, got one on ", self.device());
  Tensor buf = self.is_contiguous() ? self : make_tensor(self.sizes(), self.dtype(), self.device());
  T* p = buf.data_ptr<T>();
  parallel_for(0, n, kParallelGrain, [&](int64_t b, int64_t e) { body(p, b, e); });
  if (!buf.is_same(self)) copy_(self, buf);
}

// Fills self's elements in row-major logical order: f(cache, i) -> T (each
// chunk of the parallel loop calls its own copy of f).
template <typename T, typename F>
void fill_logical(const Tensor& self, uint64_t seed, uint64_t offset, const F& f) {
  fill_chunks<T>(self, [&](T* p, int64_t b, int64_t e) {
    BlockCache cache{seed, offset};
    F fn = f;  // per-chunk copy: f may keep per-chunk state (a mutable lambda)
    for (int64_t i = b; i < e; ++i) p[i] = fn(cache, static_cast<uint64_t>(i));
  });
}

// Calls f(i0, words, count) over [b, e) in runs: words[j] is the word of
// element i0 + j for a distribution taking `per_block` values of each block
// (4: one 32-bit word each; 2: a pair of words, words[2 j], words[2 j + 1]).
template <int64_t kPerBlock, typename F>
void for_word_runs(uint64_t seed, uint64_t offset, int64_t b, int64_t e, const F& f) {
  constexpr int64_t kBlocks = 128;
  alignas(32) uint32_t words[4 * kBlocks];
  for (int64_t i = b; i < e;) {
    const int64_t blk = i / kPerBlock;
    const int64_t last = std::min<int64_t>(e, (blk + kBlocks) * kPerBlock);
    const int64_t nblocks = (last - 1) / kPerBlock - blk + 1;
    BlockCache::philox_words(seed, offset + static_cast<uint64_t>(blk), nblocks, words);
    f(i, blk, words, last - i);
    i = last;
  }
}

template <typename T>
bool same_bits(T a, T b) {
  if constexpr (sizeof(T) == 4) {
    uint32_t x, y;
    std::memcpy(&x, &a, 4);
    std::memcpy(&y, &b, 4);
    return x == y;
  } else {
    return std::memcmp(&a, &b, sizeof(T)) == 0;
  }
}

// Note [Vectorised Box-Muller]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A float32/float16/bfloat16 normal fill computes Box-Muller's log, cos and
// sin through libmvec (vec::apply, Note [Vector math]) instead of the scalar
// libm the numbers are defined with (Note [Philox random numbers]), and still
// stores exactly the scalar values: libmvec is within 4 ulp of the true
// result and glibc's scalar functions within 1, so the two z differ by at most
// ~10 double ulp (2^-48.7 |z|), and v = mean + std * z by at most
// (|std z| + |v|) 2^-50. err below is 2^10 times that; when v - err and v +
// err round to the same value of the dtype, so does the scalar v between them
// (rounding is monotone), and the vector v is stored. Otherwise (v within err
// of a rounding boundary: about 2^-15 of float32 values, fewer on the
// coarser float16/bfloat16 grids) the element is recomputed with the scalar
// functions. float64 results keep the scalar path:
// no margin is left once the value is the double itself.
template <typename T>
void normal_fill_vectorised(const Tensor& self, double mean, double stddev, uint64_t seed, uint64_t offset) {
  fill_chunks<T>(self, [&](T* p, int64_t b, int64_t e) {
    for_word_runs<2>(seed, offset, b, e, [&](int64_t i0, int64_t blk, const uint32_t* words, int64_t count) {
      constexpr int64_t kBlocks = 128;
      double a[kBlocks], theta[kBlocks], c[kBlocks], sn[kBlocks];
      const int64_t nblocks = (i0 + count - 1) / 2 - blk + 1;
      for (int64_t k = 0; k < nblocks; ++k) {
        const uint32_t* w = words + 4 * k;
        a[k] = 1.0 - philox::uniform_from_uint64(philox::join(w[0], w[1]));
        theta[k] = 6.283185307179586476925286766559 * philox::uniform_from_uint64(philox::join(w[2], w[3]));
      }
      vec::apply(vec::UnaryFn::Log, a, a, nblocks);
      vec::apply(vec::UnaryFn::Cos, c, theta, nblocks);
      vec::apply(vec::UnaryFn::Sin, sn, theta, nblocks);
      double z[2 * kBlocks];  // z[2 k], z[2 k + 1]: the cos and sin values of block blk + k
      for (int64_t k = 0; k < nblocks; ++k) {
        const double r = std::sqrt(-2.0 * a[k]);
        z[2 * k] = r * c[k];
        z[2 * k + 1] = r * sn[k];
      }
      // One branch-free pass (it vectorises), then the rare elements near a rounding boundary again.
      const double* zi = z + (i0 - 2 * blk);
      T* out = p + i0;
      bool near_boundary = false;
      for (int64_t j = 0; j < count; ++j) {
        const double v = mean + stddev * zi[j];
        const double err = (std::fabs(stddev * zi[j]) + std::fabs(v)) * 0x1p-40;
        near_boundary |= !same_bits(cast_to<T>(v - err), cast_to<T>(v + err));
        out[j] = cast_to<T>(v);
      }
      if (!near_boundary) return;
      for (int64_t j = 0; j < count; ++j) {
        const double v = mean + stddev * zi[j];
        const double err = (std::fabs(stddev * zi[j]) + std::fabs(v)) * 0x1p-40;
        if (same_bits(cast_to<T>(v - err), cast_to<T>(v + err))) continue;
        const int64_t i = i0 + j;
        const uint32_t* w = words + 4 * (i / 2 - blk);
        double z0, z1;
        philox::normal_pair_from_block(philox::Block{{w[0], w[1], w[2], w[3]}}, &z0, &z1);
        out[j] = cast_to<T>(mean + stddev * ((i % 2 == 0) ? z0 : z1));
      }
    });
  });
}

}  // namespace

uint64_t philox_uniform_counters(ScalarType t, int64_t numel) {
  return philox::counters_for(static_cast<uint64_t>(numel), t == ScalarType::Float64 ? 2 : 4);
}
uint64_t philox_normal_counters(int64_t numel) { return philox::counters_for(static_cast<uint64_t>(numel), 2); }
uint64_t philox_random_counters(uint64_t range, int64_t numel) {
  bool wide = range == 0 || range > (uint64_t{1} << 32);
  return philox::counters_for(static_cast<uint64_t>(numel), wide ? 2 : 4);
}
uint64_t philox_double_counters(int64_t numel) { return philox::counters_for(static_cast<uint64_t>(numel), 2); }

void philox_uniform_fill(const Tensor& self, double from, double to, uint64_t seed, uint64_t offset) {
  double span = to - from;
  int digits = mantissa_digits(self.dtype());
  SDK_DISPATCH_ALL_TYPES(self.dtype(), "uniform_", [&] {
    if constexpr (std::is_floating_point_v<scalar_t> || std::is_same_v<scalar_t, Half> ||
                  std::is_same_v<scalar_t, BFloat16>) {
      if constexpr (std::is_same_v<scalar_t, double>) {
        fill_logical<scalar_t>(self, seed, offset, [&](BlockCache& c, uint64_t i) {
          return from + philox::uniform_from_uint64(c.word64(i)) * span;
        });
      } else {
        if constexpr (std::is_same_v<scalar_t, float>) {
          if (vec::available()) {  // the same values, eight at a time (Note [Philox in batches])
            fill_chunks<float>(self, [&](float* p, int64_t b, int64_t e) {
              for_word_runs<4>(seed, offset, b, e, [&](int64_t i0, int64_t, const uint32_t* words, int64_t count) {
                vec::uniform_f32(p + i0, words + (i0 % 4), count, from, span);
              });
            });
            return;
          }
        }
        // uniform_from_uint32(w, digits), with the scale computed once
        const int shift = 32 - digits;
        const double scale = std::ldexp(1.0, -digits);
        fill_logical<scalar_t>(self, seed, offset, [&](BlockCache& c, uint64_t i) {
          return cast_to<scalar_t>(from + static_cast<double>(c.word32(i) >> shift) * scale * span);
        });
      }
    } else {
      SDK_THROW(Type, "uniform_: expected a floating point tensor, got ", scalar_type_name(self.dtype()));
    }
  });
}

void philox_normal_fill(const Tensor& self, double mean, double stddev, uint64_t seed, uint64_t offset) {
  SDK_DISPATCH_ALL_TYPES(self.dtype(), "normal_", [&] {
    if constexpr (std::is_floating_point_v<scalar_t> || std::is_same_v<scalar_t, Half> ||
                  std::is_same_v<scalar_t, BFloat16>) {
      if constexpr (!std::is_same_v<scalar_t, double>) {
        if (vec::available()) {
          normal_fill_vectorised<scalar_t>(self, mean, stddev, seed, offset);
          return;
        }
      }
      // Both values of a block (cos and sin) are computed once, on its first element.
      struct Pair {
        uint64_t block = ~uint64_t{0};
        double z[2];
      };
      fill_logical<scalar_t>(self, seed, offset, [&, pair = Pair()](BlockCache& c, uint64_t i) mutable {
        if (pair.block != i / 2) {
          pair.block = i / 2;
          const philox::Block& b = c.at(i / 2);
          philox::normal_pair_from_block(b, &pair.z[0], &pair.z[1]);
        }
        return cast_to<scalar_t>(mean + stddev * pair.z[i % 2]);
      });
    } else {
      SDK_THROW(Type, "normal_: expected a floating point tensor, got ", scalar_type_name(self.dtype()));
    }
  });
}

void philox_random_fill(const Tensor& self, int64_t from, uint64_t range, uint64_t seed, uint64_t offset) {
  bool wide = range == 0 || range > (uint64_t{1} << 32);
  SDK_DISPATCH_ALL_TYPES(self.dtype(), "random_", [&] {
    fill_logical<scalar_t>(self, seed, offset, [&](BlockCache& c, uint64_t i) {
      uint64_t r = wide ? c.word64(i) : c.word32(i);
      if (range != 0) r %= range;
      return cast_int_to<scalar_t>(static_cast<int64_t>(static_cast<uint64_t>(from) + r));
    });
  });
}

void philox_bernoulli_fill(const Tensor& self, double p, const Tensor& p_tensor, uint64_t seed, uint64_t offset) {
  const double* pp = p_tensor.defined() ? p_tensor.data_ptr<double>() : nullptr;
  SDK_DISPATCH_ALL_TYPES(self.dtype(), "bernoulli_", [&] {
    fill_logical<scalar_t>(self, seed, offset, [&](BlockCache& c, uint64_t i) {
      double prob = pp ? pp[i] : p;
      return cast_int_to<scalar_t>(philox::uniform_from_uint64(c.word64(i)) < prob ? 1 : 0);
    });
  });
}

void philox_exponential_fill(const Tensor& self, double lambd, uint64_t seed, uint64_t offset) {
  SDK_DISPATCH_ALL_TYPES(self.dtype(), "exponential_", [&] {
    if constexpr (std::is_floating_point_v<scalar_t> || std::is_same_v<scalar_t, Half> ||
                  std::is_same_v<scalar_t, BFloat16>) {
      fill_logical<scalar_t>(self, seed, offset, [&](BlockCache& c, uint64_t i) {
        return cast_to<scalar_t>(-std::log1p(-philox::uniform_from_uint64(c.word64(i))) / lambd);
      });
    } else {
      SDK_THROW(Type, "exponential_: expected a floating point tensor, got ", scalar_type_name(self.dtype()));
    }
  });
}

namespace {

// ---------------------------------------------------------------------------
// Argument checks (shared by the CPU and Meta kernels)
// ---------------------------------------------------------------------------
void check_floating(const char* op, const Tensor& self) {
  SDK_CHECK_TYPE(is_floating_type(self.dtype()), op, ": expected a floating point tensor for 'self', got dtype ",
                 scalar_type_name(self.dtype()));
}

double dtype_max(ScalarType t) {
  switch (t) {
    case ScalarType::Float16: return 65504.0;
    case ScalarType::BFloat16: return 3.3895313892515355e38;
    case ScalarType::Float32: return std::numeric_limits<float>::max();
    default: return std::numeric_limits<double>::max();
  }
}

void check_uniform(const Tensor& self, double from, double to) {
  check_floating("uniform_", self);
  SDK_CHECK_VALUE(from <= to, "uniform_ expects to return a [from, to) range, but found from=", from, " > to=", to);
  SDK_CHECK_VALUE(to - from <= dtype_max(self.dtype()), "uniform_ expects to-from <= std::numeric_limits<",
                  scalar_type_name(self.dtype()), ">::max(), but found to=", to, " and from=", from,
                  " which result in to-from to exceed the limit");
}

void check_normal(const Tensor& self, double stddev) {
  check_floating("normal_", self);
  SDK_CHECK_VALUE(stddev >= 0.0, "normal expects std >= 0.0, but found std ", stddev);
}

// The range of integers random_ may produce for dtype t: [lo, hi].
std::pair<int64_t, int64_t> random_bounds(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return {0, 1};
    case ScalarType::UInt8: return {0, 255};
    case ScalarType::Int8: return {-128, 127};
    case ScalarType::Int16: return {-32768, 32767};
    case ScalarType::Int32: return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    case ScalarType::Int64: return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
    default: {
      int64_t m = int64_t{1} << mantissa_digits(t);  // consecutive integers a float holds exactly
      return {-m, m};
    }
  }
}

struct IntRange {
  int64_t from;
  uint64_t range;  // 0: 2^64
};

// random_(from, to): [from, to); to = None: [from, the dtype's largest value].
IntRange random_range(const Tensor& self, int64_t from, std::optional<int64_t> to) {
  auto [lo, hi] = random_bounds(self.dtype());
  const char* name = scalar_type_name(self.dtype());
  SDK_CHECK_VALUE(from >= lo && from <= hi, "random_ expects 'from' to be in the range of ", name, " [", lo, ", ",
                  hi, "], but got from=", from);
  if (to) {
    SDK_CHECK_VALUE(from < *to, "random_ expects 'from' to be less than 'to', but got from=", from, " >= to=", *to);
    SDK_CHECK_VALUE(*to - 1 <= hi, "random_ expects 'to' - 1 to be in the range of ", name, " [", lo, ", ", hi,
                    "], but got to - 1=", *to - 1);
    return {from, static_cast<uint64_t>(*to) - static_cast<uint64_t>(from)};
  }
  return {from, static_cast<uint64_t>(hi) - static_cast<uint64_t>(from) + 1};
}

void check_bernoulli_p(double p) {
  SDK_CHECK_VALUE(p >= 0.0 && p <= 1.0, "bernoulli_ expects p to be in [0, 1], but got p=", p);
}

void check_exponential(const Tensor& self, double lambd) {
  check_floating("exponential_", self);
  SDK_CHECK_VALUE(lambd > 0.0, "exponential_ expects lambda > 0.0, but found lambda=", lambd);
}

// p viewed with self's shape (broadcast), ValueError when it does not broadcast.
Tensor expand_p(const Tensor& p, const Tensor& self) {
  SDK_CHECK_VALUE(p.dim() <= self.dim(), "bernoulli_: p of shape ", p.sizes(),
                  " cannot be broadcast to self of shape ", self.sizes());
  DimVector strides(static_cast<size_t>(self.dim()), 0);
  int64_t shift = self.dim() - p.dim();
  for (int64_t d = 0; d < p.dim(); ++d) {
    int64_t size = p.size(d);
    SDK_CHECK_VALUE(size == self.size(d + shift) || size == 1, "bernoulli_: p of shape ", p.sizes(),
                    " cannot be broadcast to self of shape ", self.sizes());
    strides[static_cast<size_t>(d + shift)] = size == 1 ? 0 : p.stride(d);
  }
  return make_view(p, self.sizes(), strides, p.storage_offset(), "bernoulli_");
}

// ---------------------------------------------------------------------------
// In-place kernels (CPU and Meta: the Meta ones check and return self)
// ---------------------------------------------------------------------------
template <bool kCpu>
Tensor uniform_kernel(const Tensor& self, double from, double to, const std::optional<Generator>& gen) {
  check_uniform(self, from, to);
  if (!kCpu || self.numel() == 0) return self;
  auto [seed, offset] = philox_reserve(gen, self.device(), philox_uniform_counters(self.dtype(), self.numel()),
                                       "uniform_");
  philox_uniform_fill(self, from, to, seed, offset);
  self.impl()->bump_version();
  return self;
}

template <bool kCpu>
Tensor normal_kernel(const Tensor& self, double mean, double stddev, const std::optional<Generator>& gen) {
  check_normal(self, stddev);
  if (!kCpu || self.numel() == 0) return self;
  auto [seed, offset] = philox_reserve(gen, self.device(), philox_normal_counters(self.numel()), "normal_");
  philox_normal_fill(self, mean, stddev, seed, offset);
  self.impl()->bump_version();
  return self;
}

template <bool kCpu>
Tensor random_from_to(const Tensor& self, int64_t from, std::optional<int64_t> to,
                      const std::optional<Generator>& gen) {
  IntRange r = random_range(self, from, to);
  if (!kCpu || self.numel() == 0) return self;
  auto [seed, offset] = philox_reserve(gen, self.device(), philox_random_counters(r.range, self.numel()), "random_");
  philox_random_fill(self, r.from, r.range, seed, offset);
  self.impl()->bump_version();
  return self;
}
template <bool kCpu>
Tensor random_to(const Tensor& self, int64_t to, const std::optional<Generator>& gen) {
  return random_from_to<kCpu>(self, 0, to, gen);
}
template <bool kCpu>
Tensor random_plain(const Tensor& self, const std::optional<Generator>& gen) {
  return random_from_to<kCpu>(self, 0, std::nullopt, gen);
}

template <bool kCpu>
Tensor bernoulli_float(const Tensor& self, double p, const std::optional<Generator>& gen) {
  check_bernoulli_p(p);
  if (!kCpu || self.numel() == 0) return self;
  auto [seed, offset] = philox_reserve(gen, self.device(), philox_double_counters(self.numel()), "bernoulli_");
  philox_bernoulli_fill(self, p, Tensor(), seed, offset);
  self.impl()->bump_version();
  return self;
}

template <bool kCpu>
Tensor bernoulli_tensor(const Tensor& self, const Tensor& p, const std::optional<Generator>& gen) {
  SDK_CHECK_TYPE(is_floating_type(p.dtype()), "bernoulli_: expected a floating point tensor for 'p', got dtype ",
                 scalar_type_name(p.dtype()));
  check_same_device("bernoulli_", self, p);
  Tensor expanded = expand_p(p, self);
  if (!kCpu || self.numel() == 0) return self;
  Tensor pd = copy_(make_tensor(self.sizes(), ScalarType::Float64, self.device()), expanded);
  const double* pp = pd.data_ptr<double>();
  for (int64_t i = 0; i < pd.numel(); ++i) {
    SDK_CHECK_VALUE(pp[i] >= 0.0 && pp[i] <= 1.0, "bernoulli_ expects all elements of p to be in [0, 1], but found p=",
                    pp[i]);
  }
  auto [seed, offset] = philox_reserve(gen, self.device(), philox_double_counters(self.numel()), "bernoulli_");
  philox_bernoulli_fill(self, 0.0, pd, seed, offset);
  self.impl()->bump_version();
  return self;
}

template <bool kCpu>
Tensor exponential_kernel(const Tensor& self, double lambd, const std::optional<Generator>& gen) {
  check_exponential(self, lambd);
  if (!kCpu || self.numel() == 0) return self;
  auto [seed, offset] = philox_reserve(gen, self.device(), philox_double_counters(self.numel()), "exponential_");
  philox_exponential_fill(self, lambd, seed, offset);
  self.impl()->bump_version();
  return self;
}

// ---------------------------------------------------------------------------
// Composites (through the dispatcher, so a backend's primitives run)
// ---------------------------------------------------------------------------
using OptGen = std::optional<Generator>;
using OptDtype = std::optional<ScalarType>;
using OptLayout = std::optional<int64_t>;
using OptDevice = std::optional<Device>;
using OptBool = std::optional<bool>;

template <typename Sig>
OperatorHandle::Typed<Sig> typed(const char* name) {
  return Dispatcher::singleton().find_schema_or_throw(name).typed<Sig>();
}

Tensor empty_full(IntArrayRef size, ScalarType dtype, OptLayout layout, OptDevice device, OptBool pin_memory) {
  static const auto op = typed<Tensor(IntArrayRef, OptDtype, OptLayout, OptDevice, OptBool, OptLayout)>(
      "aten::empty.memory_format");
  return op.call(size, dtype, layout, device, pin_memory, std::nullopt);
}

// *_like: dtype and device default to self's; only contiguous results.
Tensor empty_like_for(const char* op, const Tensor& self, OptDtype dtype, OptLayout layout, OptDevice device,
                      OptBool pin_memory, std::optional<int64_t> memory_format) {
  SDK_CHECK_VALUE(!memory_format || *memory_format <= 1, op, ": memory_format ", *memory_format,
                  " is not supported; only contiguous_format and preserve_format are");
  return empty_full(self.sizes(), dtype.value_or(self.dtype()), layout, device ? device : OptDevice(self.device()),
                    pin_memory);
}

Tensor call_uniform_(const Tensor& t, double from, double to, const OptGen& gen) {
  static const auto op = typed<Tensor(const Tensor&, double, double, const OptGen&)>("aten::uniform_");
  return op.call(t, from, to, gen);
}
Tensor call_normal_(const Tensor& t, double mean, double stddev, const OptGen& gen) {
  static const auto op = typed<Tensor(const Tensor&, double, double, const OptGen&)>("aten::normal_");
  return op.call(t, mean, stddev, gen);
}
Tensor call_random_(const Tensor& t, int64_t from, std::optional<int64_t> to, const OptGen& gen) {
  static const auto op =
      typed<Tensor(const Tensor&, int64_t, std::optional<int64_t>, const OptGen&)>("aten::random_.from");
  return op.call(t, from, to, gen);
}
Tensor call_bernoulli_tensor_(const Tensor& t, const Tensor& p, const OptGen& gen) {
  static const auto op = typed<Tensor(const Tensor&, const Tensor&, const OptGen&)>("aten::bernoulli_.Tensor");
  return op.call(t, p, gen);
}
Tensor call_bernoulli_float_(const Tensor& t, double p, const OptGen& gen) {
  static const auto op = typed<Tensor(const Tensor&, double, const OptGen&)>("aten::bernoulli_.float");
  return op.call(t, p, gen);
}

ScalarType float_dtype(const char* op, OptDtype dtype) {
  ScalarType t = dtype.value_or(default_dtype());
  SDK_CHECK_TYPE(is_floating_type(t), op, ": expected a floating point dtype, got ", scalar_type_name(t));
  return t;
}

// rand
Tensor rand_generator(IntArrayRef size, const OptGen& gen, OptDtype dtype, OptLayout layout, OptDevice device,
                      OptBool pin) {
  return call_uniform_(empty_full(size, float_dtype("rand", dtype), layout, device, pin), 0.0, 1.0, gen);
}
Tensor rand_plain(IntArrayRef size, OptDtype dtype, OptLayout layout, OptDevice device, OptBool pin) {
  return rand_generator(size, std::nullopt, dtype, layout, device, pin);
}
Tensor rand_generator_out(IntArrayRef size, const OptGen& gen, const Tensor& out) {
  resize_(out, size);
  return call_uniform_(out, 0.0, 1.0, gen);
}
Tensor rand_out(IntArrayRef size, const Tensor& out) { return rand_generator_out(size, std::nullopt, out); }
Tensor rand_like_generator(const Tensor& self, const OptGen& gen, OptDtype dtype, OptLayout layout, OptDevice device,
                           OptBool pin, std::optional<int64_t> memory_format) {
  return call_uniform_(empty_like_for("rand_like", self, dtype, layout, device, pin, memory_format), 0.0, 1.0, gen);
}
Tensor rand_like(const Tensor& self, OptDtype dtype, OptLayout layout, OptDevice device, OptBool pin,
                 std::optional<int64_t> memory_format) {
  return rand_like_generator(self, std::nullopt, dtype, layout, device, pin, memory_format);
}

// randn
Tensor randn_generator(IntArrayRef size, const OptGen& gen, OptDtype dtype, OptLayout layout, OptDevice device,
                       OptBool pin) {
  return call_normal_(empty_full(size, float_dtype("randn", dtype), layout, device, pin), 0.0, 1.0, gen);
}
Tensor randn_plain(IntArrayRef size, OptDtype dtype, OptLayout layout, OptDevice device, OptBool pin) {
  return randn_generator(size, std::nullopt, dtype, layout, device, pin);
}
Tensor randn_generator_out(IntArrayRef size, const OptGen& gen, const Tensor& out) {
  resize_(out, size);
  return call_normal_(out, 0.0, 1.0, gen);
}
Tensor randn_out(IntArrayRef size, const Tensor& out) { return randn_generator_out(size, std::nullopt, out); }
Tensor randn_like_generator(const Tensor& self, const OptGen& gen, OptDtype dtype, OptLayout layout,
                            OptDevice device, OptBool pin, std::optional<int64_t> memory_format) {
  return call_normal_(empty_like_for("randn_like", self, dtype, layout, device, pin, memory_format), 0.0, 1.0, gen);
}
Tensor randn_like(const Tensor& self, OptDtype dtype, OptLayout layout, OptDevice device, OptBool pin,
                  std::optional<int64_t> memory_format) {
  return randn_like_generator(self, std::nullopt, dtype, layout, device, pin, memory_format);
}

// randint
Tensor randint_low_generator(int64_t low, int64_t high, IntArrayRef size, const OptGen& gen, OptDtype dtype,
                             OptLayout layout, OptDevice device, OptBool pin) {
  return call_random_(empty_full(size, dtype.value_or(ScalarType::Int64), layout, device, pin), low, high, gen);
}
Tensor randint_low(int64_t low, int64_t high, IntArrayRef size, OptDtype dtype, OptLayout layout, OptDevice device,
                   OptBool pin) {
  return randint_low_generator(low, high, size, std::nullopt, dtype, layout, device, pin);
}
Tensor randint_generator(int64_t high, IntArrayRef size, const OptGen& gen, OptDtype dtype, OptLayout layout,
                         OptDevice device, OptBool pin) {
  return randint_low_generator(0, high, size, gen, dtype, layout, device, pin);
}
Tensor randint_plain(int64_t high, IntArrayRef size, OptDtype dtype, OptLayout layout, OptDevice device,
                     OptBool pin) {
  return randint_low_generator(0, high, size, std::nullopt, dtype, layout, device, pin);
}
Tensor randint_low_generator_out(int64_t low, int64_t high, IntArrayRef size, const OptGen& gen, const Tensor& out) {
  resize_(out, size);
  return call_random_(out, low, high, gen);
}
Tensor randint_low_out(int64_t low, int64_t high, IntArrayRef size, const Tensor& out) {
  return randint_low_generator_out(low, high, size, std::nullopt, out);
}
Tensor randint_generator_out(int64_t high, IntArrayRef size, const OptGen& gen, const Tensor& out) {
  return randint_low_generator_out(0, high, size, gen, out);
}
Tensor randint_out(int64_t high, IntArrayRef size, const Tensor& out) {
  return randint_low_generator_out(0, high, size, std::nullopt, out);
}
Tensor randint_like_low_generator(const Tensor& self, int64_t low, int64_t high, const OptGen& gen, OptDtype dtype,
                                  OptLayout layout, OptDevice device, OptBool pin,
                                  std::optional<int64_t> memory_format) {
  return call_random_(empty_like_for("randint_like", self, dtype, layout, device, pin, memory_format), low, high, gen);
}
Tensor randint_like_low(const Tensor& self, int64_t low, int64_t high, OptDtype dtype, OptLayout layout,
                        OptDevice device, OptBool pin, std::optional<int64_t> memory_format) {
  return randint_like_low_generator(self, low, high, std::nullopt, dtype, layout, device, pin, memory_format);
}
Tensor randint_like_high_generator(const Tensor& self, int64_t high, const OptGen& gen, OptDtype dtype,
                                   OptLayout layout, OptDevice device, OptBool pin,
                                   std::optional<int64_t> memory_format) {
  return randint_like_low_generator(self, 0, high, gen, dtype, layout, device, pin, memory_format);
}
Tensor randint_like_high(const Tensor& self, int64_t high, OptDtype dtype, OptLayout layout, OptDevice device,
                         OptBool pin, std::optional<int64_t> memory_format) {
  return randint_like_low_generator(self, 0, high, std::nullopt, dtype, layout, device, pin, memory_format);
}

// bernoulli
Tensor bernoulli_plain(const Tensor& self, const OptGen& gen) {
  return call_bernoulli_tensor_(empty_full(self.sizes(), self.dtype(), std::nullopt, self.device(), std::nullopt),
                                self, gen);
}
Tensor bernoulli_p(const Tensor& self, double p, const OptGen& gen) {
  return call_bernoulli_float_(empty_full(self.sizes(), self.dtype(), std::nullopt, self.device(), std::nullopt), p,
                               gen);
}
Tensor bernoulli_out(const Tensor& self, const OptGen& gen, const Tensor& out) {
  resize_(out, self.sizes());
  return call_bernoulli_tensor_(out, self, gen);
}

// normal
void check_std_tensor(const Tensor& stddev) {
  // A meta tensor has no values to check (as PyTorch's CHECK_NORMAL_TENSOR_STD).
  if (stddev.numel() == 0 || stddev.device().type == DeviceType::Meta) return;
  static const auto min_op = typed<Tensor(const Tensor&)>("aten::min");
  double m = item(min_op.call(stddev)).to_double();
  SDK_CHECK_VALUE(m >= 0.0, "normal expects all elements of std >= 0.0");
}
DimVector broadcast_sizes(IntArrayRef a, IntArrayRef b) {
  size_t n = std::max(a.size(), b.size());
  DimVector out(n, 1);
  for (size_t i = 0; i < n; ++i) {
    int64_t sa = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t sb = i < n - b.size() ? 1 : b[i - (n - b.size())];
    SDK_CHECK_VALUE(sa == sb || sa == 1 || sb == 1, "normal: the size of mean (", sa, ") must match the size of std (",
                    sb, ") at non-singleton dimension ", i);
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}
Tensor normal_tensor_float(const Tensor& mean, double stddev, const OptGen& gen) {
  SDK_CHECK_VALUE(stddev >= 0.0, "normal expects std >= 0.0, but found std ", stddev);
  Tensor out = empty_full(mean.sizes(), mean.dtype(), std::nullopt, mean.device(), std::nullopt);
  call_normal_(out, 0.0, stddev, gen);
  return add_(out, mean);
}
Tensor normal_float_tensor(double mean, const Tensor& stddev, const OptGen& gen) {
  check_std_tensor(stddev);
  Tensor out = empty_full(stddev.sizes(), stddev.dtype(), std::nullopt, stddev.device(), std::nullopt);
  call_normal_(out, 0.0, 1.0, gen);
  mul_(out, stddev);
  return add_(out, wrapped_scalar_tensor(Scalar(mean)));
}
Tensor normal_tensor_tensor(const Tensor& mean, const Tensor& stddev, const OptGen& gen) {
  check_same_device("normal", mean, stddev);
  check_std_tensor(stddev);
  DimVector sizes = broadcast_sizes(mean.sizes(), stddev.sizes());
  Tensor out =
      empty_full(sizes, promote_types(mean.dtype(), stddev.dtype()), std::nullopt, mean.device(), std::nullopt);
  call_normal_(out, 0.0, 1.0, gen);
  mul_(out, stddev);
  return add_(out, mean);
}
Tensor normal_float_float(double mean, double stddev, IntArrayRef size, const OptGen& gen, OptDtype dtype,
                          OptLayout layout, OptDevice device, OptBool pin) {
  return call_normal_(empty_full(size, float_dtype("normal", dtype), layout, device, pin), mean, stddev, gen);
}

}  // namespace

Tensor rand(IntArrayRef size, const std::optional<Generator>& generator, std::optional<ScalarType> dtype,
            std::optional<Device> device) {
  static const auto op = typed<Tensor(IntArrayRef, const OptGen&, OptDtype, OptLayout, OptDevice, OptBool)>(
      "aten::rand.generator");
  return op.call(size, generator, dtype, std::nullopt, device, std::nullopt);
}
Tensor randn(IntArrayRef size, const std::optional<Generator>& generator, std::optional<ScalarType> dtype,
             std::optional<Device> device) {
  static const auto op = typed<Tensor(IntArrayRef, const OptGen&, OptDtype, OptLayout, OptDevice, OptBool)>(
      "aten::randn.generator");
  return op.call(size, generator, dtype, std::nullopt, device, std::nullopt);
}
Tensor randint(int64_t low, int64_t high, IntArrayRef size, const std::optional<Generator>& generator,
               std::optional<ScalarType> dtype, std::optional<Device> device) {
  static const auto op =
      typed<Tensor(int64_t, int64_t, IntArrayRef, const OptGen&, OptDtype, OptLayout, OptDevice, OptBool)>(
          "aten::randint.low_generator");
  return op.call(low, high, size, generator, dtype.value_or(ScalarType::Int64), std::nullopt, device, std::nullopt);
}
Tensor uniform_(const Tensor& self, double from, double to, const std::optional<Generator>& generator) {
  return call_uniform_(self, from, to, generator);
}
Tensor normal_(const Tensor& self, double mean, double stddev, const std::optional<Generator>& generator) {
  return call_normal_(self, mean, stddev, generator);
}
Tensor bernoulli_(const Tensor& self, double p, const std::optional<Generator>& generator) {
  return call_bernoulli_float_(self, p, generator);
}

}  // namespace sdk::ops

SDK_LIBRARY_FRAGMENT(aten, m) {
  using sdk::DispatchKey;
  // primitives
  m.def("uniform_(Tensor(a!) self, float from=0, float to=1, *, Generator? generator=None) -> Tensor(a!)");
  m.def("normal_(Tensor(a!) self, float mean=0, float std=1, *, Generator? generator=None) -> Tensor(a!)");
  m.def("random_.from(Tensor(a!) self, int from, int? to, *, Generator? generator=None) -> Tensor(a!)");
  m.def("random_.to(Tensor(a!) self, int to, *, Generator? generator=None) -> Tensor(a!)");
  m.def("random_(Tensor(a!) self, *, Generator? generator=None) -> Tensor(a!)");
  m.def("bernoulli_.Tensor(Tensor(a!) self, Tensor p, *, Generator? generator=None) -> Tensor(a!)");
  m.def("bernoulli_.float(Tensor(a!) self, float p=0.5, *, Generator? generator=None) -> Tensor(a!)");
  m.def("exponential_(Tensor(a!) self, float lambd=1, *, Generator? generator=None) -> Tensor(a!)");

  // factories and composites
  m.def("rand(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
        "bool? pin_memory=None) -> Tensor");
  m.def("rand.generator(SymInt[] size, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, "
        "Device? device=None, bool? pin_memory=None) -> Tensor");
  m.def("rand.out(SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("rand.generator_out(SymInt[] size, *, Generator? generator, Tensor(a!) out) -> Tensor(a!)");
  m.def("rand_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
        "bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor");
  m.def("rand_like.generator(Tensor self, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, "
        "Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor");
  m.def("randn(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
        "bool? pin_memory=None) -> Tensor");
  m.def("randn.generator(SymInt[] size, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, "
        "Device? device=None, bool? pin_memory=None) -> Tensor");
  m.def("randn.out(SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("randn.generator_out(SymInt[] size, *, Generator? generator, Tensor(a!) out) -> Tensor(a!)");
  m.def("randn_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
        "bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor");
  m.def("randn_like.generator(Tensor self, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, "
        "Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor");
  m.def("randint(SymInt high, SymInt[] size, *, ScalarType? dtype=long, Layout? layout=None, Device? device=None, "
        "bool? pin_memory=None) -> Tensor");
  m.def("randint.generator(SymInt high, SymInt[] size, *, Generator? generator, ScalarType? dtype=long, "
        "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor");
  m.def("randint.low(SymInt low, SymInt high, SymInt[] size, *, ScalarType? dtype=long, Layout? layout=None, "
        "Device? device=None, bool? pin_memory=None) -> Tensor");
  m.def("randint.low_generator(SymInt low, SymInt high, SymInt[] size, *, Generator? generator, "
        "ScalarType? dtype=long, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor");
  m.def("randint.out(SymInt high, SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("randint.generator_out(SymInt high, SymInt[] size, *, Generator? generator, Tensor(a!) out) -> Tensor(a!)");
  m.def("randint.low_out(SymInt low, SymInt high, SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("randint.low_generator_out(SymInt low, SymInt high, SymInt[] size, *, Generator? generator, "
        "Tensor(a!) out) -> Tensor(a!)");
  m.def("randint_like(Tensor self, SymInt high, *, ScalarType? dtype=None, Layout? layout=None, "
        "Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor");
  m.def("randint_like.low_dtype(Tensor self, SymInt low, SymInt high, *, ScalarType? dtype=None, "
        "Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor");
  m.def("randint_like.generator(Tensor self, SymInt high, *, Generator? generator, ScalarType? dtype=None, "
        "Layout? layout=None, Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor");
  m.def("randint_like.low_generator_dtype(Tensor self, SymInt low, SymInt high, *, Generator? generator, "
        "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, "
        "MemoryFormat? memory_format=None) -> Tensor");
  m.def("bernoulli(Tensor self, *, Generator? generator=None) -> Tensor");
  m.def("bernoulli.out(Tensor self, *, Generator? generator=None, Tensor(a!) out) -> Tensor(a!)");
  m.def("bernoulli.p(Tensor self, float p, *, Generator? generator=None) -> Tensor");
  m.def("normal.Tensor_float(Tensor mean, float std=1, *, Generator? generator=None) -> Tensor");
  m.def("normal.float_Tensor(float mean, Tensor std, *, Generator? generator=None) -> Tensor");
  m.def("normal.Tensor_Tensor(Tensor mean, Tensor std, *, Generator? generator=None) -> Tensor");
  m.def("normal.float_float(float mean, float std, SymInt[] size, *, Generator? generator=None, "
        "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor");

  const auto composite = DispatchKey::CompositeExplicitAutograd;
  using namespace sdk::ops;
  m.impl("rand", composite, &rand_plain);
  m.impl("rand.generator", composite, &rand_generator);
  m.impl("rand.out", composite, &rand_out);
  m.impl("rand.generator_out", composite, &rand_generator_out);
  m.impl("rand_like", composite, &rand_like);
  m.impl("randn", composite, &randn_plain);
  m.impl("randn.generator", composite, &randn_generator);
  m.impl("randn.out", composite, &randn_out);
  m.impl("randn.generator_out", composite, &randn_generator_out);
  m.impl("randn_like", composite, &randn_like);
  m.impl("randint", composite, &randint_plain);
  m.impl("randint.generator", composite, &randint_generator);
  m.impl("randint.low", composite, &randint_low);
  m.impl("randint.low_generator", composite, &randint_low_generator);
  m.impl("randint.out", composite, &randint_out);
  m.impl("randint.generator_out", composite, &randint_generator_out);
  m.impl("randint.low_out", composite, &randint_low_out);
  m.impl("randint.low_generator_out", composite, &randint_low_generator_out);
  m.impl("randint_like", composite, &randint_like_high);
  m.impl("randint_like.low_dtype", composite, &randint_like_low);
  m.impl("rand_like.generator", composite, &rand_like_generator);
  m.impl("randn_like.generator", composite, &randn_like_generator);
  m.impl("randint_like.generator", composite, &randint_like_high_generator);
  m.impl("randint_like.low_generator_dtype", composite, &randint_like_low_generator);
  m.impl("bernoulli", composite, &bernoulli_plain);
  m.impl("bernoulli.out", composite, &bernoulli_out);
  m.impl("bernoulli.p", composite, &bernoulli_p);
  m.impl("normal.Tensor_float", composite, &normal_tensor_float);
  m.impl("normal.float_Tensor", composite, &normal_float_tensor);
  m.impl("normal.Tensor_Tensor", composite, &normal_tensor_tensor);
  m.impl("normal.float_float", composite, &normal_float_float);
}

#define SDK_RANDOM_IMPLS(m, kCpu)                                       \
  m.impl("uniform_", &sdk::ops::uniform_kernel<kCpu>);                  \
  m.impl("normal_", &sdk::ops::normal_kernel<kCpu>);                    \
  m.impl("random_.from", &sdk::ops::random_from_to<kCpu>);              \
  m.impl("random_.to", &sdk::ops::random_to<kCpu>);                     \
  m.impl("random_", &sdk::ops::random_plain<kCpu>);                     \
  m.impl("bernoulli_.Tensor", &sdk::ops::bernoulli_tensor<kCpu>);       \
  m.impl("bernoulli_.float", &sdk::ops::bernoulli_float<kCpu>);         \
  m.impl("exponential_", &sdk::ops::exponential_kernel<kCpu>)

SDK_LIBRARY_IMPL(aten, CPU, m) { SDK_RANDOM_IMPLS(m, true); }
SDK_LIBRARY_IMPL(aten, Meta, m) { SDK_RANDOM_IMPLS(m, false); }

// Factories without tensor arguments pick their backend from `device`.
SDK_LIBRARY_IMPL(aten, BackendSelect, m) {
  for (const char* name : {"rand", "rand.generator", "randn", "randn.generator", "randint", "randint.generator",
                           "randint.low", "randint.low_generator", "normal.float_float"}) {
    m.impl(name, sdk::CppFunction::make_from_boxed(&sdk::ops::backend_select_boxed));
  }
}
