// native_layer_norm, native_batch_norm and their backward operators (CPU and
// Meta kernels); layer_norm, batch_norm (CompositeImplicitAutograd over them,
// as PyTorch's), group_norm and rms_norm (CompositeImplicitAutograd over
// reductions: differentiable through them today).
//
// Note [Normalization kernels]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Statistics accumulate in double over a contiguous copy in the compute type
// (float32 for float16/bfloat16, as PyTorch's CPU kernels use an opmath type);
// the variance is the biased one (mean of squared deviations, two passes, no
// cancellation). float32 layer_norm rows take the AVX2 kernels of
// LayerNormAvx2.cpp where the CPU has AVX2 + FMA: the same double statistics
// and row sums (vector lanes, fixed order), the element-wise parts in float32
// (PyTorch's CPU opmath); the weight/bias gradients are summed in the
// grad_input pass per chunk of 64 rows, the chunks' sums then added in chunk
// order (without grad_input: columns in blocks of 64 over threads, each over
// the rows in order); neither order depends on the thread count.
// layer_norm normalizes over the trailing normalized_shape
// dims: M rows of N elements; mean and rstd have input's dims with the
// normalized ones of size 1. batch_norm normalizes each channel (dim 1) over
// the other dims; in training it returns the batch mean and 1/sqrt(var + eps)
// and updates running_mean / running_var in place with `momentum`
// (running_var from the unbiased variance, as PyTorch); in eval it uses the
// running statistics and returns empty save_mean / save_invstd.
// Derivatives (PyTorch's derivatives.yaml; the autograd table needs them):
//   native_layer_norm: input, weight, bias = native_layer_norm_backward(grad, input, normalized_shape, result1,
//                      result2, weight, bias, grad_input_mask)
//   native_batch_norm: input, weight, bias = native_batch_norm_backward(grad, input, weight, running_mean,
//                      running_var, result1, result2, training, eps, grad_input_mask)
#include <cmath>
#include <tuple>
#include <type_traits>
#include <vector>

#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/Parallel.h>
#include <backend_sdk/ops/detail/CompositeOps.h>
#include <backend_sdk/ops/detail/VecMath.h>

namespace sdk::ops {

#if defined(SDK_HAVE_LIBMVEC)
namespace vec::avx2 {
// Defined in LayerNormAvx2.cpp (compiled with -mavx2 -mfma): float32 rows.
void layer_norm_row_f32(const float* x, const float* w, const float* b, float* y, int64_t n, double eps,
                        float* mean_out, float* rstd_out);
void layer_norm_backward_row_f32(const float* g, const float* x, const float* w, float mean, float rstd, float* gi,
                                 int64_t n, double* dw, double* db);
void layer_norm_dwdb_f32(const float* g, const float* x, const float* mean, const float* rstd, int64_t m, int64_t n,
                         int64_t j0, int64_t j1, double* dw, double* db);
}  // namespace vec::avx2
#endif

namespace {

// Whether float32 layer_norm rows take the AVX2 kernels (LayerNormAvx2.cpp) here.
bool avx2_layer_norm() {
#if defined(SDK_HAVE_LIBMVEC)
  return vec::available();
#else
  return false;
#endif
}

using cx::as_dtype;
using cx::compute_type;
using cx::dense;
using cx::floating_dispatch;

// ---- layer norm ----
std::pair<int64_t, int64_t> layer_norm_rows(const Tensor& input, IntArrayRef normalized_shape, const char* op) {
  const int64_t nd = static_cast<int64_t>(normalized_shape.size());
  SDK_CHECK_VALUE(nd >= 1, "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                  "element, but got normalized_shape = ", normalized_shape);
  bool ok = input.dim() >= nd;
  for (int64_t i = 0; ok && i < nd; ++i) ok = input.size(input.dim() - nd + i) == normalized_shape[static_cast<size_t>(i)];
  if (!ok) {
    std::string expected = "[*";
    for (int64_t s : normalized_shape) expected += ", " + std::to_string(s);
    expected += "]";
    SDK_THROW(Value, "Given normalized_shape=", normalized_shape, ", expected input with shape ", expected,
              ", but got input of size", input.sizes());
  }
  (void)op;
  int64_t n = 1;
  for (int64_t s : normalized_shape) n *= s;
  return {n == 0 ? 0 : input.numel() / n, n};
}

void check_affine(const std::optional<Tensor>& t, IntArrayRef normalized_shape, const char* what) {
  if (!t) return;
  SDK_CHECK_VALUE(t->sizes().equals(normalized_shape), "Expected ", what, " to be of same shape as normalized_shape, "
                  "but got ", what, " of shape ", t->sizes(), " and normalized_shape = ", normalized_shape);
}

// The sum of f(0..n-1) in double with four interleaved accumulators: the additions of one row are
// independent chains the CPU overlaps (a single accumulator waits on each add's latency). The order is
// fixed (accumulator j % 4, then (a0 + a1) + (a2 + a3)), so results do not depend on threads or devices.
template <typename F>
inline double row_sum(int64_t n, F f) {
  double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    a0 += f(j);
    a1 += f(j + 1);
    a2 += f(j + 2);
    a3 += f(j + 3);
  }
  for (; j < n; ++j) a0 += f(j);
  return (a0 + a1) + (a2 + a3);
}

DimVector stat_sizes(const Tensor& input, int64_t nd) {
  DimVector s(input.sizes());
  for (int64_t i = input.dim() - nd; i < input.dim(); ++i) s[i] = 1;
  return s;
}

template <bool kCpu>
std::tuple<Tensor, Tensor, Tensor> native_layer_norm_kernel(const Tensor& input, IntArrayRef normalized_shape,
                                                            const std::optional<Tensor>& weight,
                                                            const std::optional<Tensor>& bias, double eps) {
  auto [m, n] = layer_norm_rows(input, normalized_shape, "native_layer_norm");
  check_affine(weight, normalized_shape, "weight");
  check_affine(bias, normalized_shape, "bias");
  SDK_CHECK_TYPE(is_floating_type(input.dtype()), "native_layer_norm: expected a floating point input, got ",
                 scalar_type_name(input.dtype()));
  const DimVector ss = stat_sizes(input, static_cast<int64_t>(normalized_shape.size()));
  if constexpr (!kCpu) {
    return {make_tensor(input.sizes(), input.dtype(), input.device()), make_tensor(ss, input.dtype(), input.device()),
            make_tensor(ss, input.dtype(), input.device())};
  } else {
    const ScalarType ct = compute_type(input.dtype());
    Tensor x = dense(input, ct);
    Tensor w = weight ? dense(*weight, ct) : Tensor(), b = bias ? dense(*bias, ct) : Tensor();
    Tensor out = make_tensor(input.sizes(), ct, input.device());
    Tensor mean = make_tensor(ss, ct, input.device()), rstd = make_tensor(ss, ct, input.device());
    floating_dispatch(ct, "native_layer_norm", [&](auto tag) {
      using T = decltype(tag);
      const T* px = x.data_ptr<T>();
      const T* pw = w.defined() ? w.data_ptr<T>() : nullptr;
      const T* pb = b.defined() ? b.data_ptr<T>() : nullptr;
      T* po = out.data_ptr<T>();
      T* pm = mean.data_ptr<T>();
      T* pr = rstd.data_ptr<T>();
#if defined(SDK_HAVE_LIBMVEC)
      if constexpr (std::is_same_v<T, float>) {
        if (avx2_layer_norm() && n > 0) {
          parallel_for(0, m, std::max<int64_t>(1, kParallelGrain / n), [&](int64_t rb, int64_t re) {
            for (int64_t r = rb; r < re; ++r)
              vec::avx2::layer_norm_row_f32(px + r * n, pw, pb, po + r * n, n, eps, pm + r, pr + r);
          });
          return;
        }
      }
#endif
      parallel_for(0, m, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(n, 1)), [&](int64_t rb, int64_t re) {
        for (int64_t r = rb; r < re; ++r) {
          const T* row = px + r * n;
          const double mu = row_sum(n, [row](int64_t j) { return static_cast<double>(row[j]); }) /
                            static_cast<double>(n);
          const double v = row_sum(n, [row, mu](int64_t j) {
            const double d = row[j] - mu;
            return d * d;
          });
          const double inv = 1.0 / std::sqrt(v / static_cast<double>(n) + eps);
          pm[r] = static_cast<T>(mu);
          pr[r] = static_cast<T>(inv);
          T* o = po + r * n;
          for (int64_t j = 0; j < n; ++j) {
            double y = (row[j] - mu) * inv;
            if (pw) y *= pw[j];
            if (pb) y += pb[j];
            o[j] = static_cast<T>(y);
          }
        }
      });
    });
    return {as_dtype(out, input.dtype()), as_dtype(mean, input.dtype()), as_dtype(rstd, input.dtype())};
  }
}


// dx = rstd * (g*w - mean(g*w) - xhat * mean(g*w * xhat)); dw = sum(g * xhat); db = sum(g).
template <bool kCpu>
std::tuple<Tensor, Tensor, Tensor> layer_norm_backward_impl(const Tensor& grad_out, const Tensor& input,
                                                            IntArrayRef normalized_shape, const Tensor& mean,
                                                            const Tensor& rstd, const std::optional<Tensor>& weight,
                                                            const std::optional<Tensor>& bias, const bool mask[3]) {
  auto [m, n] = layer_norm_rows(input, normalized_shape, "native_layer_norm_backward");
  SDK_CHECK_VALUE(grad_out.sizes().equals(input.sizes()), "native_layer_norm_backward: expected grad_out of size ",
                  input.sizes(), ", but got ", grad_out.sizes());
  Tensor gi = mask[0] ? make_tensor(input.sizes(), input.dtype(), input.device()) : Tensor();
  Tensor gw = mask[1] && weight ? make_tensor(weight->sizes(), weight->dtype(), input.device()) : Tensor();
  Tensor gb = mask[2] && bias ? make_tensor(bias->sizes(), bias->dtype(), input.device()) : Tensor();
  if constexpr (!kCpu) {
    return {gi, gw, gb};
  } else {
    const ScalarType ct = compute_type(input.dtype());
    Tensor g = dense(grad_out, ct), x = dense(input, ct), mu = dense(mean, ct), rs = dense(rstd, ct);
    Tensor w = weight ? dense(*weight, ct) : Tensor();
    Tensor gi_c = gi.defined() ? make_tensor(input.sizes(), ct, input.device()) : Tensor();
    std::vector<double> dw(static_cast<size_t>(n), 0.0), db(static_cast<size_t>(n), 0.0);
    floating_dispatch(ct, "native_layer_norm_backward", [&](auto tag) {
      using T = decltype(tag);
      const T* pg = g.data_ptr<T>();
      const T* px = x.data_ptr<T>();
      const T* pm = mu.data_ptr<T>();
      const T* pr = rs.data_ptr<T>();
      const T* pw = w.defined() ? w.data_ptr<T>() : nullptr;
      T* pgi = gi_c.defined() ? gi_c.data_ptr<T>() : nullptr;
#if defined(SDK_HAVE_LIBMVEC)
      if constexpr (std::is_same_v<T, float>) {
        if (avx2_layer_norm() && n > 0) {
          if (pgi) {
            // One pass: grad_input row by row, and the weight/bias gradients summed per chunk of kChunk rows
            // (partial sums in chunk order afterwards: the order depends on the sizes only, not on threads).
            constexpr int64_t kChunk = 64;
            const int64_t chunks = (m + kChunk - 1) / kChunk;
            const bool want_w = gw.defined(), want_b = gb.defined();
            std::vector<double> part_w(want_w ? static_cast<size_t>(chunks * n) : 0, 0.0);
            std::vector<double> part_b(want_b ? static_cast<size_t>(chunks * n) : 0, 0.0);
            parallel_for(0, chunks, std::max<int64_t>(1, kParallelGrain / (kChunk * n)), [&](int64_t cb, int64_t ce) {
              for (int64_t ch = cb; ch < ce; ++ch) {
                double* dwp = want_w ? part_w.data() + ch * n : nullptr;
                double* dbp = want_b ? part_b.data() + ch * n : nullptr;
                for (int64_t r = ch * kChunk; r < std::min(m, (ch + 1) * kChunk); ++r)
                  vec::avx2::layer_norm_backward_row_f32(pg + r * n, px + r * n, pw, pm[r], pr[r], pgi + r * n, n,
                                                         dwp, dbp);
              }
            });
            for (int64_t ch = 0; ch < chunks; ++ch) {
              for (int64_t j = 0; j < n; ++j) {
                if (want_w) dw[static_cast<size_t>(j)] += part_w[static_cast<size_t>(ch * n + j)];
                if (want_b) db[static_cast<size_t>(j)] += part_b[static_cast<size_t>(ch * n + j)];
              }
            }
          } else if (gw.defined() || gb.defined()) {
            // columns in blocks of 64 over threads; each column's sum runs over the rows in order
            double* dwp = gw.defined() ? dw.data() : nullptr;
            double* dbp = gb.defined() ? db.data() : nullptr;
            parallel_for(0, (n + 63) / 64, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(64 * m, 1)),
                         [&](int64_t cb, int64_t ce) {
                           vec::avx2::layer_norm_dwdb_f32(pg, px, pm, pr, m, n, cb * 64, std::min(n, ce * 64), dwp,
                                                          dbp);
                         });
          }
          return;
        }
      }
#endif
      if (pgi) {
        // The weight as doubles once (ones without a weight): the row loops below have no branch.
        std::vector<double> wd(static_cast<size_t>(n), 1.0);
        if (pw) std::copy(pw, pw + n, wd.begin());
        const double* pwd = wd.data();
        parallel_for(0, m, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(n, 1)), [&](int64_t rb, int64_t re) {
          for (int64_t r = rb; r < re; ++r) {
            const T* gr = pg + r * n;
            const T* xr = px + r * n;
            const double mur = pm[r], inv = pr[r];
            const double s1 = row_sum(n, [gr, pwd](int64_t j) { return gr[j] * pwd[j]; }) / static_cast<double>(n);
            const double s2 = row_sum(n, [&](int64_t j) { return gr[j] * pwd[j] * ((xr[j] - mur) * inv); }) /
                              static_cast<double>(n);
            T* o = pgi + r * n;
            for (int64_t j = 0; j < n; ++j) {
              const double xhat = (xr[j] - mur) * inv;
              o[j] = static_cast<T>(inv * (gr[j] * pwd[j] - s1 - xhat * s2));
            }
          }
        });
      }
      if (gw.defined() || gb.defined()) {
        for (int64_t r = 0; r < m; ++r) {
          for (int64_t j = 0; j < n; ++j) {
            const double gj = pg[r * n + j];
            dw[static_cast<size_t>(j)] += gj * (px[r * n + j] - static_cast<double>(pm[r])) * pr[r];
            db[static_cast<size_t>(j)] += gj;
          }
        }
      }
    });
    auto from_acc = [&](const std::vector<double>& acc, const Tensor& like) {
      Tensor t = make_tensor(like.sizes(), ScalarType::Float64, Device(DeviceType::CPU));
      std::copy(acc.begin(), acc.end(), t.data_ptr<double>());
      return copy_(make_tensor(like.sizes(), like.dtype(), like.device()), t);
    };
    return {gi_c.defined() ? as_dtype(gi_c, input.dtype()) : Tensor(), gw.defined() ? from_acc(dw, gw) : Tensor(),
            gb.defined() ? from_acc(db, gb) : Tensor()};
  }
}

template <bool kCpu>
void layer_norm_backward_boxed(OperatorKernel*, const OperatorHandle&, DispatchKeySet, Stack* stack) {
  Stack& s = *stack;
  const size_t base = s.size() - 8;
  Tensor grad = s[base].to_tensor(), input = s[base + 1].to_tensor();
  std::vector<int64_t> shape = s[base + 2].to_int_list();
  Tensor mean = s[base + 3].to_tensor(), rstd = s[base + 4].to_tensor();
  auto weight = cx::opt_tensor(s[base + 5]), bias = cx::opt_tensor(s[base + 6]);
  bool mask[3];
  for (size_t i = 0; i < 3; ++i) mask[i] = cx::list_bool(s[base + 7], i);
  auto [a, b, c] = layer_norm_backward_impl<kCpu>(grad, input, shape, mean, rstd, weight, bias, mask);
  s.resize(base);
  s.emplace_back(std::move(a));
  s.emplace_back(std::move(b));
  s.emplace_back(std::move(c));
}

Tensor layer_norm_impl(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                       const std::optional<Tensor>& bias, double eps, bool cudnn_enable) {
  (void)cudnn_enable;
  static const auto op = cx::typed<std::tuple<Tensor, Tensor, Tensor>(
      const Tensor&, IntArrayRef, const std::optional<Tensor>&, const std::optional<Tensor>&, double)>(
      "aten::native_layer_norm");
  return std::get<0>(op.call(input, normalized_shape, weight, bias, eps));
}

// ---- batch norm ----
struct ChannelGeom {
  int64_t n, c, inner;
};

ChannelGeom channel_geom(const Tensor& input, const char* op) {
  SDK_CHECK_VALUE(input.dim() >= 2, op, ": expected input with at least 2 dimensions (N, C, ...), got ", input.dim(),
                  "-D input of size ", input.sizes());
  ChannelGeom g{input.size(0), input.size(1), 1};
  for (int64_t d = 2; d < input.dim(); ++d) g.inner *= input.size(d);
  return g;
}

void check_channel_vec(const std::optional<Tensor>& t, int64_t c, const char* what) {
  if (!t) return;
  SDK_CHECK_VALUE(t->numel() == c, "running_mean should contain ", c, " elements not ", t->numel());
  (void)what;
}

template <bool kCpu>
std::tuple<Tensor, Tensor, Tensor> native_batch_norm_kernel(const Tensor& input, const std::optional<Tensor>& weight,
                                                            const std::optional<Tensor>& bias,
                                                            const std::optional<Tensor>& running_mean,
                                                            const std::optional<Tensor>& running_var, bool training,
                                                            double momentum, double eps) {
  const ChannelGeom g = channel_geom(input, "native_batch_norm");
  SDK_CHECK_TYPE(is_floating_type(input.dtype()), "native_batch_norm: expected a floating point input, got ",
                 scalar_type_name(input.dtype()));
  check_channel_vec(running_mean, g.c, "running_mean");
  if (running_var) {
    SDK_CHECK_VALUE(running_var->numel() == g.c, "running_var should contain ", g.c, " elements not ",
                    running_var->numel());
  }
  if (weight) SDK_CHECK_VALUE(weight->numel() == g.c, "weight should contain ", g.c, " elements not ", weight->numel());
  if (bias) SDK_CHECK_VALUE(bias->numel() == g.c, "bias should contain ", g.c, " elements not ", bias->numel());
  SDK_CHECK_VALUE(training || (running_mean && running_var),
                  "running_mean and running_var must be defined in evaluation mode");
  if (training) {
    SDK_CHECK_VALUE(g.n * g.inner > 1, "Expected more than 1 value per channel when training, got input size ",
                    input.sizes());
  }
  const int64_t saved = training ? g.c : 0;
  if constexpr (!kCpu) {
    return {make_tensor(input.sizes(), input.dtype(), input.device()), make_tensor({saved}, input.dtype(), input.device()),
            make_tensor({saved}, input.dtype(), input.device())};
  } else {
    const ScalarType ct = compute_type(input.dtype());
    Tensor x = dense(input, ct);
    Tensor out = make_tensor(input.sizes(), ct, input.device());
    std::vector<double> mean(static_cast<size_t>(g.c)), invstd(static_cast<size_t>(g.c)), var_unbiased(static_cast<size_t>(g.c));
    Tensor rm = running_mean ? dense(*running_mean, ScalarType::Float64) : Tensor();
    Tensor rv = running_var ? dense(*running_var, ScalarType::Float64) : Tensor();
    Tensor w = weight ? dense(*weight, ScalarType::Float64) : Tensor();
    Tensor b = bias ? dense(*bias, ScalarType::Float64) : Tensor();
    floating_dispatch(ct, "native_batch_norm", [&](auto tag) {
      using T = decltype(tag);
      const T* px = x.data_ptr<T>();
      T* po = out.data_ptr<T>();
      parallel_for(0, g.c, 1, [&](int64_t cb, int64_t ce) {
        for (int64_t c = cb; c < ce; ++c) {
          double mu, inv;
          if (training) {
            double s = 0;
            for (int64_t i = 0; i < g.n; ++i) {
              const T* p = px + (i * g.c + c) * g.inner;
              for (int64_t j = 0; j < g.inner; ++j) s += p[j];
            }
            const double cnt = static_cast<double>(g.n * g.inner);
            mu = s / cnt;
            double v = 0;
            for (int64_t i = 0; i < g.n; ++i) {
              const T* p = px + (i * g.c + c) * g.inner;
              for (int64_t j = 0; j < g.inner; ++j) v += (p[j] - mu) * (p[j] - mu);
            }
            inv = 1.0 / std::sqrt(v / cnt + eps);
            var_unbiased[static_cast<size_t>(c)] = v / (cnt - 1);
          } else {
            mu = rm.data_ptr<double>()[c];
            inv = 1.0 / std::sqrt(rv.data_ptr<double>()[c] + eps);
          }
          mean[static_cast<size_t>(c)] = mu;
          invstd[static_cast<size_t>(c)] = inv;
          const double scale = inv * (w.defined() ? w.data_ptr<double>()[c] : 1.0);
          const double shift = (b.defined() ? b.data_ptr<double>()[c] : 0.0) - mu * scale;
          for (int64_t i = 0; i < g.n; ++i) {
            const T* p = px + (i * g.c + c) * g.inner;
            T* o = po + (i * g.c + c) * g.inner;
            for (int64_t j = 0; j < g.inner; ++j) o[j] = static_cast<T>(p[j] * scale + shift);
          }
        }
      });
    });
    Tensor save_mean = make_tensor({saved}, ScalarType::Float64, input.device());
    Tensor save_invstd = make_tensor({saved}, ScalarType::Float64, input.device());
    if (training) {
      std::copy(mean.begin(), mean.end(), save_mean.data_ptr<double>());
      std::copy(invstd.begin(), invstd.end(), save_invstd.data_ptr<double>());
      // running = (1 - momentum) * running + momentum * batch statistic, written in place.
      if (running_mean) {
        double* p = rm.data_ptr<double>();
        for (int64_t c = 0; c < g.c; ++c) p[c] = (1 - momentum) * p[c] + momentum * mean[static_cast<size_t>(c)];
        copy_(*running_mean, rm);
      }
      if (running_var) {
        double* p = rv.data_ptr<double>();
        for (int64_t c = 0; c < g.c; ++c) p[c] = (1 - momentum) * p[c] + momentum * var_unbiased[static_cast<size_t>(c)];
        copy_(*running_var, rv);
      }
    }
    return {as_dtype(out, input.dtype()), as_dtype(save_mean, input.dtype()), as_dtype(save_invstd, input.dtype())};
  }
}

// Training: dx = w*invstd * (g - mean(g) - xhat * mean(g*xhat)) per channel;
// eval: dx = g * w * invstd(running). dw = sum(g * xhat); db = sum(g).
template <bool kCpu>
std::tuple<Tensor, Tensor, Tensor> batch_norm_backward_impl(const Tensor& grad_out, const Tensor& input,
                                                            const std::optional<Tensor>& weight,
                                                            const std::optional<Tensor>& running_mean,
                                                            const std::optional<Tensor>& running_var,
                                                            const std::optional<Tensor>& save_mean,
                                                            const std::optional<Tensor>& save_invstd, bool train,
                                                            double eps, const bool mask[3]) {
  const ChannelGeom g = channel_geom(input, "native_batch_norm_backward");
  SDK_CHECK_VALUE(grad_out.sizes().equals(input.sizes()), "native_batch_norm_backward: expected grad_out of size ",
                  input.sizes(), ", but got ", grad_out.sizes());
  Tensor gi = mask[0] ? make_tensor(input.sizes(), input.dtype(), input.device()) : Tensor();
  Tensor gw = mask[1] ? make_tensor({g.c}, weight ? weight->dtype() : input.dtype(), input.device()) : Tensor();
  Tensor gb = mask[2] ? make_tensor({g.c}, weight ? weight->dtype() : input.dtype(), input.device()) : Tensor();
  if constexpr (!kCpu) {
    return {gi, gw, gb};
  } else {
    const ScalarType ct = compute_type(input.dtype());
    Tensor gr = dense(grad_out, ct), x = dense(input, ct);
    std::vector<double> mean(static_cast<size_t>(g.c)), invstd(static_cast<size_t>(g.c));
    const std::optional<Tensor>& m_src = train ? save_mean : running_mean;
    const std::optional<Tensor>& v_src = train ? save_invstd : running_var;
    SDK_CHECK_VALUE(m_src && v_src, "native_batch_norm_backward: ", train ? "save_mean and save_invstd" :
                    "running_mean and running_var", " must be defined");
    Tensor mt = dense(*m_src, ScalarType::Float64), vt = dense(*v_src, ScalarType::Float64);
    for (int64_t c = 0; c < g.c; ++c) {
      mean[static_cast<size_t>(c)] = mt.data_ptr<double>()[c];
      const double v = vt.data_ptr<double>()[c];
      invstd[static_cast<size_t>(c)] = train ? v : 1.0 / std::sqrt(v + eps);
    }
    Tensor w = weight ? dense(*weight, ScalarType::Float64) : Tensor();
    Tensor gi_c = gi.defined() ? make_tensor(input.sizes(), ct, input.device()) : Tensor();
    std::vector<double> dw(static_cast<size_t>(g.c)), db(static_cast<size_t>(g.c));
    floating_dispatch(ct, "native_batch_norm_backward", [&](auto tag) {
      using T = decltype(tag);
      const T* pg = gr.data_ptr<T>();
      const T* px = x.data_ptr<T>();
      T* pgi = gi_c.defined() ? gi_c.data_ptr<T>() : nullptr;
      parallel_for(0, g.c, 1, [&](int64_t cb, int64_t ce) {
        for (int64_t c = cb; c < ce; ++c) {
          const double mu = mean[static_cast<size_t>(c)], inv = invstd[static_cast<size_t>(c)];
          double sg = 0, sgx = 0;
          for (int64_t i = 0; i < g.n; ++i) {
            const int64_t off = (i * g.c + c) * g.inner;
            for (int64_t j = 0; j < g.inner; ++j) {
              sg += pg[off + j];
              sgx += pg[off + j] * (px[off + j] - mu) * inv;
            }
          }
          dw[static_cast<size_t>(c)] = sgx;
          db[static_cast<size_t>(c)] = sg;
          if (!pgi) continue;
          const double wc = w.defined() ? w.data_ptr<double>()[c] : 1.0;
          const double cnt = static_cast<double>(g.n * g.inner);
          for (int64_t i = 0; i < g.n; ++i) {
            const int64_t off = (i * g.c + c) * g.inner;
            for (int64_t j = 0; j < g.inner; ++j) {
              if (train) {
                const double xhat = (px[off + j] - mu) * inv;
                pgi[off + j] = static_cast<T>(wc * inv * (pg[off + j] - sg / cnt - xhat * sgx / cnt));
              } else {
                pgi[off + j] = static_cast<T>(pg[off + j] * wc * inv);
              }
            }
          }
        }
      });
    });
    auto from_acc = [&](const std::vector<double>& acc, const Tensor& like) {
      Tensor t = make_tensor({g.c}, ScalarType::Float64, Device(DeviceType::CPU));
      std::copy(acc.begin(), acc.end(), t.data_ptr<double>());
      return copy_(make_tensor(like.sizes(), like.dtype(), like.device()), t);
    };
    return {gi_c.defined() ? as_dtype(gi_c, input.dtype()) : Tensor(), gw.defined() ? from_acc(dw, gw) : Tensor(),
            gb.defined() ? from_acc(db, gb) : Tensor()};
  }
}

template <bool kCpu>
void batch_norm_backward_boxed(OperatorKernel*, const OperatorHandle&, DispatchKeySet, Stack* stack) {
  Stack& s = *stack;
  const size_t base = s.size() - 10;
  Tensor grad = s[base].to_tensor(), input = s[base + 1].to_tensor();
  auto weight = cx::opt_tensor(s[base + 2]), rm = cx::opt_tensor(s[base + 3]), rv = cx::opt_tensor(s[base + 4]),
       sm = cx::opt_tensor(s[base + 5]), si = cx::opt_tensor(s[base + 6]);
  const bool train = s[base + 7].to_bool();
  const double eps = s[base + 8].to_double();
  bool mask[3];
  for (size_t i = 0; i < 3; ++i) mask[i] = cx::list_bool(s[base + 9], i);
  auto [a, b, c] = batch_norm_backward_impl<kCpu>(grad, input, weight, rm, rv, sm, si, train, eps, mask);
  s.resize(base);
  s.emplace_back(std::move(a));
  s.emplace_back(std::move(b));
  s.emplace_back(std::move(c));
}

Tensor batch_norm_impl(const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                       const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
                       bool training, double momentum, double eps, bool cudnn_enabled) {
  (void)cudnn_enabled;
  static const auto op = cx::typed<std::tuple<Tensor, Tensor, Tensor>(
      const Tensor&, const std::optional<Tensor>&, const std::optional<Tensor>&, const std::optional<Tensor>&,
      const std::optional<Tensor>&, bool, double, double)>("aten::native_batch_norm");
  return std::get<0>(op.call(input, weight, bias, running_mean, running_var, training, momentum, eps));
}

// ---- group norm / rms norm (composites over reductions) ----

Tensor group_norm_impl(const Tensor& input, int64_t num_groups, const std::optional<Tensor>& weight,
                       const std::optional<Tensor>& bias, double eps, bool cudnn_enabled) {
  (void)cudnn_enabled;
  SDK_CHECK_VALUE(input.dim() >= 2, "Expected at least 2 dimensions for input tensor but received ", input.dim());
  const int64_t n = input.size(0), c = input.size(1);
  SDK_CHECK_VALUE(num_groups > 0 && c % num_groups == 0, "Expected number of channels in input to be divisible by ",
                  "num_groups, but got input of shape ", input.sizes(), " and num_groups=", num_groups);
  if (weight) {
    SDK_CHECK_VALUE(weight->dim() == 1 && weight->numel() == c, "Expected weight to be a vector of size equal to the "
                    "number of channels in input, but got weight of shape ", weight->sizes(), " and input of shape ",
                    input.sizes());
  }
  if (bias) {
    SDK_CHECK_VALUE(bias->dim() == 1 && bias->numel() == c, "Expected bias to be a vector of size equal to the number "
                    "of channels in input, but got bias of shape ", bias->sizes(), " and input of shape ",
                    input.sizes());
  }
  // PyTorch's group_norm calls native_group_norm (CoreOps20.cpp): a backend's kernel for it serves nn.GroupNorm.
  using Sig = std::tuple<Tensor, Tensor, Tensor>(const Tensor&, const std::optional<Tensor>&,
                                                 const std::optional<Tensor>&, int64_t, int64_t, int64_t, int64_t, double);
  static const auto native = Dispatcher::singleton().find_schema_or_throw("aten::native_group_norm").typed<Sig>();
  int64_t hxw = 1;
  for (int64_t d = 2; d < input.dim(); ++d) hxw *= input.size(d);
  return std::get<0>(native.call(input, weight, bias, n, c, hxw, num_groups, eps));
}

Tensor rms_norm_impl(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                     std::optional<double> eps) {
  layer_norm_rows(input, normalized_shape, "rms_norm");
  check_affine(weight, normalized_shape, "weight");
  DimVector dims;
  for (int64_t i = 0; i < static_cast<int64_t>(normalized_shape.size()); ++i) dims.push_back(input.dim() - 1 - i);
  double e = eps.value_or(input.dtype() == ScalarType::Float64 ? 2.220446049250313e-16 : 1.1920928955078125e-07);
  Tensor ms = cx::mean(mul(input, input), dims, true);
  Tensor y = mul(input, cx::rsqrt(add(ms, Scalar(e))));
  return weight ? mul(y, *weight) : y;
}

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_FRAGMENT(aten, m) {
  m.def("native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> "
        "(Tensor, Tensor, Tensor)");
  m.def("native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape, Tensor mean, "
        "Tensor rstd, Tensor? weight, Tensor? bias, bool[3] output_mask) -> (Tensor, Tensor, Tensor)");
  m.def("layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, "
        "float eps=1e-05, bool cudnn_enable=True) -> Tensor");
  m.def("native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!)? running_mean, Tensor(b!)? running_var, "
        "bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)");
  m.def("native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, Tensor? running_mean, "
        "Tensor? running_var, Tensor? save_mean, Tensor? save_invstd, bool train, float eps, bool[3] output_mask) "
        "-> (Tensor, Tensor, Tensor)");
  m.def("batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, "
        "bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor");
  m.def("group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, "
        "bool cudnn_enabled=True) -> Tensor");
  m.def("rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None) -> Tensor");
  constexpr auto kCIA = sdk::DispatchKey::CompositeImplicitAutograd;
  m.impl("layer_norm", kCIA, &sdk::ops::layer_norm_impl);
  m.impl("batch_norm", kCIA, &sdk::ops::batch_norm_impl);
  m.impl("group_norm", kCIA, &sdk::ops::group_norm_impl);
  m.impl("rms_norm", kCIA, &sdk::ops::rms_norm_impl);
}

#define SDK_NORM_IMPLS(m, cpu)                                                                                 \
  m.impl("native_layer_norm", &sdk::ops::native_layer_norm_kernel<cpu>);                                      \
  m.impl("native_layer_norm_backward",                                                                         \
         sdk::CppFunction::make_from_boxed(&sdk::ops::layer_norm_backward_boxed<cpu>));                         \
  m.impl("native_batch_norm", &sdk::ops::native_batch_norm_kernel<cpu>);                                      \
  m.impl("native_batch_norm_backward", sdk::CppFunction::make_from_boxed(&sdk::ops::batch_norm_backward_boxed<cpu>))

SDK_LIBRARY_IMPL(aten, CPU, m) { SDK_NORM_IMPLS(m, true); }
SDK_LIBRARY_IMPL(aten, Meta, m) { SDK_NORM_IMPLS(m, false); }
