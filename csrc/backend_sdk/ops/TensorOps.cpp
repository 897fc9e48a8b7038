// Tensor methods real code uses most, as composites of existing operators.
//
// Note [Composite tensor methods]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every operator here is registered under CompositeImplicitAutograd: its
// kernel only calls other operators through the dispatcher
// (ops/detail/CompositeOps.h), so autograd records the operators it calls and
// needs no formula of its own, and every backend (Meta and a vendor's device
// included) runs it once it has the primitives. In PyTorch some of them are
// CompositeImplicitAutograd too (outer, diag, tile, repeat_interleave,
// isclose, allclose, clip, square, isfinite...); others have a kernel and a
// formula there (tril/triu, addcmul/addcdiv, lerp, diagonal, trace, roll,
// nan_to_num, baddbmm): the composite gives the same values and the same
// gradients (the derivative of a where-mask, a strided view or a cat is the
// one PyTorch's formula computes), at the cost of a few more launches.
// Masks and index tensors are integers, built on the host and moved to the
// device (CompositeOps.cpp).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>

#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/dispatch/LocalDispatchKeySet.h>
#include <backend_sdk/ops/detail/Autograd.h>
#include <backend_sdk/ops/detail/CompositeOps.h>
#include <backend_sdk/ops/detail/ElementwiseLoops.h>

namespace sdk::ops {
namespace {

using namespace cx;

Scalar zero_of(ScalarType t) {
  if (t == ScalarType::Bool) return Scalar(false);
  if (is_floating_type(t)) return Scalar(0.0);
  return Scalar(int64_t{0});
}

// ---- isnan / isinf / isfinite ----
Tensor isnan_impl(const Tensor& self) { return ne(self, self); }

Tensor isinf_impl(const Tensor& self) {
  if (!is_floating_type(self.dtype())) return ne(self, self);  // all false, self's shape
  return eq_s(abs(self), Scalar(INFINITY));
}

Tensor isfinite_impl(const Tensor& self) {
  if (!is_floating_type(self.dtype())) return eq(self, self);  // all true
  // x - x is 0 for finite x and NaN for inf and NaN.
  return eq_s(sub(self, self), Scalar(0.0));
}

// ---- tril / triu ----
// mask[..., i, j] = (j - i <= k) for tril, (j - i >= k) for triu, over the last two dims.
template <bool kLower>
Tensor tri_mask(const Tensor& self, int64_t k, const char* op) {
  SDK_CHECK_VALUE(self.dim() >= 2, op, ": input tensor must have at least 2 dimensions");
  const int64_t m = self.size(-2), n = self.size(-1);
  Tensor rows = view(arange(m, self.device()), {m, 1});
  Tensor cols = view(arange(n, self.device()), {1, n});
  Tensor d = sub(cols, rows);
  return kLower ? le_s(d, Scalar(k)) : ge_s(d, Scalar(k));
}

template <bool kLower>
Tensor tri_impl(const Tensor& self, int64_t diagonal) {
  Tensor mask = tri_mask<kLower>(self, diagonal, kLower ? "tril" : "triu");
  return where_so(mask, self, zero_of(self.dtype()));
}

template <bool kLower>
Tensor tri_inplace(const Tensor& self, int64_t diagonal) {
  return copy_(self, tri_impl<kLower>(self, diagonal));
}

// ---- addcmul / addcdiv / lerp ----
void check_addcdiv(const Tensor& t1, const Tensor& t2) {
  SDK_CHECK(!(is_integral_type(t1.dtype(), true) && is_integral_type(t2.dtype(), true)),
            "Integer division with addcdiv is no longer supported, and in a future release addcdiv will perform a "
            "true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + "
            "value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * "
            "tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: "
            "(input + value * tensor1 / tensor2), for all dtypes.");
}

// Note [Fused pointwise fast paths]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// addcmul, addcdiv and lerp stay CompositeImplicitAutograd (autograd records
// the operators they call, every backend runs them), but a call autograd does
// not take part in (grad mode off, as in an optimizer step, or no argument
// requiring grad) on CPU float32/float64 tensors of one dtype and self's shape
// runs one fused loop through a TensorIterator (any strides, threads) instead
// of two or three operators and their temporaries. The loop rounds where the
// composite rounds, in the dtype, in the composite's order:
//   addcmul: self + value * (t1 * t2)     (mul, then add's alpha)
//   addcdiv: self + value * (t1 / t2)     (div, then add's alpha)
//   lerp:    self + weight * (end - self) (sub, mul by the Scalar, add)
// and the library is compiled without FMA contraction (CMakeLists.txt), so the
// results are bit-identical to the composite's, and to those of a backend that
// runs the composite (accel). Anything else (broadcasting, mixed dtypes,
// half/bfloat16, integers, other devices, fake/Python/batched tensors) takes
// the composite, so values, errors and autograd are unchanged there.
// A plain CPU float32/float64 tensor with other's dtype and shape.
bool plain_cpu_like(const Tensor& t, const Tensor& like) {
  const DispatchKeySet special = DispatchKeySet(DispatchKey::Fake) | DispatchKeySet(DispatchKey::Python) |
                                 DispatchKeySet(DispatchKey::FuncTorchBatched);
  return t.is_cpu() && t.dtype() == like.dtype() && t.sizes().equals(like.sizes()) &&
         !t.impl()->key_set().has_any(special) && (t.numel() == 0 || t.data_ptr() != nullptr);
}

// Note [Fused pointwise fast paths]: self and others qualify, and autograd has nothing to record.
bool fused_eligible(const Tensor& self, std::initializer_list<const Tensor*> others) {
  if (self.dtype() != ScalarType::Float32 && self.dtype() != ScalarType::Float64) return false;
  if (!plain_cpu_like(self, self)) return false;
  for (const Tensor* o : others) {
    if (!plain_cpu_like(*o, self)) return false;
  }
  if (tls_local_dispatch_key_set().excluded.has(DispatchKey::AutogradFunctionality)) return true;
  if (autograd::requires_grad(self)) return false;
  for (const Tensor* o : others) {
    if (autograd::requires_grad(*o)) return false;
  }
  return true;
}

// self (in place, output 0) and inputs self, t1[, t2]: the iterator checks
// overlap and computes the loop geometry; the kernel bumps self's version.
template <bool kDiv>
void fused_addc(const char* op, const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  TensorIterator iter(op);
  iter.add_output(self).resize_outputs(false).output_name("self");
  iter.add_input(self).add_input(t1).add_input(t2);
  iter.build();
  check_alpha(iter, value);
  cpu::dispatch_floating(iter, op, [&](auto tag) {
    using V = typename decltype(tag)::type;
    const V v = value.to<V>();
    cpu::ternary_loop<V, V, V, V>(iter, [v](V a, V b, V c) {
      const V t = kDiv ? b / c : b * c;
      return a + v * t;
    });
  });
  self.impl()->bump_version();
}

template <bool kDiv>
bool try_fused_addc(const char* op, const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  if (value.is_boolean() || !fused_eligible(self, {&t1, &t2})) return false;
  fused_addc<kDiv>(op, self, t1, t2, value);
  return true;
}

bool try_fused_lerp(const Tensor& self, const Tensor& end, const Scalar& weight) {
  if (weight.is_boolean() || !fused_eligible(self, {&end})) return false;
  TensorIterator iter("lerp_.Scalar");
  iter.add_output(self).resize_outputs(false).output_name("self");
  iter.add_input(self).add_input(end);
  iter.build();
  cpu::dispatch_floating(iter, "lerp_.Scalar", [&](auto tag) {
    using V = typename decltype(tag)::type;
    const V w = weight.to<V>();
    cpu::binary_loop<V, V>(iter, [w](V a, V b) {
      const V d = b - a;
      return a + w * d;
    });
  });
  self.impl()->bump_version();
  return true;
}

Tensor addcmul_impl(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  return add(self, mul(t1, t2), value);
}
Tensor addcmul_inplace(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  if (try_fused_addc<false>("addcmul_", self, t1, t2, value)) return self;
  return add_(self, mul(t1, t2), value);
}
Tensor addcdiv_impl(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  check_addcdiv(t1, t2);
  return add(self, div(t1, t2), value);
}
Tensor addcdiv_inplace(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  check_addcdiv(t1, t2);
  if (try_fused_addc<true>("addcdiv_", self, t1, t2, value)) return self;
  return add_(self, div(t1, t2), value);
}

void check_lerp(const Tensor& self, const Tensor& end, const Tensor* weight) {
  SDK_CHECK_TYPE(self.dtype() == end.dtype(), "expected dtype ", scalar_type_name(self.dtype()),
                 " for `end` but got dtype ", scalar_type_name(end.dtype()));
  if (weight) {
    SDK_CHECK_TYPE(self.dtype() == weight->dtype(), "expected dtype ", scalar_type_name(self.dtype()),
                   " for `weight` but got dtype ", scalar_type_name(weight->dtype()));
  }
  SDK_CHECK_NOT_IMPLEMENTED(is_floating_type(self.dtype()), "\"lerp_kernel_", weight ? "tensor" : "scalar",
                            "\" not implemented for '", scalar_type_name(self.dtype()), "'");
}
// self + weight * (end - self)
Tensor lerp_scalar(const Tensor& self, const Tensor& end, const Scalar& weight) {
  check_lerp(self, end, nullptr);
  return add(self, mul(sub(end, self), weight));
}
Tensor lerp_tensor(const Tensor& self, const Tensor& end, const Tensor& weight) {
  check_lerp(self, end, &weight);
  return add(self, mul(sub(end, self), weight));
}
Tensor lerp_scalar_inplace(const Tensor& self, const Tensor& end, const Scalar& weight) {
  check_lerp(self, end, nullptr);
  if (try_fused_lerp(self, end, weight)) return self;
  return add_(self, mul(sub(end, self), weight));
}
Tensor lerp_tensor_inplace(const Tensor& self, const Tensor& end, const Tensor& weight) {
  check_lerp(self, end, &weight);
  return add_(self, mul(sub(end, self), weight));
}

// ---- outer / diagonal / diag / trace ----
Tensor outer_impl(const Tensor& self, const Tensor& vec2) {
  SDK_CHECK_VALUE(self.dim() == 1, "outer: Expected 1-D argument self, but got ", self.dim(), "-D");
  SDK_CHECK_VALUE(vec2.dim() == 1, "outer: Expected 1-D argument vec2, but got ", vec2.dim(), "-D");
  return mul(view(self, {self.size(0), 1}), vec2);
}

// aten::diagonal (a view operator: Note [View operators], ops/Views.cpp), for diag and trace.
Tensor diagonal_impl(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2) {
  static const auto op = Dispatcher::singleton().find_schema_or_throw("aten::diagonal").typed<
      Tensor(const Tensor&, int64_t, int64_t, int64_t)>();
  return op.call(self, offset, dim1, dim2);
}

Tensor diag_impl(const Tensor& self, int64_t k) {
  SDK_CHECK_VALUE(self.dim() == 1 || self.dim() == 2, "diag(): Supports 1D or 2D tensors. Got ", self.dim(), "D");
  if (self.dim() == 2) return cx::clone(diagonal_impl(self, k, 0, 1));
  const int64_t n = self.size(0);
  const int64_t pad = k >= 0 ? k : -k;
  const int64_t m = n + pad;
  // v padded to m: row i of a tril-like layout holds v[i] (k >= 0) or column j holds v[j] (k < 0).
  Tensor v = self;
  if (pad > 0) v = cat(std::vector<Tensor>{self, full({pad}, zero_of(self.dtype()), self.dtype(), self.device())}, 0);
  Tensor spread = k >= 0 ? expand(view(v, {m, 1}), {m, m}) : expand(view(v, {1, m}), {m, m});
  Tensor rows = view(arange(m, self.device()), {m, 1});
  Tensor cols = view(arange(m, self.device()), {1, m});
  Tensor on_diag = eq_s(sub(cols, rows), Scalar(k));
  return where_so(on_diag, spread, zero_of(self.dtype()));
}

Tensor trace_impl(const Tensor& self) {
  SDK_CHECK_VALUE(self.dim() == 2, "trace: expected a matrix, but got tensor with dim ", self.dim());
  return sum_all(diagonal_impl(self, 0, 0, 1));
}

// ---- roll / tile / repeat_interleave ----
Tensor roll_impl(const Tensor& self, IntArrayRef shifts, IntArrayRef dims) {
  SDK_CHECK_VALUE(!shifts.empty(), "`shifts` required");
  if (dims.empty()) {
    SDK_CHECK_VALUE(shifts.size() == 1, "shifts and dimensions must align. shifts: ", shifts.size(), ", dims:", 0);
    const int64_t n = self.numel();
    Tensor flat = reshape(self, {n});
    return view(roll_impl(flat, shifts, std::vector<int64_t>{0}), self.sizes());
  }
  SDK_CHECK_VALUE(shifts.size() == dims.size(), "shifts and dimensions must align. shifts: ", shifts.size(),
                  ", dims:", dims.size());
  Tensor out = self;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = maybe_wrap_dim(dims[i], self.dim());
    const int64_t n = self.size(d);
    if (n == 0) continue;
    const int64_t s = ((shifts[i] % n) + n) % n;
    if (s == 0) continue;
    out = cat(std::vector<Tensor>{narrow(out, d, n - s, s), narrow(out, d, 0, n - s)}, d);
  }
  return out.is_same(self) ? cx::clone(self) : out;
}

Tensor tile_impl(const Tensor& self, IntArrayRef dims) {
  DimVector reps(dims);
  while (static_cast<int64_t>(reps.size()) < self.dim()) reps.insert(0, 1);
  return repeat(self, reps);
}

Tensor repeat_interleave_int(const Tensor& self, int64_t repeats, std::optional<int64_t> dim,
                             std::optional<int64_t> output_size) {
  SDK_CHECK_VALUE(repeats >= 0, "repeats can not be negative");
  Tensor x = self;
  int64_t d = 0;
  if (!dim) {
    x = reshape(self, {self.numel()});
  } else {
    d = maybe_wrap_dim(*dim, std::max<int64_t>(self.dim(), 1));
    if (self.dim() == 0) x = view(self, {1});
  }
  const int64_t n = x.size(d);
  SDK_CHECK_VALUE(!output_size || *output_size == n * repeats, "allocated size does not match required size");
  DimVector big(x.sizes());
  big.insert(static_cast<size_t>(d) + 1, repeats);
  Tensor spread = expand(unsqueeze(x, d + 1), big);
  DimVector out_sizes(x.sizes());
  out_sizes[d] = n * repeats;
  return reshape(spread, out_sizes);
}

// The int64 index [0]*r0 + [1]*r1 + ... for a 1-D (or 0-d) repeats tensor, read on the host and
// built on `device`. The total is summed (overflow-checked) before anything is allocated, and the
// index is allocated through the allocator: repeats of 2**40 fail with the allocator's
// OutOfMemoryError naming the byte count, never by growing a host vector until the process is killed.
Tensor repeat_index(const Tensor& repeats, int64_t n, std::optional<int64_t> output_size, Device device) {
  SDK_CHECK_VALUE(repeats.dim() <= 1, "repeats must be 0-dim or 1-dim tensor");
  SDK_CHECK_TYPE(repeats.dtype() == ScalarType::Int64 || repeats.dtype() == ScalarType::Int32,
                 "repeats has to be Long or Int tensor");
  SDK_CHECK_NOT_IMPLEMENTED(!repeats.is_meta(), "repeat_interleave: the output size depends on the data-dependent "
                            "values of `repeats`, which a meta tensor does not have");
  Tensor r = _to_copy(repeats, ScalarType::Int64, Device(DeviceType::CPU));
  const int64_t count = r.dim() == 0 ? 1 : r.size(0);
  SDK_CHECK_VALUE(count == 1 || count == n, "repeats must have the same size as input along dim, but got "
                  "repeats.size(0) = ", count, " and input.size(", 0, ") = ", n);
  Tensor rc = contiguous(r);
  const auto* p = rc.data_ptr<int64_t>();
  int64_t total = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = p[count == 1 ? 0 : i];
    SDK_CHECK_VALUE(k >= 0, "repeats can not be negative");
    SDK_CHECK(!__builtin_add_overflow(total, k, &total),
              "repeat_interleave: the output size (the sum of repeats) overflows int64");
  }
  SDK_CHECK_VALUE(!output_size || *output_size == total, "allocated size does not match required size");
  if (device.type == DeviceType::Meta) return make_tensor({total}, ScalarType::Int64, device);
  Tensor host = make_tensor({total}, ScalarType::Int64, Device(DeviceType::CPU));
  auto* out = host.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) out = std::fill_n(out, p[count == 1 ? 0 : i], i);
  return device.type == DeviceType::CPU ? host : _to_copy(host, std::nullopt, device);
}

Tensor repeat_interleave_tensor_self(const Tensor& self, const Tensor& repeats, std::optional<int64_t> dim,
                                     std::optional<int64_t> output_size) {
  Tensor x = dim ? self : reshape(self, {self.numel()});
  const int64_t d = dim ? maybe_wrap_dim(*dim, std::max<int64_t>(x.dim(), 1)) : 0;
  if (x.dim() == 0) x = view(x, {1});
  return cx::index_select(x, d, repeat_index(repeats, x.size(d), output_size, self.device()));
}

Tensor repeat_interleave_tensor(const Tensor& repeats, std::optional<int64_t> output_size) {
  SDK_CHECK_VALUE(repeats.dim() == 1, "repeat_interleave only accept 1D vector as repeat");
  return repeat_index(repeats, repeats.size(0), output_size, repeats.device());
}

// ---- nan_to_num ----
double finite_max(ScalarType t) {
  switch (t) {
    case ScalarType::Float16: return 65504.0;
    case ScalarType::BFloat16: return 3.3895313892515355e38;
    case ScalarType::Float32: return std::numeric_limits<float>::max();
    default: return std::numeric_limits<double>::max();
  }
}

Tensor nan_to_num_impl(const Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                       std::optional<double> neginf) {
  if (!is_floating_type(self.dtype())) return cx::clone(self);
  const double big = finite_max(self.dtype());
  Tensor out = where_so(ne_s(self, Scalar(INFINITY)), self, Scalar(posinf.value_or(big)));
  out = where_so(ne_s(self, Scalar(-INFINITY)), out, Scalar(neginf.value_or(-big)));
  return where_so(eq(self, self), out, Scalar(nan.value_or(0.0)));
}

Tensor nan_to_num_inplace(const Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                          std::optional<double> neginf) {
  return copy_(self, nan_to_num_impl(self, nan, posinf, neginf));
}

// ---- comparisons to bool ----
Tensor isclose_impl(const Tensor& self, const Tensor& other, double rtol, double atol, bool equal_nan) {
  SDK_CHECK_TYPE(self.dtype() == other.dtype(), scalar_type_name(self.dtype()), " did not match ",
                 scalar_type_name(other.dtype()));
  SDK_CHECK_VALUE(rtol >= 0, "rtol must be greater than or equal to zero, but got ", rtol);
  SDK_CHECK_VALUE(atol >= 0, "atol must be greater than or equal to zero, but got ", atol);
  Tensor close = eq(self, other);
  if (equal_nan && is_floating_type(self.dtype())) close = logical_or(close, logical_and(ne(self, self), ne(other, other)));
  if (self.dtype() == ScalarType::Bool) return close;
  // |a - b| <= atol + rtol * |b|, computed in the default floating dtype for integers (as PyTorch).
  Tensor a = is_floating_type(self.dtype()) ? self : to_dtype(self, default_dtype());
  Tensor b = is_floating_type(other.dtype()) ? other : to_dtype(other, default_dtype());
  Tensor allowed = add(mul(abs(b), Scalar(rtol)), Scalar(atol));
  Tensor diff = abs(sub(a, b));
  // A finite check keeps inf - inf (NaN) and inf vs a finite number out of the tolerance branch.
  return logical_or(close, logical_and(le(diff, allowed), eq_s(sub(diff, diff), Scalar(0.0))));
}

bool allclose_impl(const Tensor& self, const Tensor& other, double rtol, double atol, bool equal_nan) {
  return item(all(isclose_impl(self, other, rtol, atol, equal_nan))).to_bool();
}

bool equal_impl(const Tensor& self, const Tensor& other) {
  check_same_device("equal", self, other);
  if (!self.sizes().equals(other.sizes())) return false;
  if (self.numel() == 0) return true;
  return item(all(eq(self, other))).to_bool();
}

bool is_floating_point_impl(const Tensor& self) { return is_floating_type(self.dtype()); }

// ---- small arithmetic composites ----
Tensor clip_impl(const Tensor& self, const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
  return clamp(self, lo, hi);
}
Tensor clip_inplace(const Tensor& self, const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
  SDK_CX_OP("aten::clamp_", Tensor(const Tensor&, const std::optional<Scalar>&, const std::optional<Scalar>&));
  return op.call(self, lo, hi);
}
Tensor zero_impl(const Tensor& self) { return fill_(self, Scalar(int64_t{0})); }
Tensor square_impl(const Tensor& self) { return pow_s(self, Scalar(int64_t{2})); }

Tensor baddbmm_impl(const Tensor& self, const Tensor& b1, const Tensor& b2, const Scalar& beta, const Scalar& alpha) {
  SDK_CHECK_VALUE(b1.dim() == 3, "batch1 must be a 3D tensor");
  SDK_CHECK_VALUE(b2.dim() == 3, "batch2 must be a 3D tensor");
  Tensor prod = bmm(b1, b2);
  if (!(alpha.is_integral(true) && alpha.to_int() == 1)) prod = mul(prod, alpha);
  if (beta.to_double() == 0.0) return prod;  // self is ignored (its NaNs too), as PyTorch
  return add(prod, self, beta);
}

// ---- var_mean / std_mean: the two reductions, each recorded by autograd on its own ----
template <bool kStd>
std::tuple<Tensor, Tensor> moments_correction(const Tensor& self, std::optional<IntArrayRef> dim,
                                              const std::optional<Scalar>& correction, bool keepdim) {
  SDK_CX_OP(kStd ? "aten::std.correction" : "aten::var.correction",
            T(CT, std::optional<IntArrayRef>, const std::optional<Scalar>&, bool));
  SDK_CHECK_TYPE(is_floating_type(self.dtype()), kStd ? "std_mean" : "var_mean",
            " only support floating point and complex dtypes");
  static const auto mean_op = typed<T(CT, std::optional<IntArrayRef>, bool, std::optional<ScalarType>)>("aten::mean.dim");
  return {op.call(self, dim, correction, keepdim), mean_op.call(self, dim, keepdim, std::nullopt)};
}
template <bool kStd>
std::tuple<Tensor, Tensor> moments_dim(const Tensor& self, std::optional<IntArrayRef> dim, bool unbiased, bool keepdim) {
  return moments_correction<kStd>(self, dim, Scalar(unbiased ? 1 : 0), keepdim);
}
template <bool kStd>
std::tuple<Tensor, Tensor> moments_all(const Tensor& self, bool unbiased) {
  return moments_correction<kStd>(self, std::nullopt, Scalar(unbiased ? 1 : 0), false);
}

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_FRAGMENT(aten, m) {
  m.def("zero_(Tensor(a!) self) -> Tensor(a!)");
  m.def("isnan(Tensor self) -> Tensor");
  m.def("isinf(Tensor self) -> Tensor");
  m.def("isfinite(Tensor self) -> Tensor");
  m.def("tril(Tensor self, int diagonal=0) -> Tensor");
  m.def("tril_(Tensor(a!) self, int diagonal=0) -> Tensor(a!)");
  m.def("triu(Tensor self, int diagonal=0) -> Tensor");
  m.def("triu_(Tensor(a!) self, int diagonal=0) -> Tensor(a!)");
  m.def("addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor");
  m.def("addcmul_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor(a!)");
  m.def("addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor");
  m.def("addcdiv_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor(a!)");
  m.def("lerp.Scalar(Tensor self, Tensor end, Scalar weight) -> Tensor");
  m.def("lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor");
  m.def("lerp_.Scalar(Tensor(a!) self, Tensor end, Scalar weight) -> Tensor(a!)");
  m.def("lerp_.Tensor(Tensor(a!) self, Tensor end, Tensor weight) -> Tensor(a!)");
  m.def("outer(Tensor self, Tensor vec2) -> Tensor");
  m.def("diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)");
  m.def("diag(Tensor self, int diagonal=0) -> Tensor");
  m.def("trace(Tensor self) -> Tensor");
  m.def("roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor");
  m.def("tile(Tensor self, SymInt[] dims) -> Tensor");
  m.def("repeat_interleave.Tensor(Tensor repeats, *, SymInt? output_size=None) -> Tensor");
  m.def("repeat_interleave.self_Tensor(Tensor self, Tensor repeats, int? dim=None, *, SymInt? output_size=None) "
        "-> Tensor");
  m.def("repeat_interleave.self_int(Tensor self, SymInt repeats, int? dim=None, *, SymInt? output_size=None) "
        "-> Tensor");
  m.def("nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor");
  m.def("nan_to_num_(Tensor(a!) self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor(a!)");
  m.def("isclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False) -> Tensor");
  m.def("allclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False) -> bool");
  m.def("equal(Tensor self, Tensor other) -> bool");
  m.def("is_floating_point(Tensor self) -> bool");
  m.def("clip(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor");
  m.def("clip_(Tensor(a!) self, Scalar? min=None, Scalar? max=None) -> Tensor(a!)");
  m.def("square(Tensor self) -> Tensor");
  m.def("baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor");
  m.def("var_mean(Tensor self, bool unbiased=True) -> (Tensor, Tensor)");
  m.def("var_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)");
  m.def("var_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) "
        "-> (Tensor, Tensor)");
  m.def("std_mean(Tensor self, bool unbiased=True) -> (Tensor, Tensor)");
  m.def("std_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)");
  m.def("std_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) "
        "-> (Tensor, Tensor)");

  constexpr auto kCIA = sdk::DispatchKey::CompositeImplicitAutograd;
  using namespace sdk::ops;
  m.impl("zero_", kCIA, &zero_impl);
  m.impl("isnan", kCIA, &isnan_impl);
  m.impl("isinf", kCIA, &isinf_impl);
  m.impl("isfinite", kCIA, &isfinite_impl);
  m.impl("tril", kCIA, &tri_impl<true>);
  m.impl("tril_", kCIA, &tri_inplace<true>);
  m.impl("triu", kCIA, &tri_impl<false>);
  m.impl("triu_", kCIA, &tri_inplace<false>);
  m.impl("addcmul", kCIA, &addcmul_impl);
  m.impl("addcmul_", kCIA, &addcmul_inplace);
  m.impl("addcdiv", kCIA, &addcdiv_impl);
  m.impl("addcdiv_", kCIA, &addcdiv_inplace);
  m.impl("lerp.Scalar", kCIA, &lerp_scalar);
  m.impl("lerp.Tensor", kCIA, &lerp_tensor);
  m.impl("lerp_.Scalar", kCIA, &lerp_scalar_inplace);
  m.impl("lerp_.Tensor", kCIA, &lerp_tensor_inplace);
  m.impl("outer", kCIA, &outer_impl);
  m.impl("diag", kCIA, &diag_impl);
  m.impl("trace", kCIA, &trace_impl);
  m.impl("roll", kCIA, &roll_impl);
  m.impl("tile", kCIA, &tile_impl);
  m.impl("repeat_interleave.Tensor", kCIA, &repeat_interleave_tensor);
  m.impl("repeat_interleave.self_Tensor", kCIA, &repeat_interleave_tensor_self);
  m.impl("repeat_interleave.self_int", kCIA, &repeat_interleave_int);
  m.impl("nan_to_num", kCIA, &nan_to_num_impl);
  m.impl("nan_to_num_", kCIA, &nan_to_num_inplace);
  m.impl("isclose", kCIA, &isclose_impl);
  m.impl("allclose", kCIA, &allclose_impl);
  m.impl("equal", kCIA, &equal_impl);
  m.impl("is_floating_point", kCIA, &is_floating_point_impl);
  m.impl("clip", kCIA, &clip_impl);
  m.impl("clip_", kCIA, &clip_inplace);
  m.impl("var_mean", kCIA, &moments_all<false>);
  m.impl("var_mean.dim", kCIA, &moments_dim<false>);
  m.impl("var_mean.correction", kCIA, &moments_correction<false>);
  m.impl("std_mean", kCIA, &moments_all<true>);
  m.impl("std_mean.dim", kCIA, &moments_dim<true>);
  m.impl("std_mean.correction", kCIA, &moments_correction<true>);
  m.impl("square", kCIA, &square_impl);
  m.impl("baddbmm", kCIA, &baddbmm_impl);
}
