// The AVX2 row kernels of the fused softmax operators (Note [Fused softmax],
// ops/Softmax.cpp). Compiled as VecMathAvx2.cpp is (-mavx2 -mfma
// -ffp-contract=off, Note [Vector math]): it defines nothing with external or
// inline linkage except its entry points and includes no SDK header, so no
// AVX instruction leaks into code the baseline build shares; Softmax.cpp calls
// the entry points only where vec::available() says the CPU has AVX2 + FMA.
#if defined(SDK_HAVE_LIBMVEC)
#include <immintrin.h>

#include <cstdint>

extern "C" __m256 _ZGVdN8v_expf(__m256);

namespace sdk::ops::vec::avx2 {
namespace {

// Two double accumulators per 8 floats (the low and high halves), added in a
// fixed order: a row's sum depends on its length only, never on the thread.
struct SumF64 {
  __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
  void add(__m256 v) {
    lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
  }
  double total() const {
    alignas(32) double l[4];
    _mm256_store_pd(l, _mm256_add_pd(lo, hi));
    return (l[0] + l[1]) + (l[2] + l[3]);
  }
};

// exp(d) (d a shifted logit or a log-probability, so mostly <= 0), with lanes below -87 given 0: libmvec's expf
// takes its scalar fallback for a whole vector when one lane is special (-inf: a masked score; or its
// result underflows), which made masked rows four times slower. exp(-87) = 1.6e-38 is the smallest normal
// result; below it the exact result is under FLT_MIN, far below a sum of at least 1 (the row's max gives
// exp(0)), so 0 changes a probability by less than 1.2e-38 absolute. NaN lanes stay NaN (MAXPS returns its
// second operand, d, when either is NaN), -inf lanes give 0 as exp(-inf) does.
__m256 exp_flushed(__m256 d) {
  const __m256 lo = _mm256_set1_ps(-87.0f);
  const __m256 e = _ZGVdN8v_expf(_mm256_max_ps(lo, d));
  return _mm256_andnot_ps(_mm256_cmp_ps(d, lo, _CMP_LT_OQ), e);
}

// The tail of a row (rest < 8 elements) padded with `pad` into a stack vector.
__m256 load_tail(const float* p, int64_t rest, float pad) {
  alignas(32) float buf[8];
  for (int j = 0; j < 8; ++j) buf[j] = j < rest ? p[j] : pad;
  return _mm256_load_ps(buf);
}
void store_tail(float* p, int64_t rest, __m256 v) {
  alignas(32) float buf[8];
  _mm256_store_ps(buf, v);
  for (int64_t j = 0; j < rest; ++j) p[j] = buf[j];
}
// The sum of the first `rest` lanes of v, in double, in lane order.
double tail_sum(__m256 v, int64_t rest) {
  alignas(32) float buf[8];
  _mm256_store_ps(buf, v);
  double s = 0;
  for (int64_t j = 0; j < rest; ++j) s += static_cast<double>(buf[j]);
  return s;
}

// The row's max; NaN elements are skipped (MAXPS returns its second operand, the running max, when
// the element is NaN): they reach every output through x - max, which is NaN.
float row_max(const float* x, int64_t n) {
  const __m256 ninf = _mm256_set1_ps(-__builtin_inff());
  __m256 m0 = ninf, m1 = ninf;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    m0 = _mm256_max_ps(_mm256_loadu_ps(x + i), m0);
    m1 = _mm256_max_ps(_mm256_loadu_ps(x + i + 8), m1);
  }
  for (; i + 8 <= n; i += 8) m0 = _mm256_max_ps(_mm256_loadu_ps(x + i), m0);
  if (i < n) m1 = _mm256_max_ps(load_tail(x + i, n - i, -__builtin_inff()), m1);
  alignas(32) float l[8];
  _mm256_store_ps(l, _mm256_max_ps(m0, m1));
  float best = l[0];
  for (int j = 1; j < 8; ++j) best = l[j] > best ? l[j] : best;
  return best;
}

}  // namespace

// y = exp(x - max) / sum(exp(x - max)) (log: (x - max) - log(sum)) over one contiguous row of n > 0.
void softmax_row_f32(const float* x, float* y, int64_t n, bool log) {
  const float mx = row_max(x, n);
  const __m256 vmax = _mm256_set1_ps(mx);
  SumF64 acc;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp_flushed(_mm256_sub_ps(_mm256_loadu_ps(x + i), vmax));
    if (!log) _mm256_storeu_ps(y + i, e);
    acc.add(e);
  }
  const int64_t rest = n - i;
  double sum = acc.total();
  if (rest > 0) {
    const __m256 e = exp_flushed(_mm256_sub_ps(load_tail(x + i, rest, mx), vmax));
    if (!log) store_tail(y + i, rest, e);
    sum += tail_sum(e, rest);
  }
  if (log) {
    const __m256 vls = _mm256_set1_ps(static_cast<float>(__builtin_log(sum)));
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
      _mm256_storeu_ps(y + j, _mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(x + j), vmax), vls));
    for (; j < n; ++j) y[j] = (x[j] - mx) - static_cast<float>(__builtin_log(sum));
  } else {
    const float inv = static_cast<float>(1.0 / sum);
    const __m256 vinv = _mm256_set1_ps(inv);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) _mm256_storeu_ps(y + j, _mm256_mul_ps(_mm256_loadu_ps(y + j), vinv));
    for (; j < n; ++j) y[j] = y[j] * inv;
  }
}

// softmax: gi = y * (g - sum(g * y)); log_softmax: gi = g - exp(y) * sum(g); one contiguous row of n > 0.
void softmax_backward_row_f32(const float* g, const float* y, float* gi, int64_t n, bool log) {
  SumF64 acc;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 vg = _mm256_loadu_ps(g + i);
    acc.add(log ? vg : _mm256_mul_ps(vg, _mm256_loadu_ps(y + i)));
  }
  double s = acc.total();
  const int64_t rest = n - i;
  if (rest > 0) {
    const __m256 vg = load_tail(g + i, rest, 0.0f);
    s += tail_sum(log ? vg : _mm256_mul_ps(vg, load_tail(y + i, rest, 0.0f)), rest);
  }
  const __m256 vs = _mm256_set1_ps(static_cast<float>(s));
  i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 vg = _mm256_loadu_ps(g + i), vy = _mm256_loadu_ps(y + i);
    _mm256_storeu_ps(gi + i, log ? _mm256_sub_ps(vg, _mm256_mul_ps(exp_flushed(vy), vs))
                                 : _mm256_mul_ps(vy, _mm256_sub_ps(vg, vs)));
  }
  if (i < n) {
    const __m256 vg = load_tail(g + i, n - i, 0.0f), vy = load_tail(y + i, n - i, 0.0f);
    store_tail(gi + i, n - i, log ? _mm256_sub_ps(vg, _mm256_mul_ps(exp_flushed(vy), vs))
                                  : _mm256_mul_ps(vy, _mm256_sub_ps(vg, vs)));
  }
}

}  // namespace sdk::ops::vec::avx2
#endif  // SDK_HAVE_LIBMVEC
