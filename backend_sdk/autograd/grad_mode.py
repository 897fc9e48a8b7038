"""Grad modes: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``, and anomaly detection
(``detect_anomaly``, ``set_detect_anomaly``), as ``torch.autograd.grad_mode`` / ``anomaly_mode``.

Grad mode is per thread: a flag of its own, and with it off the thread-local exclusion of the
AutogradFunctionality dispatch key (Note [Autograd fallback fast path],
csrc/backend_sdk/ops/detail/Autograd.h), so calls skip the Autograd keys entirely. Autograd's own
below-autograd regions exclude the key without changing the flag: a ``__torch_dispatch__`` handler reached
through autograd sees ``is_grad_enabled()`` True, as in PyTorch (Note [Grad mode and the Autograd keys],
csrc/backend_sdk/autograd/Fallback.cpp).
Inference mode is per thread too: grad mode off plus the flag that makes new tensors inference tensors
(Note [Inference tensors], csrc/backend_sdk/tensor/TensorImpl.h). Anomaly mode is process-wide
(Note [Anomaly mode], backend_sdk/autograd/_graph_api.py).

Every mode object is also a decorator (PyTorch's ``_DecoratorContextManager``): of a function (each call
runs in the mode), of a generator function (the mode is entered around every resumption of the
generator, including ``throw()`` and ``close()``, and left while the caller runs), and, deprecated as in
PyTorch, of a class (its construction runs in the mode, with a FutureWarning).
"""
from __future__ import annotations

import functools
import inspect
import sys
import warnings
from typing import Any, Callable, TypeVar

from .. import _C
from . import _graph_api

__all__ = [
    "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode", "is_inference_mode_enabled",
    "is_inference",
    "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
    "set_anomaly_enabled",
]

F = TypeVar("F", bound=Callable[..., Any])


def is_grad_enabled() -> bool:
    """True if operators record gradients on this thread."""
    return _C._is_grad_enabled()


def is_inference_mode_enabled() -> bool:
    """True while inference mode is on on this thread."""
    return _C._is_inference_mode_enabled()


def is_inference(tensor: Any) -> bool:
    """True for an inference tensor: one allocated in inference mode, or a view of one (Note [Inference
    tensors]). Also ``Tensor.is_inference()``."""
    if not isinstance(tensor, _C.TensorBase):
        raise TypeError(f"is_inference(): argument 'input' (position 1) must be Tensor, not {type(tensor).__name__}")
    return _C._is_inference(tensor)


def _in_mode_generator(make_ctx: Callable[[], Any], fn: Callable) -> Callable:
    """A generator function running each step of fn's generators inside a fresh make_ctx()."""

    @functools.wraps(fn)
    def generator(*args: Any, **kwargs: Any) -> Any:
        gen = fn(*args, **kwargs)
        try:
            with make_ctx():
                item = next(gen)
            while True:
                try:
                    sent = yield item
                except GeneratorExit:
                    with make_ctx():
                        gen.close()  # the generator's cleanup runs in the mode too
                    raise
                except BaseException:
                    with make_ctx():
                        item = gen.throw(*sys.exc_info())
                else:
                    with make_ctx():
                        item = gen.send(sent)
        except StopIteration as stop:
            return stop.value

    return generator


class _DecoratorContextManager:
    """Base of the mode context managers; instances also decorate functions, generators and classes."""

    def clone(self) -> "_DecoratorContextManager":
        """A fresh context manager with the same setting (one is entered per call of a decorated function)."""
        return self.__class__()

    def __enter__(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def __exit__(self, *exc: Any) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def __call__(self, fn: F) -> F:
        if inspect.isclass(fn):
            warnings.warn(
                "Decorating classes is deprecated and will be disabled in future versions. You should only "
                "decorate functions or methods. To preserve the current behavior of class decoration, you can "
                "directly decorate the `__init__` method and nothing else.",
                FutureWarning,
                stacklevel=2,
            )
            cls = fn

            def fn(*args: Any, **kwargs: Any) -> Any:  # type: ignore[no-redef]
                return cls(*args, **kwargs)

        if inspect.isgeneratorfunction(fn):
            return _in_mode_generator(self.clone, fn)  # type: ignore[return-value]

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


class _GradModeContext(_DecoratorContextManager):
    """A context manager setting grad mode to ``_mode`` (restoring the previous one on exit)."""

    _mode: bool = True

    def __init__(self) -> None:
        self._prev: list[bool] = []

    def __enter__(self) -> None:
        self._prev.append(_C._is_grad_enabled())
        _C._set_grad_enabled(self._mode)

    def __exit__(self, *exc: Any) -> None:
        _C._set_grad_enabled(self._prev.pop())


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


class set_grad_enabled(_DecoratorContextManager):
    """Sets grad mode to ``mode`` now; as a context manager, restores the previous mode on exit; as a
    decorator, applies only inside the decorated function."""

    def __init__(self, mode: bool) -> None:
        self.prev = _C._is_grad_enabled()
        self.mode = bool(mode)
        _C._set_grad_enabled(self.mode)

    def __call__(self, fn: F) -> F:
        _C._set_grad_enabled(self.prev)  # as a decorator it only applies inside fn
        return super().__call__(fn)

    def __enter__(self) -> None:
        _C._set_grad_enabled(self.mode)

    def __exit__(self, *exc: Any) -> None:
        _C._set_grad_enabled(self.prev)

    def clone(self) -> "set_grad_enabled":
        return self.__class__(self.mode)

    def __repr__(self) -> str:
        return f"backend_sdk.autograd.grad_mode.set_grad_enabled(mode={self.mode})"


class inference_mode(_DecoratorContextManager):
    """Context manager and decorator for inference mode (``mode=True``) or out of it (``mode=False``).

    In inference mode grad mode is off and every tensor allocated is an inference tensor (Note [Inference
    tensors]): it has no version counter, cannot be saved for backward and cannot be written in place
    outside inference mode. ``inference_mode(False)`` turns both off (grad mode on) until it exits.
    """

    def __init__(self, mode: bool = True) -> None:
        self.mode = bool(mode)
        self._prev: list[tuple[bool, bool]] = []

    def __new__(cls, mode: Any = True) -> Any:
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)  # @inference_mode without parentheses

    def __enter__(self) -> None:
        self._prev.append((_C._is_grad_enabled(), _C._set_inference_mode_enabled(self.mode)))
        _C._set_grad_enabled(not self.mode)

    def __exit__(self, *exc: Any) -> None:
        grad, inference = self._prev.pop()
        _C._set_inference_mode_enabled(inference)
        _C._set_grad_enabled(grad)

    def clone(self) -> "inference_mode":
        return self.__class__(self.mode)


# ---- anomaly detection (Note [Anomaly mode]) ------------------------------------------------------------
def is_anomaly_enabled() -> bool:
    """True while anomaly detection is on."""
    return _graph_api._anomaly[0]


def is_anomaly_check_nan_enabled() -> bool:
    """True while anomaly detection also refuses backward outputs with NaN."""
    return _graph_api._anomaly[1]


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turns anomaly detection on or off (PyTorch's ``torch.set_anomaly_enabled``)."""
    _graph_api._anomaly[:] = [bool(enabled), bool(check_nan)]
    _C._set_anomaly_apply(_graph_api._apply_with_anomaly if enabled else None)  # the C++ engine's Python nodes


class detect_anomaly:
    """Context manager that turns anomaly detection on: nodes remember the traceback of the forward call
    that created them, an error in a node's backward warns with it, and (``check_nan``) a backward output
    containing NaN raises ``RuntimeError("Function 'XBackward0' returned nan values in its 0th output.")``."""

    def __init__(self, check_nan: bool = True) -> None:
        self.prev = is_anomaly_enabled()
        self.check_nan = check_nan
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                      "enabled for debugging.", stacklevel=2)

    def __enter__(self) -> None:
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *exc: Any) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)


class set_detect_anomaly:
    """Sets anomaly detection on or off now (a function call), or for a ``with`` block."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = is_anomaly_enabled()
        self.prev_check_nan = is_anomaly_check_nan_enabled()
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)


def _install_tensor_methods() -> None:
    from .._tensor import Tensor

    def tensor_is_inference(self: Any) -> bool:
        """True for an inference tensor (see backend_sdk.is_inference)."""
        return _C._is_inference(self)

    Tensor.is_inference = tensor_is_inference


_install_tensor_methods()
