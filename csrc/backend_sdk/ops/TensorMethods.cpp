// The C++ Tensor methods (Note [C++ Tensor methods], tensor/Tensor.h): thin calls
// into the generated operator API, each one dispatcher call (contiguous and
// reshape decide first whether any call is needed, as PyTorch's composites do).
#include <backend_sdk/ops/Operators.h>
#include <backend_sdk/ops/detail/Geometry.h>

namespace sdk {

namespace {
constexpr int64_t kContiguousFormat = 0;  // MemoryFormat::Contiguous (backend_sdk/_formats.py)
}  // namespace

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return ops::_to_copy(*this, {}, {}, {}, {}, false, kContiguousFormat);
}
Tensor Tensor::to(ScalarType dtype, bool non_blocking, bool copy) const {
  return ops::to(*this, dtype, non_blocking, copy);
}
Tensor Tensor::to(Device device, bool non_blocking, bool copy) const {
  return ops::to(*this, {}, {}, device, {}, non_blocking, copy, {});
}
Tensor Tensor::to(Device device, ScalarType dtype, bool non_blocking, bool copy) const {
  return ops::to(*this, device, dtype, non_blocking, copy);
}
Tensor Tensor::view(IntArrayRef size) const { return ops::view(*this, size); }
// A view when the strides allow one (Note [View strides]), else a contiguous copy viewed.
Tensor Tensor::reshape(IntArrayRef size) const {
  DimVector shape = ops::infer_view_size(size, numel(), "reshape");
  if (ops::compute_view_strides(sizes(), strides(), shape)) return ops::view(*this, shape);
  return contiguous().view(shape);
}
Tensor Tensor::expand(IntArrayRef size, bool implicit) const { return ops::expand(*this, size, implicit); }
Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const { return ops::flatten(*this, start_dim, end_dim); }
Tensor Tensor::t() const { return ops::t(*this); }
Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const { return ops::transpose(*this, dim0, dim1); }
Tensor Tensor::permute(IntArrayRef dims) const { return ops::permute(*this, dims); }
Tensor Tensor::squeeze() const { return ops::squeeze(*this); }
Tensor Tensor::squeeze(int64_t dim) const { return ops::squeeze(*this, dim); }
Tensor Tensor::unsqueeze(int64_t dim) const { return ops::unsqueeze(*this, dim); }
Tensor Tensor::select(int64_t dim, int64_t index) const { return ops::select(*this, dim, index); }
Tensor Tensor::slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) const {
  return ops::slice(*this, dim, start, end, step);
}
Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
  return ops::narrow(*this, dim, start, length);
}
Tensor Tensor::clone() const { return ops::clone(*this); }
Tensor Tensor::sum(std::optional<ScalarType> dtype) const { return ops::sum(*this, dtype); }
Tensor Tensor::sum(IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return ops::sum(*this, dim, keepdim, dtype);
}
Tensor Tensor::add(const Tensor& other, const Scalar& alpha) const { return ops::add(*this, other, alpha); }
Tensor Tensor::add(const Scalar& other, const Scalar& alpha) const { return ops::add(*this, other, alpha); }
Tensor Tensor::sub(const Tensor& other, const Scalar& alpha) const { return ops::sub(*this, other, alpha); }
Tensor Tensor::sub(const Scalar& other, const Scalar& alpha) const { return ops::sub(*this, other, alpha); }
Tensor Tensor::mul(const Tensor& other) const { return ops::mul(*this, other); }
Tensor Tensor::mul(const Scalar& other) const { return ops::mul(*this, other); }
Tensor Tensor::div(const Tensor& other) const { return ops::div(*this, other); }
Tensor Tensor::div(const Scalar& other) const { return ops::div(*this, other); }
Tensor Tensor::neg() const { return ops::neg(*this); }
Tensor Tensor::add_(const Tensor& other, const Scalar& alpha) const { return ops::add_(*this, other, alpha); }
Tensor Tensor::sub_(const Tensor& other, const Scalar& alpha) const { return ops::sub_(*this, other, alpha); }
Tensor Tensor::mul_(const Tensor& other) const { return ops::mul_(*this, other); }
Tensor Tensor::div_(const Tensor& other) const { return ops::div_(*this, other); }
Tensor Tensor::copy_(const Tensor& src, bool non_blocking) const { return ops::copy_(*this, src, non_blocking); }
Tensor Tensor::fill_(const Scalar& value) const { return ops::fill_(*this, value); }
Tensor Tensor::zero_() const { return ops::zero_(*this); }
Scalar Tensor::item() const { return ops::item(*this); }

}  // namespace sdk
