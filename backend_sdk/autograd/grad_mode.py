"""Grad mode: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``is_grad_enabled``.

Grad mode is per thread. It is the thread-local exclusion of the
AutogradFunctionality dispatch key (Note [Autograd fallback fast path],
csrc/backend_sdk/ops/detail/Autograd.h): with grad mode off, calls skip the Autograd keys entirely.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, TypeVar

from .. import _C

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled"]

F = TypeVar("F", bound=Callable[..., Any])


def is_grad_enabled() -> bool:
    """True if operators record gradients on this thread."""
    return _C._is_grad_enabled()


class _GradModeContext:
    """Base of the grad-mode context managers; instances also decorate functions."""

    _mode: bool = True

    def __init__(self) -> None:
        self._prev: list[bool] = []

    def __enter__(self) -> None:
        self._prev.append(_C._is_grad_enabled())
        _C._set_grad_enabled(self._mode)

    def __exit__(self, *exc: Any) -> None:
        _C._set_grad_enabled(self._prev.pop())

    def clone(self) -> "_GradModeContext":
        return self.__class__()

    def __call__(self, fn: F) -> F:
        if inspect.isclass(fn):
            raise TypeError(f"{type(self).__name__} cannot decorate a class")
        if inspect.isgeneratorfunction(fn):

            @functools.wraps(fn)
            def gen_wrapper(*args: Any, **kwargs: Any) -> Any:
                gen = fn(*args, **kwargs)
                value = None
                while True:
                    with self.clone():
                        try:
                            item = gen.send(value)
                        except StopIteration as stop:
                            return stop.value
                    value = yield item

            return gen_wrapper  # type: ignore[return-value]

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


class no_grad(_GradModeContext):
    """Context manager and decorator that disables gradient recording on this thread."""

    _mode = False

    def __new__(cls, orig_func: Any = None) -> Any:
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)  # @no_grad without parentheses


class enable_grad(_GradModeContext):
    """Context manager and decorator that enables gradient recording on this thread."""

    _mode = True

    def __new__(cls, orig_func: Any = None) -> Any:
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class set_grad_enabled(_GradModeContext):
    """Sets grad mode to ``mode`` now; as a context manager, restores the previous mode on exit."""

    def __init__(self, mode: bool) -> None:
        super().__init__()
        self._entry_prev = _C._is_grad_enabled()
        self._mode = bool(mode)
        _C._set_grad_enabled(self._mode)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        _C._set_grad_enabled(self._entry_prev)

    def __call__(self, fn: F) -> F:
        _C._set_grad_enabled(self._entry_prev)  # as a decorator it only applies inside fn
        return super().__call__(fn)

    def clone(self) -> "_GradModeContext":
        return _SetGradScope(self._mode)


class _SetGradScope(_GradModeContext):
    """What a function decorated with ``set_grad_enabled(mode)`` runs under."""

    def __init__(self, mode: bool) -> None:
        super().__init__()
        self._mode = mode
