// index_add, index_copy, index_fill (and their in-place and out= forms):
// CompositeImplicitAutograd over index_put / index_put_, with PyTorch's schemas
// and argument checks, so every backend with index_put_ gets them and the Meta
// kernel and autograd come from index_put's.
//
// Note [index_* as index_put]: writing `source` into `self` at positions
// `index` along `dim` is index_put with indices [None] * dim + [index]: the
// indexed region self[..., index, ...] has source's shape (self's with
// size(dim) replaced by index.numel()). accumulate=true gives index_add.
// A 0-d self / source / index is treated as 1-element 1-D (as PyTorch does).
#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/Functions.h>
#include <backend_sdk/ops/detail/Resize.h>

namespace sdk::ops {
namespace {

template <typename Sig>
OperatorHandle::Typed<Sig> op(const char* name) {
  return Dispatcher::singleton().find_schema_or_throw(name).typed<Sig>();
}

using IndexPutSig = Tensor(const Tensor&, OptionalTensorList, const Tensor&, bool);

Tensor as_1d(const Tensor& t) { return t.dim() == 0 ? view(t, {1}) : t; }

// Checks `index` (a vector of int32/int64) and returns it as int64, 1-D.
Tensor checked_index(const char* op_name, const Tensor& index) {
  SDK_CHECK_VALUE(index.dim() <= 1, op_name, "(): Index is supposed to be a vector");
  SDK_CHECK_TYPE(index.dtype() == ScalarType::Int64 || index.dtype() == ScalarType::Int32, op_name,
                 "(): Expected dtype int32/int64 for index");
  Tensor idx = as_1d(index);
  if (idx.dtype() == ScalarType::Int64) return idx;
  return copy_(empty(idx.sizes(), ScalarType::Int64, idx.device()), idx);
}

std::vector<std::optional<Tensor>> indices_at(int64_t dim, const Tensor& index) {
  std::vector<std::optional<Tensor>> indices(static_cast<size_t>(dim));
  indices.emplace_back(index);
  return indices;
}

// The checks shared by index_add and index_copy (PyTorch's index_func_meta_impl wording).
void check_source(const char* op_name, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  SDK_CHECK_TYPE(self.dtype() == source.dtype(), op_name, "(): self (", scalar_type_name(self.dtype()),
                 ") and source (", scalar_type_name(source.dtype()), ") must have the same scalar type");
  SDK_CHECK_VALUE(self.dim() == source.dim() || (self.dim() <= 1 && source.dim() <= 1), op_name,
                  "(): When source and destination are not scalars, their dimensionality must match. Source "
                  "dimensionality (", source.dim(), "), destination dimensionality (", self.dim(), ")");
  int64_t n = source.dim() == 0 ? 1 : source.size(dim);
  SDK_CHECK_VALUE(index.numel() == n, op_name, "(): Number of indices (", index.numel(),
                  ") should be equal to source.size(dim) (", n, ")");
}

Tensor index_write(const char* op_name, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                   bool accumulate, bool inplace) {
  int64_t d = maybe_wrap_dim(dim, self.dim());
  Tensor idx = checked_index(op_name, index);
  check_source(op_name, self, d, idx, source);
  Tensor target = as_1d(self);
  Tensor values = self.dim() == 0 ? view(source, {1}) : source;
  auto indices = indices_at(d, idx);
  if (inplace) {
    static const auto put_ = op<IndexPutSig>("aten::index_put_");
    put_.call(target, indices, values, accumulate);
    return self;
  }
  static const auto put = op<IndexPutSig>("aten::index_put");
  Tensor r = put.call(target, indices, values, accumulate);
  return self.dim() == 0 ? view(r, {}) : r;
}

Tensor write_out(const char* op_name, const Tensor& result, const Tensor& out) {
  SDK_CHECK_TYPE(out.dtype() == result.dtype(), op_name, ": expected out to have dtype ",
                 scalar_type_name(result.dtype()), ", got ", scalar_type_name(out.dtype()));
  resize_output(out, result.sizes(), op_name);  // Note [Resizing out= arguments]
  return copy_(out, result);
}

Tensor scaled(const Tensor& source, const Scalar& alpha) {
  bool one = alpha.is_floating_point() ? alpha.to_double() == 1.0 : alpha.to_int() == 1;
  return one ? source : mul(source, alpha);
}

// index_add: self + alpha * source at index along dim (repeated indices accumulate).
Tensor index_add_impl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
  return index_write("index_add", self, dim, index, scaled(source, alpha), true, false);
}
Tensor index_add_inplace_impl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                              const Scalar& alpha) {
  return index_write("index_add_", self, dim, index, scaled(source, alpha), true, true);
}
Tensor index_add_out_impl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                          const Scalar& alpha, const Tensor& out) {
  return write_out("index_add.out", index_add_impl(self, dim, index, source, alpha), out);
}

// index_copy: source written at index along dim.
Tensor index_copy_impl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  return index_write("index_copy", self, dim, index, source, false, false);
}
Tensor index_copy_inplace_impl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  return index_write("index_copy_", self, dim, index, source, false, true);
}
Tensor index_copy_out_impl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                           const Tensor& out) {
  return write_out("index_copy.out", index_copy_impl(self, dim, index, source), out);
}

// index_fill: value written at index along dim (a 0-d tensor broadcast over the region).
Tensor index_fill_value(const char* op_name, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& value,
                        bool inplace) {
  SDK_CHECK_VALUE(value.dim() == 0, op_name, " only supports a 0-dimensional value tensor, but got tensor with ",
                  value.dim(), " dimension(s).");
  int64_t d = maybe_wrap_dim(dim, self.dim());
  Tensor idx = checked_index(op_name, index);
  Tensor v = value.dtype() == self.dtype() && value.device() == self.device()
                 ? value
                 : copy_(empty({}, self.dtype(), self.device()), value);
  Tensor target = as_1d(self);
  auto indices = indices_at(d, idx);
  if (inplace) {
    static const auto put_ = op<IndexPutSig>("aten::index_put_");
    put_.call(target, indices, v, false);
    return self;
  }
  static const auto put = op<IndexPutSig>("aten::index_put");
  Tensor r = put.call(target, indices, v, false);
  return self.dim() == 0 ? view(r, {}) : r;
}
Tensor index_fill_scalar_impl(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  return index_fill_value("index_fill", self, dim, index, fill_(empty({}, self.dtype(), self.device()), value), false);
}
Tensor index_fill_scalar_inplace_impl(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  return index_fill_value("index_fill_", self, dim, index, fill_(empty({}, self.dtype(), self.device()), value), true);
}
Tensor index_fill_tensor_impl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& value) {
  return index_fill_value("index_fill_", self, dim, index, value, false);
}
Tensor index_fill_tensor_inplace_impl(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& value) {
  return index_fill_value("index_fill_", self, dim, index, value, true);
}

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_FRAGMENT(aten, m) {
  m.def("index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor");
  m.def("index_add_(Tensor(a!) self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor(a!)");
  m.def("index_add.out(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1, Tensor(a!) out) -> "
        "Tensor(a!)");
  m.def("index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor");
  m.def("index_copy_(Tensor(a!) self, int dim, Tensor index, Tensor source) -> Tensor(a!)");
  m.def("index_copy.out(Tensor self, int dim, Tensor index, Tensor source, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("index_fill.int_Scalar(Tensor self, int dim, Tensor index, Scalar value) -> Tensor");
  m.def("index_fill_.int_Scalar(Tensor(a!) self, int dim, Tensor index, Scalar value) -> Tensor(a!)");
  m.def("index_fill.int_Tensor(Tensor self, int dim, Tensor index, Tensor value) -> Tensor");
  m.def("index_fill_.int_Tensor(Tensor(a!) self, int dim, Tensor index, Tensor value) -> Tensor(a!)");
  constexpr auto k = sdk::DispatchKey::CompositeImplicitAutograd;
  m.impl("index_add", k, &sdk::ops::index_add_impl);
  m.impl("index_add_", k, &sdk::ops::index_add_inplace_impl);
  m.impl("index_add.out", k, &sdk::ops::index_add_out_impl);
  m.impl("index_copy", k, &sdk::ops::index_copy_impl);
  m.impl("index_copy_", k, &sdk::ops::index_copy_inplace_impl);
  m.impl("index_copy.out", k, &sdk::ops::index_copy_out_impl);
  m.impl("index_fill.int_Scalar", k, &sdk::ops::index_fill_scalar_impl);
  m.impl("index_fill_.int_Scalar", k, &sdk::ops::index_fill_scalar_inplace_impl);
  m.impl("index_fill.int_Tensor", k, &sdk::ops::index_fill_tensor_impl);
  m.impl("index_fill_.int_Tensor", k, &sdk::ops::index_fill_tensor_inplace_impl);
}
