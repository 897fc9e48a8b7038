#include <backend_sdk/ops/Functions.h>

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

#undef SDK_OP

}  // namespace sdk::ops
