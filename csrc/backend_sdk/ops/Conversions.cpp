// Conversions and shape composites:
//   _to_copy                         CompositeExplicitAutograd: empty_strided + copy_, the one primitive
//                                    every `to` goes through (a backend overrides it for faster transfers)
//   to.dtype, to.device, to.other,
//   to.dtype_layout                  CompositeImplicitAutograd: self when nothing changes and copy=False,
//                                    else _to_copy (PyTorch's aliasing rule)
//   flatten.using_ints, t            CompositeImplicitAutograd / CompositeExplicitAutograd views
//
// Note [Memory format of copies]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// memory_format is PyTorch's enum as an int (Note [Memory formats],
// ops/detail/MemoryFormat.h). preserve_format (the default) keeps self's
// strides when self is non-overlapping and dense (a transposed matrix stays
// transposed), else the copy takes the format self suggests (channels_last
// or contiguous), as in PyTorch's empty_like. contiguous_format,
// channels_last and channels_last_3d give the strides of that format.
#include <algorithm>
#include <numeric>

#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/Functions.h>
#include <backend_sdk/ops/detail/Geometry.h>
#include <backend_sdk/ops/detail/MemoryFormat.h>

namespace sdk::ops {
namespace {

// True when self's elements fill a block of storage without gaps or overlap, in some dim order.
bool non_overlapping_and_dense(const Tensor& t) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) > 1) dims.push_back(d);
  }
  std::sort(dims.begin(), dims.end(), [&](int64_t a, int64_t b) { return t.stride(a) < t.stride(b); });
  int64_t expected = 1;
  for (int64_t d : dims) {
    if (t.stride(d) != expected) return false;
    expected *= t.size(d);
  }
  return true;
}

// Strides of a copy of self (see Note [Memory format of copies]).
DimVector copy_strides(const Tensor& self, std::optional<int64_t> memory_format) {
  const int64_t fmt = memory_format.value_or(kPreserveFormat);
  if (fmt == kPreserveFormat) {
    if (self.numel() > 0 && !self.is_contiguous() && non_overlapping_and_dense(self)) {
      return DimVector(self.strides());
    }
    return memory_format_strides(self.sizes(), suggest_memory_format(self), "_to_copy");
  }
  return memory_format_strides(self.sizes(), fmt, "_to_copy");
}

Tensor to_copy_kernel(const Tensor& self, std::optional<ScalarType> dtype, std::optional<int64_t> layout,
                      std::optional<Device> device, std::optional<bool> pin_memory, bool non_blocking,
                      std::optional<int64_t> memory_format) {
  SDK_CHECK_VALUE(!layout || *layout == 0, "_to_copy: only the strided layout is supported");
  SDK_CHECK_VALUE(!pin_memory || !*pin_memory, "_to_copy: pin_memory=True is not supported");
  Tensor out = empty_strided(self.sizes(), copy_strides(self, memory_format), dtype.value_or(self.dtype()),
                             device.value_or(self.device()));
  copy_(out, self, non_blocking);
  out.storage()->reset_version();  // a new tensor: its fill is not a write (StorageImpl::reset_version)
  return out;
}

// clone(Tensor self, *, MemoryFormat? memory_format=None): _to_copy without
// dtype or device changes (its own operator, as in PyTorch, so that a call
// costs one dispatch and autograd names it CloneBackward0).
Tensor clone_kernel(const Tensor& self, std::optional<int64_t> memory_format) {
  Tensor out = empty_strided(self.sizes(), copy_strides(self, memory_format), self.dtype(), self.device());
  copy_(out, self, false);
  out.storage()->reset_version();  // a new tensor: its fill is not a write (StorageImpl::reset_version)
  return out;
}

using ToCopySig = Tensor(const Tensor&, std::optional<ScalarType>, std::optional<int64_t>, std::optional<Device>,
                         std::optional<bool>, bool, std::optional<int64_t>);

// A device without an index ("accel") matches any device of its type.
bool same_device(Device requested, Device actual) {
  return requested.type == actual.type && (requested.index < 0 || requested.index == actual.index);
}

Tensor to_impl(const Tensor& self, std::optional<ScalarType> dtype, std::optional<Device> device, bool non_blocking,
               bool copy, std::optional<int64_t> memory_format) {
  const bool same_dtype = !dtype || *dtype == self.dtype();
  const bool same_dev = !device || same_device(*device, self.device());
  const int64_t fmt = memory_format.value_or(kPreserveFormat);
  const bool same_format = fmt == kPreserveFormat || is_contiguous_as(self, fmt);
  if (!copy && same_dtype && same_dev && same_format) return self;
  static const auto op = Dispatcher::singleton().find_schema_or_throw("aten::_to_copy").typed<ToCopySig>();
  std::optional<Device> target = device;
  if (device && device->index < 0 && device->type == self.device().type) target = self.device();
  return op.call(self, dtype, std::nullopt, target, std::nullopt, non_blocking, memory_format);
}

Tensor to_dtype_layout(const Tensor& self, std::optional<ScalarType> dtype, std::optional<int64_t> layout,
                       std::optional<Device> device, std::optional<bool> pin_memory, bool non_blocking, bool copy,
                       std::optional<int64_t> memory_format) {
  SDK_CHECK_VALUE(!layout || *layout == 0, "to: only the strided layout is supported");
  SDK_CHECK_VALUE(!pin_memory || !*pin_memory, "to: pin_memory=True is not supported");
  return to_impl(self, dtype, device, non_blocking, copy, memory_format);
}
Tensor to_device(const Tensor& self, Device device, ScalarType dtype, bool non_blocking, bool copy,
                 std::optional<int64_t> memory_format) {
  return to_impl(self, dtype, device, non_blocking, copy, memory_format);
}
Tensor to_dtype(const Tensor& self, ScalarType dtype, bool non_blocking, bool copy,
                std::optional<int64_t> memory_format) {
  return to_impl(self, dtype, std::nullopt, non_blocking, copy, memory_format);
}
Tensor to_other(const Tensor& self, const Tensor& other, bool non_blocking, bool copy,
                std::optional<int64_t> memory_format) {
  return to_impl(self, other.dtype(), other.device(), non_blocking, copy, memory_format);
}

// flatten: a view when the strides allow it, else a copy (reshape's rule); self itself when nothing merges.
Tensor flatten_kernel(const Tensor& self, int64_t start_dim, int64_t end_dim) {
  if (self.dim() == 0) return view(self, {1});
  const int64_t s = maybe_wrap_dim(start_dim, self.dim());
  const int64_t e = maybe_wrap_dim(end_dim, self.dim());
  SDK_CHECK_VALUE(s <= e, "flatten() has invalid args: start_dim cannot come after end_dim");
  if (s == e) return self;
  DimVector sizes;
  for (int64_t d = 0; d < s; ++d) sizes.push_back(self.size(d));
  int64_t merged = 1;
  for (int64_t d = s; d <= e; ++d) merged *= self.size(d);
  sizes.push_back(merged);
  for (int64_t d = e + 1; d < self.dim(); ++d) sizes.push_back(self.size(d));
  if (compute_view_strides(self.sizes(), self.strides(), sizes)) return view(self, sizes);
  Tensor copy = copy_(empty(self.sizes(), self.dtype(), self.device()), self);
  copy.storage()->reset_version();  // a new tensor: its fill is not a write (StorageImpl::reset_version)
  return view(copy, sizes);
}

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_IMPL(aten, CompositeExplicitAutograd, m) {
  m.impl("_to_copy", &sdk::ops::to_copy_kernel);
  m.impl("clone", &sdk::ops::clone_kernel);
}

SDK_LIBRARY_IMPL(aten, CompositeImplicitAutograd, m) {
  m.impl("to.dtype_layout", &sdk::ops::to_dtype_layout);
  m.impl("to.device", &sdk::ops::to_device);
  m.impl("to.dtype", &sdk::ops::to_dtype);
  m.impl("to.other", &sdk::ops::to_other);
  m.impl("flatten.using_ints", &sdk::ops::flatten_kernel);
}
