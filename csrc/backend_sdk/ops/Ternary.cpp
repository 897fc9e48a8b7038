// where and clamp: the element-wise operators with up to three inputs; CPU
// and Meta kernels of every variant plus where's Scalar overloads. See
// Note [Element-wise kernels] (ops/detail/ElementwiseLoops.h).
#include <limits>
#include <optional>

#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/detail/ElementwiseLoops.h>

namespace sdk::ops {
namespace {

ScalarType result_type_of(std::initializer_list<const Tensor*> tensors) {
  ResultTypeState state;
  for (const Tensor* t : tensors) {
    if (t && t->defined()) state.update_tensor(t->dtype(), t->dim(), t->impl()->is_wrapped_number());
  }
  return state.result();
}

// ---------------------------------------------------------------------------
// where(condition, self, other)
// ---------------------------------------------------------------------------

struct WhereOp {
  template <typename T>
  T operator()(bool c, T a, T b) const { return c ? a : b; }
};

template <bool kCpu>
Tensor run_where(const char* op, Variant v, const Tensor& condition, const Tensor& self, const Tensor& other,
                 const Tensor& out) {
  // uint8 conditions are deprecated in PyTorch but still accepted.
  SDK_CHECK_KIND(::sdk::ErrorKind::Type,
                 condition.dtype() == ScalarType::Bool || condition.dtype() == ScalarType::UInt8, op,
                 ": where expected condition to be a boolean tensor, but got a tensor with dtype ",
                 legacy_type_name(condition.dtype()));
  const ScalarType result = result_type_of({&self, &other});
  SDK_CHECK_KIND(::sdk::ErrorKind::Type, v != Variant::Out || !out.defined() || out.dtype() == result, op,
                 ": Expected out type to be ", legacy_type_name(result), " but got ", legacy_type_name(out.dtype()));
  TensorIterator iter(op);
  iter.declare_static_dtype(result);
  add_variant_output(iter, v, self, out);
  iter.add_input(condition).add_input(self).add_input(other);
  iter.build();
  if constexpr (kCpu) {
    cpu::dispatch_storage_type(result, op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      cpu::ternary_loop<bool, T, T, T>(iter, WhereOp{});
    });
  }
  return variant_result(iter, v, self, out);
}

template <bool kCpu>
Tensor where_self(const Tensor& condition, const Tensor& self, const Tensor& other) {
  return run_where<kCpu>("where.self", Variant::Functional, condition, self, other, Tensor());
}
template <bool kCpu>
Tensor where_self_out(const Tensor& condition, const Tensor& self, const Tensor& other, const Tensor& out) {
  return run_where<kCpu>("where.self_out", Variant::Out, condition, self, other, out);
}

using WhereSig = Tensor(const Tensor&, const Tensor&, const Tensor&);
Tensor where_scalar_self(const Tensor& condition, const Scalar& self, const Tensor& other) {
  SDK_ATEN_OP("aten::where.self", WhereSig);
  return op.call(condition, wrapped_scalar_tensor(self), other);
}
Tensor where_scalar_other(const Tensor& condition, const Tensor& self, const Scalar& other) {
  SDK_ATEN_OP("aten::where.self", WhereSig);
  return op.call(condition, self, wrapped_scalar_tensor(other));
}
Tensor where_scalar(const Tensor& condition, const Scalar& self, const Scalar& other) {
  SDK_ATEN_OP("aten::where.self", WhereSig);
  return op.call(condition, wrapped_scalar_tensor(self), wrapped_scalar_tensor(other));
}

// ---------------------------------------------------------------------------
// clamp(self, min, max): max(self, min) then min(., max), so min > max gives
// max; a NaN anywhere gives NaN, as in PyTorch.
// ---------------------------------------------------------------------------

template <typename T>
T clamp_value(T x, T lo, T hi) {
  const T r = (x < lo || lo != lo) ? lo : x;
  return (r > hi || hi != hi) ? hi : r;
}

template <typename T>
struct ClampScalarOp {
  T lo, hi;
  T operator()(T x) const { return clamp_value(x, lo, hi); }
};
struct ClampOp {
  template <typename T>
  T operator()(T x, T lo, T hi) const { return clamp_value(x, lo, hi); }
};
struct ClampMinOp {
  template <typename T>
  T operator()(T x, T lo) const { return (x < lo || lo != lo) ? lo : x; }
};
struct ClampMaxOp {
  template <typename T>
  T operator()(T x, T hi) const { return (x > hi || hi != hi) ? hi : x; }
};

void check_clamp_bounds(const char* op, bool has_min, bool has_max) {
  SDK_CHECK_KIND(::sdk::ErrorKind::Value, has_min || has_max, op,
                 ": At least one of 'min' or 'max' must not be None");
}

// The bound as T, or the type's extreme when absent (checked by Meta too).
template <typename T>
T bound_or(const std::optional<Scalar>& s, const char* op, const char* arg, bool upper) {
  if (s) return checked_scalar_to<T>(*s, op, arg, cpu::scalar_type_of<T>());
  using L = std::numeric_limits<T>;
  if constexpr (L::has_infinity) return upper ? L::infinity() : -L::infinity();
  else return upper ? L::max() : L::lowest();
}

template <bool kCpu>
Tensor run_clamp(const char* op, Variant v, const Tensor& self, const std::optional<Scalar>& min,
                 const std::optional<Scalar>& max, const Tensor& out) {
  check_clamp_bounds(op, min.has_value(), max.has_value());
  const Tensor lo = min ? wrapped_scalar_tensor(*min) : Tensor();
  const Tensor hi = max ? wrapped_scalar_tensor(*max) : Tensor();
  TensorIterator iter(op);
  iter.declare_static_dtype(result_type_of({&self, &lo, &hi}));
  add_variant_output(iter, v, self, out);
  iter.add_input(self);
  iter.build();
  cpu::dispatch_math_type(iter.common_dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const ClampScalarOp<T> clamp{bound_or<T>(min, op, "min", false), bound_or<T>(max, op, "max", true)};
    if constexpr (kCpu) cpu::unary_loop<T, T>(iter, clamp);
  });
  return variant_result(iter, v, self, out);
}

template <bool kCpu>
Tensor clamp_fn(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  return run_clamp<kCpu>("clamp", Variant::Functional, self, min, max, Tensor());
}
template <bool kCpu>
Tensor clamp_inplace(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  return run_clamp<kCpu>("clamp_", Variant::InPlace, self, min, max, Tensor());
}
template <bool kCpu>
Tensor clamp_out(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max,
                 const Tensor& out) {
  return run_clamp<kCpu>("clamp.out", Variant::Out, self, min, max, out);
}

template <bool kCpu>
Tensor run_clamp_tensor(const char* op, Variant v, const Tensor& self, const std::optional<Tensor>& min,
                        const std::optional<Tensor>& max, const Tensor& out) {
  const bool has_min = min && min->defined(), has_max = max && max->defined();
  check_clamp_bounds(op, has_min, has_max);
  TensorIterator iter(op);
  add_variant_output(iter, v, self, out);
  iter.add_input(self);
  if (has_min) iter.add_input(*min);
  if (has_max) iter.add_input(*max);
  iter.build();
  if constexpr (kCpu) {
    cpu::dispatch_math_type(iter.common_dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if (has_min && has_max) cpu::ternary_loop<T, T, T, T>(iter, ClampOp{});
      else if (has_min) cpu::binary_loop<T, T>(iter, ClampMinOp{});
      else cpu::binary_loop<T, T>(iter, ClampMaxOp{});
    });
  }
  return variant_result(iter, v, self, out);
}

template <bool kCpu>
Tensor clamp_tensor(const Tensor& self, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  return run_clamp_tensor<kCpu>("clamp.Tensor", Variant::Functional, self, min, max, Tensor());
}
template <bool kCpu>
Tensor clamp_tensor_inplace(const Tensor& self, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  return run_clamp_tensor<kCpu>("clamp_.Tensor", Variant::InPlace, self, min, max, Tensor());
}
template <bool kCpu>
Tensor clamp_tensor_out(const Tensor& self, const std::optional<Tensor>& min, const std::optional<Tensor>& max,
                        const Tensor& out) {
  return run_clamp_tensor<kCpu>("clamp.Tensor_out", Variant::Out, self, min, max, out);
}

template <bool kCpu>
void register_ternary(Library& m) {
  m.impl("where.self", &where_self<kCpu>);
  m.impl("where.self_out", &where_self_out<kCpu>);
  m.impl("clamp", &clamp_fn<kCpu>);
  m.impl("clamp_", &clamp_inplace<kCpu>);
  m.impl("clamp.out", &clamp_out<kCpu>);
  m.impl("clamp.Tensor", &clamp_tensor<kCpu>);
  m.impl("clamp_.Tensor", &clamp_tensor_inplace<kCpu>);
  m.impl("clamp.Tensor_out", &clamp_tensor_out<kCpu>);
}

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_IMPL(aten, CPU, m) { sdk::ops::register_ternary<true>(m); }
SDK_LIBRARY_IMPL(aten, Meta, m) { sdk::ops::register_ternary<false>(m); }

SDK_LIBRARY_IMPL(aten, CompositeExplicitAutograd, m) {
  using namespace sdk::ops;
  m.impl("where.ScalarSelf", &where_scalar_self);
  m.impl("where.ScalarOther", &where_scalar_other);
  m.impl("where.Scalar", &where_scalar);
}
