"""The device runtime from Python: devices, streams, events and the caching allocator.

This module is the typed face of ``backend_sdk._C._runtime`` and the base the
generated device modules (``backend_sdk.accel``, like ``torch.cuda``) build
on. Functions take a *backend* name (``"accel"``, ``"privateuseone"``) or a
*device* (``"accel:1"``, a ``backend_sdk.device``; a bare backend name means
its current device).

A device is attached to a backend once per process, from a shared library
exporting ``sdk_device_entry`` (version 2 of the contract; a version-1 library
exporting ``sdk_device_api_entry`` still loads: see
``csrc/backend_sdk/runtime/DeviceApi.h``)::

    import device_sim
    from backend_sdk import _runtime
    _runtime.attach_device_library("privateusethree", device_sim.library_path())
    s = _runtime.Stream("privateusethree:0")
    with _runtime.stream(s):
        ...
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Union

from . import _C

_rt = _C._runtime

Stream = _rt.Stream
Stream.__doc__ = """A device stream from the device's pool (created as ``Stream(device, priority=0)``).

Streams come from per-device pools, as in PyTorch: constructing one never
exhausts the device. Lower priority numbers are higher priority.
Methods: ``query()``, ``synchronize()``, ``wait_event(event)``,
``launch_host_func(fn)``; properties ``device``, ``priority``, ``stream_id``,
``native_handle`` (the device's ``sdk_stream_t``, for vendor kernels).
"""
Event = _rt.Event
Event.__doc__ = """A marker in a stream's work: ``Event(enable_timing=False, blocking=False)``.

Created on the device of the first stream it is recorded on. Methods:
``record(stream)``, ``query()``, ``synchronize()``, ``elapsed_time(end)`` (ms).
"""
DeviceBuffer = _rt.DeviceBuffer
#: A host object with the buffer protocol (numpy array, bytearray, memoryview), for raw copies.
Buffer = Any

DeviceLike = Union[str, "_C.device"]

__all__ = [
    "Stream", "Event", "DeviceBuffer", "attach_device_library", "has_device", "device_count", "current_device",
    "set_device", "synchronize", "get_device_properties", "current_stream", "default_stream", "set_stream",
    "stream", "device_guard", "record_event", "wait_event", "wait_stream", "record_stream", "memcpy",
    "memset_async", "memory_stats", "memory_allocated", "max_memory_allocated", "memory_reserved",
    "max_memory_reserved", "memory_summary", "memory_snapshot", "empty_cache", "set_per_process_memory_fraction",
    "get_per_process_memory_fraction", "reset_peak_memory_stats", "reset_accumulated_memory_stats",
    "pinned_empty", "is_pinned", "host_memory_stats", "host_empty_cache", "copy_async", "is_in_bad_fork",
    "device_api_version", "device_extensions", "has_device_extension", "can_device_access_peer", "trace_start",
    "trace_stop", "trace_collect", "TRACE_KINDS",
]


def _backend_of(device: DeviceLike) -> str:
    """The backend name of a device or backend string."""
    if isinstance(device, str):
        return device.split(":", 1)[0]
    return device.type


# ---- devices ----

def attach_device_library(backend: str, path: str) -> None:
    """Loads the device library at ``path`` and attaches it to ``backend`` (PrivateUse1/2/3).

    Checks the library's device API version and struct size; a mismatch raises
    ``ValueError`` naming both versions. Attaching the same library again is a
    no-op; attaching another one to the same backend is an error.
    """
    _rt.attach_device_library(backend, path)


def has_device(backend: str) -> bool:
    """True if a device implementation is attached to ``backend``."""
    return _rt.has_device(backend)


def device_count(backend: str) -> int:
    """Number of devices of ``backend`` (0 if none is attached)."""
    return _rt.device_count(backend)


def current_device(backend: str) -> int:
    """This thread's current device index of ``backend``."""
    return _rt.current_device(backend)


def set_device(device: DeviceLike) -> None:
    """Makes ``device`` this thread's current device of its backend."""
    _rt.set_device(device)


def synchronize(device: DeviceLike) -> None:
    """Waits for all work on every stream of ``device``."""
    _rt.synchronize(device)


def get_device_properties(device: DeviceLike) -> dict[str, Any]:
    """name, total_memory, supported_dtypes (bit i: ScalarType i), stream_priority_least/greatest."""
    return _rt.get_device_properties(device)


def device_api_version(backend: str) -> tuple[int, int]:
    """(major, minor) of the device contract the backend's device was built against (major 1: adapted)."""
    return tuple(_rt.device_api_version(backend))  # type: ignore[return-value]


def device_extensions(backend: str) -> dict[str, int]:
    """The extensions of the backend's device (Note [Device API extensions]): name -> version, in chain order."""
    return dict(_rt.device_extensions(backend))


def has_device_extension(backend: str, name: str) -> bool:
    """True if the backend's device implements the extension ``name`` (e.g. ``"sdk.trace"``)."""
    return name in device_extensions(backend)


def can_device_access_peer(device: DeviceLike, peer: DeviceLike) -> bool:
    """Whether kernels on ``device`` can access ``peer``'s memory directly (``torch.cuda.can_device_access_peer``)."""
    return _rt.can_device_access_peer(device, peer)


# ---- device tracing (the "sdk.trace" extension, Note [Device trace extension]) ----

#: Record kinds of :func:`trace_collect` (SDK_TRACE_* in runtime/DeviceTraceExtension.h).
TRACE_KINDS = {1: "kernel", 2: "memcpy", 3: "memset", 4: "host_func", 5: "event_record"}


def trace_start(backend: str, capacity: int = 1 << 20) -> None:
    """Starts recording the device's work, keeping at most ``capacity`` records (NotImplementedError if the
    device has no "sdk.trace" extension)."""
    _rt.trace_start(backend, capacity)


def trace_stop(backend: str) -> None:
    """Stops recording (recorded work stays collectable)."""
    _rt.trace_stop(backend)


def trace_collect(backend: str) -> tuple[list[dict[str, Any]], int]:
    """Drains the records so far, oldest first, and the number the device dropped since the last collect.

    Each record: ``kind`` (a key of :data:`TRACE_KINDS`), ``name``, ``device``, ``stream`` (the stream's
    ``native_handle``; 0 for work of no stream), ``start_ns``/``end_ns`` (``time.monotonic_ns()`` clock),
    ``bytes``, ``correlation_id`` (the id of the profiled operator that launched it, 0 if none or the device
    implements version 1 of the extension: Note [Device trace extension]).
    """
    records, dropped = _rt.trace_collect(backend)
    return list(records), int(dropped)


# ---- streams and events ----

def current_stream(device: DeviceLike) -> Stream:
    """This thread's current stream of ``device`` (its default stream unless changed)."""
    return _rt.current_stream(device)


def default_stream(device: DeviceLike) -> Stream:
    """The default stream of ``device``."""
    return _rt.default_stream(device)


def set_stream(s: Stream) -> None:
    """Makes ``s`` the current stream of its device on this thread."""
    _rt.set_stream(s)


@contextlib.contextmanager
def device_guard(device: DeviceLike) -> Iterator[None]:
    """Makes ``device`` current for the duration of the block (like torch.cuda.device)."""
    backend = _backend_of(device)
    previous = _rt.current_device(backend)
    _rt.set_device(device)
    try:
        yield
    finally:
        _rt.set_device(f"{backend}:{previous}")


@contextlib.contextmanager
def stream(s: Stream | None) -> Iterator[Stream | None]:
    """Makes ``s`` the current stream (and its device current) for the block; ``None`` does nothing."""
    if s is None:
        yield None
        return
    device = s.device
    backend = device.type
    previous_device = _rt.current_device(backend)
    previous_stream = _rt.current_stream(device)
    _rt.set_device(device)
    _rt.set_stream(s)
    try:
        yield s
    finally:
        _rt.set_stream(previous_stream)
        _rt.set_device(f"{backend}:{previous_device}")


def record_event(s: Stream, event: Event | None = None) -> Event:
    """Records ``event`` (a new one if None) on ``s`` and returns it."""
    event = Event() if event is None else event
    event.record(s)
    return event


def wait_event(s: Stream, event: Event) -> None:
    """Work queued on ``s`` from now on waits for ``event``'s last record."""
    s.wait_event(event)


def wait_stream(s: Stream, other: Stream) -> None:
    """Work queued on ``s`` from now on waits for the work queued on ``other`` so far."""
    s.wait_event(record_event(other))


def record_stream(tensor_or_buffer: Any, s: Stream) -> None:
    """Marks memory as used on ``s``: the allocator will not reuse it before ``s``'s work queued so far is done.

    Accepts a ``backend_sdk.Tensor`` on an accelerator or a ``DeviceBuffer``.
    """
    if isinstance(tensor_or_buffer, DeviceBuffer):
        tensor_or_buffer.record_stream(s)
    else:
        _rt.record_stream(tensor_or_buffer, s)


def memcpy(backend: str, dst: int | Buffer, src: int | Buffer, nbytes: int, kind: str,
           stream: Stream | None = None) -> None:
    """Copies ``nbytes`` between raw addresses; ``kind`` is 'h2h', 'h2d', 'd2h' or 'd2d'.

    With ``stream`` the copy is queued on it (the host side must stay alive
    until it ran); without, it waits for the devices involved and copies.

    A host side may be given as a buffer object (a numpy array, ``bytearray``,
    ``memoryview``) instead of an address: its length is then checked (and a
    destination must be writable). A device side must lie within one live
    allocation (ValueError naming the allocation and the requested range).
    """
    _rt.memcpy(backend, dst, src, nbytes, kind, stream)


def memset_async(dst: int, value: int, nbytes: int, s: Stream) -> None:
    """Queues a byte memset of device memory on ``s``."""
    _rt.memset_async(dst, value, nbytes, s)


def launch_host_func(s: Stream, fn: Callable[[], None]) -> None:
    """Runs ``fn()`` on ``s``'s worker, in order with its other work (exceptions are reported as unraisable)."""
    s.launch_host_func(fn)


# ---- caching allocator ----

def memory_stats(device: DeviceLike) -> dict[str, int]:
    """The caching allocator's statistics, with PyTorch's ``memory_stats()`` keys."""
    return dict(_rt.memory_stats(device))


def memory_allocated(device: DeviceLike) -> int:
    """Bytes held by live allocations on ``device``."""
    return _rt.memory_stats(device)["allocated_bytes.all.current"]


def max_memory_allocated(device: DeviceLike) -> int:
    """Peak of memory_allocated since the start or the last reset_peak_memory_stats."""
    return _rt.memory_stats(device)["allocated_bytes.all.peak"]


def memory_reserved(device: DeviceLike) -> int:
    """Bytes the allocator holds from the device (allocated plus cached)."""
    return _rt.memory_stats(device)["reserved_bytes.all.current"]


def max_memory_reserved(device: DeviceLike) -> int:
    """Peak of memory_reserved."""
    return _rt.memory_stats(device)["reserved_bytes.all.peak"]


def memory_summary(device: DeviceLike) -> str:
    """A printable table of the allocator's statistics for ``device``."""
    return _rt.memory_summary(device)


def memory_snapshot(backend: str) -> list[dict[str, Any]]:
    """Every segment of every device of ``backend`` with its blocks (address, size, state)."""
    return list(_rt.memory_snapshot(backend))


def empty_cache(backend: str) -> None:
    """Returns all unused cached memory of ``backend`` to its devices."""
    _rt.empty_cache(backend)


def set_per_process_memory_fraction(fraction: float, device: DeviceLike) -> None:
    """Caps the memory the allocator reserves on ``device`` at ``fraction`` of its capacity."""
    _rt.set_per_process_memory_fraction(fraction, device)


def get_per_process_memory_fraction(device: DeviceLike) -> float:
    """The fraction set by set_per_process_memory_fraction (1.0 by default)."""
    return _rt.get_per_process_memory_fraction(device)


def reset_peak_memory_stats(device: DeviceLike) -> None:
    """Sets every peak statistic of ``device`` to its current value."""
    _rt.reset_peak_memory_stats(device)


def reset_accumulated_memory_stats(device: DeviceLike) -> None:
    """Zeroes the accumulated (allocated/freed) counters and the retry/OOM counts of ``device``."""
    _rt.reset_accumulated_memory_stats(device)


# ---- pinned host memory (Note [Pinned host allocator] in csrc/backend_sdk/runtime/HostAllocator.h) ----

def pinned_empty(shape: Any, dtype: Any = None, *, backend: str) -> Any:
    """An uninitialised CPU tensor in pinned host memory of ``backend`` (float32 unless ``dtype``).

    Pinned memory is what asynchronous copies need on the host side. Its block
    returns to the cache when the tensor dies, and is handed out again only
    after the stream work that used it (recorded by ``memcpy`` with a stream,
    ``copy_async`` or ``record_stream``) has completed.
    """
    sizes = [int(shape)] if isinstance(shape, int) else [int(d) for d in shape]
    return _rt.pinned_empty(sizes, dtype, backend)


def is_pinned(obj: Any, backend: str) -> bool:
    """True if a CPU tensor's data (or an integer address) lies in live pinned memory of ``backend``."""
    return _rt.is_pinned(obj, backend)


def host_memory_stats(backend: str) -> dict[str, int]:
    """The pinned-host allocator's counters: allocated/reserved/cached/pending bytes, host allocs/frees, reuses."""
    return dict(_rt.host_memory_stats(backend))


def host_empty_cache(backend: str) -> None:
    """Waits for pending uses, then returns every cached pinned block of ``backend`` to the device."""
    _rt.host_empty_cache(backend)


def copy_async(dst: int | Buffer, src: int | Buffer, nbytes: int, kind: str, s: Stream) -> None:
    """Queues a copy on ``s`` (``kind`` 'h2d', 'd2h', 'd2d' or 'h2h'), with the pinned-memory rules.

    Host and device sides are checked as by :func:`memcpy`.

    A pageable host source of 'h2d' is staged through a pinned block (so ``src``
    may be reused at once); 'd2h' needs a pinned destination (ValueError
    otherwise); pinned host sides are recorded on ``s``.
    """
    _rt.copy_async(dst, src, nbytes, kind, s)


def is_in_bad_fork() -> bool:
    """True in a child forked after a device was attached (Note [Fork safety]): device use raises there."""
    return _rt._in_bad_fork()
