// The AVX2 vector math kernels over glibc's libmvec. See Note [Vector math]
// (ops/detail/VecMath.h): this file is compiled with -mavx2 -mfma
// -ffp-contract=off (the reduction kernels must round like the generic loops
// they stand in for, so no multiply-add is fused behind their back) and must
// define nothing with external or inline linkage except its entry points
// (everything else is in an anonymous namespace), and include no header with
// inline functions the rest of the library also instantiates.
#if defined(SDK_HAVE_LIBMVEC)
#include <immintrin.h>

#include <cstdint>

// The x86-64 vector-function ABI names of libmvec's AVX2 variants ('d': AVX2,
// N8/N4: lanes, v: one vector argument).
extern "C" {
__m256 _ZGVdN8v_expf(__m256);
__m256 _ZGVdN8v_logf(__m256);
__m256 _ZGVdN8v_log1pf(__m256);
__m256 _ZGVdN8v_expm1f(__m256);
__m256 _ZGVdN8v_sinf(__m256);
__m256 _ZGVdN8v_cosf(__m256);
__m256 _ZGVdN8v_tanf(__m256);
__m256 _ZGVdN8v_tanhf(__m256);
__m256 _ZGVdN8v_erff(__m256);
__m256d _ZGVdN4v_exp(__m256d);
__m256d _ZGVdN4v_log(__m256d);
__m256d _ZGVdN4v_log1p(__m256d);
__m256d _ZGVdN4v_expm1(__m256d);
__m256d _ZGVdN4v_sin(__m256d);
__m256d _ZGVdN4v_cos(__m256d);
__m256d _ZGVdN4v_tan(__m256d);
__m256d _ZGVdN4v_tanh(__m256d);
__m256d _ZGVdN4v_erf(__m256d);
}

namespace sdk::ops::vec::avx2 {
namespace {

// The operand-wise formulas mirror the scalar functors of Unary.cpp
// (SigmoidFn, SiluFn, GeluErfFn, GeluTanhFn) step for step.
struct F32 {
  using V = __m256;
  static constexpr int kLanes = 8;
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V neg(V a) { return _mm256_xor_ps(a, _mm256_set1_ps(-0.0f)); }
  static V exp(V a) { return _ZGVdN8v_expf(a); }
  static V log(V a) { return _ZGVdN8v_logf(a); }
  static V log1p(V a) { return _ZGVdN8v_log1pf(a); }
  static V expm1(V a) { return _ZGVdN8v_expm1f(a); }
  static V sin(V a) { return _ZGVdN8v_sinf(a); }
  static V cos(V a) { return _ZGVdN8v_cosf(a); }
  static V tan(V a) { return _ZGVdN8v_tanf(a); }
  static V tanh(V a) { return _ZGVdN8v_tanhf(a); }
  static V erf(V a) { return _ZGVdN8v_erff(a); }
};

struct F64 {
  using V = __m256d;
  static constexpr int kLanes = 4;
  static V load(const double* p) { return _mm256_loadu_pd(p); }
  static void store(double* p, V v) { _mm256_storeu_pd(p, v); }
  static V set1(double x) { return _mm256_set1_pd(x); }
  static V add(V a, V b) { return _mm256_add_pd(a, b); }
  static V mul(V a, V b) { return _mm256_mul_pd(a, b); }
  static V div(V a, V b) { return _mm256_div_pd(a, b); }
  static V neg(V a) { return _mm256_xor_pd(a, _mm256_set1_pd(-0.0)); }
  static V exp(V a) { return _ZGVdN4v_exp(a); }
  static V log(V a) { return _ZGVdN4v_log(a); }
  static V log1p(V a) { return _ZGVdN4v_log1p(a); }
  static V expm1(V a) { return _ZGVdN4v_expm1(a); }
  static V sin(V a) { return _ZGVdN4v_sin(a); }
  static V cos(V a) { return _ZGVdN4v_cos(a); }
  static V tan(V a) { return _ZGVdN4v_tan(a); }
  static V tanh(V a) { return _ZGVdN4v_tanh(a); }
  static V erf(V a) { return _ZGVdN4v_erf(a); }
};

// The numbering of UnaryFn (VecMath.h), repeated so that this file includes
// no SDK header: keep the two lists in the same order (tests/test_vecmath.py
// checks every function against its reference, so a mismatch fails there).
enum Fn { kExp, kLog, kLog1p, kExpm1, kSin, kCos, kTan, kTanh, kErf, kSigmoid, kSilu, kGeluErf, kGeluTanh };

template <typename A, int kFn>
typename A::V compute(typename A::V x) {
  using V = typename A::V;
  if constexpr (kFn == kExp) return A::exp(x);
  if constexpr (kFn == kLog) return A::log(x);
  if constexpr (kFn == kLog1p) return A::log1p(x);
  if constexpr (kFn == kExpm1) return A::expm1(x);
  if constexpr (kFn == kSin) return A::sin(x);
  if constexpr (kFn == kCos) return A::cos(x);
  if constexpr (kFn == kTan) return A::tan(x);
  if constexpr (kFn == kTanh) return A::tanh(x);
  if constexpr (kFn == kErf) return A::erf(x);
  if constexpr (kFn == kSigmoid) return A::div(A::set1(1), A::add(A::set1(1), A::exp(A::neg(x))));
  if constexpr (kFn == kSilu) return A::div(x, A::add(A::set1(1), A::exp(A::neg(x))));
  if constexpr (kFn == kGeluErf) {
    const V half_x = A::mul(A::set1(0.5), x);
    return A::mul(half_x, A::add(A::set1(1), A::erf(A::mul(x, A::set1(0.70710678118654752440)))));
  }
  if constexpr (kFn == kGeluTanh) {
    const V half_x = A::mul(A::set1(0.5), x);
    const V cube = A::mul(A::mul(A::mul(A::set1(0.044715), x), x), x);
    const V inner = A::mul(A::set1(0.79788456080286535588), A::add(x, cube));
    return A::mul(half_x, A::add(A::set1(1), A::tanh(inner)));
  }
}

template <typename A, int kFn, typename T>
void run(T* out, const T* in, int64_t n) {
  constexpr int L = A::kLanes;
  int64_t i = 0;
  for (; i + L <= n; i += L) A::store(out + i, compute<A, kFn>(A::load(in + i)));
  if (i == n) return;
  // The tail through the same routine (Note [Vector math]); zero padding
  // is a harmless argument for every function.
  T buf[L] = {};
  const int64_t rest = n - i;
  for (int64_t j = 0; j < rest; ++j) buf[j] = in[i + j];
  A::store(buf, compute<A, kFn>(A::load(buf)));
  for (int64_t j = 0; j < rest; ++j) out[i + j] = buf[j];
}

template <typename A, typename T>
void dispatch(int f, T* out, const T* in, int64_t n) {
  switch (f) {
    case kExp: return run<A, kExp>(out, in, n);
    case kLog: return run<A, kLog>(out, in, n);
    case kLog1p: return run<A, kLog1p>(out, in, n);
    case kExpm1: return run<A, kExpm1>(out, in, n);
    case kSin: return run<A, kSin>(out, in, n);
    case kCos: return run<A, kCos>(out, in, n);
    case kTan: return run<A, kTan>(out, in, n);
    case kTanh: return run<A, kTanh>(out, in, n);
    case kErf: return run<A, kErf>(out, in, n);
    case kSigmoid: return run<A, kSigmoid>(out, in, n);
    case kSilu: return run<A, kSilu>(out, in, n);
    case kGeluErf: return run<A, kGeluErf>(out, in, n);
    case kGeluTanh: return run<A, kGeluTanh>(out, in, n);
    default: return;
  }
}

// The extremum of a run: vector max/min (MAXPS returns its second operand
// when either is NaN, so NaN lanes are tracked in a separate mask and win at
// the end), four accumulators for independent chains.
struct MaxOp {
  static __m256 f(__m256 a, __m256 b) { return _mm256_max_ps(a, b); }
  static __m256d f(__m256d a, __m256d b) { return _mm256_max_pd(a, b); }
  template <typename T> static T s(T a, T b) { return b > a ? b : a; }
};
struct MinOp {
  static __m256 f(__m256 a, __m256 b) { return _mm256_min_ps(a, b); }
  static __m256d f(__m256d a, __m256d b) { return _mm256_min_pd(a, b); }
  template <typename T> static T s(T a, T b) { return b < a ? b : a; }
};

template <typename Op>
float extremum_f32_impl(const float* x, int64_t n) {
  int64_t i = 0;
  float best = x[0];
  bool nan = false;
  if (n >= 32) {
    __m256 m0 = _mm256_loadu_ps(x), m1 = m0, m2 = m0, m3 = m0;
    __m256 bad = _mm256_setzero_ps();
    for (; i + 32 <= n; i += 32) {
      const __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
      const __m256 c = _mm256_loadu_ps(x + i + 16), d = _mm256_loadu_ps(x + i + 24);
      m0 = Op::f(a, m0), m1 = Op::f(b, m1), m2 = Op::f(c, m2), m3 = Op::f(d, m3);
      bad = _mm256_or_ps(bad, _mm256_or_ps(_mm256_cmp_ps(a, b, _CMP_UNORD_Q), _mm256_cmp_ps(c, d, _CMP_UNORD_Q)));
    }
    m0 = Op::f(Op::f(m0, m1), Op::f(m2, m3));
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, m0);
    for (float v : lanes) best = Op::s(best, v);
    nan = _mm256_movemask_ps(bad) != 0;
  }
  for (; i < n; ++i) {
    const float v = x[i];
    nan |= v != v;
    best = Op::s(best, v);
  }
  return nan ? __builtin_nanf("") : best;
}

template <typename Op>
double extremum_f64_impl(const double* x, int64_t n) {
  int64_t i = 0;
  double best = x[0];
  bool nan = false;
  if (n >= 16) {
    __m256d m0 = _mm256_loadu_pd(x), m1 = m0, m2 = m0, m3 = m0;
    __m256d bad = _mm256_setzero_pd();
    for (; i + 16 <= n; i += 16) {
      const __m256d a = _mm256_loadu_pd(x + i), b = _mm256_loadu_pd(x + i + 4);
      const __m256d c = _mm256_loadu_pd(x + i + 8), d = _mm256_loadu_pd(x + i + 12);
      m0 = Op::f(a, m0), m1 = Op::f(b, m1), m2 = Op::f(c, m2), m3 = Op::f(d, m3);
      bad = _mm256_or_pd(bad, _mm256_or_pd(_mm256_cmp_pd(a, b, _CMP_UNORD_Q), _mm256_cmp_pd(c, d, _CMP_UNORD_Q)));
    }
    m0 = Op::f(Op::f(m0, m1), Op::f(m2, m3));
    alignas(32) double lanes[4];
    _mm256_store_pd(lanes, m0);
    for (double v : lanes) best = Op::s(best, v);
    nan = _mm256_movemask_pd(bad) != 0;
  }
  for (; i < n; ++i) {
    const double v = x[i];
    nan |= v != v;
    best = Op::s(best, v);
  }
  return nan ? __builtin_nan("") : best;
}

}  // namespace

float extremum_f32(const float* x, int64_t n, bool max) {
  return max ? extremum_f32_impl<MaxOp>(x, n) : extremum_f32_impl<MinOp>(x, n);
}
double extremum_f64(const double* x, int64_t n, bool max) {
  return max ? extremum_f64_impl<MaxOp>(x, n) : extremum_f64_impl<MinOp>(x, n);
}

void add_row_f32(double* acc, const float* row, int64_t n) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 r = _mm256_loadu_ps(row + j);
    const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(r));
    const __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(r, 1));
    _mm256_storeu_pd(acc + j, _mm256_add_pd(_mm256_loadu_pd(acc + j), lo));
    _mm256_storeu_pd(acc + j + 4, _mm256_add_pd(_mm256_loadu_pd(acc + j + 4), hi));
  }
  for (; j < n; ++j) acc[j] += static_cast<double>(row[j]);
}

void sum_squares_lanes_f32(const float* x, int64_t n, double* acc16) {
  // Lane j of Note [Norm accumulation] is element j of accumulator j / 4.
  __m256d a0 = _mm256_loadu_pd(acc16), a1 = _mm256_loadu_pd(acc16 + 4);
  __m256d a2 = _mm256_loadu_pd(acc16 + 8), a3 = _mm256_loadu_pd(acc16 + 12);
  for (int64_t i = 0; i + 16 <= n; i += 16) {
    const __m256d v0 = _mm256_cvtps_pd(_mm_loadu_ps(x + i)), v1 = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4));
    const __m256d v2 = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 8)), v3 = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 12));
    a0 = _mm256_add_pd(a0, _mm256_mul_pd(v0, v0));  // multiply, then add: no FMA (-ffp-contract=off)
    a1 = _mm256_add_pd(a1, _mm256_mul_pd(v1, v1));
    a2 = _mm256_add_pd(a2, _mm256_mul_pd(v2, v2));
    a3 = _mm256_add_pd(a3, _mm256_mul_pd(v3, v3));
  }
  _mm256_storeu_pd(acc16, a0);
  _mm256_storeu_pd(acc16 + 4, a1);
  _mm256_storeu_pd(acc16 + 8, a2);
  _mm256_storeu_pd(acc16 + 12, a3);
}

void add_rows_f32(double* acc, const float* const* rows, int nrows, int64_t n) {
  // Note [Column sums in row blocks] (Reduce.cpp): each column's partial sum
  // stays in a register while the block's rows are added to it in order.
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256d lo = _mm256_loadu_pd(acc + j), hi = _mm256_loadu_pd(acc + j + 4);
    for (int r = 0; r < nrows; ++r) {
      const __m256 v = _mm256_loadu_ps(rows[r] + j);
      lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
      hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    }
    _mm256_storeu_pd(acc + j, lo);
    _mm256_storeu_pd(acc + j + 4, hi);
  }
  for (; j < n; ++j) {
    double a = acc[j];
    for (int r = 0; r < nrows; ++r) a += static_cast<double>(rows[r][j]);
    acc[j] = a;
  }
}

namespace {
// The high and low 32 bits of the eight products k * c[lane] (Philox's mulhilo).
inline void mulhilo8(__m256i k, __m256i c, __m256i* hi, __m256i* lo) {
  const __m256i even = _mm256_mul_epu32(k, c);                          // lanes 0, 2, 4, 6
  const __m256i odd = _mm256_mul_epu32(k, _mm256_srli_epi64(c, 32));   // lanes 1, 3, 5, 7
  *hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
  *lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
}
}  // namespace

void philox_blocks(uint64_t seed, uint64_t counter, int64_t nblocks, uint32_t* words) {
  // Eight Philox4x32-10 blocks at a time, one per 32-bit lane (Note [Philox
  // random numbers], core/Philox.h, whose scalar rounds these mirror word for
  // word); the blocks are transposed back to (x0, x1, x2, x3) order on store.
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(0xD2511F53u));
  const __m256i m1 = _mm256_set1_epi32(static_cast<int>(0xCD9E8D57u));
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  alignas(32) uint32_t tail[32];
  for (int64_t b = 0; b < nblocks; b += 8) {
    const uint64_t c = counter + static_cast<uint64_t>(b);
    // Counter c + lane as (lo32, hi32): the low word may wrap within the eight.
    const __m256i lo = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(c))), lane);
    const __m256i wrapped = _mm256_cmpgt_epi32(_mm256_xor_si256(_mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(c))),
                                                                _mm256_set1_epi32(INT32_MIN)),
                                               _mm256_xor_si256(lo, _mm256_set1_epi32(INT32_MIN)));
    __m256i x0 = lo;
    __m256i x1 = _mm256_sub_epi32(_mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(c >> 32))), wrapped);
    __m256i x2 = _mm256_setzero_si256(), x3 = _mm256_setzero_si256();
    uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
    for (int r = 0; r < 10; ++r) {
      __m256i hi0, lo0, hi1, lo1;
      mulhilo8(m0, x0, &hi0, &lo0);
      mulhilo8(m1, x2, &hi1, &lo1);
      x0 = _mm256_xor_si256(_mm256_xor_si256(hi1, x1), _mm256_set1_epi32(static_cast<int>(k0)));
      x2 = _mm256_xor_si256(_mm256_xor_si256(hi0, x3), _mm256_set1_epi32(static_cast<int>(k1)));
      x1 = lo1;
      x3 = lo0;
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const __m256i t0 = _mm256_unpacklo_epi32(x0, x1), t1 = _mm256_unpackhi_epi32(x0, x1);
    const __m256i t2 = _mm256_unpacklo_epi32(x2, x3), t3 = _mm256_unpackhi_epi32(x2, x3);
    const __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
    const __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
    const bool full = b + 8 <= nblocks;
    uint32_t* dst = full ? words + 4 * b : tail;
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), _mm256_permute2x128_si256(u0, u1, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 8), _mm256_permute2x128_si256(u2, u3, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 16), _mm256_permute2x128_si256(u0, u1, 0x31));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 24), _mm256_permute2x128_si256(u2, u3, 0x31));
    if (!full) {
      for (int64_t w = 0; w < 4 * (nblocks - b); ++w) words[4 * b + w] = tail[w];
    }
  }
}

void uniform_f32(float* out, const uint32_t* words, int64_t n, double from, double span) {
  // out[i] = float(from + double(words[i] >> 8) * 2^-24 * span), the scalar
  // fill's expression in its order (no fused multiply-add in this file).
  const __m256d scale = _mm256_set1_pd(1.0 / 16777216.0), vspan = _mm256_set1_pd(span), vfrom = _mm256_set1_pd(from);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i w = _mm256_srli_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + i)), 8);
    const __m256d lo = _mm256_cvtepi32_pd(_mm256_castsi256_si128(w));
    const __m256d hi = _mm256_cvtepi32_pd(_mm256_extracti128_si256(w, 1));
    const __m128 flo = _mm256_cvtpd_ps(_mm256_add_pd(vfrom, _mm256_mul_pd(_mm256_mul_pd(lo, scale), vspan)));
    const __m128 fhi = _mm256_cvtpd_ps(_mm256_add_pd(vfrom, _mm256_mul_pd(_mm256_mul_pd(hi, scale), vspan)));
    _mm256_storeu_ps(out + i, _mm256_set_m128(fhi, flo));
  }
  for (; i < n; ++i) {
    out[i] = static_cast<float>(from + static_cast<double>(words[i] >> 8) * (1.0 / 16777216.0) * span);
  }
}

void apply_f32(int f, float* out, const float* in, int64_t n) { dispatch<F32>(f, out, in, n); }
void apply_f64(int f, double* out, const double* in, int64_t n) { dispatch<F64>(f, out, in, n); }

}  // namespace sdk::ops::vec::avx2
#endif  // SDK_HAVE_LIBMVEC
