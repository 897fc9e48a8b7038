// sort, sort.stable, topk (CPU and Meta kernels) and argsort (composite).
//
// Note [Sort order and NaN]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// As PyTorch: NaN compares greater than every number, so an ascending sort
// puts NaNs last and a descending one (and topk largest=True) first. The CPU
// sort is always stable (std::stable_sort), which satisfies stable=False too;
// topk returns its k elements in sorted order whether sorted= is true or not
// (allowed: PyTorch leaves the order unspecified then). Equal elements keep
// their index order. Each line along `dim` is sorted independently, lines
// split over threads.
// Derivatives (PyTorch's derivatives.yaml; the autograd table needs them):
//   sort, sort.stable, topk:  self = value_selecting_reduction_backward(grad, dim, indices, self.sizes(), keepdim=true)
//                             (a zero tensor of self's shape with grad scattered to `indices` along dim).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>
#include <vector>

#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/Functions.h>
#include <backend_sdk/ops/Parallel.h>

namespace sdk::ops {
namespace {

template <typename T>
double key_of(T v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return static_cast<double>(static_cast<float>(v));
  } else {
    return static_cast<double>(v);
  }
}

// a before b in the requested order (NaN largest).
inline bool before(double a, double b, bool descending) {
  const bool an = std::isnan(a), bn = std::isnan(b);
  if (descending) return (an && !bn) || (!an && !bn && a > b);
  return (!an && bn) || (!an && !bn && a < b);
}

// Sorts (or selects the first k of) each line of src along dim into values / indices
// (contiguous, shaped as src with size k along dim).
void sort_lines(const Tensor& src, int64_t dim, int64_t k, bool descending, const Tensor& values,
                const Tensor& indices, const char* op) {
  const int64_t len = src.dim() == 0 ? 1 : src.size(dim);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < src.dim(); ++d) {
    if (d < dim) outer *= src.size(d);
    if (d > dim) inner *= src.size(d);
  }
  if (outer * inner == 0 || k == 0) return;
  SDK_DISPATCH_ALL_TYPES(src.dtype(), op, [&] {
    const auto* in = src.data_ptr<scalar_t>();
    auto* vo = values.data_ptr<scalar_t>();
    auto* io = indices.data_ptr<int64_t>();
    const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(len, 1));
    parallel_for(0, outer * inner, grain, [&](int64_t b, int64_t e) {
      std::vector<int64_t> order(static_cast<size_t>(len));
      std::vector<double> keys(static_cast<size_t>(len));
      for (int64_t line = b; line < e; ++line) {
        const int64_t o = line / inner, i = line % inner;
        const int64_t base = o * len * inner + i;
        for (int64_t j = 0; j < len; ++j) keys[static_cast<size_t>(j)] = key_of(in[base + j * inner]);
        std::iota(order.begin(), order.end(), int64_t{0});
        auto cmp = [&](int64_t x, int64_t y) {
          return before(keys[static_cast<size_t>(x)], keys[static_cast<size_t>(y)], descending);
        };
        if (k < len) {
          // stable partial selection: ties broken by index so equal elements keep their order.
          auto cmp_stable = [&](int64_t x, int64_t y) { return cmp(x, y) || (!cmp(y, x) && x < y); };
          std::partial_sort(order.begin(), order.begin() + k, order.end(), cmp_stable);
        } else {
          std::stable_sort(order.begin(), order.end(), cmp);
        }
        const int64_t obase = o * k * inner + i;
        for (int64_t j = 0; j < k; ++j) {
          const int64_t src_j = order[static_cast<size_t>(j)];
          vo[obase + j * inner] = in[base + src_j * inner];
          io[obase + j * inner] = src_j;
        }
      }
    });
  });
}

std::tuple<Tensor, Tensor> sort_common(const Tensor& self, int64_t dim, bool descending, int64_t k, const char* op) {
  const int64_t d = maybe_wrap_dim(dim, self.dim());
  DimVector sizes(self.sizes());
  if (self.dim() > 0) sizes[d] = k;
  Tensor values = make_tensor(sizes, self.dtype(), self.device());
  Tensor indices = make_tensor(sizes, ScalarType::Int64, self.device());
  if (self.is_meta() || self.numel() == 0) return {values, indices};
  // A contiguous copy of self (copy_ converts any layout).
  Tensor src = self.is_contiguous() ? self : copy_(make_tensor(self.sizes(), self.dtype(), self.device()), self);
  sort_lines(src, self.dim() == 0 ? 0 : d, k, descending, values, indices, op);
  return {values, indices};
}

std::tuple<Tensor, Tensor> sort_kernel(const Tensor& self, int64_t dim, bool descending) {
  const int64_t d = maybe_wrap_dim(dim, self.dim());
  return sort_common(self, dim, descending, self.dim() == 0 ? 1 : self.size(d), "sort");
}

std::tuple<Tensor, Tensor> sort_stable_kernel(const Tensor& self, std::optional<bool> stable, int64_t dim,
                                              bool descending) {
  (void)stable;  // always stable (Note [Sort order and NaN])
  return sort_kernel(self, dim, descending);
}

std::tuple<Tensor, Tensor> topk_kernel(const Tensor& self, int64_t k, int64_t dim, bool largest, bool sorted) {
  (void)sorted;
  const int64_t d = maybe_wrap_dim(dim, self.dim());
  const int64_t n = self.dim() > 0 ? self.size(d) : 1;
  SDK_CHECK_INDEX(k >= 0 && k <= n, "selected index k out of range");
  return sort_common(self, dim, largest, k, "topk");
}

Tensor argsort_impl(const Tensor& self, int64_t dim, bool descending) {
  static const auto sort = Dispatcher::singleton()
                               .find_schema_or_throw("aten::sort")
                               .typed<std::tuple<Tensor, Tensor>(const Tensor&, int64_t, bool)>();
  return std::get<1>(sort.call(self, dim, descending));
}

Tensor argsort_stable_impl(const Tensor& self, bool stable, int64_t dim, bool descending) {
  (void)stable;
  return argsort_impl(self, dim, descending);
}

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_FRAGMENT(aten, m) {
  m.def("sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)");
  m.def("sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> (Tensor values, Tensor "
        "indices)");
  m.def("topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor "
        "indices)");
  m.def("argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor");
  m.def("argsort.stable(Tensor self, *, bool stable, int dim=-1, bool descending=False) -> Tensor");
  m.impl("argsort", sdk::DispatchKey::CompositeImplicitAutograd, &sdk::ops::argsort_impl);
  m.impl("argsort.stable", sdk::DispatchKey::CompositeImplicitAutograd, &sdk::ops::argsort_stable_impl);
}

#define SDK_SORT_IMPLS(m)                                  \
  m.impl("sort", &sdk::ops::sort_kernel);                  \
  m.impl("sort.stable", &sdk::ops::sort_stable_kernel);    \
  m.impl("topk", &sdk::ops::topk_kernel)

// One set of kernels: they stop after allocating on meta.
SDK_LIBRARY_IMPL(aten, CPU, m) { SDK_SORT_IMPLS(m); }
SDK_LIBRARY_IMPL(aten, Meta, m) { SDK_SORT_IMPLS(m); }
