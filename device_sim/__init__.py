"""device_sim: a CPU-backed simulated accelerator.

The simulator implements the SDK's device runtime contract (the C ABI of
``csrc/runtime/DeviceApi.h``) in ``libdevice_sim.so``; the SDK reaches it only
through that ABI, like any vendor device. This package configures it (before
first use) and locates the library::

    import device_sim
    device_sim.configure(num_devices=2, memory_bytes=256 << 20)
    backend_sdk._runtime.attach_device_library("privateusethree", device_sim.library_path())

Device memory cannot be touched by the host: reading or writing a device
pointer from host code aborts the process with a message naming the address
and its allocation.
"""
from __future__ import annotations

import ctypes
import os
from functools import lru_cache

__all__ = ["configure", "library_path", "include_dir", "is_initialized", "num_devices", "memory_bytes", "lib"]

_SDK_SUCCESS = 0


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
    return cdll


def configure(num_devices: int | None = None, memory_bytes: int | None = None) -> None:
    """Sets the device count (1..64) and the memory capacity per device.

    Must run before the simulator's first use (attaching it starts it);
    afterwards only the current values are accepted. Defaults: 2 devices of
    1 GiB, or the environment variables ``DEVICE_SIM_NUM_DEVICES`` and
    ``DEVICE_SIM_MEMORY_BYTES``.
    """
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
