"""Derivative formulas written in Python, keyed by operator overload ("aten::cat"), and what the
Python recording hook needs besides them.

Every formula of the operator library lives in csrc/backend_sdk/autograd/derivatives.def (Note
[Derivative formula table]); an overload is written in one place only (tests/test_autograd_cpp_formulas.py
checks). FORMULAS is where a formula written in Python would go (none is today); custom operators
register theirs with backend_sdk.library.register_autograd and autograd.Function defines its own.

A formula receives a FormulaCtx ``c``: ``c["name"]`` is a forward argument (a
saved tensor, checked against its version, for names in ``saves``; for other
tensors a TensorMeta with shape/dtype/device; numbers and lists as passed),
``c.result`` the forward output(s) when ``"result"`` is in ``saves``,
``c.g`` / ``c.grads`` the gradients of the outputs (zeros where none flowed),
and ``c.needs`` the names of the arguments that require grad. It returns a
dict of argument name to gradient (a list for Tensor[] arguments). Gradients
are then reduced to the input's shape (broadcasting) and cast to its dtype and
device by the node, so formulas need not do that. Formulas call operators, so
with create_graph=True their own graph is recorded (double backward).

In-place variants (``add_.Tensor``) use the functional formula; composite
operators (CompositeImplicitAutograd: matmul, linear, cross_entropy, ...) need
none, since their gradient comes from the operators they call.
"""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["FORMULAS", "Formula", "INPLACE_NODE_NAMES", "NOT_DIFFERENTIABLE", "sum_to"]


class Formula:
    """A derivative formula and the argument names (and ``"result"``) it saves."""

    __slots__ = ("fn", "saves", "node_name")

    def __init__(self, fn: Callable, saves: tuple[str, ...], node_name: str | None = None) -> None:
        self.fn, self.saves, self.node_name = fn, frozenset(saves), node_name

    def __call__(self, ctx: Any) -> Any:
        return self.fn(ctx)


FORMULAS: dict[str, Formula] = {}


def formula(*names: str, saves: tuple[str, ...] = ()) -> Callable:
    """Registers the decorated function as the Python formula of the overloads `names` ("cat" or "aten::cat")."""

    def register(fn: Callable) -> Callable:
        f = Formula(fn, saves)
        for n in names:
            FORMULAS[n if "::" in n else "aten::" + n] = f
        return fn

    return register


def _B() -> Any:
    import backend_sdk

    return backend_sdk


def _ops() -> Any:
    return _B().ops.aten


def sum_to(g: Any, shape: Any) -> Any:
    """Sums g over the dimensions broadcasting added or expanded to reach its shape from `shape`."""
    shape = tuple(shape)
    if tuple(g.shape) == shape:
        return g
    lead = g.dim() - len(shape)
    dims = list(range(lead)) + [lead + i for i, s in enumerate(shape) if s == 1 and g.shape[lead + i] != 1]
    if dims:
        g = _ops().sum.dim_IntList(g, dims, True)
    return g.reshape(list(shape))


# Every formula of the operator library is in derivatives.def now: views and shape ops (Note [View
# operators]), the Tensor[] returns unbind / split / chunk (Note [Tensor lists in the formula table]),
# copy (CopyBackwards, which copy_ runs), the in-place samplers (Note [In-place entries in the formula
# table]), and the operators PyTorch does not differentiate (Note [Operators that are not
# differentiable]). FORMULAS stays for formulas written in Python (none in the library today).


def _not_differentiable() -> frozenset:
    from .. import _C

    return frozenset(_C._autograd_not_differentiable_ops())


# Outputs PyTorch does not differentiate (fresh samples shaped like their input, constants, detach):
# the C++ fallback runs them below Autograd; this is the table's list, for coverage reports.
NOT_DIFFERENTIABLE = _not_differentiable()


# In-place overloads whose node PyTorch names apart from the functional formula's (derivatives.yaml lists
# them as entries of their own: t_ is TBackward1, t is TBackward0).
INPLACE_NODE_NAMES = {
    "aten::t_": "TBackward1",
    "aten::transpose_": "TransposeBackward1",
    "aten::squeeze_": "SqueezeBackward3",
    "aten::squeeze_.dim": "SqueezeBackward4",
    "aten::squeeze_.dims": "SqueezeBackward5",
    "aten::unsqueeze_": "UnsqueezeBackward1",
    "aten::as_strided_": "AsStridedBackward1",
    "aten::fill_.Scalar": "FillBackward2",
}


# In-place overloads whose functional twin has a different overload name.
INPLACE_KEYS = {
    "aten::transpose_": "aten::transpose.int",
    "aten::pow_.Scalar": "aten::pow.Tensor_Scalar",
    "aten::pow_.Tensor": "aten::pow.Tensor_Tensor",
}

