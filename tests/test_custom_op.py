"""backend_sdk.library.custom_op & co.: schema inference, kernels, registration API and bad inputs."""
from __future__ import annotations

import logging
from typing import List, Optional, Sequence, Tuple

import numpy as np
import pytest

import backend_sdk
from backend_sdk import Tensor
from backend_sdk.library import custom_op, infer_schema


def arr(*shape: int) -> Tensor:
    return backend_sdk.from_numpy(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) - 2)


# ---------------------------------------------------------------------------
# infer_schema
# ---------------------------------------------------------------------------
def test_infer_schema_types() -> None:
    def f(x: Tensor, ys: Sequence[Tensor], zs: List[Optional[Tensor]], n: int, ns: List[int], f: float,
          b: bool, s: str, o: Optional[Tensor], d: backend_sdk.dtype, dev: backend_sdk.device,
          on: Optional[int] = None, k: int = 3, *, flag: bool = False) -> Tuple[Tensor, List[Tensor]]:
        raise AssertionError

    assert infer_schema(f, mutates_args=()) == (
        "(Tensor x, Tensor[] ys, Tensor?[] zs, SymInt n, SymInt[] ns, float f, bool b, str s, Tensor? o, "
        "ScalarType d, Device dev, SymInt? on=None, SymInt k=3, *, bool flag=False) -> (Tensor, Tensor[])"
    )


def test_infer_schema_mutates_and_returns() -> None:
    def g(x: Tensor, y: Tensor) -> None:
        raise AssertionError

    assert infer_schema(g, mutates_args={"y"}) == "(Tensor x, Tensor(a1!) y) -> ()"
    assert infer_schema(g, mutates_args="unknown") == "(Tensor(a0!) x, Tensor(a1!) y) -> ()"
    assert infer_schema(g, mutates_args=(), op_name="ns::g") == "ns::g(Tensor x, Tensor y) -> ()"

    def h(x: Tensor) -> Tensor:
        raise AssertionError

    assert infer_schema(h, mutates_args=()) == "(Tensor x) -> Tensor"


def test_infer_schema_string_annotations() -> None:
    ns: dict = {}
    exec(
        "from __future__ import annotations\n"
        "from typing import Optional\n"
        "from backend_sdk import Tensor\n"
        "def f(x: Tensor, n: Optional[int] = None) -> Tensor: ...\n",
        ns,
    )
    assert infer_schema(ns["f"], mutates_args=()) == "(Tensor x, SymInt? n=None) -> Tensor"


def test_infer_schema_bad_hints_name_the_parameter() -> None:
    def f(x: Tensor, weird: dict) -> Tensor:
        raise AssertionError

    with pytest.raises(ValueError, match="Parameter weird has unsupported type"):
        infer_schema(f, mutates_args=())

    def g(x, y: Tensor) -> Tensor:  # noqa: ANN001
        raise AssertionError

    with pytest.raises(ValueError, match="Parameter x must have a type annotation"):
        infer_schema(g, mutates_args=())

    def h(*xs: Tensor) -> Tensor:
        raise AssertionError

    with pytest.raises(ValueError, match="Parameter xs: we do not support positional-only args, varargs"):
        infer_schema(h, mutates_args=())

    def r(x: Tensor) -> dict:
        raise AssertionError

    with pytest.raises(ValueError, match="Return has unsupported type"):
        infer_schema(r, mutates_args=())

    def d(x: Tensor, n: int = None) -> Tensor:  # type: ignore[assignment]
        raise AssertionError

    with pytest.raises(ValueError, match="Parameter n defaults to None but its type is not Optional"):
        infer_schema(d, mutates_args=())

    def m(x: Tensor, n: int) -> None:
        raise AssertionError

    with pytest.raises(ValueError, match="Parameter n is in mutable_args but only Tensors"):
        infer_schema(m, mutates_args=("n",))
    with pytest.raises(ValueError, match=r"\{'nope'\} in mutates_args were not found in the custom op's signature"):
        infer_schema(m, mutates_args=("nope",))


# ---------------------------------------------------------------------------
# custom_op
# ---------------------------------------------------------------------------
def test_custom_op_decorator_and_direct(ns: str) -> None:
    @custom_op(f"{ns}::double", mutates_args=())
    def double(x: Tensor) -> Tensor:
        return x * 2

    def triple_impl(x: Tensor) -> Tensor:
        return x * 3

    triple = custom_op(f"{ns}::triple", triple_impl, mutates_args=())
    x = arr(2, 3)
    np.testing.assert_array_equal(double(x).numpy(), x.numpy() * 2)
    np.testing.assert_array_equal(triple(x).numpy(), x.numpy() * 3)
    ops_ns = getattr(backend_sdk.ops, ns)
    np.testing.assert_array_equal(ops_ns.double(x).numpy(), x.numpy() * 2)
    np.testing.assert_array_equal(ops_ns.double.default(x).numpy(), x.numpy() * 2)
    assert str(double._schema) == f"{ns}::double(Tensor x) -> Tensor"
    assert isinstance(double, backend_sdk._C.OpOverload)
    assert repr(double) == f"<CustomOpDef({ns}::double)>"


def test_custom_op_scalar_list_and_multiple_returns(ns: str) -> None:
    @custom_op(f"{ns}::split_scale", mutates_args=())
    def split_scale(x: Tensor, scales: Sequence[float], *, dtype: Optional[backend_sdk.dtype] = None) -> Tuple[Tensor, Tensor]:
        assert isinstance(dtype, (backend_sdk.dtype, type(None)))
        y = x.to(dtype) if dtype is not None else x
        return y * scales[0], y * scales[1]

    x = arr(4)
    a, b = split_scale(x, [2.0, -1.0], dtype=backend_sdk.float64)
    assert a.dtype == backend_sdk.float64
    np.testing.assert_array_equal(a.numpy(), x.numpy() * 2)
    np.testing.assert_array_equal(b.numpy(), -x.numpy())


def test_returning_an_input_or_a_view_raises(ns: str) -> None:
    @custom_op(f"{ns}::same", mutates_args=())
    def same(x: Tensor) -> Tensor:
        return x

    @custom_op(f"{ns}::view", mutates_args=())
    def view(x: Tensor) -> Tensor:
        return x.view(-1)

    @custom_op(f"{ns}::twice", mutates_args=())
    def twice(x: Tensor) -> Tuple[Tensor, Tensor]:
        y = x + 1
        return y, y[0]

    msg = "The output of this custom operator \\(1\\) must not also be an input to this custom operator"
    for op in (same, view, twice):
        with pytest.raises(ValueError, match=msg):
            op(arr(2, 2))


def test_mutable_op_in_place_and_out(ns: str) -> None:
    @custom_op(f"{ns}::add_one_", mutates_args=("x",))
    def add_one_(x: Tensor) -> None:
        x.add_(1)

    assert str(add_one_._schema) == f"{ns}::add_one_(Tensor(a0!) x) -> ()"
    x = arr(3)
    before = x.numpy().copy()
    assert add_one_(x) is None
    np.testing.assert_array_equal(x.numpy(), before + 1)

    @custom_op(f"{ns}::mul_out", mutates_args=("out",), schema="(Tensor x, Tensor y, *, Tensor(a!) out) -> Tensor(a!)",
               tags=backend_sdk.Tag.out)
    def mul_out(x: Tensor, y: Tensor, *, out: Tensor) -> Tensor:
        return backend_sdk.ops.aten.mul.out(x, y, out=out)

    out = backend_sdk.zeros(3)
    r = mul_out(arr(3), arr(3), out=out)
    assert r is out
    np.testing.assert_array_equal(out.numpy(), arr(3).numpy() ** 2)


def test_explicit_schema_checked_against_mutates_args(ns: str) -> None:
    def f(x, y):  # noqa: ANN001
        return None

    with pytest.raises(ValueError, match="The schema suggests that the op mutates {'y'}"):
        custom_op(f"{ns}::f", f, mutates_args=(), schema="(Tensor x, Tensor(a!) y) -> ()")
    with pytest.raises(ValueError, match="does not parse"):
        custom_op(f"{ns}::g", f, mutates_args=(), schema="(Tensor x, Tensor y -> ()")
    op = custom_op(f"{ns}::h", f, mutates_args="unknown", schema="(Tensor x, Tensor(a!) y) -> ()")
    assert "Tensor(a!) y" in str(op._schema)


def test_maybe_out_accepted_as_pytorch_does(ns: str) -> None:
    # PyTorch 2.13 accepts a mutable optional tensor on an op with tensor returns
    # (test_mutated_optional_arg_default_none); its version is bumped when given.
    def f(x: Tensor, out: Optional[Tensor] = None) -> Tensor:
        if out is not None:
            out.copy_(x)
            return x.new_empty(0)
        return x.clone()

    op = custom_op(f"{ns}::f", f, mutates_args={"out"})
    assert "Tensor(a1!)? out=None" in str(op._schema)
    x = arr(3)
    np.testing.assert_array_equal(op(x).numpy(), x.numpy())
    out = backend_sdk.empty(3)
    before = out._version
    assert op(x, out=out).numel() == 0
    np.testing.assert_array_equal(out.numpy(), x.numpy())
    assert out._version > before
    op._destroy()


def test_mutates_args_required_and_validated(ns: str) -> None:
    with pytest.raises(TypeError):
        custom_op(f"{ns}::f")(lambda x: x)  # type: ignore[call-arg]

    def g(x: Tensor) -> Tensor:
        return x.clone()

    with pytest.raises(ValueError, match=r"\{'y'\} in mutates_args were not found"):
        custom_op(f"{ns}::g", g, mutates_args=("y",))
    with pytest.raises(ValueError, match="mutates_args must be 'unknown' or an iterable"):
        custom_op(f"{ns}::g2", g, mutates_args="x")
    with pytest.raises(ValueError, match="expected a qualified name"):
        custom_op("no_namespace", g, mutates_args=())


def test_device_types_limit_the_kernel(ns: str) -> None:
    @custom_op(f"{ns}::cpu_only", mutates_args=(), device_types="cpu")
    def cpu_only(x: Tensor) -> Tensor:
        return x + 1

    np.testing.assert_array_equal(cpu_only(arr(2)).numpy(), arr(2).numpy() + 1)
    with pytest.raises(NotImplementedError, match=f"Could not run '{ns}::cpu_only' with arguments from the 'Meta' backend"):
        cpu_only(backend_sdk.empty(2, device="meta"))
    with pytest.raises(ValueError, match="Expected one of cpu, .* device type at start of device string: gpu9"):
        custom_op(f"{ns}::bad_dev", lambda x: x, mutates_args=(), device_types="gpu9")


def test_register_kernel_meta_and_set_kernel_enabled(ns: str, caplog: pytest.LogCaptureFixture) -> None:
    @custom_op(f"{ns}::op", mutates_args=())
    def op(x: Tensor) -> Tensor:
        return x + 1

    @op.register_kernel("cpu")
    def _(x: Tensor) -> Tensor:
        return x + 100

    calls = []

    @op.register_kernel("Meta")
    def _(x: Tensor) -> Tensor:
        calls.append(1)
        return backend_sdk.empty_strided(list(x.shape), list(x.stride()), dtype=x.dtype, device=x.device)

    x = arr(3)
    np.testing.assert_array_equal(op(x).numpy(), x.numpy() + 100)
    with op.set_kernel_enabled("cpu", False):
        np.testing.assert_array_equal(op(x).numpy(), x.numpy() + 1)
        with op.set_kernel_enabled("cpu", True):
            np.testing.assert_array_equal(op(x).numpy(), x.numpy() + 100)
        np.testing.assert_array_equal(op(x).numpy(), x.numpy() + 1)
    np.testing.assert_array_equal(op(x).numpy(), x.numpy() + 100)
    m = op(backend_sdk.empty(2, 5, device="meta"))
    assert m.is_meta and tuple(m.shape) == (2, 5) and calls == [1]
    # As PyTorch 2.13: a device type without a kernel only logs a warning; the call is unchanged.
    with caplog.at_level(logging.WARNING, logger="backend_sdk._library.custom_ops"):
        with op.set_kernel_enabled("PrivateUse2", False):
            np.testing.assert_array_equal(op(x).numpy(), x.numpy() + 100)
    assert "no kernel was registered for this device type" in caplog.text


def test_module_level_functions_on_ops_defined_any_way(ns: str) -> None:
    lib = backend_sdk.library.Library(ns, "FRAGMENT")
    lib.define("scale(Tensor x, float s) -> Tensor")
    backend_sdk.library.register_kernel(f"{ns}::scale", "cpu", lambda x, s: x * s)
    seen = []

    @backend_sdk.library.register_fake(f"{ns}::scale")
    def _(x: Tensor, s: float) -> Tensor:
        seen.append(s)
        return backend_sdk.empty_strided(list(x.shape), list(x.stride()), dtype=x.dtype, device=x.device)

    op = getattr(backend_sdk.ops, ns).scale.default
    np.testing.assert_array_equal(op(arr(3), 2.0).numpy(), arr(3).numpy() * 2)
    # the fake kernel is also the Meta kernel
    assert tuple(op(backend_sdk.empty(4, device="meta"), 2.0).shape) == (4,)
    assert seen == [2.0]
    with pytest.raises(ValueError, match=f"register_fake\\(...\\): the operator {ns}::scale already has a fake impl registered at .*test_custom_op.py"):
        backend_sdk.library.register_fake(f"{ns}::scale", lambda x, s: x, allow_override=False)
    with pytest.raises(ValueError, match="does not exist"):
        backend_sdk.library.register_fake(f"{ns}::nope", lambda x: x)
    lib._destroy()


def test_register_fake_on_a_cpp_operator() -> None:
    # aten::nonzero has a data-dependent shape: Meta refuses it; a fake kernel can use new_dynamic_size
    from backend_sdk._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        with pytest.raises(Exception, match="nonzero"):
            backend_sdk.nonzero(backend_sdk.ones(3))


def test_register_autograd_refuses_mutable_ops(ns: str) -> None:
    @custom_op(f"{ns}::inc_", mutates_args=("x",))
    def inc_(x: Tensor) -> None:
        x.add_(1)

    with pytest.raises(ValueError, match=f"Cannot register autograd formula for non-functional operator {ns}::inc_"):
        inc_.register_autograd(lambda ctx, g: g)
    with pytest.raises(ValueError, match="Cannot register autograd formula for non-functional operator aten::add_.Tensor"):
        backend_sdk.library.register_autograd("aten::add_.Tensor", lambda ctx, g: g)


def test_register_autograd_without_grad_runs_the_op(ns: str) -> None:
    @custom_op(f"{ns}::sq", mutates_args=())
    def sq(x: Tensor) -> Tensor:
        return x * x

    sq.register_autograd(lambda ctx, g: g * 2 * ctx.saved_tensors[0],
                         setup_context=lambda ctx, inputs, output: ctx.save_for_backward(inputs[0]))
    np.testing.assert_array_equal(sq(arr(3)).numpy(), arr(3).numpy() ** 2)


def test_op_without_tensor_arguments_dispatches_on_device(ns: str) -> None:
    @custom_op(f"{ns}::iota", mutates_args=())
    def iota(n: int, device: backend_sdk.device) -> Tensor:
        return backend_sdk.arange(n, device=device)

    @iota.register_kernel("Meta")
    def _(n: int, device: backend_sdk.device) -> Tensor:
        return backend_sdk.empty(n, dtype=backend_sdk.int64, device=device)

    np.testing.assert_array_equal(iota(4, backend_sdk.device("cpu")).numpy(), np.arange(4))
    m = iota(7, backend_sdk.device("meta"))
    assert m.is_meta and tuple(m.shape) == (7,)
    # As PyTorch 2.13: refused when kernels per device type are asked for, not for an every-device function.
    nodev = custom_op(f"{ns}::nodev", lambda n: None, mutates_args=(), schema="(int n) -> Tensor")
    with pytest.raises(ValueError, match="Functions without tensor inputs are required to have a `device: torch.device` argument"):
        nodev.register_kernel("cpu", lambda n: None)
    with pytest.raises(ValueError, match="Functions without tensor inputs are required to have a `device: torch.device` argument"):
        custom_op(f"{ns}::nodev2", lambda n: None, mutates_args=(), schema="(int n) -> Tensor", device_types="cpu")


def test_unparsable_schema_in_define(ns: str) -> None:
    with pytest.raises(ValueError):
        backend_sdk.library.define(f"{ns}::bad", "(Tensor x -> Tensor")


class _MockCtx:
    def save_for_backward(self, *tensors: Tensor) -> None:
        self.saved_tensors = tensors


class _MockFunction:
    """PyTorch's autograd.Function protocol (forward without ctx + setup_context), recording calls."""

    log: list = []

    @classmethod
    def apply(cls, *args):  # noqa: ANN206
        out = cls.forward(*args)
        ctx = _MockCtx()
        cls.setup_context(ctx, args, out)
        _MockFunction.log.append((cls, ctx, out))
        return out


def test_register_autograd_kernel_protocol(ns: str, monkeypatch) -> None:
    """The Autograd kernel register_autograd installs, driven through a stand-in autograd.Function
    (the real autograd layer is developed separately): forward runs the op below Autograd once,
    setup_context sees (inputs, output), backward's results are checked per input."""
    import types

    from backend_sdk._library import autograd as custom_autograd

    fake_autograd = types.SimpleNamespace(Function=_MockFunction, is_grad_enabled=lambda: True)
    monkeypatch.setattr(custom_autograd, "_autograd_module", [fake_autograd])
    calls = []

    @custom_op(f"{ns}::sq", mutates_args=())
    def sq(x: Tensor, k: float = 1.0) -> Tensor:
        calls.append(k)
        return x * x * k

    seen = {}

    def setup_context(ctx, inputs, output):  # noqa: ANN001, ANN202
        seen["inputs"], seen["output"] = inputs, output
        ctx.save_for_backward(inputs[0])

    def backward(ctx, grad):  # noqa: ANN001, ANN202
        return grad * 2 * ctx.saved_tensors[0], None

    sq.register_autograd(backward, setup_context=setup_context)
    x = arr(3)
    np.testing.assert_array_equal(sq(x, 2.0).numpy(), x.numpy() ** 2 * 2)  # no input requires grad: direct
    assert calls == [2.0] and _MockFunction.log == []
    x.requires_grad = True
    out = sq(x, 3.0)
    assert calls == [2.0, 3.0]  # forward ran the op once, below the Autograd key
    cls, ctx, recorded = _MockFunction.log[-1]
    assert recorded is out and seen["output"] is out and seen["inputs"][0] is x and seen["inputs"][1] == 3.0
    grads = cls.backward(ctx, backend_sdk.ones(3))
    np.testing.assert_array_equal(grads[0].numpy(), 2 * x.numpy())
    assert grads[1] is None

    def bad_backward(ctx, grad):  # noqa: ANN001, ANN202
        return grad

    backend_sdk.library.register_autograd(f"{ns}::sq", bad_backward)
    sq(x, 1.0)  # k is its default: not an input of the Function (Note [Custom op autograd inputs])
    cls, ctx, _ = _MockFunction.log[-1]
    assert len(cls.backward(ctx, backend_sdk.ones(3))) == 1
    sq(x, 2.0)
    cls, ctx, _ = _MockFunction.log[-1]
    with pytest.raises(RuntimeError, match="sqBackward returned an incorrect number of gradients \\(expected 2, got 1\\)"):
        cls.backward(ctx, backend_sdk.ones(3))


def test_defining_a_custom_op_twice_replaces_it_as_pytorch_does(ns: str) -> None:
    def g(x: Tensor) -> Tensor:
        return x.clone()

    first = custom_op(f"{ns}::g", g, mutates_args=())

    def g2(x: Tensor) -> Tensor:
        return x * 2

    second = custom_op(f"{ns}::g", g2, mutates_args=())
    x = arr(3)
    np.testing.assert_array_equal(second(x).numpy(), x.numpy() * 2)
    np.testing.assert_array_equal(getattr(backend_sdk.ops, ns).g(x).numpy(), x.numpy() * 2)
    with pytest.raises(RuntimeError):  # the old handle names both definitions rather than running g
        first(x)
