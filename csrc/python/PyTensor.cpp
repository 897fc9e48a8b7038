#include "python/PyTensor.h"

#include <structmember.h>

#include <backend_sdk/dispatch/Dispatcher.h>
#include <backend_sdk/ops/detail/Autograd.h>
#include "python/Errors.h"
#include "python/PyCore.h"
#include "python/PyPythonDispatch.h"

namespace py = pybind11;

namespace sdk::python {

PyTypeObject* g_tensor_base_type = nullptr;
std::optional<Scalar> wrapped_number(const Tensor& t) {
  if (!t.impl()->is_wrapped_number() || t.device().type != DeviceType::CPU) return std::nullopt;
  switch (t.dtype()) {
    case ScalarType::Int64:
      return Scalar(*t.data_ptr<int64_t>());
    case ScalarType::Float64:
      return Scalar(*t.data_ptr<double>());
    case ScalarType::Bool:
      return Scalar(*t.data_ptr<bool>());
    default:
      return std::nullopt;
  }
}

namespace {
PyTypeObject* g_tensor_class = nullptr;  // backend_sdk.Tensor, set by _set_tensor_class
// backend_sdk._subclasses.fake_tensor.FakeTensor: wraps TensorImpls that carry the Fake key.
PyTypeObject* g_fake_tensor_class = nullptr;
}

PyObject* wrap_tensor(Tensor t) {
  if (!t.defined()) Py_RETURN_NONE;
  if (void* existing = t.impl()->pyobj()) {
    Py_INCREF(static_cast<PyObject*>(existing));
    return static_cast<PyObject*>(existing);
  }
  PyTypeObject* type = g_tensor_class ? g_tensor_class : g_tensor_base_type;
  if (g_fake_tensor_class && t.key_set().has_any(DispatchKeySet(DispatchKeySet::RawTag{}, functionality_bit(DispatchKey::Fake)))) {
    type = g_fake_tensor_class;
  }
  // Note [Python key tensors] (PyPythonDispatch.h): a subclass's class comes back with its state.
  PyTypeObject* parked = take_parked_python_class(t);
  if (parked != nullptr) type = parked;
  PyObject* obj = type->tp_alloc(type, 0);  // zeroed memory: a null Tensor is valid
  Py_XDECREF(parked);  // tp_alloc took the instance's reference to a heap type
  if (!obj) throw py::error_already_set();
  auto* pt = reinterpret_cast<PyTensor*>(obj);
  new (&pt->tensor) Tensor(std::move(t));
  pt->tensor.impl()->set_pyobj(obj);
  // Note [Autograd state across wrappers] (ops/detail/Autograd.h): take back a parked __dict__.
  if (auto* m = autograd::maybe_autograd_meta(pt->tensor); m != nullptr && m->py_state != nullptr) {
    PyObject* state = static_cast<PyObject*>(m->py_state);
    m->py_state = nullptr;
    PyObject* dict = PyObject_GenericGetDict(obj, nullptr);
    int rc = dict ? PyDict_Update(dict, state) : -1;
    Py_XDECREF(dict);
    Py_DECREF(state);
    if (rc < 0) {
      Py_DECREF(obj);
      throw py::error_already_set();
    }
  }
  return obj;
}

namespace {

// ---- lifetime ----
// Parks the wrapper's __dict__ in the tensor's AutogradMeta when the TensorImpl
// outlives this wrapper: Note [Autograd state across wrappers] (ops/detail/Autograd.h).
void tensor_finalize(PyObject* self) {
  auto* pt = reinterpret_cast<PyTensor*>(self);
  if (!pt->tensor.defined() || pt->tensor.impl()->pyobj() != self) return;
  auto* m = autograd::maybe_autograd_meta(pt->tensor);
  if (m == nullptr || pt->tensor.impl()->use_count() <= 1) return;
  if (Py_TYPE(self)->tp_dictoffset == 0) return;
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyObject* dict = PyObject_GenericGetDict(self, nullptr);
  // Note [Python key tensors] (PyPythonDispatch.h): a Python key subclass parks its class too.
  const bool keep_class = has_python_key(pt->tensor) && Py_TYPE(self) != g_tensor_class;
  if (dict != nullptr && (PyDict_Size(dict) > 0 || keep_class)) {
    PyObject* copy = PyDict_Copy(dict);
    if (copy != nullptr && keep_class &&
        PyDict_SetItemString(copy, kPythonClassKey, reinterpret_cast<PyObject*>(Py_TYPE(self))) < 0) {
      Py_CLEAR(copy);
    }
    if (copy != nullptr) {
      if (m->py_state != nullptr) Py_DECREF(static_cast<PyObject*>(m->py_state));
      m->py_state = copy;
    }
  }
  Py_XDECREF(dict);
  PyErr_Clear();
  PyErr_Restore(type, value, tb);
}

void release_py_state(void* state) {
  if (!Py_IsInitialized()) return;  // interpreter gone: leak rather than crash
  PyGILState_STATE s = PyGILState_Ensure();
  Py_DECREF(static_cast<PyObject*>(state));
  PyGILState_Release(s);
}

void tensor_dealloc(PyObject* self) {
  auto* pt = reinterpret_cast<PyTensor*>(self);
  if (pt->weakreflist) PyObject_ClearWeakRefs(self);
  if (pt->tensor.defined() && pt->tensor.impl()->pyobj() == self) pt->tensor.impl()->set_pyobj(nullptr);
  pt->tensor.~Tensor();
  Py_TYPE(self)->tp_free(self);
}

PyObject* tensor_new(PyTypeObject*, PyObject*, PyObject*) {
  PyErr_SetString(PyExc_TypeError,
                  "backend_sdk.Tensor cannot be constructed directly; use backend_sdk.tensor(data), "
                  "backend_sdk.empty(size) or another factory function");
  return nullptr;
}

// ---- operands of the arithmetic slots ----
// A tensor, or a Python number as a wrapped-number tensor (see Note [Result type computation]).
bool to_operand(PyObject* obj, Tensor* out) {
  if (is_tensor(obj)) {
    *out = unpack_tensor(obj);
    return true;
  }
  if (PyBool_Check(obj)) {
    *out = wrapped_scalar_tensor(Scalar(obj == Py_True));
    return true;
  }
  if (PyLong_CheckExact(obj) || PyLong_Check(obj)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow) return false;
    *out = wrapped_scalar_tensor(Scalar(static_cast<int64_t>(v)));
    return true;
  }
  if (PyFloat_Check(obj)) {
    *out = wrapped_scalar_tensor(Scalar(PyFloat_AS_DOUBLE(obj)));
    return true;
  }
  return false;
}

using BinarySig = Tensor(const Tensor&, const Tensor&, const Scalar&);

using BinaryNoAlphaSig = Tensor(const Tensor&, const Tensor&);

// Note [Reflected operators]
// A reflected form (2 * x, 1 - x) arrives with the Python number as `a`. Each slot then calls what
// PyTorch's reflected method calls, so autograd nodes and __torch_dispatch__ handlers see PyTorch's
// operators: 1 + x -> add.Tensor(x, 1), 2 * x -> mul.Tensor(x, 2), 1 - x -> rsub.Scalar(x, 1),
// 2 / x -> mul.Tensor(reciprocal(x), 2), 2 % x -> remainder.Scalar_Tensor(2, x),
// 3 & x -> bitwise_and.Scalar(x, 3), 2 ** x -> pow.Scalar(2, x), 2 // x -> floor_divide(2, x).
using ReflectedFn = Tensor (*)(const Tensor& number, const Tensor& self);

template <const char* Name, typename Sig>
const OperatorHandle::Typed<Sig>& typed_op() {
  static const auto op = Dispatcher::singleton().find_schema_or_throw(Name).template typed<Sig>();
  return op;
}
constexpr char kAddTensor[] = "aten::add.Tensor";
constexpr char kMulTensor[] = "aten::mul.Tensor";
constexpr char kRsubScalar[] = "aten::rsub.Scalar";
constexpr char kReciprocal[] = "aten::reciprocal";
constexpr char kFloorDivide[] = "aten::floor_divide";
constexpr char kRemainderScalarTensor[] = "aten::remainder.Scalar_Tensor";
constexpr char kPowScalar[] = "aten::pow.Scalar";
constexpr char kAndScalar[] = "aten::bitwise_and.Scalar";
constexpr char kOrScalar[] = "aten::bitwise_or.Scalar";
constexpr char kXorScalar[] = "aten::bitwise_xor.Scalar";

using TensorScalarSig = Tensor(const Tensor&, const Scalar&);
using ScalarTensorSig = Tensor(const Scalar&, const Tensor&);
// The number to_operand wrapped for a reflected slot.
Scalar number_of(const Tensor& wrapped) { return *wrapped_number(wrapped); }

Tensor reflected_add(const Tensor& n, const Tensor& t) { return typed_op<kAddTensor, BinarySig>().call(t, n, Scalar(int64_t{1})); }
Tensor reflected_mul(const Tensor& n, const Tensor& t) { return typed_op<kMulTensor, BinaryNoAlphaSig>().call(t, n); }
Tensor reflected_sub(const Tensor& n, const Tensor& t) {
  return typed_op<kRsubScalar, Tensor(const Tensor&, const Scalar&, const Scalar&)>().call(t, number_of(n), Scalar(int64_t{1}));
}
Tensor reflected_div(const Tensor& n, const Tensor& t) {
  return typed_op<kMulTensor, BinaryNoAlphaSig>().call(typed_op<kReciprocal, Tensor(const Tensor&)>().call(t), n);
}
Tensor reflected_floordiv(const Tensor& n, const Tensor& t) { return typed_op<kFloorDivide, BinaryNoAlphaSig>().call(n, t); }
Tensor reflected_mod(const Tensor& n, const Tensor& t) { return typed_op<kRemainderScalarTensor, ScalarTensorSig>().call(number_of(n), t); }
Tensor reflected_and(const Tensor& n, const Tensor& t) { return typed_op<kAndScalar, TensorScalarSig>().call(t, number_of(n)); }
Tensor reflected_or(const Tensor& n, const Tensor& t) { return typed_op<kOrScalar, TensorScalarSig>().call(t, number_of(n)); }
Tensor reflected_xor(const Tensor& n, const Tensor& t) { return typed_op<kXorScalar, TensorScalarSig>().call(t, number_of(n)); }
Tensor reflected_pow(const Tensor& n, const Tensor& t) { return typed_op<kPowScalar, ScalarTensorSig>().call(number_of(n), t); }

// The arithmetic slots call the operator's typed handle directly: one key
// computation and one table lookup, no argument parsing. `in_place` slots
// (a += b) require a tensor on the left; the others take a number on the left
// through `reflected` (Note [Reflected operators]).
#define SDK_BINARY_SLOT(fn_name, op_name, in_place, reflected, Sig, ...)                           \
  PyObject* fn_name(PyObject* a, PyObject* b) {                                                    \
    SDK_HANDLE_ERRORS_BEGIN                                                                        \
    Tensor ta, tb;                                                                                  \
    if ((in_place && !is_tensor(a)) || !to_operand(a, &ta) || !to_operand(b, &tb)) {              \
      Py_RETURN_NOTIMPLEMENTED;                                                                     \
    }                                                                                               \
    constexpr ReflectedFn reflect = reflected;                                                      \
    if constexpr (reflect != nullptr) {                                                             \
      if (!is_tensor(a)) return wrap_tensor(reflect(ta, tb));                                       \
    }                                                                                               \
    static const auto op = Dispatcher::singleton().find_schema_or_throw(op_name).typed<Sig>();     \
    return wrap_tensor(op.call(ta, tb __VA_OPT__(, ) __VA_ARGS__));                                \
    SDK_HANDLE_ERRORS_END(nullptr)                                                                 \
  }

SDK_BINARY_SLOT(tensor_add, "aten::add.Tensor", false, &reflected_add, BinarySig, Scalar(int64_t{1}))
SDK_BINARY_SLOT(tensor_iadd, "aten::add_.Tensor", true, nullptr, BinarySig, Scalar(int64_t{1}))
SDK_BINARY_SLOT(tensor_mul, "aten::mul.Tensor", false, &reflected_mul, BinaryNoAlphaSig)
SDK_BINARY_SLOT(tensor_imul, "aten::mul_.Tensor", true, nullptr, BinaryNoAlphaSig)
SDK_BINARY_SLOT(tensor_sub, "aten::sub.Tensor", false, &reflected_sub, BinarySig, Scalar(int64_t{1}))
SDK_BINARY_SLOT(tensor_isub, "aten::sub_.Tensor", true, nullptr, BinarySig, Scalar(int64_t{1}))
SDK_BINARY_SLOT(tensor_truediv, "aten::div.Tensor", false, &reflected_div, BinaryNoAlphaSig)
SDK_BINARY_SLOT(tensor_itruediv, "aten::div_.Tensor", true, nullptr, BinaryNoAlphaSig)
SDK_BINARY_SLOT(tensor_floordiv, "aten::floor_divide", false, &reflected_floordiv, BinaryNoAlphaSig)
SDK_BINARY_SLOT(tensor_ifloordiv, "aten::floor_divide_.Tensor", true, nullptr, BinaryNoAlphaSig)
SDK_BINARY_SLOT(tensor_mod, "aten::remainder.Tensor", false, &reflected_mod, BinaryNoAlphaSig)
SDK_BINARY_SLOT(tensor_imod, "aten::remainder_.Tensor", true, nullptr, BinaryNoAlphaSig)
SDK_BINARY_SLOT(tensor_and, "aten::bitwise_and.Tensor", false, &reflected_and, BinaryNoAlphaSig)
SDK_BINARY_SLOT(tensor_iand, "aten::bitwise_and_.Tensor", true, nullptr, BinaryNoAlphaSig)
SDK_BINARY_SLOT(tensor_or, "aten::bitwise_or.Tensor", false, &reflected_or, BinaryNoAlphaSig)
SDK_BINARY_SLOT(tensor_ior, "aten::bitwise_or_.Tensor", true, nullptr, BinaryNoAlphaSig)
SDK_BINARY_SLOT(tensor_xor, "aten::bitwise_xor.Tensor", false, &reflected_xor, BinaryNoAlphaSig)
SDK_BINARY_SLOT(tensor_ixor, "aten::bitwise_xor_.Tensor", true, nullptr, BinaryNoAlphaSig)
SDK_BINARY_SLOT(tensor_pow_tensor, "aten::pow.Tensor_Tensor", false, &reflected_pow, BinaryNoAlphaSig)
SDK_BINARY_SLOT(tensor_ipow_tensor, "aten::pow_.Tensor", true, nullptr, BinaryNoAlphaSig)

// x ** n with a Python number n goes through pow.Tensor_Scalar, as in
// PyTorch, so that an integral tensor to a negative int power is refused.
bool is_python_number(PyObject* obj) { return PyLong_Check(obj) || PyFloat_Check(obj); }

PyObject* pow_slot(PyObject* a, PyObject* b, PyObject* mod, bool in_place) {
  if (mod != Py_None) Py_RETURN_NOTIMPLEMENTED;  // three-argument pow()
  if (!is_tensor(a) || !is_python_number(b) || PyBool_Check(b)) {
    return in_place ? tensor_ipow_tensor(a, b) : tensor_pow_tensor(a, b);
  }
  SDK_HANDLE_ERRORS_BEGIN
  Scalar exponent;
  if (PyFloat_Check(b)) {
    exponent = Scalar(PyFloat_AS_DOUBLE(b));
  } else {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(b, &overflow);
    if (overflow) Py_RETURN_NOTIMPLEMENTED;
    exponent = Scalar(static_cast<int64_t>(v));
  }
  const Tensor& ta = unpack_tensor(a);
  using ScalarSig = Tensor(const Tensor&, const Scalar&);
  static const auto op = Dispatcher::singleton().find_schema_or_throw("aten::pow.Tensor_Scalar").typed<ScalarSig>();
  static const auto iop = Dispatcher::singleton().find_schema_or_throw("aten::pow_.Scalar").typed<ScalarSig>();
  return wrap_tensor(in_place ? iop.call(ta, exponent) : op.call(ta, exponent));
  SDK_HANDLE_ERRORS_END(nullptr)
}
PyObject* tensor_pow(PyObject* a, PyObject* b, PyObject* mod) { return pow_slot(a, b, mod, false); }
PyObject* tensor_ipow(PyObject* a, PyObject* b, PyObject* mod) { return pow_slot(a, b, mod, true); }

#define SDK_UNARY_SLOT(fn_name, op_name)                                                             \
  PyObject* fn_name(PyObject* a) {                                                                  \
    SDK_HANDLE_ERRORS_BEGIN                                                                         \
    static const auto op = Dispatcher::singleton().find_schema_or_throw(op_name).typed<Tensor(const Tensor&)>(); \
    return wrap_tensor(op.call(unpack_tensor(a)));                                                  \
    SDK_HANDLE_ERRORS_END(nullptr)                                                                  \
  }
SDK_UNARY_SLOT(tensor_neg, "aten::neg")
SDK_UNARY_SLOT(tensor_abs, "aten::abs")
SDK_UNARY_SLOT(tensor_invert, "aten::bitwise_not")  // logical not for bool tensors

// a @ b: aten::matmul; only between tensors (a Python number is a TypeError, as in PyTorch).
PyObject* tensor_matmul(PyObject* a, PyObject* b) {
  if (!is_tensor(a) || !is_tensor(b)) Py_RETURN_NOTIMPLEMENTED;
  SDK_HANDLE_ERRORS_BEGIN
  using Sig = Tensor(const Tensor&, const Tensor&);
  static const auto op = Dispatcher::singleton().find_schema_or_throw("aten::matmul").typed<Sig>();
  return wrap_tensor(op.call(unpack_tensor(a), unpack_tensor(b)));
  SDK_HANDLE_ERRORS_END(nullptr)
}

PyNumberMethods g_number_methods = [] {
  PyNumberMethods m{};
  m.nb_add = tensor_add;
  m.nb_multiply = tensor_mul;
  m.nb_inplace_add = tensor_iadd;
  m.nb_inplace_multiply = tensor_imul;
  m.nb_subtract = tensor_sub;
  m.nb_inplace_subtract = tensor_isub;
  m.nb_true_divide = tensor_truediv;
  m.nb_inplace_true_divide = tensor_itruediv;
  m.nb_floor_divide = tensor_floordiv;
  m.nb_inplace_floor_divide = tensor_ifloordiv;
  m.nb_remainder = tensor_mod;
  m.nb_inplace_remainder = tensor_imod;
  m.nb_power = tensor_pow;
  m.nb_inplace_power = tensor_ipow;
  m.nb_and = tensor_and;
  m.nb_inplace_and = tensor_iand;
  m.nb_or = tensor_or;
  m.nb_inplace_or = tensor_ior;
  m.nb_xor = tensor_xor;
  m.nb_inplace_xor = tensor_ixor;
  m.nb_negative = tensor_neg;
  m.nb_absolute = tensor_abs;
  m.nb_invert = tensor_invert;
  m.nb_matrix_multiply = tensor_matmul;
  return m;
}();

// Comparisons return tensors (a == b is eq.Tensor); anything that is not a
// tensor or a Python number compares by identity (NotImplemented).
PyObject* tensor_richcompare(PyObject* a, PyObject* b, int op) {
  SDK_HANDLE_ERRORS_BEGIN
  Tensor ta, tb;
  if (!to_operand(a, &ta) || !to_operand(b, &tb)) Py_RETURN_NOTIMPLEMENTED;
  using Sig = Tensor(const Tensor&, const Tensor&);
  auto find = [](const char* name) { return Dispatcher::singleton().find_schema_or_throw(name).typed<Sig>(); };
  static const OperatorHandle::Typed<Sig> ops[6] = {find("aten::lt.Tensor"), find("aten::le.Tensor"),
                                                    find("aten::eq.Tensor"), find("aten::ne.Tensor"),
                                                    find("aten::gt.Tensor"), find("aten::ge.Tensor")};
  return wrap_tensor(ops[op].call(ta, tb));  // Py_LT..Py_GE are 0..5 in this order
  SDK_HANDLE_ERRORS_END(nullptr)
}

// ---- attributes ----
PyObject* int_tuple(IntArrayRef a) {
  PyObject* t = PyTuple_New(static_cast<Py_ssize_t>(a.size()));
  if (!t) return nullptr;
  for (size_t i = 0; i < a.size(); ++i) PyTuple_SET_ITEM(t, i, PyLong_FromLongLong(a[i]));
  return t;
}

PyObject* get_shape(PyObject* self, void*) {
  SDK_HANDLE_ERRORS_BEGIN
  return make_size(unpack_tensor(self).sizes());
  SDK_HANDLE_ERRORS_END(nullptr)
}
PyObject* get_dtype(PyObject* self, void*) { return dtype_object(unpack_tensor(self).dtype()); }
PyObject* get_device(PyObject* self, void*) {
  SDK_HANDLE_ERRORS_BEGIN
  return device_object(unpack_tensor(self).device());
  SDK_HANDLE_ERRORS_END(nullptr)
}
PyObject* get_ndim(PyObject* self, void*) { return PyLong_FromLongLong(unpack_tensor(self).dim()); }
PyObject* get_version(PyObject* self, void*) {
  SDK_HANDLE_ERRORS_BEGIN
  const Tensor& t = unpack_tensor(self);
  SDK_CHECK(!t.impl()->is_inference(), "Inference tensors do not track version counter.");  // Note [Inference tensors]
  return PyLong_FromUnsignedLong(t.impl()->version());
  SDK_HANDLE_ERRORS_END(nullptr)
}
PyObject* get_is_meta(PyObject* self, void*) { return PyBool_FromLong(unpack_tensor(self).is_meta()); }
PyObject* get_is_cpu(PyObject* self, void*) { return PyBool_FromLong(unpack_tensor(self).is_cpu()); }
PyObject* get_itemsize(PyObject* self, void*) { return PyLong_FromSize_t(unpack_tensor(self).itemsize()); }
// numel * itemsize in Python ints: an expanded tensor's numel fits in int64 but its
// byte count need not (Note [Size arithmetic overflow]); Python never wraps it.
PyObject* get_nbytes(PyObject* self, void*) {
  const Tensor& t = unpack_tensor(self);
  PyObject* numel = PyLong_FromLongLong(t.numel());
  if (!numel) return nullptr;
  PyObject* itemsize = PyLong_FromSize_t(t.itemsize());
  if (!itemsize) {
    Py_DECREF(numel);
    return nullptr;
  }
  PyObject* r = PyNumber_Multiply(numel, itemsize);
  Py_DECREF(numel);
  Py_DECREF(itemsize);
  return r;
}
PyObject* get_is_wrapped_number(PyObject* self, void*) {
  return PyBool_FromLong(unpack_tensor(self).impl()->is_wrapped_number());
}

PyGetSetDef g_getset[] = {
    {"shape", get_shape, nullptr, "The size of each dimension, as a backend_sdk.Size.", nullptr},
    {"dtype", get_dtype, nullptr, "The element type.", nullptr},
    {"device", get_device, nullptr, "The device the data lives on.", nullptr},
    {"ndim", get_ndim, nullptr, "The number of dimensions.", nullptr},
    {"_version", get_version, nullptr, "Version counter: bumped by every in-place write.", nullptr},
    {"is_meta", get_is_meta, nullptr, "True for tensors on the meta device (no data).", nullptr},
    {"is_cpu", get_is_cpu, nullptr, "True for tensors in host memory.", nullptr},
    {"itemsize", get_itemsize, nullptr, "Bytes per element.", nullptr},
    {"nbytes", get_nbytes, nullptr, "Bytes of the elements this tensor views (numel * itemsize).", nullptr},
    {"_is_wrapped_number", get_is_wrapped_number, nullptr, "True for a Python number wrapped as a tensor.",
     nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

// size(dim=None) / stride(dim=None)
PyObject* dim_query(PyObject* self, PyObject* const* args, Py_ssize_t nargs, bool strides) {
  SDK_HANDLE_ERRORS_BEGIN
  const Tensor& t = unpack_tensor(self);
  const char* name = strides ? "stride" : "size";
  if (nargs == 0 || args[0] == Py_None) return strides ? int_tuple(t.strides()) : make_size(t.sizes());
  SDK_CHECK_TYPE(nargs == 1 && PyLong_Check(args[0]) && !PyBool_Check(args[0]), name,
                 "(): argument 'dim' must be int");
  int64_t d = PyLong_AsLongLong(args[0]);
  if (d == -1 && PyErr_Occurred()) return nullptr;
  return PyLong_FromLongLong(strides ? t.stride(d) : t.size(d));
  SDK_HANDLE_ERRORS_END(nullptr)
}
PyObject* m_size(PyObject* self, PyObject* const* args, Py_ssize_t nargs) { return dim_query(self, args, nargs, false); }
PyObject* m_stride(PyObject* self, PyObject* const* args, Py_ssize_t nargs) { return dim_query(self, args, nargs, true); }
PyObject* m_dim(PyObject* self, PyObject*) { return PyLong_FromLongLong(unpack_tensor(self).dim()); }
PyObject* m_numel(PyObject* self, PyObject*) { return PyLong_FromLongLong(unpack_tensor(self).numel()); }
PyObject* m_storage_offset(PyObject* self, PyObject*) {
  return PyLong_FromLongLong(unpack_tensor(self).storage_offset());
}
PyObject* m_is_contiguous(PyObject* self, PyObject*) { return PyBool_FromLong(unpack_tensor(self).is_contiguous()); }
PyObject* m_data_ptr(PyObject* self, PyObject*) {
  SDK_HANDLE_ERRORS_BEGIN
  // Note [Python key tensors] (PyPythonDispatch.h): a wrapper subclass has no memory of its own.
  SDK_CHECK(!has_python_key(unpack_tensor(self)), "Cannot access data pointer of Tensor that doesn't have "
            "storage: ", Py_TYPE(self)->tp_name, " is a wrapper subclass (its data is in its inner tensors)");
  return PyLong_FromVoidPtr(unpack_tensor(self).data_ptr());
  SDK_HANDLE_ERRORS_END(nullptr)
}
PyObject* m_element_size(PyObject* self, PyObject*) { return PyLong_FromSize_t(unpack_tensor(self).itemsize()); }
PyObject* m_is_same(PyObject* self, PyObject* other) {
  return PyBool_FromLong(is_tensor(other) && unpack_tensor(self).is_same(unpack_tensor(other)));
}

PyMethodDef g_methods[] = {
    {"size", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(m_size)), METH_FASTCALL,
     "size(dim=None) -> Size or int\n\nThe tensor's shape, or the size of one dimension."},
    {"stride", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(m_stride)), METH_FASTCALL,
     "stride(dim=None) -> tuple or int\n\nElements to step in storage per index of each dimension."},
    {"dim", m_dim, METH_NOARGS, "dim() -> int\n\nNumber of dimensions."},
    {"numel", m_numel, METH_NOARGS, "numel() -> int\n\nNumber of elements."},
    {"storage_offset", m_storage_offset, METH_NOARGS,
     "storage_offset() -> int\n\nOffset of element 0 in the storage, in elements."},
    {"is_contiguous", m_is_contiguous, METH_NOARGS,
     "is_contiguous() -> bool\n\nTrue if the elements are laid out in row-major order without gaps."},
    {"data_ptr", m_data_ptr, METH_NOARGS, "data_ptr() -> int\n\nAddress of the first element."},
    {"element_size", m_element_size, METH_NOARGS, "element_size() -> int\n\nBytes per element."},
    {"_is_same", m_is_same, METH_O, "True if both objects wrap the same TensorImpl."},
    {nullptr, nullptr, 0, nullptr}};

// x[index] (Note [Indexing fast path], PyIndexing.cpp); x[index] = value stays backend_sdk.Tensor's.
PyMappingMethods g_mapping_methods = [] {
  PyMappingMethods m{};
  m.mp_subscript = tensor_getitem;
  return m;
}();
PySequenceMethods g_sequence_methods = [] {
  PySequenceMethods m{};
  m.sq_item = tensor_sq_item;
  return m;
}();

}  // namespace

void init_tensor(py::module_& m) {
  static PyTypeObject type = [] {
    PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
    t.tp_name = "backend_sdk._C.TensorBase";
    t.tp_basicsize = sizeof(PyTensor);
    t.tp_dealloc = tensor_dealloc;
    t.tp_finalize = tensor_finalize;
    t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE;
    t.tp_doc = "The C part of backend_sdk.Tensor.";
    t.tp_weaklistoffset = offsetof(PyTensor, weakreflist);
    t.tp_methods = g_methods;
    t.tp_getset = g_getset;
    t.tp_as_number = &g_number_methods;
    t.tp_as_mapping = &g_mapping_methods;
    t.tp_as_sequence = &g_sequence_methods;
    t.tp_richcompare = tensor_richcompare;
    t.tp_hash = PyBaseObject_Type.tp_hash;  // identity: == builds a tensor, hashing stays by id
    t.tp_new = tensor_new;
    return t;
  }();
  if (PyType_Ready(&type) < 0) throw py::error_already_set();
  g_tensor_base_type = &type;
  autograd::AutogradMeta::release_py_state = &release_py_state;
  m.add_object("TensorBase", py::handle(reinterpret_cast<PyObject*>(&type)));

  m.def(
      "_set_tensor_class",
      [](py::object cls) {
        SDK_CHECK_TYPE(PyType_Check(cls.ptr()) &&
                           PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls.ptr()), g_tensor_base_type),
                       "_set_tensor_class: expected a subclass of TensorBase");
        cls.inc_ref();  // kept for the process's life
        g_tensor_class = reinterpret_cast<PyTypeObject*>(cls.ptr());
      },
      "Registers the Python class whose instances wrap tensors (backend_sdk.Tensor).");
  m.def(
      "_set_fake_tensor_class",
      [](py::object cls) {
        SDK_CHECK_TYPE(PyType_Check(cls.ptr()) &&
                           PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls.ptr()), g_tensor_base_type),
                       "_set_fake_tensor_class: expected a subclass of TensorBase");
        cls.inc_ref();  // kept for the process's life
        g_fake_tensor_class = reinterpret_cast<PyTypeObject*>(cls.ptr());
      },
      "Registers the Python class whose instances wrap tensors carrying the Fake key (FakeTensor).");
}

}  // namespace sdk::python
