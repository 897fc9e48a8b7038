"""utilization() / memory_usage() of the device module on the "sdk.stats" device extension (issue 15;
Note [Device stats extension], Note [Simulated activity]): device_sim reports the union of its kernels' and
copies' busy time over a 200 ms sample period; a device without the extension raises NotImplementedError
naming the backend. Timings use the simulator's timing model on accel:1, which no other test here uses at once."""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import accel
import backend_sdk as sdk
import device_sim
from backend_sdk import _runtime as rt
from backend_sdk.utils import python_device as pd

ROOT = Path(__file__).resolve().parents[1]
PERIOD_S = 0.2  # device_sim's sample period (ActivityMeter::kSamplePeriodNs)


@pytest.fixture
def timing():
    """Restores the timing model after a test that sets it."""
    yield device_sim.configure
    device_sim.configure(launch_latency_us=0, copy_bandwidth_gbps=0)


def _idle(device: int = 1) -> None:
    accel.synchronize(device)
    time.sleep(PERIOD_S + 0.05)  # the whole sample period is past


def test_simulator_lists_the_stats_extension():
    assert rt.device_extensions("accel")["sdk.stats"] == 1
    assert sdk._C._runtime.has_device_stats("accel")
    a = sdk._C._runtime.device_activity("accel:1")
    assert set(a) == {"kernel_percent", "memory_percent", "sample_period_ns"}
    assert 0 < a["sample_period_ns"] <= int(PERIOD_S * 1e9)


def test_idle_device_reports_zero():
    _idle()
    assert accel.utilization(1) == 0 and accel.memory_usage(1) == 0


def test_busy_kernels_give_high_utilization_and_no_memory_usage(timing):
    x = sdk.ones(16, device="accel:1")
    _idle()
    timing(launch_latency_us=60_000)  # each kernel occupies the stream for 60 ms
    with sdk.accel.device(1):
        for _ in range(6):  # 360 ms of back-to-back kernels: longer than the sample period
            x.add_(1)
        time.sleep(0.25)
        during = accel.utilization()  # while they still run: the open interval counts
        accel.synchronize()
        after = accel.utilization()
        mem = accel.memory_usage()
    # (not 100: the worker's gaps between kernels are idle, and long on a loaded machine)
    assert during >= 60, during
    assert after >= 70, after
    assert mem <= 10, mem
    assert isinstance(after, int) and not isinstance(after, bool)
    _idle()
    assert accel.utilization(1) == 0  # the busy interval left the window


def test_copies_give_memory_usage(timing):
    n = 4 << 20
    host = sdk.ones(n // 4, pin_memory=True)
    dst = sdk.empty(n // 4, device="accel:1")
    _idle()
    timing(copy_bandwidth_gbps=n / 0.3 / 1e9)  # the copy takes ~0.3 s
    s = accel.Stream(device=1)
    with s:
        dst.copy_(host, non_blocking=True)
    s.synchronize()
    mem, util = accel.memory_usage("accel:1"), accel.utilization(sdk.device("accel:1"))
    assert mem >= 80, mem
    assert util <= 10, util
    # a synchronous copy to the host counts too
    _idle()
    assert accel.memory_usage(1) == 0
    back = dst.cpu()
    assert accel.memory_usage(1) >= 80 and back[:2].tolist() == [1.0, 1.0]


def test_concurrent_kernels_on_two_streams_count_once(timing):
    """Two streams busy at the same time for 150 ms: the union is 150 ms of the 200 ms period (about 75%); a
    meter that summed the two would report 100 (clamped)."""
    x, y = sdk.ones(16, device="accel:1"), sdk.ones(16, device="accel:1")
    s1, s2 = accel.Stream(device=1), accel.Stream(device=1)
    _idle()
    timing(launch_latency_us=50_000)
    for _ in range(3):
        with s1:
            x.add_(1)
        with s2:
            y.add_(1)
    s1.synchronize()
    s2.synchronize()
    time.sleep(0.05)
    u = accel.utilization(1)
    assert 35 <= u <= 92, u


def test_device_argument_forms_and_errors():
    _idle(0)
    assert accel.utilization() == accel.utilization(0) == accel.utilization("accel") == \
        accel.utilization(sdk.device("accel:0")) == 0
    with pytest.raises(IndexError, match="Invalid device ordinal"):
        accel.utilization(7)
    with pytest.raises(ValueError, match="expected a accel device"):
        accel.memory_usage("cpu")
    with pytest.raises(TypeError, match="expected a device index"):
        accel.memory_usage(1.5)


class _Ext(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("name", ctypes.c_char_p), ("version", ctypes.c_uint32),
                ("reserved0", ctypes.c_uint32), ("next", ctypes.c_void_p), ("query", ctypes.c_void_p)]


def test_attach_checks_the_stats_extension():
    sim = pd.DeviceLibrary(device_sim.lib())
    keep = []

    def attach_with(ext):
        buf = (ctypes.c_char * sim.table.struct_size)()
        ctypes.memmove(buf, sim.address, sim.table.struct_size)
        pd.device_api_struct().from_buffer(buf).extension_start = ctypes.addressof(ext)
        keep.append((buf, ext))
        rt._rt._attach_device_api("privateusetwo", ctypes.addressof(buf), "chain", context=sim.context)

    with pytest.raises(ValueError, match=r"extension 'sdk.stats' of 'chain' declares struct_size 32, smaller than "
                                         r"the 40 bytes of its version 1"):
        attach_with(_Ext(32, b"sdk.stats", 1, 0, None, None))
    with pytest.raises(ValueError, match="extension 'sdk.stats' of 'chain' leaves query NULL"):
        attach_with(_Ext(ctypes.sizeof(_Ext), b"sdk.stats", 1, 0, None, None))
    assert not rt.has_device("privateusetwo")


class _Stats(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("sample_period_ns", ctypes.c_uint64),
                ("kernel_percent", ctypes.c_uint32), ("memory_percent", ctypes.c_uint32)]


def test_raw_query_checks_its_arguments():
    """The C function itself (Note [Device stats extension]): a bad index, a NULL or too small struct."""
    sim = pd.DeviceLibrary(device_sim.lib())
    ext = _Ext.from_address(sim.table.extension_start)
    while ext.name != b"sdk.stats":
        ext = _Ext.from_address(ext.next)
    assert ext.version == 1 and ext.struct_size == ctypes.sizeof(_Ext) == 40
    query = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p)(ext.query)
    ok = _Stats(ctypes.sizeof(_Stats))
    assert query(sim.context, 1, ctypes.byref(ok)) == 0 and 0 < ok.sample_period_ns <= int(PERIOD_S * 1e9)
    assert ok.kernel_percent <= 100 and ok.memory_percent <= 100
    assert query(sim.context, 9, ctypes.byref(ok)) == 3  # SDK_ERROR_INVALID_DEVICE
    assert query(sim.context, 0, None) == 1  # SDK_ERROR_INVALID_VALUE
    small = _Stats(8)
    assert query(sim.context, 0, ctypes.byref(small)) == 1 and small.sample_period_ns == 0
    with pytest.raises(Exception, match="out of range"):
        sdk._C._runtime.device_activity("accel:5")


def test_a_device_without_the_extension_raises_naming_the_backend():
    script = textwrap.dedent("""
        import backend_sdk as sdk
        from backend_sdk.utils import python_device, register_backend
        module = register_backend("nostats", device=python_device.PythonDevice(device_count=1), slot=3)
        for f in (module.utilization, module.memory_usage):
            try:
                f()
            except NotImplementedError as e:
                assert "backend 'nostats'" in str(e) and "'sdk.stats'" in str(e), e
            else:
                raise AssertionError(f"{f.__name__} did not raise")
        print("ok")
    """)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr
