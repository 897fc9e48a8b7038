"""FakeTensorMode is a TorchDispatchMode, an infra mode below every user mode (Note [Infra modes],
backend_sdk/_python_dispatch_impl.py), with PyTorch 2.13's observable behaviour: which mode sees a call
first, what the mode-stack functions return, nesting, and subclasses reaching the fake mode."""
from __future__ import annotations

from typing import Any

import pytest

import backend_sdk as torch
from backend_sdk._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from backend_sdk.utils._python_dispatch import (
    TorchDispatchMode,
    _get_current_dispatch_mode,
    _get_current_dispatch_mode_stack,
    _len_torch_dispatch_stack,
    _pop_mode,
    _pop_mode_temporarily,
    _push_mode,
)

aten = torch.ops.aten


class Logging(TorchDispatchMode):
    """Records (operator name, argument types) of every call it sees, then passes it on."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, list[str]]] = []

    def __torch_dispatch__(self, func: Any, types: tuple, args: tuple = (), kwargs: dict | None = None) -> Any:
        self.calls.append((func.name(), [type(a).__name__ for a in args]))
        return func(*args, **(kwargs or {}))


def test_fake_tensor_mode_is_an_infra_torch_dispatch_mode() -> None:
    assert issubclass(FakeTensorMode, TorchDispatchMode)
    assert FakeTensorMode.is_infra_mode() is True
    assert TorchDispatchMode.is_infra_mode() is False


def test_alone_it_is_the_current_mode() -> None:
    assert _get_current_dispatch_mode() is None
    with FakeTensorMode() as m:
        assert _get_current_dispatch_mode() is m
        assert _get_current_dispatch_mode_stack() == [m]
        assert _len_torch_dispatch_stack() == 1
        x = torch.empty(3)
        assert type(x) is FakeTensor and x.fake_mode is m
    assert _get_current_dispatch_mode() is None and _len_torch_dispatch_stack() == 0
    assert type(torch.empty(3)) is not FakeTensor


@pytest.mark.parametrize("fake_first", [True, False], ids=["fake-entered-first", "fake-entered-last"])
def test_a_user_mode_sees_every_call_before_the_fake_mode_in_either_order(fake_first: bool) -> None:
    fake, log = FakeTensorMode(), Logging()
    outer, inner = (fake, log) if fake_first else (log, fake)
    with outer, inner:
        x = torch.empty(3)
        y = x + 1
        assert _get_current_dispatch_mode() is log
        assert _get_current_dispatch_mode_stack() == [fake, log]
        assert _len_torch_dispatch_stack() == 2
    assert type(x) is FakeTensor and type(y) is FakeTensor and tuple(y.shape) == (3,)
    # the user mode saw the factory and the add, the add with a fake tensor argument
    assert log.calls == [("aten::empty.memory_format", ["list"]), ("aten::add.Tensor", ["FakeTensor", "int"])]


def test_a_fake_tensor_outside_the_mode_reaches_a_user_mode_first() -> None:
    with FakeTensorMode():
        y = torch.empty(2, 2)
    log = Logging()
    with log:
        z = y * 2
    assert type(z) is FakeTensor and tuple(z.shape) == (2, 2)
    assert log.calls == [("aten::mul.Tensor", ["FakeTensor", "int"])]


def test_user_modes_do_not_see_the_calls_inside_a_fake_kernel() -> None:
    lib = torch.library.Library("fake_stack_ns", "DEF")
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda x: x * 2, "CPU")

    @torch.library.register_fake("fake_stack_ns::twice", lib=lib)
    def _(x: Any) -> Any:
        return x.new_empty(x.shape)  # an operator call of the fake kernel's own

    log = Logging()
    with FakeTensorMode(), log:
        out = torch.ops.fake_stack_ns.twice(torch.empty(4))
    assert type(out) is FakeTensor and tuple(out.shape) == (4,)
    assert [name for name, _ in log.calls] == ["aten::empty.memory_format", "fake_stack_ns::twice"]


def test_a_second_fake_mode_replaces_the_first_until_it_exits() -> None:
    with FakeTensorMode() as m:
        with FakeTensorMode() as m2:
            assert _len_torch_dispatch_stack() == 1
            assert _get_current_dispatch_mode() is m2
            assert torch.empty(2).fake_mode is m2
        assert _get_current_dispatch_mode() is m
        assert _len_torch_dispatch_stack() == 1
    assert _len_torch_dispatch_stack() == 0


def test_the_fake_mode_can_exit_while_a_user_mode_is_active() -> None:
    fake, log = FakeTensorMode(), Logging()
    fake.__enter__()
    log.__enter__()
    fake.__exit__(None, None, None)
    assert _get_current_dispatch_mode_stack() == [log]
    assert type(torch.empty(2)) is not FakeTensor  # no fake mode left: the user mode's call is real
    log.__exit__(None, None, None)
    assert _len_torch_dispatch_stack() == 0


def test_exit_without_enter_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="without a matching __enter__"):
        FakeTensorMode().__exit__(None, None, None)


def test_pop_and_push_take_user_modes_first_then_the_infra_mode() -> None:
    with FakeTensorMode() as m:
        popped = _pop_mode()
        assert popped is m and _len_torch_dispatch_stack() == 0
        assert type(torch.empty(2)) is not FakeTensor
        _push_mode(popped)
        assert _len_torch_dispatch_stack() == 1 and type(torch.empty(2)) is FakeTensor
        with Logging() as log:
            assert _pop_mode() is log
            assert _pop_mode() is m
            assert _len_torch_dispatch_stack() == 0
            _push_mode(m)
            _push_mode(log)
            assert _get_current_dispatch_mode_stack() == [m, log]
            with _pop_mode_temporarily() as top:
                assert top is log and _len_torch_dispatch_stack() == 1
            assert _get_current_dispatch_mode_stack() == [m, log]
    assert _len_torch_dispatch_stack() == 0
    with pytest.raises(AssertionError, match="empty mode stack"):
        _pop_mode()


def test_its_handler_can_be_called_directly_and_extended() -> None:
    mode = FakeTensorMode()
    f = mode.from_tensor(torch.ones(2, 3))
    out = mode.__torch_dispatch__(aten.add.Tensor, (), (f, f), {})
    assert type(out) is FakeTensor and tuple(out.shape) == (2, 3)
    real = torch.ones(5)
    out = mode.__torch_dispatch__(aten.neg.default, (), (real,), {})  # real inputs are converted
    assert type(out) is FakeTensor and tuple(out.shape) == (5,)

    class Counting(FakeTensorMode):
        def __init__(self) -> None:
            super().__init__()
            self.names: list[str] = []

        def __torch_dispatch__(self, func: Any, types: tuple, args: tuple = (), kwargs: dict | None = None) -> Any:
            self.names.append(func.name())
            return super().__torch_dispatch__(func, types, args, kwargs)

    with Counting() as counting:
        x = torch.empty(3, 4)
        y = (x @ x.t()).relu()
    assert type(y) is FakeTensor and tuple(y.shape) == (3, 3)
    assert {"aten::empty.memory_format", "aten::t", "aten::mm", "aten::relu"} <= set(counting.names)


def test_allow_non_fake_inputs_false_refuses_a_real_tensor() -> None:
    from backend_sdk._subclasses.fake_tensor import UnsupportedFakeTensorException

    real = torch.ones(2)
    with FakeTensorMode(allow_non_fake_inputs=False):
        with pytest.raises(UnsupportedFakeTensorException, match="aten::add.Tensor"):
            real + 1


class Wrapper(torch.Tensor):
    """A wrapper subclass over a real tensor: its handler unwraps and calls the operator on the inner one."""

    seen: list[list[str]] = []

    @staticmethod
    def __new__(cls, inner: Any) -> "Wrapper":
        return torch.Tensor._make_wrapper_subclass(cls, inner.shape, dtype=inner.dtype, device=inner.device)

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: tuple, args: tuple = (), kwargs: dict | None = None) -> Any:
        cls.seen.append([type(a).__name__ for a in args])
        return func(*[a.inner if isinstance(a, Wrapper) else a for a in args], **(kwargs or {}))


def test_a_wrapper_subclass_runs_its_handler_before_the_fake_mode() -> None:
    Wrapper.seen = []
    w = Wrapper(torch.ones(3))
    with FakeTensorMode():
        out = w + 1
    # the fake mode declined (NotImplemented) for the subclass; its handler's call on the real inner
    # tensor then came back to the fake mode
    assert Wrapper.seen == [["Wrapper", "int"]]
    assert type(out) is FakeTensor and tuple(out.shape) == (3,)


def test_autograd_under_the_fake_mode_gives_fake_gradients() -> None:
    with FakeTensorMode():
        w = torch.empty(4, 3).requires_grad_()
        x = torch.empty(2, 4)
        (x @ w).relu().sum().backward()
    assert type(w.grad) is FakeTensor and tuple(w.grad.shape) == (4, 3)


def test_modes_are_per_thread() -> None:
    import threading

    seen: dict[str, Any] = {}
    with FakeTensorMode():
        def other() -> None:
            seen["mode"] = _get_current_dispatch_mode()
            seen["type"] = type(torch.empty(1))

        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert seen["mode"] is None and seen["type"] is not FakeTensor
