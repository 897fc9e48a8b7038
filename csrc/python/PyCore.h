// Python faces of the core types: dtype, device, Size, DispatchKeySet.
#pragma once

#include <Python.h>
#include <pybind11/pybind11.h>

#include <backend_sdk/core/DeviceType.h>
#include <backend_sdk/core/DimVector.h>
#include <backend_sdk/core/DispatchKeySet.h>
#include <backend_sdk/core/ScalarType.h>

namespace sdk::python {

// New references to the canonical Python objects.
PyObject* dtype_object(ScalarType t);
PyObject* device_object(Device d);
PyObject* make_size(IntArrayRef sizes);  // backend_sdk.Size

// Conversions used by argument parsing; return false if obj is not of the kind.
bool parse_dtype(PyObject* obj, ScalarType* out);
// Accepts a device object, a string ("accel:0") or an int (an index of the
// first renamed PrivateUse backend); raises ValueError for bad strings.
bool parse_device(PyObject* obj, Device* out);

// pybind11 wrapper of a DispatchKeySet.
struct PyDispatchKeySet {
  DispatchKeySet ks;
};

void init_core(pybind11::module_& m);

}  // namespace sdk::python
