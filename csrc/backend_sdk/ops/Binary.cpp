// add and mul: CPU and Meta kernels of every variant, sharing one build step.
#include <algorithm>

#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/detail/Casting.h>
#include <backend_sdk/ops/detail/CpuLoops.h>
#include <backend_sdk/ops/detail/ElementwiseLoops.h>
#include <backend_sdk/ops/Functions.h>
#include <backend_sdk/ops/TensorIterator.h>

namespace sdk::ops {
namespace {

// Building (build_binary_op) and the alpha rules (check_alpha) are shared
// with sub: see ElementwiseLoops.h. CPU and Meta both start from them.

// ---------------------------------------------------------------------------
// Element operations. Bool add is logical or, bool mul logical and (PyTorch);
// integers wrap on overflow.
// ---------------------------------------------------------------------------

template <typename T>
struct AddOp {
  T alpha;
  T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) {
      return a || (alpha && b);
    } else {
      return cpu::wrapping_add(a, cpu::wrapping_mul(alpha, b));
    }
  }
};

// alpha == 1: a plain sum, exact for floats whatever the compiler contracts.
template <typename T>
struct PlusOp {
  T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) {
      return a || b;
    } else {
      return cpu::wrapping_add(a, b);
    }
  }
};

template <typename T>
struct MulOp {
  T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) {
      return a && b;
    } else {
      return cpu::wrapping_mul(a, b);
    }
  }
};

// ---------------------------------------------------------------------------
// Loops
// ---------------------------------------------------------------------------

// Every operand in the compute type T: straight loops, with the common
// contiguous and contiguous-with-a-scalar cases spelled out so they vectorise.
template <typename T, typename Op>
void native_loop(char* out, int64_t so, const char* a, int64_t sa, const char* b, int64_t sb, int64_t n,
                 const Op& op) {
  constexpr int64_t s = sizeof(T);
  T* o = reinterpret_cast<T*>(out);
  const T* x = reinterpret_cast<const T*>(a);
  const T* y = reinterpret_cast<const T*>(b);
  if (so == s && sa == s && sb == s) {
    for (int64_t i = 0; i < n; ++i) o[i] = op(x[i], y[i]);
  } else if (so == s && sa == s && sb == 0) {
    const T yv = *y;
    for (int64_t i = 0; i < n; ++i) o[i] = op(x[i], yv);
  } else if (so == s && sa == 0 && sb == s) {
    const T xv = *x;
    for (int64_t i = 0; i < n; ++i) o[i] = op(xv, y[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      *reinterpret_cast<T*>(out + i * so) =
          op(*reinterpret_cast<const T*>(a + i * sa), *reinterpret_cast<const T*>(b + i * sb));
    }
  }
}

// Some operand needs converting: chunks through stack buffers.
template <typename T, typename Op>
void converting_loop(char* out, int64_t so, ScalarType dout, const char* a, int64_t sa, ScalarType da,
                     const char* b, int64_t sb, ScalarType db, int64_t n, const Op& op) {
  T abuf[cpu::kChunk], bbuf[cpu::kChunk], obuf[cpu::kChunk];
  const bool direct_out = dout == cpu::scalar_type_of<T>() && so == static_cast<int64_t>(sizeof(T));
  for (int64_t i = 0; i < n; i += cpu::kChunk) {
    const int64_t m = std::min(cpu::kChunk, n - i);
    const T* x = cpu::run_as(a + i * sa, sa, da, abuf, m);
    const T* y = cpu::run_as(b + i * sb, sb, db, bbuf, m);
    T* o = direct_out ? reinterpret_cast<T*>(out + i * so) : obuf;
    for (int64_t j = 0; j < m; ++j) o[j] = op(x[j], y[j]);
    if (!direct_out) cpu::store_converted(out + i * so, so, dout, obuf, m);
  }
}

// Runs op over iter (output 0, inputs 1 and 2) in the compute type T. An
// input that is one value broadcast everywhere (a wrapped number, a 0-dim
// tensor) is converted to T once, so `x * 2.0` stays on the native path.
template <typename T, typename Op>
void binary_loop(const TensorIterator& iter, const Op& op) {
  constexpr ScalarType native = cpu::scalar_type_of<T>();
  T constant[3] = {};
  bool is_constant[3] = {false, false, false};
  for (int i = 1; i < 3; ++i) {
    if (iter.dtype(i) != native && iter.numel() > 0 && iter.is_broadcast_scalar(i)) {
      cpu::load_converted(&constant[i], iter.data(i), 0, iter.dtype(i), 1);
      is_constant[i] = true;
    }
  }
  ScalarType dtypes[3];
  bool all_native = true;
  for (int i = 0; i < 3; ++i) {
    dtypes[i] = is_constant[i] ? native : iter.dtype(i);
    all_native &= dtypes[i] == native;
  }
  iter.for_each([&](char** data, const int64_t* strides, int64_t n) {
    const char* in[3];
    int64_t st[3];
    for (int i = 1; i < 3; ++i) {
      in[i] = is_constant[i] ? reinterpret_cast<const char*>(&constant[i]) : data[i];
      st[i] = is_constant[i] ? 0 : strides[i];
    }
    if (all_native) {
      native_loop<T>(data[0], strides[0], in[1], st[1], in[2], st[2], n, op);
    } else {
      converting_loop<T>(data[0], strides[0], dtypes[0], in[1], st[1], dtypes[1], in[2], st[2], dtypes[2], n, op);
    }
  });
}

void add_loop(const TensorIterator& iter, const Scalar& alpha) {
  cpu::dispatch_compute_type(iter.common_dtype(), iter.op_name(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (alpha.equal(Scalar(int64_t{1}))) {
      binary_loop<T>(iter, PlusOp<T>{});
    } else {
      binary_loop<T>(iter, AddOp<T>{checked_scalar_to<T>(alpha, iter.op_name(), "alpha", cpu::scalar_type_of<T>())});
    }
  });
}

void mul_loop(const TensorIterator& iter, const Scalar&) {
  cpu::dispatch_compute_type(iter.common_dtype(), iter.op_name(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    binary_loop<T>(iter, MulOp<T>{});
  });
}

// ---------------------------------------------------------------------------
// Kernels: kCpu=false is the Meta kernel (build only), so both always agree.
// ---------------------------------------------------------------------------

using ElementKernel = void (*)(const TensorIterator&, const Scalar&);

template <bool kCpu>
Tensor run_binary(const char* op, Variant v, const Tensor& self, const Tensor& other, const Tensor& out,
                  const Scalar* alpha, ElementKernel kernel) {
  TensorIterator iter(op);
  build_binary_op(iter, v, self, other, out);
  if (alpha) check_alpha(iter, *alpha);
  if constexpr (kCpu) kernel(iter, alpha ? *alpha : Scalar(1));
  if (v == Variant::Functional) return iter.take_output();
  const Tensor& written = v == Variant::InPlace ? self : out;
  written.impl()->bump_version();
  return written;
}

template <bool kCpu>
Tensor add_tensor_kernel(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  return run_binary<kCpu>("add.Tensor", Variant::Functional, self, other, Tensor(), &alpha, &add_loop);
}
template <bool kCpu>
Tensor add_inplace_kernel(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  return run_binary<kCpu>("add_.Tensor", Variant::InPlace, self, other, Tensor(), &alpha, &add_loop);
}
template <bool kCpu>
Tensor add_out_kernel(const Tensor& self, const Tensor& other, const Scalar& alpha, const Tensor& out) {
  return run_binary<kCpu>("add.out", Variant::Out, self, other, out, &alpha, &add_loop);
}
template <bool kCpu>
Tensor mul_tensor_kernel(const Tensor& self, const Tensor& other) {
  return run_binary<kCpu>("mul.Tensor", Variant::Functional, self, other, Tensor(), nullptr, &mul_loop);
}
template <bool kCpu>
Tensor mul_inplace_kernel(const Tensor& self, const Tensor& other) {
  return run_binary<kCpu>("mul_.Tensor", Variant::InPlace, self, other, Tensor(), nullptr, &mul_loop);
}
template <bool kCpu>
Tensor mul_out_kernel(const Tensor& self, const Tensor& other, const Tensor& out) {
  return run_binary<kCpu>("mul.out", Variant::Out, self, other, out, nullptr, &mul_loop);
}

// The Scalar overloads wrap the number (so it promotes as a Python number
// would) and go back through the dispatcher, like PyTorch's
// CompositeExplicitAutograd kernels for them.
Tensor add_scalar_kernel(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  return ops::add(self, wrapped_scalar_tensor(other), alpha);
}
Tensor mul_scalar_kernel(const Tensor& self, const Scalar& other) {
  return ops::mul(self, wrapped_scalar_tensor(other));
}

}  // namespace
}  // namespace sdk::ops

SDK_LIBRARY_IMPL(aten, CPU, m) {
  using namespace sdk::ops;
  m.impl("add.Tensor", &add_tensor_kernel<true>);
  m.impl("add_.Tensor", &add_inplace_kernel<true>);
  m.impl("add.out", &add_out_kernel<true>);
  m.impl("mul.Tensor", &mul_tensor_kernel<true>);
  m.impl("mul_.Tensor", &mul_inplace_kernel<true>);
  m.impl("mul.out", &mul_out_kernel<true>);
}

SDK_LIBRARY_IMPL(aten, Meta, m) {
  using namespace sdk::ops;
  m.impl("add.Tensor", &add_tensor_kernel<false>);
  m.impl("add_.Tensor", &add_inplace_kernel<false>);
  m.impl("add.out", &add_out_kernel<false>);
  m.impl("mul.Tensor", &mul_tensor_kernel<false>);
  m.impl("mul_.Tensor", &mul_inplace_kernel<false>);
  m.impl("mul.out", &mul_out_kernel<false>);
}

SDK_LIBRARY_IMPL(aten, CompositeExplicitAutograd, m) {
  using namespace sdk::ops;
  m.impl("add.Scalar", &add_scalar_kernel);
  m.impl("mul.Scalar", &mul_scalar_kernel);
}
