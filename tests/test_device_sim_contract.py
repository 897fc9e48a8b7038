"""device_sim through the raw C ABI (ctypes), the loader's checks, and host access to device memory."""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap

import pytest

from backend_sdk import _runtime as rt
import backend_sdk
import device_sim

FIELDS = ("device_count get_device_properties get_device set_device mem_get_info malloc free host_malloc host_free "
          "memcpy memcpy_async memset_async stream_create stream_destroy stream_query stream_synchronize "
          "stream_wait_event event_create event_destroy event_record event_query event_synchronize "
          "event_elapsed_time launch_host_func device_synchronize get_error_string get_last_error_message").split()


class DeviceApi(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("api_version", ctypes.c_uint32), ("reserved0", ctypes.c_uint32)] + [
        (f, ctypes.c_void_p) for f in FIELDS]


def sim_api() -> DeviceApi:
    entry = device_sim.lib().sdk_device_api_entry
    entry.restype = ctypes.POINTER(DeviceApi)
    return entry().contents


def test_struct_layout_matches_the_header():
    api = sim_api()
    assert api.struct_size == ctypes.sizeof(DeviceApi) == 16 + 8 * len(FIELDS)
    assert api.api_version == 1
    assert all(getattr(api, f) for f in FIELDS)


def test_loader_refuses_version_and_size_mismatch():
    good = sim_api()
    bad = DeviceApi.from_buffer_copy(bytes(good))
    bad.api_version = 2
    with pytest.raises(ValueError, match="implements device API version 2, but this SDK implements version 1"):
        rt._rt._attach_device_api("privateusetwo", ctypes.addressof(bad), "fake")
    small = DeviceApi.from_buffer_copy(bytes(good))
    small.struct_size = 64
    with pytest.raises(ValueError, match="struct_size 64, smaller than the 232 bytes of version 1"):
        rt._rt._attach_device_api("privateusetwo", ctypes.addressof(small), "fake")
    missing = DeviceApi.from_buffer_copy(bytes(good))
    missing.malloc = None
    with pytest.raises(ValueError, match="required device API slots NULL: malloc"):
        rt._rt._attach_device_api("privateusetwo", ctypes.addressof(missing), "fake")
    assert not rt.has_device("privateusetwo")
    with pytest.raises(ValueError, match="not an accelerator backend"):
        rt.attach_device_library("cpu", device_sim.library_path())
    with pytest.raises(ValueError, match="cannot load"):
        rt.attach_device_library("privateusetwo", "/nonexistent/libnothing.so")
    lib = os.path.join(os.path.dirname(backend_sdk.__file__), "lib", "libbackend_sdk.so")
    with pytest.raises(ValueError, match="does not export sdk_device_api_entry"):
        rt.attach_device_library("privateusetwo", lib)


def test_contract_bad_input_returns_statuses():
    rt.attach_device_library("privateusethree", device_sim.library_path())
    api = sim_api()
    malloc = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t)(api.malloc)
    free = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32, ctypes.c_void_p)(api.free)
    last = ctypes.CFUNCTYPE(ctypes.c_char_p)(api.get_last_error_message)
    p = ctypes.c_void_p()
    assert malloc(0, ctypes.byref(p), 4096) == 0 and p.value
    assert free(0, p) == 0
    assert free(0, p) == 1 and b"double free" in last()  # SDK_ERROR_INVALID_VALUE
    host = ctypes.create_string_buffer(16)
    assert free(0, ctypes.addressof(host)) == 1 and b"not a pointer into the memory of device 0" in last()
    assert malloc(9, ctypes.byref(p), 16) == 3  # SDK_ERROR_INVALID_DEVICE
    assert malloc(0, ctypes.byref(p), 1 << 62) == 2  # SDK_ERROR_OUT_OF_MEMORY
    assert b"out of memory" in last()
    with pytest.raises(RuntimeError, match="already running"):
        device_sim.configure(num_devices=3)
    device_sim.configure(num_devices=device_sim.num_devices())  # unchanged: fine
    with pytest.raises(ValueError, match="at least 1 MiB"):
        device_sim.configure(memory_bytes=10)


def _run(code: str, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.getcwd()] + sys.path)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=60)


def test_host_access_to_device_memory_is_caught():
    r = _run("""
        import ctypes, device_sim
        from backend_sdk import _runtime as rt
        rt.attach_device_library("privateuseone", device_sim.library_path())
        buf = rt.DeviceBuffer(4096, rt.default_stream("privateuseone:1"))
        print(hex(buf.ptr), flush=True)
        ctypes.string_at(buf.ptr + 8, 4)
        print("unreachable", flush=True)
    """)
    assert r.returncode != 0 and "unreachable" not in r.stdout
    addr = int(r.stdout.split()[0], 16)
    assert f"device_sim: host access to device memory at {hex(addr + 8)}" in r.stderr
    assert "bytes at" in r.stderr and "on device 1" in r.stderr


def test_capacity_and_device_count_from_environment():
    r = _run("""
        import backend_sdk, device_sim
        from backend_sdk import _runtime as rt
        rt.attach_device_library("privateuseone", device_sim.library_path())
        assert rt.device_count("privateuseone") == 3
        s = rt.default_stream("privateuseone:2")
        a = rt.DeviceBuffer(12 << 20, s)
        try:
            rt.DeviceBuffer(12 << 20, s)
        except backend_sdk.OutOfMemoryError as e:
            print("OOM:", e)
        a.free()
        b = rt.DeviceBuffer(12 << 20, s)
        print("ok", rt.memory_stats("privateuseone:2")["num_ooms"])
    """, {"DEVICE_SIM_NUM_DEVICES": "3", "DEVICE_SIM_MEMORY_BYTES": str(16 << 20)})
    assert r.returncode == 0, r.stderr
    assert "OOM: privateuseone out of memory. Tried to allocate 12.00 MiB. Device 2 has a total capacity of 16.00 MiB" in r.stdout
    assert "ok 1" in r.stdout
