"""``__torch_dispatch__`` modes and wrapper-subclass helpers, as ``torch.utils._python_dispatch``.

A ``TorchDispatchMode`` sees every operator call below autograd while it is active
(``with mode:``); a Tensor subclass with ``__torch_dispatch__`` made by
``Tensor._make_wrapper_subclass`` sees every call that has one of its instances as an
argument. How calls reach them, their order, and the error when all of them decline:
Note [Python dispatch] (backend_sdk/_python_dispatch_impl.py); docs/python_dispatch.md.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable

from .. import _python_dispatch_impl as _impl
from .._tensor import Tensor

__all__ = [
    "TorchDispatchMode",
    "is_traceable_wrapper_subclass",
    "is_traceable_wrapper_subclass_type",
    "transform_subclass",
]


class TorchDispatchMode:
    """A context manager whose ``__torch_dispatch__(func, types, args=(), kwargs=None)`` runs every operator
    called while it is active, as PyTorch's.

    ``func`` is the ``OpOverload`` (``func.overloadpacket``, ``func._schema``, ``func.name()``), ``types``
    the tensor subclasses with ``__torch_dispatch__`` among the arguments. The handler runs with this mode
    popped, so ``func(*args, **(kwargs or {}))`` inside it goes to the next mode (or the tensors' own
    handlers, or the backend). Modes nest: the innermost sees a call first. Subclasses override
    ``__torch_dispatch__``; returning ``NotImplemented`` passes the call on to the subclasses' handlers.
    """

    def __init__(self, _dispatch_key: Any = None) -> None:
        if _dispatch_key is not None:
            raise NotImplementedError("TorchDispatchMode(_dispatch_key=...): per-key (pre-dispatch) modes are not "
                                      "supported; the mode runs at the Python key")

    def __torch_dispatch__(self, func: Any, types: tuple, args: tuple = (), kwargs: dict | None = None) -> Any:
        """Runs ``func`` (an operator overload) on ``args``/``kwargs``; subclasses must override it."""
        raise NotImplementedError()

    def __enter__(self) -> "TorchDispatchMode":
        _impl._push_mode(self)
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        _impl._pop_mode()

    @classmethod
    def push(cls, *args: Any, **kwargs: Any) -> "TorchDispatchMode":
        """Deprecated in PyTorch: returns a new mode (enter it with ``with``)."""
        warnings.warn("`Mode.push()` is no longer necessary and can be replaced with just `with Mode()`",
                      stacklevel=2)
        return cls(*args, **kwargs)

    @classmethod
    def is_infra_mode(cls) -> bool:
        """False: user modes (PyTorch's infra modes, proxy/fake, return True)."""
        return False


def _get_current_dispatch_mode() -> TorchDispatchMode | None:
    """The innermost active TorchDispatchMode of this thread, or None."""
    stack = _impl._mode_stack()
    return stack[-1] if stack else None


def _get_current_dispatch_mode_stack() -> list[TorchDispatchMode]:
    """This thread's active modes, outermost first (a copy)."""
    return list(_impl._mode_stack())


def _push_mode(mode: TorchDispatchMode) -> None:
    """Makes mode the innermost active mode (what ``__enter__`` does)."""
    _impl._push_mode(mode)


def _pop_mode() -> TorchDispatchMode:
    """Removes and returns the innermost active mode."""
    return _impl._pop_mode()


_pop_mode_temporarily = _impl._pop_mode_temporarily


def _len_torch_dispatch_stack() -> int:
    """How many modes are active on this thread."""
    return len(_impl._mode_stack())


def is_traceable_wrapper_subclass(t: object) -> bool:
    """True if t is an instance of a Tensor subclass with ``__tensor_flatten__`` and ``__tensor_unflatten__``."""
    return isinstance(t, Tensor) and is_traceable_wrapper_subclass_type(type(t))


def is_traceable_wrapper_subclass_type(t: type) -> bool:
    """True if t is a Tensor subclass (not Tensor) with ``__tensor_flatten__`` and ``__tensor_unflatten__``."""
    return (isinstance(t, type) and issubclass(t, Tensor) and t is not Tensor
            and hasattr(t, "__tensor_flatten__") and hasattr(t, "__tensor_unflatten__"))


def transform_subclass(t: Tensor, callback: Callable[[str, Tensor], Tensor], outer_size: Any = None,
                       outer_stride: Any = None) -> Tensor:
    """A new instance of t's class whose inner tensors are ``callback(name, inner)``: flattens t with
    ``__tensor_flatten__`` and rebuilds it with ``__tensor_unflatten__`` (moving a subclass to another
    device, detaching its parts...)."""
    if not is_traceable_wrapper_subclass(t):
        raise TypeError(f"transform_subclass(): expected a traceable wrapper subclass (a Tensor subclass with "
                        f"__tensor_flatten__ and __tensor_unflatten__), got {type(t).__qualname__}")
    outer_size = tuple(t.shape) if outer_size is None else outer_size
    outer_stride = tuple(t.stride()) if outer_stride is None else outer_stride
    attrs, ctx = t.__tensor_flatten__()  # type: ignore[attr-defined]
    transformed = {attr: callback(attr, getattr(t, attr)) for attr in attrs}
    sub = type(t).__tensor_unflatten__(transformed, ctx, outer_size, outer_stride)  # type: ignore[attr-defined]
    if tuple(sub.shape) != tuple(outer_size):
        raise AssertionError(f"Expected return value from {type(t).__qualname__}__tensor_unflatten__() to have "
                             f"shape equal to {tuple(outer_size)}, but got: {tuple(sub.shape)}")
    return sub
