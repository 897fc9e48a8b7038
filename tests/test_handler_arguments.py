"""What __torch_dispatch__ handlers receive, as in PyTorch 2.13: reflected arithmetic's operators
(Note [Reflected operators], csrc/python/PyTensor.cpp), Python numbers instead of wrapped-number
tensors (Note [Wrapped numbers in handlers]) and arguments at their defaults left out (Note [Handler
arguments]). Each expected call was read from torch 2.13 under the same kind of mode."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import backend_sdk as torch
from backend_sdk.utils._python_dispatch import TorchDispatchMode


class Recording(TorchDispatchMode):
    """Records (operator, args with tensors as 'T', kwargs) and passes the call on."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, tuple, dict]] = []

    def __torch_dispatch__(self, func: Any, types: tuple, args: tuple = (), kwargs: dict | None = None) -> Any:
        shown = tuple("T" if isinstance(a, torch.Tensor) else a for a in args)
        self.calls.append((func.name(), shown, dict(kwargs or {})))
        return func(*args, **(kwargs or {}))


def calls_of(fn: Callable[[], Any]) -> list[tuple[str, tuple, dict]]:
    mode = Recording()
    with mode:
        fn()
    return mode.calls


X = torch.ones(2, 3)
I = torch.tensor([3, 5])


@pytest.mark.parametrize(
    "expr, expected",
    [
        (lambda: 1 + X, [("aten::add.Tensor", ("T", 1), {})]),
        (lambda: 2 * X, [("aten::mul.Tensor", ("T", 2), {})]),
        (lambda: 1 - X, [("aten::rsub.Scalar", ("T", 1), {})]),
        (lambda: 2 / X, [("aten::reciprocal", ("T",), {}), ("aten::mul.Tensor", ("T", 2), {})]),
        (lambda: 2 // I, [("aten::floor_divide", (2, "T"), {})]),
        (lambda: 2 % I, [("aten::remainder.Scalar_Tensor", (2, "T"), {})]),
        (lambda: 2 ** X, [("aten::pow.Scalar", (2, "T"), {})]),
        (lambda: 3 & I, [("aten::bitwise_and.Scalar", ("T", 3), {})]),
        (lambda: 3 | I, [("aten::bitwise_or.Scalar", ("T", 3), {})]),
        (lambda: 3 ^ I, [("aten::bitwise_xor.Scalar", ("T", 3), {})]),
        (lambda: X + 1, [("aten::add.Tensor", ("T", 1), {})]),
        (lambda: X * 2.5, [("aten::mul.Tensor", ("T", 2.5), {})]),
    ],
    ids=["radd", "rmul", "rsub", "rtruediv", "rfloordiv", "rmod", "rpow", "rand", "ror", "rxor", "add", "mul"],
)
def test_arithmetic_reaches_handlers_as_pytorchs(expr: Callable[[], Any], expected: list) -> None:
    assert calls_of(expr) == expected


@pytest.mark.parametrize(
    "expr, expected",
    [
        (lambda: X.sum(0), ("aten::sum.dim_IntList", ("T", [0]), {})),
        (lambda: X.sum(), ("aten::sum", ("T",), {})),
        (lambda: X.mean(0, keepdim=True), ("aten::mean.dim", ("T", [0], True), {})),
        (lambda: X.add(X, alpha=2), ("aten::add.Tensor", ("T", "T"), {"alpha": 2})),
        (lambda: X.clone(), ("aten::clone", ("T",), {})),
        (lambda: X.to(torch.float64), ("aten::_to_copy", ("T",), {"dtype": torch.float64})),
    ],
    ids=["sum-dim", "sum", "mean-keepdim", "add-alpha", "clone", "to-dtype"],
)
def test_arguments_at_their_default_are_left_out(expr: Callable[[], Any], expected: tuple) -> None:
    assert calls_of(expr)[0] == expected


def test_a_non_default_value_equal_in_python_but_of_another_type_is_kept() -> None:
    # keepdim=False is the default; the handler must not see it, but keepdim=True must stay
    assert calls_of(lambda: X.sum(0, keepdim=False))[0] == ("aten::sum.dim_IntList", ("T", [0]), {})
    assert calls_of(lambda: X.sum(0, keepdim=True))[0] == ("aten::sum.dim_IntList", ("T", [0], True), {})


def test_reflected_results_and_gradients_are_pytorchs() -> None:
    x = torch.tensor([2.0, 3.0], requires_grad=True)
    assert (1 - x).grad_fn.name() == "RsubBackward1"
    assert (2 * x).grad_fn.name() == "MulBackward0"
    assert (2 / x).grad_fn.name() == "MulBackward0"
    assert (2 ** x).grad_fn.name() == "PowBackward2"
    assert (1 + x).grad_fn.name() == "AddBackward0"
    np.testing.assert_allclose((2 / torch.tensor([3, 4])).numpy(), [2 / 3, 0.5], rtol=1e-6)
    assert (2 / torch.tensor([3, 4])).dtype == torch.float32
    assert (1 - torch.tensor([1, 2])).tolist() == [0, -1]
    assert (2 ** torch.tensor([1, 2])).tolist() == [2, 4]
    assert (2 % torch.tensor([3, 5])).tolist() == [2, 2]
    assert (2 // torch.tensor([3, 1])).tolist() == [0, 2]
    assert (True + torch.tensor([1])).tolist() == [2]
    assert (2.5 - torch.tensor([1])).tolist() == [1.5]
    (g,) = torch.autograd.grad((2 / x).sum(), x)
    np.testing.assert_allclose(g.numpy(), [-2 / 4, -2 / 9], rtol=1e-6)
    (g,) = torch.autograd.grad((1 - x).sum(), x)
    assert g.tolist() == [-1.0, -1.0]


def test_an_overload_takes_a_python_number_for_self_as_pytorchs() -> None:
    aten = torch.ops.aten
    out = aten.mul.Tensor(2, torch.ones(2))
    assert out.dtype == torch.float32 and out.tolist() == [2.0, 2.0]
    assert aten.add.Tensor(2.5, torch.ones(2, dtype=torch.int64)).tolist() == [3.5, 3.5]
    with pytest.raises(TypeError, match="aten::mul.Tensor"):
        aten.mul.Tensor("2", torch.ones(2))


def test_a_string_on_the_left_is_still_a_type_error() -> None:
    with pytest.raises(TypeError):
        "a" + X  # type: ignore[operator]
    with pytest.raises(TypeError):
        None * X  # type: ignore[operator]
