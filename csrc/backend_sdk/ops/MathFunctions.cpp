#include <backend_sdk/ops/MathFunctions.h>

#include <backend_sdk/dispatch/Dispatcher.h>
#include <backend_sdk/ops/Functions.h>

namespace sdk::ops {

namespace {
template <typename Sig>
OperatorHandle::Typed<Sig> typed_op(const char* name) {
  return Dispatcher::singleton().find_schema_or_throw(name).typed<Sig>();
}
}  // namespace

#define SDK_OP(name, Sig) static const OperatorHandle::Typed<Sig> op = typed_op<Sig>(name)

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

}  // namespace sdk::ops
