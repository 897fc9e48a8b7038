// Runtime selection of the vector math kernels. See Note [Vector math]
// (ops/detail/VecMath.h). Built for the baseline ISA: only the entry points
// of VecMathAvx2.cpp are AVX2 code, and they run only where the CPU has it.
#include <backend_sdk/ops/detail/VecMath.h>

namespace sdk::ops::vec {

#if defined(SDK_HAVE_LIBMVEC)
namespace avx2 {
// Defined in VecMathAvx2.cpp (compiled with -mavx2 -mfma).
void apply_f32(int f, float* out, const float* in, int64_t n);
void apply_f64(int f, double* out, const double* in, int64_t n);
float extremum_f32(const float* x, int64_t n, bool max);
double extremum_f64(const double* x, int64_t n, bool max);
void add_row_f32(double* acc, const float* row, int64_t n);
void sum_squares_lanes_f32(const float* x, int64_t n, double* acc16);
void add_rows_f32(double* acc, const float* const* rows, int nrows, int64_t n);
void philox_blocks(uint64_t seed, uint64_t counter, int64_t nblocks, uint32_t* words);
void uniform_f32(float* out, const uint32_t* words, int64_t n, double from, double span);
}  // namespace avx2

namespace {
bool detect() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
}  // namespace

bool available() {
  static const bool has_avx2 = detect();  // thread-safe static init
  return has_avx2;
}

bool apply(UnaryFn f, float* out, const float* in, int64_t n) {
  if (!available()) return false;
  avx2::apply_f32(static_cast<int>(f), out, in, n);
  return true;
}

bool apply(UnaryFn f, double* out, const double* in, int64_t n) {
  if (!available()) return false;
  avx2::apply_f64(static_cast<int>(f), out, in, n);
  return true;
}
bool extremum_run(const float* x, int64_t n, bool max, float* result) {
  if (!available() || n <= 0) return false;
  *result = avx2::extremum_f32(x, n, max);
  return true;
}

bool extremum_run(const double* x, int64_t n, bool max, double* result) {
  if (!available() || n <= 0) return false;
  *result = avx2::extremum_f64(x, n, max);
  return true;
}

bool add_row(double* acc, const float* row, int64_t n) {
  if (!available()) return false;
  avx2::add_row_f32(acc, row, n);
  return true;
}
bool sum_squares_lanes(const float* x, int64_t n, double* acc16) {
  if (!available()) return false;
  avx2::sum_squares_lanes_f32(x, n, acc16);
  return true;
}
bool add_rows(double* acc, const float* const* rows, int nrows, int64_t n) {
  if (!available()) return false;
  avx2::add_rows_f32(acc, rows, nrows, n);
  return true;
}
bool philox_blocks(uint64_t seed, uint64_t counter, int64_t nblocks, uint32_t* words) {
  if (!available()) return false;
  avx2::philox_blocks(seed, counter, nblocks, words);
  return true;
}
bool uniform_f32(float* out, const uint32_t* words, int64_t n, double from, double span) {
  if (!available()) return false;
  avx2::uniform_f32(out, words, n, from, span);
  return true;
}
#else
bool available() { return false; }
bool add_rows(double*, const float* const*, int, int64_t) { return false; }
bool philox_blocks(uint64_t, uint64_t, int64_t, uint32_t*) { return false; }
bool uniform_f32(float*, const uint32_t*, int64_t, double, double) { return false; }
bool sum_squares_lanes(const float*, int64_t, double*) { return false; }
bool extremum_run(const float*, int64_t, bool, float*) { return false; }
bool extremum_run(const double*, int64_t, bool, double*) { return false; }
bool add_row(double*, const float*, int64_t) { return false; }
bool apply(UnaryFn, float*, const float*, int64_t) { return false; }
bool apply(UnaryFn, double*, const double*, int64_t) { return false; }
#endif

}  // namespace sdk::ops::vec
