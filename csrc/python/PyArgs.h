// Converting Python arguments to IValues and IValues back to Python, by schema type.
#pragma once

#include <Python.h>

#include <string>

#include <backend_sdk/dispatch/FunctionSchema.h>
#include <backend_sdk/dispatch/IValue.h>
#include <backend_sdk/dispatch/detail/SchemaDefaults.h>

namespace sdk::python {

// Converts obj to an IValue of schema type `type`. Returns false (no Python
// error set) if obj is not of that type, so overload resolution can go on.
// Throws sdk::Error for values of the right type that are invalid
// (a bad device string).
// With numbers_as_tensors, a Python number passed for a Tensor becomes a
// wrapped-number tensor (what PyTorch's argument parser does for `x.add_(1)`).
bool to_ivalue(PyObject* obj, const Type& type, IValue* out, bool numbers_as_tensors = false);
// New reference: the Python value of v (tensors wrapped, lists as lists).
PyObject* from_ivalue(const IValue& v);
// default_ivalue (a schema default's IValue): dispatch/detail/SchemaDefaults.h.
using ::sdk::detail::default_ivalue;
// "Tensor", "int", "list of [int, str]" ... for error messages.
std::string python_type_name(PyObject* obj);

}  // namespace sdk::python
