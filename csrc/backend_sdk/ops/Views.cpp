// view and as_strided: new geometry over self's storage, never a copy.
// Registered once under CompositeExplicitAutograd so every backend, present
// or future, shares them (a view needs no device code).
#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/detail/Geometry.h>

namespace sdk::ops {
namespace {

// See Note [View strides].
Tensor view_kernel(const Tensor& self, IntArrayRef size) {
  DimVector shape = infer_view_size(size, self.numel(), "view");
  std::optional<DimVector> strides = compute_view_strides(self.sizes(), self.strides(), shape);
  SDK_CHECK_VALUE(strides.has_value(),
                  "view: view size is not compatible with input tensor's size and stride (at least one dimension "
                  "spans across two contiguous subspaces). Use .reshape(...) instead.");
  return make_view(self, shape, *strides, self.storage_offset(), "view");
}

// storage_offset defaults to self's own offset. The geometry must stay
// inside the storage (make_view checks, after the overflow check here).
Tensor as_strided_kernel(const Tensor& self, IntArrayRef size, IntArrayRef stride,
                         std::optional<int64_t> storage_offset) {
  const char* op = "as_strided";
  SDK_CHECK_VALUE(size.size() == stride.size(), op, ": mismatch in length of strides and shape");
  checked_numel(size, op);
  for (int64_t s : stride) {
    SDK_CHECK_VALUE(s >= 0, op, ": Negative strides are not supported at the moment, got strides: ", stride);
  }
  const int64_t offset = storage_offset.value_or(self.storage_offset());
  SDK_CHECK_VALUE(offset >= 0, op, ": Tensor: invalid storage offset ", offset);
  checked_storage_nbytes(size, stride, self.itemsize(), offset, op);
  return make_view(self, size, stride, offset, op);
}

// The in-place form: self takes the geometry as_strided would give a view (the same checks), keeping
// its storage and identity. transpose_, t_, squeeze_, unsqueeze_ and swapdims_ are this with the
// geometry of their out-of-place views (backend_sdk/_tensor.py).
Tensor as_strided__kernel(const Tensor& self, IntArrayRef size, IntArrayRef stride, std::optional<int64_t> storage_offset) {
  Tensor v = as_strided_kernel(self, size, stride, storage_offset);
  self.impl()->set_sizes_and_strides(v.sizes(), v.strides(), v.storage_offset());
  self.impl()->bump_version();  // an in-place operator, as PyTorch counts transpose_ and t_
  return self;
}

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_FRAGMENT(aten, m) {
  m.def("as_strided_(Tensor(a!) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a!)");
}

SDK_LIBRARY_IMPL(aten, CompositeExplicitAutograd, m) {
  m.impl("view", &sdk::ops::view_kernel);
  m.impl("as_strided", &sdk::ops::as_strided_kernel);
  m.impl("as_strided_", &sdk::ops::as_strided__kernel);
}
