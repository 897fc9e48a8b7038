"""The device module of a renamed backend, like ``torch.cuda`` (template).

``backend_sdk.utils.generate_device_module(name)`` executes this file once per
backend as a fresh module (``backend_sdk.<name>``) after setting ``_BACKEND``;
every function here then works on that backend. Functions that take
``device`` accept an index, a string ("accel:1" or "accel") or a
``backend_sdk.device``; ``None`` means the current device.

The stub (``.pyi``) a vendor package ships for IDEs is written from this file
by ``backend_sdk.utils.write_device_module_stub``.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator, Optional, Union

from backend_sdk import _C, _runtime
from backend_sdk._C import OutOfMemoryError

_BACKEND: str = "privateuseone"  # replaced by the generator before the functions run

_DeviceArg = Union[int, str, "_C.device", None]

__all__ = [
    "is_available", "device_count", "current_device", "set_device", "device", "get_device_name",
    "get_device_properties", "get_device_capability", "synchronize", "init", "is_initialized",
    "Stream", "Event", "current_stream", "default_stream", "set_stream", "stream",
    "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved", "memory_stats",
    "memory_summary", "memory_snapshot", "reset_peak_memory_stats", "reset_accumulated_memory_stats",
    "empty_cache", "mem_get_info", "set_per_process_memory_fraction", "OutOfMemoryError",
    "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed", "get_rng_state", "set_rng_state",
    "get_rng_state_all", "set_rng_state_all", "get_amp_supported_dtype",
]

_initialized = False


def _index(device: _DeviceArg) -> int:
    """The device index ``device`` names on this backend (checked: "Invalid device ordinal")."""
    if device is None:
        return _runtime.current_device(_BACKEND)
    if isinstance(device, bool) or not isinstance(device, (int, str, _C.device)):
        raise TypeError(f"{_BACKEND}: expected a device index, a device string or a device, "
                        f"got {type(device).__name__}")
    if isinstance(device, int):
        index = device
    else:
        d = _C.device(device)
        if d.type != _BACKEND:
            raise ValueError(f"{_BACKEND}: expected a {_BACKEND} device, got '{d}'")
        index = _runtime.current_device(_BACKEND) if d.index is None else d.index
    count = device_count()
    if not 0 <= index < count:
        raise IndexError(f"{_BACKEND}: Invalid device ordinal: device index {index} is out of range for backend "
                         f"'{_BACKEND}', which has {count} device{'' if count == 1 else 's'}")
    return index


def _name(device: _DeviceArg) -> str:
    return f"{_BACKEND}:{_index(device)}"


# ---- devices ----

def is_available() -> bool:
    """True if a device implementation is attached and has at least one device."""
    return _runtime.has_device(_BACKEND) and _runtime.device_count(_BACKEND) > 0


def device_count() -> int:
    """The number of devices."""
    return _runtime.device_count(_BACKEND)


def current_device() -> int:
    """This thread's current device index."""
    return _runtime.current_device(_BACKEND)


def set_device(device: _DeviceArg) -> None:
    """Makes ``device`` this thread's current device."""
    _runtime.set_device(_name(device))


class device:
    """Context manager that makes a device current and restores the previous one on exit (even on error)."""

    def __init__(self, device: _DeviceArg) -> None:
        self.idx = -1 if device is None else _index(device)
        self.prev_idx = -1

    def __enter__(self) -> "device":
        self.prev_idx = current_device()
        if self.idx >= 0:
            set_device(self.idx)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.idx >= 0:
            set_device(self.prev_idx)


class _DeviceProperties:
    """Properties of one device (``name``, ``total_memory``, ``major``, ``minor``, stream priorities)."""

    def __init__(self, index: int, props: dict[str, Any]) -> None:
        self.index = index
        self.name: str = props["name"]
        self.total_memory: int = props["total_memory"]
        self.supported_dtypes: int = props["supported_dtypes"]
        self.stream_priority_least: int = props["stream_priority_least"]
        self.stream_priority_greatest: int = props["stream_priority_greatest"]
        self.major, self.minor = 1, 0

    def __repr__(self) -> str:
        return (f"_{_BACKEND.capitalize()}DeviceProperties(name='{self.name}', "
                f"total_memory={self.total_memory // (1024 * 1024)}MB)")


def get_device_properties(device: _DeviceArg = None) -> _DeviceProperties:
    """Name, total memory and stream priority range of ``device``."""
    index = _index(device)
    return _DeviceProperties(index, _runtime.get_device_properties(f"{_BACKEND}:{index}"))


def get_device_name(device: _DeviceArg = None) -> str:
    """The name the device reports."""
    return get_device_properties(device).name


def get_device_capability(device: _DeviceArg = None) -> tuple[int, int]:
    """(major, minor) capability of ``device`` ((1, 0) until the contract reports one)."""
    p = get_device_properties(device)
    return (p.major, p.minor)


def synchronize(device: _DeviceArg = None) -> None:
    """Waits for all work on every stream of ``device``; raises AcceleratorError for a pending fault."""
    _runtime.synchronize(_name(device))


def init() -> None:
    """Initialises the backend (idempotent); raises if no device is attached."""
    global _initialized
    if not _runtime.has_device(_BACKEND):
        raise RuntimeError(f"{_BACKEND}: no device implementation is attached to the backend")
    _runtime.device_count(_BACKEND)
    _initialized = True


def is_initialized() -> bool:
    """True once init() ran or a device was used through this module."""
    return _initialized or _runtime.has_device(_BACKEND)


# ---- streams and events ----

class Stream(_runtime.Stream):
    """An in-order queue of device work: ``Stream(device=None, priority=0)``.

    Lower priority numbers run first. Streams come from per-device pools.
    """

    def __init__(self, device: _DeviceArg = None, priority: int = 0) -> None:
        super().__init__(_name(device), priority)

    def wait_stream(self, stream: "_runtime.Stream") -> None:
        """Work queued on this stream from now on waits for the work queued on ``stream`` so far."""
        _runtime.wait_stream(self, stream)

    def record_event(self, event: Optional["Event"] = None) -> "Event":
        """Records ``event`` (a new one if None) on this stream and returns it."""
        event = Event() if event is None else event
        event.record(self)
        return event


class Event(_runtime.Event):
    """A marker in a stream: ``Event(enable_timing=False, blocking=False)``; record, wait, query, elapsed_time (ms)."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False) -> None:
        super().__init__(enable_timing, blocking)

    def record(self, stream: Optional["_runtime.Stream"] = None) -> None:
        """Captures the work queued so far on ``stream`` (the current stream if None)."""
        super().record(current_stream() if stream is None else stream)

    def wait(self, stream: Optional["_runtime.Stream"] = None) -> None:
        """Makes ``stream`` (the current stream if None) wait for this event."""
        (current_stream() if stream is None else stream).wait_event(self)


def current_stream(device: _DeviceArg = None) -> _runtime.Stream:
    """This thread's current stream of ``device``."""
    return _runtime.current_stream(_name(device))


def default_stream(device: _DeviceArg = None) -> _runtime.Stream:
    """The default stream of ``device``."""
    return _runtime.default_stream(_name(device))


def set_stream(stream: _runtime.Stream) -> None:
    """Makes ``stream`` current on its device (for this thread)."""
    if stream.device.type != _BACKEND:
        raise ValueError(f"{_BACKEND}.set_stream: {stream} is not a stream of the {_BACKEND} backend")
    _runtime.set_stream(stream)


@contextlib.contextmanager
def stream(stream: Optional[_runtime.Stream]) -> Iterator[Optional[_runtime.Stream]]:
    """Makes ``stream`` (and its device) current inside the block; restores both on exit, even on error."""
    if stream is not None and stream.device.type != _BACKEND:
        raise ValueError(f"{_BACKEND}.stream: {stream} is not a stream of the {_BACKEND} backend")
    with _runtime.stream(stream) as s:
        yield s


# ---- memory ----

def memory_allocated(device: _DeviceArg = None) -> int:
    """Bytes held by live tensors on ``device``."""
    return _runtime.memory_allocated(_name(device))


def max_memory_allocated(device: _DeviceArg = None) -> int:
    """Peak of memory_allocated since start or the last reset_peak_memory_stats."""
    return _runtime.max_memory_allocated(_name(device))


def memory_reserved(device: _DeviceArg = None) -> int:
    """Bytes the caching allocator holds from the device (allocated plus cached)."""
    return _runtime.memory_reserved(_name(device))


def max_memory_reserved(device: _DeviceArg = None) -> int:
    """Peak of memory_reserved."""
    return _runtime.max_memory_reserved(_name(device))


def memory_stats(device: _DeviceArg = None) -> dict[str, int]:
    """The caching allocator's statistics with PyTorch's keys ("allocated_bytes.all.current", ...)."""
    return _runtime.memory_stats(_name(device))


def memory_summary(device: _DeviceArg = None, abbreviated: bool = False) -> str:
    """A printable table of the allocator's statistics."""
    return _runtime.memory_summary(_name(device))


def memory_snapshot() -> list[dict[str, Any]]:
    """Every segment of every device with its blocks."""
    return _runtime.memory_snapshot(_BACKEND)


def reset_peak_memory_stats(device: _DeviceArg = None) -> None:
    """Sets the peak statistics of ``device`` to their current values."""
    _runtime.reset_peak_memory_stats(_name(device))


def reset_accumulated_memory_stats(device: _DeviceArg = None) -> None:
    """Zeroes the accumulated counters of ``device``."""
    _runtime.reset_accumulated_memory_stats(_name(device))


def empty_cache() -> None:
    """Returns unused cached memory to the devices."""
    _runtime.empty_cache(_BACKEND)


def mem_get_info(device: _DeviceArg = None) -> tuple[int, int]:
    """(free, total) bytes of ``device``."""
    return tuple(_C._runtime.mem_get_info(_name(device)))  # type: ignore[return-value]


def set_per_process_memory_fraction(fraction: float, device: _DeviceArg = None) -> None:
    """Caps what the allocator reserves on ``device`` at ``fraction`` (0..1) of its capacity."""
    if not isinstance(fraction, (int, float)) or not 0 <= fraction <= 1:
        raise ValueError(f"{_BACKEND}.set_per_process_memory_fraction: invalid fraction {fraction!r}, "
                         "please set within (0, 1)")
    _runtime.set_per_process_memory_fraction(float(fraction), _name(device))


# ---- random numbers ----

def _generator(device: _DeviceArg = None) -> Any:
    return _C._default_generator(_C.device(_name(device)))


def manual_seed(seed: int) -> None:
    """Seeds the current device's generator."""
    _generator().manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    """Seeds the generator of every device."""
    for i in range(device_count()):
        _generator(i).manual_seed(int(seed))


def seed() -> None:
    """Seeds the current device's generator with a non-deterministic number."""
    _generator().seed()


def seed_all() -> None:
    """Seeds every device's generator with one non-deterministic number."""
    s = _generator(0).seed() if device_count() else None
    for i in range(1, device_count()):
        _generator(i).manual_seed(s)


def initial_seed() -> int:
    """The seed of the current device's generator."""
    return _generator().initial_seed()


def get_rng_state(device: _DeviceArg = None) -> Any:
    """The generator state of ``device`` as a uint8 CPU tensor."""
    return _generator(device).get_state()


def set_rng_state(new_state: Any, device: _DeviceArg = None) -> None:
    """Restores a state returned by get_rng_state."""
    _generator(device).set_state(new_state)


def get_rng_state_all() -> list[Any]:
    """The generator state of every device."""
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states: list[Any]) -> None:
    """Restores the states returned by get_rng_state_all."""
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


# ---- amp ----

def get_amp_supported_dtype() -> list[_C.dtype]:
    """The dtypes autocast may use on this backend."""
    return [_C.float16, _C.bfloat16]
