"""backend_sdk.trace (graphs of operator calls on fake tensors) and opcheck, with operators wrong in each way."""
from __future__ import annotations

import numpy as np
import pytest

import backend_sdk
from backend_sdk import Tensor
from backend_sdk.library import Library, custom_op, opcheck
from backend_sdk.testing import OpCheckError

HAS_AUTOGRAD = hasattr(backend_sdk.Tensor, "requires_grad")


def arr(*shape: int) -> Tensor:
    return backend_sdk.from_numpy(np.linspace(-2, 3, int(np.prod(shape)), dtype=np.float32).reshape(shape))


def like(x: Tensor) -> Tensor:
    return backend_sdk.empty_strided(list(x.shape), list(x.stride()), dtype=x.dtype, device=x.device)


# ---------------------------------------------------------------------------
# trace
# ---------------------------------------------------------------------------
def test_trace_records_ops_and_reruns(ns: str) -> None:
    calls = []

    @custom_op(f"{ns}::sq", mutates_args=())
    def sq(x: Tensor) -> Tensor:
        calls.append(1)
        return x * x

    sq.register_fake(lambda x: backend_sdk.empty(list(x.shape), dtype=x.dtype, device=x.device))

    def f(x: Tensor, y: Tensor) -> tuple:
        z = sq(x + y)
        return z.sum(0), z

    x, y = arr(2, 3), arr(2, 3) * 3
    gm = backend_sdk.trace(f, x, y)
    assert calls == []  # never run on real data while tracing
    code = gm.code
    assert "def forward(self, x, y):" in code
    assert f"ops.{ns}.sq.default(add)" in code  # the custom op is one opaque node
    assert "ops.aten.add.Tensor(x, y" in code and "ops.aten.sum" in code
    assert [n.kind for n in gm.graph.nodes].count("call") == 3
    assert "graph():" in str(gm.graph) and "%x : placeholder" in str(gm.graph)
    a, b = arr(2, 3) + 1, arr(2, 3) - 5
    got_sum, got_z = gm(a, b)
    np.testing.assert_allclose(got_z.numpy(), (a.numpy() + b.numpy()) ** 2, rtol=1e-6)
    np.testing.assert_allclose(got_sum.numpy(), ((a.numpy() + b.numpy()) ** 2).sum(0), rtol=1e-6)
    assert calls == [1]
    with pytest.raises(TypeError, match="takes 2 inputs, got 1"):
        gm(a)


def test_trace_constants_in_place_and_data_dependence() -> None:
    w = arr(3)

    def f(x: Tensor) -> Tensor:
        y = x.clone()
        y.mul_(2)
        return y + w

    gm = backend_sdk.trace(f, arr(3))
    assert "_tensor_constant" in gm.code and "mul_" in gm.code
    x = arr(3) * 7
    np.testing.assert_allclose(gm(x).numpy(), x.numpy() * 2 + w.numpy())

    def g(x: Tensor) -> Tensor:
        return x + 1 if x.sum() > 0 else x - 1

    with pytest.raises(backend_sdk._subclasses.DataDependentOutputException):
        backend_sdk.trace(g, arr(3))


# ---------------------------------------------------------------------------
# opcheck: correct operators pass
# ---------------------------------------------------------------------------
def test_opcheck_good_ops(ns: str) -> None:
    @custom_op(f"{ns}::scale", mutates_args=())
    def scale(x: Tensor, s: float) -> Tensor:
        return x * s

    @scale.register_fake
    def _(x: Tensor, s: float) -> Tensor:
        return like(x) if x.is_contiguous() else backend_sdk.empty(list(x.shape), dtype=x.dtype, device=x.device)

    for x in (arr(3, 4), backend_sdk.empty(0, 4)):
        assert opcheck(scale, (x, 2.5)) == {k: "SUCCESS" for k in
                                              ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")}
    assert opcheck(backend_sdk.ops.aten.add.Tensor, (arr(2, 3), arr(2, 3))) ["test_faketensor"] == "SUCCESS"
    assert opcheck(backend_sdk.ops.aten.add_.Tensor, (arr(2, 3), arr(2, 3)))["test_schema"] == "SUCCESS"
    assert opcheck(backend_sdk.ops.aten.t.default, (arr(2, 3),))["test_schema"] == "SUCCESS"


# ---------------------------------------------------------------------------
# opcheck: each sub-test catches an operator that is wrong its way
# ---------------------------------------------------------------------------
def test_schema_catches_undeclared_mutation(ns: str) -> None:
    @custom_op(f"{ns}::sneaky", mutates_args=())
    def sneaky(x: Tensor) -> Tensor:
        x.add_(1)  # mutates x, not declared
        return x * 2

    sneaky.register_fake(lambda x: like(x))
    with pytest.raises(OpCheckError, match="test_schema failed with AssertionError: Argument x is not defined as mutable but was mutated"):
        opcheck(sneaky, (arr(3),), test_utils="test_schema")
    result = opcheck(sneaky, (arr(3),), raise_exception=False)
    assert isinstance(result["test_schema"], AssertionError)


def test_schema_catches_undeclared_alias(ns: str) -> None:
    lib = Library(ns, "FRAGMENT")
    lib.define("view_it(Tensor x) -> Tensor")  # returns a view but declares no alias
    lib.impl("view_it", lambda x: x.view(-1), "CompositeExplicitAutograd")
    op = getattr(backend_sdk.ops, ns).view_it.default
    with pytest.raises(OpCheckError, match="test_schema failed with AssertionError: Argument x is not defined to alias output but was aliasing"):
        opcheck(op, (arr(2, 2),))
    lib.define("view_ok(Tensor(a) x) -> Tensor(a)")
    lib.impl("view_ok", lambda x: x.view(-1), "CompositeExplicitAutograd")
    assert opcheck(getattr(backend_sdk.ops, ns).view_ok.default, (arr(2, 2),), test_utils=["test_schema"]) == {
        "test_schema": "SUCCESS"}
    lib._destroy()


def test_schema_catches_outputs_aliasing_each_other(ns: str) -> None:
    lib = Library(ns, "FRAGMENT")
    lib.define("pair(Tensor x) -> (Tensor, Tensor)")

    def pair(x: Tensor) -> tuple:
        y = x + 1
        return y, y.view(-1)

    lib.impl("pair", pair, "CompositeExplicitAutograd")
    op = getattr(backend_sdk.ops, ns).pair.default
    with pytest.raises(OpCheckError, match="test_schema failed with AssertionError: Outputs 0 and 1 alias unexpectedly"):
        opcheck(op, (arr(2, 2),))
    lib._destroy()


@pytest.mark.parametrize("wrong", ["shape", "dtype", "strides", "count", "offset", "device", "alias"])
def test_faketensor_catches_a_wrong_fake_kernel(ns: str, wrong: str) -> None:
    lib = Library(ns, "FRAGMENT")
    if wrong == "count":
        lib.define("op(Tensor x) -> (Tensor, Tensor)")
        lib.impl("op", lambda x: (x + 1, x + 2), "CompositeExplicitAutograd")
    elif wrong == "alias":
        lib.define("op(Tensor(a) x) -> Tensor(a)")
        lib.impl("op", lambda x: x.view(-1), "CompositeExplicitAutograd")
    else:
        lib.define("op(Tensor x) -> Tensor")
        lib.impl("op", lambda x: (x + 1)[1:] if wrong == "offset" else x + 1, "CompositeExplicitAutograd")
    fakes = {
        "shape": lambda x: backend_sdk.empty(list(x.shape) + [1], dtype=x.dtype, device=x.device),
        "dtype": lambda x: backend_sdk.empty(list(x.shape), dtype=backend_sdk.float64, device=x.device),
        "strides": lambda x: backend_sdk.empty_strided(list(x.shape), [1, x.shape[0]], dtype=x.dtype, device=x.device),
        "count": lambda x: backend_sdk.empty(list(x.shape), dtype=x.dtype, device=x.device),
        "offset": lambda x: backend_sdk.empty([x.shape[0] - 1, x.shape[1]], dtype=x.dtype, device=x.device),
        "device": lambda x: backend_sdk.empty(list(x.shape), dtype=x.dtype, device="meta"),
        "alias": lambda x: backend_sdk.empty([x.numel()], dtype=x.dtype, device=x.device),
    }
    backend_sdk.library.register_fake(f"{ns}::op", fakes[wrong], lib=lib)
    expected = {
        "shape": "Shapes backend_sdk.Size\\(\\[3, 4, 1\\]\\) and backend_sdk.Size\\(\\[3, 4\\]\\) are not equal! \\(output 0",
        "dtype": "Dtypes backend_sdk.float64 and backend_sdk.float32 are not equal! \\(output 0",
        "strides": "Stride mismatch! Strides are \\(1, 3\\) and \\(4, 1\\) \\(mismatched at 0\\)! \\(output 0",
        "count": "",
        "offset": "Storage offset mismatch! Storage offsets are 0 and 4! \\(output 0",
        "device": "Devices meta and cpu are not equal! \\(output 0",
        "alias": "output 0: aliasing mismatch: the real output aliases inputs \\[0\\], the fake output inputs \\[\\]",
    }[wrong]
    op = getattr(backend_sdk.ops, ns).op.default
    result = opcheck(op, (arr(3, 4),), raise_exception=False)
    if wrong == "count":  # caught when the fake result is converted to the schema's returns
        assert isinstance(result["test_faketensor"], TypeError)
        with pytest.raises(OpCheckError, match="test_faketensor failed with Type(Runtime)?Error: The Python kernel of .* must "
                                               "return a tuple of 2 values, but returned Tensor"):
            opcheck(op, (arr(3, 4),), test_utils=("test_faketensor",))
        lib._destroy()
        return
    assert isinstance(result["test_faketensor"], AssertionError)
    with pytest.raises(OpCheckError, match="test_faketensor failed with AssertionError: " + expected):
        opcheck(op, (arr(3, 4),), test_utils=("test_faketensor",))
    lib._destroy()


def test_trace_catches_a_kernel_that_depends_on_hidden_state(ns: str) -> None:
    state = {"n": 0}

    @custom_op(f"{ns}::counter", mutates_args=())
    def counter(x: Tensor) -> Tensor:
        state["n"] += 1
        return x + state["n"]  # differs between the eager and the traced call

    counter.register_fake(lambda x: like(x))
    with pytest.raises(OpCheckError, match="test_trace failed with AssertionError: Outputs of the operator are different in eager-mode PyTorch vs AOTDispatcher tracing"):
        opcheck(counter, (arr(3),), test_utils="test_trace")


def test_faketensor_catches_a_fake_kernel_returning_its_input(ns: str) -> None:
    lib = Library(ns, "FRAGMENT")
    lib.define("op(Tensor x) -> Tensor")
    lib.impl("op", lambda x: x * 2, "CompositeExplicitAutograd")
    backend_sdk.library.register_fake(f"{ns}::op", lambda x: x, lib=lib)
    result = opcheck(getattr(backend_sdk.ops, ns).op.default, (arr(3),), raise_exception=False)
    assert "aliasing mismatch: the real output aliases inputs [], the fake output inputs [0]" in str(result["test_faketensor"])
    assert result["test_aot_dispatch_dynamic"] == "SUCCESS"  # the traced graph re-runs the real kernel
    lib._destroy()


def test_opcheck_bad_arguments(ns: str) -> None:
    with pytest.raises(ValueError, match="op must be an OpOverload"):
        opcheck(backend_sdk.ops.aten.add, (arr(2), arr(2)))
    with pytest.raises(ValueError, match="unknown test_utils entry 'test_nope'"):
        opcheck(backend_sdk.ops.aten.add.Tensor, (arr(2), arr(2)), test_utils="test_nope")
    with pytest.raises(TypeError, match="args must be a tuple or a list"):
        opcheck(backend_sdk.ops.aten.add.Tensor, arr(2))  # type: ignore[arg-type]
    # a list is accepted, as PyTorch's opcheck does
    assert opcheck(backend_sdk.ops.aten.add.Tensor, [arr(2), arr(2)], test_utils="test_schema") == {
        "test_schema": "SUCCESS"}


@pytest.mark.skipif(not HAS_AUTOGRAD, reason="needs the autograd layer")
def test_autograd_registration_catches_missing_formula(ns: str) -> None:
    @custom_op(f"{ns}::noformula", mutates_args=())
    def noformula(x: Tensor) -> Tensor:
        return x * 2

    noformula.register_fake(lambda x: like(x))
    x = arr(3)
    x.requires_grad_(True)
    # As in PyTorch 2.13 a custom_op always has an Autograd kernel, so the registration check passes; the
    # missing formula is the error of backward.
    assert opcheck(noformula, (x,), test_utils="test_autograd_registration") == {
        "test_autograd_registration": "SUCCESS"}
    with pytest.raises(RuntimeError, match="no autograd formula was registered"):
        noformula(x).sum().backward()
    noformula.register_autograd(lambda ctx, g: g * 2)
    assert opcheck(noformula, (x,)) == {k: "SUCCESS" for k in
                                       ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")}
