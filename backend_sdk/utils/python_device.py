"""The device runtime contract in Python: a device implemented without a compiler.

A vendor subclasses :class:`PythonDevice` (or uses it as it is) and attaches an
instance to a PrivateUse backend::

    import backend_sdk
    from backend_sdk.utils import python_device

    backend_sdk.utils.rename_privateuse2_backend("npu_py")
    device = python_device.PythonDevice(device_count=2, total_memory=256 << 20)
    python_device.attach_python_device("npu_py", device)
    x = backend_sdk.empty(4, device="npu_py:1")   # memory from device.malloc

How it works: the C struct ``sdk_device_api`` (csrc/backend_sdk/runtime/DeviceApi.h)
is built once per process, its ctypes signatures generated from the contract's slot list
(``_C._runtime._device_api_slots()``, the header's one X-macro), with one ctypes trampoline
per slot; :func:`attach_python_device` attaches it with a context naming the device
(Note [Device context]), like any device library, so the SDK's streams, events, guards and caching
allocator run on top of it unchanged. A trampoline never lets a Python
exception cross the C boundary: it catches it, keeps its text as the calling
thread's last error message (``get_last_error_message``) and returns a status
(:class:`DeviceError` carries its own; ``MemoryError`` is
``SDK_ERROR_OUT_OF_MEMORY``; anything else ``SDK_ERROR_UNKNOWN``). The SDK then
raises its typed error (``OutOfMemoryError``, ``ValueError``,
``AcceleratorError``...) naming the operation and the device's message.

What a Python device is (the base class's choices, a subclass may change them):

* **Host-addressable.** Device memory is numpy byte arrays owned by the device;
  a device pointer is the address of such an array's data, so host code *can*
  read it (unlike device_sim, which catches stray host dereferences). Kernels
  written in Python reach it with :meth:`PythonDevice.as_numpy`.
* **Synchronous.** Work "queued" on a stream (copies, memsets, host functions)
  runs at once in the calling thread; queries always say "done"; events record
  ``time.perf_counter()`` when recorded, so ``elapsed_time`` measures the host
  time between two records.
* **Finite.** Each device has ``total_memory`` bytes; an allocation beyond it
  fails with ``SDK_ERROR_OUT_OF_MEMORY`` (the SDK's caching allocator then frees
  its cache, retries and raises ``OutOfMemoryError``).
* **Faults.** :meth:`PythonDevice.inject_fault` makes the next synchronising
  call on a device fail with ``SDK_ERROR_KERNEL_FAULT`` (an asynchronous error,
  as on hardware); reading it clears it.
* Every call takes the GIL (ctypes callbacks do), so one Python device serves
  one call at a time.
"""
from __future__ import annotations

import ctypes
import dataclasses
import itertools
import threading
import time
from typing import Any, Callable

import numpy as np

__all__ = [
    "DeviceError", "DeviceProperties", "PythonDevice", "PythonEvent", "PythonStream", "attach_python_device",
    "attached_python_device", "register_contract_kernels", "register_cpu_fallback", "tensor_as_numpy", "numpy_dtype",
    "numpy_kernel", "inplace_kernel", "out_kernel", "meta_twin",
    "SDK_SUCCESS", "SDK_ERROR_INVALID_VALUE", "SDK_ERROR_OUT_OF_MEMORY", "SDK_ERROR_INVALID_DEVICE",
    "SDK_ERROR_INVALID_HANDLE", "SDK_ERROR_NOT_READY", "SDK_ERROR_NOT_SUPPORTED", "SDK_ERROR_KERNEL_FAULT",
    "SDK_ERROR_DEVICE_LOST", "SDK_ERROR_UNKNOWN", "SDK_DTYPE_UINT8", "SDK_DTYPE_INT8", "SDK_DTYPE_INT16",
    "SDK_DTYPE_INT32", "SDK_DTYPE_INT64", "SDK_DTYPE_FLOAT16", "SDK_DTYPE_FLOAT32", "SDK_DTYPE_FLOAT64",
    "SDK_DTYPE_BOOL", "SDK_DTYPE_BFLOAT16", "Slot", "device_api_slots", "device_api_struct", "DeviceLibrary",
]

# Status codes and constants of csrc/backend_sdk/runtime/DeviceApi.h.
SDK_SUCCESS = 0
SDK_ERROR_INVALID_VALUE = 1
SDK_ERROR_OUT_OF_MEMORY = 2
SDK_ERROR_INVALID_DEVICE = 3
SDK_ERROR_INVALID_HANDLE = 4
SDK_ERROR_NOT_READY = 5
SDK_ERROR_NOT_SUPPORTED = 6
SDK_ERROR_KERNEL_FAULT = 7
SDK_ERROR_DEVICE_LOST = 8
SDK_ERROR_UNKNOWN = 9
SDK_DEVICE_API_MAJOR = 2
# Note [Device dtype numbers]: bits of DeviceProperties.supported_dtypes (fixed; not the ScalarType order).
SDK_DTYPE_UINT8 = 0
SDK_DTYPE_INT8 = 1
SDK_DTYPE_INT16 = 2
SDK_DTYPE_INT32 = 3
SDK_DTYPE_INT64 = 4
SDK_DTYPE_FLOAT16 = 5
SDK_DTYPE_FLOAT32 = 6
SDK_DTYPE_FLOAT64 = 7
SDK_DTYPE_BOOL = 11
SDK_DTYPE_BFLOAT16 = 15
SDK_EVENT_TIMING = 1
SDK_EVENT_BLOCKING = 2
MEMCPY_KINDS = ("h2h", "h2d", "d2h", "d2d")

_ERROR_STRINGS = {
    SDK_SUCCESS: "success", SDK_ERROR_INVALID_VALUE: "invalid value", SDK_ERROR_OUT_OF_MEMORY: "out of memory",
    SDK_ERROR_INVALID_DEVICE: "invalid device", SDK_ERROR_INVALID_HANDLE: "invalid handle",
    SDK_ERROR_NOT_READY: "not ready", SDK_ERROR_NOT_SUPPORTED: "not supported",
    SDK_ERROR_KERNEL_FAULT: "kernel fault", SDK_ERROR_DEVICE_LOST: "device lost", SDK_ERROR_UNKNOWN: "unknown error",
}


class DeviceError(Exception):
    """Raised by a :class:`PythonDevice` method to fail a call with a given status and message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = int(status)


@dataclasses.dataclass
class DeviceProperties:
    """What ``get_device_properties`` reports for one device (``sdk_device_properties``)."""

    name: str
    total_memory: int
    supported_dtypes: int = (1 << 64) - 1  # bit SDK_DTYPE_X: dtype X is supported; all ones: every dtype
    stream_priority_least: int = 0
    stream_priority_greatest: int = -1


class PythonStream:
    """A stream of a :class:`PythonDevice`: work runs when it is queued, so it is always complete."""

    def __init__(self, device: int, priority: int) -> None:
        self.device = device
        self.priority = priority

    def __repr__(self) -> str:
        return f"PythonStream(device={self.device}, priority={self.priority})"


class PythonEvent:
    """An event of a :class:`PythonDevice`: ``timestamp`` is the host time of its last record (None: never)."""

    def __init__(self, device: int, flags: int) -> None:
        self.device = device
        self.flags = flags
        self.timestamp: float | None = None

    @property
    def enable_timing(self) -> bool:
        """True if created with SDK_EVENT_TIMING."""
        return bool(self.flags & SDK_EVENT_TIMING)


class PythonDevice:
    """A device in Python: host-addressable, synchronous, finite memory (see the module docstring).

    Override any method to change a behaviour; a method fails a call by raising
    :class:`DeviceError` (or any exception: ``SDK_ERROR_UNKNOWN``).
    """

    #: The device name reported in its properties.
    name = "python_device"
    #: Alignment of device pointers, in bytes.
    alignment = 256

    def __init__(self, device_count: int = 1, total_memory: int = 256 << 20) -> None:
        if not 0 <= int(device_count) <= 64:
            raise ValueError(f"PythonDevice: device_count must be in 0..64, got {device_count}")
        if int(total_memory) <= 0:
            raise ValueError(f"PythonDevice: total_memory must be positive, got {total_memory}")
        self._count = int(device_count)
        self._total = int(total_memory)
        self._current = threading.local()
        self._lock = threading.RLock()
        self._allocations: dict[int, tuple[int, np.ndarray, int]] = {}  # address -> (device, array, nbytes)
        self._host_allocations: dict[int, np.ndarray] = {}
        self._used = [0] * self._count
        self._pending_faults: dict[int, str] = {}

    # ---- devices ----

    def device_count(self) -> int:
        """Number of devices."""
        return self._count

    def check_device(self, device: int, what: str) -> int:
        """Raises DeviceError(SDK_ERROR_INVALID_DEVICE) unless 0 <= device < device_count()."""
        if not 0 <= device < self._count:
            raise DeviceError(SDK_ERROR_INVALID_DEVICE,
                              f"{what}: device {device} does not exist ({self.name} has {self._count} devices)")
        return device

    def get_device_properties(self, device: int) -> DeviceProperties:
        """The properties of ``device``."""
        self.check_device(device, "get_device_properties")
        return DeviceProperties(name=self.name, total_memory=self._total)

    def get_device(self) -> int:
        """The calling thread's current device."""
        return getattr(self._current, "device", 0)

    def set_device(self, device: int) -> None:
        """Sets the calling thread's current device."""
        self._current.device = self.check_device(device, "set_device")

    def mem_get_info(self, device: int) -> tuple[int, int]:
        """(free bytes, total bytes) of ``device``."""
        self.check_device(device, "mem_get_info")
        return self._total - self._used[device], self._total

    # ---- memory ----

    def malloc(self, device: int, nbytes: int) -> int:
        """Allocates ``nbytes`` on ``device``; returns the address (0 for 0 bytes)."""
        self.check_device(device, "malloc")
        if nbytes == 0:
            return 0
        with self._lock:
            free = self._total - self._used[device]
            if nbytes > free:
                raise DeviceError(SDK_ERROR_OUT_OF_MEMORY, f"malloc: cannot allocate {nbytes} bytes on device "
                                  f"{device} of {self.name}: {free} of {self._total} bytes free")
            array = np.empty(nbytes + self.alignment, dtype=np.uint8)
            base = array.ctypes.data
            address = (base + self.alignment - 1) // self.alignment * self.alignment
            self._allocations[address] = (device, array, nbytes)
            self._used[device] += nbytes
            return address

    def free(self, device: int, ptr: int) -> None:
        """Frees an allocation of ``device`` (0 is a no-op; a foreign pointer is SDK_ERROR_INVALID_VALUE)."""
        if ptr == 0:
            return
        with self._lock:
            entry = self._allocations.get(ptr)
            if entry is None or entry[0] != device:
                raise DeviceError(SDK_ERROR_INVALID_VALUE, f"free: {ptr:#x} is not a live allocation of device "
                                  f"{device}")
            del self._allocations[ptr]
            self._used[device] -= entry[2]

    def host_malloc(self, nbytes: int) -> int:
        """Allocates pinned host memory (here: any host memory)."""
        if nbytes == 0:
            return 0
        array = np.empty(nbytes + self.alignment, dtype=np.uint8)
        address = (array.ctypes.data + self.alignment - 1) // self.alignment * self.alignment
        with self._lock:
            self._host_allocations[address] = array
        return address

    def host_free(self, ptr: int) -> None:
        """Frees pinned host memory."""
        if ptr == 0:
            return
        with self._lock:
            if self._host_allocations.pop(ptr, None) is None:
                raise DeviceError(SDK_ERROR_INVALID_VALUE, f"host_free: {ptr:#x} is not a live host allocation")

    def device_of(self, ptr: int, nbytes: int = 1) -> int:
        """The device whose allocation holds [ptr, ptr + nbytes); DeviceError(INVALID_VALUE) if none."""
        with self._lock:
            for address, (device, _, size) in self._allocations.items():
                if address <= ptr and ptr + nbytes <= address + size:
                    return device
        raise DeviceError(SDK_ERROR_INVALID_VALUE, f"{ptr:#x} (+{nbytes} bytes) is not in device memory of {self.name}")

    def as_numpy(self, ptr: int, nbytes: int) -> np.ndarray:
        """A writable uint8 numpy view of ``nbytes`` of memory at ``ptr`` (device memory is host-addressable)."""
        if nbytes == 0:
            return np.empty(0, dtype=np.uint8)
        return np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(ptr))

    # ---- copies ----

    def memcpy(self, dst: int, src: int, nbytes: int, kind: str) -> None:
        """Synchronous copy (``kind``: "h2h", "h2d", "d2h", "d2d"); reports a pending fault first."""
        devices = set()
        if kind in ("d2h", "d2d"):
            devices.add(self.device_of(src, nbytes))
        if kind in ("h2d", "d2d"):
            devices.add(self.device_of(dst, nbytes))
        for d in sorted(devices):
            self.raise_pending_fault(d)
        if nbytes:
            ctypes.memmove(dst, src, nbytes)

    def memcpy_async(self, dst: int, src: int, nbytes: int, kind: str, stream: PythonStream) -> None:
        """Copy on a stream (runs at once)."""
        if kind in ("d2h", "d2d"):
            self.device_of(src, nbytes)
        if kind in ("h2d", "d2d"):
            self.device_of(dst, nbytes)
        if nbytes:
            ctypes.memmove(dst, src, nbytes)

    def memset_async(self, dst: int, value: int, nbytes: int, stream: PythonStream) -> None:
        """Sets ``nbytes`` of device memory to the byte ``value`` (runs at once)."""
        self.device_of(dst, nbytes)
        if nbytes:
            ctypes.memset(dst, value & 0xFF, nbytes)

    # ---- streams ----

    def stream_create(self, device: int, priority: int) -> PythonStream:
        """A new stream on ``device`` (priority clamped to the device's range)."""
        self.check_device(device, "stream_create")
        props = self.get_device_properties(device)
        priority = min(max(priority, props.stream_priority_greatest), props.stream_priority_least)
        return PythonStream(device, priority)

    def stream_destroy(self, stream: PythonStream) -> None:
        """Releases a stream."""

    def stream_query(self, stream: PythonStream) -> bool:
        """True if the stream's work is done (always, here)."""
        return True

    def stream_synchronize(self, stream: PythonStream) -> None:
        """Waits for the stream's work; reports a pending fault of its device."""
        self.raise_pending_fault(stream.device)

    def stream_wait_event(self, stream: PythonStream, event: PythonEvent) -> None:
        """Orders the stream after the event (nothing to wait for: work is synchronous)."""

    # ---- events ----

    def event_create(self, device: int, flags: int) -> PythonEvent:
        """A new event on ``device``."""
        self.check_device(device, "event_create")
        return PythonEvent(device, flags)

    def event_destroy(self, event: PythonEvent) -> None:
        """Releases an event."""

    def event_record(self, event: PythonEvent, stream: PythonStream) -> None:
        """Records the event on the stream (its timestamp is now)."""
        if event.device != stream.device:
            raise DeviceError(SDK_ERROR_INVALID_VALUE, f"event_record: the event belongs to device {event.device}, "
                              f"the stream to device {stream.device}")
        event.timestamp = time.perf_counter()

    def event_query(self, event: PythonEvent) -> bool:
        """True if the recorded work is done (always, here)."""
        return True

    def event_synchronize(self, event: PythonEvent) -> None:
        """Waits for the event; reports a pending fault of its device."""
        self.raise_pending_fault(event.device)

    def event_elapsed_time(self, start: PythonEvent, end: PythonEvent) -> float:
        """Milliseconds between two timing events' records."""
        if not (start.enable_timing and end.enable_timing):
            raise DeviceError(SDK_ERROR_INVALID_VALUE, "event_elapsed_time: both events need SDK_EVENT_TIMING")
        if start.timestamp is None or end.timestamp is None:
            raise DeviceError(SDK_ERROR_INVALID_VALUE, "event_elapsed_time: both events must have been recorded")
        return (end.timestamp - start.timestamp) * 1000.0

    # ---- host functions, synchronisation, faults ----

    def launch_host_func(self, stream: PythonStream, fn: Callable[[], None]) -> None:
        """Runs ``fn()`` in order on the stream (at once)."""
        fn()

    def device_synchronize(self, device: int) -> None:
        """Waits for all work of ``device``; reports a pending fault."""
        self.check_device(device, "device_synchronize")
        self.raise_pending_fault(device)

    def inject_fault(self, device: int = 0, message: str = "injected kernel fault") -> None:
        """Makes the next synchronising call on ``device`` fail with SDK_ERROR_KERNEL_FAULT (then the device works)."""
        self.check_device(device, "inject_fault")
        with self._lock:
            self._pending_faults.setdefault(device, message)

    def raise_pending_fault(self, device: int) -> None:
        """Raises and clears the device's pending asynchronous error, if any."""
        with self._lock:
            message = self._pending_faults.pop(device, None)
        if message is not None:
            raise DeviceError(SDK_ERROR_KERNEL_FAULT, f"{message} on device {device} of {self.name}")


# ---- the C struct ----

_c_stream = ctypes.c_void_p
_c_event = ctypes.c_void_p
_status = ctypes.c_int32


class _CProperties(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("name", ctypes.c_char * 256), ("total_memory", ctypes.c_uint64),
                ("supported_dtypes", ctypes.c_uint64), ("stream_priority_least", ctypes.c_int32),
                ("stream_priority_greatest", ctypes.c_int32)]


_HOST_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

# C types of the slot parameters and returns in csrc/backend_sdk/runtime/DeviceApi.h. A slot with a type not
# listed here fails loudly when the table is built (add the type here with the slot).
_C_TYPES: dict[str, Any] = {
    "void*": ctypes.c_void_p, "const void*": ctypes.c_void_p, "void**": ctypes.POINTER(ctypes.c_void_p),
    "int32_t": ctypes.c_int32, "int32_t*": ctypes.POINTER(ctypes.c_int32), "uint32_t": ctypes.c_uint32,
    "size_t": ctypes.c_size_t, "size_t*": ctypes.POINTER(ctypes.c_size_t), "float*": ctypes.POINTER(ctypes.c_float),
    "sdk_status": _status, "sdk_memcpy_kind": ctypes.c_int32, "sdk_stream_t": _c_stream, "sdk_event_t": _c_event,
    "sdk_stream_t*": ctypes.POINTER(ctypes.c_void_p), "sdk_event_t*": ctypes.POINTER(ctypes.c_void_p),
    "sdk_host_fn": _HOST_FN, "sdk_device_properties*": ctypes.POINTER(_CProperties),
    "const char*": ctypes.c_void_p,  # returned as an address the trampoline keeps alive
}


def _c_type(text: str, where: str) -> Any:
    key = text.replace(" *", "*").strip()
    if key not in _C_TYPES:
        raise TypeError(f"python_device: no ctypes type for C type '{key}' ({where}); add it to _C_TYPES")
    return _C_TYPES[key]


def _parse_params(params: str, where: str) -> list[tuple[str, Any]]:
    """'(void* context, int32_t* count)' -> [('context', c_void_p), ('count', POINTER(c_int32))]."""
    out = []
    for p in params.strip()[1:-1].split(","):
        p = p.strip()
        if not p or p == "void":
            continue
        cut = max(p.rfind(" "), p.rfind("*"))
        out.append((p[cut + 1:], _c_type(p[:cut + 1], where)))
    return out


@dataclasses.dataclass(frozen=True)
class Slot:
    """One slot of the device contract, as SDK_DEVICE_API_SLOTS declares it (``_C._runtime._device_api_slots``)."""

    name: str
    restype: Any
    argtypes: tuple
    required: bool
    minor: int
    offset: int

    @property
    def prototype(self) -> Any:
        """The ctypes function type of the slot (context first)."""
        return ctypes.CFUNCTYPE(self.restype, *self.argtypes)


_slots_cache: list[Slot] | None = None


def device_api_slots() -> list[Slot]:
    """The contract's slots in struct order, built from the one X-macro in runtime/DeviceApi.h."""
    global _slots_cache
    if _slots_cache is None:
        from .. import _C

        slots = []
        for d in _C._runtime._device_api_slots():
            params = _parse_params(d["params"], d["name"])
            if not params or params[0][1] is not ctypes.c_void_p:
                raise TypeError(f"python_device: slot {d['name']} does not take the context first")
            slots.append(Slot(d["name"], _c_type(d["return_type"], d["name"]), tuple(t for _, t in params),
                              bool(d["required"]), int(d["minor"]), int(d["offset"])))
        _slots_cache = slots
    return _slots_cache


def device_api_struct() -> type:
    """The ctypes Structure of ``sdk_device_api`` (header, then every slot as its function type), layout-checked
    against the C struct's offsets."""
    global _struct_cache
    if _struct_cache is None:
        from .. import _C

        slots = device_api_slots()

        class _CDeviceApi(ctypes.Structure):
            _fields_ = ([("struct_size", ctypes.c_size_t), ("major_version", ctypes.c_uint32),
                         ("minor_version", ctypes.c_uint32), ("extension_start", ctypes.c_void_p)]
                        + [(s.name, s.prototype) for s in slots])

        for s in slots:
            if getattr(_CDeviceApi, s.name).offset != s.offset:
                raise RuntimeError(f"python_device: slot {s.name} at offset {getattr(_CDeviceApi, s.name).offset}, "
                                   f"the C struct has it at {s.offset}")
        if ctypes.sizeof(_CDeviceApi) != _C._runtime._device_api_constants()["sizeof(sdk_device_api)"]:
            raise RuntimeError("python_device: sdk_device_api size mismatch")
        _struct_cache = _CDeviceApi
    return _struct_cache


_struct_cache: type | None = None


class _CInstance(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("sdk_major_version", ctypes.c_uint32),
                ("sdk_minor_version", ctypes.c_uint32), ("api", ctypes.c_void_p), ("context", ctypes.c_void_p)]


def _raw_type(t: Any) -> Any:
    """c_void_p for every pointer and function type (to pass any address), the type itself otherwise."""
    if t in (ctypes.c_void_p, _c_stream, _c_event, _HOST_FN) or isinstance(t, type(ctypes.POINTER(ctypes.c_int))):
        return ctypes.c_void_p
    return t


class DeviceLibrary:
    """A device library's contract, callable slot by slot from Python (bring-up debugging, tests).

    ``DeviceLibrary(ctypes.CDLL(path))`` calls the library's ``sdk_device_entry`` and exposes every slot of
    ``sdk_device_api`` as an attribute that passes the device's context first: ``lib.malloc(0, byref(p), 64)``.
    A slot the device left NULL is None. With ``raw=True`` every pointer parameter is a plain ``c_void_p``
    (any integer address may be passed, as a fuzzer or a bad-input test needs). ``table`` is the struct,
    ``context`` the context, ``major``/``minor`` the version it declares.
    """

    def __init__(self, lib: ctypes.CDLL, *, raw: bool = False) -> None:
        from .. import _C

        entry = lib.sdk_device_entry
        entry.restype = ctypes.c_int32
        entry.argtypes = [ctypes.POINTER(_CInstance)]
        major, minor = _C._runtime._device_api_version()
        inst = _CInstance(ctypes.sizeof(_CInstance), major, minor, None, None)
        status = entry(ctypes.byref(inst))
        if status != SDK_SUCCESS or not inst.api:
            raise RuntimeError(f"DeviceLibrary: sdk_device_entry() of {lib._name} failed with status {status}")
        self.address: int = inst.api
        self.context: int = inst.context or 0
        self.table = device_api_struct().from_address(self.address)
        self.major: int = self.table.major_version
        self.minor: int = self.table.minor_version
        for slot in device_api_slots():
            address = ctypes.c_void_p.from_address(self.address + slot.offset).value
            if not address:
                setattr(self, slot.name, None)
                continue
            argtypes = [_raw_type(t) for t in slot.argtypes] if raw else list(slot.argtypes)
            fn = ctypes.CFUNCTYPE(ctypes.c_char_p if slot.restype is ctypes.c_void_p else slot.restype,
                                  *argtypes)(address)
            setattr(self, slot.name, _bind_context(fn, self.context))

    def last_error(self) -> str:
        """The device's get_last_error_message() text."""
        return (self.get_last_error_message() or b"").decode(errors="replace")


def _bind_context(fn: Any, context: int) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        return fn(context, *args)
    return call


class _Table:
    """The one sdk_device_api struct every PythonDevice shares (Note [Device context]): each trampoline finds
    the device's _Bridge from the context the SDK passes first, so there is one ctypes callback per slot per
    process, not per device."""

    def __init__(self) -> None:
        from .. import _C

        self.bridges: dict[int, _Bridge] = {}
        self.ids = itertools.count(1)
        self.unknown = ctypes.create_string_buffer(b"unrecognised status")
        self.empty = ctypes.create_string_buffer(b"")
        fields: dict[str, Any] = {}
        for slot in device_api_slots():
            if hasattr(_Bridge, "_" + slot.name):
                fields[slot.name] = slot.prototype(self._trampoline(slot))
        major, minor = _C._runtime._device_api_version()
        struct = device_api_struct()
        self.struct = struct(ctypes.sizeof(struct), major, minor, None, **fields)

    def add(self, bridge: _Bridge) -> int:
        context = next(self.ids) * 16  # non-zero; the SDK only passes it back
        self.bridges[context] = bridge
        return context

    def _trampoline(self, slot: Slot) -> Callable[..., Any]:
        name = slot.name
        returns_status = slot.restype is _status

        # Note: a trampoline is the only code C calls; nothing raised below escapes it.
        def call(context: int | None, *args: Any) -> Any:
            bridge = self.bridges.get(context or 0)
            if not returns_status:  # the two string slots never fail
                try:
                    return getattr(bridge, "_" + name)(*args) if bridge else ctypes.addressof(self.unknown)
                except BaseException:  # noqa: BLE001
                    return ctypes.addressof(self.empty)
            if bridge is None:
                return SDK_ERROR_INVALID_HANDLE
            try:
                status = getattr(bridge, "_" + name)(*args)
                return SDK_SUCCESS if status is None else int(status)
            except DeviceError as e:
                bridge._set_error(str(e))
                return e.status
            except MemoryError as e:
                bridge._set_error(f"{name}: {e}")
                return SDK_ERROR_OUT_OF_MEMORY
            except BaseException as e:  # noqa: BLE001 - must not cross the C boundary
                bridge._set_error(f"{name}: {type(e).__name__}: {e}")
                return SDK_ERROR_UNKNOWN
        return call


_table: _Table | None = None


def _shared_table() -> _Table:
    global _table
    if _table is None:
        _table = _Table()
    return _table


class _Bridge:
    """The handle tables and messages of one attached PythonDevice, reached through its context."""

    def __init__(self, device: PythonDevice) -> None:
        self.device = device
        self.handles: dict[int, Any] = {}
        self.ids = itertools.count(1)
        self.local = threading.local()
        self.strings = {code: ctypes.create_string_buffer(text.encode()) for code, text in _ERROR_STRINGS.items()}
        self.unknown = ctypes.create_string_buffer(b"unrecognised status")
        self.context = _shared_table().add(self)

    def _set_error(self, message: str) -> None:
        self.local.message = ctypes.create_string_buffer(message.encode("utf-8", "replace"))

    def _get_error_string(self, status: int) -> int:
        return ctypes.addressof(self.strings.get(status, self.unknown))

    def _get_last_error_message(self) -> int:
        buf = getattr(self.local, "message", None)
        return ctypes.addressof(buf) if buf is not None else 0

    def _new_handle(self, obj: Any) -> int:
        h = next(self.ids) * 16  # non-zero, looks like an aligned pointer
        self.handles[h] = obj
        return h

    def _handle(self, h: int | None, cls: type) -> Any:
        obj = self.handles.get(h or 0)
        if not isinstance(obj, cls):
            raise DeviceError(SDK_ERROR_INVALID_HANDLE, f"{h!r} is not a live {cls.__name__} handle")
        return obj

    @staticmethod
    def _kind(kind: int) -> str:
        if not 0 <= kind < len(MEMCPY_KINDS):
            raise DeviceError(SDK_ERROR_INVALID_VALUE, f"memcpy: invalid copy kind {kind}")
        return MEMCPY_KINDS[kind]

    # ---- slots ----
    def _device_count(self, out: Any) -> None:
        out[0] = self.device.device_count()

    def _get_device_properties(self, device: int, props: Any) -> None:
        p = self.device.get_device_properties(device)
        c = _CProperties(ctypes.sizeof(_CProperties), p.name.encode()[:255], p.total_memory,
                         p.supported_dtypes & ((1 << 64) - 1), p.stream_priority_least, p.stream_priority_greatest)
        size = min(props.contents.struct_size, ctypes.sizeof(_CProperties))
        keep = props.contents.struct_size
        ctypes.memmove(props, ctypes.byref(c), size)
        props.contents.struct_size = keep

    def _get_device(self, out: Any) -> None:
        out[0] = self.device.get_device()

    def _set_device(self, device: int) -> None:
        self.device.set_device(device)

    def _mem_get_info(self, device: int, free: Any, total: Any) -> None:
        f, t = self.device.mem_get_info(device)
        free[0], total[0] = f, t

    def _malloc(self, device: int, out: Any, nbytes: int) -> None:
        out[0] = self.device.malloc(device, nbytes) or None

    def _free(self, device: int, ptr: int | None) -> None:
        self.device.free(device, ptr or 0)

    def _host_malloc(self, out: Any, nbytes: int) -> None:
        out[0] = self.device.host_malloc(nbytes) or None

    def _host_free(self, ptr: int | None) -> None:
        self.device.host_free(ptr or 0)

    def _memcpy(self, dst: int | None, src: int | None, nbytes: int, kind: int) -> None:
        self.device.memcpy(dst or 0, src or 0, nbytes, self._kind(kind))

    def _memcpy_async(self, dst: int | None, src: int | None, nbytes: int, kind: int, stream: int | None) -> None:
        self.device.memcpy_async(dst or 0, src or 0, nbytes, self._kind(kind), self._handle(stream, PythonStream))

    def _memset_async(self, dst: int | None, value: int, nbytes: int, stream: int | None) -> None:
        self.device.memset_async(dst or 0, value, nbytes, self._handle(stream, PythonStream))

    def _stream_create(self, device: int, priority: int, out: Any) -> None:
        out[0] = self._new_handle(self.device.stream_create(device, priority))

    def _stream_destroy(self, stream: int | None) -> None:
        self.device.stream_destroy(self._handle(stream, PythonStream))
        del self.handles[stream]

    def _stream_query(self, stream: int | None) -> int:
        return SDK_SUCCESS if self.device.stream_query(self._handle(stream, PythonStream)) else SDK_ERROR_NOT_READY

    def _stream_synchronize(self, stream: int | None) -> None:
        self.device.stream_synchronize(self._handle(stream, PythonStream))

    def _stream_wait_event(self, stream: int | None, event: int | None) -> None:
        self.device.stream_wait_event(self._handle(stream, PythonStream), self._handle(event, PythonEvent))

    def _event_create(self, device: int, flags: int, out: Any) -> None:
        out[0] = self._new_handle(self.device.event_create(device, flags))

    def _event_destroy(self, event: int | None) -> None:
        self.device.event_destroy(self._handle(event, PythonEvent))
        del self.handles[event]

    def _event_record(self, event: int | None, stream: int | None) -> None:
        self.device.event_record(self._handle(event, PythonEvent), self._handle(stream, PythonStream))

    def _event_query(self, event: int | None) -> int:
        return SDK_SUCCESS if self.device.event_query(self._handle(event, PythonEvent)) else SDK_ERROR_NOT_READY

    def _event_synchronize(self, event: int | None) -> None:
        self.device.event_synchronize(self._handle(event, PythonEvent))

    def _event_elapsed_time(self, out: Any, start: int | None, end: int | None) -> None:
        out[0] = self.device.event_elapsed_time(self._handle(start, PythonEvent), self._handle(end, PythonEvent))

    def _launch_host_func(self, stream: int | None, fn: Any, release: Any, user_data: int | None) -> None:
        # Synchronous device: fn always runs, so `release` (for dropped work) is never needed.
        self.device.launch_host_func(self._handle(stream, PythonStream), lambda: fn(user_data))

    def _device_synchronize(self, device: int) -> None:
        self.device.device_synchronize(device)


_attached: dict[str, _Bridge] = {}


def attach_python_device(backend: str, device: PythonDevice) -> None:
    """Attaches ``device`` to ``backend`` (a renamed PrivateUse backend or "privateuseone/two/three").

    Like ``backend_sdk._runtime.attach_device_library``: once per process and
    backend (attaching the same device object again is a no-op; another one is
    a ValueError), and it registers the backend's caching allocator. The
    struct and its trampolines live for the rest of the process.
    """
    from .. import _C

    if not isinstance(device, PythonDevice):
        raise TypeError(f"attach_python_device: expected a PythonDevice, got {type(device).__name__}")
    bridge = _attached.get(backend)
    if bridge is not None and bridge.device is device:
        return
    bridge = _Bridge(device)
    table = _shared_table()
    try:
        _C._runtime._attach_device_api(backend, ctypes.addressof(table.struct),
                                       f"Python device {type(device).__module__}.{type(device).__qualname__}",
                                       table, context=bridge.context)
    except BaseException:
        del table.bridges[bridge.context]
        raise
    _attached[backend] = bridge


def attached_python_device(backend: str) -> PythonDevice | None:
    """The PythonDevice attached to ``backend`` in this process, or None."""
    bridge = _attached.get(backend)
    return bridge.device if bridge is not None else None


# ---- helpers for backends written in Python ----

def register_contract_kernels(backend: str) -> None:
    """Registers the SDK's contract-backed kernels for ``backend``: ``empty.memory_format``,
    ``empty_strided``, ``resize_``, ``_local_scalar_dense`` (item) and ``copy_`` in every direction.

    They are the C++ kernels of csrc/backend_sdk/ops/DeviceOps.h (``Note [Contract-backed
    kernels]``); a device within-device strided or converting copy runs on the
    host over the device memory, which is right for host-addressable devices
    such as a :class:`PythonDevice` (``Note [Host-addressable devices]``,
    csrc/python/PyRuntime.cpp). Once per backend: a second call is a ValueError.
    """
    from .. import _C

    key = _C._dispatch_key_name(backend)
    if key in _contract_kernels_registered:
        raise ValueError(f"register_contract_kernels: the contract-backed kernels of '{backend}' are already "
                         "registered (once per process)")
    _C._runtime._register_contract_kernels(backend)
    _contract_kernels_registered.add(key)


_contract_kernels_registered: set[str] = set()


def register_cpu_fallback(backend: str) -> None:
    """Registers the SDK's boxed CPU fallback (``Note [CPU fallback]``, csrc/backend_sdk/ops/DeviceOps.h) for ``backend``:
    every operator without a kernel of the backend runs on the CPU (inputs copied there, results and mutated
    arguments copied back), warning once per operator."""
    from .. import _C

    _C._runtime._register_cpu_fallback(backend)


def numpy_dtype(dtype: Any) -> np.dtype:
    """The numpy dtype of a backend_sdk dtype (bfloat16: ml_dtypes.bfloat16); TypeError if there is none."""
    from .._factories import _numpy_dtype_table

    for np_dtype, sdk_dtype in _numpy_dtype_table().items():
        if sdk_dtype == dtype:
            return np_dtype
    raise TypeError(f"{dtype} has no numpy equivalent")


def tensor_as_numpy(tensor: Any) -> np.ndarray:
    """A writable numpy view of a tensor on a host-addressable device (a :class:`PythonDevice`), with its
    sizes and strides: what a kernel written in Python computes on. Writing through it does not bump the
    tensor's version counter (write results with ``copy_`` where autograd may have saved the tensor)."""
    dtype = numpy_dtype(tensor.dtype)
    shape = tuple(tensor.shape)
    if tensor.numel() == 0:
        return np.empty(shape, dtype=dtype)
    strides = tuple(s * dtype.itemsize for s in tensor.stride())
    extent = (sum((n - 1) * s for n, s in zip(shape, tensor.stride())) + 1) * dtype.itemsize
    flat = np.ctypeslib.as_array((ctypes.c_uint8 * extent).from_address(tensor.data_ptr()))
    return np.lib.stride_tricks.as_strided(flat.view(dtype), shape=shape, strides=strides)


# ---- kernels written with numpy ------------------------------------------------------------------------------
# What every Python backend's kernels need around their numpy line: argument checks and the result's metadata
# from the SDK's Meta kernels, the device checks, allocation on the device, the inputs converted to the
# result's dtype (the SDK's type promotion), and the in-place / out= forms. A backend supplies only the numpy
# computation (samples/python_backend, the `--python-only` scaffold).

def _on_device(value: Any) -> bool:
    from .. import Tensor

    return isinstance(value, Tensor) and value.device.type not in ("cpu", "meta")


def meta_twin(value: Any) -> Any:
    """A meta tensor with a device tensor's geometry; anything else unchanged (CPU tensors here are 0-d CPU
    scalars, Python numbers, which the Meta kernels must still see as such for type promotion)."""
    if _on_device(value):
        from .. import empty_strided

        return empty_strided(tuple(value.shape), value.stride(), dtype=value.dtype, device="meta")
    return value


def _check_devices(overload: Any, args: tuple, kwargs: dict) -> None:
    """Every tensor argument on one device (0-d CPU tensors are scalars), with PyTorch's message."""
    from .. import Tensor, _C

    first = None
    for t in list(args) + list(kwargs.values()):
        if not isinstance(t, Tensor) or (t.device.type == "cpu" and t.dim() == 0):
            continue
        if first is None:
            first = t.device
        elif t.device != first:
            raise _C.ValueRuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                             f"{first} and {t.device}! (when checking arguments for {overload.__name__})")


def _meta_call(overload: Any, args: tuple, kwargs: dict) -> Any:
    _check_devices(overload, args, kwargs)
    return overload(*[meta_twin(a) for a in args], **{k: meta_twin(v) for k, v in kwargs.items()})


def _host(value: Any, dtype: Any) -> Any:
    """The numpy view of a tensor argument, converted to the result dtype; other values unchanged."""
    from .. import Tensor

    if isinstance(value, Tensor):
        array = tensor_as_numpy(value) if _on_device(value) else value.numpy()
        return array.astype(numpy_dtype(dtype), copy=False)
    return value


def numpy_kernel(overload: Any, compute: Callable[..., np.ndarray]) -> Callable[..., Any]:
    """A kernel for the functional ``overload`` (e.g. ``backend_sdk.ops.aten.add.Tensor``) of a backend whose
    device is host-addressable: the overload's Meta kernel checks the arguments and gives the result's sizes
    and dtype, the result is allocated on the arguments' device, and ``compute`` gets the arguments as numpy
    arrays already converted to the result dtype (other arguments as they are) and returns the values.
    Register it with ``Library("aten", "IMPL", backend).impl(name, kernel)``."""
    from .. import empty

    def kernel(*args: Any, **kwargs: Any) -> Any:
        result = _meta_call(overload, args, kwargs)
        where = next(a.device for a in list(args) + list(kwargs.values()) if _on_device(a))
        out = empty(tuple(result.shape), dtype=result.dtype, device=where)
        if out.numel():
            tensor_as_numpy(out)[...] = compute(*[_host(a, result.dtype) for a in args], **kwargs)
        return out
    return kernel


def inplace_kernel(functional: Callable[..., Any], overload: Any) -> Callable[..., Any]:
    """The in-place form ``self.op_(...)`` of a functional kernel: the in-place overload's Meta kernel checks
    the call (broadcast shape, result type castable to self's dtype, overlap), then ``self.copy_`` writes the
    result (converting to self's dtype and bumping the version counter)."""
    def kernel(self: Any, *args: Any, **kwargs: Any) -> Any:
        _meta_call(overload, (self,) + args, kwargs)
        return self.copy_(functional(self, *args, **kwargs))
    return kernel


def out_kernel(functional: Callable[..., Any], overload: Any) -> Callable[..., Any]:
    """The ``out=`` form of a functional kernel: the out= overload's Meta kernel checks the call and out's
    dtype, then out is resized to the result's shape and written with ``copy_``."""
    def kernel(*args: Any, out: Any, **kwargs: Any) -> Any:
        try:
            _meta_call(overload, args, dict(kwargs, out=out))
        except NotImplementedError:  # no Meta kernel for this out= overload: copy_ below still checks shapes
            pass
        result = functional(*args, **kwargs)
        if tuple(out.shape) != tuple(result.shape):
            out.resize_(tuple(result.shape))
        return out.copy_(result)
    return kernel
