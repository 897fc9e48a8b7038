#include <backend_sdk/ops/Functions.h>
#include <backend_sdk/ops/MathFunctions.h>

#include <backend_sdk/dispatch/Dispatcher.h>

namespace sdk::ops {

namespace {
// The typed handle of an aten operator, looked up once per call site.
template <typename Sig>
OperatorHandle::Typed<Sig> typed_op(const char* name) {
  return Dispatcher::singleton().find_schema_or_throw(name).typed<Sig>();
}
}  // namespace

#define SDK_OP(name, Sig) \
  static const OperatorHandle::Typed<Sig> op = typed_op<Sig>(name)

Tensor empty(IntArrayRef size, std::optional<ScalarType> dtype, std::optional<Device> device) {
  SDK_OP("aten::empty.memory_format",
         Tensor(IntArrayRef, std::optional<ScalarType>, std::optional<int64_t>, std::optional<Device>,
                std::optional<bool>, std::optional<int64_t>));
  return op.call(size, dtype, std::nullopt, device, std::nullopt, std::nullopt);
}

Tensor empty_strided(IntArrayRef size, IntArrayRef stride, std::optional<ScalarType> dtype,
                     std::optional<Device> device) {
  SDK_OP("aten::empty_strided", Tensor(IntArrayRef, IntArrayRef, std::optional<ScalarType>, std::optional<int64_t>,
                                       std::optional<Device>, std::optional<bool>));
  return op.call(size, stride, dtype, std::nullopt, device, std::nullopt);
}

Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  SDK_OP("aten::add.Tensor", Tensor(const Tensor&, const Tensor&, const Scalar&));
  return op.call(self, other, alpha);
}

Tensor add(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  SDK_OP("aten::add.Scalar", Tensor(const Tensor&, const Scalar&, const Scalar&));
  return op.call(self, other, alpha);
}

Tensor add_(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  SDK_OP("aten::add_.Tensor", Tensor(const Tensor&, const Tensor&, const Scalar&));
  return op.call(self, other, alpha);
}

Tensor add_out(const Tensor& out, const Tensor& self, const Tensor& other, const Scalar& alpha) {
  SDK_OP("aten::add.out", Tensor(const Tensor&, const Tensor&, const Scalar&, const Tensor&));
  return op.call(self, other, alpha, out);
}

Tensor mul(const Tensor& self, const Tensor& other) {
  SDK_OP("aten::mul.Tensor", Tensor(const Tensor&, const Tensor&));
  return op.call(self, other);
}

Tensor mul(const Tensor& self, const Scalar& other) {
  SDK_OP("aten::mul.Scalar", Tensor(const Tensor&, const Scalar&));
  return op.call(self, other);
}

Tensor mul_(const Tensor& self, const Tensor& other) {
  SDK_OP("aten::mul_.Tensor", Tensor(const Tensor&, const Tensor&));
  return op.call(self, other);
}

Tensor mul_out(const Tensor& out, const Tensor& self, const Tensor& other) {
  SDK_OP("aten::mul.out", Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op.call(self, other, out);
}

Tensor copy_(const Tensor& self, const Tensor& src, bool non_blocking) {
  SDK_OP("aten::copy_", Tensor(const Tensor&, const Tensor&, bool));
  return op.call(self, src, non_blocking);
}

Tensor fill_(const Tensor& self, const Scalar& value) {
  SDK_OP("aten::fill_.Scalar", Tensor(const Tensor&, const Scalar&));
  return op.call(self, value);
}

Tensor resize_(const Tensor& self, IntArrayRef size) {
  SDK_OP("aten::resize_", Tensor(const Tensor&, IntArrayRef, std::optional<int64_t>));
  return op.call(self, size, std::nullopt);
}

Tensor view(const Tensor& self, IntArrayRef size) {
  SDK_OP("aten::view", Tensor(const Tensor&, IntArrayRef));
  return op.call(self, size);
}

Tensor as_strided(const Tensor& self, IntArrayRef size, IntArrayRef stride, std::optional<int64_t> storage_offset) {
  SDK_OP("aten::as_strided", Tensor(const Tensor&, IntArrayRef, IntArrayRef, std::optional<int64_t>));
  return op.call(self, size, stride, storage_offset);
}

using OptionalTensors = ArrayRef<std::optional<Tensor>>;

Tensor index(const Tensor& self, OptionalTensors indices) {
  SDK_OP("aten::index.Tensor", Tensor(const Tensor&, OptionalTensors));
  return op.call(self, indices);
}

Tensor index_put_(const Tensor& self, OptionalTensors indices, const Tensor& values, bool accumulate) {
  SDK_OP("aten::index_put_", Tensor(const Tensor&, OptionalTensors, const Tensor&, bool));
  return op.call(self, indices, values, accumulate);
}

Tensor index_put(const Tensor& self, OptionalTensors indices, const Tensor& values, bool accumulate) {
  SDK_OP("aten::index_put", Tensor(const Tensor&, OptionalTensors, const Tensor&, bool));
  return op.call(self, indices, values, accumulate);
}

Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  SDK_OP("aten::index_select", Tensor(const Tensor&, int64_t, const Tensor&));
  return op.call(self, dim, index);
}

Tensor gather(const Tensor& self, int64_t dim, const Tensor& index, bool sparse_grad) {
  SDK_OP("aten::gather", Tensor(const Tensor&, int64_t, const Tensor&, bool));
  return op.call(self, dim, index, sparse_grad);
}

Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  SDK_OP("aten::scatter.src", Tensor(const Tensor&, int64_t, const Tensor&, const Tensor&));
  return op.call(self, dim, index, src);
}

Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  SDK_OP("aten::scatter.value", Tensor(const Tensor&, int64_t, const Tensor&, const Scalar&));
  return op.call(self, dim, index, value);
}

Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  SDK_OP("aten::scatter_add", Tensor(const Tensor&, int64_t, const Tensor&, const Tensor&));
  return op.call(self, dim, index, src);
}

Tensor masked_select(const Tensor& self, const Tensor& mask) {
  SDK_OP("aten::masked_select", Tensor(const Tensor&, const Tensor&));
  return op.call(self, mask);
}

Tensor nonzero(const Tensor& self) {
  SDK_OP("aten::nonzero", Tensor(const Tensor&));
  return op.call(self);
}

Tensor take(const Tensor& self, const Tensor& index) {
  SDK_OP("aten::take", Tensor(const Tensor&, const Tensor&));
  return op.call(self, index);
}

Tensor flip(const Tensor& self, IntArrayRef dims) {
  SDK_OP("aten::flip", Tensor(const Tensor&, IntArrayRef));
  return op.call(self, dims);
}

Tensor _to_copy(const Tensor& self, std::optional<ScalarType> dtype, std::optional<Device> device, bool non_blocking) {
  SDK_OP("aten::_to_copy", Tensor(const Tensor&, std::optional<ScalarType>, std::optional<int64_t>,
                                  std::optional<Device>, std::optional<bool>, bool, std::optional<int64_t>));
  return op.call(self, dtype, std::nullopt, device, std::nullopt, non_blocking, std::nullopt);
}

Tensor to(const Tensor& self, ScalarType dtype, bool non_blocking, bool copy) {
  SDK_OP("aten::to.dtype", Tensor(const Tensor&, ScalarType, bool, bool, std::optional<int64_t>));
  return op.call(self, dtype, non_blocking, copy, std::nullopt);
}

Scalar _local_scalar_dense(const Tensor& self) {
  SDK_OP("aten::_local_scalar_dense", Scalar(const Tensor&));
  return op.call(self);
}

Scalar item(const Tensor& self) { return _local_scalar_dense(self); }


// ---- MathFunctions.h: what the derivative formulas call ----
Tensor sub(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  SDK_OP("aten::sub.Tensor", Tensor(const Tensor&, const Tensor&, const Scalar&));
  return op.call(self, other, alpha);
}
Tensor rsub(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  SDK_OP("aten::rsub.Scalar", Tensor(const Tensor&, const Scalar&, const Scalar&));
  return op.call(self, other, alpha);
}
Tensor div(const Tensor& self, const Tensor& other) {
  SDK_OP("aten::div.Tensor", Tensor(const Tensor&, const Tensor&));
  return op.call(self, other);
}
Tensor div(const Tensor& self, const Scalar& other) {
  SDK_OP("aten::div.Scalar", Tensor(const Tensor&, const Scalar&));
  return op.call(self, other);
}
#define SDK_UNARY(fn)                                 \
  Tensor fn(const Tensor& self) {                     \
    SDK_OP("aten::" #fn, Tensor(const Tensor&));      \
    return op.call(self);                             \
  }
SDK_UNARY(neg)
SDK_UNARY(exp)
SDK_UNARY(tanh)
SDK_UNARY(sigmoid)
SDK_UNARY(cos)
SDK_UNARY(sin)
SDK_UNARY(t)
#undef SDK_UNARY
Tensor pow(const Tensor& self, const Scalar& exponent) {
  SDK_OP("aten::pow.Tensor_Scalar", Tensor(const Tensor&, const Scalar&));
  return op.call(self, exponent);
}
Tensor gt(const Tensor& self, const Scalar& other) {
  SDK_OP("aten::gt.Scalar", Tensor(const Tensor&, const Scalar&));
  return op.call(self, other);
}
Tensor sum(const Tensor& self, IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) {
  SDK_OP("aten::sum.dim_IntList",
         Tensor(const Tensor&, std::optional<IntArrayRef>, bool, std::optional<ScalarType>));
  return op.call(self, std::optional<IntArrayRef>(dim), keepdim, dtype);
}

Tensor expand_to(const Tensor& self, IntArrayRef size) {
  const int64_t n = static_cast<int64_t>(size.size());
  const int64_t lead = n - self.dim();
  SDK_CHECK(lead >= 0, "expand: the number of sizes provided (", n,
            ") must be greater or equal to the number of dimensions in the tensor (", self.dim(), ")");
  std::vector<int64_t> strides(size.size(), 0);
  for (int64_t i = 0; i < self.dim(); ++i) {
    const int64_t s = self.size(i);
    SDK_CHECK(s == size[lead + i] || s == 1, "The expanded size of the tensor (", size[lead + i],
              ") must match the existing size (", s, ") at non-singleton dimension ", lead + i);
    strides[lead + i] = s == 1 && size[lead + i] != 1 ? 0 : self.stride(i);
  }
  return as_strided(self, size, strides, self.storage_offset());
}

Tensor full_like_sized(const Tensor& self, IntArrayRef size, const Scalar& value) {
  Tensor out = empty(size, self.dtype(), self.device());
  fill_(out, value);
  return out;
}

Tensor sum_to(const Tensor& self, IntArrayRef shape) {
  if (self.sizes().equals(shape)) return self;
  const int64_t lead = self.dim() - static_cast<int64_t>(shape.size());
  SDK_CHECK(lead >= 0, "sum_to: cannot reduce a tensor of ", self.dim(), " dimensions to ", shape.size());
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < lead; ++i) dims.push_back(i);
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1 && self.size(lead + static_cast<int64_t>(i)) != 1) dims.push_back(lead + static_cast<int64_t>(i));
  }
  Tensor r = dims.empty() ? self : sum(self, dims, /*keepdim=*/true);
  if (lead == 0) return r;
  return view(r, shape);  // a fresh (contiguous) sum: dropping its leading size-1 dimensions is a view
}

#undef SDK_OP

}  // namespace sdk::ops
