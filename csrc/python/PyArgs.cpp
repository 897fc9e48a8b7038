#include "python/PyArgs.h"

#include <cmath>
#include <cstdlib>

#include <backend_sdk/core/Exception.h>
#include "python/PyCore.h"
#include "python/PyGenerator.h"
#include "python/PyTensor.h"

namespace sdk::python {
namespace {

bool is_int(PyObject* obj) {
  if (PyBool_Check(obj)) return false;
  if (PyLong_Check(obj)) return true;
  if (is_tensor(obj)) return false;
  // numpy integers and other objects implementing __index__
  return PyIndex_Check(obj) && !PyFloat_Check(obj);
}

bool is_number(PyObject* obj) {
  return PyBool_Check(obj) || PyLong_Check(obj) || PyFloat_Check(obj) ||
         (!is_tensor(obj) && (PyIndex_Check(obj) || PyNumber_Check(obj)) && !PyUnicode_Check(obj) &&
          !PySequence_Check(obj));
}

bool as_int(PyObject* obj, int64_t* out) {
  if (!is_int(obj)) return false;
  long long v = PyLong_AsLongLong(obj);
  if (v == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    PyObject* idx = PyNumber_Index(obj);
    if (!idx) {
      PyErr_Clear();
      return false;
    }
    v = PyLong_AsLongLong(idx);
    Py_DECREF(idx);
    if (v == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      SDK_THROW(Value, "integer argument out of the range of int64");
    }
  }
  *out = v;
  return true;
}

bool as_scalar(PyObject* obj, IValue* out) {
  if (PyBool_Check(obj)) {
    *out = IValue(obj == Py_True);
    return true;
  }
  int64_t i;
  if (as_int(obj, &i)) {
    *out = IValue(i);
    return true;
  }
  if (PyFloat_Check(obj)) {
    *out = IValue(PyFloat_AS_DOUBLE(obj));
    return true;
  }
  if (is_number(obj)) {
    // numpy floating scalars and the like
    double d = PyFloat_AsDouble(obj);
    if (d == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    // numpy.bool_ is not a Python bool; keep bools as bools
    *out = IValue(d);
    return true;
  }
  return false;
}

bool is_sequence(PyObject* obj) { return PyList_Check(obj) || PyTuple_Check(obj); }

bool to_list(PyObject* obj, const Type& type, IValue* out) {
  const Type& elem = *type.elem;
  // A single int is accepted for an int list and repeated for fixed sizes ("int[2] stride=1").
  if (!is_sequence(obj)) {
    int64_t v;
    if ((elem.kind == TypeKind::Int || elem.kind == TypeKind::SymInt) && as_int(obj, &v)) {
      *out = IValue(std::vector<int64_t>(type.fixed_size.value_or(1), v));
      return true;
    }
    return false;
  }
  Py_ssize_t n = PySequence_Fast_GET_SIZE(obj);
  PyObject** items = PySequence_Fast_ITEMS(obj);
  switch (elem.kind) {
    case TypeKind::Int:
    case TypeKind::SymInt: {
      std::vector<int64_t> v(static_cast<size_t>(n));
      for (Py_ssize_t i = 0; i < n; ++i) {
        if (!as_int(items[i], &v[i])) return false;
      }
      if (type.fixed_size && n == 1 && *type.fixed_size > 1) v.assign(*type.fixed_size, v[0]);
      *out = IValue(std::move(v));
      return true;
    }
    case TypeKind::Float: {
      std::vector<double> v(static_cast<size_t>(n));
      for (Py_ssize_t i = 0; i < n; ++i) {
        IValue s;
        if (!as_scalar(items[i], &s) || s.is_bool()) return false;
        v[i] = s.to_double();
      }
      *out = IValue(std::move(v));
      return true;
    }
    case TypeKind::Tensor: {
      std::vector<Tensor> v;
      v.reserve(static_cast<size_t>(n));
      for (Py_ssize_t i = 0; i < n; ++i) {
        if (!is_tensor(items[i])) return false;
        v.push_back(unpack_tensor(items[i]));
      }
      *out = IValue(std::move(v));
      return true;
    }
    default: {
      GenericList v;
      v.reserve(static_cast<size_t>(n));
      for (Py_ssize_t i = 0; i < n; ++i) {
        IValue e;
        if (!to_ivalue(items[i], elem, &e)) return false;
        v.push_back(std::move(e));
      }
      *out = IValue(std::move(v));
      return true;
    }
  }
}

}  // namespace

bool to_ivalue(PyObject* obj, const Type& type, IValue* out, bool numbers_as_tensors) {
  switch (type.kind) {
    case TypeKind::Tensor:
      if (is_tensor(obj)) {
        *out = IValue(unpack_tensor(obj));
        return true;
      }
      if (numbers_as_tensors && (PyBool_Check(obj) || PyLong_Check(obj) || PyFloat_Check(obj))) {
        IValue scalar;
        if (!as_scalar(obj, &scalar)) return false;
        *out = IValue(wrapped_scalar_tensor(scalar.to_scalar()));
        return true;
      }
      return false;
    case TypeKind::Optional:
      if (obj == Py_None) {
        *out = IValue();
        return true;
      }
      return to_ivalue(obj, *type.elem, out, numbers_as_tensors);
    case TypeKind::Int:
    case TypeKind::SymInt: {
      int64_t v;
      if (!as_int(obj, &v)) return false;
      *out = IValue(v);
      return true;
    }
    case TypeKind::Float: {
      IValue s;
      if (!as_scalar(obj, &s) || s.is_bool()) return false;
      *out = IValue(s.to_double());
      return true;
    }
    case TypeKind::Bool:
      if (!PyBool_Check(obj)) return false;
      *out = IValue(obj == Py_True);
      return true;
    case TypeKind::Scalar:
      return as_scalar(obj, out);
    case TypeKind::Str:
      if (!PyUnicode_Check(obj)) return false;
      *out = IValue(std::string(PyUnicode_AsUTF8(obj)));
      return true;
    case TypeKind::ScalarType: {
      ScalarType t;
      if (!parse_dtype(obj, &t)) return false;
      *out = IValue(t);
      return true;
    }
    case TypeKind::Device: {
      Device d;
      if (!parse_device(obj, &d)) return false;
      *out = IValue(d);
      return true;
    }
    case TypeKind::Layout:
    case TypeKind::MemoryFormat: {
      // Enum values: their pybind11 enums implement __index__.
      int64_t v;
      if (!as_int(obj, &v)) return false;
      *out = IValue(v);
      return true;
    }
    case TypeKind::List:
      return to_list(obj, type, out);
    case TypeKind::Generator: {
      Generator g;
      if (!unpack_generator(obj, &g)) return false;
      *out = IValue(std::move(g));
      return true;
    }
    case TypeKind::NoneType:
      if (obj != Py_None) return false;
      *out = IValue();
      return true;
    default:
      return false;
  }
}

PyObject* from_ivalue(const IValue& v) {
  switch (v.tag()) {
    case IValue::Tag::None:
      Py_RETURN_NONE;
    case IValue::Tag::Tensor:
      return wrap_tensor(v.to_tensor());
    case IValue::Tag::Double:
      return PyFloat_FromDouble(v.to_double());
    case IValue::Tag::Int:
      return PyLong_FromLongLong(v.to_int());
    case IValue::Tag::Bool:
      return PyBool_FromLong(v.to_bool());
    case IValue::Tag::String:
      return PyUnicode_FromStringAndSize(v.to_string().data(), static_cast<Py_ssize_t>(v.to_string().size()));
    case IValue::Tag::Device:
      return device_object(v.to_device());
    case IValue::Tag::IntList: {
      const auto& l = v.to_int_list();
      PyObject* out = PyList_New(static_cast<Py_ssize_t>(l.size()));
      for (size_t i = 0; i < l.size(); ++i) PyList_SET_ITEM(out, i, PyLong_FromLongLong(l[i]));
      return out;
    }
    case IValue::Tag::DoubleList: {
      const auto& l = v.to_double_list();
      PyObject* out = PyList_New(static_cast<Py_ssize_t>(l.size()));
      for (size_t i = 0; i < l.size(); ++i) PyList_SET_ITEM(out, i, PyFloat_FromDouble(l[i]));
      return out;
    }
    case IValue::Tag::TensorList: {
      const auto& l = v.to_tensor_list();
      PyObject* out = PyList_New(static_cast<Py_ssize_t>(l.size()));
      for (size_t i = 0; i < l.size(); ++i) PyList_SET_ITEM(out, i, wrap_tensor(l[i]));
      return out;
    }
    case IValue::Tag::GenericList: {
      const auto& l = v.to_list();
      PyObject* out = PyList_New(static_cast<Py_ssize_t>(l.size()));
      for (size_t i = 0; i < l.size(); ++i) PyList_SET_ITEM(out, i, from_ivalue(l[i]));
      return out;
    }
    case IValue::Tag::Generator:
      return wrap_generator(v.to_generator());
  }
  Py_RETURN_NONE;
}

std::string python_type_name(PyObject* obj) {
  if (is_tensor(obj)) return "Tensor";
  if (is_sequence(obj)) {
    std::string out = PyList_Check(obj) ? "list of [" : "tuple of [";
    Py_ssize_t n = PySequence_Fast_GET_SIZE(obj);
    for (Py_ssize_t i = 0; i < n && i < 4; ++i) {
      out += (i ? ", " : "") + python_type_name(PySequence_Fast_GET_ITEM(obj, i));
    }
    if (n > 4) out += ", ...";
    return out + "]";
  }
  return Py_TYPE(obj)->tp_name;
}

}  // namespace sdk::python
