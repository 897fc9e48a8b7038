"""Functions of ``backend_sdk`` defined in Python (re-exported by ``backend_sdk/__init__.py``).

They live here rather than in ``__init__.py`` because the package namespace
binds ``bool``, ``int`` and ``float`` to dtypes (``backend_sdk.bool``, as
``torch.bool``): string annotations evaluated there (``typing.get_type_hints``)
would name the dtypes instead of the builtins.
"""
from __future__ import annotations

from typing import Any

from . import _C
from ._C import dtype
from ._ops import ops
from ._tensor import Tensor

__all__ = ["get_default_dtype", "set_default_dtype", "promote_types", "nonzero", "where"]


def get_default_dtype() -> dtype:
    """The dtype of Python floats and float factories (float32 unless changed)."""
    return _C._get_default_dtype()


def set_default_dtype(d: dtype) -> None:
    """Sets the default floating-point dtype."""
    _C._set_default_dtype(d)


def promote_types(a: dtype, b: dtype) -> dtype:
    """The smallest dtype both a and b convert to without losing their kind (PyTorch's table)."""
    return _C._promote_types(a, b)


def nonzero(input: Tensor, *, out: Tensor | None = None, as_tuple: bool = False) -> Tensor | tuple[Tensor, ...]:
    """Indices of the non-zero elements of input: a [n, ndim] int64 tensor (``aten::nonzero``), or
    with as_tuple=True one 1-D tensor per dimension (``aten::nonzero_numpy``; a 0-d input counts as 1-D)."""
    if as_tuple:
        if out is not None:
            raise TypeError("nonzero(): as_tuple=True does not take out=")
        return tuple(ops.aten.nonzero_numpy.default(input))
    if out is not None:
        return ops.aten.nonzero.out(input, out=out)
    return ops.aten.nonzero.default(input)


def where(condition: Tensor, input: Any = None, other: Any = None, *, out: Tensor | None = None) -> Any:
    """``where(condition, input, other)`` picks elements (``aten::where.self`` & co.);
    ``where(condition)`` is ``nonzero(condition, as_tuple=True)`` (``aten::where``)."""
    if input is None and other is None:
        if out is not None:
            raise TypeError("where(): where(condition) does not take out=")
        return tuple(ops.aten.where.default(condition))
    if out is not None:
        return ops.aten.where(condition, input, other, out=out)
    return ops.aten.where(condition, input, other)
