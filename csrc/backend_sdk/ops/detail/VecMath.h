// Vectorised transcendental functions for the contiguous runs of the CPU
// element-wise kernels (Unary.cpp). Internal to csrc/ops.
//
// Note [Vector math]
// ~~~~~~~~~~~~~~~~~~
// exp, log, log1p, expm1, sin, cos, tan, tanh, erf and the activations built
// on them (sigmoid, silu, gelu in both forms) run 8 floats or 4 doubles at a
// time through glibc's libmvec (`_ZGVdN8v_expf` and friends, the x86-64
// vector-function ABI, AVX2 variants). Why libmvec rather than SLEEF, xsimd
// or Highway: it ships with glibc (no new dependency for the SDK or for a
// vendor linking it, nothing to vendor or keep up to date), it is maintained
// with glibc's scalar libm and tested by glibc's own ulp tables, it covers
// every function above in both precisions (erf, tanh, expm1, log1p since
// glibc 2.35), it handles inf, NaN and subnormal lanes exactly like the
// scalar libm (special lanes take a scalar fallback inside libmvec), and it
// measured as fast as SLEEF's u10 routines PyTorch uses. Its documented bound
// is 4 ulp; tests/test_vecmath.py measures every function over the whole
// float16/bfloat16 range exhaustively and over float32/float64 bit patterns
// (subnormals, inf, NaN included) against numpy in long double, and asserts
// at most 4 ulp for float32/float64 (PyTorch's float32 tolerance, rtol
// 1.3e-6, is about 11 ulp) and at most 1 ulp for float16/bfloat16 (computed
// in float, then rounded once).
//
// The AVX2 kernels live in VecMathAvx2.cpp, the only file compiled with
// -mavx2 -mfma; it defines nothing with external or inline linkage except
// its entry points, so no AVX instruction can leak into code the baseline
// build shares (an inline function instantiated in both files would be
// merged by the linker). apply() picks them once per process with
// __builtin_cpu_supports, and returns false (the caller's scalar loop runs)
// on a CPU without AVX2+FMA, off x86-64, or where libmvec was not found at
// build time. A tail shorter than a vector is padded into a stack buffer and
// computed by the same vector routine, so an element's result does not depend
// on its position in the run; strided and converted (float16, bfloat16) runs
// are gathered into a buffer and go through the same routine
// (cpu::unary_loop), so out= and the functional form, a transposed input and
// a contiguous one, agree bit for bit.
#pragma once

#include <cstdint>

namespace sdk::ops::vec {

enum class UnaryFn : int {
  Exp,
  Log,
  Log1p,
  Expm1,
  Sin,
  Cos,
  Tan,
  Tanh,
  Erf,
  Sigmoid,   // 1 / (1 + exp(-x))
  Silu,      // x / (1 + exp(-x))
  GeluErf,   // x/2 (1 + erf(x / sqrt 2))
  GeluTanh,  // x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
};

// Computes out[i] = f(in[i]) for i < n (out may alias in) and returns true,
// or returns false without writing when this CPU or build has no vector path.
bool apply(UnaryFn f, float* out, const float* in, int64_t n);
bool apply(UnaryFn f, double* out, const double* in, int64_t n);

// Whether apply() has a vector path here (for tests and benchmarks).
bool available();

// Reduction kernels (Note [Vector math] for the dispatch; Reduce.cpp for
// their use). Both are exact whatever the vector width, so a CPU without
// AVX2 (false returned: the caller's generic loop runs) gets the same bits:
// extremum_run: the max (kMax) or min of x[0..n), NaN if any element is NaN.
bool extremum_run(const float* x, int64_t n, bool max, float* result);
bool extremum_run(const double* x, int64_t n, bool max, double* result);
// add_row: acc[j] += double(row[j]) for j < n (a column sum's row step).
bool add_row(double* acc, const float* row, int64_t n);
// sum_squares_lanes: acc[j] += double(x[i + j])^2 for each 16-element block i
// (n a multiple of 16): Note [Norm accumulation]'s lanes, bit for bit.
bool sum_squares_lanes(const float* x, int64_t n, double* acc16);

// add_rows: acc[j] += double(rows[0][j]), then rows[1][j], ... rows[nrows-1][j]
// for j < n: add_row over a block of rows, the same additions in the same
// order (Note [Column sums in row blocks], Reduce.cpp).
bool add_rows(double* acc, const float* const* rows, int nrows, int64_t n);

// Random number kernels (Note [Philox random numbers], core/Philox.h), exact:
// philox_blocks: words[4 k + w] = philox::block(seed, counter + k).x[w] for
// k < nblocks.
bool philox_blocks(uint64_t seed, uint64_t counter, int64_t nblocks, uint32_t* words);
// uniform_f32: out[i] = float(from + double(words[i] >> 8) * 2^-24 * span),
// the float32 uniform fill's value of word i.
bool uniform_f32(float* out, const uint32_t* words, int64_t n, double from, double span);

}  // namespace sdk::ops::vec
