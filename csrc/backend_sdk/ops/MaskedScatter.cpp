// masked_scatter(_)(.out) on CPU and Meta (one kernel each; Meta stops after
// the checks and allocation).
//
// Note [masked_scatter]: the elements of `source`, in row-major order, are
// written to the positions of `self` where `mask` (broadcast to self's shape)
// is true, also in row-major order. The in-place form needs mask to broadcast
// to self; the functional form broadcasts self and mask together (as
// PyTorch's expand_outplace). The number of true mask elements is checked
// against source.numel() before anything is written.
#include <algorithm>

#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/Functions.h>
#include <backend_sdk/ops/detail/Resize.h>

namespace sdk::ops {
namespace {

bool is_meta(const Tensor& t) { return t.device().type == DeviceType::Meta; }

DimVector broadcast_sizes(const char* op, IntArrayRef a, IntArrayRef b) {
  size_t n = std::max(a.size(), b.size());
  DimVector out(n, 1);
  for (size_t i = 0; i < n; ++i) {
    int64_t sa = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t sb = i < n - b.size() ? 1 : b[i - (n - b.size())];
    SDK_CHECK_VALUE(sa == sb || sa == 1 || sb == 1, op, ": The size of tensor a (", sa,
                    ") must match the size of tensor b (", sb, ") at non-singleton dimension ", i);
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}

// A stride-0 view of t broadcast to `sizes` (t's dims align to the right).
Tensor expand_to(const Tensor& t, IntArrayRef sizes) {
  DimVector strides(sizes.size(), 0);
  int64_t offset = static_cast<int64_t>(sizes.size()) - t.dim();
  for (int64_t d = 0; d < t.dim(); ++d) strides[offset + d] = t.size(d) == 1 ? 0 : t.stride(d);
  return as_strided(t, sizes, strides, t.storage_offset());
}

Tensor dense(const Tensor& t) { return t.is_contiguous() ? t : copy_(empty(t.sizes(), t.dtype(), t.device()), t); }

void check_args(const char* op, const Tensor& self, const Tensor& mask, const Tensor& source) {
  SDK_CHECK_TYPE(mask.dtype() == ScalarType::Bool, op, ": masked_scatter_ only supports boolean masks, but got mask "
                 "with dtype ", scalar_type_name(mask.dtype()));
  SDK_CHECK_TYPE(self.dtype() == source.dtype(), op, ": expected self and source to have same dtypes but got ",
                 scalar_type_name(self.dtype()), " and ", scalar_type_name(source.dtype()));
  SDK_CHECK_VALUE(mask.device() == self.device() && source.device() == self.device(), op,
                  ": expected self, mask and source on the same device, got ", self.device(), ", ", mask.device(),
                  " and ", source.device());
}

// Writes into `self` (already of the broadcast shape); see Note [masked_scatter].
Tensor scatter_into(const char* op, const Tensor& self, const Tensor& mask, const Tensor& source) {
  if (is_meta(self) || self.numel() == 0) {
    self.impl()->bump_version();
    return self;
  }
  Tensor m = dense(expand_to(mask, self.sizes()));
  const bool* mp = m.data_ptr<bool>();
  const int64_t n = self.numel();
  const int64_t ones = static_cast<int64_t>(std::count(mp, mp + n, true));
  SDK_CHECK_VALUE(ones <= source.numel(), op, ": Number of elements of source < number of ones in mask (",
                  source.numel(), " < ", ones, ")");
  Tensor src = dense(source);
  Tensor dst = dense(self);
  SDK_DISPATCH_ALL_TYPES(self.dtype(), op, [&] {
    scalar_t* d = dst.data_ptr<scalar_t>();
    const scalar_t* s = src.data_ptr<scalar_t>();
    int64_t k = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (mp[i]) d[i] = s[k++];
    }
  });
  if (!dst.is_same(self)) copy_(self, dst);
  self.impl()->bump_version();
  return self;
}

Tensor masked_scatter_inplace_kernel(const Tensor& self, const Tensor& mask, const Tensor& source) {
  const char* op = "masked_scatter_";
  check_args(op, self, mask, source);
  DimVector b = broadcast_sizes(op, self.sizes(), mask.sizes());
  SDK_CHECK_VALUE(IntArrayRef(b).equals(self.sizes()), op, ": the mask of shape ", mask.sizes(),
                  " does not broadcast to self's shape ", self.sizes());
  return scatter_into(op, self, mask, source);
}

Tensor masked_scatter_kernel(const Tensor& self, const Tensor& mask, const Tensor& source) {
  const char* op = "masked_scatter";
  check_args(op, self, mask, source);
  DimVector b = broadcast_sizes(op, self.sizes(), mask.sizes());
  Tensor result = copy_(empty(b, self.dtype(), self.device()), expand_to(self, b));
  return scatter_into(op, result, mask, source);
}

Tensor masked_scatter_out_kernel(const Tensor& self, const Tensor& mask, const Tensor& source, const Tensor& out) {
  const char* op = "masked_scatter.out";
  check_args(op, self, mask, source);
  SDK_CHECK_TYPE(out.dtype() == self.dtype(), op, ": expected out to have dtype ", scalar_type_name(self.dtype()),
                 ", got ", scalar_type_name(out.dtype()));
  SDK_CHECK_VALUE(out.device() == self.device(), op, ": expected out on ", self.device(), ", got ", out.device());
  DimVector b = broadcast_sizes(op, self.sizes(), mask.sizes());
  resize_output(out, b, op);  // Note [Resizing out= arguments]
  copy_(out, expand_to(self, b));
  return scatter_into(op, out, mask, source);
}

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_FRAGMENT(aten, m) {
  m.def("masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor");
  m.def("masked_scatter_(Tensor(a!) self, Tensor mask, Tensor source) -> Tensor(a!)");
  m.def("masked_scatter.out(Tensor self, Tensor mask, Tensor source, *, Tensor(a!) out) -> Tensor(a!)");
}

#define SDK_MASKED_SCATTER_IMPLS(m)                                   \
  m.impl("masked_scatter", &sdk::ops::masked_scatter_kernel);         \
  m.impl("masked_scatter_", &sdk::ops::masked_scatter_inplace_kernel); \
  m.impl("masked_scatter.out", &sdk::ops::masked_scatter_out_kernel)

SDK_LIBRARY_IMPL(aten, CPU, m) { SDK_MASKED_SCATTER_IMPLS(m); }
SDK_LIBRARY_IMPL(aten, Meta, m) { SDK_MASKED_SCATTER_IMPLS(m); }
