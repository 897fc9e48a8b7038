// The fused softmax operators: aten::_softmax, aten::_log_softmax and their
// backward operators aten::_softmax_backward_data and
// aten::_log_softmax_backward_data (PyTorch's schemas), CPU and Meta kernels.
// softmax.int / log_softmax.int (Composite.cpp) are CompositeImplicitAutograd
// over the first two, as PyTorch's; their derivative formulas (derivatives.def)
// call the backward operators, which have formulas of their own (double
// backward).
//
// Note [Fused softmax]
// ~~~~~~~~~~~~~~~~~~~~
// The input is viewed as [outer, n, inner] around `dim` (contiguous copy in
// the compute type first: float32 for float16/bfloat16, as PyTorch's opmath).
// A row (inner == 1, the softmax of the last dim) of float32 takes three
// passes: the max, exp(x - max) written once while its sum accumulates, and
// one scaling pass (log_softmax: (x - max) - log(sum), nothing written in the
// second pass); the AVX2 row kernels in SoftmaxAvx2.cpp do them eight lanes at
// a time (libmvec's expf, Note [Vector math]) where the CPU has AVX2 + FMA;
// there exp of an argument below -87 (a masked -inf score) is 0 rather than
// a value under FLT_MIN, which keeps masked rows on libmvec's vector path
// (SoftmaxAvx2.cpp, exp_flushed).
// Everything else (float64, another dim, no AVX2) takes the block loop below,
// which vectorises exp through vec::apply. Sums accumulate in double, in an
// order fixed by the row's length, so results do not depend on the thread
// count; rows (blocks of n * inner) are split over threads.
// NaN: the max skips NaN elements, a NaN then reaches the whole row through
// the sum (x - max is NaN), as PyTorch's; a row of -inf gives NaN (-inf + inf),
// as PyTorch's.
// Backward: softmax gi = y * (g - sum(g * y)), log_softmax
// gi = g - exp(y) * sum(g), over the same rows, in one read of g and y for the
// sum and one pass writing gi. The result has input_dtype (PyTorch's).
#include <cmath>
#include <limits>
#include <vector>

#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/Parallel.h>
#include <backend_sdk/ops/detail/Casting.h>
#include <backend_sdk/ops/detail/CompositeOps.h>
#include <backend_sdk/ops/detail/VecMath.h>

namespace sdk::ops {

#if defined(SDK_HAVE_LIBMVEC)
namespace vec::avx2 {
// Defined in SoftmaxAvx2.cpp (compiled with -mavx2 -mfma).
void softmax_row_f32(const float* x, float* y, int64_t n, bool log);
void softmax_backward_row_f32(const float* g, const float* y, float* gi, int64_t n, bool log);
}  // namespace vec::avx2
#endif

namespace {

using cx::as_dtype;
using cx::compute_type;
using cx::dense;
using cx::floating_dispatch;

// Whether the AVX2 row kernels run here (float32 rows).
bool avx2_rows() {
#if defined(SDK_HAVE_LIBMVEC)
  return vec::available();
#else
  return false;
#endif
}

template <typename T>
void exp_run(T* out, const T* in, int64_t n) {
  if (vec::apply(vec::UnaryFn::Exp, out, in, n)) return;
  for (int64_t i = 0; i < n; ++i) out[i] = std::exp(in[i]);
}

struct Geometry {
  int64_t outer, n, inner;
};

Geometry geometry(const Tensor& t, int64_t dim) {
  Geometry g{1, t.dim() == 0 ? 1 : t.size(dim), 1};
  for (int64_t i = 0; i < dim; ++i) g.outer *= t.size(i);
  for (int64_t i = dim + 1; i < t.dim(); ++i) g.inner *= t.size(i);
  return g;
}

// One block [n, inner] of the forward (Note [Fused softmax]); tmp holds n * inner, acc and mx inner.
template <typename T, bool kLog>
void softmax_block(const T* x, T* y, int64_t n, int64_t inner, T* tmp, T* mx, double* acc) {
  const int64_t len = n * inner;
  for (int64_t j = 0; j < inner; ++j) {
    mx[j] = -std::numeric_limits<T>::infinity();
    acc[j] = 0;
  }
  for (int64_t d = 0; d < n; ++d)
    for (int64_t j = 0; j < inner; ++j) {
      const T v = x[d * inner + j];
      if (v > mx[j]) mx[j] = v;
    }
  T* shifted = kLog ? y : tmp;
  for (int64_t d = 0; d < n; ++d)
    for (int64_t j = 0; j < inner; ++j) shifted[d * inner + j] = x[d * inner + j] - mx[j];
  T* e = kLog ? tmp : y;
  exp_run(e, shifted, len);
  for (int64_t d = 0; d < n; ++d)
    for (int64_t j = 0; j < inner; ++j) acc[j] += static_cast<double>(e[d * inner + j]);
  if constexpr (kLog) {
    for (int64_t j = 0; j < inner; ++j) mx[j] = static_cast<T>(std::log(acc[j]));
    for (int64_t d = 0; d < n; ++d)
      for (int64_t j = 0; j < inner; ++j) y[d * inner + j] -= mx[j];
  } else {
    for (int64_t j = 0; j < inner; ++j) mx[j] = static_cast<T>(1.0 / acc[j]);
    for (int64_t d = 0; d < n; ++d)
      for (int64_t j = 0; j < inner; ++j) y[d * inner + j] *= mx[j];
  }
}

// One block of the backward; tmp holds n * inner (log_softmax's exp(y)), s and acc inner.
template <typename T, bool kLog>
void softmax_backward_block(const T* g, const T* y, T* gi, int64_t n, int64_t inner, T* tmp, T* s, double* acc) {
  for (int64_t j = 0; j < inner; ++j) acc[j] = 0;
  for (int64_t d = 0; d < n; ++d)
    for (int64_t j = 0; j < inner; ++j) {
      const int64_t k = d * inner + j;
      acc[j] += static_cast<double>(kLog ? g[k] : g[k] * y[k]);
    }
  for (int64_t j = 0; j < inner; ++j) s[j] = static_cast<T>(acc[j]);
  if constexpr (kLog) {
    exp_run(tmp, y, n * inner);
    for (int64_t d = 0; d < n; ++d)
      for (int64_t j = 0; j < inner; ++j) gi[d * inner + j] = g[d * inner + j] - tmp[d * inner + j] * s[j];
  } else {
    (void)tmp;
    for (int64_t d = 0; d < n; ++d)
      for (int64_t j = 0; j < inner; ++j) {
        const int64_t k = d * inner + j;
        gi[k] = y[k] * (g[k] - s[j]);
      }
  }
}

int64_t grain_blocks(int64_t block) { return std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(block, 1)); }

template <bool kLog>
void softmax_forward_cpu(const Tensor& x, Tensor& y, const Geometry& geo) {
  floating_dispatch(x.dtype(), kLog ? "_log_softmax" : "_softmax", [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data_ptr<T>();
    T* py = y.data_ptr<T>();
    const int64_t block = geo.n * geo.inner;
#if defined(SDK_HAVE_LIBMVEC)
    if constexpr (std::is_same_v<T, float>) {
      if (geo.inner == 1 && avx2_rows()) {
        parallel_for(0, geo.outer, grain_blocks(block), [&](int64_t b, int64_t e) {
          for (int64_t r = b; r < e; ++r) vec::avx2::softmax_row_f32(px + r * block, py + r * block, geo.n, kLog);
        });
        return;
      }
    }
#endif
    parallel_for(0, geo.outer, grain_blocks(block), [&](int64_t b, int64_t e) {
      std::vector<T> tmp(static_cast<size_t>(block)), mx(static_cast<size_t>(geo.inner));
      std::vector<double> acc(static_cast<size_t>(geo.inner));
      for (int64_t r = b; r < e; ++r)
        softmax_block<T, kLog>(px + r * block, py + r * block, geo.n, geo.inner, tmp.data(), mx.data(), acc.data());
    });
  });
}

template <bool kLog>
void softmax_backward_cpu(const Tensor& g, const Tensor& y, Tensor& gi, const Geometry& geo) {
  floating_dispatch(y.dtype(), kLog ? "_log_softmax_backward_data" : "_softmax_backward_data", [&](auto tag) {
    using T = decltype(tag);
    const T* pg = g.data_ptr<T>();
    const T* py = y.data_ptr<T>();
    T* pgi = gi.data_ptr<T>();
    const int64_t block = geo.n * geo.inner;
#if defined(SDK_HAVE_LIBMVEC)
    if constexpr (std::is_same_v<T, float>) {
      if (geo.inner == 1 && avx2_rows()) {
        parallel_for(0, geo.outer, grain_blocks(block), [&](int64_t b, int64_t e) {
          for (int64_t r = b; r < e; ++r)
            vec::avx2::softmax_backward_row_f32(pg + r * block, py + r * block, pgi + r * block, geo.n, kLog);
        });
        return;
      }
    }
#endif
    parallel_for(0, geo.outer, grain_blocks(block), [&](int64_t b, int64_t e) {
      std::vector<T> tmp(kLog ? static_cast<size_t>(block) : 0), s(static_cast<size_t>(geo.inner));
      std::vector<double> acc(static_cast<size_t>(geo.inner));
      for (int64_t r = b; r < e; ++r)
        softmax_backward_block<T, kLog>(pg + r * block, py + r * block, pgi + r * block, geo.n, geo.inner,
                                        tmp.data(), s.data(), acc.data());
    });
  });
}

// ---- _softmax / _log_softmax: half_to_float asks for a float32 result ----
template <bool kCpu, bool kLog>
Tensor softmax_kernel(const Tensor& self, int64_t dim, bool half_to_float) {
  const char* name = kLog ? "_log_softmax" : "_softmax";
  if (half_to_float) {
    SDK_CHECK_VALUE(self.dtype() == ScalarType::Float16, name, ": conversion is supported for Half type only");
  }
  const int64_t d = maybe_wrap_dim(dim, self.dim());
  // PyTorch's CPU kernels' message (their names: the last dim's kernel or the general one).
  SDK_CHECK_NOT_IMPLEMENTED(is_floating_type(self.dtype()), "\"", kLog ? "log_" : "", "softmax_",
                            d == self.dim() - 1 || self.dim() == 0 ? "lastdim_" : "", "kernel_impl\" not implemented "
                            "for '", legacy_type_name(self.dtype()), "'");
  const ScalarType out_dtype = half_to_float ? ScalarType::Float32 : self.dtype();
  if constexpr (!kCpu) {
    return make_tensor(self.sizes(), out_dtype, self.device());
  } else {
    const ScalarType ct = compute_type(self.dtype());
    Tensor x = dense(self, ct);
    Tensor y = make_tensor(self.sizes(), ct, self.device());
    if (self.numel() > 0) softmax_forward_cpu<kLog>(x, y, geometry(x, d));
    return as_dtype(y, out_dtype);
  }
}

// ---- _softmax_backward_data / _log_softmax_backward_data ----
template <bool kCpu, bool kLog>
Tensor softmax_backward_kernel(const Tensor& grad_output, const Tensor& output, int64_t dim, ScalarType input_dtype) {
  const char* name = kLog ? "_log_softmax_backward_data" : "_softmax_backward_data";
  // PyTorch's checkSameSize message.
  SDK_CHECK(grad_output.sizes().equals(output.sizes()), "Expected tensor for argument #1 'grad' to have same size as "
            "tensor for argument #2 'output'; but ", grad_output.sizes(), " does not equal ", output.sizes(),
            " (while checking arguments for ", kLog ? "log_softmax_backward" : "softmax_backward", ")");
  SDK_CHECK_TYPE(is_floating_type(output.dtype()) && is_floating_type(grad_output.dtype()), name,
                 ": expected floating point grad_output and output, got ", scalar_type_name(grad_output.dtype()),
                 " and ", scalar_type_name(output.dtype()));
  const int64_t d = maybe_wrap_dim(dim, output.dim());
  if constexpr (!kCpu) {
    return make_tensor(output.sizes(), input_dtype, output.device());
  } else {
    const ScalarType ct = compute_type(output.dtype());
    Tensor g = dense(grad_output, ct), y = dense(output, ct);
    Tensor gi = make_tensor(output.sizes(), ct, output.device());
    if (output.numel() > 0) softmax_backward_cpu<kLog>(g, y, gi, geometry(y, d));
    return as_dtype(gi, input_dtype);
  }
}

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_FRAGMENT(aten, m) {
  m.def("_softmax(Tensor self, int dim, bool half_to_float) -> Tensor");
  m.def("_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor");
  m.def("_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor");
  m.def("_log_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor");
}

#define SDK_SOFTMAX_IMPLS(m, cpu)                                                          \
  m.impl("_softmax", &sdk::ops::softmax_kernel<cpu, false>);                               \
  m.impl("_log_softmax", &sdk::ops::softmax_kernel<cpu, true>);                            \
  m.impl("_softmax_backward_data", &sdk::ops::softmax_backward_kernel<cpu, false>);        \
  m.impl("_log_softmax_backward_data", &sdk::ops::softmax_backward_kernel<cpu, true>)

SDK_LIBRARY_IMPL(aten, CPU, m) { SDK_SOFTMAX_IMPLS(m, true); }
SDK_LIBRARY_IMPL(aten, Meta, m) { SDK_SOFTMAX_IMPLS(m, false); }
