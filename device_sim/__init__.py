"""device_sim: a CPU-backed simulated accelerator.

The simulator implements the SDK's device runtime contract (the C ABI of
``csrc/backend_sdk/runtime/DeviceApi.h``) in ``libdevice_sim.so``; the SDK reaches it only
through that ABI, like any vendor device. This package configures it (before
first use) and locates the library::

    import device_sim
    device_sim.configure(num_devices=2, memory_bytes=256 << 20)
    backend_sdk._runtime.attach_device_library("privateusethree", device_sim.library_path())

Device memory cannot be touched by the host: reading or writing a device
pointer from host code aborts the process with a message naming the address
and its allocation.

Faults (``inject("alloc_failure" | "kernel_fault" | "device_lost", device)``,
``reset_device``), a Chrome trace of the devices' work (``start_trace``,
``stop_trace``, ``export_chrome_trace``) and an optional timing model
(``configure(launch_latency_us=..., copy_bandwidth_gbps=...)``) make it behave
like a configured device; see ``include/device_sim.h``.
"""
from __future__ import annotations

import ctypes
import os
from functools import lru_cache
from typing import Any

__all__ = ["configure", "library_path", "include_dir", "is_initialized", "num_devices", "memory_bytes", "lib",
           "inject", "link_timing", "reset_device", "is_device_lost", "FAULT_KINDS", "start_trace", "stop_trace",
           "export_chrome_trace", "trace_event_count", "timing"]

_SDK_SUCCESS = 0
#: The fault kinds of :func:`inject` and their C constants (DEVICE_SIM_FAULT_*).
FAULT_KINDS = {"alloc_failure": 1, "kernel_fault": 2, "device_lost": 3, "link_down": 4}


def library_path() -> str:
    """Absolute path of ``libdevice_sim.so`` (pass it to attach_device_library)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libdevice_sim.so")
    if not os.path.exists(path):
        raise FileNotFoundError(f"device_sim: {path} is missing; build the project (pip install .)")
    return path


def include_dir() -> str:
    """Directory holding ``device_sim.h`` (for vendors' simulated kernels)."""
    here = os.path.dirname(os.path.abspath(__file__))
    installed = os.path.join(here, "include")
    return installed


@lru_cache(maxsize=None)
def lib() -> ctypes.CDLL:
    """The simulator library loaded with ctypes (the same instance the SDK attaches)."""
    cdll = ctypes.CDLL(library_path())
    cdll.device_sim_configure.argtypes = [ctypes.c_int32, ctypes.c_int64]
    cdll.device_sim_configure.restype = ctypes.c_int32
    cdll.device_sim_is_initialized.restype = ctypes.c_int32
    cdll.device_sim_num_devices.restype = ctypes.c_int32
    cdll.device_sim_memory_bytes.restype = ctypes.c_int64
    cdll.device_sim_translate.argtypes = [ctypes.c_void_p]
    cdll.device_sim_translate.restype = ctypes.c_void_p
    cdll.device_sim_device_of.argtypes = [ctypes.c_void_p]
    cdll.device_sim_device_of.restype = ctypes.c_int32
    cdll.device_sim_kernel_sleep.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    cdll.device_sim_kernel_sleep.restype = ctypes.c_int32
    cdll.device_sim_kernel_axpb_f32.argtypes = [
        ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_float, ctypes.c_float]
    cdll.device_sim_kernel_axpb_f32.restype = ctypes.c_int32
    cdll.device_sim_kernel_empty.argtypes = [ctypes.c_void_p]
    cdll.device_sim_kernel_empty.restype = ctypes.c_int32
    cdll.device_sim_inject.argtypes = [ctypes.c_int32, ctypes.c_int32, ctypes.c_void_p, ctypes.c_int64, ctypes.c_char_p]
    cdll.device_sim_inject.restype = ctypes.c_int32
    cdll.device_sim_reset_device.argtypes = [ctypes.c_int32]
    cdll.device_sim_reset_device.restype = ctypes.c_int32
    cdll.device_sim_is_device_lost.argtypes = [ctypes.c_int32]
    cdll.device_sim_is_device_lost.restype = ctypes.c_int32
    cdll.device_sim_kernel_fail.argtypes = [ctypes.c_char_p]
    cdll.device_sim_kernel_fail.restype = ctypes.c_int32
    cdll.device_sim_start_trace.argtypes = [ctypes.c_int64]
    cdll.device_sim_start_trace.restype = ctypes.c_int32
    cdll.device_sim_stop_trace.restype = ctypes.c_int32
    cdll.device_sim_trace_event_count.restype = ctypes.c_int64
    cdll.device_sim_trace_dropped.restype = ctypes.c_int64
    cdll.device_sim_export_chrome_trace.argtypes = [ctypes.c_char_p]
    cdll.device_sim_export_chrome_trace.restype = ctypes.c_int32
    cdll.device_sim_set_timing.argtypes = [ctypes.c_double, ctypes.c_double]
    cdll.device_sim_set_timing.restype = ctypes.c_int32
    cdll.device_sim_get_timing.argtypes = [ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double)]
    cdll.device_sim_get_timing.restype = None
    cdll.device_sim_inject_link_down.argtypes = [ctypes.c_int32, ctypes.c_int64]
    cdll.device_sim_inject_link_down.restype = ctypes.c_int32
    cdll.device_sim_set_link_timing.argtypes = [ctypes.c_double, ctypes.c_double]
    cdll.device_sim_set_link_timing.restype = ctypes.c_int32
    cdll.device_sim_get_link_timing.argtypes = [ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double)]
    cdll.device_sim_get_link_timing.restype = None
    cdll.device_sim_launch_kernel.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    cdll.device_sim_launch_kernel.restype = ctypes.c_int32
    cdll.device_sim_launch_kernel_named.argtypes = [
        ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    cdll.device_sim_launch_kernel_named.restype = ctypes.c_int32
    cdll.device_sim_launch_kernel_ex.argtypes = [
        ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    cdll.device_sim_launch_kernel_ex.restype = ctypes.c_int32
    return cdll


def _last_error() -> str:
    """The simulator's detailed message for the calling thread's last failing call."""
    f = lib().device_sim_last_error_message
    f.restype = ctypes.c_char_p
    return (f() or b"").decode(errors="replace")


def _check_device(what: str, device: int) -> int:
    d = int(device)
    n = num_devices_()
    if not 0 <= d < n:
        raise IndexError(f"device_sim.{what}: device index {device} is out of range (device_sim has {n} devices)")
    return d


def _stream_handle(stream: Any) -> int | None:
    if stream is None:
        return None
    handle = getattr(stream, "native_handle", stream)
    if not isinstance(handle, int) or isinstance(handle, bool):
        raise TypeError(f"device_sim.inject: stream must be a backend_sdk Stream or a native handle, got "
                        f"{type(stream).__name__}")
    if not 0 <= handle < 1 << 64:
        raise ValueError(f"device_sim.inject: stream handle {handle} is not a valid stream handle of device_sim")
    # Anything else is checked by the simulator (Note [Simulated handles]).
    return handle


def inject(kind: str, device: int = 0, *, stream: Any = None, count: int = 1, message: str | None = None) -> None:
    """Injects a fault on simulated ``device``.

    * ``"alloc_failure"``: the next ``count`` device allocations fail (the SDK's
      caching allocator frees its cache, retries, then raises
      ``backend_sdk.OutOfMemoryError``).
    * ``"kernel_fault"``: the next ``count`` kernels launched on ``stream`` (a
      ``backend_sdk`` Stream or native handle; None: any stream of the device)
      fault when they run. The fault surfaces as ``backend_sdk.AcceleratorError``
      at the next synchronising call on the device ("kernel fault in 'axpb_f32'
      on stream 0x.. of device 0"); after that the device works again.
    * ``"device_lost"``: every call on the device fails with
      ``AcceleratorError`` ("device 0 was lost") until :func:`reset_device`.
    * ``"link_down"``: the next ``count`` collectives of the device's simccl
      communicators (the "sdk.collectives" extension) find its link down: no
      data moves and EVERY rank of each such collective gets an error naming
      this rank at its next synchronisation (Note [Simulated collectives]).

    The simulator starts if it has not yet.
    """
    if kind not in FAULT_KINDS:
        raise ValueError(f"device_sim.inject: unknown fault kind {kind!r}; expected one of {sorted(FAULT_KINDS)}")
    if int(count) < 0:
        raise ValueError(f"device_sim.inject: count must be non-negative, got {count}")
    d = _check_device("inject", device)
    if kind == "link_down":
        if stream is not None or message is not None:
            raise ValueError("device_sim.inject('link_down'): takes a device and a count, not a stream or message")
        if lib().device_sim_inject_link_down(d, int(count)) != _SDK_SUCCESS:
            raise ValueError(f"device_sim.inject({kind!r}, {device}): {_last_error()}")
        return
    msg = None if message is None else str(message).encode()
    status = lib().device_sim_inject(FAULT_KINDS[kind], d, _stream_handle(stream), int(count), msg)
    if status != _SDK_SUCCESS:
        raise ValueError(f"device_sim.inject({kind!r}, {device}): {_last_error()}")


def reset_device(device: int) -> None:
    """Resets simulated ``device``: waits for its queued work, then clears loss, pending faults and injections."""
    d = _check_device("reset_device", device)
    status = lib().device_sim_reset_device(d)
    if status != _SDK_SUCCESS:
        raise RuntimeError(f"device_sim.reset_device({device}): {_last_error()}")


def is_device_lost(device: int) -> bool:
    """True while ``device`` is lost (after ``inject("device_lost", device)``, until reset_device)."""
    return bool(lib().device_sim_is_device_lost(int(device)))


def start_trace(capacity: int = 1 << 20) -> None:
    """Starts recording every launch, copy, memset and event record (clears earlier records).

    At most ``capacity`` records are kept; older ones are overwritten.
    """
    if int(capacity) <= 0:
        raise ValueError(f"device_sim.start_trace: capacity must be positive, got {capacity}")
    lib().device_sim_start_trace(int(capacity))


def stop_trace() -> None:
    """Stops recording (the records stay until the next start_trace)."""
    lib().device_sim_stop_trace()


def trace_event_count() -> int:
    """Number of records currently held."""
    return int(lib().device_sim_trace_event_count())


def export_chrome_trace(path: str | os.PathLike[str]) -> None:
    """Writes the records as Chrome trace JSON (chrome://tracing, Perfetto): pid = device, tid = stream."""
    status = lib().device_sim_export_chrome_trace(os.fsencode(path))
    if status != _SDK_SUCCESS:
        raise OSError(_last_error())


def timing() -> dict[str, float]:
    """The timing model: ``launch_latency_us`` and ``copy_bandwidth_gbps`` (0: off)."""
    lat, bw = ctypes.c_double(), ctypes.c_double()
    lib().device_sim_get_timing(ctypes.byref(lat), ctypes.byref(bw))
    return {"launch_latency_us": lat.value, "copy_bandwidth_gbps": bw.value}


def link_timing() -> dict[str, float]:
    """The simccl link model: ``{"link_latency_us": .., "link_bandwidth_gbps": ..}`` (0: off)."""
    lat, bw = ctypes.c_double(), ctypes.c_double()
    lib().device_sim_get_link_timing(ctypes.byref(lat), ctypes.byref(bw))
    return {"link_latency_us": lat.value, "link_bandwidth_gbps": bw.value}


def configure(num_devices: int | None = None, memory_bytes: int | None = None, *,
              launch_latency_us: float | None = None, copy_bandwidth_gbps: float | None = None,
              link_latency_us: float | None = None, link_bandwidth_gbps: float | None = None) -> None:
    """Sets the device count (1..64), the memory capacity per device and the timing model.

    ``num_devices`` and ``memory_bytes`` must be set before the simulator's
    first use (attaching it starts it); afterwards only the current values are
    accepted. Defaults: 2 devices of 1 GiB, or the environment variables
    ``DEVICE_SIM_NUM_DEVICES`` and ``DEVICE_SIM_MEMORY_BYTES``.

    The timing model can change at any time: a kernel then takes at least
    ``launch_latency_us`` microseconds and a copy or memset of n bytes at least
    n / ``copy_bandwidth_gbps`` nanoseconds (0 turns a part off; defaults from
    ``DEVICE_SIM_LAUNCH_LATENCY_US`` and ``DEVICE_SIM_COPY_BANDWIDTH_GBPS``).
    Events' ``elapsed_time`` reflects it. ``link_latency_us`` and
    ``link_bandwidth_gbps`` model the links of the simccl collectives: each
    transfer step of a collective takes at least latency + bytes / bandwidth
    (defaults from ``DEVICE_SIM_LINK_LATENCY_US`` and
    ``DEVICE_SIM_LINK_BANDWIDTH_GBPS``; 0: off).
    """
    for name, value in (("link_latency_us", link_latency_us), ("link_bandwidth_gbps", link_bandwidth_gbps)):
        if value is not None and not float(value) >= 0.0:
            raise ValueError(f"device_sim.configure: {name} must be >= 0, got {value}")
    if link_latency_us is not None or link_bandwidth_gbps is not None:
        lib().device_sim_set_link_timing(-1.0 if link_latency_us is None else float(link_latency_us),
                                         -1.0 if link_bandwidth_gbps is None else float(link_bandwidth_gbps))
        if num_devices is None and memory_bytes is None and launch_latency_us is None and copy_bandwidth_gbps is None:
            return
    for name, value in (("launch_latency_us", launch_latency_us), ("copy_bandwidth_gbps", copy_bandwidth_gbps)):
        if value is not None and not float(value) >= 0.0:
            raise ValueError(f"device_sim.configure: {name} must be >= 0, got {value}")
    if launch_latency_us is not None or copy_bandwidth_gbps is not None:
        lib().device_sim_set_timing(-1.0 if launch_latency_us is None else float(launch_latency_us),
                                    -1.0 if copy_bandwidth_gbps is None else float(copy_bandwidth_gbps))
        if num_devices is None and memory_bytes is None:
            return
    n = -1 if num_devices is None else int(num_devices)
    m = -1 if memory_bytes is None else int(memory_bytes)
    if num_devices is not None and not 1 <= n <= 64:
        raise ValueError(f"device_sim.configure: num_devices must be in 1..64, got {num_devices}")
    if memory_bytes is not None and m < (1 << 20):
        raise ValueError(f"device_sim.configure: memory_bytes must be at least 1 MiB, got {memory_bytes}")
    status = lib().device_sim_configure(n, m)
    if status != _SDK_SUCCESS:
        raise RuntimeError(
            f"device_sim.configure(num_devices={num_devices}, memory_bytes={memory_bytes}): the simulator is already "
            f"running with {num_devices_()} devices of {memory_bytes_()} bytes; configure it before its first use")


def is_initialized() -> bool:
    """True once the simulator has started (its configuration is then fixed)."""
    return bool(lib().device_sim_is_initialized())


def num_devices_() -> int:
    return int(lib().device_sim_num_devices())


def memory_bytes_() -> int:
    return int(lib().device_sim_memory_bytes())


def num_devices() -> int:
    """The configured number of simulated devices."""
    return num_devices_()


def memory_bytes() -> int:
    """The configured memory capacity of each simulated device, in bytes."""
    return memory_bytes_()
