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
import sys
from typing import Any, Iterator, Optional, Union

from backend_sdk import _C, _runtime, _streams
from backend_sdk.accelerator import _graphs
from backend_sdk.accelerator._utils import _enter_stream, _exit_stream, _set_stream
from backend_sdk._C import OutOfMemoryError

_BACKEND: str = "privateuseone"  # replaced by the generator before the functions run

_DeviceArg = Union[int, str, "_C.device", None]

__all__ = [
    "is_available", "device_count", "current_device", "set_device", "device", "get_device_name",
    "get_device_properties", "get_device_capability", "synchronize", "init", "is_initialized",
    "Stream", "Event", "current_stream", "default_stream", "set_stream", "stream", "StreamContext", "device_of",
    "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved", "memory_stats",
    "memory_summary", "memory_snapshot", "reset_peak_memory_stats", "reset_accumulated_memory_stats",
    "empty_cache", "mem_get_info", "set_per_process_memory_fraction", "OutOfMemoryError",
    "reset_max_memory_allocated", "reset_max_memory_cached", "memory_cached", "max_memory_cached",
    "get_allocator_backend", "caching_allocator_alloc", "caching_allocator_delete", "is_bf16_supported",
    "set_sync_debug_mode", "get_sync_debug_mode", "memory", "Graph", "graph", "graph_pool_handle",
    "is_current_stream_capturing", "utilization", "memory_usage", "ExternalStream",
    "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed", "get_rng_state", "set_rng_state",
    "get_rng_state_all", "set_rng_state_all", "get_amp_supported_dtype",
    "amp",
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
    """Context manager that makes a device current and restores the previous one on exit (even on error);
    ``None`` or a negative index changes nothing."""

    def __init__(self, device: _DeviceArg) -> None:
        negative = isinstance(device, int) and not isinstance(device, bool) and device < 0
        self.idx = -1 if device is None or negative else _index(device)
        self.prev_idx = -1

    def __enter__(self) -> "device":
        self.prev_idx = current_device()
        if self.idx >= 0:
            set_device(self.idx)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.idx >= 0:
            set_device(self.prev_idx)
        return None


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
    if _runtime.is_in_bad_fork():  # Note [Fork safety]: the parent's device state is not the child's
        raise RuntimeError(f"Cannot re-initialize {_BACKEND} in forked subprocess. To use {_BACKEND} with "
                           "multiprocessing, you must use the 'spawn' start method")
    if not _runtime.has_device(_BACKEND):
        raise RuntimeError(f"{_BACKEND}: no device implementation is attached to the backend")
    _runtime.device_count(_BACKEND)
    _initialized = True


def is_initialized() -> bool:
    """True once init() ran or a device was used through this module."""
    if _runtime.is_in_bad_fork():
        return False
    return _initialized or _runtime.has_device(_BACKEND)


# ---- streams and events ----

class Stream(_streams.Stream):
    """An in-order queue of device work: ``Stream(device=None, priority=0)`` (a ``backend_sdk.Stream``).

    Lower priority numbers run first. Streams come from per-device pools.
    """

    def __init__(self, device: _DeviceArg = None, priority: int = 0, **kwargs: Any) -> None:
        if kwargs:  # Stream(stream_id=, device_index=, device_type=): an existing stream
            super().__init__(**kwargs)
            if self.device.type != _BACKEND:
                raise ValueError(f"{_BACKEND}.Stream: {self.device} is not a {_BACKEND} device")
            return
        super().__init__(_name(device), priority=priority)


class ExternalStream(Stream):
    """A stream created outside the SDK, from its native handle (``torch.cuda.ExternalStream``):
    ``ExternalStream(stream_ptr, device=None)``. The SDK never destroys the handle; its creator keeps it alive
    while work may use it (Note [External streams])."""

    def __init__(self, stream_ptr: int, device: _DeviceArg = None, **kwargs: Any) -> None:
        if isinstance(stream_ptr, bool) or not isinstance(stream_ptr, int):
            raise TypeError(f"{_BACKEND}.ExternalStream: stream_ptr must be an int, got {type(stream_ptr).__name__}")
        s = _C._runtime._external_stream(_name(device), stream_ptr)
        _streams.Stream.__init__(self, stream_id=s.stream_id, device_index=s.device_index, device_type=s.device_type)


class Event(_streams.Event):
    """A marker in a stream: ``Event(enable_timing=False, blocking=False, interprocess=False, *, device=None)``
    (a ``backend_sdk.Event`` of this backend); record, wait, query, synchronize, elapsed_time (ms)."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False, *,
                 device: _DeviceArg = None) -> None:
        super().__init__(_name(device) if device is not None else _BACKEND, enable_timing=enable_timing,
                         blocking=blocking, interprocess=interprocess)


def current_stream(device: _DeviceArg = None) -> Stream:
    """This thread's current stream of ``device``."""
    return Stream._wrap(_runtime.current_stream(_name(device)))


def default_stream(device: _DeviceArg = None) -> Stream:
    """The default stream of ``device``."""
    return Stream._wrap(_runtime.default_stream(_name(device)))


def _check_stream(stream: Any, what: str) -> None:
    if not isinstance(stream, _C._runtime.Stream):
        raise TypeError(f"{_BACKEND}.{what}: expected a Stream, got {type(stream).__name__}")
    if stream.device.type != _BACKEND:
        raise ValueError(f"{_BACKEND}.{what}: {stream} is not a stream of the {_BACKEND} backend")


def set_stream(stream: Optional[_C._runtime.Stream]) -> None:
    """Makes ``stream`` current on its device and its device current (for this thread); None does nothing."""
    if stream is None:
        return
    _check_stream(stream, "set_stream")
    _set_stream(stream)


class StreamContext:
    """Makes a stream (and its device) current inside the block and restores both on exit, even on error;
    ``StreamContext(None)`` does nothing (``torch.cuda.StreamContext``)."""

    def __init__(self, stream: Optional[_C._runtime.Stream]) -> None:
        if stream is not None:
            _check_stream(stream, "StreamContext")
        self.stream = stream
        self._saved: list[Any] = []

    def __enter__(self) -> Optional[_C._runtime.Stream]:
        if self.stream is not None:
            self._saved.append(_enter_stream(self.stream))
        return self.stream

    def __exit__(self, *exc: Any) -> None:
        if self.stream is not None:
            _exit_stream(self._saved.pop())


def stream(stream: Optional[_C._runtime.Stream]) -> StreamContext:
    """``with stream(s):`` makes ``s`` (and its device) current inside the block (a :class:`StreamContext`)."""
    return StreamContext(stream)


class device_of(device):
    """Makes the device of a tensor current inside the block; a tensor of another backend (CPU) changes
    nothing (``torch.cuda.device_of``)."""

    def __init__(self, obj: Any) -> None:
        d = obj.device
        super().__init__(d.index if d.type == _BACKEND else -1)


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


def reset_max_memory_allocated(device: _DeviceArg = None) -> None:
    """(Deprecated) Resets every peak statistic of ``device``, as :func:`reset_peak_memory_stats`."""
    import warnings

    warnings.warn(f"{_BACKEND}.reset_max_memory_allocated now calls {_BACKEND}.reset_peak_memory_stats, which "
                  "resets /all/ peak memory stats.", FutureWarning, stacklevel=2)
    reset_peak_memory_stats(device)


def reset_max_memory_cached(device: _DeviceArg = None) -> None:
    """(Deprecated) Resets every peak statistic of ``device``, as :func:`reset_peak_memory_stats`."""
    import warnings

    warnings.warn(f"{_BACKEND}.reset_max_memory_cached now calls {_BACKEND}.reset_peak_memory_stats, which "
                  "resets /all/ peak memory stats.", FutureWarning, stacklevel=2)
    reset_peak_memory_stats(device)


def memory_cached(device: _DeviceArg = None) -> int:
    """(Deprecated) :func:`memory_reserved`."""
    return memory_reserved(device)


def max_memory_cached(device: _DeviceArg = None) -> int:
    """(Deprecated) :func:`max_memory_reserved`."""
    return max_memory_reserved(device)


def get_allocator_backend() -> str:
    """The caching allocator in use: ``"native"`` (the SDK's, Note [Caching allocator])."""
    return "native"


#: Buffers handed out by caching_allocator_alloc, by address, until caching_allocator_delete.
_raw_allocations: dict[int, Any] = {}


def caching_allocator_alloc(size: int, device: _DeviceArg = None, stream: Optional[_C._runtime.Stream] = None) -> int:
    """Allocates ``size`` bytes from the caching allocator on ``device`` for use on ``stream`` (the current
    stream if None) and returns the address; free it with :func:`caching_allocator_delete`."""
    if isinstance(size, bool) or not isinstance(size, int):
        raise TypeError(f"{_BACKEND}.caching_allocator_alloc: size must be an int, got {type(size).__name__}")
    if stream is None:
        stream = current_stream(device)
    elif stream.device.type != _BACKEND:
        raise ValueError(f"{_BACKEND}.caching_allocator_alloc: {stream} is not a stream of the {_BACKEND} backend")
    buffer = _C._runtime.DeviceBuffer(size, stream)
    _raw_allocations[buffer.ptr] = buffer
    return buffer.ptr


def caching_allocator_delete(mem_ptr: int) -> None:
    """Frees memory returned by :func:`caching_allocator_alloc` (ValueError for any other address)."""
    buffer = _raw_allocations.pop(int(mem_ptr), None)
    if buffer is None:
        raise ValueError(f"{_BACKEND}.caching_allocator_delete: {mem_ptr:#x} was not allocated by "
                         "caching_allocator_alloc (or was already freed)")
    buffer.free()


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """True if the current device supports bfloat16 (its contract reports the dtype)."""
    if not is_available():
        return False
    bits = get_device_properties().supported_dtypes
    return bool(bits >> _C.bfloat16._id & 1)


_SYNC_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_sync_debug_mode(debug_mode: Union[int, str]) -> None:
    """Reports every synchronising call (``synchronize``, a copy to the host, ``item()``): ``"default"``/0 does
    nothing, ``"warn"``/1 warns, ``"error"``/2 raises RuntimeError naming the call (Note [Sync debug mode];
    process-wide, for every backend)."""
    if isinstance(debug_mode, str):
        if debug_mode not in _SYNC_DEBUG_MODES:
            raise RuntimeError('invalid value of debug_mode, expected one of "default", "warn", "error"')
        debug_mode = _SYNC_DEBUG_MODES[debug_mode]
    _C._runtime._set_sync_debug_mode(int(debug_mode))


def get_sync_debug_mode() -> int:
    """The mode set by :func:`set_sync_debug_mode` (0 default, 1 warn, 2 error)."""
    return _C._runtime._get_sync_debug_mode()


_HISTORY_CONTEXTS = (None, "state", "alloc", "all")


def _record_memory_history(enabled: Optional[str] = "all", context: Optional[str] = "all", stacks: str = "all",
                           max_entries: int = sys.maxsize, device: _DeviceArg = None, clear_history: bool = False,
                           **kwargs: Any) -> None:
    """Starts (``enabled="all"`` or ``"state"``) or stops (``None``) recording the allocator's state and events
    for :func:`_snapshot` (``torch.cuda.memory._record_memory_history``; Note [Allocation history]).

    ``enabled="all"`` keeps the last ``max_entries`` events (alloc, free_completed, segment_alloc, segment_free)
    as the snapshot's ``device_traces``; ``"state"`` keeps only the stacks of live allocations. ``context`` says
    which carry the Python stack (``frames``: dicts of filename, line, name, innermost first): ``"state"`` the
    live blocks, ``"alloc"`` also alloc events, ``"all"`` also frees, None none. ``stacks``: ``"python"`` or
    ``"all"``; both record Python frames (the SDK records no C++ frames). Stacks are taken on threads that hold
    the GIL when they allocate or free (Python code), not on device worker threads."""
    if enabled not in (None, "all", "state"):
        raise ValueError(f"_record_memory_history: enabled must be None, 'state' or 'all', got {enabled!r}")
    if context not in _HISTORY_CONTEXTS:
        raise ValueError(f"_record_memory_history: context must be None, 'state', 'alloc' or 'all', got {context!r}")
    if stacks not in ("python", "all"):
        raise ValueError(f"_record_memory_history: stacks must be 'python' or 'all', got {stacks!r}")
    limit = min(int(max_entries), 1 << 40)
    _C._runtime._record_memory_history(_BACKEND, enabled == "all", limit, bool(clear_history),
                                       "" if enabled is None or context is None else context)


def _snapshot(device: _DeviceArg = None) -> dict[str, Any]:
    """The caching allocator's state in PyTorch's snapshot format (``torch.cuda.memory._snapshot``):
    ``{"segments": [...], "device_traces": [events per device]}``, each segment with its blocks; the traces and
    the blocks' ``frames`` are what :func:`_record_memory_history` kept."""
    segments = []
    for seg in _runtime.memory_snapshot(_BACKEND):
        blocks = [dict(b) for b in seg["blocks"]]
        segments.append({
            "device": seg["device"], "address": seg["address"], "total_size": seg["total_size"],
            "allocated_size": seg["allocated_size"], "active_size": seg["active_size"],
            "requested_size": sum(b["requested_size"] for b in blocks if b["state"] == "active_allocated"),
            "stream": seg["stream"], "segment_type": seg["segment_type"], "segment_pool_id": (0, 0),
            "is_expandable": False, "frames": [], "blocks": blocks,
        })
    traces = [_C._runtime._memory_history(f"{_BACKEND}:{i}") for i in range(device_count())]
    return {"segments": segments, "device_traces": traces}


def _dump_snapshot(filename: str = "dump_snapshot.pickle") -> None:
    """Writes :func:`_snapshot` to ``filename`` as a pickle (what PyTorch's memory visualiser reads)."""
    import pickle

    with open(filename, "wb") as f:
        pickle.dump(_snapshot(), f)


# ---- graphs (Note [Graph capture]) ----

class Graph(_graphs.Graph):
    """A captured sequence of this backend's device work (``torch.cuda.CUDAGraph``; a
    ``backend_sdk.accelerator.Graph``)."""


def graph_pool_handle() -> tuple[int, int]:
    """A memory pool id that several graph captures may share (``torch.cuda.graph_pool_handle``)."""
    return _graphs.graph_pool_handle()


def is_current_stream_capturing() -> bool:
    """True if the current stream of the current device is capturing a graph."""
    return _graphs._is_capturing(current_stream())


class graph:
    """``with accel.graph(g):`` captures the block's work on this backend into ``g`` (``torch.cuda.graph``):
    synchronizes, makes ``stream`` (default: one side stream per process) current, captures, and restores the
    stream on exit, also on an error (which drops the partial capture)."""

    default_capture_stream: Optional["Stream"] = None

    def __init__(self, cuda_graph: Graph, pool: Optional[tuple[int, int]] = None,
                 stream: Optional[_C._runtime.Stream] = None, capture_error_mode: str = "global") -> None:
        if not isinstance(cuda_graph, _graphs.Graph):
            raise TypeError(f"{_BACKEND}.graph: expected a {_BACKEND}.Graph, got {type(cuda_graph).__name__}")
        if stream is None:
            if graph.default_capture_stream is None:
                graph.default_capture_stream = Stream()
            stream = graph.default_capture_stream
        _check_stream(stream, "graph")
        self.graph = cuda_graph
        self.pool = pool
        self.capture_error_mode = capture_error_mode
        self.stream_ctx = StreamContext(stream)

    def __enter__(self) -> None:
        synchronize()
        self.stream_ctx.__enter__()
        try:
            self.graph.capture_begin(pool=self.pool, capture_error_mode=self.capture_error_mode)
        except BaseException:
            self.stream_ctx.__exit__(None, None, None)
            raise

    def __exit__(self, *exc: Any) -> None:
        try:
            self.graph.__exit__(*exc)
        finally:
            self.stream_ctx.__exit__(*exc)


def _activity(device: _DeviceArg, what: str) -> dict[str, int]:
    """The device's "sdk.stats" figures (Note [Device stats extension]); NotImplementedError naming the backend
    when its device does not implement the extension."""
    name = _name(device)
    if not _C._runtime.has_device_stats(_BACKEND):
        raise NotImplementedError(
            f"{_BACKEND}.{what}: the device of backend '{_BACKEND}' ({name}, {_C._runtime.device_source(_BACKEND)}) "
            "does not implement the 'sdk.stats' device extension, so it reports no "
            f"{'utilization' if what == 'utilization' else 'memory usage'}")
    return _C._runtime.device_activity(name)


def utilization(device: _DeviceArg = None) -> int:
    """The percent of time over the device's last sample period during which one or more kernels was executing
    (``torch.cuda.utilization``; the device's "sdk.stats" extension, Note [Device stats extension]; device_sim's
    period is 200 ms). ``device``: an index, a string or a device; None is the current device. Raises
    NotImplementedError naming the backend if its device does not report activity."""
    return int(_activity(device, "utilization")["kernel_percent"])


def memory_usage(device: _DeviceArg = None) -> int:
    """The percent of time over the device's last sample period during which device memory was being read or
    written by copies and memsets (``torch.cuda.memory_usage``; "sdk.stats", as :func:`utilization`)."""
    return int(_activity(device, "memory_usage")["memory_percent"])


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


class _AmpModule:
    """``<backend>.amp``: ``autocast`` and ``GradScaler`` bound to this backend (``torch.cuda.amp``'s path).

    As ``torch.cuda.amp``'s, both are deprecated spellings: they warn (FutureWarning) and are
    ``backend_sdk.amp.autocast(<backend>, ...)`` / ``backend_sdk.amp.GradScaler(<backend>, ...)``.
    """

    def __init__(self) -> None:
        from backend_sdk import amp as _amp

        class autocast(_amp.autocast):
            """``backend_sdk.amp.autocast(<backend>, ...)`` (deprecated spelling, as torch.cuda.amp.autocast)."""

            def __init__(self, enabled: bool = True, dtype: Optional[_C.dtype] = None,
                         cache_enabled: bool = True) -> None:
                import warnings

                backend = _BACKEND  # read at call time: the generator sets it after this file ran
                warnings.warn(f"`backend_sdk.{backend}.amp.autocast(args...)` is deprecated. Please use "
                              f"`backend_sdk.amp.autocast('{backend}', args...)` instead.", FutureWarning, stacklevel=2)
                super().__init__(backend, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

        class GradScaler(_amp.GradScaler):
            """``backend_sdk.amp.GradScaler(<backend>, ...)`` (deprecated spelling, as torch.cuda.amp.GradScaler)."""

            def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0,
                         backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
                import warnings

                backend = _BACKEND
                warnings.warn(f"`backend_sdk.{backend}.amp.GradScaler(args...)` is deprecated. Please use "
                              f"`backend_sdk.amp.GradScaler('{backend}', args...)` instead.", FutureWarning,
                              stacklevel=2)
                super().__init__(backend, init_scale=init_scale, growth_factor=growth_factor,
                                 backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)

        self.autocast = autocast
        self.GradScaler = GradScaler
        self.custom_fwd = _amp.custom_fwd
        self.custom_bwd = _amp.custom_bwd


amp = _AmpModule()


class _MemoryModule:
    """``<backend>.memory``: the memory functions under ``torch.cuda.memory``'s path (with ``_snapshot`` and
    ``_dump_snapshot``)."""

    def __init__(self, namespace: dict[str, Any]) -> None:
        for name in ("memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
                     "memory_stats", "memory_summary", "memory_snapshot", "reset_peak_memory_stats",
                     "reset_accumulated_memory_stats", "reset_max_memory_allocated", "empty_cache", "mem_get_info",
                     "set_per_process_memory_fraction", "caching_allocator_alloc", "caching_allocator_delete",
                     "get_allocator_backend", "_snapshot", "_dump_snapshot", "_record_memory_history"):
            setattr(self, name, namespace[name])


memory = _MemoryModule(globals())
