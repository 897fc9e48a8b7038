"""Helpers of ``backend_sdk.accelerator``: which backend is the current accelerator, device indices,
and the stream switching ``with stream:`` and the device modules' ``StreamContext`` share.

Note [Current accelerator]
~~~~~~~~~~~~~~~~~~~~~~~~~~
PyTorch has one accelerator per process: the compiled-in one (CUDA, XPU, ...),
else PrivateUse1 once a backend registered itself there. The SDK has no
compiled-in accelerator: the current accelerator is the first of PrivateUse1,
PrivateUse2, PrivateUse3 that has a device attached (PyTorch's rule, "the one
attached to PrivateUse1 first", extended to the other two slots), named by
its current (renamed) name. With none attached there is no accelerator and
the functions behave as PyTorch's do on a CPU-only install:
``current_accelerator()`` is None, ``device_count()`` is 0, memory queries
return 0 / {}, ``synchronize``/``empty_cache`` do nothing, and what needs a
device (``current_device_index``, ``set_device_index``, ``current_stream``)
raises RuntimeError.
"""
from __future__ import annotations

from typing import Any, Optional, Union

from .. import _C

_rt = _C._runtime

_device_t = Union[int, str, "_C.device", None]

#: The message of PyTorch's ``getAccelerator(checked=true)``.
_NO_ACCELERATOR = "Cannot access accelerator device when none is available."


def _accelerator_type() -> Optional[str]:
    """The name of the current accelerator's backend, or None (Note [Current accelerator])."""
    for which in (1, 2, 3):
        name = _C._get_privateuse_backend_name(which)
        if _rt.has_device(name):
            return name
    return None


def _require_accelerator() -> str:
    name = _accelerator_type()
    if name is None:
        raise RuntimeError(_NO_ACCELERATOR)
    return name


def _get_device_index(device: _device_t, optional: bool = False) -> int:
    """The device index ``device`` names on the current accelerator (PyTorch's ``_get_device_index``).

    An int is taken as is; a device or string must be of the current
    accelerator (ValueError otherwise); with no index (or None) the current
    index when ``optional``, else ValueError.
    """
    if isinstance(device, bool):
        raise TypeError("expected a device index, a device string or a device, got bool")
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        device = _C.device(device)
    index: Optional[int] = None
    if isinstance(device, _C.device):
        acc = _accelerator_type()
        if acc != device.type:
            raise ValueError(f"{device.type} doesn't match the current accelerator {acc}.")
        index = device.index
    elif device is not None:
        raise TypeError(f"expected a device index, a device string or a device, got {type(device).__name__}")
    if index is None:
        if not optional:
            raise ValueError(f"Expected a backend_sdk.device with a specified index or an integer, but got:{device}")
        return _rt.current_device(_require_accelerator())
    return index


def _check_index(backend: str, index: int) -> None:
    count = _rt.device_count(backend)
    if not 0 <= index < count:
        raise RuntimeError(f"The device index is out of range. It must be in [0, {count}), but got {index}.")


def _current_stream_of(backend: str, index: Optional[int] = None) -> Any:
    """The current stream of ``backend``'s device ``index`` (its current device if None), as a Stream."""
    from .._streams import Stream

    device = backend if index is None else f"{backend}:{index}"
    return Stream._wrap(_rt.current_stream(device))


def _set_stream(stream: Any) -> None:
    """Makes ``stream`` current on its device and its device the current device (as torch.cuda.set_stream)."""
    _rt.set_device(stream.device)
    _rt.set_stream(stream)


def _enter_stream(stream: Any) -> tuple[Any, int, Any]:
    """Switches to ``stream`` and its device; returns what :func:`_exit_stream` restores."""
    device = stream.device
    previous_device = _rt.current_device(device.type)
    previous_stream = _rt.current_stream(device)
    _set_stream(stream)
    return (device, previous_device, previous_stream)


def _exit_stream(saved: tuple[Any, int, Any]) -> None:
    device, previous_device, previous_stream = saved
    _rt.set_stream(previous_stream)
    _rt.set_device(f"{device.type}:{previous_device}")
