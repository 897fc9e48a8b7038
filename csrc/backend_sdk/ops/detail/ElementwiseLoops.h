// The loops and the variant plumbing shared by the element-wise operator
// files (Unary.cpp, BinaryArith.cpp, Comparison.cpp, Ternary.cpp). Internal
// to csrc/ops.
//
// Note [Element-wise kernels]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every element-wise operator has one build function that configures and
// builds a TensorIterator, and checks dtypes; its Meta kernel stops there and
// its CPU kernel then runs a loop, so the two cannot disagree on the output's
// shape, dtype or strides, nor on which inputs are errors.
// A loop is a functor `Out op(In...)` run by unary_loop / binary_loop /
// ternary_loop in a compute type chosen *once* per call (dtype dispatch
// stays outside the element loop). When every operand already has its
// compute type the loop runs on the tensors in place, and the contiguous case
// is a plain indexed loop that the compiler vectorises; other operands go
// through stack buffers (Note [Compute type], ops/detail/CpuLoops.h). An input that
// is one value broadcast everywhere (a wrapped number, a 0-dim tensor) is
// converted once, so `x / 2` stays on the native path.
#pragma once

#include <algorithm>
#include <cstdint>

#include <backend_sdk/dispatch/Dispatcher.h>
#include <backend_sdk/ops/detail/Casting.h>
#include <backend_sdk/ops/detail/CpuLoops.h>
#include <backend_sdk/ops/TensorIterator.h>

namespace sdk::ops {

enum class Variant { Functional, InPlace, Out };

// Output operand of each variant: allocated (functional), self (in-place,
// never resized), or the out= tensor.
inline void add_variant_output(TensorIterator& iter, Variant v, const Tensor& self, const Tensor& out) {
  switch (v) {
    case Variant::Functional:
      iter.add_output(Tensor());
      break;
    case Variant::InPlace:
      iter.add_output(self).resize_outputs(false).output_name("self");
      break;
    case Variant::Out:
      SDK_CHECK_KIND(::sdk::ErrorKind::Value, out.defined(), iter.op_name(), ": argument 'out' must be a defined tensor");
      iter.add_output(out);
      break;
  }
}

// Configure iter (flags) before calling: adds the output for v, self, other, and builds.
inline void build_binary_op(TensorIterator& iter, Variant v, const Tensor& self, const Tensor& other,
                            const Tensor& out) {
  add_variant_output(iter, v, self, out);
  iter.add_input(self).add_input(other);
  iter.build();
}

// A typed handle of another aten overload, looked up once per call site
// (Scalar overloads call their Tensor overload through the dispatcher).
#define SDK_ATEN_OP(name, Sig) \
  static const ::sdk::OperatorHandle::Typed<Sig> op = ::sdk::Dispatcher::singleton().find_schema_or_throw(name).typed<Sig>()

// The value a kernel returns: the new tensor, or the written one (whose
// version counter moves).
inline Tensor variant_result(TensorIterator& iter, Variant v, const Tensor& self, const Tensor& out) {
  if (v == Variant::Functional) return iter.take_output();
  const Tensor& written = v == Variant::InPlace ? self : out;
  written.impl()->bump_version();
  return written;
}

// PyTorch's dtype-dispatch error, as a TypeError here:
// "bitwise_and.Tensor: \"bitwise_and_cpu\" not implemented for 'Float'".
[[noreturn]] inline void report_not_implemented_for(const TensorIterator& iter, const char* kernel, ScalarType t) {
  SDK_THROW(Type, iter.op_name(), ": \"", kernel, "\" not implemented for '", legacy_type_name(t), "'");
}

namespace cpu {

template <typename T>
constexpr int64_t size_of = static_cast<int64_t>(sizeof(T));

// The value of a broadcast-scalar input converted once to T, if it is one
// and is not already a T.
template <typename T>
bool load_constant(const TensorIterator& iter, int i, T* value) {
  if (iter.numel() == 0 || iter.dtype(i) == scalar_type_of<T>() || !iter.is_broadcast_scalar(i)) return false;
  load_converted(value, iter.data(i), 0, iter.dtype(i), 1);
  return true;
}

// No bulk routine: the element loop is the fast path.
struct NoBulk {
  template <typename Out, typename In>
  bool operator()(Out*, const In*, int64_t) const { return false; }
};

// bulk(o, x, n) may take over a contiguous run in the compute type (hand-vectorised
// routines, Note [Vector math]) by returning true.
template <typename In, typename Out, typename Op, typename Bulk = NoBulk>
void unary_loop(const TensorIterator& iter, const Op& op, const Bulk& bulk = Bulk()) {
  const bool native = iter.dtype(0) == scalar_type_of<Out>() && iter.dtype(1) == scalar_type_of<In>();
  const ScalarType dout = iter.dtype(0), din = iter.dtype(1);
  iter.for_each([&](char** data, const int64_t* strides, int64_t n) {
    const int64_t so = strides[0], si = strides[1];
    if (native && so == size_of<Out> && si == size_of<In>) {
      Out* o = reinterpret_cast<Out*>(data[0]);
      const In* x = reinterpret_cast<const In*>(data[1]);
      if (bulk(o, x, n)) return;
      for (int64_t i = 0; i < n; ++i) o[i] = op(x[i]);
    } else if (native && !std::is_same_v<Bulk, NoBulk>) {
      // Strided runs are gathered through the bulk routine too, so that every
      // element gets the same result whatever the layout (Note [Vector math]).
      In xbuf[kChunk];
      Out obuf[kChunk];
      for (int64_t i = 0; i < n; i += kChunk) {
        const int64_t m = std::min(kChunk, n - i);
        for (int64_t j = 0; j < m; ++j) xbuf[j] = *reinterpret_cast<const In*>(data[1] + (i + j) * si);
        if (!bulk(obuf, xbuf, m)) {
          for (int64_t j = 0; j < m; ++j) obuf[j] = op(xbuf[j]);
        }
        for (int64_t j = 0; j < m; ++j) *reinterpret_cast<Out*>(data[0] + (i + j) * so) = obuf[j];
      }
    } else if (native) {
      for (int64_t i = 0; i < n; ++i) {
        *reinterpret_cast<Out*>(data[0] + i * so) = op(*reinterpret_cast<const In*>(data[1] + i * si));
      }
    } else {
      In xbuf[kChunk];
      Out obuf[kChunk];
      const bool direct_out = dout == scalar_type_of<Out>() && so == size_of<Out>;
      for (int64_t i = 0; i < n; i += kChunk) {
        const int64_t m = std::min(kChunk, n - i);
        const In* x = run_as(data[1] + i * si, si, din, xbuf, m);
        Out* o = direct_out ? reinterpret_cast<Out*>(data[0] + i * so) : obuf;
        // The bulk routine also serves converted runs (float16 computed in float),
        // so a value gets the same result whichever storage dtype it came from.
        if (!bulk(o, x, m)) {
          for (int64_t j = 0; j < m; ++j) o[j] = op(x[j]);
        }
        if (!direct_out) store_converted(data[0] + i * so, so, dout, obuf, m);
      }
    }
  });
}

// Every operand in its compute type: straight loops, with the contiguous and
// contiguous-with-a-scalar cases spelled out so they vectorise.
template <typename In, typename Out, typename Op>
void native_binary(char* out, int64_t so, const char* a, int64_t sa, const char* b, int64_t sb, int64_t n, const Op& op) {
  Out* o = reinterpret_cast<Out*>(out);
  const In* x = reinterpret_cast<const In*>(a);
  const In* y = reinterpret_cast<const In*>(b);
  if (so == size_of<Out> && sa == size_of<In> && sb == size_of<In>) {
    for (int64_t i = 0; i < n; ++i) o[i] = op(x[i], y[i]);
  } else if (so == size_of<Out> && sa == size_of<In> && sb == 0) {
    const In yv = *y;
    for (int64_t i = 0; i < n; ++i) o[i] = op(x[i], yv);
  } else if (so == size_of<Out> && sa == 0 && sb == size_of<In>) {
    const In xv = *x;
    for (int64_t i = 0; i < n; ++i) o[i] = op(xv, y[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) {
      *reinterpret_cast<Out*>(out + i * so) =
          op(*reinterpret_cast<const In*>(a + i * sa), *reinterpret_cast<const In*>(b + i * sb));
    }
  }
}

template <typename In, typename Out, typename Op>
void binary_loop(const TensorIterator& iter, const Op& op) {
  In constant[3] = {};
  bool is_constant[3] = {false, false, false};
  ScalarType dtypes[3] = {iter.dtype(0), iter.dtype(1), iter.dtype(2)};
  for (int i = 1; i < 3; ++i) {
    is_constant[i] = load_constant(iter, i, &constant[i]);
    if (is_constant[i]) dtypes[i] = scalar_type_of<In>();
  }
  const bool native =
      dtypes[0] == scalar_type_of<Out>() && dtypes[1] == scalar_type_of<In>() && dtypes[2] == scalar_type_of<In>();
  iter.for_each([&](char** data, const int64_t* strides, int64_t n) {
    const char* in[3];
    int64_t st[3];
    for (int i = 1; i < 3; ++i) {
      in[i] = is_constant[i] ? reinterpret_cast<const char*>(&constant[i]) : data[i];
      st[i] = is_constant[i] ? 0 : strides[i];
    }
    if (native) {
      native_binary<In, Out>(data[0], strides[0], in[1], st[1], in[2], st[2], n, op);
      return;
    }
    In abuf[kChunk], bbuf[kChunk];
    Out obuf[kChunk];
    const int64_t so = strides[0];
    const bool direct_out = dtypes[0] == scalar_type_of<Out>() && so == size_of<Out>;
    for (int64_t i = 0; i < n; i += kChunk) {
      const int64_t m = std::min(kChunk, n - i);
      const In* x = run_as(in[1] + i * st[1], st[1], dtypes[1], abuf, m);
      const In* y = run_as(in[2] + i * st[2], st[2], dtypes[2], bbuf, m);
      Out* o = direct_out ? reinterpret_cast<Out*>(data[0] + i * so) : obuf;
      for (int64_t j = 0; j < m; ++j) o[j] = op(x[j], y[j]);
      if (!direct_out) store_converted(data[0] + i * so, so, dtypes[0], obuf, m);
    }
  });
}

// Three inputs of compute types A, B, C (where: bool, T, T; clamp: T, T, T).
// Always through buffers but for the all-native contiguous case.
template <typename A, typename B, typename C, typename Out, typename Op>
void ternary_loop(const TensorIterator& iter, const Op& op) {
  const ScalarType d[4] = {iter.dtype(0), iter.dtype(1), iter.dtype(2), iter.dtype(3)};
  const bool native = d[0] == scalar_type_of<Out>() && d[1] == scalar_type_of<A>() && d[2] == scalar_type_of<B>() &&
                      d[3] == scalar_type_of<C>();
  iter.for_each([&](char** data, const int64_t* s, int64_t n) {
    if (native && s[0] == size_of<Out> && s[1] == size_of<A> && s[2] == size_of<B> && s[3] == size_of<C>) {
      Out* o = reinterpret_cast<Out*>(data[0]);
      const A* x = reinterpret_cast<const A*>(data[1]);
      const B* y = reinterpret_cast<const B*>(data[2]);
      const C* z = reinterpret_cast<const C*>(data[3]);
      for (int64_t i = 0; i < n; ++i) o[i] = op(x[i], y[i], z[i]);
      return;
    }
    A abuf[kChunk];
    B bbuf[kChunk];
    C cbuf[kChunk];
    Out obuf[kChunk];
    const bool direct_out = d[0] == scalar_type_of<Out>() && s[0] == size_of<Out>;
    for (int64_t i = 0; i < n; i += kChunk) {
      const int64_t m = std::min(kChunk, n - i);
      const A* x = run_as(data[1] + i * s[1], s[1], d[1], abuf, m);
      const B* y = run_as(data[2] + i * s[2], s[2], d[2], bbuf, m);
      const C* z = run_as(data[3] + i * s[3], s[3], d[3], cbuf, m);
      Out* o = direct_out ? reinterpret_cast<Out*>(data[0] + i * s[0]) : obuf;
      for (int64_t j = 0; j < m; ++j) o[j] = op(x[j], y[j], z[j]);
      if (!direct_out) store_converted(data[0] + i * s[0], s[0], d[0], obuf, m);
    }
  });
}

// Calls f(TypeTag<T>{}) for a bool or integral dtype t.
template <typename F>
inline void dispatch_integral_type(ScalarType t, const char* op, F&& f) {
  switch (t) {
    case ScalarType::Bool: return f(TypeTag<bool>{});
    case ScalarType::UInt8: return f(TypeTag<uint8_t>{});
    case ScalarType::Int8: return f(TypeTag<int8_t>{});
    case ScalarType::Int16: return f(TypeTag<int16_t>{});
    case ScalarType::Int32: return f(TypeTag<int32_t>{});
    case ScalarType::Int64: return f(TypeTag<int64_t>{});
    default: SDK_THROW(Type, op, ": unsupported dtype ", scalar_type_name(t));
  }
}

// Calls f(TypeTag<float or double>{}) for a floating common dtype.
template <typename F>
inline void dispatch_floating(const TensorIterator& iter, const char* kernel, F&& f) {
  const ScalarType t = iter.common_dtype();
  if (t == ScalarType::Float64) return f(TypeTag<double>{});
  if (is_floating_type(t)) return f(TypeTag<float>{});
  report_not_implemented_for(iter, kernel, t);
}

// Calls f(TypeTag<T>{}) for an integral or bool common dtype.
template <typename F>
inline void dispatch_integral(const TensorIterator& iter, const char* kernel, F&& f) {
  if (!is_integral_type(iter.common_dtype(), /*include_bool=*/true)) {
    report_not_implemented_for(iter, kernel, iter.common_dtype());
  }
  dispatch_integral_type(iter.common_dtype(), kernel, std::forward<F>(f));
}

// Like dispatch_compute_type (Note [Compute type]), but never instantiates f
// for Half or BFloat16, which only ever occur as storage types.
template <typename F>
inline void dispatch_math_type(ScalarType t, const char* op, F&& f) {
  switch (t) {
    case ScalarType::Float16:
    case ScalarType::BFloat16:
    case ScalarType::Float32: return f(TypeTag<float>{});
    case ScalarType::Float64: return f(TypeTag<double>{});
    default: return dispatch_integral_type(t, op, std::forward<F>(f));
  }
}

}  // namespace cpu

// PyTorch's alpha rules for add and sub, checked against the computed dtype:
// a bool alpha needs a bool result, a float alpha a floating result, and the
// value must fit the type the kernel computes in.
inline void check_alpha(const TensorIterator& iter, const Scalar& alpha) {
  const ScalarType t = iter.common_dtype();
  const char* op = iter.op_name();
  SDK_CHECK_KIND(::sdk::ErrorKind::Type, !alpha.is_boolean() || t == ScalarType::Bool, op,
                 ": Boolean alpha only supported for Boolean results.");
  SDK_CHECK_KIND(::sdk::ErrorKind::Type, is_floating_type(t) || alpha.is_integral(/*include_bool=*/true), op,
                 ": For integral input tensors, argument alpha must not be a floating point number.");
  cpu::dispatch_math_type(t, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    (void)checked_scalar_to<T>(alpha, op, "alpha", cpu::scalar_type_of<T>());
  });
}

}  // namespace sdk::ops
