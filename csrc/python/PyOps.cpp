// Operators as Python callables (OpOverload, OpOverloadPacket), Python kernels
// and the Library binding.
//
// Note [Python argument binding]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A call binds Python arguments to the schema the way torch.ops does:
// positional arguments fill the positional parameters in order, keyword
// arguments match by name (kwarg-only parameters only by name), absent
// parameters take their schema default. As in PyTorch, when the only
// remaining positional parameter is an int list, extra positional ints are
// gathered into it (x.view(2, 3)). A packet (ops.aten.add) tries its
// overloads in definition order and calls the first that binds.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <mutex>
#include <unordered_map>

#include <backend_sdk/ops/detail/Autograd.h>
#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/dispatch/detail/LibraryGroups.h>
#include <backend_sdk/dispatch/detail/KernelChecker.h>
#include <backend_sdk/dispatch/detail/KernelRegistry.h>
#include <backend_sdk/dispatch/Decline.h>
#include "python/Errors.h"
#include "python/PyArgs.h"
#include "python/PyCore.h"
#include "python/PyPythonDispatch.h"
#include "python/PyTensor.h"

namespace py = pybind11;

namespace sdk::python {
namespace {

// ---------------------------------------------------------------------------
// Argument binding
// ---------------------------------------------------------------------------
// The schema of a definition read once (op.schema() again could see a newer one).
const FunctionSchema& schema_of(const OperatorHandle& op, const SchemaRecord* rec) {
  return rec ? rec->schema : op.schema();  // op.schema() throws: never defined
}

struct BoundSchema {
  explicit BoundSchema(OperatorHandle op)
      : handle(op), record(op.entry().schema_record()), schema(schema_of(op, record)) {
    SDK_CHECK_VALUE(schema.arguments.size() < 64, schema.qualified_name(),
                    ": operators with 64 or more arguments cannot be called from Python");
    for (const Argument& a : schema.arguments) {
      defaults.push_back(a.default_text ? std::optional<IValue>(default_ivalue(a)) : std::nullopt);
      names.push_back(py::reinterpret_steal<py::object>(PyUnicode_InternFromString(a.name.c_str())));
    }
    num_positional = schema.num_positional();
    if (num_positional >= 1) {
      const Type& last = *schema.arguments[num_positional - 1].type;
      varargs_intlist = last.kind == TypeKind::List &&
                        (last.elem->kind == TypeKind::Int || last.elem->kind == TypeKind::SymInt);
    }
  }
  OperatorHandle handle;
  // The definition this handle binds arguments for; calls refuse to run
  // against another one (Note [Schema lifetime]).
  const SchemaRecord* record;
  const FunctionSchema& schema;  // record->schema: records are never freed
  std::vector<std::optional<IValue>> defaults;
  std::vector<py::object> names;
  size_t num_positional = 0;
  bool varargs_intlist = false;
};

std::string arg_error(const BoundSchema& b, size_t i, PyObject* obj) {
  const Argument& a = b.schema.arguments[i];
  return b.schema.qualified_name() + "(): argument '" + a.name + "' (position " + std::to_string(i + 1) +
         ") must be " + a.type->str() + ", not " + python_type_name(obj);
}

// Binds args to the schema into `stack`. On failure returns false and sets
// *error to a message (no Python error is set).
bool bind_arguments(const BoundSchema& b, PyObject* const* args, size_t nargs, PyObject* kwnames,
                    Stack* stack, std::string* error, bool numbers_as_tensors = false) {
  const auto& params = b.schema.arguments;
  size_t n = params.size();
  stack->assign(n, IValue());
  // Which parameters got a value; schemas have far fewer than 64 arguments
  // (checked when the schema is bound).
  uint64_t filled_bits = 0;
  auto filled = [&filled_bits](size_t i) { return (filled_bits >> i) & 1u; };
  // In a vectorcall, keyword values follow the positional arguments.
  PyObject* const* kwvalues = args + nargs;
  // Gather `x.view(2, 3)` into the int-list parameter.
  py::object gathered;
  if (b.varargs_intlist && nargs > b.num_positional && nargs >= 1) {
    size_t first = b.num_positional - 1;
    bool all_ints = true;
    for (size_t i = first; i < nargs; ++i) all_ints &= PyLong_Check(args[i]) && !PyBool_Check(args[i]);
    if (all_ints) {
      gathered = py::reinterpret_steal<py::object>(PyTuple_New(static_cast<Py_ssize_t>(nargs - first)));
      for (size_t i = first; i < nargs; ++i) {
        Py_INCREF(args[i]);
        PyTuple_SET_ITEM(gathered.ptr(), static_cast<Py_ssize_t>(i - first), args[i]);
      }
      nargs = first + 1;
    }
  }
  if (nargs > b.num_positional) {
    *error = b.schema.qualified_name() + "() takes " + std::to_string(b.num_positional) +
             " positional arguments but " + std::to_string(nargs) + " were given";
    return false;
  }
  for (size_t i = 0; i < nargs; ++i) {
    PyObject* obj = (gathered && i == nargs - 1) ? gathered.ptr() : args[i];
    if (!to_ivalue(obj, *params[i].type, &(*stack)[i], numbers_as_tensors)) {
      *error = arg_error(b, i, obj);
      return false;
    }
    filled_bits |= uint64_t{1} << i;
  }
  Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, k);
    PyObject* value = kwvalues[k];
    size_t i = 0;
    for (; i < n; ++i) {
      if (b.names[i].ptr() == key || PyUnicode_Compare(b.names[i].ptr(), key) == 0) break;
    }
    if (i == n) {
      *error = b.schema.qualified_name() + "() got an unexpected keyword argument '" +
               std::string(PyUnicode_AsUTF8(key)) + "'";
      return false;
    }
    if (filled(i)) {
      *error = b.schema.qualified_name() + "() got multiple values for argument '" + params[i].name + "'";
      return false;
    }
    if (!to_ivalue(value, *params[i].type, &(*stack)[i], numbers_as_tensors)) {
      *error = arg_error(b, i, value);
      return false;
    }
    filled_bits |= uint64_t{1} << i;
  }
  for (size_t i = 0; i < n; ++i) {
    if (filled(i)) continue;
    if (!b.defaults[i]) {
      *error = b.schema.qualified_name() + "() missing required argument '" + params[i].name + "' (position " +
               std::to_string(i + 1) + ")";
      return false;
    }
    (*stack)[i] = *b.defaults[i];
  }
  return true;
}

// bind_arguments for a pybind11 call (args, kwargs) in the vectorcall layout it expects (keyword
// values after the positional ones); a binding error is Python's TypeError.
Stack bind_call(const BoundSchema& b, const py::args& args, const py::kwargs& kwargs) {
  std::vector<PyObject*> flat;
  for (auto a : args) flat.push_back(a.ptr());
  py::tuple kwnames(kwargs.size());
  size_t i = 0;
  for (auto item : kwargs) {
    kwnames[i++] = item.first;
    flat.push_back(item.second.ptr());
  }
  Stack stack;
  std::string error;
  if (!bind_arguments(b, flat.data(), args.size(), kwargs.size() ? kwnames.ptr() : nullptr, &stack, &error)) {
    throw py::type_error(error);
  }
  return stack;
}

// Converts the returns on the stack to Python: None, one value, or a tuple.
PyObject* returns_to_python(const FunctionSchema& schema, Stack& stack) {
  size_t nret = schema.returns.size();
  if (nret == 0) Py_RETURN_NONE;
  if (nret == 1) return from_ivalue(stack.back());
  PyObject* t = PyTuple_New(static_cast<Py_ssize_t>(nret));
  size_t base = stack.size() - nret;
  for (size_t i = 0; i < nret; ++i) PyTuple_SET_ITEM(t, static_cast<Py_ssize_t>(i), from_ivalue(stack[base + i]));
  return t;
}

// ---------------------------------------------------------------------------
// OpOverload: one schema, callable
// ---------------------------------------------------------------------------
struct PyOpOverload {
  PyObject_HEAD
  BoundSchema* bound;
  PyObject* name;  // "aten::add.Tensor"
  vectorcallfunc vectorcall;
};

PyTypeObject g_overload_type{PyVarObject_HEAD_INIT(nullptr, 0)};
PyTypeObject g_packet_type{PyVarObject_HEAD_INIT(nullptr, 0)};

// Runs the operator; a std::bad_alloc from inside it (a kernel sizing a host vector by an argument,
// chunk(x, 2**40) on an empty x) becomes an OutOfMemoryError that names the operator.
void call_naming_oom(const BoundSchema& b, Stack* stack) {
  try {
    b.handle.call_boxed_bound(b.record, stack);
  } catch (const std::bad_alloc&) {
    SDK_CHECK_KIND(ErrorKind::OutOfMemory, false, b.schema.qualified_name(),
                   ": out of host memory (std::bad_alloc)");
  }
}

PyObject* call_bound(const BoundSchema& b, PyObject* const* args, size_t nargs, PyObject* kwnames) {
  Stack stack;
  std::string error, lenient_error;
  // Strictly first; then with Python numbers accepted for Tensor arguments.
  if (!bind_arguments(b, args, nargs, kwnames, &stack, &error) &&
      !bind_arguments(b, args, nargs, kwnames, &stack, &lenient_error, /*numbers_as_tensors=*/true)) {
    PyErr_SetString(PyExc_TypeError, error.c_str());
    return nullptr;
  }
  call_naming_oom(b, &stack);
  return returns_to_python(b.schema, stack);
}

PyObject* overload_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  SDK_HANDLE_ERRORS_BEGIN
  auto* o = reinterpret_cast<PyOpOverload*>(self);
  if (!o->bound) {
    PyErr_SetString(PyExc_RuntimeError, "this OpOverload is not bound to an operator");
    return nullptr;
  }
  return call_bound(*o->bound, args, PyVectorcall_NARGS(nargsf), kwnames);
  SDK_HANDLE_ERRORS_END(nullptr)
}

void overload_dealloc(PyObject* self) {
  auto* o = reinterpret_cast<PyOpOverload*>(self);
  delete o->bound;
  Py_XDECREF(o->name);
  Py_TYPE(self)->tp_free(self);
}

PyObject* overload_repr(PyObject* self) {
  auto* o = reinterpret_cast<PyOpOverload*>(self);
  if (!o->name) return PyUnicode_FromString("<OpOverload (unbound)>");
  return PyUnicode_FromFormat("<OpOverload %U>", o->name);
}

// Subclasses (custom_op's CustomOpDef) are allocated unbound and bound with
// _C._bind_overload; calls on an unbound object raise.
PyObject* overload_new(PyTypeObject* type, PyObject*, PyObject*) {
  PyObject* obj = type->tp_alloc(type, 0);
  if (!obj) return nullptr;
  reinterpret_cast<PyOpOverload*>(obj)->vectorcall = overload_vectorcall;
  return obj;
}

PyObject* overload_get_schema(PyObject* self, void*) {
  auto* o = reinterpret_cast<PyOpOverload*>(self);
  if (!o->bound) Py_RETURN_NONE;
  // A FunctionSchema object, as PyTorch's OpOverload._schema (str() gives the text).
  try {
    return py::cast(o->bound->schema).release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
    return nullptr;
  }
}
PyObject* overload_get_name(PyObject* self, void*) {
  auto* o = reinterpret_cast<PyOpOverload*>(self);
  if (!o->name) Py_RETURN_NONE;
  Py_INCREF(o->name);
  return o->name;
}

// Tags live in Python (backend_sdk/_tags.py, Note [Operator tags]): the getter
// asks the provider installed with _C._set_tags_provider, called with the name.
PyObject* g_tags_provider = nullptr;  // a strong reference, kept for the process

PyObject* overload_get_tags(PyObject* self, void*) {
  auto* o = reinterpret_cast<PyOpOverload*>(self);
  if (!o->name || !g_tags_provider) return PyList_New(0);
  return PyObject_CallOneArg(g_tags_provider, o->name);
}

// Whether Python defined the operator (Library.define): a Python registry too, asked the same way.
PyObject* g_defined_in_python_provider = nullptr;  // a strong reference, kept for the process

PyObject* overload_get_defined_in_python(PyObject* self, void*) {
  auto* o = reinterpret_cast<PyOpOverload*>(self);
  if (!o->name || !g_defined_in_python_provider) Py_RETURN_FALSE;
  return PyObject_CallOneArg(g_defined_in_python_provider, o->name);
}

// PyTorch's OpOverload.overloadpacket, ._overloadname, ._opname and .name() (what
// __torch_dispatch__ handlers read, Note [Python dispatch] in backend_sdk/_python_dispatch_impl.py).
py::object make_packet(const std::string& ns_and_name);

PyObject* overload_get_packet(PyObject* self, void*) {
  auto* o = reinterpret_cast<PyOpOverload*>(self);
  if (!o->bound) Py_RETURN_NONE;
  try {
    const FunctionSchema& s = o->bound->schema;
    return make_packet(s.ns + "::" + s.name).release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
    return nullptr;
  }
}
PyObject* overload_get_overloadname(PyObject* self, void*) {
  auto* o = reinterpret_cast<PyOpOverload*>(self);
  if (!o->bound) Py_RETURN_NONE;
  const std::string& n = o->bound->schema.overload_name;
  return PyUnicode_FromString(n.empty() ? "default" : n.c_str());
}
PyObject* overload_get_opname(PyObject* self, void*) {
  auto* o = reinterpret_cast<PyOpOverload*>(self);
  if (!o->bound) Py_RETURN_NONE;
  return PyUnicode_FromString(o->bound->schema.name.c_str());
}
PyObject* overload_name_method(PyObject* self, PyObject*) { return overload_get_name(self, nullptr); }

PyMethodDef g_overload_methods[] = {
    {"name", overload_name_method, METH_NOARGS, "The qualified name 'ns::op.overload' ('ns::op' for the default), "
                                                "as PyTorch's OpOverload.name()."},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef g_overload_getset[] = {
    {"overloadpacket", overload_get_packet, nullptr, "The OpOverloadPacket of every overload of this operator.",
     nullptr},
    {"_overloadname", overload_get_overloadname, nullptr, "The overload name ('default' for the unnamed one).",
     nullptr},
    {"_opname", overload_get_opname, nullptr, "The operator's name without namespace and overload.", nullptr},
    {"_defined_in_python", overload_get_defined_in_python, nullptr,
     "True if the operator was defined from Python (Library.define, custom_op), as PyTorch's.", nullptr},
    {"_schema", overload_get_schema, nullptr, "The operator's schema (a FunctionSchema; str() is its text).", nullptr},
    {"tags", overload_get_tags, nullptr, "The operator's tags (a list of backend_sdk.Tag), as OpOverload.tags.", nullptr},
    {"__name__", overload_get_name, nullptr, "The qualified name 'ns::op.overload'.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyObject* make_overload(OperatorHandle op) {
  PyObject* obj = g_overload_type.tp_alloc(&g_overload_type, 0);
  if (!obj) throw py::error_already_set();
  auto* o = reinterpret_cast<PyOpOverload*>(obj);
  o->vectorcall = overload_vectorcall;
  try {
    o->bound = new BoundSchema(op);
  } catch (...) {
    Py_DECREF(obj);
    throw;
  }
  o->name = PyUnicode_FromString(op.name().c_str());
  return obj;
}

// ---------------------------------------------------------------------------
// OpOverloadPacket: all overloads of ns::name; picks one per call
// ---------------------------------------------------------------------------
struct PyOpPacket {
  PyObject_HEAD
  PyObject* overloads;  // tuple of OpOverload, in definition order
  PyObject* overload_names;  // tuple of str ("default" for the unnamed overload)
  PyObject* name;            // "aten::add"
  vectorcallfunc vectorcall;
};

PyObject* packet_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  SDK_HANDLE_ERRORS_BEGIN
  auto* p = reinterpret_cast<PyOpPacket*>(self);
  size_t nargs = PyVectorcall_NARGS(nargsf);
  Py_ssize_t n = PyTuple_GET_SIZE(p->overloads);
  std::string errors;
  Stack stack;
  // Every overload strictly first, then with numbers accepted for tensors, so
  // add(x, 2) prefers add.Scalar when it exists.
  for (bool lenient : {false, true}) {
    for (Py_ssize_t i = 0; i < n; ++i) {
      auto* o = reinterpret_cast<PyOpOverload*>(PyTuple_GET_ITEM(p->overloads, i));
      std::string error;
      if (bind_arguments(*o->bound, args, nargs, kwnames, &stack, &error, lenient)) {
        call_naming_oom(*o->bound, &stack);
        return returns_to_python(o->bound->schema, stack);
      }
      if (!lenient) errors += "\n  " + o->bound->schema.str() + "\n    " + error;
    }
  }
  std::string msg = std::string(PyUnicode_AsUTF8(p->name)) +
                    "() received an invalid combination of arguments. None of its overloads matched:" + errors;
  PyErr_SetString(PyExc_TypeError, msg.c_str());
  return nullptr;
  SDK_HANDLE_ERRORS_END(nullptr)
}

void packet_dealloc(PyObject* self) {
  auto* p = reinterpret_cast<PyOpPacket*>(self);
  Py_XDECREF(p->overloads);
  Py_XDECREF(p->overload_names);
  Py_XDECREF(p->name);
  Py_TYPE(self)->tp_free(self);
}

PyObject* packet_repr(PyObject* self) {
  return PyUnicode_FromFormat("<OpOverloadPacket %U>", reinterpret_cast<PyOpPacket*>(self)->name);
}

PyObject* packet_getattro(PyObject* self, PyObject* attr) {
  auto* p = reinterpret_cast<PyOpPacket*>(self);
  Py_ssize_t n = PyTuple_GET_SIZE(p->overload_names);
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (PyUnicode_Compare(PyTuple_GET_ITEM(p->overload_names, i), attr) == 0) {
      PyObject* o = PyTuple_GET_ITEM(p->overloads, i);
      Py_INCREF(o);
      return o;
    }
  }
  PyObject* r = PyObject_GenericGetAttr(self, attr);
  if (!r && PyErr_ExceptionMatches(PyExc_AttributeError)) {
    PyErr_Clear();
    PyErr_Format(PyExc_AttributeError, "The underlying op of '%U' has no overload name '%U'", p->name, attr);
  }
  return r;
}

// Binding as a method: Tensor.add = packet makes x.add(y) call packet(x, y).
PyObject* packet_descr_get(PyObject* self, PyObject* obj, PyObject*) {
  if (obj == nullptr || obj == Py_None) {
    Py_INCREF(self);
    return self;
  }
  return PyMethod_New(self, obj);
}

PyObject* packet_get_overloads(PyObject* self, void*) {
  auto* p = reinterpret_cast<PyOpPacket*>(self);
  return PySequence_List(p->overload_names);
}
PyObject* packet_get_name(PyObject* self, void*) {
  auto* p = reinterpret_cast<PyOpPacket*>(self);
  Py_INCREF(p->name);
  return p->name;
}
PyObject* packet_get_doc(PyObject* self, void*) {
  auto* p = reinterpret_cast<PyOpPacket*>(self);
  std::string doc = std::string(PyUnicode_AsUTF8(p->name)) + " — overloads:";
  Py_ssize_t n = PyTuple_GET_SIZE(p->overloads);
  for (Py_ssize_t i = 0; i < n; ++i) {
    doc += "\n  " + reinterpret_cast<PyOpOverload*>(PyTuple_GET_ITEM(p->overloads, i))->bound->schema.str();
  }
  return PyUnicode_FromString(doc.c_str());
}

PyGetSetDef g_packet_getset[] = {
    {"_overload_names", packet_get_overloads, nullptr, "Overload names, in definition order.", nullptr},
    {"__name__", packet_get_name, nullptr, "The qualified name 'ns::op'.", nullptr},
    {"__doc__", packet_get_doc, nullptr, "The schemas of every overload.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

// Note [Operator object identity]
// A packet's overloads are the cached objects the fallbacks hand to Python (overload_object), so a
// __torch_dispatch__ handler's `func is ops.aten.mm.default` holds as in PyTorch; overloads and
// packets also compare and hash by qualified name, so `func in {aten.mm.default}` and
// `func.overloadpacket == aten.mm` hold for objects made apart (a redefined custom operator's).
py::object overload_object(const OperatorHandle& op);

PyObject* name_richcompare(PyObject* a_name, PyObject* b_name, int cmp) {
  if (a_name == nullptr || b_name == nullptr || (cmp != Py_EQ && cmp != Py_NE)) Py_RETURN_NOTIMPLEMENTED;
  return PyObject_RichCompare(a_name, b_name, cmp);
}
PyObject* overload_richcompare(PyObject* a, PyObject* b, int cmp) {
  if (!PyObject_TypeCheck(a, &g_overload_type) || !PyObject_TypeCheck(b, &g_overload_type)) {
    Py_RETURN_NOTIMPLEMENTED;
  }
  return name_richcompare(reinterpret_cast<PyOpOverload*>(a)->name, reinterpret_cast<PyOpOverload*>(b)->name, cmp);
}
Py_hash_t overload_hash(PyObject* self) {
  PyObject* name = reinterpret_cast<PyOpOverload*>(self)->name;
  return name ? PyObject_Hash(name) : _Py_HashPointer(self);
}
PyObject* packet_richcompare(PyObject* a, PyObject* b, int cmp) {
  if (Py_TYPE(a) != &g_packet_type || Py_TYPE(b) != &g_packet_type) Py_RETURN_NOTIMPLEMENTED;
  return name_richcompare(reinterpret_cast<PyOpPacket*>(a)->name, reinterpret_cast<PyOpPacket*>(b)->name, cmp);
}
Py_hash_t packet_hash(PyObject* self) { return PyObject_Hash(reinterpret_cast<PyOpPacket*>(self)->name); }

// `ns::name` -> packet, or None if no overload has a schema.
py::object make_packet(const std::string& ns_and_name) {
  auto names = Dispatcher::singleton().overload_names(ns_and_name);
  std::vector<py::object> overloads;
  std::vector<std::string> kept;
  for (const auto& overload : names) {
    auto op = Dispatcher::singleton().find_schema(overload.empty() ? ns_and_name : ns_and_name + "." + overload);
    if (!op) continue;
    overloads.push_back(overload_object(*op));  // Note [Operator object identity]
    kept.push_back(overload.empty() ? "default" : overload);
  }
  if (overloads.empty()) return py::none();
  PyObject* obj = g_packet_type.tp_alloc(&g_packet_type, 0);
  if (!obj) throw py::error_already_set();
  auto* p = reinterpret_cast<PyOpPacket*>(obj);
  p->vectorcall = packet_vectorcall;
  p->overloads = py::tuple(py::cast(overloads)).release().ptr();
  p->overload_names = py::tuple(py::cast(kept)).release().ptr();
  p->name = PyUnicode_FromString(ns_and_name.c_str());
  return py::reinterpret_steal<py::object>(obj);
}

void init_op_types() {
  g_overload_type.tp_name = "backend_sdk._C.OpOverload";
  g_overload_type.tp_basicsize = sizeof(PyOpOverload);
  g_overload_type.tp_dealloc = overload_dealloc;
  g_overload_type.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_BASETYPE;
  g_overload_type.tp_new = overload_new;
  g_overload_type.tp_vectorcall_offset = offsetof(PyOpOverload, vectorcall);
  g_overload_type.tp_call = PyVectorcall_Call;
  g_overload_type.tp_repr = overload_repr;
  g_overload_type.tp_richcompare = overload_richcompare;
  g_overload_type.tp_hash = overload_hash;
  g_overload_type.tp_getset = g_overload_getset;
  g_overload_type.tp_methods = g_overload_methods;
  g_overload_type.tp_doc = "One overload of an operator (ns::name.overload), callable like a function.";
  if (PyType_Ready(&g_overload_type) < 0) throw py::error_already_set();

  g_packet_type.tp_name = "backend_sdk._C.OpOverloadPacket";
  g_packet_type.tp_basicsize = sizeof(PyOpPacket);
  g_packet_type.tp_dealloc = packet_dealloc;
  g_packet_type.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
  g_packet_type.tp_vectorcall_offset = offsetof(PyOpPacket, vectorcall);
  g_packet_type.tp_call = PyVectorcall_Call;
  g_packet_type.tp_repr = packet_repr;
  g_packet_type.tp_richcompare = packet_richcompare;
  g_packet_type.tp_hash = packet_hash;
  g_packet_type.tp_getattro = packet_getattro;
  g_packet_type.tp_descr_get = packet_descr_get;
  g_packet_type.tp_getset = g_packet_getset;
  if (PyType_Ready(&g_packet_type) < 0) throw py::error_already_set();
}

// ---------------------------------------------------------------------------
// Python kernels
// ---------------------------------------------------------------------------
// A boxed kernel that calls a Python function with the operator's arguments
// (positional parameters positionally, kwarg-only ones by keyword) and
// converts what it returns back to the schema's returns.
// Owns a Python callable; releases it under the GIL whatever thread drops it.
struct PyCallableKernel : OperatorKernel {
  py::object fn;
  explicit PyCallableKernel(py::object f) : fn(std::move(f)) {}
  ~PyCallableKernel() override {
    py::gil_scoped_acquire gil;
    fn = py::object();
  }
};

struct PythonKernel : PyCallableKernel {
  bool with_keyset;
  // Set for custom_op kernels: returns without an alias annotation must not
  // share storage with an input or another return (see check_fresh_outputs).
  std::string alias_check_name;
  PythonKernel(py::object f, bool ks, std::string check = {})
      : PyCallableKernel(std::move(f)), with_keyset(ks), alias_check_name(std::move(check)) {}
  // Keyword names of the kwarg-only parameters, built on the first call.
  // Guarded by the GIL.
  py::object kwnames;
  const FunctionSchema* kwnames_for = nullptr;
};

// An argument as Python sees it: IValues keep ScalarType as an int (as in
// c10), so dtype arguments become backend_sdk dtypes here.
// Layout and MemoryFormat values become the Python objects the provider installed with
// _C._set_enum_argument_provider returns (fn(kind, value): backend_sdk.strided, channels_last...), or
// stay ints without one. Lists of these kinds (ScalarType[], Layout[], MemoryFormat[]) convert element-wise.
PyObject* g_enum_argument_provider = nullptr;  // a strong reference, kept for the process

PyObject* enum_element_to_python(TypeKind kind, int64_t value) {
  if (kind == TypeKind::ScalarType) return dtype_object(static_cast<ScalarType>(value));
  if (!g_enum_argument_provider) return PyLong_FromLongLong(value);
  const char* name = kind == TypeKind::Layout ? "Layout" : "MemoryFormat";
  return PyObject_CallFunction(g_enum_argument_provider, "sL", name, static_cast<long long>(value));
}

bool is_enum_kind(TypeKind k) {
  return k == TypeKind::ScalarType || k == TypeKind::Layout || k == TypeKind::MemoryFormat;
}

PyObject* argument_to_python(const IValue& v, const Type& type) {
  const Type* t = type.kind == TypeKind::Optional ? type.elem.get() : &type;
  if (is_enum_kind(t->kind) && v.is_int()) return enum_element_to_python(t->kind, v.to_int());
  if (t->kind == TypeKind::List && is_enum_kind(t->elem->kind) && (v.is_int_list() || v.is_list())) {
    TypeKind kind = t->elem->kind;
    std::vector<int64_t> values;
    if (v.is_int_list()) {
      values = v.to_int_list();
    } else {
      for (const IValue& e : v.to_list()) {
        if (!e.is_int()) return from_ivalue(v);  // not a list of enum numbers: as it is
        values.push_back(e.to_int());
      }
    }
    PyObject* out = PyList_New(static_cast<Py_ssize_t>(values.size()));
    if (!out) return nullptr;
    for (size_t i = 0; i < values.size(); ++i) {
      PyObject* item = enum_element_to_python(kind, values[i]);
      if (!item) {
        Py_DECREF(out);
        return nullptr;
      }
      PyList_SET_ITEM(out, static_cast<Py_ssize_t>(i), item);
    }
    return out;
  }
  return from_ivalue(v);
}

// Whether an argument's value is its schema default (PyTorch compares the IValues).
bool is_default_value(const IValue& v, const std::optional<IValue>& d) {
  if (!d || v.tag() != d->tag()) return false;
  switch (v.tag()) {
    case IValue::Tag::None:
      return true;
    case IValue::Tag::Int:
      return v.to_int() == d->to_int();
    case IValue::Tag::Double:
      return v.to_double() == d->to_double();
    case IValue::Tag::Bool:
      return v.to_bool() == d->to_bool();
    case IValue::Tag::String:
      return v.to_string() == d->to_string();
    case IValue::Tag::Device:
      return v.to_device() == d->to_device();
    case IValue::Tag::IntList:
      return v.to_int_list() == d->to_int_list();
    case IValue::Tag::DoubleList:
      return v.to_double_list() == d->to_double_list();
    default:
      return false;
  }
}

// Pops the operator's arguments off the stack as (args, kwargs): positional
// parameters positionally, kwarg-only ones by keyword. With `defaults` (the
// bound schema's), arguments holding their default are left out as Note
// [Handler arguments] says. GIL held.
std::pair<py::list, py::dict> pop_python_arguments(const FunctionSchema& schema, Stack* stack,
                                                   const BoundSchema* defaults = nullptr) {
  size_t n = schema.arguments.size();
  SDK_CHECK(stack->size() >= n, "Internal error: ", schema.qualified_name(), " has ", n,
            " arguments but the stack holds ", stack->size(), " values");
  size_t base = stack->size() - n;
  auto at_default = [&](size_t i) { return defaults && is_default_value((*stack)[base + i], defaults->defaults[i]); };
  size_t positional_end = schema.num_positional();
  while (positional_end > 0 && at_default(positional_end - 1)) --positional_end;
  py::list args;
  py::dict kwargs;
  for (size_t i = 0; i < n; ++i) {
    const bool kwarg_only = schema.arguments[i].kwarg_only;
    if (kwarg_only ? at_default(i) : i >= positional_end) continue;
    PyObject* raw = argument_to_python((*stack)[base + i], *schema.arguments[i].type);
    if (!raw) throw py::error_already_set();
    py::object v = py::reinterpret_steal<py::object>(raw);
    if (kwarg_only) {
      kwargs[schema.arguments[i].name.c_str()] = v;
    } else {
      args.append(v);
    }
  }
  stack->resize(base);
  return {std::move(args), std::move(kwargs)};
}

void push_python_returns(const FunctionSchema& schema, py::handle result, Stack* stack) {
  size_t nret = schema.returns.size();
  auto push_one = [&](py::handle obj, const Argument& ret) {
    IValue v;
    if (!to_ivalue(obj.ptr(), *ret.type, &v)) {
      SDK_THROW(Type, "The Python kernel of ", schema.qualified_name(), " returned ", python_type_name(obj.ptr()),
                " where the schema declares ", ret.type->str());
    }
    stack->push_back(std::move(v));
  };
  if (nret == 0) {
    SDK_CHECK_TYPE(result.is_none(), "The Python kernel of ", schema.qualified_name(),
                   " must return None (its schema returns ()), but returned ", python_type_name(result.ptr()));
    return;
  }
  if (nret == 1) {
    push_one(result, schema.returns[0]);
    return;
  }
  SDK_CHECK_TYPE(PyTuple_Check(result.ptr()) || PyList_Check(result.ptr()), "The Python kernel of ",
                 schema.qualified_name(), " must return a tuple of ", nret, " values, but returned ",
                 python_type_name(result.ptr()));
  py::sequence seq = py::reinterpret_borrow<py::sequence>(result);
  SDK_CHECK_TYPE(seq.size() == nret, "The Python kernel of ", schema.qualified_name(), " returned ", seq.size(),
                 " values but its schema declares ", nret);
  for (size_t i = 0; i < nret; ++i) push_one(seq[i], schema.returns[i]);
}

// Note [Custom operator outputs are fresh]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A custom_op kernel returns new tensors: a return whose schema has no alias
// annotation may not be an input, a view of an input, or share storage with
// another return (PyTorch's check_aliasing_constraint). Checked in C++ by
// storage identity so the check costs nanoseconds on the custom_op call path.
void check_fresh_outputs(const PythonKernel& k, const FunctionSchema& schema, const Stack& stack, size_t args_base,
                         size_t nargs) {
  size_t nret = schema.returns.size();
  size_t ret_base = stack.size() - nret;
  std::vector<const StorageImpl*> seen;
  auto add_storages = [&](const IValue& v) {
    if (v.is_tensor()) {
      if (v.to_tensor().defined()) seen.push_back(v.to_tensor().storage().get());
    } else if (v.is_tensor_list()) {
      for (const Tensor& t : v.to_tensor_list()) seen.push_back(t.storage().get());
    }
  };
  for (size_t i = 0; i < nargs; ++i) add_storages(stack[args_base + i]);
  auto fail = [&]() {
    SDK_THROW(Value, k.alias_check_name, ": The output of this custom operator (1) must not also be an input to this "
              "custom operator and (2) may not alias any inputs to this custom operator or other returns. The most "
              "common way to trigger this error is if we have y = custom_op(x) and y and x are the same Tensor. "
              "Please instead return a clone of the offending output tensor(s) (e.g. return x.clone()) or refactor "
              "the custom operator to not return y.");
  };
  auto check = [&](const Tensor& t) {
    if (!t.defined()) return;
    const StorageImpl* s = t.storage().get();
    for (const StorageImpl* p : seen) {
      if (p == s) fail();
    }
    seen.push_back(s);
  };
  for (size_t r = 0; r < nret; ++r) {
    if (schema.returns[r].alias_info) continue;
    const IValue& v = stack[ret_base + r];
    if (v.is_tensor()) check(v.to_tensor());
    else if (v.is_tensor_list()) for (const Tensor& t : v.to_tensor_list()) check(t);
  }
}

// Note [Mutated arguments' versions] (backend_sdk/_library/custom_ops.py): the ADInplaceOrView kernel of a
// mutable custom operator, in C++ so that a mutable op costs one redispatch, not a Python call: it runs
// the kernels below ADInplaceOrView, then bumps the version of every tensor the schema marks written
// (Tensor(a!), Tensor(a!)?, Tensor(a!)[]), once per call, as PyTorch's ADInplaceOrView kernels do.
void version_bump_boxed(OperatorKernel*, const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  const FunctionSchema& schema = op.schema();
  size_t n = schema.arguments.size();
  SDK_CHECK(stack->size() >= n, "Internal error: ", schema.qualified_name(), " has ", n,
            " arguments but the stack holds ", stack->size(), " values");
  size_t base = stack->size() - n;
  std::vector<Tensor> written;  // taken before the call consumes the stack
  for (size_t i = 0; i < n; ++i) {
    if (!schema.arguments[i].is_write()) continue;
    const IValue& v = (*stack)[base + i];
    if (v.is_tensor()) {
      written.push_back(v.to_tensor());
    } else if (v.is_tensor_list()) {
      for (const Tensor& t : v.to_tensor_list()) written.push_back(t);
    } else if (v.is_list()) {  // Tensor(a!)?[]: tensors and Nones
      for (const IValue& e : v.to_list()) {
        if (e.is_tensor()) written.push_back(e.to_tensor());
      }
    }
  }
  op.redispatch_boxed(ks & keys_after(DispatchKey::ADInplaceOrView), stack);
  for (const Tensor& t : written) {
    if (t.defined()) t.impl()->bump_version();
  }
}

void python_kernel_boxed(OperatorKernel* functor, const OperatorHandle& op, DispatchKeySet ks, Stack* stack);

// A custom operator's default Autograd kernel (backend_sdk/_library/autograd.py): the Python kernel runs
// only when gradients are needed (grad mode on and a tensor argument requires grad); otherwise the call
// goes below Autograd from C++, so an operator without gradients pays no Python call for it.
void autograd_gate_boxed(OperatorKernel* functor, const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  if (sdk::autograd::is_grad_enabled() && op.entry().any_requires_grad_boxed(*stack)) {
    python_kernel_boxed(functor, op, ks, stack);
    return;
  }
  op.redispatch_boxed(ks & keys_after(DispatchKey::AutogradCPU), stack);
}

void python_kernel_boxed(OperatorKernel* functor, const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  auto* k = static_cast<PythonKernel*>(functor);
  if (profiler::record_function_active()) profiler::mark_current(profiler::kEventPythonKernel);
  py::gil_scoped_acquire gil;
  // Read once: the reference stays valid if the operator is closed or
  // redefined while the Python function runs (Note [Schema lifetime]).
  const SchemaRecord* rec = op.entry().schema_record();
  op.entry().check_stack(rec, *stack);
  const FunctionSchema& schema = schema_of(op, rec);
  size_t n = schema.arguments.size();
  size_t base = stack->size() - n;
  // One vectorcall: [keyset,] positional..., kwarg-only... with kwnames.
  PyObject* small[12];
  std::vector<PyObject*> large;
  size_t extra = k->with_keyset ? 1 : 0;
  PyObject** argv = small;
  if (n + extra + 1 > 12) {
    large.resize(n + extra + 1);
    argv = large.data();
  }
  argv[0] = nullptr;  // PY_VECTORCALL_ARGUMENTS_OFFSET slot
  size_t nkw = 0;
  size_t filled = 0;
  struct Decref {
    PyObject** a;
    size_t* n;
    ~Decref() {
      for (size_t i = 0; i < *n; ++i) Py_XDECREF(a[i + 1]);
    }
  } decref{argv, &filled};
  if (k->with_keyset) {
    argv[1] = py::cast(PyDispatchKeySet{ks}).release().ptr();
    filled = 1;
  }
  for (size_t i = 0; i < n; ++i) {
    PyObject* v = argument_to_python((*stack)[base + i], *schema.arguments[i].type);
    if (!v) throw py::error_already_set();
    argv[1 + filled++] = v;
    nkw += schema.arguments[i].kwarg_only ? 1 : 0;
  }
  if (nkw && k->kwnames_for != &schema) {
    py::tuple names(nkw);
    size_t j = 0;
    for (const Argument& a : schema.arguments) {
      if (a.kwarg_only) names[j++] = py::str(a.name);
    }
    k->kwnames = std::move(names);
    k->kwnames_for = &schema;
  }
  // Positional parameters precede kwarg-only ones in a schema.
  PyObject* result = PyObject_Vectorcall(k->fn.ptr(), argv + 1, (filled - nkw) | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                         nkw ? k->kwnames.ptr() : nullptr);
  if (!result) throw py::error_already_set();
  py::object owned = py::reinterpret_steal<py::object>(result);
  if (k->alias_check_name.empty()) {
    stack->resize(base);
    push_python_returns(schema, owned, stack);
    return;
  }
  push_python_returns(schema, owned, stack);
  check_fresh_outputs(*k, schema, *stack, base, n);
  size_t nret = schema.returns.size();
  stack->erase(stack->begin() + static_cast<std::ptrdiff_t>(base), stack->end() - static_cast<std::ptrdiff_t>(nret));
}

// A boxed backend fallback written in Python: fn(op, keyset, args, kwargs).
using PythonFallback = PyCallableKernel;

std::unordered_map<std::string, py::object>& overload_cache() {
  static auto* cache = new std::unordered_map<std::string, py::object>();
  return *cache;
}

py::object overload_object(const OperatorHandle& op) {
  // Called with the GIL held; the cache makes fallbacks cheap per call.
  // An entry made for an earlier definition of the operator is replaced
  // (Note [Schema lifetime]).
  auto& cache = overload_cache();
  auto it = cache.find(op.name());
  if (it != cache.end() &&
      reinterpret_cast<PyOpOverload*>(it->second.ptr())->bound->record == op.entry().schema_record()) {
    return it->second;
  }
  py::object o = py::reinterpret_steal<py::object>(make_overload(op));
  cache[op.name()] = o;
  return o;
}

void python_fallback_boxed(OperatorKernel* functor, const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  auto* k = static_cast<PythonFallback*>(functor);
  if (profiler::record_function_active()) {  // Note [Record function]: which fallback ran
    profiler::mark_current(profiler::kEventPythonKernel | profiler::kEventFallback,
                           to_string(ks.highest_priority_key()).c_str());
  }
  py::gil_scoped_acquire gil;
  const FunctionSchema& schema = op.schema();
  auto [args, kwargs] = pop_python_arguments(schema, stack);
  py::object result = k->fn(overload_object(op), py::cast(PyDispatchKeySet{ks}), py::tuple(args), kwargs);
  push_python_returns(schema, result, stack);
}

// The Python Library object: owns its registrations, closes on reset().
// Kernels registered from Python go to the dispatcher directly (not through
// Library::impl) so that each records the file and line of its own impl()
// call, which _dispatch_dump_table shows, as PyTorch's registrations do.
// Definitions likewise record their define() call. Members are destroyed in
// reverse order: kernels, then the C++ Library (namespace claim, fallthroughs),
// then the definitions.
struct PyLibrary {
  std::vector<RegistrationHandle> defs;
  std::unique_ptr<Library> lib;
  std::string ns;
  std::string origin;
  std::vector<RegistrationHandle> kernels;
  void reset() {
    kernels.clear();
    lib.reset();
    defs.clear();
  }
};

std::string caller_location() {
  // "file.py:12" of the innermost Python frame outside backend_sdk/library.py and
  // backend_sdk/_library/ (custom_op's registrations name the user's code).
  try {
    py::object frame = py::module_::import("sys").attr("_getframe")(0);
    while (!frame.is_none()) {
      std::string file = py::str(frame.attr("f_code").attr("co_filename"));
      if (file.find("backend_sdk/library.py") == std::string::npos &&
          file.find("backend_sdk\\library.py") == std::string::npos &&
          file.find("backend_sdk/_library/") == std::string::npos &&
          file.find("backend_sdk\\_library\\") == std::string::npos) {
        return file + ":" + std::string(py::str(frame.attr("f_lineno")));
      }
      frame = frame.attr("f_back");
    }
  } catch (py::error_already_set&) {
  }
  return "<python>";
}

}  // namespace

// Note [Handler arguments]
// What a __torch_dispatch__ handler receives, as PyTorch's parseIValuesToPyArgsKwargs gives it:
// keyword-only arguments that hold their default are left out of kwargs, and so are the trailing
// positional ones (x.sum(0) reaches a handler as sum.dim_IntList(x, [0]), not (x, [0], False) and
// {'dtype': None}); calling func(*args, **kwargs) fills them in again. Only handlers get this:
// Python kernels keep every argument, since kernels written for this SDK may take them all.
std::pair<py::list, py::dict> pop_arguments_for_python(const OperatorHandle& op, Stack* stack) {
  py::object overload = overload_object(op);
  const BoundSchema& bound = *reinterpret_cast<PyOpOverload*>(overload.ptr())->bound;
  return pop_python_arguments(bound.schema, stack, &bound);
}
void push_returns_from_python(const FunctionSchema& schema, py::handle result, Stack* stack) {
  push_python_returns(schema, result, stack);
}
py::object op_overload_object(const OperatorHandle& op) { return overload_object(op); }

void init_ops(py::module_& m) {
  init_op_types();
  m.add_object("OpOverload", py::handle(reinterpret_cast<PyObject*>(&g_overload_type)));
  m.add_object("OpOverloadPacket", py::handle(reinterpret_cast<PyObject*>(&g_packet_type)));

  m.def("_get_op_packet", &make_packet, py::arg("qualified_name"),
        "The OpOverloadPacket for 'ns::name', or None if no such operator is defined.");
  m.def(
      "_get_op_overload",
      [](const std::string& name) -> py::object {
        auto op = Dispatcher::singleton().find_schema(name);
        if (!op) return py::none();
        return py::reinterpret_steal<py::object>(make_overload(*op));
      },
      py::arg("qualified_name"));
  m.def(
      "_bind_overload",
      [](py::object self, const std::string& name) {
        SDK_CHECK_TYPE(PyObject_TypeCheck(self.ptr(), &g_overload_type), "_bind_overload: expected an OpOverload");
        auto* o = reinterpret_cast<PyOpOverload*>(self.ptr());
        SDK_CHECK_VALUE(!o->bound, "_bind_overload: ", name, ": this object is already bound");
        OperatorHandle op = Dispatcher::singleton().find_schema_or_throw(name);
        o->bound = new BoundSchema(op);
        o->name = PyUnicode_FromString(op.name().c_str());
        o->vectorcall = overload_vectorcall;
        // Heap subclasses do not inherit the vectorcall flag in Python 3.11;
        // their layout keeps the base's vectorcall slot, so calls may use it.
        Py_TYPE(self.ptr())->tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL;
      },
      py::arg("self"), py::arg("qualified_name"),
      "Binds an instance of an OpOverload subclass to the operator 'ns::name.overload'.");
  m.def("_registered_operators", [] { return Dispatcher::singleton().registered_operator_names(); },
        "Names of every defined operator overload, sorted.");
  m.def(
      "_dispatch_dump_table",
      [](const std::string& name) {
        return Dispatcher::singleton().find_schema_or_throw(name).entry().dump_computed_table();
      },
      py::arg("qualified_name"), "The computed dispatch table of an operator, one line per runtime key.");
  m.def(
      "_dispatch_dump",
      [](const std::string& name) { return Dispatcher::singleton().find_schema_or_throw(name).entry().dump_state(); },
      py::arg("qualified_name"), "The kernels registered for an operator, by key.");
  m.def(
      "_dispatch_has_kernel_for_key",
      [](const std::string& name, const std::string& key) {
        return Dispatcher::singleton().find_schema_or_throw(name).entry().has_kernel_for(parse_dispatch_key(key));
      },
      py::arg("qualified_name"), py::arg("key"));
  m.def("_dispatch_key_set", [](const Tensor& t) { return PyDispatchKeySet{t.key_set()}; },
        "The dispatch key set a tensor carries.");
  m.def(
      "_dispatch_keys_for_call",
      [](py::args args) {
        DispatchKeySet ks;
        for (auto a : args) {
          if (is_tensor(a.ptr())) ks = ks | unpack_tensor(a.ptr()).key_set();
        }
        LocalDispatchKeySet tls = tls_local_dispatch_key_set();
        return PyDispatchKeySet{(ks | tls.included) - tls.excluded};
      },
      "The key set a call with these tensors computes (tensors | TLS included - TLS excluded).");
  m.def(
      "_redispatch",
      [](const std::string& name, const PyDispatchKeySet& ks, py::args args, py::kwargs kwargs) {
        OperatorHandle op = Dispatcher::singleton().find_schema_or_throw(name);
        BoundSchema b(op);
        Stack stack = bind_call(b, args, kwargs);
        op.redispatch_boxed(ks.ks, &stack);
        return py::reinterpret_steal<py::object>(returns_to_python(b.schema, stack));
      },
      py::arg("qualified_name"), py::arg("keyset"),
      "Calls an operator with an explicit key set, skipping key computation (for kernels that redispatch).");

  // Note [Kernel snapshots]
  // ~~~~~~~~~~~~~~~~~~~~~~~
  // library.get_kernel(op, key) is the kernel in the operator's table slot for `key` at that moment, as
  // PyTorch's: kernels registered later do not change what it calls, so a kernel can wrap the one it
  // replaces. The slot's record is never freed (Note [Kernel lifetime]), so holding it is safe; the
  // snapshot is bound to the definition it was taken from and refuses calls after a redefinition (Note
  // [Schema lifetime]). Whether the Library that registered a Python kernel is still open is checked in
  // Python (library.get_kernel), which raises PyTorch's "has been invalidated".
  struct KernelSnapshot {
    OperatorHandle op;
    const SchemaRecord* record;
    const KernelFunction* kernel;
    std::string key;
  };
  py::class_<KernelSnapshot>(m, "_KernelSnapshot", "The kernel of an operator's table slot (library.get_kernel).")
      .def("call_boxed",
           [](const KernelSnapshot& snap, const PyDispatchKeySet& ks, py::args args, py::kwargs kwargs) {
             SDK_CHECK(snap.op.entry().schema_record() == snap.record, "The kernel of ", snap.op.name(), " for ",
                       snap.key, " has been invalidated: the operator was redefined since get_kernel()");
             BoundSchema b(snap.op);
             Stack stack = bind_call(b, args, kwargs);
             snap.kernel->call_boxed(snap.op, ks.ks, &stack);
             return py::reinterpret_steal<py::object>(returns_to_python(b.schema, stack));
           },
           py::arg("keyset"), "Runs the kernel with this key set, as c10's KernelFunction::callBoxed.");
  m.def(
      "_dispatch_get_kernel",
      [](const std::string& name, const std::string& key) {
        OperatorHandle op = Dispatcher::singleton().find_schema_or_throw(name);
        DispatchKey k = parse_dispatch_key(key);
        const KernelFunction& kernel = op.entry().lookup_masked(runtime_key_set_for(k));
        SDK_CHECK(kernel.is_valid() && !kernel.is_fallthrough(), "no kernel for ", key, " for ", name);
        return KernelSnapshot{op, op.entry().schema_record(), &kernel, key};
      },
      py::arg("qualified_name"), py::arg("key"), "Note [Kernel snapshots].");

  py::class_<PyLibrary>(m, "_Library")
      .def(py::init([](const std::string& kind, const std::string& ns, std::optional<std::string> key) {
             Library::Kind k;
             if (kind == "DEF") k = Library::DEF;
             else if (kind == "FRAGMENT") k = Library::FRAGMENT;
             else if (kind == "IMPL") k = Library::IMPL;
             else throw py::value_error("Library kind must be 'DEF', 'FRAGMENT' or 'IMPL', got '" + kind + "'");
             std::optional<DispatchKey> dk;
             if (key && !key->empty()) dk = parse_dispatch_key(*key);
             SDK_CHECK_VALUE(k == Library::IMPL || !dk, "Library(", ns, ", ", kind,
                             "): a dispatch_key is only allowed for IMPL libraries");
             SDK_CHECK_VALUE(k != Library::IMPL || dk, "Library(", ns, ", IMPL): a dispatch_key is required");
             std::string origin = caller_location();
             auto lib = std::make_unique<Library>(k, ns, dk, origin.c_str(), 0);
             PyLibrary result;
             result.lib = std::move(lib);
             result.ns = ns;
             result.origin = origin;
             return result;
           }),
           py::arg("kind"), py::arg("ns"), py::arg("dispatch_key") = py::none())
      .def(
          "define",
          [](PyLibrary& self, const std::string& schema) {
            SDK_CHECK(self.lib, "Library(", self.ns, ") is closed");
            FunctionSchema s = parse_schema(schema);
            std::string name = s.overload_name.empty() ? s.name : s.name + "." + s.overload_name;
            if (s.ns.empty()) {
              s.ns = self.ns;
            } else {
              SDK_CHECK_VALUE(s.ns == self.ns, "Explicitly provided namespace (", s.ns,
                              ") in schema string does not match namespace of enclosing Library (", self.ns, ")");
            }
            self.defs.push_back(Dispatcher::singleton().register_def(std::move(s), caller_location()));
            return name;
          },
          py::arg("schema"))
      .def(
          "impl",
          [](PyLibrary& self, const std::string& name, const std::string& key, py::object fn, bool with_keyset,
             std::string check_aliasing) {
            SDK_CHECK(self.lib, "Library(", self.ns, ") is closed");
            SDK_CHECK_TYPE(PyCallable_Check(fn.ptr()), "impl(", name, "): the kernel must be callable, got ",
                           python_type_name(fn.ptr()));
            auto functor = std::make_shared<PythonKernel>(fn, with_keyset, std::move(check_aliasing));
            DispatchKey k = parse_dispatch_key(key);
            std::string qualified = name.find("::") == std::string::npos ? self.ns + "::" + name : name;
            SDK_CHECK_VALUE(qualified.compare(0, self.ns.size() + 2, self.ns + "::") == 0,
                            "Explicitly provided namespace in operator name ", qualified,
                            " does not match namespace of enclosing Library (", self.ns, ")");
            KernelFunction kernel = CppFunction::make_from_boxed(&python_kernel_boxed, std::move(functor)).take();
            // Note [Closed namespaces]: the one registration path, with the closed-namespace check.
            self.kernels.push_back(
                detail::register_kernel(qualified, k, std::move(kernel), caller_location(), self.lib.get()));
          },
          py::arg("name"), py::arg("dispatch_key"), py::arg("fn"), py::arg("with_keyset") = false,
          py::arg("check_aliasing") = std::string(),
          "Registers a Python kernel. check_aliasing: a name for the error raised when an output without alias "
          "annotation shares storage with an input or another output (custom_op kernels); empty: no check.")
      .def(
          "impl_autograd_gate",
          [](PyLibrary& self, const std::string& name, py::object fn) {
            SDK_CHECK(self.lib, "Library(", self.ns, ") is closed");
            SDK_CHECK_TYPE(PyCallable_Check(fn.ptr()), "impl_autograd_gate(", name, "): the kernel must be callable");
            std::string qualified = name.find("::") == std::string::npos ? self.ns + "::" + name : name;
            auto functor = std::make_shared<PythonKernel>(fn, /*with_keyset=*/true);
            KernelFunction kernel = CppFunction::make_from_boxed(&autograd_gate_boxed, std::move(functor)).take();
            self.kernels.push_back(Dispatcher::singleton().register_impl(qualified, DispatchKey::Autograd,
                                                                         std::move(kernel), caller_location()));
          },
          py::arg("name"), py::arg("fn"),
          "Registers fn(keyset, *args, **kwargs) at Autograd, called only when gradients are needed (else the "
          "call goes below Autograd in C++).")
      .def(
          "impl_version_bump",
          [](PyLibrary& self, const std::string& name) {
            SDK_CHECK(self.lib, "Library(", self.ns, ") is closed");
            std::string qualified = name.find("::") == std::string::npos ? self.ns + "::" + name : name;
            KernelFunction kernel = CppFunction::make_from_boxed(&version_bump_boxed).take();
            self.kernels.push_back(Dispatcher::singleton().register_impl(
                qualified, DispatchKey::ADInplaceOrView, std::move(kernel), caller_location()));
          },
          py::arg("name"),
          "Registers the C++ ADInplaceOrView kernel that bumps the versions of the arguments the schema marks "
          "written (Note [Mutated arguments' versions]).")
      .def(
          "impl_fallthrough",
          [](PyLibrary& self, const std::string& name, const std::string& key) {
            SDK_CHECK(self.lib, "Library(", self.ns, ") is closed");
            self.lib->impl(name, parse_dispatch_key(key), CppFunction::make_fallthrough());
          },
          py::arg("name"), py::arg("dispatch_key"))
      .def(
          "fallback",
          [](PyLibrary& self, py::object fn) {
            SDK_CHECK(self.lib, "Library(", self.ns, ") is closed");
            SDK_CHECK_TYPE(PyCallable_Check(fn.ptr()), "fallback(): the kernel must be callable");
            auto functor = std::make_shared<PythonFallback>(fn);
            self.lib->fallback(CppFunction::make_from_boxed(&python_fallback_boxed, std::move(functor)));
          },
          py::arg("fn"))
      .def("fallback_fallthrough",
           [](PyLibrary& self) {
             SDK_CHECK(self.lib, "Library(", self.ns, ") is closed");
             self.lib->fallback(CppFunction::make_fallthrough());
           })
      .def("reset", [](PyLibrary& self) { self.reset(); }, "Removes every registration of this library.")
      .def_property_readonly("closed", [](const PyLibrary& self) { return !self.lib; })
      .def_property_readonly("origin", [](const PyLibrary& self) { return self.origin; });

  // ---- fake tensors: see Note [Fake tensors] (backend_sdk/_subclasses/fake_tensor.py) ----
  // A fake tensor and its meta twin are two TensorImpls over one meta storage:
  // the fake one carries the Fake key and reports the fake device.
  auto twin = [](const Tensor& src, Device device, DispatchKeySet keys) {
    auto impl = make_intrusive<TensorImpl>(src.storage(), src.dtype(), device, keys);
    impl->set_sizes_and_strides(src.sizes(), src.strides(), src.storage_offset());
    return Tensor(std::move(impl));
  };
  m.def(
      "_fake_from_meta",
      [twin](const Tensor& meta, const Device& device) {
        SDK_CHECK_VALUE(meta.is_meta(), "_fake_from_meta: expected a meta tensor, got one on ", meta.device().str());
        return twin(meta, device, default_tensor_key_set(device.type) | DispatchKeySet(DispatchKey::Fake));
      },
      py::arg("meta"), py::arg("device"),
      "A fake tensor on `device` sharing the meta tensor's storage and metadata.");
  m.def(
      "_meta_from_fake",
      [twin](const Tensor& fake) {
        SDK_CHECK_VALUE(fake.key_set().has(DispatchKey::Fake), "_meta_from_fake: expected a fake tensor");
        Device meta(DeviceType::Meta);
        return twin(fake, meta, default_tensor_key_set(DeviceType::Meta));
      },
      py::arg("fake"), "The meta tensor sharing a fake tensor's storage and metadata.");
  m.def(
      "_is_fake",
      [](py::handle obj) { return is_tensor(obj.ptr()) && unpack_tensor(obj.ptr()).key_set().has(DispatchKey::Fake); },
      py::arg("obj"));
  m.def(
      "_sync_metadata",
      [](const Tensor& dst, const Tensor& src) {
        if (dst.storage().get() != src.storage().get()) dst.impl()->set_storage(src.storage());
        dst.impl()->set_sizes_and_strides(src.sizes(), src.strides(), src.storage_offset());
      },
      py::arg("dst"), py::arg("src"),
      "Copies sizes, strides, offset and storage from src to dst (after an in-place metadata change of a twin).");
  m.def("_storage_id", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.storage().get()); },
        py::arg("tensor"), "An id of the tensor's storage, equal for tensors that share memory (also on meta).");
  m.def("_version", [](const Tensor& t) { return t.impl()->version(); }, py::arg("tensor"),
        "The version counter of the tensor's storage (bumped by every in-place write).");

  m.def("_take_static_registration_errors", &take_static_registration_errors);
  m.def(
      "_kernels_for_undefined_operators",
      [] {
        py::list out;
        for (const auto& k : detail::kernels_for_undefined_operators()) out.append(py::make_tuple(k.op, k.key, k.where));
        return out;
      },
      "(operator, dispatch key, where) of each live kernel whose operator was never defined (Note [Closed "
      "namespaces]).");
  m.def(
      "_kernel_declines",
      [] {
        py::list out;
        for (const auto& d : decline_counts()) out.append(py::make_tuple(d.op, d.reason, d.count));
        return out;
      },
      "(operator, reason, count) of the calls native kernels declined (Note [Declining kernels]).");
  m.def("_reset_kernel_declines", &reset_decline_counts);
  m.def("_set_kernel_checks", &detail::set_kernel_checks, py::arg("enabled"),
        "Turns the kernel checker on or off (Note [Kernel checker]).");
  m.def("_kernel_checks_enabled", &detail::kernel_checks_enabled);
  m.def("_kernel_checks_run", &detail::kernel_checks_run, "Calls the kernel checker has checked.");
  // Note [Extension library groups] (csrc/backend_sdk/dispatch/detail/LibraryGroups.h).
  m.def("_begin_static_library_group", &detail::begin_static_library_group,
        "Starts recording the SDK_LIBRARY blocks this thread runs (around a dlopen).");
  m.def("_end_static_library_group", &detail::end_static_library_group,
        "Stops recording; returns the id of the group of blocks recorded.");
  m.def("_reset_static_library_group", &detail::reset_static_library_group, py::arg("id"),
        "Undoes every registration of the group's blocks (their library stays loaded); returns their count.");
  m.def(
      "_set_tags_provider",
      [](py::object fn) {
        SDK_CHECK_TYPE(PyCallable_Check(fn.ptr()), "_set_tags_provider(): the provider must be callable");
        PyObject* old = g_tags_provider;
        g_tags_provider = fn.release().ptr();
        Py_XDECREF(old);
      },
      py::arg("fn"), "Installs fn(qualified_name) -> list of tags, which OpOverload.tags returns.");
  m.def(
      "_set_enum_argument_provider",
      [](py::object fn) {
        SDK_CHECK_TYPE(PyCallable_Check(fn.ptr()), "_set_enum_argument_provider(): the provider must be callable");
        PyObject* old = g_enum_argument_provider;
        g_enum_argument_provider = fn.release().ptr();
        Py_XDECREF(old);
      },
      py::arg("fn"),
      "Installs fn(kind, value) -> object ('Layout' / 'MemoryFormat' numbers to backend_sdk objects) for the "
      "arguments Python kernels receive.");
  m.def(
      "_set_defined_in_python_provider",
      [](py::object fn) {
        SDK_CHECK_TYPE(PyCallable_Check(fn.ptr()), "_set_defined_in_python_provider(): the provider must be callable");
        PyObject* old = g_defined_in_python_provider;
        g_defined_in_python_provider = fn.release().ptr();
        Py_XDECREF(old);
      },
      py::arg("fn"), "Installs fn(qualified_name) -> bool, which OpOverload._defined_in_python returns.");
  m.def(
      "_bump_version",
      [](const Tensor& t) { t.impl()->bump_version(); }, py::arg("tensor"),
      "Bumps the version counter of the tensor's storage once (a write the SDK did not see, e.g. through numpy).");

  m.def(
      "_reset_version", [](const Tensor& t) { t.storage()->reset_version(); }, py::arg("tensor"),
      "Sets the version counter of a tensor the caller has just allocated and filled back to 0 (factories).");
  // Note [Inference tensors] (csrc/backend_sdk/tensor/TensorImpl.h).
  m.def("_is_inference", [](const Tensor& t) { return t.impl()->is_inference(); }, py::arg("tensor"),
        "True for an inference tensor (allocated in inference mode, or a view of one).");
  m.def("_is_inference_mode_enabled", &TensorImpl::inference_mode_enabled,
        "True while inference mode is on on this thread.");
  m.def(
      "_set_inference_mode_enabled",
      [](bool enabled) {
        bool prev = TensorImpl::inference_mode_enabled();
        TensorImpl::set_inference_mode_enabled(enabled);
        return prev;
      },
      py::arg("enabled"), "Sets this thread's inference mode; returns the previous one.");

  // Autograd (Note [Autograd fallback fast path], csrc/backend_sdk/ops/detail/Autograd.h).
  m.def(
      "_set_autograd_hook",
      [](py::object fn) {
        SDK_CHECK_TYPE(PyCallable_Check(fn.ptr()), "_set_autograd_hook(): the hook must be callable");
        autograd::set_recording_hook(
            KernelFunction::make_from_boxed(&python_fallback_boxed, std::make_shared<PythonFallback>(fn)));
      },
      py::arg("fn"), "Installs fn(op, keyset, args, kwargs), called for operators whose tensors require grad.");
  m.def("_set_requires_grad_flag", [](const Tensor& t, bool v) { autograd::set_requires_grad(t, v); },
        py::arg("tensor"), py::arg("value"));
  m.def("_requires_grad_flag", [](const Tensor& t) { return autograd::requires_grad(t); }, py::arg("tensor"));
  m.def(
      "_view_creation_meta",
      [](const Tensor& t) {
        const autograd::AutogradMeta* meta = autograd::maybe_autograd_meta(t);
        return meta != nullptr && meta->view_base.defined() ? static_cast<int>(meta->creation_meta) : 0;
      },
      py::arg("tensor"), "Note [View creation meta]: 0 default (or not a tracked view), 1 no_grad, 2 inference mode, 3 an "
      "output of unbind/split (MultiOutputNode).");
  m.def(
      "_detach",
      [](const Tensor& t) {
        // aten::detach (Note [View operators]): an alias with no autograd state, not a view for autograd
        // (PyTorch's detach() is not _is_view()); a __torch_dispatch__ handler sees aten::detach.
        static const auto op = Dispatcher::singleton().find_schema_or_throw("aten::detach").typed<
            Tensor(const Tensor&)>();
        Tensor out;
        {
          ExcludeDispatchKeyGuard no_grad(DispatchKey::AutogradFunctionality);
          out = op.call(t);
        }
        if (autograd::AutogradMeta* meta = autograd::maybe_autograd_meta(out)) {
          meta->view_base = Tensor();
          meta->creation_meta = autograd::CreationMeta::Default;
        }
        return out;
      },
      py::arg("tensor"), "detach(): an alias of tensor's memory with no autograd history.");
  m.def("_view_base", [](const Tensor& t) { return autograd::view_base(t); }, py::arg("tensor"),
        "The base a view made in grad mode was taken from (Note [Autograd view bases]), or None.");
  m.def("_is_grad_enabled", &autograd::is_grad_enabled, "False inside no_grad (AutogradFunctionality excluded).");
  m.def("_set_grad_enabled", &autograd::set_grad_enabled, py::arg("enabled"));
}

}  // namespace sdk::python
