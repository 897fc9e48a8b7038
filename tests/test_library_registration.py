"""Registration semantics PyTorch users rely on (issue 16): redefinition, overrides, scoped libraries, fake
impl lifetime, impl forms, get_kernel, absent backends, source locations, infer_schema coverage, opcheck's
arguments, backend_sdk.testing."""
from __future__ import annotations

import subprocess
import sys
import typing
from typing import Optional, Sequence

import numpy as np
import pytest

import backend_sdk
from backend_sdk import Tensor, _C, library
from backend_sdk.library import Library, _scoped_library, custom_op, infer_schema
from backend_sdk.types import Number


def arr(*shape: int) -> Tensor:
    return backend_sdk.from_numpy(np.arange(np.prod(shape), dtype=np.float32).reshape(shape) + 1)


def test_custom_op_redefinition_with_another_schema(ns: str) -> None:
    @custom_op(f"{ns}::f", mutates_args=())
    def f(x: Tensor) -> Tensor:
        return x + 1

    old_handle = getattr(backend_sdk.ops, ns).f.default

    @custom_op(f"{ns}::f", mutates_args=())
    def f2(x: Tensor, k: int) -> Tensor:
        return x * k

    np.testing.assert_array_equal(f2(arr(2), 3).numpy(), [3.0, 6.0])
    with pytest.raises(RuntimeError, match=f"{ns}::f"):  # the old handle keeps its schema: a clear error
        old_handle(arr(2))
    with pytest.raises(RuntimeError):
        f(arr(2))
    f2._destroy()
    with pytest.raises(AttributeError):
        getattr(backend_sdk.ops, ns).f


def test_impl_override_refused_only_with_allow_override_false(ns: str) -> None:
    # PyTorch 2.13: Library.impl(..., allow_override=True) is the default; False refuses a second kernel.
    lib = Library(ns, "FRAGMENT")
    lib.define("g(Tensor x) -> Tensor")
    lib.impl("g", lambda x: x + 1, "CPU")
    other = Library(ns, "FRAGMENT")
    with pytest.raises(RuntimeError, match="already a kernel registered from python overriding g's behavior for CPU"):
        other.impl("g", lambda x: x + 2, "CPU", allow_override=False)
    with pytest.warns(UserWarning):
        other.impl("g", lambda x: x + 2, "CPU")
    np.testing.assert_array_equal(getattr(backend_sdk.ops, ns).g(arr(1)).numpy(), [3.0])
    other._destroy()
    third = Library(ns, "FRAGMENT")
    with pytest.raises(RuntimeError):  # lib's kernel is still there
        third.impl("g", lambda x: x, "CPU", allow_override=False)
    lib._destroy()
    third._destroy()


def test_scoped_library_and_fake_impl_lifetime(ns: str) -> None:
    from backend_sdk._subclasses.fake_tensor import FakeTensorMode

    for _ in range(2):  # the second round re-registers: nothing leaked from the first
        with _scoped_library(ns, "FRAGMENT") as lib:
            lib.define("h(Tensor x) -> Tensor")
            lib.impl("h", lambda x: x * 2, "CPU")
            library.register_fake(f"{ns}::h", lambda x: backend_sdk.empty_like(x), lib=lib)
            with pytest.raises(RuntimeError, match="already has a fake impl registered at"):
                library.register_fake(f"{ns}::h", lambda x: x, lib=lib, allow_override=False)
            library.register_fake(f"{ns}::h", lambda x: backend_sdk.empty_like(x), lib=lib)  # default: override
            mode = FakeTensorMode()
            with mode:
                out = getattr(backend_sdk.ops, ns).h(mode.from_tensor(arr(2, 3)))
            assert tuple(out.shape) == (2, 3)
        assert lib._closed
        with pytest.raises(AttributeError):
            getattr(backend_sdk.ops, ns).h


def test_fake_impl_through_library_register_fake(ns: str) -> None:
    lib = Library(ns, "FRAGMENT")
    lib.define("k(Tensor x) -> Tensor")
    lib._register_fake("k", lambda x: backend_sdk.empty_like(x))
    lib._destroy()
    lib2 = Library(ns, "FRAGMENT")
    lib2.define("k(Tensor x) -> Tensor")
    library.register_fake(f"{ns}::k", lambda x: backend_sdk.empty_like(x), lib=lib2)  # no "already has"
    lib2._destroy()


def test_delattr_ops_namespace(ns: str) -> None:
    with _scoped_library(ns, "FRAGMENT") as lib:
        lib.define("m(Tensor x) -> Tensor")
        namespace = getattr(backend_sdk.ops, ns)
        assert hasattr(backend_sdk.ops, ns)
        delattr(backend_sdk.ops, ns)
        assert getattr(backend_sdk.ops, ns) is not namespace  # a fresh namespace object
        assert str(getattr(backend_sdk.ops, ns).m.default._schema).startswith(f"{ns}::m(")


def test_impl_forms(ns: str) -> None:
    lib = Library(ns, "FRAGMENT")
    for name in ("a", "b", "c", "d", "e"):
        lib.define(f"{name}(Tensor x) -> Tensor")
    library.impl(f"{ns}::a", "default", lambda x: x + 1, lib=lib)
    library.impl(f"{ns}::b", ("cpu", "Meta"), lambda x: x + 2, lib=lib)
    library.impl(f"{ns}::c", "CompositeImplicitAutograd", lambda x: x + 3, lib=lib)

    @library.impl(lib, "d", "CPU")  # the older Library-first decorator form
    def _(x: Tensor) -> Tensor:
        return x + 4

    @library.impl(f"{ns}::e", types="cpu", lib=lib)
    def _(x: Tensor) -> Tensor:
        return x + 5

    ops = getattr(backend_sdk.ops, ns)
    for name, k in zip("abcde", range(1, 6)):
        np.testing.assert_array_equal(getattr(ops, name)(arr(1)).numpy(), [1.0 + k])
    assert "CompositeExplicitAutograd" in _C._dispatch_dump(f"{ns}::a")
    assert _C._dispatch_has_kernel_for_key(f"{ns}::b", "Meta")
    with pytest.raises(TypeError, match="types must be"):
        library.impl(f"{ns}::a", 3, lambda x: x, lib=lib)
    lib._destroy()


def test_get_kernel(ns: str) -> None:
    with _scoped_library(ns, "FRAGMENT") as lib:
        lib.define("n(Tensor x) -> Tensor")
        lib.impl("n", lambda x: x * 10, "CPU")
        kernel = library.get_kernel(getattr(backend_sdk.ops, ns).n.default, "CPU")
        np.testing.assert_array_equal(kernel.call_boxed(_C.DispatchKeySet(["CPU"]), arr(2)).numpy(), [10.0, 20.0])
        with pytest.raises(RuntimeError, match="no kernel for Meta for "):
            library.get_kernel(f"{ns}::n", "Meta")
        with pytest.raises(ValueError, match="Unknown dispatch key 'Bogus'"):
            library.get_kernel(f"{ns}::n", "Bogus")


def test_kernels_for_absent_backends_are_recorded_not_dispatched(ns: str) -> None:
    with _scoped_library(ns, "FRAGMENT") as lib:
        lib.define("p(Tensor x) -> Tensor")
        lib.impl("p", lambda x: x * 3, "CPU")
        for key in ("CUDA", "XPU", "MPS", "AutogradCUDA"):
            lib.impl("p", lambda x: x, key)
        library.register_kernel(f"{ns}::p", "cuda", lambda x: x, lib=lib)
        table = _C._dispatch_dump_table(f"{ns}::p")
        assert "CUDA" not in table
        assert set(lib._absent_kernels) == {("p", "CUDA"), ("p", "XPU"), ("p", "MPS"), ("p", "AutogradCUDA")}
        np.testing.assert_array_equal(getattr(backend_sdk.ops, ns).p(arr(1)).numpy(), [3.0])
        with pytest.raises(ValueError, match="Expected one of cpu, .* device type at start of device string: gpu9"):
            library.register_kernel(f"{ns}::p", "gpu9", lambda x: x, lib=lib)

    @custom_op(f"{ns}::q", mutates_args=(), device_types=("cpu", "cuda"))
    def q(x: Tensor) -> Tensor:
        return x.clone()

    @q.register_kernel("xpu")
    def _(x: Tensor) -> Tensor:
        return x

    assert set(q._absent_kernels) == {"cuda", "xpu"}
    np.testing.assert_array_equal(q(arr(2)).numpy(), [1.0, 2.0])
    with pytest.raises(ValueError, match="Expected one of cpu, .* device type at start of device string"):
        q.register_kernel("tpu9", lambda x: x)
    q._destroy()


def test_source_locations_in_dispatch_dump_table(ns: str) -> None:
    import inspect

    with _scoped_library(ns, "FRAGMENT") as lib:
        lib.define("r(Tensor x) -> Tensor")
        line = inspect.currentframe().f_lineno + 1
        lib.impl("r", lambda x: x, "CPU")
        table = _C._dispatch_dump_table(f"{ns}::r")
        assert f"CPU: registered at {__file__}:{line}" in table
        assert f"{__file__}:{line - 2}" in _C._dispatch_dump(f"{ns}::r")  # the define() call

    @custom_op(f"{ns}::s", mutates_args=())
    def s(x: Tensor) -> Tensor:
        return x.clone()

    assert __file__ in _C._dispatch_dump_table(f"{ns}::s")
    s._destroy()


def test_infer_schema_coverage() -> None:
    def f1(x: Tensor, y: Optional[Tensor]) -> None: ...
    assert infer_schema(f1, mutates_args={"y"}) == "(Tensor x, Tensor(a1!)? y) -> ()"

    def f2(x: Tensor, dtype: backend_sdk.dtype = backend_sdk.float32) -> Tensor: ...
    assert infer_schema(f2, mutates_args=()) == "(Tensor x, ScalarType dtype=float32) -> Tensor"

    def f3(x: Tensor) -> typing.Tuple[Tensor, ...]: ...
    with pytest.raises(ValueError, match="Return has unsupported type"):  # as PyTorch 2.13: use List[Tensor]
        infer_schema(f3, mutates_args=())

    def f4(x: Tensor) -> tuple[Tensor, Tensor]: ...
    assert infer_schema(f4, mutates_args=()) == "(Tensor x) -> (Tensor, Tensor)"

    def f5(x: Tensor, w: list[Number], s: Number, t: Optional[Number] = None) -> Number: ...
    assert infer_schema(f5, mutates_args=()) == "(Tensor x, Scalar[] w, Scalar s, Scalar? t=None) -> Scalar"

    def f6(xs: Sequence[Tensor]) -> list[Tensor]: ...
    assert infer_schema(f6, mutates_args=(), op_name="ns::f6") == "ns::f6(Tensor[] xs) -> Tensor[]"

    def f7(x: Tensor, d: backend_sdk.device = backend_sdk.device("cpu")) -> Tensor: ...
    assert infer_schema(f7, mutates_args=()) == '(Tensor x, Device d="cpu") -> Tensor'

    def bad(x: Tensor, y: set) -> Tensor: ...
    with pytest.raises(ValueError, match="Parameter y has unsupported type"):
        infer_schema(bad, mutates_args=())


def test_custom_op_with_dtype_default_and_optional_mutable(ns: str) -> None:
    @custom_op(f"{ns}::cast", mutates_args=())
    def cast(x: Tensor, dtype: backend_sdk.dtype = backend_sdk.float64) -> Tensor:
        return x.to(dtype)

    assert cast(arr(2)).dtype == backend_sdk.float64

    @custom_op(f"{ns}::maybe_acc", mutates_args={"acc"})
    def maybe_acc(x: Tensor, acc: Optional[Tensor]) -> None:
        if acc is not None:
            acc.add_(x)

    acc = backend_sdk.zeros(2)
    maybe_acc(arr(2), acc)
    maybe_acc(arr(2), None)
    np.testing.assert_array_equal(acc.numpy(), [1.0, 2.0])
    cast._destroy()
    maybe_acc._destroy()


def test_opcheck_arguments_and_result_dict(ns: str) -> None:
    @custom_op(f"{ns}::twice", mutates_args=())
    def twice(x: Tensor) -> Tensor:
        return x * 2

    @twice.register_fake
    def _(x: Tensor) -> Tensor:
        return backend_sdk.empty_like(x)

    result = library.opcheck(twice, [arr(3)])
    assert result == {"test_schema": "SUCCESS", "test_autograd_registration": "SUCCESS",
                      "test_faketensor": "SUCCESS", "test_aot_dispatch_dynamic": "SUCCESS"}
    assert backend_sdk.testing.opcheck(twice, (arr(3),), test_utils=["test_aot_dispatch_static", "test_trace"]) == {
        "test_aot_dispatch_static": "SUCCESS", "test_trace": "SUCCESS"}
    assert library.opcheck(twice, (arr(3),), atol=1e-3, rtol=1e-3)["test_schema"] == "SUCCESS"
    with pytest.raises(ValueError, match="unknown test_utils entry 'test_nothing'"):
        library.opcheck(twice, (arr(3),), test_utils="test_nothing")
    with pytest.raises(TypeError, match="args must be a tuple or a list"):
        library.opcheck(twice, arr(3))
    twice._destroy()


def test_testing_is_an_attribute_after_import_backend_sdk() -> None:
    code = "import backend_sdk; print(backend_sdk.testing.assert_close.__name__, backend_sdk.testing.opcheck.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**__import__("os").environ})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["assert_close", "opcheck"]
