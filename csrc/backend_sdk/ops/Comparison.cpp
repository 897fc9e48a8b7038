// Comparisons (eq, ne, lt, le, gt, ge), logical_and/or/xor and
// bitwise_and/or/xor: CPU and Meta kernels of every variant plus the Scalar
// overloads. Comparisons and logical ops compute in the inputs' common dtype
// and produce bool (an out= or in-place self of another dtype takes the
// converted result, as in PyTorch). See Note [Element-wise kernels].
#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/detail/ElementwiseLoops.h>

namespace sdk::ops {
namespace {

// ---------------------------------------------------------------------------
// Element operations
// ---------------------------------------------------------------------------

#define SDK_PREDICATE(Name, expr)                     \
  struct Name {                                       \
    template <typename T>                             \
    bool operator()(T a, T b) const { return expr; }  \
  };
SDK_PREDICATE(EqOp, a == b)
SDK_PREDICATE(NeOp, a != b)
SDK_PREDICATE(LtOp, a < b)
SDK_PREDICATE(LeOp, a <= b)
SDK_PREDICATE(GtOp, a > b)
SDK_PREDICATE(GeOp, a >= b)
SDK_PREDICATE(LogicalAndOp, (a != T(0)) && (b != T(0)))
SDK_PREDICATE(LogicalOrOp, (a != T(0)) || (b != T(0)))
SDK_PREDICATE(LogicalXorOp, (a != T(0)) != (b != T(0)))
#undef SDK_PREDICATE

#define SDK_BIT_OP(Name, op)                                                           \
  struct Name {                                                                        \
    template <typename T>                                                              \
    T operator()(T a, T b) const {                                                     \
      if constexpr (std::is_same_v<T, bool>) return static_cast<bool>(a op b);         \
      else return static_cast<T>(a op b);                                              \
    }                                                                                  \
  };
SDK_BIT_OP(BitAndOp, &)
SDK_BIT_OP(BitOrOp, |)
SDK_BIT_OP(BitXorOp, ^)
#undef SDK_BIT_OP

template <typename Op>
void predicate_loop(const TensorIterator& iter) {
  cpu::dispatch_math_type(iter.common_dtype(), iter.op_name(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    cpu::binary_loop<T, bool>(iter, Op{});
  });
}

// The kernel name of PyTorch's dtype error: "bitwise_and_cpu".
template <typename Op>
constexpr const char* bit_kernel() {
  if constexpr (std::is_same_v<Op, BitAndOp>) return "bitwise_and_cpu";
  else if constexpr (std::is_same_v<Op, BitOrOp>) return "bitwise_or_cpu";
  else return "bitwise_xor_cpu";
}

template <typename Op>
void bitwise_loop(const TensorIterator& iter) {
  cpu::dispatch_integral(iter, bit_kernel<Op>(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    cpu::binary_loop<T, T>(iter, Op{});
  });
}

// ---------------------------------------------------------------------------
// Kernels: kCpu=false is the Meta kernel (build and checks only).
// ---------------------------------------------------------------------------

using Loop = void (*)(const TensorIterator&);

template <bool kCpu>
Tensor run_predicate(const char* op, Loop loop, Variant v, const Tensor& self, const Tensor& other, const Tensor& out) {
  TensorIterator iter(op);
  iter.allocate_outputs_as(ScalarType::Bool);
  build_binary_op(iter, v, self, other, out);
  if constexpr (kCpu) loop(iter);
  return variant_result(iter, v, self, out);
}

// Bitwise ops check the dtype in the Meta kernel too, so that a fake tensor
// fails where a real one would.
template <bool kCpu>
Tensor run_bitwise(const char* op, const char* kernel, Loop loop, Variant v, const Tensor& self, const Tensor& other,
                   const Tensor& out) {
  TensorIterator iter(op);
  build_binary_op(iter, v, self, other, out);
  if (!is_integral_type(iter.common_dtype(), /*include_bool=*/true)) {
    report_not_implemented_for(iter, kernel, iter.common_dtype());
  }
  if constexpr (kCpu) loop(iter);
  return variant_result(iter, v, self, out);
}

#define SDK_PREDICATE_KERNELS(id, fn_name, inplace_name, out_name, Op)                              \
  template <bool kCpu>                                                                              \
  Tensor id##_fn(const Tensor& self, const Tensor& other) {                                         \
    return run_predicate<kCpu>(fn_name, &predicate_loop<Op>, Variant::Functional, self, other, Tensor()); \
  }                                                                                                 \
  template <bool kCpu>                                                                              \
  Tensor id##_inplace(const Tensor& self, const Tensor& other) {                                    \
    return run_predicate<kCpu>(inplace_name, &predicate_loop<Op>, Variant::InPlace, self, other, Tensor()); \
  }                                                                                                 \
  template <bool kCpu>                                                                              \
  Tensor id##_out(const Tensor& self, const Tensor& other, const Tensor& out) {                     \
    return run_predicate<kCpu>(out_name, &predicate_loop<Op>, Variant::Out, self, other, out);      \
  }
SDK_PREDICATE_KERNELS(eq, "eq.Tensor", "eq_.Tensor", "eq.Tensor_out", EqOp)
SDK_PREDICATE_KERNELS(ne, "ne.Tensor", "ne_.Tensor", "ne.Tensor_out", NeOp)
SDK_PREDICATE_KERNELS(lt, "lt.Tensor", "lt_.Tensor", "lt.Tensor_out", LtOp)
SDK_PREDICATE_KERNELS(le, "le.Tensor", "le_.Tensor", "le.Tensor_out", LeOp)
SDK_PREDICATE_KERNELS(gt, "gt.Tensor", "gt_.Tensor", "gt.Tensor_out", GtOp)
SDK_PREDICATE_KERNELS(ge, "ge.Tensor", "ge_.Tensor", "ge.Tensor_out", GeOp)
SDK_PREDICATE_KERNELS(logical_and, "logical_and", "logical_and_", "logical_and.out", LogicalAndOp)
SDK_PREDICATE_KERNELS(logical_or, "logical_or", "logical_or_", "logical_or.out", LogicalOrOp)
SDK_PREDICATE_KERNELS(logical_xor, "logical_xor", "logical_xor_", "logical_xor.out", LogicalXorOp)
#undef SDK_PREDICATE_KERNELS

#define SDK_BITWISE_KERNELS(id, Op)                                                                         \
  template <bool kCpu>                                                                                      \
  Tensor id##_fn(const Tensor& self, const Tensor& other) {                                                 \
    return run_bitwise<kCpu>(#id ".Tensor", bit_kernel<Op>(), &bitwise_loop<Op>, Variant::Functional, self, \
                             other, Tensor());                                                              \
  }                                                                                                         \
  template <bool kCpu>                                                                                      \
  Tensor id##_inplace(const Tensor& self, const Tensor& other) {                                            \
    return run_bitwise<kCpu>(#id "_.Tensor", bit_kernel<Op>(), &bitwise_loop<Op>, Variant::InPlace, self,   \
                             other, Tensor());                                                              \
  }                                                                                                         \
  template <bool kCpu>                                                                                      \
  Tensor id##_out(const Tensor& self, const Tensor& other, const Tensor& out) {                             \
    return run_bitwise<kCpu>(#id ".Tensor_out", bit_kernel<Op>(), &bitwise_loop<Op>, Variant::Out, self,    \
                             other, out);                                                                   \
  }
SDK_BITWISE_KERNELS(bitwise_and, BitAndOp)
SDK_BITWISE_KERNELS(bitwise_or, BitOrOp)
SDK_BITWISE_KERNELS(bitwise_xor, BitXorOp)
#undef SDK_BITWISE_KERNELS

// ---------------------------------------------------------------------------
// Scalar overloads: the wrapped number through the Tensor overload.
// ---------------------------------------------------------------------------

using TT = Tensor(const Tensor&, const Tensor&);
using TTT = Tensor(const Tensor&, const Tensor&, const Tensor&);

#define SDK_SCALAR_OVERLOADS(id, fn_op, inplace_op, out_op)                      \
  Tensor id##_scalar(const Tensor& self, const Scalar& other) {                  \
    SDK_ATEN_OP(fn_op, TT);                                                      \
    return op.call(self, wrapped_scalar_tensor(other));                          \
  }                                                                              \
  Tensor id##_scalar_inplace(const Tensor& self, const Scalar& other) {          \
    SDK_ATEN_OP(inplace_op, TT);                                                 \
    return op.call(self, wrapped_scalar_tensor(other));                          \
  }                                                                              \
  Tensor id##_scalar_out(const Tensor& self, const Scalar& other, const Tensor& out) { \
    SDK_ATEN_OP(out_op, TTT);                                                    \
    return op.call(self, wrapped_scalar_tensor(other), out);                     \
  }
SDK_SCALAR_OVERLOADS(eq, "aten::eq.Tensor", "aten::eq_.Tensor", "aten::eq.Tensor_out")
SDK_SCALAR_OVERLOADS(ne, "aten::ne.Tensor", "aten::ne_.Tensor", "aten::ne.Tensor_out")
SDK_SCALAR_OVERLOADS(lt, "aten::lt.Tensor", "aten::lt_.Tensor", "aten::lt.Tensor_out")
SDK_SCALAR_OVERLOADS(le, "aten::le.Tensor", "aten::le_.Tensor", "aten::le.Tensor_out")
SDK_SCALAR_OVERLOADS(gt, "aten::gt.Tensor", "aten::gt_.Tensor", "aten::gt.Tensor_out")
SDK_SCALAR_OVERLOADS(ge, "aten::ge.Tensor", "aten::ge_.Tensor", "aten::ge.Tensor_out")
SDK_SCALAR_OVERLOADS(bitwise_and, "aten::bitwise_and.Tensor", "aten::bitwise_and_.Tensor", "aten::bitwise_and.Tensor_out")
SDK_SCALAR_OVERLOADS(bitwise_or, "aten::bitwise_or.Tensor", "aten::bitwise_or_.Tensor", "aten::bitwise_or.Tensor_out")
SDK_SCALAR_OVERLOADS(bitwise_xor, "aten::bitwise_xor.Tensor", "aten::bitwise_xor_.Tensor", "aten::bitwise_xor.Tensor_out")
#undef SDK_SCALAR_OVERLOADS

#define SDK_SCALAR_TENSOR(id, fn_op)                          \
  Tensor id##_scalar_tensor(const Scalar& self, const Tensor& other) { \
    SDK_ATEN_OP(fn_op, TT);                                   \
    return op.call(wrapped_scalar_tensor(self), other);       \
  }
SDK_SCALAR_TENSOR(bitwise_and, "aten::bitwise_and.Tensor")
SDK_SCALAR_TENSOR(bitwise_or, "aten::bitwise_or.Tensor")
SDK_SCALAR_TENSOR(bitwise_xor, "aten::bitwise_xor.Tensor")
#undef SDK_SCALAR_TENSOR

template <bool kCpu>
void register_comparison(Library& m) {
#define SDK_IMPL(id, fn, inplace, out)   \
  m.impl(fn, &id##_fn<kCpu>);            \
  m.impl(inplace, &id##_inplace<kCpu>);  \
  m.impl(out, &id##_out<kCpu>);
  SDK_IMPL(eq, "eq.Tensor", "eq_.Tensor", "eq.Tensor_out")
  SDK_IMPL(ne, "ne.Tensor", "ne_.Tensor", "ne.Tensor_out")
  SDK_IMPL(lt, "lt.Tensor", "lt_.Tensor", "lt.Tensor_out")
  SDK_IMPL(le, "le.Tensor", "le_.Tensor", "le.Tensor_out")
  SDK_IMPL(gt, "gt.Tensor", "gt_.Tensor", "gt.Tensor_out")
  SDK_IMPL(ge, "ge.Tensor", "ge_.Tensor", "ge.Tensor_out")
  SDK_IMPL(logical_and, "logical_and", "logical_and_", "logical_and.out")
  SDK_IMPL(logical_or, "logical_or", "logical_or_", "logical_or.out")
  SDK_IMPL(logical_xor, "logical_xor", "logical_xor_", "logical_xor.out")
  SDK_IMPL(bitwise_and, "bitwise_and.Tensor", "bitwise_and_.Tensor", "bitwise_and.Tensor_out")
  SDK_IMPL(bitwise_or, "bitwise_or.Tensor", "bitwise_or_.Tensor", "bitwise_or.Tensor_out")
  SDK_IMPL(bitwise_xor, "bitwise_xor.Tensor", "bitwise_xor_.Tensor", "bitwise_xor.Tensor_out")
#undef SDK_IMPL
}

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_IMPL(aten, CPU, m) { sdk::ops::register_comparison<true>(m); }
SDK_LIBRARY_IMPL(aten, Meta, m) { sdk::ops::register_comparison<false>(m); }

SDK_LIBRARY_IMPL(aten, CompositeExplicitAutograd, m) {
  using namespace sdk::ops;
#define SDK_IMPL_SCALAR(id, name)                       \
  m.impl(name ".Scalar", &id##_scalar);                 \
  m.impl(name "_.Scalar", &id##_scalar_inplace);        \
  m.impl(name ".Scalar_out", &id##_scalar_out);
  SDK_IMPL_SCALAR(eq, "eq")
  SDK_IMPL_SCALAR(ne, "ne")
  SDK_IMPL_SCALAR(lt, "lt")
  SDK_IMPL_SCALAR(le, "le")
  SDK_IMPL_SCALAR(gt, "gt")
  SDK_IMPL_SCALAR(ge, "ge")
  SDK_IMPL_SCALAR(bitwise_and, "bitwise_and")
  SDK_IMPL_SCALAR(bitwise_or, "bitwise_or")
  SDK_IMPL_SCALAR(bitwise_xor, "bitwise_xor")
#undef SDK_IMPL_SCALAR
  m.impl("bitwise_and.Scalar_Tensor", &bitwise_and_scalar_tensor);
  m.impl("bitwise_or.Scalar_Tensor", &bitwise_or_scalar_tensor);
  m.impl("bitwise_xor.Scalar_Tensor", &bitwise_xor_scalar_tensor);
}
