// The AVX2 row kernels of native_layer_norm and native_layer_norm_backward for
// float32 (Note [Normalization kernels], ops/Normalization.cpp). Compiled as
// VecMathAvx2.cpp is (-mavx2 -mfma -ffp-contract=off, Note [Vector math]):
// entry points only, no SDK header; Normalization.cpp calls them only where
// vec::available() says the CPU has AVX2 + FMA.
//
// Statistics and the backward's row sums accumulate in double (8 floats
// widened to two vectors of 4 doubles, added in a fixed order, so a row's
// result depends on its length only); the element-wise parts are float32
// arithmetic, as PyTorch's CPU kernels (float opmath).
#if defined(SDK_HAVE_LIBMVEC)
#include <immintrin.h>

#include <cstdint>

namespace sdk::ops::vec::avx2 {
namespace {

__m256d lo4(__m256 v) { return _mm256_cvtps_pd(_mm256_castps256_ps128(v)); }
__m256d hi4(__m256 v) { return _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)); }
double hsum(__m256d a, __m256d b) {
  alignas(32) double l[4];
  _mm256_store_pd(l, _mm256_add_pd(a, b));
  return (l[0] + l[1]) + (l[2] + l[3]);
}

}  // namespace

// y = (x - mean) * rstd * w + b over one row of n > 0 (w, b may be null); mean and rstd out.
void layer_norm_row_f32(const float* x, const float* w, const float* b, float* y, int64_t n, double eps,
                        float* mean_out, float* rstd_out) {
  __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 v = _mm256_loadu_ps(x + j);
    s0 = _mm256_add_pd(s0, lo4(v));
    s1 = _mm256_add_pd(s1, hi4(v));
  }
  double sum = hsum(s0, s1);
  for (int64_t t = j; t < n; ++t) sum += static_cast<double>(x[t]);
  const double mu = sum / static_cast<double>(n);
  const __m256d vmu = _mm256_set1_pd(mu);
  __m256d q0 = _mm256_setzero_pd(), q1 = _mm256_setzero_pd();
  for (j = 0; j + 8 <= n; j += 8) {
    const __m256 v = _mm256_loadu_ps(x + j);
    const __m256d d0 = _mm256_sub_pd(lo4(v), vmu), d1 = _mm256_sub_pd(hi4(v), vmu);
    q0 = _mm256_add_pd(q0, _mm256_mul_pd(d0, d0));
    q1 = _mm256_add_pd(q1, _mm256_mul_pd(d1, d1));
  }
  double ss = hsum(q0, q1);
  for (int64_t t = j; t < n; ++t) {
    const double d = static_cast<double>(x[t]) - mu;
    ss += d * d;
  }
  const double inv = 1.0 / __builtin_sqrt(ss / static_cast<double>(n) + eps);
  *mean_out = static_cast<float>(mu);
  *rstd_out = static_cast<float>(inv);
  const float muf = static_cast<float>(mu), invf = static_cast<float>(inv);
  const __m256 vm = _mm256_set1_ps(muf), vi = _mm256_set1_ps(invf);
  for (j = 0; j + 8 <= n; j += 8) {
    __m256 v = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + j), vm), vi);
    if (w) v = _mm256_mul_ps(v, _mm256_loadu_ps(w + j));
    if (b) v = _mm256_add_ps(v, _mm256_loadu_ps(b + j));
    _mm256_storeu_ps(y + j, v);
  }
  for (; j < n; ++j) {
    float v = (x[j] - muf) * invf;
    if (w) v *= w[j];
    if (b) v += b[j];
    y[j] = v;
  }
}

// gi = rstd * (g w - mean(g w) - xhat * mean(g w xhat)), xhat = (x - mean) * rstd, over one row (w may be
// null); with dw / db (may be null): dw[j] += g xhat, db[j] += g in the same pass (double sums).
void layer_norm_backward_row_f32(const float* g, const float* x, const float* w, float mean, float rstd, float* gi,
                                 int64_t n, double* dw, double* db) {
  const __m256 vm = _mm256_set1_ps(mean), vr = _mm256_set1_ps(rstd);
  __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd(), b0 = _mm256_setzero_pd(), b1 = _mm256_setzero_pd();
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256 gw = _mm256_loadu_ps(g + j);
    if (w) gw = _mm256_mul_ps(gw, _mm256_loadu_ps(w + j));
    const __m256 xh = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + j), vm), vr);
    const __m256 p = _mm256_mul_ps(gw, xh);
    a0 = _mm256_add_pd(a0, lo4(gw));
    a1 = _mm256_add_pd(a1, hi4(gw));
    b0 = _mm256_add_pd(b0, lo4(p));
    b1 = _mm256_add_pd(b1, hi4(p));
  }
  double s1 = hsum(a0, a1), s2 = hsum(b0, b1);
  for (int64_t t = j; t < n; ++t) {
    const float gw = w ? g[t] * w[t] : g[t];
    const float xh = (x[t] - mean) * rstd;
    s1 += static_cast<double>(gw);
    s2 += static_cast<double>(gw * xh);
  }
  const float m1 = static_cast<float>(s1 / static_cast<double>(n)), m2 = static_cast<float>(s2 / static_cast<double>(n));
  const __m256 v1 = _mm256_set1_ps(m1), v2 = _mm256_set1_ps(m2);
  for (j = 0; j + 8 <= n; j += 8) {
    const __m256 vg = _mm256_loadu_ps(g + j);
    const __m256 gw = w ? _mm256_mul_ps(vg, _mm256_loadu_ps(w + j)) : vg;
    const __m256 xh = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + j), vm), vr);
    _mm256_storeu_ps(gi + j, _mm256_mul_ps(vr, _mm256_sub_ps(_mm256_sub_ps(gw, v1), _mm256_mul_ps(xh, v2))));
    if (dw) {
      const __m256 p = _mm256_mul_ps(vg, xh);
      _mm256_storeu_pd(dw + j, _mm256_add_pd(_mm256_loadu_pd(dw + j), lo4(p)));
      _mm256_storeu_pd(dw + j + 4, _mm256_add_pd(_mm256_loadu_pd(dw + j + 4), hi4(p)));
    }
    if (db) {
      _mm256_storeu_pd(db + j, _mm256_add_pd(_mm256_loadu_pd(db + j), lo4(vg)));
      _mm256_storeu_pd(db + j + 4, _mm256_add_pd(_mm256_loadu_pd(db + j + 4), hi4(vg)));
    }
  }
  for (; j < n; ++j) {
    const float gw = w ? g[j] * w[j] : g[j];
    const float xh = (x[j] - mean) * rstd;
    gi[j] = rstd * ((gw - m1) - xh * m2);
    if (dw) dw[j] += static_cast<double>(g[j] * xh);
    if (db) db[j] += static_cast<double>(g[j]);
  }
}

// dw[j] += g[r, j] * xhat[r, j], db[j] += g[r, j] over rows r < m, for columns [j0, j1) (double sums, rows in
// order); dw or db may be null.
void layer_norm_dwdb_f32(const float* g, const float* x, const float* mean, const float* rstd, int64_t m, int64_t n,
                         int64_t j0, int64_t j1, double* dw, double* db) {
  for (int64_t r = 0; r < m; ++r) {
    const float* gr = g + r * n;
    const float* xr = x + r * n;
    const __m256 vm = _mm256_set1_ps(mean[r]), vr = _mm256_set1_ps(rstd[r]);
    int64_t j = j0;
    for (; j + 8 <= j1; j += 8) {
      const __m256 vg = _mm256_loadu_ps(gr + j);
      if (dw) {
        const __m256 p = _mm256_mul_ps(vg, _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(xr + j), vm), vr));
        _mm256_storeu_pd(dw + j, _mm256_add_pd(_mm256_loadu_pd(dw + j), lo4(p)));
        _mm256_storeu_pd(dw + j + 4, _mm256_add_pd(_mm256_loadu_pd(dw + j + 4), hi4(p)));
      }
      if (db) {
        _mm256_storeu_pd(db + j, _mm256_add_pd(_mm256_loadu_pd(db + j), lo4(vg)));
        _mm256_storeu_pd(db + j + 4, _mm256_add_pd(_mm256_loadu_pd(db + j + 4), hi4(vg)));
      }
    }
    for (; j < j1; ++j) {
      if (dw) dw[j] += static_cast<double>(gr[j] * ((xr[j] - mean[r]) * rstd[r]));
      if (db) db[j] += static_cast<double>(gr[j]);
    }
  }
}

}  // namespace sdk::ops::vec::avx2
#endif  // SDK_HAVE_LIBMVEC
