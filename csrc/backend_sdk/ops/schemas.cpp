// The schemas of the `aten` operators, exactly as PyTorch's
// native_functions.yaml writes them. This is the one SDK_LIBRARY(aten) block:
// every aten operator the SDK knows is defined here; kernels live in the
// other files of csrc/ops.
#include <backend_sdk/dispatch/Library.h>

SDK_LIBRARY(aten, m) {
  // factories
  m.def("empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
        "bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor");
  m.def("empty_strided(SymInt[] size, SymInt[] stride, *, ScalarType? dtype=None, Layout? layout=None, "
        "Device? device=None, bool? pin_memory=None) -> Tensor");

  // in-place writes
  m.def("copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)");
  m.def("fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)");
  m.def("resize_(Tensor(a!) self, SymInt[] size, *, MemoryFormat? memory_format=None) -> Tensor(a!)");

  // element-wise arithmetic
  m.def("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  m.def("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)");
  m.def("add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)");
  m.def("add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor");
  m.def("mul.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("mul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("mul.Scalar(Tensor self, Scalar other) -> Tensor");

  // element-wise arithmetic (more)
  m.def("sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  m.def("sub_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)");
  m.def("sub.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)");
  m.def("sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor");
  m.def("sub_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)");
  m.def("rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  m.def("rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor");
  m.def("div.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("div_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("div.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor");
  m.def("div_.Tensor_mode(Tensor(a!) self, Tensor other, *, str? rounding_mode) -> Tensor(a!)");
  m.def("div.out_mode(Tensor self, Tensor other, *, str? rounding_mode, Tensor(a!) out) -> Tensor(a!)");
  m.def("div.Scalar(Tensor self, Scalar other) -> Tensor");
  m.def("div_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)");
  m.def("div.Scalar_mode(Tensor self, Scalar other, *, str? rounding_mode) -> Tensor");
  m.def("div_.Scalar_mode(Tensor(a!) self, Scalar other, *, str? rounding_mode) -> Tensor(a!)");
  m.def("floor_divide(Tensor self, Tensor other) -> Tensor");
  m.def("floor_divide_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("floor_divide.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("floor_divide.Scalar(Tensor self, Scalar other) -> Tensor");
  m.def("floor_divide_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)");
  m.def("remainder.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("remainder_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("remainder.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("remainder.Scalar(Tensor self, Scalar other) -> Tensor");
  m.def("remainder_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)");
  m.def("remainder.Scalar_Tensor(Scalar self, Tensor other) -> Tensor");
  m.def("pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor");
  m.def("pow_.Tensor(Tensor(a!) self, Tensor exponent) -> Tensor(a!)");
  m.def("pow.Tensor_Tensor_out(Tensor self, Tensor exponent, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor");
  m.def("pow_.Scalar(Tensor(a!) self, Scalar exponent) -> Tensor(a!)");
  m.def("pow.Tensor_Scalar_out(Tensor self, Scalar exponent, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("pow.Scalar(Scalar self, Tensor exponent) -> Tensor");
  m.def("pow.Scalar_out(Scalar self, Tensor exponent, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("maximum(Tensor self, Tensor other) -> Tensor");
  m.def("maximum.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("minimum(Tensor self, Tensor other) -> Tensor");
  m.def("minimum.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");

  // comparisons (bool results)
  m.def("eq.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("eq_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("eq.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("eq.Scalar(Tensor self, Scalar other) -> Tensor");
  m.def("eq_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)");
  m.def("eq.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("ne.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("ne_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("ne.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("ne.Scalar(Tensor self, Scalar other) -> Tensor");
  m.def("ne_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)");
  m.def("ne.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("lt.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("lt_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("lt.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("lt.Scalar(Tensor self, Scalar other) -> Tensor");
  m.def("lt_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)");
  m.def("lt.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("le.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("le_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("le.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("le.Scalar(Tensor self, Scalar other) -> Tensor");
  m.def("le_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)");
  m.def("le.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("gt.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("gt_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("gt.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("gt.Scalar(Tensor self, Scalar other) -> Tensor");
  m.def("gt_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)");
  m.def("gt.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("ge.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("ge_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("ge.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("ge.Scalar(Tensor self, Scalar other) -> Tensor");
  m.def("ge_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)");
  m.def("ge.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)");

  // logical and bitwise
  m.def("logical_and(Tensor self, Tensor other) -> Tensor");
  m.def("logical_and_(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("logical_and.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("logical_or(Tensor self, Tensor other) -> Tensor");
  m.def("logical_or_(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("logical_or.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("logical_xor(Tensor self, Tensor other) -> Tensor");
  m.def("logical_xor_(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("logical_xor.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("logical_not(Tensor self) -> Tensor");
  m.def("logical_not_(Tensor(a!) self) -> Tensor(a!)");
  m.def("logical_not.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("bitwise_and.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("bitwise_and_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("bitwise_and.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("bitwise_and.Scalar(Tensor self, Scalar other) -> Tensor");
  m.def("bitwise_and_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)");
  m.def("bitwise_and.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("bitwise_and.Scalar_Tensor(Scalar self, Tensor other) -> Tensor");
  m.def("bitwise_or.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("bitwise_or_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("bitwise_or.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("bitwise_or.Scalar(Tensor self, Scalar other) -> Tensor");
  m.def("bitwise_or_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)");
  m.def("bitwise_or.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("bitwise_or.Scalar_Tensor(Scalar self, Tensor other) -> Tensor");
  m.def("bitwise_xor.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("bitwise_xor_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("bitwise_xor.Tensor_out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("bitwise_xor.Scalar(Tensor self, Scalar other) -> Tensor");
  m.def("bitwise_xor_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)");
  m.def("bitwise_xor.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("bitwise_xor.Scalar_Tensor(Scalar self, Tensor other) -> Tensor");
  m.def("bitwise_not(Tensor self) -> Tensor");
  m.def("bitwise_not_(Tensor(a!) self) -> Tensor(a!)");
  m.def("bitwise_not.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");

  // selection and clamping
  m.def("where.self(Tensor condition, Tensor self, Tensor other) -> Tensor");
  m.def("where.self_out(Tensor condition, Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("where.ScalarSelf(Tensor condition, Scalar self, Tensor other) -> Tensor");
  m.def("where.ScalarOther(Tensor condition, Tensor self, Scalar other) -> Tensor");
  m.def("where.Scalar(Tensor condition, Scalar self, Scalar other) -> Tensor");
  m.def("clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor");
  m.def("clamp_(Tensor(a!) self, Scalar? min=None, Scalar? max=None) -> Tensor(a!)");
  m.def("clamp.out(Tensor self, Scalar? min=None, Scalar? max=None, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor");
  m.def("clamp_.Tensor(Tensor(a!) self, Tensor? min=None, Tensor? max=None) -> Tensor(a!)");
  m.def("clamp.Tensor_out(Tensor self, Tensor? min=None, Tensor? max=None, *, Tensor(a!) out) -> Tensor(a!)");

  // indexing (kernels in Indexing.cpp; `Tensor?[]` is OptionalTensorList, see Note [Lists of optional tensors])
  m.def("index.Tensor(Tensor self, Tensor?[] indices) -> Tensor");
  m.def("index.Tensor_out(Tensor self, Tensor?[] indices, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor(a!)");
  m.def("index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor");
  m.def("_index_put_impl_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False, "
        "bool unsafe=False) -> Tensor(a!)");
  m.def("index_select(Tensor self, int dim, Tensor index) -> Tensor");
  m.def("index_select.out(Tensor self, int dim, Tensor index, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor");
  m.def("gather.out(Tensor self, int dim, Tensor index, *, bool sparse_grad=False, Tensor(a!) out) -> Tensor(a!)");
  m.def("scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor");
  m.def("scatter_.src(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)");
  m.def("scatter.src_out(Tensor self, int dim, Tensor index, Tensor src, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("scatter.value(Tensor self, int dim, Tensor index, Scalar value) -> Tensor");
  m.def("scatter_.value(Tensor(a!) self, int dim, Tensor index, Scalar value) -> Tensor(a!)");
  m.def("scatter.value_out(Tensor self, int dim, Tensor index, Scalar value, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("scatter.reduce(Tensor self, int dim, Tensor index, Tensor src, *, str reduce) -> Tensor");
  m.def("scatter_.reduce(Tensor(a!) self, int dim, Tensor index, Tensor src, *, str reduce) -> Tensor(a!)");
  m.def("scatter.reduce_out(Tensor self, int dim, Tensor index, Tensor src, *, str reduce, Tensor(a!) out) -> "
        "Tensor(a!)");
  m.def("scatter.value_reduce(Tensor self, int dim, Tensor index, Scalar value, *, str reduce) -> Tensor");
  m.def("scatter_.value_reduce(Tensor(a!) self, int dim, Tensor index, Scalar value, *, str reduce) -> Tensor(a!)");
  m.def("scatter.value_reduce_out(Tensor self, int dim, Tensor index, Scalar value, *, str reduce, "
        "Tensor(a!) out) -> Tensor(a!)");
  m.def("scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor");
  m.def("scatter_add_(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)");
  m.def("scatter_add.out(Tensor self, int dim, Tensor index, Tensor src, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True) -> "
        "Tensor");
  m.def("scatter_reduce_.two(Tensor(a!) self, int dim, Tensor index, Tensor src, str reduce, *, "
        "bool include_self=True) -> Tensor(a!)");
  m.def("scatter_reduce.two_out(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, "
        "bool include_self=True, Tensor(a!) out) -> Tensor(a!)");
  m.def("masked_select(Tensor self, Tensor mask) -> Tensor");
  m.def("masked_select.out(Tensor self, Tensor mask, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("nonzero(Tensor self) -> Tensor");
  m.def("nonzero.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("nonzero_numpy(Tensor self) -> Tensor[]");
  m.def("take(Tensor self, Tensor index) -> Tensor");
  m.def("take.out(Tensor self, Tensor index, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("flip(Tensor self, int[] dims) -> Tensor");
  m.def("flip.out(Tensor self, int[] dims, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("where(Tensor condition) -> Tensor[]");

  // conversions and shape composites (kernels in Conversions.cpp)
  m.def("clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor");
  m.def("_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
        "bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor");
  m.def("to.dtype_layout(Tensor(a) self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
        "bool? pin_memory=None, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) "
        "-> Tensor(a)");
  m.def("to.device(Tensor(a) self, Device device, ScalarType dtype, bool non_blocking=False, bool copy=False, "
        "MemoryFormat? memory_format=None) -> Tensor(a)");
  m.def("to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, bool copy=False, "
        "MemoryFormat? memory_format=None) -> Tensor(a)");
  m.def("to.other(Tensor(a) self, Tensor other, bool non_blocking=False, bool copy=False, "
        "MemoryFormat? memory_format=None) -> Tensor(a)");
  m.def("flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)");
  m.def("t(Tensor(a) self) -> Tensor(a)");

  // unary
  m.def("neg(Tensor self) -> Tensor");
  m.def("neg_(Tensor(a!) self) -> Tensor(a!)");
  m.def("neg.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("abs(Tensor self) -> Tensor");
  m.def("abs_(Tensor(a!) self) -> Tensor(a!)");
  m.def("abs.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("exp(Tensor self) -> Tensor");
  m.def("exp_(Tensor(a!) self) -> Tensor(a!)");
  m.def("exp.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("log(Tensor self) -> Tensor");
  m.def("log_(Tensor(a!) self) -> Tensor(a!)");
  m.def("log.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("log1p(Tensor self) -> Tensor");
  m.def("log1p_(Tensor(a!) self) -> Tensor(a!)");
  m.def("log1p.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("expm1(Tensor self) -> Tensor");
  m.def("expm1_(Tensor(a!) self) -> Tensor(a!)");
  m.def("expm1.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("sqrt(Tensor self) -> Tensor");
  m.def("sqrt_(Tensor(a!) self) -> Tensor(a!)");
  m.def("sqrt.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("rsqrt(Tensor self) -> Tensor");
  m.def("rsqrt_(Tensor(a!) self) -> Tensor(a!)");
  m.def("rsqrt.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("sin(Tensor self) -> Tensor");
  m.def("sin_(Tensor(a!) self) -> Tensor(a!)");
  m.def("sin.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("cos(Tensor self) -> Tensor");
  m.def("cos_(Tensor(a!) self) -> Tensor(a!)");
  m.def("cos.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("tan(Tensor self) -> Tensor");
  m.def("tan_(Tensor(a!) self) -> Tensor(a!)");
  m.def("tan.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("tanh(Tensor self) -> Tensor");
  m.def("tanh_(Tensor(a!) self) -> Tensor(a!)");
  m.def("tanh.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("sigmoid(Tensor self) -> Tensor");
  m.def("sigmoid_(Tensor(a!) self) -> Tensor(a!)");
  m.def("sigmoid.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("erf(Tensor self) -> Tensor");
  m.def("erf_(Tensor(a!) self) -> Tensor(a!)");
  m.def("erf.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("reciprocal(Tensor self) -> Tensor");
  m.def("reciprocal_(Tensor(a!) self) -> Tensor(a!)");
  m.def("reciprocal.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("floor(Tensor self) -> Tensor");
  m.def("floor_(Tensor(a!) self) -> Tensor(a!)");
  m.def("floor.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("ceil(Tensor self) -> Tensor");
  m.def("ceil_(Tensor(a!) self) -> Tensor(a!)");
  m.def("ceil.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("trunc(Tensor self) -> Tensor");
  m.def("trunc_(Tensor(a!) self) -> Tensor(a!)");
  m.def("trunc.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("round(Tensor self) -> Tensor");
  m.def("round_(Tensor(a!) self) -> Tensor(a!)");
  m.def("round.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("sign(Tensor self) -> Tensor");
  m.def("sign_(Tensor(a!) self) -> Tensor(a!)");
  m.def("sign.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("silu(Tensor self) -> Tensor");
  m.def("silu_(Tensor(a!) self) -> Tensor(a!)");
  m.def("silu.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("gelu(Tensor self, *, str approximate=\"none\") -> Tensor");
  m.def("gelu_(Tensor(a!) self, *, str approximate=\"none\") -> Tensor(a!)");
  m.def("gelu.out(Tensor self, *, str approximate=\"none\", Tensor(a!) out) -> Tensor(a!)");
  m.def("round.decimals(Tensor self, *, int decimals) -> Tensor");
  m.def("round_.decimals(Tensor(a!) self, *, int decimals) -> Tensor(a!)");
  m.def("round.decimals_out(Tensor self, *, int decimals, Tensor(a!) out) -> Tensor(a!)");
  m.def("relu(Tensor self) -> Tensor");
  m.def("relu_(Tensor(a!) self) -> Tensor(a!)");


  // views
  m.def("view(Tensor(a) self, SymInt[] size) -> Tensor(a)");
  m.def("as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a)");

  // reading a value back
  m.def("_local_scalar_dense(Tensor self) -> Scalar");
}
