// Calls of aten operators through the dispatcher, for composite kernels
// (TensorOps.cpp, NNOps.cpp, ...). Internal: not installed.
//
// Every helper is a dispatcher call (the typed handle cached in a
// function-static), never a direct kernel call, so a composite registered
// under CompositeImplicitAutograd is differentiable through the operators it
// calls and runs on every backend that implements them (Meta included).
// Views (permute, transpose, unsqueeze, expand, diagonal) are as_strided
// calls, as the Python Tensor methods are.
#pragma once

#include <optional>
#include <tuple>

#include <backend_sdk/core/DimVector.h>
#include <backend_sdk/dispatch/Dispatcher.h>
#include <backend_sdk/ops/Functions.h>
#include <backend_sdk/tensor/Generator.h>

namespace sdk::ops::cx {

template <typename Sig>
OperatorHandle::Typed<Sig> typed(const char* name) {
  return Dispatcher::singleton().find_schema_or_throw(name).typed<Sig>();
}

#define SDK_CX_OP(name, Sig) static const ::sdk::OperatorHandle::Typed<Sig> op = ::sdk::ops::cx::typed<Sig>(name)

using T = Tensor;
using CT = const Tensor&;

#define SDK_CX_UNARY(fn, name) \
  inline T fn(CT a) {          \
    SDK_CX_OP(name, T(CT));    \
    return op.call(a);         \
  }
SDK_CX_UNARY(neg, "aten::neg")
SDK_CX_UNARY(abs, "aten::abs")
SDK_CX_UNARY(exp, "aten::exp")
SDK_CX_UNARY(log, "aten::log")
SDK_CX_UNARY(sqrt, "aten::sqrt")
SDK_CX_UNARY(rsqrt, "aten::rsqrt")
SDK_CX_UNARY(floor, "aten::floor")
SDK_CX_UNARY(logical_not, "aten::logical_not")
#undef SDK_CX_UNARY

#define SDK_CX_BINARY(fn, name) \
  inline T fn(CT a, CT b) {     \
    SDK_CX_OP(name, T(CT, CT)); \
    return op.call(a, b);       \
  }
SDK_CX_BINARY(div, "aten::div.Tensor")
SDK_CX_BINARY(eq, "aten::eq.Tensor")
SDK_CX_BINARY(ne, "aten::ne.Tensor")
SDK_CX_BINARY(lt, "aten::lt.Tensor")
SDK_CX_BINARY(le, "aten::le.Tensor")
SDK_CX_BINARY(gt, "aten::gt.Tensor")
SDK_CX_BINARY(ge, "aten::ge.Tensor")
SDK_CX_BINARY(logical_and, "aten::logical_and")
SDK_CX_BINARY(logical_or, "aten::logical_or")
SDK_CX_BINARY(matmul, "aten::matmul")
SDK_CX_BINARY(bmm, "aten::bmm")
SDK_CX_BINARY(maximum, "aten::maximum")
#undef SDK_CX_BINARY

#define SDK_CX_SCALAR(fn, name)                 \
  inline T fn(CT a, const Scalar& s) {          \
    SDK_CX_OP(name, T(CT, const Scalar&));      \
    return op.call(a, s);                       \
  }
SDK_CX_SCALAR(eq_s, "aten::eq.Scalar")
SDK_CX_SCALAR(ne_s, "aten::ne.Scalar")
SDK_CX_SCALAR(lt_s, "aten::lt.Scalar")
SDK_CX_SCALAR(le_s, "aten::le.Scalar")
SDK_CX_SCALAR(gt_s, "aten::gt.Scalar")
SDK_CX_SCALAR(ge_s, "aten::ge.Scalar")
SDK_CX_SCALAR(div_s, "aten::div.Scalar")
SDK_CX_SCALAR(pow_s, "aten::pow.Tensor_Scalar")
#undef SDK_CX_SCALAR

inline T sub(CT a, CT b, const Scalar& alpha = Scalar(int64_t{1})) {
  SDK_CX_OP("aten::sub.Tensor", T(CT, CT, const Scalar&));
  return op.call(a, b, alpha);
}
inline T add_s(CT a, const Scalar& b) { return add(a, b, Scalar(int64_t{1})); }
inline T where(CT c, CT a, CT b) {
  SDK_CX_OP("aten::where.self", T(CT, CT, CT));
  return op.call(c, a, b);
}
inline T where_so(CT c, CT a, const Scalar& b) {  // where.ScalarOther
  SDK_CX_OP("aten::where.ScalarOther", T(CT, CT, const Scalar&));
  return op.call(c, a, b);
}
inline T clamp(CT a, const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
  SDK_CX_OP("aten::clamp", T(CT, const std::optional<Scalar>&, const std::optional<Scalar>&));
  return op.call(a, lo, hi);
}
inline T sum(CT a, IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype = std::nullopt) {
  SDK_CX_OP("aten::sum.dim_IntList", T(CT, std::optional<IntArrayRef>, bool, std::optional<ScalarType>));
  return op.call(a, std::optional<IntArrayRef>(dims), keepdim, dtype);
}
inline T sum_all(CT a) {
  SDK_CX_OP("aten::sum", T(CT, std::optional<ScalarType>));
  return op.call(a, std::nullopt);
}
inline T mean(CT a, IntArrayRef dims, bool keepdim) {
  SDK_CX_OP("aten::mean.dim", T(CT, std::optional<IntArrayRef>, bool, std::optional<ScalarType>));
  return op.call(a, std::optional<IntArrayRef>(dims), keepdim, std::nullopt);
}
// Biased (correction 0) or unbiased variance over dims.
inline T var(CT a, IntArrayRef dims, int64_t correction, bool keepdim) {
  SDK_CX_OP("aten::var.correction", T(CT, std::optional<IntArrayRef>, const std::optional<Scalar>&, bool));
  return op.call(a, std::optional<IntArrayRef>(dims), std::optional<Scalar>(Scalar(correction)), keepdim);
}
inline T amax(CT a, IntArrayRef dims, bool keepdim) {
  SDK_CX_OP("aten::amax", T(CT, IntArrayRef, bool));
  return op.call(a, dims, keepdim);
}
inline T all(CT a) {
  SDK_CX_OP("aten::all", T(CT));
  return op.call(a);
}
inline T index_select(CT a, int64_t dim, CT index) {
  SDK_CX_OP("aten::index_select", T(CT, int64_t, CT));
  return op.call(a, dim, index);
}
inline T softmax(CT a, int64_t dim) {
  SDK_CX_OP("aten::softmax.int", T(CT, int64_t, std::optional<ScalarType>));
  return op.call(a, dim, std::nullopt);
}
inline T cat(ArrayRef<Tensor> ts, int64_t dim) {
  SDK_CX_OP("aten::cat", T(ArrayRef<Tensor>, int64_t));
  return op.call(ts, dim);
}
inline T repeat(CT a, IntArrayRef repeats) {
  SDK_CX_OP("aten::repeat", T(CT, IntArrayRef));
  return op.call(a, repeats);
}
inline T bernoulli_p(CT a, double p) {
  SDK_CX_OP("aten::bernoulli.p", T(CT, double, const std::optional<Generator>&));
  return op.call(a, p, std::nullopt);
}
inline T clone(CT a) {
  SDK_CX_OP("aten::clone", T(CT, std::optional<int64_t>));
  return op.call(a, std::nullopt);
}
inline T to_dtype(CT a, ScalarType dtype) { return a.dtype() == dtype ? a : _to_copy(a, dtype); }
// A 0-d tensor flagged as a wrapped number: it takes part in type promotion as a Python scalar would.
inline T wrapped(const Scalar& s) { return wrapped_scalar_tensor(s); }

// ---- views and shapes (the view operators, Note [View operators]; view; copies) ----
// Through the view operators, so a composite's autograd graph holds PyTorch's nodes
// (PermuteBackward0, TransposeBackward0, ...) with their fast backwards.
inline T permute(CT a, IntArrayRef order) {
  SDK_CX_OP("aten::permute", T(CT, IntArrayRef));
  return op.call(a, order);
}
inline T transpose(CT a, int64_t d0, int64_t d1) {
  SDK_CX_OP("aten::transpose.int", T(CT, int64_t, int64_t));
  return op.call(a, d0, d1);
}
inline T unsqueeze(CT a, int64_t d) {
  SDK_CX_OP("aten::unsqueeze", T(CT, int64_t));
  return op.call(a, d);
}
// Broadcasts a to `sizes` (a's dims align to the right; its size-1 dims repeat).
inline T expand(CT a, IntArrayRef sizes) {
  SDK_CX_OP("aten::expand", T(CT, IntArrayRef, bool));
  return op.call(a, sizes, false);
}
// A contiguous copy when a is not contiguous (through _to_copy, so it is differentiable).
inline T contiguous(CT a) {
  if (a.is_contiguous()) return a;
  SDK_CX_OP("aten::_to_copy", T(CT, std::optional<ScalarType>, std::optional<int64_t>, std::optional<Device>,
                                std::optional<bool>, bool, std::optional<int64_t>));
  return op.call(a, std::nullopt, std::nullopt, std::nullopt, std::nullopt, false, int64_t{0});
}
inline T reshape(CT a, IntArrayRef sizes) { return view(contiguous(a), sizes); }

// The view of a's elements [start, start + length) along dim.
inline T narrow(CT a, int64_t dim, int64_t start, int64_t length) {
  DimVector sizes(a.sizes());
  sizes[dim] = length;
  const int64_t offset = a.numel() == 0 ? a.storage_offset() : a.storage_offset() + start * a.stride(dim);
  return as_strided(a, sizes, a.strides(), offset);
}

// ---- for CPU kernels that work on contiguous buffers ----
// float64 computes in float64, every other floating dtype in float32 (PyTorch's opmath type on CPU).
inline ScalarType compute_type(ScalarType t) { return t == ScalarType::Float64 ? t : ScalarType::Float32; }
// t itself when contiguous of dtype ct, else a contiguous copy converted to ct.
inline T dense(CT t, ScalarType ct) {
  if (t.is_contiguous() && t.dtype() == ct) return t;
  return copy_(make_tensor(t.sizes(), ct, t.device()), t);
}
// t converted to dtype `want` (t itself when it has it).
inline T as_dtype(CT t, ScalarType want) {
  return t.dtype() == want ? t : copy_(make_tensor(t.sizes(), want, t.device()), t);
}
// f(float{}) or f(double{}) for a compute type.
template <typename F>
void floating_dispatch(ScalarType ct, const char* op, const F& f) {
  if (ct == ScalarType::Float64) return f(double{});
  SDK_CHECK_TYPE(ct == ScalarType::Float32, op, ": unsupported compute dtype ", scalar_type_name(ct));
  f(float{});
}

// Note [Boxed kernels for bool lists]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The backward operators' `bool[3] output_mask` is a list type the unboxed
// argument conversions do not cover (Note [Kernel argument types]), so their
// kernels are boxed: they read the stack with these helpers. A Python list of
// bools may arrive as a generic list or as an int list.
inline bool list_bool(const IValue& v, size_t i) {
  if (v.is_list()) return v.to_list().at(i).to_bool();
  return v.to_int_list().at(i) != 0;
}
inline std::optional<Tensor> opt_tensor(const IValue& v) {
  if (v.is_none()) return std::nullopt;
  return v.to_tensor();
}

// ---- index tensors (not differentiable: integers) ----
// int64 [0, n) on device (no data on meta).
T arange(int64_t n, Device device);
// A tensor of `sizes` on `device` filled with `value`.
T full(IntArrayRef sizes, const Scalar& value, ScalarType dtype, Device device);
// An int64 CPU-built index tensor with the given values, moved to device.
T index_tensor(const std::vector<int64_t>& values, Device device);
// `host`, an index filled on the CPU, on `device` (itself when device is the CPU).
T index_on_device(T host, Device device);

}  // namespace sdk::ops::cx
