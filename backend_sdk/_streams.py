"""The device-generic ``backend_sdk.Stream`` and ``backend_sdk.Event`` (PyTorch's ``torch.Stream`` / ``torch.Event``).

Both subclass the runtime's bound classes (``backend_sdk._C._runtime.Stream`` /
``.Event``), so every runtime function accepts them, and add PyTorch's Python
API: ``Stream(device=None, *, priority=0)``, ``Stream(stream_id=, device_index=,
device_type=)``, ``with stream:``, ``wait_stream``, ``record_event``;
``Event(device=None, *, enable_timing=False, blocking=False, interprocess=False)``
with ``device``/``event_id`` as PyTorch reports them (no index, id 0 until the
first record).

A device given as an int means that index of the current accelerator
(:func:`backend_sdk.accelerator.current_accelerator`); ``None`` its current
device. ``device_type`` is the SDK's number of the backend (PrivateUse1 = 2:
PyTorch's numbers differ), which round-trips through ``Stream(stream_id=...,
device_index=..., device_type=...)``.
"""
from __future__ import annotations

import threading
from typing import Any, Optional, Union

from . import _C

_rt = _C._runtime

__all__ = ["Stream", "Event"]

_DeviceArg = Union[int, str, "_C.device", None]


def _accelerator_name() -> Optional[str]:
    """The current accelerator's backend name (Note [Current accelerator] in accelerator/_utils.py)."""
    from .accelerator._utils import _accelerator_type

    return _accelerator_type()


def _resolve(device: _DeviceArg, what: str) -> str:
    """``device`` as a "backend:index" or "backend" string for the runtime (a bare backend: its current device)."""
    if device is None or isinstance(device, int) and not isinstance(device, bool):
        backend = _accelerator_name()
        if backend is None:
            raise RuntimeError(f"{what}: no accelerator is available (attach a device to a PrivateUse backend, "
                               "e.g. import accel) and no device was given")
        return backend if device is None else f"{backend}:{device}"
    if isinstance(device, _C.device):
        return str(device)
    if isinstance(device, str):
        return str(_C.device(device))
    raise TypeError(f"{what}: expected a device (int, str or backend_sdk.device), got {type(device).__name__}")


class Stream(_rt.Stream):
    """An in-order queue of device work (``torch.Stream``).

    ``Stream(device=None, *, priority=0)`` takes a stream from the device's pool
    (Note [Stream pools]); ``Stream(stream_id=, device_index=, device_type=)``
    names an existing stream by the three numbers it reports. Lower priority
    numbers are higher priority.

    ``with stream:`` makes the stream and its device current and restores both
    on exit, also on an exception (nesting is allowed, also of one stream).
    """

    def __init__(self, device: _DeviceArg = None, *, priority: int = 0, stream_id: Optional[int] = None,
                 device_index: Optional[int] = None, device_type: Optional[int] = None) -> None:
        if stream_id is not None or device_index is not None or device_type is not None:
            if device is not None or stream_id is None or device_index is None or device_type is None:
                raise TypeError("Stream(): expected Stream(device=None, *, priority=0) or "
                                "Stream(stream_id, device_index, device_type)")
            super().__init__(int(stream_id), int(device_index), int(device_type))
        else:
            if isinstance(priority, bool) or not isinstance(priority, int):
                raise TypeError(f"Stream(): priority must be an int, got {type(priority).__name__}")
            super().__init__(_resolve(device, "Stream"), priority)
        self._contexts = threading.local()

    @classmethod
    def _wrap(cls, s: Any) -> "Stream":
        """``s`` (a runtime stream) as an instance of ``cls``."""
        if type(s) is cls:
            return s
        out = cls.__new__(cls)
        _rt.Stream.__init__(out, s.stream_id, s.device_index, s.device_type)
        out._contexts = threading.local()
        return out

    def wait_stream(self, stream: "_rt.Stream") -> None:
        """Work queued on this stream from now on waits for the work queued on ``stream`` so far
        (also across devices of the backend)."""
        if not isinstance(stream, _rt.Stream):
            raise TypeError(f"wait_stream: expected a Stream, got {type(stream).__name__}")
        event = _rt.Event(False, False)
        event.record(stream)
        self.wait_event(event)

    def record_event(self, event: Optional["_rt.Event"] = None) -> "Event":
        """Records ``event`` (a new one if None) on this stream and returns it."""
        if event is None:
            event = Event(self.device)
        if isinstance(event, Event):
            event.record(self)
        else:
            _rt.Event.record(event, self)
        return event  # type: ignore[return-value]

    def is_capturing(self) -> bool:
        """True while a graph capture records this stream's work (see backend_sdk.accelerator.Graph)."""
        from .accelerator import _graphs

        return _graphs._is_capturing(self)

    def __enter__(self) -> "Stream":
        from .accelerator._utils import _enter_stream

        stack = getattr(self._contexts, "stack", None)
        if stack is None:
            stack = self._contexts.stack = []
        stack.append(_enter_stream(self))
        return self

    def __exit__(self, *exc: object) -> None:
        from .accelerator._utils import _exit_stream

        _exit_stream(self._contexts.stack.pop())


class Event(_rt.Event):
    """A marker in a stream's work (``torch.Event``), for waiting, querying and timing.

    ``Event(device=None, *, enable_timing=False, blocking=False, interprocess=False)``:
    the event belongs to ``device``'s backend (the current accelerator if None)
    and to the device of the first stream it is recorded on; until then
    ``device.index`` is None, ``event_id`` is 0 and ``query()`` is True.
    Interprocess events are not supported by any backend yet (NotImplementedError).
    """

    def __init__(self, device: _DeviceArg = None, *, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False) -> None:
        super().__init__(bool(enable_timing), bool(blocking))
        self._device_type = _C.device(_resolve(device, "Event")).type
        if interprocess:
            raise NotImplementedError(f"Event(interprocess=True): the '{self._device_type}' backend does not "
                                      "support interprocess events (ipc_handle / from_ipc_handle)")

    @property
    def device(self) -> "_C.device":  # type: ignore[override]
        """The device of the event's first record; before it, the backend with no index."""
        recorded = _rt.Event.device.fget(self)  # type: ignore[attr-defined]
        return recorded if recorded is not None else _C.device(self._device_type)

    @property
    def event_id(self) -> int:
        """The device's handle of the event (0 until the first record)."""
        return self.native_handle

    def record(self, stream: Optional["_rt.Stream"] = None) -> None:  # type: ignore[override]
        """Captures the work queued so far on ``stream`` (the current stream of the current device if None)."""
        if stream is None:
            from .accelerator._utils import _current_stream_of

            stream = _current_stream_of(self._device_type)
        if not isinstance(stream, _rt.Stream):
            raise TypeError(f"Event.record: expected a Stream, got {type(stream).__name__}")
        if stream.device.type != self._device_type:
            raise RuntimeError(f"Event device type {self._device_type} does not match recording stream's device "
                               f"type {stream.device.type}.")
        super().record(stream)

    def wait(self, stream: Optional["_rt.Stream"] = None) -> None:
        """Makes ``stream`` (the current stream if None) wait for this event's last record."""
        if stream is None:
            from .accelerator._utils import _current_stream_of

            stream = _current_stream_of(self._device_type)
        stream.wait_event(self)

    def ipc_handle(self) -> bytes:
        """Not supported: no backend implements interprocess events yet (NotImplementedError)."""
        raise NotImplementedError(f"Event.ipc_handle: the '{self._device_type}' backend does not support "
                                  "interprocess events")

    @classmethod
    def from_ipc_handle(cls, device: _DeviceArg, handle: bytes) -> "Event":
        """Not supported: no backend implements interprocess events yet (NotImplementedError)."""
        backend = _C.device(_resolve(device, "Event.from_ipc_handle")).type
        raise NotImplementedError(f"Event.from_ipc_handle: the '{backend}' backend does not support "
                                  "interprocess events")

    def __repr__(self) -> str:
        d = self.device
        flag = "TIMING" if self.enable_timing else "DEFAULT"
        return (f"<backend_sdk.Event device_type={d.type}, device_index={d.index}, event_flag={flag}, "
                f"event_id={self.event_id}>")
