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
from backend_sdk import _C
from backend_sdk.utils.python_device import DeviceLibrary, device_api_slots, device_api_struct

def sim_api(raw: bool = False) -> DeviceLibrary:
    return DeviceLibrary(device_sim.lib(), raw=raw)


def copy_of_table(api: DeviceLibrary):
    struct = device_api_struct()
    return struct.from_buffer_copy(ctypes.string_at(api.address, ctypes.sizeof(struct)))


def test_struct_layout_matches_the_header():
    api = sim_api()
    slots = device_api_slots()
    consts = _C._runtime._device_api_constants()
    assert api.table.struct_size == ctypes.sizeof(device_api_struct()) == consts["sizeof(sdk_device_api)"]
    assert api.table.struct_size == 24 + 8 * len(slots)  # header (size, major, minor, extension_start) + slots
    assert (api.major, api.minor) == _C._runtime._device_api_version() == (2, 1)
    assert [s.offset for s in slots] == [24 + 8 * i for i in range(len(slots))]
    assert all(getattr(api, s.name) is not None for s in slots)  # the simulator implements every slot
    assert api.context != 0


def test_loader_refuses_version_and_size_mismatch():
    api = sim_api()
    bad = copy_of_table(api)
    bad.major_version = 3
    with pytest.raises(ValueError, match=r"'fake' implements device API version 3.1, but this SDK \(device API 2.1\) "
                                         r"supports major versions 1 and 2"):
        rt._rt._attach_device_api("privateusetwo", ctypes.addressof(bad), "fake", context=api.context)
    small = copy_of_table(api)
    small.struct_size = 64
    size_2_1 = _C._runtime._device_api_size_of_minor(1)
    with pytest.raises(ValueError, match=f"struct_size 64, smaller than the {size_2_1} bytes of version 2.1"):
        rt._rt._attach_device_api("privateusetwo", ctypes.addressof(small), "fake", context=api.context)
    missing = copy_of_table(api)
    missing.malloc = ctypes.cast(None, type(missing.malloc))
    with pytest.raises(ValueError, match="required device API slots NULL: malloc"):
        rt._rt._attach_device_api("privateusetwo", ctypes.addressof(missing), "fake", context=api.context)
    assert not rt.has_device("privateusetwo")
    with pytest.raises(ValueError, match="not an accelerator backend"):
        rt.attach_device_library("cpu", device_sim.library_path())
    with pytest.raises(ValueError, match="cannot load"):
        rt.attach_device_library("privateusetwo", "/nonexistent/libnothing.so")
    lib = os.path.join(os.path.dirname(backend_sdk.__file__), "lib", "libbackend_sdk.so")
    with pytest.raises(ValueError, match=r"does not export sdk_device_entry\(\) \(version 2\) or "
                                         r"sdk_device_api_entry\(\) \(version 1\)"):
        rt.attach_device_library("privateusetwo", lib)


def test_contract_bad_input_returns_statuses():
    rt.attach_device_library("privateusethree", device_sim.library_path())
    api = sim_api()
    raw = sim_api(raw=True)
    p = ctypes.c_void_p()
    assert api.malloc(0, ctypes.byref(p), 4096) == 0 and p.value
    assert api.free(0, p) == 0
    assert api.free(0, p) == 1 and b"double free" in api.get_last_error_message()  # SDK_ERROR_INVALID_VALUE
    host = ctypes.create_string_buffer(16)
    assert raw.free(0, ctypes.addressof(host)) == 1
    assert b"not a pointer into the memory of device 0" in api.get_last_error_message()
    assert api.malloc(9, ctypes.byref(p), 16) == 3  # SDK_ERROR_INVALID_DEVICE
    assert api.malloc(0, ctypes.byref(p), 1 << 62) == 2  # SDK_ERROR_OUT_OF_MEMORY
    assert b"out of memory" in api.get_last_error_message()
    # A call with another context than the one sdk_device_entry returned is refused (Note [device_sim context]).
    malloc = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p),
                              ctypes.c_size_t)(ctypes.c_void_p.from_address(api.address + 24 + 5 * 8).value)
    assert malloc(api.context + 8, 0, ctypes.byref(p), 16) == 4  # SDK_ERROR_INVALID_HANDLE
    assert b"is not the context sdk_device_entry() returned" in api.get_last_error_message()
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
