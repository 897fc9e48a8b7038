// Vector norms: linalg_vector_norm (CPU and Meta kernels, out=) and the norm
// overloads (CompositeExplicitAutograd over linalg_vector_norm).
//
// ord: 2 (Euclidean), 1, inf (max |x|), -inf (min |x|), 0 (number of
// non-zeros), any other p: (sum |x|^p)^(1/p). The CPU kernel views the input
// with its kept dims first and reduced dims last (copying it only when that
// view is not contiguous) and reduces each row in double.
#include <cmath>
#include <limits>
#include <sstream>
#include <type_traits>

#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/Functions.h>
#include <backend_sdk/ops/Parallel.h>
#include <backend_sdk/ops/detail/VecMath.h>

namespace sdk::ops {
namespace {

struct NormPlan {
  DimVector out_sizes;
  DimVector view_sizes, view_strides;  // kept dims, then reduced dims
  int64_t out_numel = 1, red_numel = 1;
};

NormPlan norm_plan(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim, const char* op) {
  int64_t ndim = self.dim();
  uint64_t mask = 0;
  if (dim && !dim->empty()) {
    for (int64_t d : *dim) {
      int64_t w = maybe_wrap_dim(d, ndim);
      SDK_CHECK_VALUE(!((mask >> w) & 1u), op, ": dim ", w, " appears multiple times in the list of dims");
      mask |= uint64_t{1} << w;
    }
  } else {
    mask = ~uint64_t{0};
  }
  NormPlan p;
  DimVector red_sizes, red_strides;
  for (int64_t d = 0; d < ndim; ++d) {
    if ((mask >> d) & 1u) {
      red_sizes.push_back(self.size(d));
      red_strides.push_back(self.stride(d));
      p.red_numel *= self.size(d);
      if (keepdim) p.out_sizes.push_back(1);
    } else {
      p.view_sizes.push_back(self.size(d));
      p.view_strides.push_back(self.stride(d));
      p.out_numel *= self.size(d);
      p.out_sizes.push_back(self.size(d));
    }
  }
  for (size_t i = 0; i < red_sizes.size(); ++i) {
    p.view_sizes.push_back(red_sizes[i]);
    p.view_strides.push_back(red_strides[i]);
  }
  return p;
}

std::string ord_str(double ord) {
  if (std::isinf(ord)) return ord > 0 ? "inf" : "-inf";
  std::ostringstream os;
  os << ord;
  return os.str();
}

// A row is reduced into a partial (sum of squares, sum of |x|, max |x|,
// min |x|, count of non-zeros or sum of |x|^p by ord), partials combine, and
// finish turns the combined partial into the norm.
enum class NormKind { Two, One, Inf, NegInf, Zero, P };

NormKind norm_kind(double ord) {
  if (ord == 2.0) return NormKind::Two;
  if (ord == 1.0) return NormKind::One;
  if (std::isinf(ord)) return ord > 0 ? NormKind::Inf : NormKind::NegInf;
  if (ord == 0.0) return NormKind::Zero;
  return NormKind::P;
}

double norm_init(NormKind k) {
  return k == NormKind::NegInf ? std::numeric_limits<double>::infinity() : 0.0;
}

double norm_combine(NormKind k, double a, double b) {
  switch (k) {
    case NormKind::Inf: return (std::isnan(a) || std::isnan(b)) ? std::nan("") : std::max(a, b);
    case NormKind::NegInf: return (std::isnan(a) || std::isnan(b)) ? std::nan("") : std::min(a, b);
    default: return a + b;
  }
}

double norm_finish(NormKind k, double acc, double ord) {
  switch (k) {
    case NormKind::Two: return std::sqrt(acc);
    case NormKind::P: return std::pow(acc, 1.0 / ord);
    default: return acc;
  }
}

template <typename T>
double as_double(T v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return static_cast<double>(static_cast<float>(v));
  } else {
    return static_cast<double>(v);
  }
}

// Note [Norm accumulation]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A row is summed in double into kLanes independent accumulators (element i
// into lane i % kLanes, lanes added pairwise at the end), so the compiler
// vectorises the loop without reassociating anything itself: the order is
// fixed by the code, the result does not depend on the ISA or the thread
// count, and it is at least as accurate as one serial double. The max/min
// norms keep a NaN flag beside the running extremum instead of testing each
// element's NaN-ness in the combine.
constexpr int kLanes = 16;

// Continues the lane sum from element i with the lanes in acc (a vector
// kernel may have done the whole blocks before i).
template <typename T, typename F>
double lane_sum_from(double* acc, const T* x, int64_t i, int64_t n, F f) {
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) acc[j] += f(as_double(x[i + j]));
  }
  for (int j = 0; i < n; ++i, ++j) acc[j] += f(as_double(x[i]));
  for (int w = kLanes / 2; w > 0; w /= 2) {
    for (int j = 0; j < w; ++j) acc[j] += acc[j + w];
  }
  return acc[0];
}

template <typename T, typename F>
double lane_sum(const T* x, int64_t n, F f) {
  double acc[kLanes] = {};
  return lane_sum_from(acc, x, 0, n, f);
}

// The 2-norm's sum of squares; float runs take the AVX2 kernel for their
// whole 16-element blocks (same lanes, same operations: the same bits).
template <typename T>
double sum_squares(const T* x, int64_t n) {
  auto square = [](double v) { return v * v; };
  if constexpr (std::is_same_v<T, float>) {
    double acc[kLanes] = {};
    const int64_t body = n / kLanes * kLanes;
    if (vec::sum_squares_lanes(x, body, acc)) return lane_sum_from(acc, x, body, n, square);
  }
  return lane_sum(x, n, square);
}

template <typename T, bool kMax>
double lane_extremum(const T* x, int64_t n) {
  double best[kLanes];
  bool nan[kLanes] = {};
  for (double& b : best) b = kMax ? 0.0 : std::numeric_limits<double>::infinity();
  int64_t i = 0;
  auto step = [&](int j, double v) {
    v = std::fabs(v);
    nan[j] |= v != v;
    best[j] = kMax ? (v > best[j] ? v : best[j]) : (v < best[j] ? v : best[j]);
  };
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) step(j, as_double(x[i + j]));
  }
  for (int j = 0; i < n; ++i, ++j) step(j, as_double(x[i]));
  double acc = best[0];
  bool any_nan = false;
  for (int j = 0; j < kLanes; ++j) {
    acc = kMax ? std::max(acc, best[j]) : std::min(acc, best[j]);
    any_nan |= nan[j];
  }
  return any_nan ? std::nan("") : acc;
}

template <typename T>
double norm_partial(const T* x, int64_t n, NormKind k, double ord) {
  switch (k) {
    case NormKind::Two:
      return sum_squares(x, n);
    case NormKind::One:
      return lane_sum(x, n, [](double v) { return std::fabs(v); });
    case NormKind::Zero:
      return lane_sum(x, n, [](double v) { return v != 0.0 ? 1.0 : 0.0; });  // NaN counts as non-zero
    case NormKind::P:
      return lane_sum(x, n, [ord](double v) { return std::pow(std::fabs(v), ord); });
    case NormKind::Inf:
      return lane_extremum<T, true>(x, n);
    default:
      return lane_extremum<T, false>(x, n);
  }
}

// Rows of n contiguous elements -> out_numel norms (double). One long row is
// cut into a fixed number of chunks combined in order, so the result does not
// depend on the thread count.
template <typename T>
void norm_rows(const T* x, int64_t rows, int64_t n, double ord, double* out) {
  NormKind k = norm_kind(ord);
  if (rows == 1 && n >= 2 * kParallelGrain) {
    constexpr int64_t kChunks = 16;
    double partial[kChunks];
    int64_t chunk = (n + kChunks - 1) / kChunks;
    parallel_for(0, kChunks, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        int64_t lo = std::min(n, c * chunk), hi = std::min(n, lo + chunk);
        partial[c] = norm_partial(x + lo, hi - lo, k, ord);
      }
    });
    double acc = norm_init(k);
    for (double part : partial) acc = norm_combine(k, acc, part);
    out[0] = norm_finish(k, acc, ord);
    return;
  }
  int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(n, 1));
  parallel_for(0, rows, grain, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) out[o] = norm_finish(k, norm_partial(x + o * n, n, k, ord), ord);
  });
}

Tensor vector_norm_impl(const Tensor& self, const Scalar& ord_s, std::optional<IntArrayRef> dim, bool keepdim,
                        std::optional<ScalarType> dtype, const char* op) {
  SDK_CHECK_TYPE(is_floating_type(self.dtype()), op,
                 ": Expected a floating point or complex tensor as input. Got ", scalar_type_name(self.dtype()));
  ScalarType t = dtype.value_or(self.dtype());
  SDK_CHECK_TYPE(is_floating_type(t), op, ": dtype should be floating point or complex, but got ",
                 scalar_type_name(t));
  double ord = ord_s.to_double();
  NormPlan p = norm_plan(self, dim, keepdim, op);
  SDK_CHECK_VALUE(!(p.red_numel == 0 && (ord < 0.0 || (std::isinf(ord) && ord > 0))), op,
                  " cannot compute the ", ord_str(ord),
                  " norm on an empty tensor because the operation does not have an identity");
  Tensor out = make_tensor(p.out_sizes, t, self.device());
  if (self.is_meta() || out.numel() == 0) return out;
  // Kept dims first, reduced dims last: each result element reduces one contiguous row.
  Tensor view = make_view(self, p.view_sizes, p.view_strides, self.storage_offset(), op);
  Tensor rows = view.is_contiguous() ? view : copy_(make_tensor(p.view_sizes, self.dtype(), self.device()), view);
  Tensor res = make_tensor({p.out_numel}, ScalarType::Float64, self.device());
  double* r = res.data_ptr<double>();
  SDK_DISPATCH_ALL_TYPES(self.dtype(), op, [&] {
    if constexpr (std::is_floating_point_v<scalar_t> || std::is_same_v<scalar_t, Half> ||
                  std::is_same_v<scalar_t, BFloat16>) {
      norm_rows(rows.data_ptr<scalar_t>(), p.out_numel, p.red_numel, ord, r);
    }
  });
  return copy_(out, make_view(res, p.out_sizes, out.strides(), 0, op));
}

Tensor linalg_vector_norm(const Tensor& self, const Scalar& ord, std::optional<IntArrayRef> dim, bool keepdim,
                          std::optional<ScalarType> dtype) {
  return vector_norm_impl(self, ord, dim, keepdim, dtype, "linalg.vector_norm");
}

Tensor linalg_vector_norm_out(const Tensor& self, const Scalar& ord, std::optional<IntArrayRef> dim, bool keepdim,
                              std::optional<ScalarType> dtype, const Tensor& out) {
  Tensor result = vector_norm_impl(self, ord, dim, keepdim, dtype, "linalg.vector_norm");
  SDK_CHECK_TYPE(out.dtype() == result.dtype(), "linalg.vector_norm: Expected out tensor to have dtype ",
                 scalar_type_name(result.dtype()), ", but got ", scalar_type_name(out.dtype()), " instead");
  check_same_device("linalg.vector_norm", self, out);
  if (!out.sizes().equals(result.sizes())) resize_(out, result.sizes());
  if (out.is_meta()) return out;
  return copy_(out, result);
}

// ---- norm overloads: composites over linalg_vector_norm ----
using VectorNormSig = Tensor(const Tensor&, const Scalar&, std::optional<IntArrayRef>, bool, std::optional<ScalarType>);
using VectorNormOutSig = Tensor(const Tensor&, const Scalar&, std::optional<IntArrayRef>, bool,
                                std::optional<ScalarType>, const Tensor&);

void check_norm_input(const Tensor& self) {
  SDK_CHECK_TYPE(is_floating_type(self.dtype()), "norm(): input dtype should be either floating point or complex. Got ",
                 scalar_type_name(self.dtype()), " instead.");
}

Tensor call_vector_norm(const Tensor& self, const std::optional<Scalar>& p, std::optional<IntArrayRef> dim,
                        bool keepdim, std::optional<ScalarType> dtype) {
  check_norm_input(self);
  static const auto op = Dispatcher::singleton().find_schema_or_throw("aten::linalg_vector_norm").typed<VectorNormSig>();
  return op.call(self, p.value_or(Scalar(2.0)), dim, keepdim, dtype);
}

Tensor norm_scalar(const Tensor& self, const Scalar& p) { return call_vector_norm(self, p, std::nullopt, false, std::nullopt); }
Tensor norm_scalaropt_dtype(const Tensor& self, const std::optional<Scalar>& p, ScalarType dtype) {
  return call_vector_norm(self, p, std::nullopt, false, dtype);
}
Tensor norm_scalaropt_dim(const Tensor& self, const std::optional<Scalar>& p, IntArrayRef dim, bool keepdim) {
  return call_vector_norm(self, p, dim, keepdim, std::nullopt);
}
Tensor norm_scalaropt_dim_dtype(const Tensor& self, const std::optional<Scalar>& p, IntArrayRef dim, bool keepdim,
                                ScalarType dtype) {
  return call_vector_norm(self, p, dim, keepdim, dtype);
}
Tensor norm_dtype_out(const Tensor& self, const std::optional<Scalar>& p, IntArrayRef dim, bool keepdim,
                      ScalarType dtype, const Tensor& out) {
  check_norm_input(self);
  static const auto op =
      Dispatcher::singleton().find_schema_or_throw("aten::linalg_vector_norm.out").typed<VectorNormOutSig>();
  return op.call(self, p.value_or(Scalar(2.0)), dim, keepdim, dtype, out);
}
Tensor norm_out(const Tensor& self, const std::optional<Scalar>& p, IntArrayRef dim, bool keepdim, const Tensor& out) {
  check_norm_input(self);
  static const auto op =
      Dispatcher::singleton().find_schema_or_throw("aten::linalg_vector_norm.out").typed<VectorNormOutSig>();
  return op.call(self, p.value_or(Scalar(2.0)), dim, keepdim, std::nullopt, out);
}

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_FRAGMENT(aten, m) {
  m.def("linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, "
        "ScalarType? dtype=None) -> Tensor");
  m.def("linalg_vector_norm.out(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, "
        "ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)");
  m.def("norm.ScalarOpt_dtype(Tensor self, Scalar? p, *, ScalarType dtype) -> Tensor");
  m.def("norm.Scalar(Tensor self, Scalar p=2) -> Tensor");
  m.def("norm.ScalarOpt_dim_dtype(Tensor self, Scalar? p, int[1] dim, bool keepdim, *, ScalarType dtype) -> Tensor");
  m.def("norm.ScalarOpt_dim(Tensor self, Scalar? p, int[1] dim, bool keepdim=False) -> Tensor");
  m.def("norm.dtype_out(Tensor self, Scalar? p, int[1] dim, bool keepdim, *, ScalarType dtype, Tensor(a!) out) -> "
        "Tensor(a!)");
  m.def("norm.out(Tensor self, Scalar? p, int[1] dim, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)");
  const auto composite = sdk::DispatchKey::CompositeExplicitAutograd;
  m.impl("norm.ScalarOpt_dtype", composite, &sdk::ops::norm_scalaropt_dtype);
  m.impl("norm.Scalar", composite, &sdk::ops::norm_scalar);
  m.impl("norm.ScalarOpt_dim_dtype", composite, &sdk::ops::norm_scalaropt_dim_dtype);
  m.impl("norm.ScalarOpt_dim", composite, &sdk::ops::norm_scalaropt_dim);
  m.impl("norm.dtype_out", composite, &sdk::ops::norm_dtype_out);
  m.impl("norm.out", composite, &sdk::ops::norm_out);
}

SDK_LIBRARY_IMPL(aten, CPU, m) {
  m.impl("linalg_vector_norm", &sdk::ops::linalg_vector_norm);
  m.impl("linalg_vector_norm.out", &sdk::ops::linalg_vector_norm_out);
}
SDK_LIBRARY_IMPL(aten, Meta, m) {
  m.impl("linalg_vector_norm", &sdk::ops::linalg_vector_norm);
  m.impl("linalg_vector_norm.out", &sdk::ops::linalg_vector_norm_out);
}
