"""PyTorch's exception types (issue 16): what PyTorch raises as RuntimeError is a RuntimeError here too."""
from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import backend_sdk
from backend_sdk import _C
from backend_sdk.library import Library

_ids = itertools.count()


def test_argument_errors_are_runtime_and_value_errors() -> None:
    assert issubclass(backend_sdk.ValueRuntimeError, RuntimeError)
    assert issubclass(backend_sdk.ValueRuntimeError, ValueError)
    assert issubclass(backend_sdk.TypeRuntimeError, RuntimeError)
    assert issubclass(backend_sdk.TypeRuntimeError, TypeError)
    with pytest.raises(RuntimeError, match="must match the size of tensor b"):
        backend_sdk.ones(2) + backend_sdk.ones(3)
    with pytest.raises(ValueError):  # DESIGN.md's type still catches it
        backend_sdk.ones(2) + backend_sdk.ones(3)
    with pytest.raises(RuntimeError):  # a bad view (PyTorch: RuntimeError "shape '[4]' is invalid ...")
        backend_sdk.ones(2, 3).view(4)
    with pytest.raises(RuntimeError):  # expand to a smaller size (a Python-side check)
        backend_sdk.ones(3).expand(2)
    with pytest.raises(RuntimeError, match="duplicate dims"):
        backend_sdk.ones(2, 2).permute(0, 0)


def test_dtype_errors_of_kernels_are_runtime_and_type_errors() -> None:
    x = backend_sdk.ones(2, dtype=backend_sdk.int64)
    with pytest.raises(RuntimeError, match="can't be cast"):
        x.add_(backend_sdk.ones(2))
    with pytest.raises(TypeError, match="can't be cast"):
        x.add_(backend_sdk.ones(2))


def test_registration_errors_are_runtime_errors() -> None:
    ns = f"exc_ns_{next(_ids)}"
    first = Library(ns, "DEF")
    try:
        with pytest.raises(RuntimeError):
            Library(ns, "DEF")  # one DEF library per namespace, as PyTorch
        first.define("f(Tensor x) -> Tensor")
        with pytest.raises(RuntimeError, match="multiple times"):
            first.define("f(Tensor x) -> Tensor")
        with pytest.raises(NotImplementedError) as info:  # missing kernel; NotImplementedError is a RuntimeError
            getattr(backend_sdk.ops, ns).f(backend_sdk.ones(1))
        assert isinstance(info.value, RuntimeError)
    finally:
        first._destroy()


def test_argument_parsing_stays_a_plain_type_error() -> None:
    with pytest.raises(TypeError) as info:
        backend_sdk.ops.aten.view.default(backend_sdk.ones(2), "a")
    assert not isinstance(info.value, RuntimeError)  # PyTorch's argument parser raises TypeError only


def test_non_empty_out_of_the_wrong_shape_is_resized_with_pytorchs_warning() -> None:
    x = backend_sdk.from_numpy(np.array([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]], dtype=np.float32))
    out = backend_sdk.empty(2, 2)
    with pytest.warns(UserWarning, match=r"An output with one or more elements was resized since it had shape "
                                         r"\[2, 2\], which does not match the required output shape \[2, 3\]"):
        r = backend_sdk.abs(x, out=out)
    assert r is out and tuple(out.shape) == (2, 3)
    np.testing.assert_array_equal(out.numpy(), np.abs(x.numpy()))
    # matmul's out= (another code path) too
    m = backend_sdk.empty(5)
    with pytest.warns(UserWarning, match="was resized"):
        backend_sdk.ops.aten.mm.out(x, x.t(), out=m)
    np.testing.assert_allclose(m.numpy(), x.numpy() @ x.numpy().T)


def test_empty_out_is_resized_silently_and_in_place_self_is_still_checked() -> None:
    x = backend_sdk.ones(2, 3)
    out = backend_sdk.empty(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        backend_sdk.abs(x, out=out)
    assert tuple(out.shape) == (2, 3)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        backend_sdk.ones(3).add_(backend_sdk.ones(2, 3))


def test_custom_op_aliasing_error_is_a_runtime_error() -> None:
    ns = f"exc_ns_{next(_ids)}"

    @backend_sdk.library.custom_op(f"{ns}::ident", mutates_args=())
    def ident(x: backend_sdk.Tensor) -> backend_sdk.Tensor:
        return x

    with pytest.raises(RuntimeError, match="may not alias any inputs"):
        ident(backend_sdk.ones(2))
    ident._destroy()
