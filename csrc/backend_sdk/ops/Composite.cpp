// Composite operators: defined in terms of other operators through the
// dispatcher, so every backend that implements the primitives gets them.
//   cat, stack            CompositeExplicitAutograd (empty + narrowed copy_)
//   repeat, masked_fill(_).Scalar CompositeExplicitAutograd
//   masked_fill(_).Tensor CompositeImplicitAutograd (where)
//   mse_loss              CompositeImplicitAutograd
//   split, split_with_sizes, chunk, unbind
//                         CompositeExplicitAutograd (views through as_strided)
//   softmax, log_softmax  CompositeImplicitAutograd (_softmax, _log_softmax: Softmax.cpp)
//   logsumexp             CompositeImplicitAutograd (amax, sub, exp, sum, log)
#include <cmath>
#include <unistd.h>

#include <backend_sdk/core/detail/SafeSize.h>
#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/Functions.h>
#include <backend_sdk/tensor/TensorImpl.h>

namespace sdk::ops {
namespace {

template <typename Sig>
OperatorHandle::Typed<Sig> op(const char* name) {
  return Dispatcher::singleton().find_schema_or_throw(name).typed<Sig>();
}

using Unary = Tensor(const Tensor&);
using Binary = Tensor(const Tensor&, const Tensor&);
using BinaryAlpha = Tensor(const Tensor&, const Tensor&, const Scalar&);
using AmaxSig = Tensor(const Tensor&, IntArrayRef, bool);
using SumSig = Tensor(const Tensor&, std::optional<IntArrayRef>, bool, std::optional<ScalarType>);

Tensor exp_(const Tensor& t) {
  static const auto f = op<Unary>("aten::exp");
  return f.call(t);
}
Tensor log_(const Tensor& t) {
  static const auto f = op<Unary>("aten::log");
  return f.call(t);
}
Tensor sub_(const Tensor& a, const Tensor& b) {
  static const auto f = op<BinaryAlpha>("aten::sub.Tensor");
  return f.call(a, b, Scalar(int64_t{1}));
}
Tensor amax_keep(const Tensor& t, IntArrayRef dims) {
  static const auto f = op<AmaxSig>("aten::amax");
  return f.call(t, dims, true);
}
Tensor sum_dims(const Tensor& t, IntArrayRef dims, bool keepdim) {
  static const auto f = op<SumSig>("aten::sum.dim_IntList");
  return f.call(t, std::optional<IntArrayRef>(dims), keepdim, std::nullopt);
}

// A view of t's elements [start, start + length) along dim.
Tensor narrow(const Tensor& t, int64_t dim, int64_t start, int64_t length) {
  DimVector sizes(t.sizes());
  sizes[dim] = length;
  // An empty tensor's strides can be huge ([2**32, 0] strides of the other dims): its offset is
  // never addressed and start * stride may not fit. A non-empty one's offset lies in its storage.
  const int64_t offset = t.numel() == 0 ? t.storage_offset() : t.storage_offset() + start * t.stride(dim);
  return as_strided(t, sizes, t.strides(), offset);
}

Tensor cat_impl(TensorList tensors, int64_t dim) {
  SDK_CHECK_VALUE(!tensors.empty(), "cat(): expected a non-empty list of Tensors");
  // As PyTorch: 1-D empty tensors are skipped (legacy behaviour).
  const Tensor* ref = nullptr;
  ResultTypeState dtypes;
  for (const Tensor& t : tensors) {
    dtypes.update_tensor(t.dtype(), std::max<int64_t>(t.dim(), 1), false);
    if (!(t.dim() == 1 && t.numel() == 0) && !ref) ref = &t;
  }
  if (!ref) ref = &tensors[0];
  SDK_CHECK_VALUE(ref->dim() > 0, "cat(): zero-dimensional tensor (at position 0) cannot be concatenated");
  int64_t d = maybe_wrap_dim(dim, ref->dim());
  DimVector sizes(ref->sizes());
  sizes[d] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (t.dim() == 1 && t.numel() == 0) continue;
    SDK_CHECK_VALUE(t.dim() == ref->dim(), "cat(): Tensors must have same number of dimensions: got ", ref->dim(),
                    " and ", t.dim());
    check_same_device("cat", *ref, t);
    for (int64_t k = 0; k < t.dim(); ++k) {
      SDK_CHECK_VALUE(k == d || t.size(k) == ref->size(k), "cat(): Sizes of tensors must match except in dimension ",
                      d, ". Expected size ", ref->size(k), " but got size ", t.size(k), " for tensor number ", i,
                      " in the list.");
    }
    // Sizes of expanded inputs can sum past int64 (Note [Size arithmetic overflow]).
    sizes[d] = safe_add(sizes[d], t.size(d), "cat()", "the sizes of the tensors in dimension ", d,
                        " add up to more than an int64 holds (at tensor number ", i, " of size ", t.size(d), ")");
  }
  Tensor out = empty(sizes, dtypes.result(), ref->device());
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    if (t.dim() == 1 && t.numel() == 0) continue;
    if (t.size(d) > 0) copy_(narrow(out, d, offset, t.size(d)), t);
    offset += t.size(d);
  }
  out.storage()->reset_version();  // a new tensor: filling it is not a write (StorageImpl::reset_version)
  return out;
}

Tensor stack_impl(TensorList tensors, int64_t dim) {
  SDK_CHECK_VALUE(!tensors.empty(), "stack expects a non-empty TensorList");
  int64_t d = maybe_wrap_dim(dim, tensors[0].dim() + 1);
  std::vector<Tensor> expanded;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    SDK_CHECK_VALUE(t.sizes().equals(tensors[0].sizes()), "stack expects each tensor to be equal size, but got ",
                    tensors[0].sizes(), " at entry 0 and ", t.sizes(), " at entry ", i);
    DimVector sizes(t.sizes()), strides(t.strides());
    sizes.insert(static_cast<size_t>(d), 1);
    strides.insert(static_cast<size_t>(d), 1);
    expanded.push_back(as_strided(t, sizes, strides, t.storage_offset()));
  }
  return cat_impl(expanded, d);
}

Tensor floating_input(const char* op_name, const Tensor& self, std::optional<ScalarType> dtype) {
  Tensor x = self;
  if (dtype && *dtype != self.dtype()) x = copy_(empty(self.sizes(), *dtype, self.device()), self);
  SDK_CHECK_TYPE(is_floating_type(x.dtype()), op_name, ": expected a floating point input, got ",
                 scalar_type_name(x.dtype()), " (pass dtype= to compute in a floating type)");
  return x;
}

// Note [Softmax operators]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// As PyTorch's: softmax.int / log_softmax.int are CompositeImplicitAutograd
// (the dtype cast, then _softmax / _log_softmax); _softmax / _log_softmax and
// their backward operators _softmax_backward_data / _log_softmax_backward_data
// are fused CPU and Meta kernels (Note [Fused softmax], Softmax.cpp), so
// autograd records SoftmaxBackward0 / LogSoftmaxBackward0 from derivatives.def,
// whose formulas call the backward operators; those have formulas of their own
// there (double backward).
template <bool kLog>
Tensor softmax_impl(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  Tensor x = floating_input(kLog ? "log_softmax" : "softmax", self, dtype);
  static const auto fused = op<Tensor(const Tensor&, int64_t, bool)>(kLog ? "aten::_log_softmax" : "aten::_softmax");
  return fused.call(x, dim, false);
}

Tensor logsumexp_impl(const Tensor& self, IntArrayRef dims, bool keepdim) {
  // As PyTorch: integral and bool inputs give a result of the default floating dtype.
  Tensor x = floating_input("logsumexp", self,
                            is_integral_type(self.dtype(), /*include_bool=*/true) ? std::optional<ScalarType>(default_dtype())
                                                                                 : std::nullopt);
  Tensor m = amax_keep(x, dims);
  // An infinite max (all -inf, or +inf present) would give inf - inf = nan: shift by 0 there.
  static const auto where = op<Tensor(const Tensor&, const Tensor&, const Tensor&)>("aten::where.self");
  static const auto isinf_abs = op<Unary>("aten::abs");
  static const auto eq = op<Binary>("aten::eq.Tensor");
  Tensor inf = scalar_to_tensor(Scalar(INFINITY), x.dtype(), Device(DeviceType::CPU));
  inf.impl()->set_wrapped_number(true);
  Tensor zero = scalar_to_tensor(Scalar(0.0), x.dtype(), Device(DeviceType::CPU));
  zero.impl()->set_wrapped_number(true);
  Tensor shift = where.call(eq.call(isinf_abs.call(m), inf), zero, m);
  Tensor result = add(log_(sum_dims(exp_(sub_(x, shift)), dims, true)), shift);
  if (keepdim) return result;
  return sum_dims(result, dims, false);  // the reduced dims have size 1: summing drops them
}

// ---- splitting into views ----
// Note [Views counted before they are made]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A tensor without elements can have any size in the split dim (empty(2**40, 0)),
// and chunk of an empty dim makes `chunks` pieces: chunk(empty(0), 2**40), unbind
// or split(1) of empty(2**40, 0) ask for 2**40 views, each a TensorImpl on the host.
// PyTorch grows its vector until std::bad_alloc (MemoryError). We count first: a
// request for more view bytes than the machine's physical memory fails before the
// first view is made, as OutOfMemoryError naming the operator and the count. Failing
// midway would leave it to operator new, which under ASan aborts the process instead
// of throwing (tools/sanitize.sh; the binding fuzzer found chunk).
void check_view_count(const char* op, int64_t views) {
  static const double physical_bytes =
      static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  constexpr double kBytesPerView = sizeof(TensorImpl) + sizeof(Tensor) + sizeof(int64_t);
  SDK_CHECK_KIND(ErrorKind::OutOfMemory, static_cast<double>(views) * kBytesPerView <= physical_bytes, op, ": ",
                 views, " views would need ", static_cast<double>(views) * kBytesPerView,
                 " bytes of host memory, more than this machine has (", physical_bytes, " bytes)");
}

std::vector<Tensor> split_with_sizes_impl(const Tensor& self, IntArrayRef split_sizes, int64_t dim) {
  SDK_CHECK_VALUE(self.dim() > 0, "split_with_sizes: expected a tensor with at least one dimension");
  int64_t d = maybe_wrap_dim(dim, self.dim());
  int64_t total = 0;
  for (int64_t s : split_sizes) {
    SDK_CHECK_VALUE(s >= 0, "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=",
                    split_sizes);
    total += s;
  }
  SDK_CHECK_VALUE(total == self.size(d), "split_with_sizes expects split_sizes to sum exactly to ", self.size(d),
                  " (input tensor's size at dimension ", d, "), but got split_sizes=", split_sizes);
  std::vector<Tensor> out;
  int64_t offset = 0;
  for (int64_t s : split_sizes) {
    out.push_back(narrow(self, d, offset, s));
    offset += s;
  }
  return out;
}

std::vector<Tensor> split_impl(const Tensor& self, int64_t split_size, int64_t dim) {
  SDK_CHECK_VALUE(self.dim() > 0, "split: expected a tensor with at least one dimension");
  int64_t d = maybe_wrap_dim(dim, self.dim());
  int64_t n = self.size(d);
  SDK_CHECK_VALUE(split_size > 0 || (split_size == 0 && n == 0), "split_size can only be 0 if dimension size is 0, but "
                  "got dimension size of ", n);
  DimVector sizes;
  if (split_size == 0) {
    sizes.push_back(0);
  } else {
    check_view_count("aten::split", n / split_size + 1);
    for (int64_t start = 0; start < n; start += split_size) sizes.push_back(std::min(split_size, n - start));
    if (n == 0) sizes.push_back(0);
  }
  return split_with_sizes_impl(self, sizes, d);
}

std::vector<Tensor> chunk_impl(const Tensor& self, int64_t chunks, int64_t dim) {
  SDK_CHECK_VALUE(chunks > 0, "chunk expects `chunks` to be greater than 0, got: ", chunks);
  SDK_CHECK_VALUE(self.dim() > 0, "chunk expects at least a 1-dimensional tensor");
  int64_t d = maybe_wrap_dim(dim, self.dim());
  int64_t split_size = (self.size(d) + chunks - 1) / chunks;
  if (split_size == 0 && self.size(d) == 0) {
    check_view_count("aten::chunk", chunks);
    return split_with_sizes_impl(self, DimVector(static_cast<size_t>(chunks), 0), d);
  }
  return split_impl(self, split_size, d);
}

std::vector<Tensor> unbind_impl(const Tensor& self, int64_t dim) {
  SDK_CHECK_VALUE(self.dim() > 0, "Dimension specified as 0 but tensor has no dimensions");
  int64_t d = maybe_wrap_dim(dim, self.dim());
  DimVector sizes(self.sizes()), strides(self.strides());
  sizes.erase(static_cast<size_t>(d));
  strides.erase(static_cast<size_t>(d));
  check_view_count("aten::unbind", self.size(d));
  std::vector<Tensor> out;
  out.reserve(static_cast<size_t>(self.size(d)));
  for (int64_t i = 0; i < self.size(d); ++i) {
    out.push_back(as_strided(self, sizes, strides, self.storage_offset() + i * self.stride(d)));
  }
  return out;
}

// ---- repeat, masked_fill, mse_loss ----
// out viewed as (r0, s0, r1, s1, ...) receives self viewed as (1, s0, 1, s1, ...)
// broadcast along the r dims.
Tensor repeat_impl(const Tensor& self, IntArrayRef repeats) {
  SDK_CHECK_VALUE(static_cast<int64_t>(repeats.size()) >= self.dim(), "repeat: Number of dimensions of repeat dims ",
                  "can not be smaller than number of dimensions of tensor");
  size_t lead = repeats.size() - static_cast<size_t>(self.dim());
  DimVector out_sizes, inter_sizes, src_strides;
  for (size_t i = 0; i < repeats.size(); ++i) {
    SDK_CHECK_VALUE(repeats[i] >= 0, "repeat: Trying to create tensor with negative dimension ", repeats[i], ": ",
                    repeats);
    int64_t s = i < lead ? 1 : self.size(static_cast<int64_t>(i - lead));
    int64_t st = i < lead ? 0 : self.stride(static_cast<int64_t>(i - lead));
    out_sizes.push_back(safe_mul(repeats[i], s, "repeat", "repeating dimension ", i, " of size ", s, " ",
                                 repeats[i], " times does not fit in int64 (repeats ", repeats, ", tensor sizes ",
                                 self.sizes(), ")"));
    inter_sizes.push_back(repeats[i]);
    inter_sizes.push_back(s);
    src_strides.push_back(0);
    src_strides.push_back(s == 1 ? 0 : st);
  }
  Tensor out = empty(out_sizes, self.dtype(), self.device());
  if (out.numel() == 0) return out;
  Tensor target = view(out, inter_sizes);
  copy_(target, as_strided(self, inter_sizes, src_strides, self.storage_offset()));
  return out;
}

Tensor masked_fill_impl(const Tensor& self, const Tensor& mask, const Scalar& value) {
  SDK_CHECK_TYPE(mask.dtype() == ScalarType::Bool, "masked_fill_ only supports boolean masks, but got mask with dtype ",
                 scalar_type_name(mask.dtype()));
  static const auto where = op<Tensor(const Tensor&, const Scalar&, const Tensor&)>("aten::where.ScalarSelf");
  Tensor filled = where.call(mask, value, self);
  if (filled.dtype() == self.dtype()) return filled;
  return copy_(empty(filled.sizes(), self.dtype(), self.device()), filled);
}

Tensor masked_fill_inplace_impl(const Tensor& self, const Tensor& mask, const Scalar& value) {
  Tensor filled = masked_fill_impl(self, mask, value);
  SDK_CHECK_VALUE(filled.sizes().equals(self.sizes()), "masked_fill_: the mask of shape ", mask.sizes(),
                  " does not broadcast to self's shape ", self.sizes());
  return copy_(self, filled);
}

// masked_fill with a 0-d tensor value (PyTorch's masked_fill.Tensor): a where
// over the primitives, so it is CompositeImplicitAutograd (autograd and every
// backend with where/copy_ get it for free) and works on Meta.
Tensor masked_fill_tensor_impl(const Tensor& self, const Tensor& mask, const Tensor& value) {
  SDK_CHECK_VALUE(value.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
                  value.dim(), " dimension(s).");
  SDK_CHECK_TYPE(mask.dtype() == ScalarType::Bool, "masked_fill_ only supports boolean masks, but got mask with dtype ",
                 scalar_type_name(mask.dtype()));
  static const auto where = op<Tensor(const Tensor&, const Tensor&, const Tensor&)>("aten::where.self");
  Tensor v = value.dtype() == self.dtype() ? value : copy_(empty({}, self.dtype(), value.device()), value);
  Tensor filled = where.call(mask, v, self);
  if (filled.dtype() == self.dtype()) return filled;
  return copy_(empty(filled.sizes(), self.dtype(), self.device()), filled);
}

Tensor masked_fill_tensor_inplace_impl(const Tensor& self, const Tensor& mask, const Tensor& value) {
  Tensor filled = masked_fill_tensor_impl(self, mask, value);
  SDK_CHECK_VALUE(filled.sizes().equals(self.sizes()), "masked_fill_: the mask of shape ", mask.sizes(),
                  " does not broadcast to self's shape ", self.sizes());
  return copy_(self, filled);
}

// reduction: 0 none, 1 mean, 2 sum (PyTorch's Reduction enum).
Tensor mse_loss_impl(const Tensor& self, const Tensor& target, int64_t reduction) {
  SDK_CHECK_VALUE(reduction >= 0 && reduction <= 2, "mse_loss: reduction must be 0 (none), 1 (mean) or 2 (sum), got ",
                  reduction);
  static const auto pow = op<Tensor(const Tensor&, const Scalar&)>("aten::pow.Tensor_Scalar");
  static const auto mean = op<Tensor(const Tensor&, std::optional<ScalarType>)>("aten::mean");
  static const auto sum = op<Tensor(const Tensor&, std::optional<ScalarType>)>("aten::sum");
  Tensor squared = pow.call(sub_(self, target), Scalar(int64_t{2}));
  if (reduction == 0) return squared;
  return reduction == 1 ? mean.call(squared, std::nullopt) : sum.call(squared, std::nullopt);
}

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_FRAGMENT(aten, m) {
  m.def("repeat(Tensor self, SymInt[] repeats) -> Tensor");
  m.def("masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor");
  m.def("masked_fill_.Scalar(Tensor(a!) self, Tensor mask, Scalar value) -> Tensor(a!)");
  m.def("masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor");
  m.def("masked_fill_.Tensor(Tensor(a!) self, Tensor mask, Tensor value) -> Tensor(a!)");
  m.def("mse_loss(Tensor self, Tensor target, int reduction=Mean) -> Tensor");
  m.impl("masked_fill.Tensor", sdk::DispatchKey::CompositeImplicitAutograd, &sdk::ops::masked_fill_tensor_impl);
  m.impl("masked_fill_.Tensor", sdk::DispatchKey::CompositeImplicitAutograd,
         &sdk::ops::masked_fill_tensor_inplace_impl);
  m.impl("repeat", sdk::DispatchKey::CompositeExplicitAutograd, &sdk::ops::repeat_impl);
  m.impl("masked_fill.Scalar", sdk::DispatchKey::CompositeExplicitAutograd, &sdk::ops::masked_fill_impl);
  m.impl("masked_fill_.Scalar", sdk::DispatchKey::CompositeExplicitAutograd, &sdk::ops::masked_fill_inplace_impl);
  m.impl("mse_loss", sdk::DispatchKey::CompositeImplicitAutograd, &sdk::ops::mse_loss_impl);
  m.def("split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]");
  m.def("split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]");
  m.def("chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]");
  m.def("unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]");
  m.impl("split.Tensor", sdk::DispatchKey::CompositeExplicitAutograd, &sdk::ops::split_impl);
  m.impl("split_with_sizes", sdk::DispatchKey::CompositeExplicitAutograd, &sdk::ops::split_with_sizes_impl);
  m.impl("chunk", sdk::DispatchKey::CompositeExplicitAutograd, &sdk::ops::chunk_impl);
  m.impl("unbind.int", sdk::DispatchKey::CompositeExplicitAutograd, &sdk::ops::unbind_impl);
  m.def("cat(Tensor[] tensors, int dim=0) -> Tensor");
  m.def("stack(Tensor[] tensors, int dim=0) -> Tensor");
  m.def("softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor");
  m.def("log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor");
  m.def("logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor");
  m.impl("cat", sdk::DispatchKey::CompositeExplicitAutograd, &sdk::ops::cat_impl);
  m.impl("stack", sdk::DispatchKey::CompositeExplicitAutograd, &sdk::ops::stack_impl);
  m.impl("softmax.int", sdk::DispatchKey::CompositeImplicitAutograd, &sdk::ops::softmax_impl<false>);
  m.impl("log_softmax.int", sdk::DispatchKey::CompositeImplicitAutograd, &sdk::ops::softmax_impl<true>);
  m.impl("logsumexp", sdk::DispatchKey::CompositeImplicitAutograd, &sdk::ops::logsumexp_impl);
}
