// Philox4x32-10: the counter-based random number generator of every random
// operator, header-only so that a vendor's device kernel can include it and
// produce exactly the numbers the CPU kernels produce.
//
// Note [Philox random numbers]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A generator (tensor/Generator.h) holds a 64-bit seed and a 64-bit offset.
// A random operator producing n values reserves a range of Philox counters
// with Generator::philox_engine_inputs(counters), which returns (seed,
// offset) and advances the generator's offset by `counters`. Element i of the
// output, counted in row-major order of the output's *logical* shape (not
// its memory layout), is computed from (seed, offset, i) alone:
//
//   key     = (k0, k1) = (low 32 bits of seed, high 32 bits of seed)
//   block   = philox4x32_10(counter = (lo32(c), hi32(c), 0, 0), key) with
//             c = offset + i / per_block: four 32-bit words x[0..3]
//
// with, per distribution (per_block values come from one Philox block):
//   32-bit words (per_block = 4): element i takes word x[i % 4]. Used for
//     uniform values of float32/float16/bfloat16 and integers drawn from a
//     range of at most 2^32 values.
//   64-bit words (per_block = 2): element i takes (x[2j] << 32) | x[2j+1]
//     with j = i % 2. Used for uniform float64, integer ranges above 2^32,
//     bernoulli and exponential.
//   normal (per_block = 2): element i takes u1 = uniform double of
//     (x[0], x[1]) and u2 = uniform double of (x[2], x[3]), and returns
//     sqrt(-2 log(1 - u1)) * (i even ? cos(2 pi u2) : sin(2 pi u2))
//     (Box-Muller), computed in double, then mean + std * z.
// An operator over n elements reserves counters_for(n, per_block) counters.
// A uniform value in [0, 1) keeps the top `digits` bits of its word (24 for
// float32, 11 for float16, 8 for bfloat16, 53 for float64: the mantissa,
// as PyTorch does) and scales them by 2^-digits; [from, to) values are
// from + u * (to - from) computed in double and rounded to the dtype.
//
// Because every value is a pure function of (seed, offset, i), results do
// not depend on the number of threads, on how a kernel splits the work, or
// on the output's strides; a device that runs the kernel later (an
// asynchronous stream) gets the same numbers as long as it is given the
// (seed, offset) reserved when the operator was called. Integer and uniform
// values are bit-exact across devices when the device compiler does not
// contract `from + u * span` into a fused multiply-add (build such kernels
// with -ffp-contract=off / --fmad=false; from = 0, span = 1 is exact either
// way); normal values go through log, cos and sin and are exact where the
// device's math library rounds as the host's does (otherwise within a few
// ulp).
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define SDK_PHILOX_HD __host__ __device__
#else
#define SDK_PHILOX_HD
#endif

namespace sdk::philox {

constexpr uint32_t kMul0 = 0xD2511F53u;
constexpr uint32_t kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u;
constexpr uint32_t kWeyl1 = 0xBB67AE85u;

struct Block {
  uint32_t x[4];
};

SDK_PHILOX_HD inline void mulhilo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  *lo = static_cast<uint32_t>(p);
}

// One Philox round on counter c with key (k0, k1).
SDK_PHILOX_HD inline void round(uint32_t c[4], uint32_t k0, uint32_t k1) {
  uint32_t hi0, lo0, hi1, lo1;
  mulhilo(kMul0, c[0], &hi0, &lo0);
  mulhilo(kMul1, c[2], &hi1, &lo1);
  uint32_t n0 = hi1 ^ c[1] ^ k0, n2 = hi0 ^ c[3] ^ k1;
  c[0] = n0;
  c[1] = lo1;
  c[2] = n2;
  c[3] = lo0;
}

// Philox4x32 with 10 rounds (Salmon et al., "Parallel random numbers: as
// easy as 1, 2, 3", SC'11; the Random123 reference).
SDK_PHILOX_HD inline Block philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                                         uint32_t k1) {
  uint32_t c[4] = {c0, c1, c2, c3};
  for (int r = 0; r < 9; ++r) {
    round(c, k0, k1);
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  round(c, k0, k1);
  return Block{{c[0], c[1], c[2], c[3]}};
}

// The block of counter `counter` (= offset + i / per_block) for `seed`.
SDK_PHILOX_HD inline Block block(uint64_t seed, uint64_t counter) {
  return philox4x32_10(static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), 0u, 0u,
                       static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// Counters an operator over n values reserves.
SDK_PHILOX_HD constexpr uint64_t counters_for(uint64_t n, uint64_t per_block) {
  return (n + per_block - 1) / per_block;
}

// ---- turning words into values ----
// A uniform value in [0, 1) from the top `digits` (<= 32) bits of a word.
SDK_PHILOX_HD inline double uniform_from_uint32(uint32_t w, int digits) {
  return static_cast<double>(w >> (32 - digits)) * std::ldexp(1.0, -digits);
}
// A uniform double in [0, 1) with 53 random bits.
SDK_PHILOX_HD inline double uniform_from_uint64(uint64_t w) {
  return static_cast<double>(w >> 11) * (1.0 / 9007199254740992.0);  // 2^-53
}
SDK_PHILOX_HD inline uint64_t join(uint32_t hi, uint32_t lo) { return (static_cast<uint64_t>(hi) << 32) | lo; }

// Box-Muller on one block: the normal value of element i (i even: cos, odd: sin).
SDK_PHILOX_HD inline double normal_from_block(const Block& b, uint64_t i) {
  double u1 = uniform_from_uint64(join(b.x[0], b.x[1]));
  double u2 = uniform_from_uint64(join(b.x[2], b.x[3]));
  double r = std::sqrt(-2.0 * std::log(1.0 - u1));
  double theta = 6.283185307179586476925286766559 * u2;
  return (i % 2 == 0) ? r * std::cos(theta) : r * std::sin(theta);
}

// Both normal values of a block: z0 (element 2k, cos) and z1 (element 2k + 1, sin).
SDK_PHILOX_HD inline void normal_pair_from_block(const Block& b, double* z0, double* z1) {
  double u1 = uniform_from_uint64(join(b.x[0], b.x[1]));
  double u2 = uniform_from_uint64(join(b.x[2], b.x[3]));
  double r = std::sqrt(-2.0 * std::log(1.0 - u1));
  double theta = 6.283185307179586476925286766559 * u2;
  *z0 = r * std::cos(theta);
  *z1 = r * std::sin(theta);
}

// ---- element i of an operator that reserved (seed, offset) ----
// These compute one Philox block per call; a kernel producing consecutive
// elements may instead compute block(seed, offset + i / per_block) once per
// block and take its words as above: the values are the same.
SDK_PHILOX_HD inline uint32_t uint32_at(uint64_t seed, uint64_t offset, uint64_t i) {
  return block(seed, offset + i / 4).x[i % 4];
}
SDK_PHILOX_HD inline uint64_t uint64_at(uint64_t seed, uint64_t offset, uint64_t i) {
  Block b = block(seed, offset + i / 2);
  unsigned j = static_cast<unsigned>(i % 2) * 2;
  return join(b.x[j], b.x[j + 1]);
}
// Uniform [0, 1) for a dtype with `digits` mantissa bits (24: float32, 11: float16, 8: bfloat16).
SDK_PHILOX_HD inline double uniform_float_at(uint64_t seed, uint64_t offset, uint64_t i, int digits = 24) {
  return uniform_from_uint32(uint32_at(seed, offset, i), digits);
}
SDK_PHILOX_HD inline double uniform_double_at(uint64_t seed, uint64_t offset, uint64_t i) {
  return uniform_from_uint64(uint64_at(seed, offset, i));
}
// Standard normal (mean 0, std 1).
SDK_PHILOX_HD inline double normal_at(uint64_t seed, uint64_t offset, uint64_t i) {
  return normal_from_block(block(seed, offset + i / 2), i);
}

}  // namespace sdk::philox
