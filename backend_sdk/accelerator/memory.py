"""``backend_sdk.accelerator.memory``: the caching allocator of the current accelerator (``torch.accelerator.memory``).

Each function takes the device as an index, a string or a ``backend_sdk.device``
of the current accelerator (None: its current device). With no accelerator
the queries return 0 / an empty dict and the resets and ``empty_cache`` do
nothing, as PyTorch's on a CPU-only install.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any

from .. import _C
from ._utils import _accelerator_type, _device_t, _get_device_index

_rt = _C._runtime

__all__ = [
    "empty_cache", "empty_host_cache", "get_memory_info", "max_memory_allocated", "max_memory_reserved",
    "memory_allocated", "memory_reserved", "memory_stats", "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
]


def empty_cache() -> None:
    """Returns the cached, unused device memory of the current accelerator to its devices."""
    acc = _accelerator_type()
    if acc is not None:
        _rt.empty_cache(acc)


def empty_host_cache() -> None:
    """Returns the cached pinned host memory of the current accelerator (after its pending uses completed)."""
    acc = _accelerator_type()
    if acc is not None:
        _rt.host_empty_cache(acc)


def memory_stats(device_index: _device_t = None, /) -> "OrderedDict[str, Any]":
    """The caching allocator's statistics of a device, with PyTorch's flat keys
    (``"allocated_bytes.all.current"``, ...), sorted by key."""
    acc = _accelerator_type()
    if acc is None:
        return OrderedDict()
    index = _get_device_index(device_index, optional=True)
    return OrderedDict(sorted(_rt.memory_stats(f"{acc}:{index}").items()))


def memory_allocated(device_index: _device_t = None, /) -> int:
    """Bytes held by live tensors on a device."""
    return memory_stats(device_index).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device_index: _device_t = None, /) -> int:
    """Peak of :func:`memory_allocated` since the start or the last :func:`reset_peak_memory_stats`."""
    return memory_stats(device_index).get("allocated_bytes.all.peak", 0)


def memory_reserved(device_index: _device_t = None, /) -> int:
    """Bytes the caching allocator holds from a device (allocated plus cached)."""
    return memory_stats(device_index).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device_index: _device_t = None, /) -> int:
    """Peak of :func:`memory_reserved`."""
    return memory_stats(device_index).get("reserved_bytes.all.peak", 0)


def reset_accumulated_memory_stats(device_index: _device_t = None, /) -> None:
    """Zeroes the accumulated (allocated/freed) counters of a device."""
    acc = _accelerator_type()
    if acc is not None:
        _rt.reset_accumulated_memory_stats(f"{acc}:{_get_device_index(device_index, optional=True)}")


def reset_peak_memory_stats(device_index: _device_t = None, /) -> None:
    """Sets the peak statistics of a device to their current values."""
    acc = _accelerator_type()
    if acc is not None:
        _rt.reset_peak_memory_stats(f"{acc}:{_get_device_index(device_index, optional=True)}")


def get_memory_info(device_index: _device_t = None, /) -> tuple[int, int]:
    """(free, total) bytes of a device (free: what the device reports, else total minus this process's
    reserved memory). RuntimeError with no accelerator."""
    from ._utils import _require_accelerator

    acc = _require_accelerator()
    index = _get_device_index(device_index, optional=True)
    return tuple(_rt.mem_get_info(f"{acc}:{index}"))  # type: ignore[return-value]
