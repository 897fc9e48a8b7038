"""The issue's bad-input list, each a clear error (type and message), never a crash or a hang.

Covered elsewhere as well: contract-level double/foreign free (test_device_sim_contract.py),
copy direction and negative sizes through _runtime (test_runtime_streams.py), use after
device lost (test_runtime_faults.py).
"""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

import backend_sdk
from backend_sdk import _runtime as rt
import device_sim
from backend_sdk.utils.python_device import DeviceLibrary

from _helpers import SIM_BACKEND as B


pytestmark = pytest.mark.usefixtures("sim")  # device_sim attached to privateusethree (tests/conftest.py)


# The contract's slots straight from the simulator's table (generated from SDK_DEVICE_API_SLOTS).
_api = DeviceLibrary(device_sim.lib())
host_malloc = _api.host_malloc
host_free = _api.host_free
event_create = _api.event_create
event_destroy = _api.event_destroy
event_record = _api.event_record
last_error = _api.get_last_error_message


def test_double_free_of_pinned_host_memory_at_the_contract():
    p = ctypes.c_void_p()
    assert host_malloc(ctypes.byref(p), 100) == 0 and p.value
    assert host_free(p) == 0
    assert host_free(p) == 1 and b"not a live pinned allocation (double free, or a foreign pointer)" in last_error()
    local = ctypes.create_string_buffer(8)
    assert host_free(ctypes.addressof(local)) == 1


def test_double_free_through_the_sdk_is_harmless():
    buf = rt.DeviceBuffer(64, rt.default_stream(f"{B}:0"))
    buf.free()
    buf.free()
    assert buf.freed


def test_copy_direction_must_match_the_pointers():
    s = rt.default_stream(f"{B}:0")
    host = np.zeros(16, dtype=np.float32)
    buf = rt.DeviceBuffer(host.nbytes, s)
    with pytest.raises(ValueError, match=r"device-to-device but src 0x[0-9a-f]+ is not a device pointer"):
        rt.memcpy(B, buf.ptr, host.ctypes.data, host.nbytes, "d2d", s)
    with pytest.raises(ValueError, match=r"host-to-host but dst 0x[0-9a-f]+ is a pointer into device 0's memory"):
        rt.memcpy(B, buf.ptr, host.ctypes.data, host.nbytes, "h2h")
    with pytest.raises(ValueError, match="device-to-host but src .* is not a device pointer"):
        rt.memcpy(B, host.ctypes.data, host.ctypes.data, host.nbytes, "d2h", s)
    buf.free()


def test_event_recorded_on_another_devices_stream_at_the_contract():
    e = ctypes.c_void_p()
    assert event_create(0, 0, ctypes.byref(e)) == 0
    other = rt.default_stream(f"{B}:1").native_handle
    assert event_record(e, other) == 1
    assert b"the event belongs to device 0 but the stream to device 1" in last_error()
    assert event_destroy(e) == 0


def test_elapsed_time_needs_timing_and_records():
    s = rt.Stream(f"{B}:0")
    never = rt.Event(enable_timing=True)
    timed = rt.record_event(s, rt.Event(enable_timing=True))
    with pytest.raises(ValueError, match="Both events must be recorded"):
        never.elapsed_time(timed)
    with pytest.raises(ValueError, match="enable_timing=True"):
        rt.record_event(s).elapsed_time(timed)


def test_negative_sizes():
    s = rt.default_stream(f"{B}:0")
    buf = rt.DeviceBuffer(64, s)
    with pytest.raises(ValueError, match="memset_async: the size must be non-negative, got -3"):
        rt.memset_async(buf.ptr, 0, -3, s)
    with pytest.raises(ValueError, match="DeviceBuffer: the size must be non-negative, got -1"):
        rt.DeviceBuffer(-1, s)
    with pytest.raises(ValueError, match="memcpy: the size must be non-negative"):
        rt.memcpy(B, buf.ptr, buf.ptr, -8, "d2d")
    buf.free()


def test_capacity_exceeded():
    dev = f"{B}:0"
    total = rt.get_device_properties(dev)["total_memory"]
    with pytest.raises(backend_sdk.OutOfMemoryError) as info:
        rt.DeviceBuffer(total + (1 << 20), rt.default_stream(dev))
    assert "Tried to allocate" in str(info.value) and "Device 0 has a total capacity of" in str(info.value)
    assert isinstance(info.value, MemoryError)
    with pytest.raises(ValueError, match="run past the end of the allocation"):
        buf = rt.DeviceBuffer(512, rt.default_stream(dev))
        try:
            rt.memset_async(buf.ptr, 0, 4 << 20, rt.default_stream(dev))
        finally:
            buf.free()
