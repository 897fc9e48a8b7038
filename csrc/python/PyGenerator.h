// backend_sdk.Generator: the Python face of sdk::Generator (tensor/Generator.h).
#pragma once

#include <Python.h>
#include <pybind11/pybind11.h>

#include <backend_sdk/tensor/Generator.h>

namespace sdk::python {

// True (and *out set) if obj is a backend_sdk.Generator.
bool unpack_generator(PyObject* obj, Generator* out);
// New reference: a Python Generator object for g.
PyObject* wrap_generator(const Generator& g);

void init_generator(pybind11::module_& m);

}  // namespace sdk::python
