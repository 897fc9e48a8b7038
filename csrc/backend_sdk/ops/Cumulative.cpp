// cumsum and cumprod (plain, in-place and out=): CPU and Meta kernels.
//
// The result dtype is `dtype` when given, else the out= tensor's dtype, else
// int64 for integral and bool inputs and self's dtype otherwise (PyTorch's
// rule). The CPU kernel converts self to the result dtype in a contiguous
// buffer and scans each line along `dim`, accumulating floating values in
// double and integers in int64; lines are split over threads.
#include <type_traits>

#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/Functions.h>
#include <backend_sdk/ops/Parallel.h>

namespace sdk::ops {
namespace {

template <typename T>
using acc_of = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16> ||
                                      std::is_floating_point_v<T>,
                                  double, int64_t>;

template <typename T>
T from_acc(acc_of<T> v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return T(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else {
    return static_cast<T>(v);
  }
}
template <typename T>
acc_of<T> to_acc(T v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return static_cast<double>(static_cast<float>(v));
  } else {
    return static_cast<acc_of<T>>(v);
  }
}

ScalarType scan_dtype(const Tensor& self, std::optional<ScalarType> dtype, const Tensor* out) {
  if (dtype) return *dtype;
  if (out) return out->dtype();
  return is_integral_type(self.dtype(), /*include_bool=*/true) ? ScalarType::Int64 : self.dtype();
}

// Scans src (contiguous, dtype of dst) into dst (contiguous) along dim.
template <bool kProd>
void scan_contiguous(const Tensor& src, const Tensor& dst, int64_t dim) {
  int64_t len = src.dim() == 0 ? 1 : src.size(dim);
  int64_t inner = 1, outer = 1;
  for (int64_t d = 0; d < src.dim(); ++d) {
    if (d < dim) outer *= src.size(d);
    if (d > dim) inner *= src.size(d);
  }
  if (src.numel() == 0) return;
  SDK_DISPATCH_ALL_TYPES(src.dtype(), kProd ? "cumprod" : "cumsum", [&] {
    const auto* in = src.data_ptr<scalar_t>();
    auto* o = dst.data_ptr<scalar_t>();
    int64_t lines = outer * inner;
    int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(len, 1));
    parallel_for(0, lines, grain, [&](int64_t b, int64_t e) {
      for (int64_t line = b; line < e; ++line) {
        int64_t base = (line / inner) * len * inner + line % inner;
        acc_of<scalar_t> acc = kProd ? 1 : 0;
        for (int64_t k = 0; k < len; ++k) {
          int64_t idx = base + k * inner;
          if constexpr (kProd) {
            acc = acc * to_acc(in[idx]);
          } else {
            acc = acc + to_acc(in[idx]);
          }
          o[idx] = from_acc<scalar_t>(acc);
        }
      }
    });
  });
}

template <bool kProd>
Tensor scan(const Tensor& self, int64_t dim, ScalarType t) {
  int64_t d = maybe_wrap_dim(dim, self.dim());
  Tensor result = make_tensor(self.sizes(), t, self.device());
  if (self.is_meta() || self.numel() == 0) return result;
  Tensor src = copy_(make_tensor(self.sizes(), t, self.device()), self);
  scan_contiguous<kProd>(src, result, self.dim() == 0 ? 0 : d);
  return result;
}

template <bool kProd>
Tensor scan_kernel(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return scan<kProd>(self, dim, scan_dtype(self, dtype, nullptr));
}

template <bool kProd>
Tensor scan_inplace(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  const char* op = kProd ? "cumprod_" : "cumsum_";
  SDK_CHECK_TYPE(!dtype || *dtype == self.dtype(), op, ": provided dtype must match the dtype of self tensor, got ",
                 scalar_type_name(*dtype), " and ", scalar_type_name(self.dtype()));
  Tensor result = scan<kProd>(self, dim, self.dtype());
  if (self.is_meta()) return self;
  return copy_(self, result);
}

template <bool kProd>
Tensor scan_out(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype, const Tensor& out) {
  const char* op = kProd ? "cumprod.out" : "cumsum.out";
  SDK_CHECK_TYPE(!dtype || *dtype == out.dtype(), op, ": Expected out tensor to have dtype ",
                 scalar_type_name(*dtype), ", but got ", scalar_type_name(out.dtype()), " instead");
  check_same_device(op, self, out);
  Tensor result = scan<kProd>(self, dim, scan_dtype(self, dtype, &out));
  if (!out.sizes().equals(result.sizes())) resize_(out, result.sizes());
  if (out.is_meta()) return out;
  return copy_(out, result);
}

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_FRAGMENT(aten, m) {
  m.def("cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor");
  m.def("cumsum_(Tensor(a!) self, int dim, *, ScalarType? dtype=None) -> Tensor(a!)");
  m.def("cumsum.out(Tensor self, int dim, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)");
  m.def("cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor");
  m.def("cumprod_(Tensor(a!) self, int dim, *, ScalarType? dtype=None) -> Tensor(a!)");
  m.def("cumprod.out(Tensor self, int dim, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)");
}

#define SDK_SCAN_IMPLS(m)                                      \
  m.impl("cumsum", &sdk::ops::scan_kernel<false>);             \
  m.impl("cumsum_", &sdk::ops::scan_inplace<false>);           \
  m.impl("cumsum.out", &sdk::ops::scan_out<false>);            \
  m.impl("cumprod", &sdk::ops::scan_kernel<true>);             \
  m.impl("cumprod_", &sdk::ops::scan_inplace<true>);           \
  m.impl("cumprod.out", &sdk::ops::scan_out<true>)

// One set of kernels: they stop after allocating on meta.
SDK_LIBRARY_IMPL(aten, CPU, m) { SDK_SCAN_IMPLS(m); }
SDK_LIBRARY_IMPL(aten, Meta, m) { SDK_SCAN_IMPLS(m); }
