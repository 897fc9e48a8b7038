// The view operators: new geometry over self's storage, never a copy.
//
// Note [View operators]
// ~~~~~~~~~~~~~~~~~~~~~
// Every view operator of PyTorch's (view, expand, t, transpose.int, permute,
// select.int, slice.Tensor, unsqueeze, squeeze / squeeze.dim / squeeze.dims,
// alias, detach, diagonal, unfold, as_strided) is an operator of its own with
// PyTorch 2.13's schema, registered once under CompositeExplicitAutograd so
// every backend, present or future (cpu, accel, a Python device, Meta and fake
// tensors), shares its kernel: a view needs no device code. The kernels compute
// the geometry and call make_view directly (no nested as_strided dispatch), so
// the view creation hook (Note [View creation hook]) tracks the base exactly as
// before (Note [View creation meta]), a __torch_dispatch__ handler sees the
// operator the user called (aten::transpose.int, not aten::as_strided), and
// autograd records the operator's own node with its fast backward
// (TransposeBackward0, SelectBackward0, ...: autograd/derivatives.def). narrow
// is CompositeImplicitAutograd as in PyTorch (slice.Tensor through the
// dispatcher, so autograd records SliceBackward0). detach makes an alias that is
// not a view (no view creation hook: PyTorch's detach() is not _is_view()).
// Errors are PyTorch's texts and types: IndexError for dims and indices out of
// range, RuntimeError (ours: a ValueError too) for bad geometry.
#include <algorithm>

#include <backend_sdk/dispatch/Dispatcher.h>
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
// geometry of their out-of-place views (backend_sdk/_tensor_methods.py).
Tensor as_strided__kernel(const Tensor& self, IntArrayRef size, IntArrayRef stride, std::optional<int64_t> storage_offset) {
  Tensor v = as_strided_kernel(self, size, stride, storage_offset);
  self.impl()->set_sizes_and_strides(v.sizes(), v.strides(), v.storage_offset());
  self.impl()->bump_version();  // an in-place operator, as PyTorch counts transpose_ and t_
  return self;
}

// ---- Note [View operators] ----
Tensor same_geometry(const Tensor& self, const char* op) {
  return make_view(self, self.sizes(), self.strides(), self.storage_offset(), op);
}

Tensor alias_kernel(const Tensor& self) { return same_geometry(self, "alias"); }

// An alias of self's memory that autograd does not track as a view (Note [View operators]).
Tensor detach_kernel(const Tensor& self) {
  auto impl = make_intrusive<TensorImpl>(self.storage(), self.dtype(), self.device(), self.key_set());
  impl->set_sizes_and_strides(self.sizes(), self.strides(), self.storage_offset());
  impl->set_inference(self.impl()->is_inference());
  return Tensor(std::move(impl));
}

Tensor transpose_kernel(const Tensor& self, int64_t dim0, int64_t dim1) {
  const int64_t n = self.dim();
  const int64_t d0 = maybe_wrap_dim(dim0, n);
  const int64_t d1 = maybe_wrap_dim(dim1, n);
  if (n == 0) return same_geometry(self, "transpose");
  DimVector sizes(self.sizes()), strides(self.strides());
  std::swap(sizes[d0], sizes[d1]);
  std::swap(strides[d0], strides[d1]);
  return make_view(self, sizes, strides, self.storage_offset(), "transpose");
}

Tensor t_kernel(const Tensor& self) {
  SDK_CHECK_VALUE(self.dim() <= 2, "t() expects a tensor with <= 2 dimensions, but self is ", self.dim(), "D");
  return transpose_kernel(self, 0, self.dim() < 2 ? 0 : 1);
}

Tensor permute_kernel(const Tensor& self, IntArrayRef dims) {
  const int64_t n = self.dim();
  SDK_CHECK_VALUE(static_cast<int64_t>(dims.size()) == n,
                  "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the "
                  "desired ordering of dimensions i.e. input.dim() = ", n, " is not equal to len(dims) = ",
                  dims.size());
  DimVector sizes, strides;
  std::vector<bool> seen(static_cast<size_t>(n), false);
  for (int64_t d : dims) {
    const int64_t w = maybe_wrap_dim(d, n);
    SDK_CHECK_VALUE(!seen[static_cast<size_t>(w)], "permute(): duplicate dims are not allowed.");
    seen[static_cast<size_t>(w)] = true;
    sizes.push_back(self.size(w));
    strides.push_back(self.stride(w));
  }
  return make_view(self, sizes, strides, self.storage_offset(), "permute");
}

Tensor select_kernel(const Tensor& self, int64_t dim, int64_t index) {
  const int64_t n = self.dim();
  SDK_CHECK_INDEX(n > 0, "select() cannot be applied to a 0-dim tensor.");
  const int64_t d = maybe_wrap_dim(dim, n);
  const int64_t size = self.size(d);
  SDK_CHECK_INDEX(index >= -size && index < size, "select(): index ", index, " out of range for tensor of size ",
                  self.sizes(), " at dimension ", d);
  if (index < 0) index += size;
  DimVector sizes(self.sizes()), strides(self.strides());
  const int64_t offset = self.storage_offset() + index * strides[d];
  sizes.erase(static_cast<size_t>(d));
  strides.erase(static_cast<size_t>(d));
  return make_view(self, sizes, strides, offset, "select");
}

// PyTorch's slice: start and end wrap once and clamp to [0, size], end to at least start.
Tensor slice_kernel(const Tensor& self, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
                    int64_t step) {
  SDK_CHECK_VALUE(self.dim() > 0, "slice() cannot be applied to a 0-dim tensor.");
  SDK_CHECK_VALUE(step > 0, "slice step must be positive");
  const int64_t d = maybe_wrap_dim(dim, self.dim());
  const int64_t size = self.size(d);
  auto clamp = [size](int64_t v) {
    if (v < 0) v += size;
    return std::min(std::max<int64_t>(v, 0), size);
  };
  const int64_t b = start ? clamp(*start) : 0;
  const int64_t e = std::max(end ? clamp(*end) : size, b);
  const int64_t length = (e - b + step - 1) / step;
  DimVector sizes(self.sizes()), strides(self.strides());
  // An empty result keeps self's offset: its offset is never addressed and start * stride need not
  // lie in the storage (Composite.cpp's narrow does the same).
  const int64_t offset = self.storage_offset() + (length > 0 ? b * strides[d] : 0);
  sizes[d] = length;
  strides[d] *= step;
  return make_view(self, sizes, strides, offset, "slice");
}

// CompositeImplicitAutograd: slice.Tensor through the dispatcher (Note [View operators]).
Tensor narrow_kernel(const Tensor& self, int64_t dim, int64_t start, int64_t length) {
  SDK_CHECK_VALUE(self.dim() > 0, "narrow() cannot be applied to a 0-dim tensor.");
  SDK_CHECK_VALUE(length >= 0, "narrow(): length must be non-negative.");
  const int64_t d = maybe_wrap_dim(dim, self.dim());
  const int64_t size = self.size(d);
  SDK_CHECK_INDEX(start >= -size && start <= size, "start out of range (expected to be in range of [", -size, ", ",
                  size, "], but got ", start, ")");
  if (start < 0) start += size;
  SDK_CHECK_VALUE(start <= size - length, "start (", start, ") + length (", length, ") exceeds dimension size (",
                  size, ").");
  static const auto slice = Dispatcher::singleton().find_schema_or_throw("aten::slice.Tensor").typed<
      Tensor(const Tensor&, int64_t, std::optional<int64_t>, std::optional<int64_t>, int64_t)>();
  return slice.call(self, d, start, start + length, 1);
}

Tensor unsqueeze_kernel(const Tensor& self, int64_t dim) {
  const int64_t d = maybe_wrap_dim(dim, self.dim() + 1);
  DimVector sizes(self.sizes()), strides(self.strides());
  const int64_t stride = d < self.dim() ? sizes[d] * strides[d] : 1;
  sizes.insert(static_cast<size_t>(d), 1);
  strides.insert(static_cast<size_t>(d), stride);
  return make_view(self, sizes, strides, self.storage_offset(), "unsqueeze");
}

// Drops the size-1 dims flagged in `drop` (one flag per dim).
Tensor squeeze_flagged(const Tensor& self, const std::vector<bool>& drop) {
  DimVector sizes, strides;
  for (int64_t i = 0; i < self.dim(); ++i) {
    if (drop[static_cast<size_t>(i)] && self.size(i) == 1) continue;
    sizes.push_back(self.size(i));
    strides.push_back(self.stride(i));
  }
  return make_view(self, sizes, strides, self.storage_offset(), "squeeze");
}

Tensor squeeze_kernel(const Tensor& self) {
  return squeeze_flagged(self, std::vector<bool>(static_cast<size_t>(self.dim()), true));
}

Tensor squeeze_dims_kernel(const Tensor& self, IntArrayRef dims) {
  std::vector<bool> drop(static_cast<size_t>(self.dim()), false);
  for (int64_t d : dims) {
    const int64_t w = maybe_wrap_dim(d, self.dim());
    if (self.dim() > 0) drop[static_cast<size_t>(w)] = true;
  }
  return squeeze_flagged(self, drop);
}

Tensor squeeze_dim_kernel(const Tensor& self, int64_t dim) {
  const int64_t d[1] = {dim};
  return squeeze_dims_kernel(self, IntArrayRef(d, 1));
}

Tensor expand_kernel(const Tensor& self, IntArrayRef size, bool /*implicit*/) {
  const int64_t n = static_cast<int64_t>(size.size());
  const int64_t lead = n - self.dim();
  SDK_CHECK_VALUE(lead >= 0, "expand: the number of sizes provided (", n,
                  ") must be greater or equal to the number of dimensions in the tensor (", self.dim(), ")");
  DimVector sizes, strides;
  for (int64_t i = 0; i < n; ++i) {
    int64_t s = size[i];
    if (i < lead) {
      SDK_CHECK_VALUE(s >= 0, "The expanded size of the tensor (", s,
                      ") isn't allowed in a leading, non-existing dimension ", i);
      sizes.push_back(s);
      strides.push_back(0);
      continue;
    }
    const int64_t own = self.size(i - lead);
    int64_t stride = self.stride(i - lead);
    if (s == -1) s = own;
    if (own != s) {
      SDK_CHECK_VALUE(own == 1, "The expanded size of the tensor (", s, ") must match the existing size (", own,
                      ") at non-singleton dimension ", i, ".  Target sizes: ", size, ".  Tensor sizes: ",
                      self.sizes());
      stride = 0;
    }
    sizes.push_back(s);
    strides.push_back(stride);
  }
  checked_numel(sizes, "expand");
  return make_view(self, sizes, strides, self.storage_offset(), "expand");
}

Tensor diagonal_kernel(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2) {
  const int64_t d1 = maybe_wrap_dim(dim1, self.dim());
  const int64_t d2 = maybe_wrap_dim(dim2, self.dim());
  SDK_CHECK_VALUE(d1 != d2, "diagonal dimensions cannot be identical ", dim1, ", ", dim2);
  int64_t len = offset >= 0 ? std::min(self.size(d1), self.size(d2) - offset)
                            : std::min(self.size(d1) + offset, self.size(d2));
  len = std::max<int64_t>(len, 0);
  int64_t start = self.storage_offset();
  if (len > 0) start += offset >= 0 ? offset * self.stride(d2) : -offset * self.stride(d1);
  DimVector sizes, strides;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d == d1 || d == d2) continue;
    sizes.push_back(self.size(d));
    strides.push_back(self.stride(d));
  }
  sizes.push_back(len);
  strides.push_back(self.stride(d1) + self.stride(d2));
  return make_view(self, sizes, strides, start, "diagonal");
}

// Windows of `size` elements every `step` along `dimension`, as a new last dim.
Tensor unfold_kernel(const Tensor& self, int64_t dimension, int64_t size, int64_t step) {
  const int64_t d = maybe_wrap_dim(dimension, self.dim());
  const int64_t extent = self.dim() == 0 ? 1 : self.size(d);
  SDK_CHECK_VALUE(size <= extent, "maximum size for tensor at dimension ", d, " is ", extent, " but size is ", size);
  SDK_CHECK_VALUE(step > 0, "step is ", step, " but must be > 0");
  SDK_CHECK_VALUE(size >= 0, "size is ", size, " but must be >= 0");
  DimVector sizes(self.sizes()), strides(self.strides());
  const int64_t inner = self.dim() == 0 ? 1 : strides[d];
  if (self.dim() > 0) {
    sizes[d] = (extent - size) / step + 1;
    strides[d] *= step;
  }
  sizes.push_back(size);
  strides.push_back(inner);
  return make_view(self, sizes, strides, self.storage_offset(), "unfold");
}

}  // namespace

// ---- the in-place view operators (t_, transpose_, squeeze_, unsqueeze_): self takes the view's
// geometry, as as_strided_ (an in-place operator: the version is bumped, as PyTorch counts them) ----
Tensor take_geometry(const Tensor& self, const Tensor& v) {
  self.impl()->set_sizes_and_strides(v.sizes(), v.strides(), v.storage_offset());
  self.impl()->bump_version();
  return self;
}
Tensor t__kernel(const Tensor& self) { return take_geometry(self, t_kernel(self)); }
Tensor transpose__kernel(const Tensor& self, int64_t dim0, int64_t dim1) {
  return take_geometry(self, transpose_kernel(self, dim0, dim1));
}
Tensor squeeze__kernel(const Tensor& self) { return take_geometry(self, squeeze_kernel(self)); }
Tensor squeeze__dim_kernel(const Tensor& self, int64_t dim) { return take_geometry(self, squeeze_dim_kernel(self, dim)); }
Tensor squeeze__dims_kernel(const Tensor& self, IntArrayRef dims) {
  return take_geometry(self, squeeze_dims_kernel(self, dims));
}
Tensor unsqueeze__kernel(const Tensor& self, int64_t dim) { return take_geometry(self, unsqueeze_kernel(self, dim)); }

}  // namespace sdk::ops

SDK_LIBRARY_FRAGMENT(aten, m) {
  m.def("as_strided_(Tensor(a!) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a!)");
  m.def("t_(Tensor(a!) self) -> Tensor(a!)");
  m.def("transpose_(Tensor(a!) self, int dim0, int dim1) -> Tensor(a!)");
  m.def("squeeze_(Tensor(a!) self) -> Tensor(a!)");
  m.def("squeeze_.dim(Tensor(a!) self, int dim) -> Tensor(a!)");
  m.def("squeeze_.dims(Tensor(a!) self, int[] dim) -> Tensor(a!)");
  m.def("unsqueeze_(Tensor(a!) self, int dim) -> Tensor(a!)");
  // Note [View operators]: PyTorch 2.13's schemas (native_functions.yaml).
  m.def("alias(Tensor(a) self) -> Tensor(a)");
  m.def("detach(Tensor(a) self) -> Tensor(a)");
  m.def("transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)");
  m.def("permute(Tensor(a) self, int[] dims) -> Tensor(a)");
  m.def("select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)");
  m.def("slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)");
  m.def("narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)");
  m.def("unsqueeze(Tensor(a) self, int dim) -> Tensor(a)");
  m.def("squeeze(Tensor(a) self) -> Tensor(a)");
  m.def("squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)");
  m.def("squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)");
  m.def("expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)");
  m.def("unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)");
}

SDK_LIBRARY_IMPL(aten, CompositeExplicitAutograd, m) {
  m.impl("view", &sdk::ops::view_kernel);
  m.impl("as_strided", &sdk::ops::as_strided_kernel);
  m.impl("as_strided_", &sdk::ops::as_strided__kernel);
  m.impl("t_", &sdk::ops::t__kernel);
  m.impl("transpose_", &sdk::ops::transpose__kernel);
  m.impl("squeeze_", &sdk::ops::squeeze__kernel);
  m.impl("squeeze_.dim", &sdk::ops::squeeze__dim_kernel);
  m.impl("squeeze_.dims", &sdk::ops::squeeze__dims_kernel);
  m.impl("unsqueeze_", &sdk::ops::unsqueeze__kernel);
  m.impl("alias", &sdk::ops::alias_kernel);
  m.impl("detach", &sdk::ops::detach_kernel);
  m.impl("t", &sdk::ops::t_kernel);
  m.impl("transpose.int", &sdk::ops::transpose_kernel);
  m.impl("permute", &sdk::ops::permute_kernel);
  m.impl("select.int", &sdk::ops::select_kernel);
  m.impl("slice.Tensor", &sdk::ops::slice_kernel);
  m.impl("unsqueeze", &sdk::ops::unsqueeze_kernel);
  m.impl("squeeze", &sdk::ops::squeeze_kernel);
  m.impl("squeeze.dim", &sdk::ops::squeeze_dim_kernel);
  m.impl("squeeze.dims", &sdk::ops::squeeze_dims_kernel);
  m.impl("expand", &sdk::ops::expand_kernel);
  m.impl("diagonal", &sdk::ops::diagonal_kernel);
  m.impl("unfold", &sdk::ops::unfold_kernel);
}

SDK_LIBRARY_IMPL(aten, CompositeImplicitAutograd, m) {
  m.impl("narrow", &sdk::ops::narrow_kernel);
}
