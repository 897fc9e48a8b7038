"""__torch_dispatch__ subclasses and TorchDispatchModes (issue 19): what they see, nesting, errors,
register_torch_dispatch, and backend_sdk.utils._pytree."""
from __future__ import annotations

import collections
import re
import threading

import numpy as np
import pytest

import backend_sdk as bs
from backend_sdk import _C, library
from backend_sdk.utils import _pytree as pytree
from backend_sdk.utils._python_dispatch import (
    TorchDispatchMode,
    _get_current_dispatch_mode,
    _get_current_dispatch_mode_stack,
    _pop_mode_temporarily,
)


class LoggingTensor(bs.Tensor):
    """A wrapper subclass that logs every operator its instances reach and runs it on the inner tensor."""

    log: list[str] = []

    @staticmethod
    def __new__(cls, elem: bs.Tensor, requires_grad: bool | None = None) -> "LoggingTensor":
        r = bs.Tensor._make_wrapper_subclass(
            cls, elem.shape, strides=elem.stride(), storage_offset=elem.storage_offset(), dtype=elem.dtype,
            device=elem.device, requires_grad=elem.requires_grad if requires_grad is None else requires_grad)
        r.elem = elem.detach()
        return r

    def __repr__(self) -> str:
        return f"LoggingTensor({self.elem!r})"

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        cls.log.append(func.name())
        unwrap = lambda t: t.elem if isinstance(t, LoggingTensor) else t  # noqa: E731
        out = func(*pytree.tree_map(unwrap, args), **pytree.tree_map(unwrap, kwargs or {}))
        return pytree.tree_map_only(bs.Tensor, lambda t: t if isinstance(t, LoggingTensor) else LoggingTensor(t),
                                    out)


class LoggingMode(TorchDispatchMode):
    def __init__(self, name: str = "mode", sink: list | None = None) -> None:
        super().__init__()
        self.name = name
        self.log: list = [] if sink is None else sink

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.log.append(func.name() if self.name == "mode" else (self.name, func.name()))
        return func(*args, **(kwargs or {}))


def _train_step(model: bs.nn.Module, x: bs.Tensor, target: bs.Tensor, log: list | None = None) -> bs.Tensor:
    """One SGD step; with ``log``, the log's length after each phase goes to _train_step.phases."""
    opt = bs.optim.SGD(model.parameters(), lr=0.1)
    opt.zero_grad()
    start = len(log) if log is not None else 0
    loss = bs.nn.functional.mse_loss(model(x), target)
    forward = len(log) if log is not None else 0
    loss.backward()
    backward = len(log) if log is not None else 0
    opt.step()
    if log is not None:
        _train_step.phases = (log[start:forward], log[forward:backward], log[backward:])
    return loss


def _in_order(names: list[str], log: list[str]) -> bool:
    """True if names occur in log in this order (not necessarily adjacent)."""
    it = iter(log)
    return all(any(entry == name for entry in it) for name in names)


def _linear(seed: int, device: str) -> bs.nn.Linear:
    bs.manual_seed(seed)
    return bs.nn.Linear(3, 2).to(device)


# ---------------------------------------------------------------------------
# A logging mode and a logging tensor over a training step
# ---------------------------------------------------------------------------
def test_logging_mode_sees_every_aten_call_of_a_training_step(device):
    model = _linear(0, device)
    x = bs.randn(4, 3).to(device)
    target = bs.randn(4, 2).to(device)
    w0 = model.weight.detach().clone()
    mode = LoggingMode()
    with mode:
        loss = _train_step(model, x, target, mode.log)
    forward, backward, step = _train_step.phases
    # forward: linear is CompositeImplicitAutograd, so the mode sees what it decomposes into (below autograd),
    # mse_loss likewise
    assert "aten::linear" not in forward and "aten::mse_loss" not in forward
    assert _in_order(["aten::addmm", "aten::sub.Tensor", "aten::pow.Tensor_Scalar", "aten::mean"], forward)
    # backward: the formulas' operators (the seed, mean's and pow's formulas, mm for the weight's gradient)
    assert _in_order(["aten::fill_.Scalar", "aten::div.Scalar", "aten::mul.Tensor", "aten::mm"], backward)
    assert "aten::sum.dim_IntList" in backward  # the bias gradient
    # the optimizer step: one in-place update per parameter; on a device backend SGD defaults to foreach, as
    # PyTorch's: one multi-tensor update
    assert step == (["aten::add_.Tensor", "aten::add_.Tensor"] if device == "cpu" else ["aten::_foreach_add_.List"])
    assert all(isinstance(name, str) and name.startswith("aten::") for name in mode.log)
    # the mode changed nothing: the same step without it gives the same weights
    ref = _linear(0, device)
    ref_loss = _train_step(ref, x, target)
    np.testing.assert_allclose(loss.item(), ref_loss.item(), rtol=1e-6)
    np.testing.assert_allclose(model.weight.detach().cpu().numpy(), ref.weight.detach().cpu().numpy(), rtol=1e-6)
    assert not np.allclose(model.weight.detach().cpu().numpy(), w0.cpu().numpy())
    assert _get_current_dispatch_mode() is None


def test_logging_tensor_sees_every_aten_call_of_a_training_step(device):
    ref = _linear(1, device)
    model = _linear(1, device)
    model.weight = bs.nn.Parameter(LoggingTensor(model.weight.detach()))
    model.bias = bs.nn.Parameter(LoggingTensor(model.bias.detach()))
    assert isinstance(model.weight, bs.nn.Parameter) and isinstance(model.weight, LoggingTensor)
    assert [n for n, _ in model.named_parameters()] == ["weight", "bias"]
    x = bs.randn(4, 3).to(device)
    target = bs.randn(4, 2).to(device)
    LoggingTensor.log = []
    loss = _train_step(model, x, target, LoggingTensor.log)
    forward, backward, step = _train_step.phases
    assert isinstance(loss, LoggingTensor)
    assert _in_order(["aten::addmm", "aten::sub.Tensor", "aten::pow.Tensor_Scalar", "aten::mean"], forward)
    assert _in_order(["aten::mul.Tensor", "aten::mm"], backward) and "aten::sum.dim_IntList" in backward
    assert step == ["aten::add_.Tensor", "aten::add_.Tensor"]  # SGD updates weight and bias in place
    assert isinstance(model.bias.grad, LoggingTensor)  # the weight's: test_weight_grad_of_a_subclass_parameter
    # the same step on plain tensors: the logging tensor computes the same
    ref_loss = _train_step(ref, x, target)
    np.testing.assert_allclose(loss.elem.item(), ref_loss.item(), rtol=1e-6)
    np.testing.assert_allclose(model.weight.elem.cpu().numpy(), ref.weight.detach().cpu().numpy(), rtol=1e-6)
    np.testing.assert_allclose(model.bias.elem.cpu().numpy(), ref.bias.detach().cpu().numpy(), rtol=1e-6)
    assert model.weight.device == ref.weight.device


def test_mode_and_subclass_together_mode_first():
    events: list = []
    LoggingTensor.log = events
    x = LoggingTensor(bs.ones(3))
    with LoggingMode("outer", sink=events):
        y = x * 2
    # the mode sees the call first (with the subclass among types), its func() call reaches the subclass
    assert events == [("outer", "aten::mul.Tensor"), "aten::mul.Tensor"]
    assert isinstance(y, LoggingTensor)
    np.testing.assert_allclose(y.elem.numpy(), [2.0, 2.0, 2.0])


def test_func_is_the_op_overload():
    seen: list = []

    class Inspect(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append((func, types, args, kwargs))
            return func(*args, **(kwargs or {}))

    a, b = bs.ones(2), bs.ones(2)
    with Inspect():
        bs.add(a, b, alpha=2)
    func, types, args, kwargs = seen[0]
    assert func is bs.ops.aten.add.Tensor or func.__name__ == "aten::add.Tensor"
    assert func.name() == "aten::add.Tensor"
    assert func._overloadname == "Tensor" and func._opname == "add"
    assert func.overloadpacket.__name__ == "aten::add"
    assert "Tensor" in func.overloadpacket._overload_names
    assert str(func._schema).startswith("aten::add.Tensor(Tensor self, Tensor other")
    assert types == ()
    assert args[0] is a and args[1] is b
    assert kwargs == {"alpha": 2}
    assert bs.ops.aten.mm.default.name() == "aten::mm"


# ---------------------------------------------------------------------------
# Nesting, the mode stack, threads
# ---------------------------------------------------------------------------
def test_nested_modes_innermost_first_and_own_calls_popped():
    events: list = []
    inside: list = []

    class Probe(TorchDispatchMode):
        def __init__(self, name):
            super().__init__()
            self.name = name

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            events.append((self.name, func.name()))
            inside.append((self.name, _get_current_dispatch_mode(), list(_get_current_dispatch_mode_stack())))
            return func(*args, **(kwargs or {}))

    x = bs.ones(2)
    with Probe("outer") as outer:
        assert _get_current_dispatch_mode() is outer
        with Probe("inner") as inner:
            assert _get_current_dispatch_mode_stack() == [outer, inner]
            y = x + 1
        assert _get_current_dispatch_mode_stack() == [outer]
    assert events == [("inner", "aten::add.Tensor"), ("outer", "aten::add.Tensor")]
    # the inner handler runs with itself popped (the outer one is current), the outer with an empty stack
    assert inside[0] == ("inner", outer, [outer])
    assert inside[1] == ("outer", None, [])
    np.testing.assert_allclose(y.numpy(), [2.0, 2.0])
    # after the modes exit nothing reaches them and the Python key is off again
    events.clear()
    _ = x + 1
    assert events == [] and _get_current_dispatch_mode_stack() == []


def test_pop_mode_temporarily():
    m = LoggingMode()
    with m:
        with _pop_mode_temporarily() as popped:
            assert popped is m and _get_current_dispatch_mode() is None
            _ = bs.ones(2) * 3
        assert _get_current_dispatch_mode() is m
        _ = bs.ones(2) * 3
    assert m.log.count("aten::mul.Tensor") == 1


def test_same_mode_object_reentered():
    m = LoggingMode()
    x = bs.ones(1)
    with m:
        with m:
            _ = x + 1
    # inner m runs, its func() reaches the outer m
    assert m.log == ["aten::add.Tensor", "aten::add.Tensor"]


def test_mode_is_per_thread():
    m = LoggingMode()
    other: list = []

    def work():
        other.append(_get_current_dispatch_mode())
        _ = bs.ones(2) + 1

    with m:
        t = threading.Thread(target=work)
        t.start()
        t.join()
        _ = bs.ones(2) - 1
    assert other == [None]
    assert "aten::add.Tensor" not in m.log and "aten::sub.Tensor" in m.log


def test_mode_can_replace_results():
    class Zeros(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if func.name() == "aten::mul.Tensor":
                return bs.zeros_like(out)
            return out

    with Zeros():
        y = bs.ones(3) * 5
    np.testing.assert_allclose(y.numpy(), [0.0, 0.0, 0.0])


def test_mode_under_autograd_keeps_gradients():
    w = bs.randn(3, requires_grad=True)
    with LoggingMode() as m:
        loss = (w * w).sum()
        loss.backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * w.detach().numpy(), rtol=1e-6)
    assert m.log.count("aten::mul.Tensor") >= 2  # forward and the formula's products


def test_mode_sees_meta_work_under_fake_tensor_mode():
    # Note [Python dispatch]: the Fake key is above Python, so the fake fallback runs first and the meta
    # operators it runs reach an active mode
    from backend_sdk._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = bs.empty(2, 3)
        with LoggingMode() as m:
            y = x + x
    assert "aten::add.Tensor" in m.log
    assert tuple(y.shape) == (2, 3)


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------
class Declining(bs.Tensor):
    @staticmethod
    def __new__(cls, elem):
        return bs.Tensor._make_wrapper_subclass(cls, elem.shape, dtype=elem.dtype, device=elem.device)

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return NotImplemented


class DecliningMode(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return NotImplemented


def test_all_handlers_not_implemented_subclass():
    x = Declining(bs.ones(2))
    with pytest.raises(TypeError) as info:
        x + 1
    assert str(info.value) == (
        "Multiple dispatch failed for 'backend_sdk.ops.aten.add.Tensor'; all __torch_dispatch__ handlers returned "
        f"NotImplemented:\n\n  - tensor subclass {Declining!r}\n\n"
        "For more information, try re-running with TORCH_LOGS=not_implemented")


def test_all_handlers_not_implemented_mode_and_subclass():
    x = Declining(bs.ones(2))
    mode = DecliningMode()
    with pytest.raises(TypeError) as info:
        with mode:
            bs.neg(x)
    text = str(info.value)
    assert re.fullmatch(
        r"Multiple dispatch failed for 'backend_sdk\.ops\.aten\.neg\.default'; all __torch_dispatch__ handlers "
        r"returned NotImplemented:\n\n  - mode object <.*DecliningMode object at 0x[0-9a-f]+>\n"
        r"  - tensor subclass <class '.*Declining'>\n\nFor more information, try re-running with "
        r"TORCH_LOGS=not_implemented", text), text
    assert _get_current_dispatch_mode_stack() == []


def test_mode_only_not_implemented():
    x = bs.ones(2)
    with pytest.raises(TypeError, match=r"^Multiple dispatch failed for 'backend_sdk\.ops\.aten\.mul\.Tensor'.*"
                                        r"\n\n  - mode object <.*DecliningMode"):
        with DecliningMode():
            x * 2


def test_a_mode_that_raises():
    class Boom(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func.name() == "aten::mul.Tensor":
                raise ValueError(f"no multiplication here ({func.name()})")
            return func(*args, **(kwargs or {}))

    m = Boom()
    with pytest.raises(ValueError, match=r"no multiplication here \(aten::mul\.Tensor\)"):
        with m:
            _ = bs.ones(2) + 1  # fine
            _ = bs.ones(2) * 2
    # the stack is restored and the key is off: later calls work without the mode
    assert _get_current_dispatch_mode_stack() == []
    np.testing.assert_allclose((bs.ones(2) * 2).numpy(), [2.0, 2.0])
    # raising while other modes are active leaves them in place
    with LoggingMode() as outer:
        with pytest.raises(ValueError):
            with Boom():
                bs.ones(1) * 2
        assert _get_current_dispatch_mode() is outer
        _ = bs.ones(1) * 2
    assert outer.log[-1] == "aten::mul.Tensor"


def test_base_mode_handler_is_abstract():
    with pytest.raises(NotImplementedError):
        with TorchDispatchMode():
            bs.ones(1) + 1
    assert _get_current_dispatch_mode_stack() == []


def test_subclass_that_raises():
    class Raising(Declining):
        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            raise IndexError(f"{func.name()}: refused")

    with pytest.raises(IndexError, match="aten::sum: refused"):
        Raising(bs.ones(2)).sum()


# ---------------------------------------------------------------------------
# library.register_torch_dispatch
# ---------------------------------------------------------------------------
def test_register_torch_dispatch_for_a_custom_op_and_a_mode(ns):
    @library.custom_op(f"{ns}::double", mutates_args=())
    def double(x: bs.Tensor) -> bs.Tensor:
        return x * 2

    calls: list = []

    @library.register_torch_dispatch(f"{ns}::double", LoggingMode)
    def _(mode, func, types, args, kwargs):
        calls.append((mode, func.name(), types))
        return args[0] * 10

    m = LoggingMode()
    with m:
        y = double(bs.ones(2))
    # the rule runs instead of the mode's __torch_dispatch__ for this op; the rule's own mul reaches no mode
    np.testing.assert_allclose(y.numpy(), [10.0, 10.0])
    assert calls == [(m, f"{ns}::double", ())]
    assert f"{ns}::double" not in m.log
    np.testing.assert_allclose(double(bs.ones(2)).numpy(), [2.0, 2.0])  # no mode: the kernel


def test_register_torch_dispatch_for_an_aten_op_and_a_subclass_with_lib():
    seen: list = []

    def rule(cls, func, types, args, kwargs):
        seen.append((cls, func.name(), types))
        return LoggingTensor(args[0].elem.neg() * 0 + 42)

    LoggingTensor.log = []
    with library._scoped_library("aten", "FRAGMENT") as lib:
        library.register_torch_dispatch(bs.ops.aten.neg.default, LoggingTensor, rule, lib=lib)
        y = bs.neg(LoggingTensor(bs.ones(2)))
        np.testing.assert_allclose(y.elem.numpy(), [42.0, 42.0])
        assert seen == [(LoggingTensor, "aten::neg", (LoggingTensor,))]
        assert "aten::neg" not in LoggingTensor.log  # checked before __torch_dispatch__
    # the library is gone, and so is the rule
    y = bs.neg(LoggingTensor(bs.ones(2)))
    np.testing.assert_allclose(y.elem.numpy(), [-1.0, -1.0])
    assert "aten::neg" in LoggingTensor.log


def test_custom_op_def_register_torch_dispatch(ns):
    @library.custom_op(f"{ns}::scale", mutates_args=())
    def scale(x: bs.Tensor, k: float) -> bs.Tensor:
        return x * k

    @scale.register_torch_dispatch(LoggingTensor)
    def _(cls, func, types, args, kwargs):
        x, k = args
        return LoggingTensor(x.elem * k + 1)

    y = scale(LoggingTensor(bs.ones(2)), 3.0)
    assert isinstance(y, LoggingTensor)
    np.testing.assert_allclose(y.elem.numpy(), [4.0, 4.0])


def test_register_torch_dispatch_errors():
    with pytest.raises(TypeError, match="must be a class"):
        library.register_torch_dispatch("aten::neg", LoggingMode(), lambda *a: None)
    with pytest.raises(ValueError, match="does not exist"):
        library.register_torch_dispatch("aten::no_such_op_xyz", LoggingMode, lambda *a: None)
    with pytest.raises(TypeError, match="expected a function"):
        library.register_torch_dispatch("aten::neg", LoggingMode, 3)


# ---------------------------------------------------------------------------
# _pytree
# ---------------------------------------------------------------------------
def test_pytree_round_trip_and_map():
    Point = collections.namedtuple("Point", ["x", "y"])
    tree = {"a": [1, (2, 3)], "b": Point(4, None), "c": collections.OrderedDict(z=5)}
    leaves, spec = pytree.tree_flatten(tree)
    assert leaves == [1, 2, 3, 4, 5]  # None is a node without children
    assert pytree.tree_unflatten(leaves, spec) == tree
    assert spec.num_leaves == 5
    doubled = pytree.tree_map(lambda v: v * 2, tree)
    assert doubled == {"a": [2, (4, 6)], "b": Point(8, None), "c": collections.OrderedDict(z=10)}
    assert type(doubled["b"]) is Point
    assert pytree.tree_map(lambda a, b: a + b, [1, 2], [10, 20]) == [11, 22]
    assert pytree.tree_map_only(str, str.upper, ["a", 1, ("b",)]) == ["A", 1, ("B",)]
    assert pytree.tree_leaves([[1], [2, [3]]], is_leaf=lambda n: n == [3]) == [1, 2, [3]]
    assert pytree.tree_any(lambda v: v > 4, tree) and not pytree.tree_all(lambda v: v > 4, tree)
    assert pytree.tree_structure([1, 2]) == pytree.tree_structure([3, 4])
    assert pytree.tree_structure([1, 2]) != pytree.tree_structure((3, 4))


def test_pytree_errors_and_registration():
    _, spec = pytree.tree_flatten([1, 2])
    with pytest.raises(ValueError, match=r"`leaves` has length 3 but the spec refers to a pytree that holds 2"):
        pytree.tree_unflatten([1, 2, 3], spec)
    with pytest.raises(TypeError, match="Expected `treespec` to be instance of TreeSpec"):
        pytree.tree_unflatten([1], [1])
    with pytest.raises(ValueError, match="structure"):
        pytree.tree_map(lambda a, b: a, [1, 2], [1, 2, 3])

    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    pytree.register_pytree_node(Pair, lambda p: ([p.a, p.b], None), lambda xs, _: Pair(*xs))
    with pytest.raises(ValueError, match="already registered"):
        pytree.register_pytree_node(Pair, lambda p: ([], None), lambda xs, _: Pair(0, 0))
    out = pytree.tree_map(lambda v: v + 1, [Pair(1, 2)])
    assert (out[0].a, out[0].b) == (2, 3)
    t = bs.ones(2)
    assert pytree.tree_leaves({"t": t})[0] is t


def test_register_torch_dispatch_newest_wins_and_removal_restores():
    x = LoggingTensor(bs.ones(1))

    def rule(value):
        return lambda cls, func, types, args, kwargs: LoggingTensor(bs.full([1], value))

    with library._scoped_library("aten", "FRAGMENT") as first:
        library.register_torch_dispatch("aten::neg", LoggingTensor, rule(1.0), lib=first)
        with library._scoped_library("aten", "FRAGMENT") as second:
            library.register_torch_dispatch("aten::neg", LoggingTensor, rule(2.0), lib=second)
            assert bs.neg(x).elem.item() == 2.0
        assert bs.neg(x).elem.item() == 1.0  # the older rule is back
        with library._scoped_library("aten", "FRAGMENT") as third:
            library.register_torch_dispatch("aten::neg", LoggingTensor, rule(3.0), lib=third)
            first._destroy()  # removing an older rule leaves the newest in place
            assert bs.neg(x).elem.item() == 3.0
        # every rule gone: the class's own handler
    assert bs.neg(x).elem.item() == -1.0


def test_weight_grad_of_a_subclass_parameter_keeps_the_subclass():
    # linear's weight.t() is aten::t (TBackward0, Note [View operators]): the gradient keeps the subclass
    model = _linear(1, "cpu")
    ref = _linear(1, "cpu")
    model.weight = bs.nn.Parameter(LoggingTensor(model.weight.detach()))
    x, y = bs.randn(4, 3), bs.randn(4, 2)
    LoggingTensor.log = []
    bs.nn.functional.mse_loss(model(x), y).backward()
    assert isinstance(model.weight.grad, LoggingTensor)
    bs.nn.functional.mse_loss(ref(x), y).backward()
    np.testing.assert_allclose(model.weight.grad.elem.numpy(), ref.weight.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("view", ["select", "slice", "narrow", "index", "index_select", "take"])
def test_view_and_index_backward_of_a_subclass_keeps_the_subclass(view):
    # every formula that writes the gradient into zeros makes them from the gradient (aten::new_zeros)
    base = bs.arange(12, dtype=bs.float32).reshape(3, 4)
    apply = {
        "select": lambda t: t.select(1, 2),
        "slice": lambda t: t[1:3],
        "narrow": lambda t: t.narrow(1, 1, 2),
        "index": lambda t: t[bs.tensor([0, 2])],
        "index_select": lambda t: bs.index_select(t, 0, bs.tensor([2, 0])),
        "take": lambda t: bs.take(t, bs.tensor([0, 5, 11])),
    }[view]
    x = LoggingTensor(base, requires_grad=True)
    plain = base.clone().requires_grad_()
    out = apply(x)
    out.backward(LoggingTensor(bs.ones(out.shape)))
    apply(plain).backward(bs.ones(out.shape))
    assert isinstance(x.grad, LoggingTensor)
    np.testing.assert_allclose(x.grad.elem.numpy(), plain.grad.numpy())


def test_new_factories_are_aten_operators():
    x = bs.ones(2, 3, dtype=bs.float64, requires_grad=True)
    z = bs.ops.aten.new_zeros(x, [4])
    assert z.shape == (4,) and z.dtype == bs.float64 and not z.requires_grad and z.grad_fn is None
    np.testing.assert_array_equal(z.numpy(), np.zeros(4))
    f = bs.ops.aten.new_full(x, [2], 7, dtype=bs.int32)
    assert f.dtype == bs.int32 and f.tolist() == [7, 7]
    assert bs.ops.aten.new_ones(x, [1, 2]).tolist() == [[1.0, 1.0]]
    assert bs.ops.aten.new_empty(x, [0, 5]).shape == (0, 5)
    assert str(bs.ops.aten.new_zeros.default._schema) == (
        "aten::new_zeros(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
        "Device? device=None, bool? pin_memory=None) -> Tensor")
    seen: list = []
    with LoggingMode(sink=seen):
        bs.ops.aten.new_zeros(x, [2])
    assert seen == ["aten::new_zeros"]


# ---------------------------------------------------------------------------
# Grad mode inside handlers (Note [Grad mode and the Autograd keys])
# ---------------------------------------------------------------------------
class _GradModeProbe(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.seen.append((func.name(), bs.is_grad_enabled()))
        with bs.no_grad():  # leaving no_grad must not lift the below-autograd exclusion
            pass
        excluded = _C._dispatch_tls_local_exclude_set().has("AutogradFunctionality")
        self.seen.append(("excluded", excluded))
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("op", ["mul", "python_formula"])
def test_handler_reached_through_autograd_sees_grad_mode_on(op):
    # PyTorch: the Python key is below autograd, but grad mode is not turned off by the dispatcher
    x = bs.ones(3, requires_grad=True)
    probe = _GradModeProbe()
    with probe:
        y = x * 2 if op == "mul" else x.clone()  # clone has a Python formula (the recording hook)
    assert probe.seen[0][1] is True and probe.seen[1] == ("excluded", True)
    assert y.grad_fn is not None
    y.sum().backward()
    assert x.grad is not None and bs.is_grad_enabled()
    with probe, bs.no_grad():
        x * 2
    assert probe.seen[-2] == ("aten::mul.Tensor", False)
    assert not _C._dispatch_tls_local_exclude_set().has("AutogradFunctionality")  # everything restored


def test_grad_mode_nesting_restores_the_exclusion():
    assert bs.is_grad_enabled()
    with bs.no_grad():
        assert not bs.is_grad_enabled()
        with bs.enable_grad():
            assert bs.is_grad_enabled()
            x = bs.ones(2, requires_grad=True) * 2
            assert x.requires_grad
        assert not (bs.ones(2, requires_grad=True) * 2).requires_grad
    assert bs.is_grad_enabled() and not _C._dispatch_tls_local_exclude_set().has("AutogradFunctionality")
    with bs.inference_mode():
        assert not bs.is_grad_enabled()
    assert bs.is_grad_enabled()


# ---------------------------------------------------------------------------
# return_and_correct_aliasing
# ---------------------------------------------------------------------------
from backend_sdk.utils._python_dispatch import return_and_correct_aliasing  # noqa: E402


class AliasingTensor(bs.Tensor):
    """A wrapper subclass whose handler returns through return_and_correct_aliasing."""

    @staticmethod
    def __new__(cls, elem: bs.Tensor) -> "AliasingTensor":
        r = bs.Tensor._make_wrapper_subclass(cls, elem.shape, strides=elem.stride(),
                                             storage_offset=elem.storage_offset(), dtype=elem.dtype,
                                             device=elem.device)
        r.elem = elem
        return r

    def __tensor_flatten__(self):
        return ["elem"], None

    @staticmethod
    def __tensor_unflatten__(inner, ctx, outer_size, outer_stride):
        return AliasingTensor(inner["elem"])

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        unwrap = lambda t: t.elem if isinstance(t, AliasingTensor) else t  # noqa: E731
        out = func(*pytree.tree_map(unwrap, args), **pytree.tree_map(unwrap, kwargs))
        out = pytree.tree_map_only(bs.Tensor, AliasingTensor, out)
        return return_and_correct_aliasing(func, args, kwargs, out)


def test_return_and_correct_aliasing_in_place_out_and_views():
    x = AliasingTensor(bs.arange(6, dtype=bs.float32).reshape(2, 3))
    assert x.add_(1) is x  # an in-place op returns its input object, as PyTorch's helper does
    np.testing.assert_allclose(x.elem.numpy(), np.arange(6).reshape(2, 3) + 1)
    out = AliasingTensor(bs.empty(2, 3))
    assert bs.add(x, 1, out=out) is out
    v = x.view(6)
    assert isinstance(v, AliasingTensor) and v is not x
    assert _C._storage_id(v) == _C._storage_id(x)  # a view's wrapper shares its input's storage
    assert _C._storage_id(x * 2) != _C._storage_id(x)  # a fresh output does not
    # an in-place view op leaves the input wrapper with the new geometry
    y = AliasingTensor(bs.arange(6, dtype=bs.float32).reshape(2, 3))
    assert y.transpose_(0, 1) is y
    assert y.shape == (3, 2) and y.stride() == (1, 3) and y.elem.shape == (3, 2)


def test_return_and_correct_aliasing_checks_types():
    class Other(AliasingTensor):
        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            out = func(*[a.elem if isinstance(a, AliasingTensor) else a for a in args], **(kwargs or {}))
            return return_and_correct_aliasing(func, args, kwargs, AliasingTensor(out))

    o = Other(bs.ones(4))
    with pytest.raises(AssertionError, match="But expected types to match"):
        o.view(2, 2)
    with pytest.raises(TypeError, match="wrapper subclass"):
        _C._python_key_alias_storage(bs.ones(1), bs.ones(1))


# ---------------------------------------------------------------------------
# The C++ fallback's overloaded types (Note [Python key fallback])
# ---------------------------------------------------------------------------
def test_overloaded_types_from_lists_kwargs_and_subclass_order():
    seen: list = []

    class Base(LoggingTensor):
        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            seen.append((cls.__name__, types))
            return super().__torch_dispatch__.__func__(LoggingTensor, func, types, args, kwargs)

    class Derived(Base):
        pass

    LoggingTensor.log = []
    b, d = Base(bs.ones(2)), Derived(bs.ones(2))
    out = bs.cat([b, d, bs.ones(2)])  # Tensor[]: every element is scanned
    assert seen[-1] == ("Derived", (Derived, Base))  # a subclass before its base, whatever the order
    assert isinstance(out, LoggingTensor) and out.shape == (6,)
    seen.clear()
    bs.add(bs.ones(2), d, alpha=2)  # a plain tensor first: the subclass is still found
    assert seen == [("Derived", (Derived,))]
    seen.clear()
    bs.ones(2).add_(b)
    assert seen == [("Base", (Base,))]


def test_handlers_can_compare_operators_by_identity_equality_and_hash() -> None:
    """Note [Operator object identity]: `func is aten.add.Tensor`, set membership and packet equality, as in
    PyTorch's handlers (decomposition tables keyed by overload or packet)."""
    import backend_sdk as bs
    from backend_sdk.utils._python_dispatch import TorchDispatchMode

    aten = bs.ops.aten
    seen: list[tuple[bool, bool, bool, bool, bool]] = []

    class Checking(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            if func.name() == "aten::add.Tensor":
                seen.append((func is aten.add.Tensor, func == aten.add.Tensor, func in {aten.add.Tensor: 1},
                             func.overloadpacket == aten.add, func != aten.mul.Tensor))
            return func(*args, **(kwargs or {}))

    with Checking():
        bs.ones(2) + bs.ones(2)
    assert seen == [(True, True, True, True, True)]
    assert aten.add.Tensor != aten.add.Scalar and aten.add != aten.sub
    assert hash(aten.add.Tensor) == hash(aten.add.Tensor.overloadpacket.Tensor)
    assert (aten.add.Tensor == "aten::add.Tensor") is False  # not equal to its name
