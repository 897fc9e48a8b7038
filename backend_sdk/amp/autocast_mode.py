"""``backend_sdk.autocast`` / ``backend_sdk.amp.autocast``: regions that run in mixed precision (torch.amp's API).

Note [Autocast regions]
~~~~~~~~~~~~~~~~~~~~~~~
The state is thread-local and lives in C++ (csrc/backend_sdk/ops/Autocast.h): per device type an
enabled flag and a lower-precision dtype, plus the cache flag and the nesting depth. Entering a
region saves the device type's state and sets it; leaving restores it, and the region that brings
the nesting depth back to 0 clears the weight-cast cache (Note [Autocast cache]). The casts
themselves happen in the C++ kernels at the Autocast<backend> keys (Note [Autocast],
csrc/backend_sdk/ops/Autocast.cpp). Validation follows PyTorch 2.13's ``torch.amp.autocast``: a
non-str device_type is a ValueError, an unknown one the device parser's error, a device type
without autocast (meta) a RuntimeError, an unsupported dtype a warning that disables the region;
the dtypes a privateuse backend supports come from its device module's ``get_amp_supported_dtype``.
"""

from __future__ import annotations

import collections.abc
import functools
import warnings
from typing import Any, Callable, Optional, TypeVar

from .. import _C

try:
    import numpy as _np
except ModuleNotFoundError:  # pragma: no cover - numpy is a dependency
    _np = None

__all__ = ["autocast_decorator", "autocast", "is_autocast_available", "custom_fwd", "custom_bwd"]

_F = TypeVar("_F", bound=Callable[..., Any])

# PyTorch's default CUDA device type: code written for torch names it; this SDK has no CUDA, and
# PyTorch on a machine without CUDA warns and disables the region, which is what we do.
_CUDA = "cuda"


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast is available on ``device_type`` (``"cpu"`` and every privateuse backend)."""
    return bool(_C._is_autocast_available(device_type))


def autocast_decorator(autocast_instance: "autocast", func: _F) -> _F:
    """Wraps ``func`` so that each call runs inside ``autocast_instance``."""

    @functools.wraps(func)
    def decorate_autocast(*args: Any, **kwargs: Any) -> Any:
        with autocast_instance:
            return func(*args, **kwargs)

    return decorate_autocast  # type: ignore[return-value]


def _backend_module(device_type: str) -> Any:
    import backend_sdk

    return getattr(backend_sdk, device_type, None)


class autocast:
    """A context manager (or decorator) in whose region operators run in an op-specific dtype.

    ``device_type`` is ``"cpu"`` or a backend's device type (``"accel"``); ``dtype`` defaults to
    :func:`backend_sdk.get_autocast_dtype` (cpu: bfloat16, other backends: float16);
    ``cache_enabled`` (default: the current :func:`backend_sdk.is_autocast_cache_enabled`) caches
    the casts of float32 weights within the outermost region. ``enabled=False`` regions nest inside
    enabled ones. As in PyTorch, wrap only the forward pass and the loss.
    """

    def __init__(self, device_type: str, dtype: Optional[_C.dtype] = None, enabled: bool = True,
                 cache_enabled: Optional[bool] = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device = device_type
        if device_type == _CUDA:
            # PyTorch on a machine without CUDA (amp_definitely_not_available()).
            if enabled:
                warnings.warn("User provided device_type of 'cuda', but CUDA is not available. Disabling")
            self.fast_dtype = dtype
            self._cache_enabled = _C.is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
            self._enabled = False
            return
        if dtype is None:
            dtype = _C.get_autocast_dtype(device_type)  # an unknown device type fails here, as in PyTorch
        if not is_autocast_available(self.device):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{self.device}'")
        self.fast_dtype = dtype
        self._cache_enabled = _C.is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        if self.device == "cpu":
            supported = [_C.bfloat16, _C.float16]
            if self.fast_dtype not in supported and enabled:
                message = "In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                message += "CPU Autocast only supports dtype of " + ", ".join(str(d) for d in supported) + " currently."
                warnings.warn(message)
                enabled = False
        else:
            name = self.device
            message = (f"Tried to use AMP with the `{name}` backend, but the backend has not registered a module or  "
                       "the module miss some necessary funcs. The backend should register a module by "
                       "`backend_sdk._register_device_module`, and the module must have these funcs: \n"
                       "`get_amp_supported_dtype() -> List[backend_sdk.dtype]`. \n")
            module = _backend_module(name)
            if module is None:
                raise AssertionError(message)
            if not hasattr(module, "get_amp_supported_dtype"):
                raise AssertionError(message + "But the func `get_amp_supported_dtype` is missing. \n")
            supported = list(module.get_amp_supported_dtype())
            if self.fast_dtype not in supported:
                message = f"In {name} autocast, but the target dtype is not supported. "
                message += f"Disabling autocast.\n {name} Autocast only supports dtypes of "
                message += ", ".join(str(d) for d in supported) + " currently."
                warnings.warn(message)
                enabled = False
        self._enabled = enabled

    def __enter__(self) -> None:  # PyTorch's returns None too
        if self.device == _CUDA:
            return
        self.prev_cache_enabled = _C.is_autocast_cache_enabled()
        self.prev = _C.is_autocast_enabled(self.device)
        self.prev_fastdtype = _C.get_autocast_dtype(self.device)
        _C.set_autocast_enabled(self.device, self._enabled)
        _C.set_autocast_dtype(self.device, self.fast_dtype)
        _C.autocast_increment_nesting()
        _C.set_autocast_cache_enabled(self._cache_enabled)

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> bool:
        if self.device == _CUDA:
            return False
        # Drop the cache when leaving the outermost region (Note [Autocast regions]).
        if _C.autocast_decrement_nesting() == 0:
            _C.clear_autocast_cache()
        _C.set_autocast_enabled(self.device, self.prev)
        if self.prev_fastdtype is not None:
            _C.set_autocast_dtype(self.device, self.prev_fastdtype)
        _C.set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func: _F) -> _F:
        return autocast_decorator(self, func)


def _cast(value: Any, device_type: str, dtype: _C.dtype) -> Any:
    """Casts the floating tensors (not float64) of ``device_type`` in ``value`` (nested containers too)."""
    from .._tensor import Tensor

    if isinstance(value, Tensor):
        eligible = value.is_floating_point() and value.device.type == device_type and value.dtype is not _C.float64
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes)) or (_np is not None and isinstance(value, _np.ndarray)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, collections.abc.Iterable):
        iterable = (_cast(v, device_type, dtype) for v in value)
        if isinstance(value, (list, tuple)):
            return type(value)(iterable)
        return iterable
    return value


def custom_fwd(fwd: Optional[Callable[..., Any]] = None, *, device_type: str,
               cast_inputs: Optional[_C.dtype] = None) -> Any:
    """Decorator for the ``forward`` of a custom ``autograd.Function`` (torch.amp.custom_fwd).

    With ``cast_inputs``, inside an autocast region of ``device_type`` the floating inputs are cast
    to it and ``forward`` runs with autocast disabled; without, ``forward`` runs in the current state.
    """
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args: Any, **kwargs: Any) -> Any:
        args[0]._dtype = _C.get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = _C.is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        autocast_context = _C.is_autocast_enabled(device_type)
        args[0]._fwd_used_autocast = False
        if autocast_context:
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd: Optional[Callable[..., Any]] = None, *, device_type: str) -> Any:
    """Decorator for the ``backward`` of a custom ``autograd.Function``: runs it in forward's autocast state."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args: Any, **kwargs: Any) -> Any:
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast, dtype=args[0]._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
