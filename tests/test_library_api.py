"""Module-level torch.library-style functions and the Python call surface of operators."""
from __future__ import annotations

import itertools

import pytest

import backend_sdk
from backend_sdk import _C, library

_ids = itertools.count()


def test_module_level_define_and_impl_decorator():
    ns = f"modlevel_{next(_ids)}"
    library.define(f"{ns}::neg_or_same", "(Tensor x, bool neg=False) -> Tensor")

    @library.impl(f"{ns}::neg_or_same", "cpu")
    def kernel(x, neg):
        return x * -1 if neg else x

    x = backend_sdk.tensor([1.0, -2.0])
    op = getattr(backend_sdk.ops, ns).neg_or_same
    assert op(x) is x
    assert op(x, neg=True).tolist() == [-1.0, 2.0]
    assert str(op.default._schema) == f"{ns}::neg_or_same(Tensor x, bool neg=False) -> Tensor"


def test_impl_for_several_device_types_and_meta():
    ns = f"modlevel_{next(_ids)}"
    library.define(f"{ns}::ident", "(Tensor x) -> Tensor")
    library.impl(f"{ns}::ident", ("cpu", "Meta"), lambda x: x)
    m = backend_sdk.empty(3, device="meta")
    assert getattr(backend_sdk.ops, ns).ident(m) is m
    assert _C._dispatch_has_kernel_for_key(f"{ns}::ident", "Meta")


def test_bad_qualified_names():
    with pytest.raises(ValueError, match="expected a qualified name"):
        library.define("no_namespace", "(Tensor x) -> Tensor")
    with pytest.raises(ValueError, match="Unsupported kind"):
        library.Library("x", "WRONG")
    with pytest.raises(ValueError, match="namespace must be an identifier"):
        library.Library("not valid", "DEF")


def test_operator_namespaces_and_packets():
    assert str(backend_sdk.ops.aten.add.Tensor._schema).startswith("aten::add.Tensor(")
    assert "aten::add.Tensor" in backend_sdk.ops.aten.add.__doc__
    with pytest.raises(AttributeError, match="has no overload name 'Bogus'"):
        backend_sdk.ops.aten.add.Bogus
    with pytest.raises(AttributeError, match="not a registered operator"):
        backend_sdk.ops.aten.definitely_not_an_op


def test_operator_methods_and_functions_are_installed():
    x = backend_sdk.tensor([1.0, 2.0])
    assert x.add(1).tolist() == [2.0, 3.0]
    assert x.mul(x).tolist() == [1.0, 4.0]
    assert backend_sdk.mul(x, 3).tolist() == [3.0, 6.0]
    assert x.view(2, 1).shape == (2, 1)  # varargs int list


def test_operator_call_bad_inputs():
    x = backend_sdk.tensor([1.0, 2.0])
    with pytest.raises(TypeError, match=r"aten::add\(\) received an invalid combination of arguments"):
        backend_sdk.add(x, "a")
    with pytest.raises(TypeError, match=r"argument 'size' \(position 2\) must be SymInt\[\], not str"):
        backend_sdk.ops.aten.view.default(x, "a")
    with pytest.raises(TypeError):
        backend_sdk.empty(2, dtype="float32")
    with pytest.raises(ValueError, match="Expected one of cpu, meta"):
        backend_sdk.empty(2, device="gpu")
