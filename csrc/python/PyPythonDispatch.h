// The Python dispatch key's C++ part: wrapper subclasses (Tensor._make_wrapper_subclass)
// and the preservation of their Python class across wrappers.
//
// Note [Python key tensors]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// A tensor subclass that overrides __torch_dispatch__ is a TensorImpl that carries
// the Python dispatch key besides its device's default keys (Dense, ADInplaceOrView,
// Autograd, Autocast of the backend it reports). Python sits below Autograd (c10's
// order, Note [DispatchKey layout]), so autograd records the call first and the
// subclass sees the aten operators autograd decomposed into; every call that
// reaches the Python slot runs the boxed fallback of
// backend_sdk/_python_dispatch_impl.py (Note [Python dispatch]). A wrapper
// subclass made by _make_wrapper_subclass holds no data: its storage is a meta
// storage (no memory) of the extent its sizes and strides need, so reading its
// data without dispatch is never possible and nothing below Python is reached.
//
// The Python object is what carries the subclass's state (its class and the
// attributes in its __dict__: inner tensors, scales...), but C++ can hold the
// TensorImpl after the Python object died (an operator's result unwrapped into
// an IValue, a tensor saved for backward). PyTorch keeps the object alive
// ("PyObject preservation"); here the existing mechanism of Note [Autograd state
// across wrappers] (ops/detail/Autograd.h) is reused: every Python key tensor has
// an AutogradMeta, and when its wrapper is finalized while the TensorImpl lives
// on, the parked __dict__ copy also records the wrapper's class under
// kPythonClassKey. The next wrapper of the TensorImpl is made of that class and
// gets the attributes back. Limitation: it is a new object (`is` identity is
// not preserved across the gap) and attributes kept in __slots__ are not parked.
#pragma once

#include <Python.h>
#include <pybind11/pybind11.h>

#include <utility>

#include <backend_sdk/dispatch/Dispatcher.h>
#include <backend_sdk/tensor/Tensor.h>

namespace sdk::python {

// The __dict__ entry that holds the parked class (Note [Python key tensors]).
inline constexpr const char* kPythonClassKey = "__backend_sdk_python_class__";

// True if t carries the Python dispatch key.
bool has_python_key(const Tensor& t);

// The class parked for t's next wrapper, removed from the parked state: a new
// reference, or nullptr when none was parked.
PyTypeObject* take_parked_python_class(const Tensor& t);

// Boxing for Python fallbacks, defined in PyOps.cpp (GIL held): the operator's arguments popped as
// (args, kwargs) as handlers get them (Note [Handler arguments]), a Python result pushed as the
// schema's returns, and the OpOverload object of `op`.
std::pair<pybind11::list, pybind11::dict> pop_arguments_for_python(const OperatorHandle& op, Stack* stack);
void push_returns_from_python(const FunctionSchema& schema, pybind11::handle result, Stack* stack);
pybind11::object op_overload_object(const OperatorHandle& op);

}  // namespace sdk::python
