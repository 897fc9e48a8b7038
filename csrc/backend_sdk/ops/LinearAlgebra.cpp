// Matrix products on CPU and Meta.
//
// Note [Matrix product kernels]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every product reduces to gemm_into(out, a, b, beta, alpha): out = beta*out
// + alpha * a @ b for 2-D CPU tensors of one dtype. float32/float64 go to BLAS
// (Note [BLAS loading]) directly when each operand's strides are a row-major
// or column-major layout BLAS accepts, else through a contiguous copy;
// float16/bfloat16 are computed in float32; integer types by a plain loop in
// int64 (as PyTorch, which supports integer mm on CPU); bool is refused.
// Shape and dtype checks are shared with the Meta kernels, so both agree.
#include <backend_sdk/ops/LinearAlgebra.h>

#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/detail/Blas.h>
#include <backend_sdk/ops/detail/Casting.h>
#include <backend_sdk/ops/Functions.h>
#include <backend_sdk/ops/detail/Resize.h>

namespace sdk::ops {
namespace {

// ---- checks shared by CPU and Meta ----
void check_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
  SDK_CHECK_TYPE(a.dtype() == b.dtype(), op, ": expected m1 and m2 to have the same dtype, but got: ",
                 scalar_type_name(a.dtype()), " != ", scalar_type_name(b.dtype()));
  check_same_device(op, a, b);
}

void check_mm(const char* op, const Tensor& a, const Tensor& b) {
  SDK_CHECK_VALUE(a.dim() == 2, op, ": self must be a matrix, got a ", a.dim(), "-D tensor");
  SDK_CHECK_VALUE(b.dim() == 2, op, ": mat2 must be a matrix, got a ", b.dim(), "-D tensor");
  SDK_CHECK_VALUE(a.size(1) == b.size(0), op, ": mat1 and mat2 shapes cannot be multiplied (", a.size(0), "x",
                  a.size(1), " and ", b.size(0), "x", b.size(1), ")");
  check_same_dtype(op, a, b);
}

void check_bmm(const char* op, const Tensor& a, const Tensor& b) {
  SDK_CHECK_VALUE(a.dim() == 3, op, ": batch1 must be a 3D tensor, got a ", a.dim(), "-D tensor");
  SDK_CHECK_VALUE(b.dim() == 3, op, ": batch2 must be a 3D tensor, got a ", b.dim(), "-D tensor");
  SDK_CHECK_VALUE(a.size(0) == b.size(0), op, ": batch1 and batch2 must have same number of batches, got ",
                  a.size(0), " and ", b.size(0));
  SDK_CHECK_VALUE(a.size(2) == b.size(1), op, ": Expected size for first two dimensions of batch2 tensor to be: [",
                  a.size(0), ", ", a.size(2), "] but got: [", b.size(0), ", ", b.size(1), "].");
  check_same_dtype(op, a, b);
}

void check_dot(const char* op, const Tensor& a, const Tensor& b) {
  SDK_CHECK_VALUE(a.dim() == 1 && b.dim() == 1, op, ": 1D tensors expected, but got ", a.dim(), "D and ", b.dim(),
                  "D tensors");
  SDK_CHECK_VALUE(a.numel() == b.numel(), op, ": inconsistent tensor size, expected tensor [", a.numel(),
                  "] and src [", b.numel(), "] to have the same number of elements, but got ", a.numel(), " and ",
                  b.numel(), " elements respectively");
  SDK_CHECK_TYPE(a.dtype() == b.dtype(), op, ": expected both vectors to have same dtype, but found ",
                 scalar_type_name(a.dtype()), " and ", scalar_type_name(b.dtype()));
  check_same_device(op, a, b);
}

// out= handling: an empty out is resized, otherwise its shape must match.
void prepare_out(const char* op, const Tensor& out, IntArrayRef sizes, ScalarType dtype, Device device) {
  SDK_CHECK_TYPE(out.dtype() == dtype, op, ": expected out to have dtype ", scalar_type_name(dtype), ", got ",
                 scalar_type_name(out.dtype()));
  SDK_CHECK_VALUE(out.device() == device, op, ": expected out on ", device, ", got ", out.device());
  resize_output(out, sizes, op);  // Note [Resizing out= arguments]
}

// ---- the CPU computation ----
// BLAS layout of a 2-D operand: row-major (trans=false) or column-major
// (trans=true) with leading dimension ld; false if neither.
bool blas_layout(const Tensor& t, bool* trans, int64_t* ld) {
  int64_t rows = t.size(0), cols = t.size(1), rs = t.stride(0), cs = t.stride(1);
  if (cs == 1 || cols == 1) {
    if (rows == 1 || rs >= std::max<int64_t>(1, cols)) {
      *trans = false;
      *ld = rows == 1 ? std::max<int64_t>(1, cols) : rs;
      return true;
    }
  }
  if (rs == 1 || rows == 1) {
    if (cols == 1 || cs >= std::max<int64_t>(1, rows)) {
      *trans = true;
      *ld = cols == 1 ? std::max<int64_t>(1, rows) : cs;
      return true;
    }
  }
  return false;
}

Tensor contiguous_as(const Tensor& t, ScalarType dtype) {
  if (t.dtype() == dtype && t.is_contiguous()) return t;
  Tensor out = make_tensor(t.sizes(), dtype, t.device());
  return copy_(out, t);
}

void gemm_float(const Tensor& out, const Tensor& a, const Tensor& b, double beta, double alpha) {
  bool ta, tb;
  int64_t lda, ldb;
  Tensor ca = blas_layout(a, &ta, &lda) ? a : contiguous_as(a, a.dtype());
  Tensor cb = blas_layout(b, &tb, &ldb) ? b : contiguous_as(b, b.dtype());
  if (!ca.is_same(a)) blas_layout(ca, &ta, &lda);
  if (!cb.is_same(b)) blas_layout(cb, &tb, &ldb);
  bool out_direct = out.stride(1) == 1 && (out.size(0) == 1 || out.stride(0) >= std::max<int64_t>(1, out.size(1)));
  Tensor c = out_direct ? out : contiguous_as(out, out.dtype());
  int64_t ldc = c.size(0) == 1 ? std::max<int64_t>(1, c.size(1)) : c.stride(0);
  blas::gemm(out.dtype(), ta, tb, a.size(0), b.size(1), a.size(1), alpha, ca.data_ptr(), lda, cb.data_ptr(), ldb,
             beta, c.data_ptr(), ldc);
  if (!out_direct) copy_(out, c);
}

template <typename T>
void gemm_integral(const Tensor& out, const Tensor& a, const Tensor& b, int64_t beta, int64_t alpha) {
  int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  const T* pa = a.data_ptr<T>();
  const T* pb = b.data_ptr<T>();
  T* pc = out.data_ptr<T>();
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      int64_t acc = 0;
      for (int64_t p = 0; p < k; ++p) {
        acc += static_cast<int64_t>(pa[i * a.stride(0) + p * a.stride(1)]) *
               static_cast<int64_t>(pb[p * b.stride(0) + j * b.stride(1)]);
      }
      T& dst = pc[i * out.stride(0) + j * out.stride(1)];
      dst = static_cast<T>(alpha * acc + (beta == 0 ? 0 : beta * static_cast<int64_t>(dst)));
    }
  }
}

// See Note [Matrix product kernels].
void gemm_into(const char* op, const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& beta,
               const Scalar& alpha) {
  ScalarType t = out.dtype();
  switch (t) {
    case ScalarType::Float32:
    case ScalarType::Float64:
      gemm_float(out, a, b, beta.to_double(), alpha.to_double());
      return;
    case ScalarType::Float16:
    case ScalarType::BFloat16: {
      Tensor c = contiguous_as(out, ScalarType::Float32);
      gemm_float(c, contiguous_as(a, ScalarType::Float32), contiguous_as(b, ScalarType::Float32), beta.to_double(),
                 alpha.to_double());
      copy_(out, c);
      return;
    }
    case ScalarType::Bool:
      SDK_THROW(Type, op, ": \"addmm_impl_cpu_\" not implemented for 'Bool'");
    default:
      SDK_CHECK_TYPE(!alpha.is_floating_point() && !beta.is_floating_point(), op,
                     ": For integral input tensors, argument alpha and beta must not be floating point numbers.");
      SDK_DISPATCH_ALL_TYPES(t, op, [&] {
        if constexpr (std::is_integral_v<scalar_t> && !std::is_same_v<scalar_t, bool>) {
          gemm_integral<scalar_t>(out, a, b, beta.to_int(), alpha.to_int());
        }
      });
  }
}

Tensor mm_cpu(const Tensor& self, const Tensor& mat2) {
  check_mm("mm", self, mat2);
  Tensor out = make_tensor({self.size(0), mat2.size(1)}, self.dtype(), self.device());
  gemm_into("mm", out, self, mat2, Scalar(int64_t{0}), Scalar(int64_t{1}));
  return out;
}

Tensor mm_out_cpu(const Tensor& self, const Tensor& mat2, const Tensor& out) {
  check_mm("mm.out", self, mat2);
  prepare_out("mm.out", out, {self.size(0), mat2.size(1)}, self.dtype(), self.device());
  gemm_into("mm.out", out, self, mat2, Scalar(int64_t{0}), Scalar(int64_t{1}));
  out.impl()->bump_version();
  return out;
}

Tensor mm_meta(const Tensor& self, const Tensor& mat2) {
  check_mm("mm", self, mat2);
  return make_tensor({self.size(0), mat2.size(1)}, self.dtype(), self.device());
}

Tensor matrix_of(const Tensor& batch, int64_t i) {
  return make_view(batch, {batch.size(1), batch.size(2)}, {batch.stride(1), batch.stride(2)},
                   batch.storage_offset() + i * batch.stride(0), "bmm");
}

void bmm_into(const char* op, const Tensor& out, const Tensor& self, const Tensor& mat2) {
  for (int64_t i = 0; i < self.size(0); ++i) {
    gemm_into(op, matrix_of(out, i), matrix_of(self, i), matrix_of(mat2, i), Scalar(int64_t{0}),
              Scalar(int64_t{1}));
  }
}

Tensor bmm_cpu(const Tensor& self, const Tensor& mat2) {
  check_bmm("bmm", self, mat2);
  Tensor out = make_tensor({self.size(0), self.size(1), mat2.size(2)}, self.dtype(), self.device());
  bmm_into("bmm", out, self, mat2);
  return out;
}

Tensor bmm_out_cpu(const Tensor& self, const Tensor& mat2, const Tensor& out) {
  check_bmm("bmm.out", self, mat2);
  prepare_out("bmm.out", out, {self.size(0), self.size(1), mat2.size(2)}, self.dtype(), self.device());
  bmm_into("bmm.out", out, self, mat2);
  out.impl()->bump_version();
  return out;
}

Tensor bmm_meta(const Tensor& self, const Tensor& mat2) {
  check_bmm("bmm", self, mat2);
  return make_tensor({self.size(0), self.size(1), mat2.size(2)}, self.dtype(), self.device());
}

// addmm: self broadcast to (m, n) is the beta term.
void check_addmm(const char* op, const Tensor& self, const Tensor& mat1, const Tensor& mat2) {
  check_mm(op, mat1, mat2);
  SDK_CHECK_TYPE(self.dtype() == mat1.dtype(), op, ": self and mat2 must have the same dtype, but got ",
                 scalar_type_name(self.dtype()), " and ", scalar_type_name(mat1.dtype()));
  check_same_device(op, self, mat1);
  int64_t m = mat1.size(0), n = mat2.size(1);
  bool ok = self.dim() <= 2 && (self.dim() < 1 || self.size(-1) == n || self.size(-1) == 1) &&
            (self.dim() < 2 || self.size(0) == m || self.size(0) == 1);
  SDK_CHECK_VALUE(ok, op, ": the size of self ", self.sizes(), " cannot be broadcast to the product's shape [", m,
                  ", ", n, "]");
}

void addmm_into(const char* op, const Tensor& out, const Tensor& self, const Tensor& mat1, const Tensor& mat2,
                const Scalar& beta, const Scalar& alpha) {
  bool beta_zero = beta.to_double() == 0.0;
  if (!beta_zero && !out.is_same(self)) {
    // out = self (broadcast), then out = beta*out + alpha*mat1@mat2.
    DimVector strides(2);
    strides[0] = self.dim() == 2 && self.size(0) != 1 ? self.stride(0) : 0;
    strides[1] = self.dim() >= 1 && self.size(-1) != 1 ? self.stride(-1) : 0;
    copy_(out, make_view(self, out.sizes(), strides, self.storage_offset(), op));
  }
  gemm_into(op, out, mat1, mat2, beta_zero ? Scalar(int64_t{0}) : beta, alpha);
}

Tensor addmm_cpu(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
                 const Scalar& alpha) {
  check_addmm("addmm", self, mat1, mat2);
  Tensor out = make_tensor({mat1.size(0), mat2.size(1)}, mat1.dtype(), mat1.device());
  addmm_into("addmm", out, self, mat1, mat2, beta, alpha);
  return out;
}

Tensor addmm_out_cpu(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
                     const Scalar& alpha, const Tensor& out) {
  check_addmm("addmm.out", self, mat1, mat2);
  prepare_out("addmm.out", out, {mat1.size(0), mat2.size(1)}, mat1.dtype(), mat1.device());
  addmm_into("addmm.out", out, self, mat1, mat2, beta, alpha);
  out.impl()->bump_version();
  return out;
}

Tensor addmm_inplace_cpu(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
                         const Scalar& alpha) {
  check_addmm("addmm_", self, mat1, mat2);
  SDK_CHECK_VALUE(self.dim() == 2 && self.size(0) == mat1.size(0) && self.size(1) == mat2.size(1), "addmm_",
                  ": self of shape ", self.sizes(), " must have the product's shape [", mat1.size(0), ", ",
                  mat2.size(1), "]");
  addmm_into("addmm_", self, self, mat1, mat2, beta, alpha);
  self.impl()->bump_version();
  return self;
}

Tensor addmm_meta(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar&, const Scalar&) {
  check_addmm("addmm", self, mat1, mat2);
  return make_tensor({mat1.size(0), mat2.size(1)}, mat1.dtype(), mat1.device());
}

Tensor dot_cpu(const Tensor& self, const Tensor& other) {
  check_dot("dot", self, other);
  Tensor out = make_tensor({}, self.dtype(), self.device());
  Tensor row = make_view(self, {1, self.numel()}, {1, self.numel() ? self.stride(0) : 1}, self.storage_offset(), "dot");
  Tensor col = make_view(other, {other.numel(), 1}, {other.numel() ? other.stride(0) : 1, 1},
                         other.storage_offset(), "dot");
  gemm_into("dot", make_view(out, {1, 1}, {1, 1}, 0, "dot"), row, col, Scalar(int64_t{0}), Scalar(int64_t{1}));
  return out;
}

// out= and in-place forms on Meta: the CPU kernels' checks and out handling, no data.
Tensor mm_out_meta(const Tensor& self, const Tensor& mat2, const Tensor& out) {
  check_mm("mm.out", self, mat2);
  prepare_out("mm.out", out, {self.size(0), mat2.size(1)}, self.dtype(), self.device());
  return out;
}

Tensor bmm_out_meta(const Tensor& self, const Tensor& mat2, const Tensor& out) {
  check_bmm("bmm.out", self, mat2);
  prepare_out("bmm.out", out, {self.size(0), self.size(1), mat2.size(2)}, self.dtype(), self.device());
  return out;
}

Tensor addmm_out_meta(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar&, const Scalar&,
                      const Tensor& out) {
  check_addmm("addmm.out", self, mat1, mat2);
  prepare_out("addmm.out", out, {mat1.size(0), mat2.size(1)}, mat1.dtype(), mat1.device());
  return out;
}

Tensor addmm_inplace_meta(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar&, const Scalar&) {
  check_addmm("addmm_", self, mat1, mat2);
  SDK_CHECK_VALUE(self.dim() == 2 && self.size(0) == mat1.size(0) && self.size(1) == mat2.size(1), "addmm_",
                  ": self of shape ", self.sizes(), " must have the product's shape [", mat1.size(0), ", ",
                  mat2.size(1), "]");
  return self;
}

Tensor dot_meta(const Tensor& self, const Tensor& other) {
  check_dot("dot", self, other);
  return make_tensor({}, self.dtype(), self.device());
}

}  // namespace

// ---- public API and the composites ----
Tensor mm(const Tensor& self, const Tensor& mat2) {
  static const auto op = Dispatcher::singleton().find_schema_or_throw("aten::mm").typed<Tensor(const Tensor&, const Tensor&)>();
  return op.call(self, mat2);
}
Tensor bmm(const Tensor& self, const Tensor& mat2) {
  static const auto op = Dispatcher::singleton().find_schema_or_throw("aten::bmm").typed<Tensor(const Tensor&, const Tensor&)>();
  return op.call(self, mat2);
}
Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta, const Scalar& alpha) {
  static const auto op = Dispatcher::singleton().find_schema_or_throw("aten::addmm").typed<
      Tensor(const Tensor&, const Tensor&, const Tensor&, const Scalar&, const Scalar&)>();
  return op.call(self, mat1, mat2, beta, alpha);
}
Tensor dot(const Tensor& self, const Tensor& other) {
  static const auto op = Dispatcher::singleton().find_schema_or_throw("aten::dot").typed<Tensor(const Tensor&, const Tensor&)>();
  return op.call(self, other);
}

namespace {

Tensor contiguous(const Tensor& t) {
  if (t.is_contiguous()) return t;
  return copy_(empty(t.sizes(), t.dtype(), t.device()), t);
}

Tensor reshape(const Tensor& t, IntArrayRef sizes) { return view(contiguous(t), sizes); }

// A stride-0 view of t broadcast to `sizes` (t's dims align to the right).
Tensor expand_to(const Tensor& t, IntArrayRef sizes) {
  DimVector strides(sizes.size(), 0);
  int64_t offset = static_cast<int64_t>(sizes.size()) - t.dim();
  for (int64_t d = 0; d < t.dim(); ++d) strides[offset + d] = t.size(d) == 1 ? 0 : t.stride(d);
  return as_strided(t, sizes, strides, t.storage_offset());
}

Tensor matmul_impl(const Tensor& self, const Tensor& other) {
  int64_t d1 = self.dim(), d2 = other.dim();
  SDK_CHECK_VALUE(d1 >= 1 && d2 >= 1, "matmul: both arguments to matmul need to be at least 1D, but they are ", d1,
                  "D and ", d2, "D");
  if (d1 == 1 && d2 == 1) return dot(self, other);
  if (d1 == 2 && d2 == 2) return mm(self, other);
  if (d1 == 2 && d2 == 1) return view(mm(self, view(contiguous(other), {other.size(0), 1})), {self.size(0)});
  if (d1 == 1 && d2 == 2) return view(mm(view(contiguous(self), {1, self.size(0)}), other), {other.size(1)});
  if (d1 >= 3 && d2 <= 2) {
    // Note [matmul folds batch dims]: (..., n, k) @ (k, p) is one mm over the rows (..., n) folded into
    // one dim, as PyTorch's matmul does, instead of a bmm over copies of `other` expanded to the batch
    // (nanoGPT's every Linear: 8x the memory traffic and a batch-sum in the weight's gradient).
    SDK_CHECK_VALUE(self.size(-1) == other.size(0), "matmul: mat1 and mat2 shapes cannot be multiplied (",
                    self.numel() / std::max<int64_t>(self.size(-1), 1), "x", self.size(-1), " and ", other.size(0),
                    "x", d2 == 2 ? other.size(1) : 1, ")");
    DimVector out_sizes(IntArrayRef(self.sizes().data(), self.sizes().size() - 1));
    int64_t rows = 1;
    for (int64_t s : out_sizes) rows *= s;
    Tensor b = d2 == 1 ? view(contiguous(other), {other.size(0), 1}) : other;
    Tensor out = mm(reshape(self, {rows, self.size(-1)}), b);
    if (d2 == 2) out_sizes.push_back(other.size(1));
    return view(out, out_sizes);
  }
  // Batched: promote 1-D operands, broadcast the batch dims, bmm, then drop
  // the promoted dims again.
  Tensor a = d1 == 1 ? view(contiguous(self), {1, self.size(0)}) : self;
  Tensor b = d2 == 1 ? view(contiguous(other), {other.size(0), 1}) : other;
  int64_t n = a.size(-2), k = a.size(-1), k2 = b.size(-2), p = b.size(-1);
  SDK_CHECK_VALUE(k == k2, "matmul: mat1 and mat2 shapes cannot be multiplied (", n, "x", k, " and ", k2, "x", p, ")");
  int64_t batch_dims = std::max(a.dim(), b.dim()) - 2;
  DimVector batch(static_cast<size_t>(batch_dims), 1);
  for (int64_t i = 0; i < batch_dims; ++i) {
    int64_t ia = a.dim() - 3 - i, ib = b.dim() - 3 - i;
    int64_t sa = ia >= 0 ? a.size(ia) : 1, sb = ib >= 0 ? b.size(ib) : 1;
    SDK_CHECK_VALUE(sa == sb || sa == 1 || sb == 1, "matmul: The size of tensor a (", sa,
                    ") must match the size of tensor b (", sb, ") at non-singleton dimension ", batch_dims - 1 - i);
    batch[batch_dims - 1 - i] = sa == 1 ? sb : sa;  // broadcasting 0 with 1 gives 0, not max(0, 1)
  }
  int64_t nbatch = 1;
  for (int64_t s : batch) nbatch *= s;
  DimVector a_sizes = batch, b_sizes = batch, out_sizes = batch;
  a_sizes.push_back(n), a_sizes.push_back(k);
  b_sizes.push_back(k), b_sizes.push_back(p);
  Tensor out = bmm(reshape(expand_to(a, a_sizes), {nbatch, n, k}), reshape(expand_to(b, b_sizes), {nbatch, k, p}));
  if (d1 > 1) out_sizes.push_back(n);
  if (d2 > 1) out_sizes.push_back(p);
  return view(out, out_sizes);
}

Tensor linear_impl(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  SDK_CHECK_VALUE(weight.dim() == 1 || weight.dim() == 2, "linear: weight must be 1-D or 2-D, got ", weight.dim(),
                  "-D");
  static const auto t_op = Dispatcher::singleton().find_schema_or_throw("aten::t").typed<Tensor(const Tensor&)>();
  Tensor wt = weight.dim() == 2 ? t_op.call(weight) : weight;  // aten::t, as PyTorch's linear (TBackward0)
  if (input.dim() == 2 && weight.dim() == 2 && bias && bias->defined()) return addmm(*bias, input, wt);
  if (input.dim() >= 3 && weight.dim() == 2 && bias && bias->defined() && input.is_contiguous()) {
    // (..., in) folded into rows for one addmm (Note [matmul folds batch dims]), as PyTorch's linear.
    DimVector out_sizes(IntArrayRef(input.sizes().data(), input.sizes().size() - 1));
    int64_t rows = 1;
    for (int64_t s : out_sizes) rows *= s;
    SDK_CHECK_VALUE(input.size(-1) == weight.size(1), "linear: mat1 and mat2 shapes cannot be multiplied (", rows, "x",
                    input.size(-1), " and ", wt.size(0), "x", wt.size(1), ")");
    out_sizes.push_back(weight.size(0));
    return view(addmm(*bias, view(input, {rows, input.size(-1)}), wt), out_sizes);
  }
  Tensor out = matmul(input, wt);
  if (bias && bias->defined()) out = add(out, *bias);
  return out;
}

Tensor matmul_out_impl(const Tensor& self, const Tensor& other, const Tensor& out) {
  Tensor result = matmul(self, other);
  prepare_out("matmul.out", out, result.sizes(), result.dtype(), result.device());
  return copy_(out, result);
}

}  // namespace

Tensor matmul(const Tensor& self, const Tensor& other) {
  static const auto op = Dispatcher::singleton().find_schema_or_throw("aten::matmul").typed<Tensor(const Tensor&, const Tensor&)>();
  return op.call(self, other);
}

Tensor linear(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  static const auto op = Dispatcher::singleton().find_schema_or_throw("aten::linear").typed<
      Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&)>();
  return op.call(input, weight, bias);
}

}  // namespace sdk::ops

SDK_LIBRARY_FRAGMENT(aten, m) {
  m.def("mm(Tensor self, Tensor mat2) -> Tensor");
  m.def("mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("bmm(Tensor self, Tensor mat2) -> Tensor");
  m.def("bmm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor");
  m.def("addmm.out(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)");
  m.def("addmm_(Tensor(a!) self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor(a!)");
  m.def("dot(Tensor self, Tensor tensor) -> Tensor");
  m.def("matmul(Tensor self, Tensor other) -> Tensor");
  m.def("matmul.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor");
  // Composites: every backend with mm/bmm/dot/addmm gets these for free.
  m.impl("matmul", sdk::DispatchKey::CompositeImplicitAutograd, &sdk::ops::matmul_impl);
  m.impl("matmul.out", sdk::DispatchKey::CompositeImplicitAutograd, &sdk::ops::matmul_out_impl);
  m.impl("linear", sdk::DispatchKey::CompositeImplicitAutograd, &sdk::ops::linear_impl);
}

SDK_LIBRARY_IMPL(aten, CPU, m) {
  m.impl("mm", &sdk::ops::mm_cpu);
  m.impl("mm.out", &sdk::ops::mm_out_cpu);
  m.impl("bmm", &sdk::ops::bmm_cpu);
  m.impl("bmm.out", &sdk::ops::bmm_out_cpu);
  m.impl("addmm", &sdk::ops::addmm_cpu);
  m.impl("addmm.out", &sdk::ops::addmm_out_cpu);
  m.impl("addmm_", &sdk::ops::addmm_inplace_cpu);
  m.impl("dot", &sdk::ops::dot_cpu);
}

SDK_LIBRARY_IMPL(aten, Meta, m) {
  m.impl("mm", &sdk::ops::mm_meta);
  m.impl("bmm", &sdk::ops::bmm_meta);
  m.impl("addmm", &sdk::ops::addmm_meta);
  m.impl("dot", &sdk::ops::dot_meta);
  m.impl("mm.out", &sdk::ops::mm_out_meta);
  m.impl("bmm.out", &sdk::ops::bmm_out_meta);
  m.impl("addmm.out", &sdk::ops::addmm_out_meta);
  m.impl("addmm_", &sdk::ops::addmm_inplace_meta);
}
