"""``backend_sdk.accelerator``: the device-generic runtime API of the current accelerator (``torch.accelerator``).

The current accelerator is the first PrivateUse backend with a device attached
(Note [Current accelerator] in ``_utils.py``); every function works on it,
whatever its name, so code written for ``torch.accelerator`` carries over::

    import backend_sdk, accel
    backend_sdk.accelerator.current_accelerator()     # device(type='accel')
    with backend_sdk.accelerator.device_index(1):
        s = backend_sdk.Stream()                       # a stream of accel:1
"""
from __future__ import annotations

import warnings
from typing import Any, Optional

from .. import _C
from .._streams import Stream
from . import memory
from ._graphs import Graph
from ._utils import (
    _accelerator_type, _check_index, _current_stream_of, _device_t, _get_device_index,
    _require_accelerator, _set_stream,
)
from .memory import (
    empty_cache, empty_host_cache, get_memory_info, max_memory_allocated, max_memory_reserved, memory_allocated,
    memory_reserved, memory_stats, reset_accumulated_memory_stats, reset_peak_memory_stats,
)

_rt = _C._runtime

__all__ = [
    "Graph", "current_accelerator", "current_device_idx", "current_device_index", "current_stream", "device_count",
    "device_index", "empty_cache", "empty_host_cache", "get_device_capability", "get_memory_info", "is_available",
    "max_memory_allocated", "max_memory_reserved", "memory", "memory_allocated", "memory_reserved", "memory_stats",
    "reset_accumulated_memory_stats", "reset_peak_memory_stats", "set_device_idx", "set_device_index", "set_stream",
    "synchronize",
]


def current_accelerator(check_available: bool = False) -> Optional[_C.device]:
    """The current accelerator as a device with no index, or None if there is none
    (with ``check_available``, also None when it has no device)."""
    acc = _accelerator_type()
    if acc is None or (check_available and not is_available()):
        return None
    return _C.device(acc)


def device_count() -> int:
    """The number of devices of the current accelerator (0 if there is none)."""
    acc = _accelerator_type()
    return 0 if acc is None else _rt.device_count(acc)


def is_available() -> bool:
    """True if there is a current accelerator with at least one device."""
    return device_count() > 0


def current_device_index() -> int:
    """This thread's current device index of the current accelerator."""
    return _rt.current_device(_require_accelerator())


def current_device_idx() -> int:
    """(Deprecated) :func:`current_device_index`."""
    warnings.warn("Use `current_device_index` instead.", FutureWarning, stacklevel=2)
    return current_device_index()


def set_device_index(device: _device_t, /) -> None:
    """Makes ``device`` (an index, or a device of the current accelerator with an index) this thread's
    current device; a negative index does nothing. RuntimeError for an index out of range."""
    acc = _require_accelerator()
    index = _get_device_index(device, optional=False)
    if index < 0:
        return
    _check_index(acc, index)
    _rt.set_device(f"{acc}:{index}")


def set_device_idx(device: _device_t, /) -> None:
    """(Deprecated) :func:`set_device_index`."""
    warnings.warn("Use `set_device_index` instead.", FutureWarning, stacklevel=2)
    set_device_index(device)


class device_index:
    """Makes a device index current for the block and restores the previous one on exit (also on an
    exception); ``device_index(None)`` changes nothing."""

    def __init__(self, device: Optional[int], /) -> None:
        self.idx = device
        self.prev_idx = -1

    def __enter__(self) -> None:
        if self.idx is not None:
            self.prev_idx = current_device_index()
            set_device_index(self.idx)

    def __exit__(self, *exc_info: object) -> None:
        if self.idx is not None:
            set_device_index(self.prev_idx)


def current_stream(device: _device_t = None, /) -> Stream:
    """The current stream of a device of the current accelerator (its current device if None)."""
    acc = _require_accelerator()
    index = _get_device_index(device, optional=True)
    _check_index(acc, index)
    return _current_stream_of(acc, index)


def set_stream(stream: Stream) -> None:
    """Makes ``stream`` the current stream of its device, and its device the current device."""
    acc = _require_accelerator()
    if not isinstance(stream, _rt.Stream):
        raise TypeError(f"set_stream: expected a backend_sdk.Stream, got {type(stream).__name__}")
    if stream.device.type != acc:
        raise ValueError(f"set_stream: {stream} is not a stream of the current accelerator {acc}")
    _set_stream(stream)


def synchronize(device: _device_t = None, /) -> None:
    """Waits for all work on every stream of a device (its current device if None); does nothing without an
    accelerator. Raises AcceleratorError for a pending device fault."""
    acc = _accelerator_type()
    if acc is None:
        return
    index = _get_device_index(device, optional=True)
    _check_index(acc, index)
    _rt.synchronize(f"{acc}:{index}")


def _all_dtypes() -> dict[int, Any]:
    import backend_sdk

    return {d._id: d for d in vars(backend_sdk).values() if isinstance(d, _C.dtype)}


def get_device_capability(device: _device_t = None, /) -> dict[str, Any]:
    """What a device supports: ``{"supported_dtypes": set of dtypes}`` (from the device contract's
    ``supported_dtypes`` bits)."""
    acc = _require_accelerator()
    index = _get_device_index(device, optional=True)
    _check_index(acc, index)
    bits = _rt.get_device_properties(f"{acc}:{index}")["supported_dtypes"]
    return {"supported_dtypes": {d for i, d in _all_dtypes().items() if bits >> i & 1}}


