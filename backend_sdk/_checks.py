"""``torch._check`` and its siblings: assertions that raise a chosen error type with a lazily built message
(custom operators' fake kernels call them, e.g. ``torch._check(a.shape == b.shape)``)."""
from __future__ import annotations

import builtins
from typing import Any, Callable, Optional

__all__ = ["_check", "_check_index", "_check_value", "_check_type", "_check_not_implemented", "_check_with",
           "_check_is_size"]

_DEFAULT = ("Expected cond to be True, but got False. (Could this error message be improved? If so, please report "
            "an enhancement request to PyTorch.)")


def _check_with(error_type: type, cond: Any, message: Optional[Callable[[], str]] = None) -> None:
    """Raises ``error_type(message())`` (or the default text) unless ``cond`` is True; ``cond`` must be a bool."""
    from . import _C

    if not isinstance(cond, builtins.bool):
        if isinstance(cond, _C.TensorBase):
            raise TypeError("cond must be a bool, but got a Tensor. For tensor conditions, use "
                            "torch._check_tensor_all() to assert that all elements are true.")
        raise TypeError(f"cond must be a bool, but got {type(cond)}")
    if cond:
        return
    if not issubclass(error_type, Exception) or issubclass(error_type, Warning):
        raise AssertionError(f"error_type must be a subclass of Exception but not Warning, got {error_type}")
    if message is None:
        raise error_type(_DEFAULT)
    if not callable(message):
        raise TypeError("message must be a callable")
    raise error_type(str(message()))


def _check(cond: Any, message: Optional[Callable[[], str]] = None) -> None:
    """RuntimeError unless ``cond`` (``message`` is a callable returning the text)."""
    _check_with(RuntimeError, cond, message)


def _check_is_size(i: Any, message: Optional[Callable[[], str]] = None) -> None:
    """RuntimeError unless ``i >= 0`` (a size)."""
    _check(i >= 0, message)


def _check_index(cond: Any, message: Optional[Callable[[], str]] = None) -> None:
    """IndexError unless ``cond``."""
    _check_with(IndexError, cond, message)


def _check_value(cond: Any, message: Optional[Callable[[], str]] = None) -> None:
    """ValueError unless ``cond``."""
    _check_with(ValueError, cond, message)


def _check_type(cond: Any, message: Optional[Callable[[], str]] = None) -> None:
    """TypeError unless ``cond``."""
    _check_with(TypeError, cond, message)


def _check_not_implemented(cond: Any, message: Optional[Callable[[], str]] = None) -> None:
    """NotImplementedError unless ``cond``."""
    _check_with(NotImplementedError, cond, message)
