// Reductions on CPU and Meta: sum, mean, prod, amax/amin, max/min (with
// indices), argmax/argmin, all/any, var/std.
//
// Note [Reduction plan]
// ~~~~~~~~~~~~~~~~~~~~~
// make_plan() turns (input geometry, dims, keepdim) into the result's sizes
// and two lists of input dims: the kept ones (outer to inner, in the result's
// row-major order) and the reduced ones. The CPU kernels and the Meta kernels
// both start from it, so their results' metadata cannot disagree. The CPU
// executor walks the plan in one of three orders:
//   inner   the innermost reduced dim is contiguous: each result element
//           reduces contiguous runs (the vectorisable case: sum of rows);
//   outer   the innermost kept dim is contiguous: a row of accumulators is
//           updated per reduced index (sum over dim 0 of a row-major matrix
//           reads memory in order instead of striding through it);
//   generic anything else, element by element.
// Floating sums accumulate in double, integer ones in int64 (PyTorch's
// default result dtype for integral sum/prod is int64).
#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/Functions.h>
#include <backend_sdk/ops/detail/Resize.h>
#include <backend_sdk/ops/Parallel.h>
#include <backend_sdk/ops/detail/VecMath.h>

namespace sdk::ops {
namespace {

struct Plan {
  DimVector out_sizes;
  DimVector kept_sizes, kept_strides;  // input strides (elements)
  DimVector red_sizes, red_strides;
  int64_t out_numel = 1;
  int64_t red_numel = 1;
};

// dims empty + reduce_all_if_empty: every dim (sum(dim=[]) reduces all, as in PyTorch).
Plan make_plan(const Tensor& t, IntArrayRef dims, bool keepdim, const char* op) {
  uint64_t mask = 0;
  int64_t ndim = t.dim();
  for (int64_t d : dims) {
    int64_t w = maybe_wrap_dim(d, ndim);
    SDK_CHECK_VALUE(!((mask >> w) & 1u), op, ": dim ", w, " appears multiple times in the list of dims");
    mask |= uint64_t{1} << w;
  }
  if (dims.empty()) mask = ~uint64_t{0};
  Plan p;
  for (int64_t d = 0; d < ndim; ++d) {
    bool reduced = (mask >> d) & 1u;
    if (reduced) {
      p.red_sizes.push_back(t.size(d));
      p.red_strides.push_back(t.stride(d));
      p.red_numel *= t.size(d);
      if (keepdim) p.out_sizes.push_back(1);
    } else {
      p.kept_sizes.push_back(t.size(d));
      p.kept_strides.push_back(t.stride(d));
      p.out_numel *= t.size(d);
      p.out_sizes.push_back(t.size(d));
    }
  }
  return p;
}

// Offsets (in elements) of a multi-index walk over sizes/strides, in row-major order.
struct Walker {
  IntArrayRef sizes, strides;
  DimVector index;
  int64_t offset = 0;
  Walker(IntArrayRef s, IntArrayRef st) : sizes(s), strides(st), index(s.size(), 0) {}
  // Positions the walk at row-major linear index `linear`.
  void seek(int64_t linear) {
    offset = 0;
    for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
      index[d] = sizes[d] ? linear % sizes[d] : 0;
      linear = sizes[d] ? linear / sizes[d] : 0;
      offset += index[d] * strides[d];
    }
  }
  void next() {
    for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
      offset += strides[d];
      if (++index[d] < sizes[d]) return;
      offset -= strides[d] * sizes[d];
      index[d] = 0;
    }
  }
};

template <typename T, bool Max> struct ValueExtremumR;
template <typename T> struct SumR;
template <typename T> struct MeanR;

// The reducers with an AVX2 kernel (ops/detail/VecMath.h): float and double
// amax/amin runs, and the row step of a float column sum. Both kernels give
// exactly the generic loop's result (an extremum is order-free; a column
// accumulates its rows in the same order), so which one runs never shows.
template <typename T, typename R>
constexpr bool kVecExtremum = (std::is_same_v<T, float> || std::is_same_v<T, double>) &&
                              (std::is_same_v<R, ValueExtremumR<T, true>> || std::is_same_v<R, ValueExtremumR<T, false>>);
template <typename T, typename R>
constexpr bool kVecColumnSum = std::is_same_v<T, float> && (std::is_same_v<R, SumR<T>> || std::is_same_v<R, MeanR<T>>);

// Note [Column sums in row blocks]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A float column sum (sum/mean over dim 0 of a row-major matrix: the outer
// order of Note [Reduction plan]) adds kColumnSumRows rows at a time to its
// double accumulators (vec::add_rows): each column's partial sum stays in a
// register while the block's rows are added to it, in row order, so the
// accumulator row is read and written once per block instead of once per row
// (with one row per step, the 32 KiB accumulator row of a 4096-wide matrix
// costs as much traffic as the input). The additions and their order are
// those of the one-row loop, so the result is the same bits.
constexpr int kColumnSumRows = 8;

// A contiguous run reduced in 8 independent lanes, merged at the end: no
// loop-carried dependency on one accumulator, so the loop vectorises. Only
// for reducers whose order does not matter (kMergeable).
template <typename T, typename R>
typename R::acc_t reduce_run_in_lanes(const R& r, const T* ptr, int64_t n) {
  if constexpr (kVecExtremum<T, R>) {
    T result;
    if (vec::extremum_run(ptr, n, std::is_same_v<R, ValueExtremumR<T, true>>, &result)) return result;
  }
  constexpr int kLanes = 8;
  typename R::acc_t lanes[kLanes];
  for (auto& l : lanes) l = r.init();
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] = r.step(lanes[l], ptr[j + l], 0);
  }
  for (; j < n; ++j) lanes[0] = r.step(lanes[0], ptr[j], 0);
  for (int l = 1; l < kLanes; ++l) lanes[0] = R::merge(lanes[0], lanes[l]);
  return lanes[0];
}

// Reducer concept: acc_t, init(), step(acc, value, index) -> acc, finish(acc, count) -> out_t,
// and kMergeable / merge(acc, acc) when partial results may be combined in any order.
// Partial results of one contiguous run reduced in parallel chunks, merged in
// chunk order (so the result does not depend on thread timing).
template <typename T, typename R>
typename R::acc_t reduce_run_parallel(const R& r, const T* ptr, int64_t n) {
  constexpr int64_t kChunks = 16;
  typename R::acc_t partial[kChunks];
  int64_t chunk = (n + kChunks - 1) / kChunks;
  parallel_for(0, kChunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      int64_t lo = std::min(n, c * chunk), hi = std::min(n, lo + chunk);
      partial[c] = reduce_run_in_lanes(r, ptr + lo, hi - lo);
    }
  });
  typename R::acc_t acc = r.init();
  for (auto& part : partial) acc = R::merge(acc, part);
  return acc;
}

// See Note [Reduction plan]. Output elements (or, in outer mode, columns) are
// split over threads with parallel_for; each chunk writes only its own outputs.
template <typename T, typename R>
void run_plan(const Tensor& in, const Plan& p, typename R::out_t* out, const R& r) {
  const T* data = in.data_ptr<T>();
  using acc_t = typename R::acc_t;
  size_t nred = p.red_sizes.size(), nkept = p.kept_sizes.size();
  bool inner = nred > 0 && p.red_strides[nred - 1] == 1;
  bool outer = !inner && nkept > 0 && p.kept_strides[nkept - 1] == 1 && p.red_numel > 1;
  if constexpr (R::kMergeable) {
    // One output over the whole of a contiguous tensor (sum()): one long run.
    if (p.out_numel == 1 && in.is_contiguous() && p.red_numel == in.numel() && p.red_numel >= 2 * kParallelGrain) {
      out[0] = r.finish(reduce_run_parallel(r, data, p.red_numel), p.red_numel);
      return;
    }
  }
  if (outer) {
    int64_t n = p.kept_sizes[nkept - 1];
    int64_t nouter = p.out_numel / std::max<int64_t>(n, 1);
    IntArrayRef outer_sizes(p.kept_sizes.data(), nkept - 1), outer_strides(p.kept_strides.data(), nkept - 1);
    // Wide column blocks: each thread walks every reduced row once, over its
    // own columns (narrow blocks would re-read the rows per block).
    int64_t threads = parallel_num_threads();
    bool big = p.red_numel * n >= 2 * kParallelGrain;
    int64_t grain = big ? std::max<int64_t>(16, (n + threads - 1) / threads) : n;
    parallel_for(0, n, grain, [&](int64_t jb, int64_t je) {
      Walker ko(outer_sizes, outer_strides);
      std::vector<acc_t> acc(static_cast<size_t>(je - jb));
      for (int64_t o = 0; o < nouter; ++o, ko.next()) {
        std::fill(acc.begin(), acc.end(), r.init());
        Walker rw(p.red_sizes, p.red_strides);
        if constexpr (kVecColumnSum<T, R>) {
          if (vec::available()) {  // Note [Column sums in row blocks]
            const float* rows[kColumnSumRows];
            int nrows = 0;
            for (int64_t i = 0; i < p.red_numel; ++i, rw.next()) {
              rows[nrows++] = data + ko.offset + rw.offset + jb;
              if (nrows == kColumnSumRows || i + 1 == p.red_numel) {
                vec::add_rows(acc.data(), rows, nrows, je - jb);
                nrows = 0;
              }
            }
            for (int64_t j = jb; j < je; ++j) out[o * n + j] = r.finish(acc[j - jb], p.red_numel);
            continue;
          }
        }
        for (int64_t i = 0; i < p.red_numel; ++i, rw.next()) {
          const T* row = data + ko.offset + rw.offset + jb;
          if constexpr (kVecColumnSum<T, R>) {
            if (vec::add_row(acc.data(), row, je - jb)) continue;
          }
          for (int64_t j = 0; j < je - jb; ++j) acc[j] = r.step(acc[j], row[j], i);
        }
        for (int64_t j = jb; j < je; ++j) out[o * n + j] = r.finish(acc[j - jb], p.red_numel);
      }
    });
    return;
  }
  int64_t run = inner ? p.red_sizes[nred - 1] : 1;
  IntArrayRef rsizes(p.red_sizes.data(), inner ? nred - 1 : nred), rstrides(p.red_strides.data(), inner ? nred - 1 : nred);
  int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(p.red_numel, 1));
  parallel_for(0, p.out_numel, grain, [&](int64_t ob, int64_t oe) {
    Walker kw(p.kept_sizes, p.kept_strides);
    kw.seek(ob);
    for (int64_t o = ob; o < oe; ++o, kw.next()) {
      acc_t acc = r.init();
      Walker rw(rsizes, rstrides);
      for (int64_t i = 0; i < p.red_numel; i += run, rw.next()) {
        const T* ptr = data + kw.offset + rw.offset;
        if constexpr (R::kMergeable) {
          acc = R::merge(acc, reduce_run_in_lanes(r, ptr, run));
        } else {
          for (int64_t j = 0; j < run; ++j) acc = r.step(acc, ptr[j], i + j);
        }
      }
      out[o] = r.finish(acc, p.red_numel);
    }
  });
}

template <typename T>
using compute_t = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;
template <typename T>
constexpr bool is_float_v = std::is_floating_point_v<compute_t<T>>;

template <typename T>
struct SumR {
  using acc_t = std::conditional_t<is_float_v<T>, double, int64_t>;
  using out_t = T;
  static constexpr bool kMergeable = true;
  static acc_t merge(acc_t a, acc_t b) { return a + b; }
  acc_t init() const { return 0; }
  acc_t step(acc_t a, T v, int64_t) const { return a + static_cast<acc_t>(static_cast<compute_t<T>>(v)); }
  T finish(acc_t a, int64_t) const { return static_cast<T>(static_cast<compute_t<T>>(a)); }
};
template <typename T>
struct MeanR : SumR<T> {
  T finish(typename SumR<T>::acc_t a, int64_t n) const {
    return static_cast<T>(static_cast<compute_t<T>>(n ? a / n : std::numeric_limits<double>::quiet_NaN()));
  }
};
template <typename T>
struct ProdR {
  using acc_t = std::conditional_t<is_float_v<T>, double, int64_t>;
  using out_t = T;
  static constexpr bool kMergeable = true;
  static acc_t merge(acc_t a, acc_t b) { return a * b; }
  acc_t init() const { return 1; }
  acc_t step(acc_t a, T v, int64_t) const { return a * static_cast<acc_t>(static_cast<compute_t<T>>(v)); }
  T finish(acc_t a, int64_t) const { return static_cast<T>(static_cast<compute_t<T>>(a)); }
};

template <typename T>
bool is_nan(T v) {
  if constexpr (is_float_v<T>) return std::isnan(static_cast<compute_t<T>>(v));
  return false;
}

// max/min with the index of the first extremum; NaN wins and propagates (PyTorch).
template <typename T, bool Max>
struct ExtremumR {
  struct acc_t {
    compute_t<T> value;
    int64_t index;
    bool seen;
  };
  using out_t = T;
  static constexpr bool kMergeable = false;
  static acc_t merge(acc_t a, acc_t) { return a; }
  acc_t init() const { return {compute_t<T>{}, -1, false}; }
  acc_t step(acc_t a, T raw, int64_t i) const {
    compute_t<T> v = static_cast<compute_t<T>>(raw);
    if (!a.seen) return {v, i, true};
    if (is_nan(a.value)) return a;
    if (is_nan(v) || (Max ? v > a.value : v < a.value)) return {v, i, true};
    return a;
  }
  T finish(acc_t a, int64_t) const { return static_cast<T>(a.value); }
};
// Values only (amax/amin/max()/min()): order-free, so contiguous runs use lanes.
// Starts from the identity (empty reductions are rejected before running).
template <typename T, bool Max>
struct ValueExtremumR {
  using acc_t = compute_t<T>;
  using out_t = T;
  static constexpr bool kMergeable = true;
  static acc_t pick(acc_t a, acc_t v) {
    if constexpr (std::is_same_v<acc_t, bool>) {
      return Max ? (a || v) : (a && v);
    } else {
      // NaN propagates: a NaN v is taken (v != v), and once a is NaN it stays,
      // since no comparison with NaN is true. Written without a branch on
      // is_nan(a) so the lane loop vectorises (compare + blend).
      const bool take = (v != v) | (Max ? v > a : v < a);
      return take ? v : a;
    }
  }
  static acc_t merge(acc_t a, acc_t b) { return pick(a, b); }
  acc_t init() const {
    if constexpr (std::is_same_v<acc_t, bool>) {
      return !Max;
    } else if constexpr (std::is_floating_point_v<acc_t>) {
      return Max ? -std::numeric_limits<acc_t>::infinity() : std::numeric_limits<acc_t>::infinity();
    } else {
      return Max ? std::numeric_limits<acc_t>::lowest() : std::numeric_limits<acc_t>::max();
    }
  }
  acc_t step(acc_t a, T v, int64_t) const { return pick(a, static_cast<acc_t>(v)); }
  T finish(acc_t a, int64_t) const { return static_cast<T>(a); }
};

template <typename T, bool Max>
struct ArgR : ExtremumR<T, Max> {
  using out_t = int64_t;
  int64_t finish(typename ExtremumR<T, Max>::acc_t a, int64_t) const { return a.index; }
};

template <typename T, bool All>
struct LogicalR {
  using acc_t = bool;
  using out_t = bool;
  static constexpr bool kMergeable = true;
  static bool merge(bool a, bool b) { return All ? (a && b) : (a || b); }
  bool init() const { return All; }
  bool step(bool a, T v, int64_t) const {
    bool b = static_cast<compute_t<T>>(v) != compute_t<T>{};
    return All ? (a && b) : (a || b);
  }
  bool finish(bool a, int64_t) const { return a; }
};

// Welford's online variance; finish divides by (n - correction).
template <typename T>
struct VarR {
  struct acc_t {
    int64_t n;
    double mean, m2;
  };
  using out_t = T;
  static constexpr bool kMergeable = false;
  static acc_t merge(acc_t a, acc_t) { return a; }
  double correction;
  bool take_sqrt;
  acc_t init() const { return {0, 0.0, 0.0}; }
  acc_t step(acc_t a, T raw, int64_t) const {
    double v = static_cast<double>(static_cast<compute_t<T>>(raw));
    a.n += 1;
    double delta = v - a.mean;
    a.mean += delta / static_cast<double>(a.n);
    a.m2 += delta * (v - a.mean);
    return a;
  }
  T finish(acc_t a, int64_t) const {
    double denom = std::max(0.0, static_cast<double>(a.n) - correction);
    double var = a.m2 / denom;  // 0/0 -> nan, as PyTorch
    return static_cast<T>(static_cast<compute_t<T>>(take_sqrt ? std::sqrt(var) : var));
  }
};

// ---- result dtypes (shared by CPU and Meta) ----
ScalarType sum_dtype(const Tensor& self, std::optional<ScalarType> dtype) {
  if (dtype) return *dtype;
  return is_integral_type(self.dtype(), /*include_bool=*/true) ? ScalarType::Int64 : self.dtype();
}

ScalarType mean_dtype(const char* op, const Tensor& self, std::optional<ScalarType> dtype) {
  ScalarType t = dtype ? *dtype : self.dtype();
  SDK_CHECK_TYPE(is_floating_type(t), op,
                 ": could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: ",
                 scalar_type_name(t));
  return t;
}

// max/argmax & co. have no identity: an empty reduction is an error (PyTorch's wording).
void check_nonempty(const char* op, const Tensor& self, IntArrayRef dims, const Plan& p) {
  if (p.red_numel > 0) return;
  SDK_CHECK_VALUE(!dims.empty(), op, "(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                  "reduction dim with the 'dim' argument.");
  SDK_THROW(Index, op, "(): Expected reduction dim ", maybe_wrap_dim(dims[0], self.dim()), " to have non-zero size.");
}

Tensor as_dtype(const Tensor& t, ScalarType dtype) {
  if (t.dtype() == dtype) return t;
  return copy_(make_tensor(t.sizes(), dtype, t.device()), t);
}

bool is_meta(const Tensor& t) { return t.device().type == DeviceType::Meta; }

// Runs R<T> (T = the dtype of `in`) over the plan into a new tensor.
template <template <typename> class R, typename... Extra>
Tensor run_typed(const char* op, const Tensor& in, const Plan& p, ScalarType out_dtype, Extra... extra) {
  Tensor out = make_tensor(p.out_sizes, out_dtype, in.device());
  if (is_meta(in) || out.numel() == 0) return out;
  SDK_DISPATCH_ALL_TYPES(in.dtype(), op, [&] {
    using Reducer = R<scalar_t>;
    run_plan<scalar_t>(in, p, out.data_ptr<typename Reducer::out_t>(), Reducer{extra...});
  });
  return out;
}

template <typename T> using MaxR = ValueExtremumR<T, true>;
template <typename T> using MinR = ValueExtremumR<T, false>;
template <typename T> using ArgMaxR = ArgR<T, true>;
template <typename T> using ArgMinR = ArgR<T, false>;
template <typename T> using AllR = LogicalR<T, true>;
template <typename T> using AnyR = LogicalR<T, false>;

std::vector<int64_t> dims_of(const std::optional<IntArrayRef>& dim) { return dim ? dim->vec() : std::vector<int64_t>{}; }

// Note [Reducing a converted copy]: as_dtype may copy `self` into a contiguous
// tensor of the accumulation dtype, so the plan (which holds strides) must be
// made from the tensor actually reduced, not from `self` (a plan of a sliced
// or transposed `self` walked over the contiguous copy read garbage). The
// plan of `self` is made first so that dim errors come before any copy.
template <template <typename> class R>
Tensor reduce_as(const char* op, const Tensor& self, IntArrayRef dims, bool keepdim, ScalarType t) {
  Plan p = make_plan(self, dims, keepdim, op);
  if (is_meta(self) || self.dtype() == t) return run_typed<R>(op, self, p, t);
  Tensor in = as_dtype(self, t);
  return run_typed<R>(op, in, make_plan(in, dims, keepdim, op), t);
}

// ---- kernels (CPU and Meta share them: run_typed stops after allocating on meta) ----
Tensor sum_dim(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim, std::optional<ScalarType> dtype) {
  return reduce_as<SumR>("sum", self, dims_of(dim), keepdim, sum_dtype(self, dtype));
}
Tensor sum_all(const Tensor& self, std::optional<ScalarType> dtype) { return sum_dim(self, std::nullopt, false, dtype); }

Tensor sum_out(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim, std::optional<ScalarType> dtype,
               const Tensor& out) {
  Tensor result = sum_dim(self, dim, keepdim, dtype);
  SDK_CHECK_TYPE(out.dtype() == result.dtype(), "sum.IntList_out: expected out to have dtype ",
                 scalar_type_name(result.dtype()), ", got ", scalar_type_name(out.dtype()));
  resize_output(out, result.sizes(), "sum.IntList_out");  // Note [Resizing out= arguments]
  return copy_(out, result);
}

Tensor mean_dim(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim, std::optional<ScalarType> dtype) {
  return reduce_as<MeanR>("mean", self, dims_of(dim), keepdim, mean_dtype("mean", self, dtype));
}
Tensor mean_all(const Tensor& self, std::optional<ScalarType> dtype) { return mean_dim(self, std::nullopt, false, dtype); }

Tensor prod_dim(const Tensor& self, int64_t dim, bool keepdim, std::optional<ScalarType> dtype) {
  return reduce_as<ProdR>("prod", self, {dim}, keepdim, sum_dtype(self, dtype));
}
Tensor prod_all(const Tensor& self, std::optional<ScalarType> dtype) {
  return reduce_as<ProdR>("prod", self, {}, false, sum_dtype(self, dtype));
}

template <template <typename> class R>
Tensor extremum(const char* op, const Tensor& self, IntArrayRef dims, bool keepdim, ScalarType out_dtype) {
  Plan p = make_plan(self, dims, keepdim, op);
  check_nonempty(op, self, dims, p);
  return run_typed<R>(op, self, p, out_dtype);
}

Tensor amax(const Tensor& self, IntArrayRef dim, bool keepdim) { return extremum<MaxR>("amax", self, dim, keepdim, self.dtype()); }
Tensor amin(const Tensor& self, IntArrayRef dim, bool keepdim) { return extremum<MinR>("amin", self, dim, keepdim, self.dtype()); }
Tensor max_all(const Tensor& self) { return extremum<MaxR>("max", self, {}, false, self.dtype()); }
Tensor min_all(const Tensor& self) { return extremum<MinR>("min", self, {}, false, self.dtype()); }

std::tuple<Tensor, Tensor> max_dim(const Tensor& self, int64_t dim, bool keepdim) {
  return {extremum<MaxR>("max", self, {dim}, keepdim, self.dtype()),
          extremum<ArgMaxR>("max", self, {dim}, keepdim, ScalarType::Int64)};
}
std::tuple<Tensor, Tensor> min_dim(const Tensor& self, int64_t dim, bool keepdim) {
  return {extremum<MinR>("min", self, {dim}, keepdim, self.dtype()),
          extremum<ArgMinR>("min", self, {dim}, keepdim, ScalarType::Int64)};
}

// argmax(dim=None) is the index into the flattened tensor.
Tensor argmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  SDK_CHECK_TYPE(self.dtype() != ScalarType::Bool, "argmax: \"argmax_cpu\" not implemented for 'Bool'");
  if (dim) return extremum<ArgMaxR>("argmax", self, {*dim}, keepdim, ScalarType::Int64);
  Tensor flat = self.is_contiguous() ? self : as_dtype(copy_(make_tensor(self.sizes(), self.dtype(), self.device()), self), self.dtype());
  Tensor r = extremum<ArgMaxR>("argmax", make_view(flat, {self.numel()}, {1}, flat.storage_offset(), "argmax"), {}, false, ScalarType::Int64);
  return keepdim ? make_view(r, DimVector(static_cast<size_t>(self.dim()), 1), DimVector(static_cast<size_t>(self.dim()), 1), 0, "argmax") : r;
}
Tensor argmin(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  SDK_CHECK_TYPE(self.dtype() != ScalarType::Bool, "argmin: \"argmin_cpu\" not implemented for 'Bool'");
  if (dim) return extremum<ArgMinR>("argmin", self, {*dim}, keepdim, ScalarType::Int64);
  Tensor flat = self.is_contiguous() ? self : copy_(make_tensor(self.sizes(), self.dtype(), self.device()), self);
  Tensor r = extremum<ArgMinR>("argmin", make_view(flat, {self.numel()}, {1}, flat.storage_offset(), "argmin"), {}, false, ScalarType::Int64);
  return keepdim ? make_view(r, DimVector(static_cast<size_t>(self.dim()), 1), DimVector(static_cast<size_t>(self.dim()), 1), 0, "argmin") : r;
}

ScalarType logical_dtype(const Tensor& self) { return self.dtype() == ScalarType::UInt8 ? ScalarType::UInt8 : ScalarType::Bool; }
Tensor all_all(const Tensor& self) { return run_typed<AllR>("all", self, make_plan(self, {}, false, "all"), logical_dtype(self)); }
Tensor all_dim(const Tensor& self, int64_t dim, bool keepdim) { return run_typed<AllR>("all", self, make_plan(self, {dim}, keepdim, "all"), logical_dtype(self)); }
Tensor any_all(const Tensor& self) { return run_typed<AnyR>("any", self, make_plan(self, {}, false, "any"), logical_dtype(self)); }
Tensor any_dim(const Tensor& self, int64_t dim, bool keepdim) { return run_typed<AnyR>("any", self, make_plan(self, {dim}, keepdim, "any"), logical_dtype(self)); }

Tensor var_impl(const char* op, const Tensor& self, std::optional<IntArrayRef> dim, const std::optional<Scalar>& correction,
                bool keepdim, bool take_sqrt) {
  SDK_CHECK_TYPE(is_floating_type(self.dtype()), op, ": expected a floating point input, got ", scalar_type_name(self.dtype()));
  Plan p = make_plan(self, dims_of(dim), keepdim, op);
  double c = correction ? correction->to_double() : 1.0;
  return run_typed<VarR>(op, self, p, self.dtype(), c, take_sqrt);
}
Tensor var_correction(const Tensor& self, std::optional<IntArrayRef> dim, const std::optional<Scalar>& correction, bool keepdim) {
  return var_impl("var", self, dim, correction, keepdim, false);
}
Tensor std_correction(const Tensor& self, std::optional<IntArrayRef> dim, const std::optional<Scalar>& correction, bool keepdim) {
  return var_impl("std", self, dim, correction, keepdim, true);
}

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_FRAGMENT(aten, m) {
  m.def("sum(Tensor self, *, ScalarType? dtype=None) -> Tensor");
  m.def("sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor");
  m.def("sum.IntList_out(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)");
  m.def("mean(Tensor self, *, ScalarType? dtype=None) -> Tensor");
  m.def("mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor");
  m.def("prod(Tensor self, *, ScalarType? dtype=None) -> Tensor");
  m.def("prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor");
  m.def("amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor");
  m.def("amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor");
  m.def("max(Tensor self) -> Tensor");
  m.def("max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
  m.def("min(Tensor self) -> Tensor");
  m.def("min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
  m.def("argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor");
  m.def("argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor");
  m.def("all(Tensor self) -> Tensor");
  m.def("all.dim(Tensor self, int dim, bool keepdim=False) -> Tensor");
  m.def("any(Tensor self) -> Tensor");
  m.def("any.dim(Tensor self, int dim, bool keepdim=False) -> Tensor");
  m.def("var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor");
  m.def("std.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor");
}

#define SDK_REDUCTION_IMPLS(m)                        \
  m.impl("sum", &sdk::ops::sum_all);                  \
  m.impl("sum.dim_IntList", &sdk::ops::sum_dim);      \
  m.impl("sum.IntList_out", &sdk::ops::sum_out);      \
  m.impl("mean", &sdk::ops::mean_all);                \
  m.impl("mean.dim", &sdk::ops::mean_dim);            \
  m.impl("prod", &sdk::ops::prod_all);                \
  m.impl("prod.dim_int", &sdk::ops::prod_dim);        \
  m.impl("amax", &sdk::ops::amax);                    \
  m.impl("amin", &sdk::ops::amin);                    \
  m.impl("max", &sdk::ops::max_all);                  \
  m.impl("max.dim", &sdk::ops::max_dim);              \
  m.impl("min", &sdk::ops::min_all);                  \
  m.impl("min.dim", &sdk::ops::min_dim);              \
  m.impl("argmax", &sdk::ops::argmax);                \
  m.impl("argmin", &sdk::ops::argmin);                \
  m.impl("all", &sdk::ops::all_all);                  \
  m.impl("all.dim", &sdk::ops::all_dim);              \
  m.impl("any", &sdk::ops::any_all);                  \
  m.impl("any.dim", &sdk::ops::any_dim);              \
  m.impl("var.correction", &sdk::ops::var_correction); \
  m.impl("std.correction", &sdk::ops::std_correction)

// One set of kernels serves CPU and Meta (they stop after allocating on meta);
// see Note [Reduction plan].
SDK_LIBRARY_IMPL(aten, CPU, m) { SDK_REDUCTION_IMPLS(m); }
SDK_LIBRARY_IMPL(aten, Meta, m) { SDK_REDUCTION_IMPLS(m); }
