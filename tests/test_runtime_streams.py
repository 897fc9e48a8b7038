"""Streams, events, guards and devices of the device runtime, on the simulator (PrivateUse3, not renamed)."""
from __future__ import annotations

import sys
import threading
import time

import numpy as np
import pytest

import backend_sdk
from backend_sdk import _runtime as rt
import device_sim

from _helpers import SIM_BACKEND as B, d2h, h2d


pytestmark = pytest.mark.usefixtures("sim")  # device_sim attached to privateusethree (tests/conftest.py)


def test_devices_and_properties():
    assert rt.has_device(B)
    assert rt.device_count(B) == device_sim.num_devices() >= 2
    p = rt.get_device_properties(f"{B}:1")
    assert p["name"] == "device_sim" and p["total_memory"] == device_sim.memory_bytes()
    assert p["stream_priority_greatest"] < p["stream_priority_least"]
    with pytest.raises(IndexError, match="out of range"):
        rt.get_device_properties(f"{B}:7")
    with pytest.raises(IndexError, match="out of range"):
        rt.set_device(f"{B}:5")
    with pytest.raises(ValueError, match="not an accelerator backend"):
        rt.device_count("cpu")


def test_device_guard_and_stream_guard_restore():
    assert rt.current_device(B) == 0
    with rt.device_guard(f"{B}:1"):
        assert rt.current_device(B) == 1
        assert rt.current_stream(B).device == backend_sdk.device(f"{B}:1")
    assert rt.current_device(B) == 0
    s = rt.Stream(f"{B}:1")
    assert rt.current_stream(f"{B}:1") == rt.default_stream(f"{B}:1")
    with rt.stream(s):
        assert rt.current_device(B) == 1 and rt.current_stream(f"{B}:1") == s
        # the allocator allocates on the current device and stream
        buf = rt.DeviceBuffer(64, rt.current_stream(B))
        assert buf.device == backend_sdk.device(f"{B}:1")
        buf.free()
    assert rt.current_device(B) == 0 and rt.current_stream(f"{B}:1") == rt.default_stream(f"{B}:1")


def test_current_device_is_per_thread():
    seen = []
    with rt.device_guard(f"{B}:1"):
        t = threading.Thread(target=lambda: seen.append(rt.current_device(B)))
        t.start()
        t.join()
    assert seen == [0]


def test_stream_pool_round_robin_and_priorities():
    streams = {rt.Stream(f"{B}:0").stream_id for _ in range(40)}
    assert len(streams) == 16  # one pool's worth, handed out round-robin
    high = rt.Stream(f"{B}:0", priority=-1)
    assert high.priority == -1 and rt.Stream(f"{B}:0").priority == 0


def test_ordering_within_a_stream(sim):
    s = rt.Stream(f"{B}:0")
    order: list[int] = []
    for i in range(20):
        if i % 5 == 0:
            sim.device_sim_kernel_sleep(s.native_handle, 2000)
        s.launch_host_func(lambda i=i: order.append(i))
    s.synchronize()
    assert order == list(range(20))


def test_query_before_and_after_completion(sim):
    s = rt.Stream(f"{B}:0")
    e = rt.Event()
    assert e.query()  # never recorded: complete
    sim.device_sim_kernel_sleep(s.native_handle, 100_000)
    e.record(s)
    assert not s.query() and not e.query()
    e.synchronize()
    assert e.query() and s.query()


def test_elapsed_time(sim):
    s = rt.Stream(f"{B}:0")
    start, end = rt.Event(enable_timing=True), rt.Event(enable_timing=True)
    start.record(s)
    sim.device_sim_kernel_sleep(s.native_handle, 20_000)
    end.record(s)
    end.synchronize()
    ms = start.elapsed_time(end)
    assert 15.0 <= ms < 1000.0


def test_elapsed_time_bad_input(sim):
    s = rt.Stream(f"{B}:0")
    plain, timed = rt.Event(), rt.Event(enable_timing=True)
    plain.record(s)
    timed.record(s)
    with pytest.raises(ValueError, match="enable_timing"):
        plain.elapsed_time(timed)
    with pytest.raises(ValueError, match="recorded"):
        timed.elapsed_time(rt.Event(enable_timing=True))
    other = rt.Event(enable_timing=True)
    sim.device_sim_kernel_sleep(s.native_handle, 50_000)
    other.record(s)
    with pytest.raises(ValueError, match="not completed"):
        timed.elapsed_time(other)
    s.synchronize()


def test_event_recorded_on_another_devices_stream():
    e = rt.Event()
    e.record(rt.Stream(f"{B}:0"))
    with pytest.raises(ValueError, match="cannot be recorded on stream"):
        e.record(rt.Stream(f"{B}:1"))
    assert e.device == backend_sdk.device(f"{B}:0")


@pytest.mark.parametrize("second_device", [0, 1])
def test_wait_across_streams_and_devices(sim, second_device):
    s1 = rt.Stream(f"{B}:0")
    s2 = rt.Stream(f"{B}:{second_device}")
    order: list[str] = []
    sim.device_sim_kernel_sleep(s1.native_handle, 30_000)
    s1.launch_host_func(lambda: order.append("first"))
    e = rt.record_event(s1)
    s2.wait_event(e)
    s2.launch_host_func(lambda: order.append("second"))
    s2.synchronize()
    assert order == ["first", "second"]


def test_wait_stream_orders_copies(sim):
    n = 1 << 16
    src = np.arange(n, dtype=np.float32)
    out = np.zeros(n, dtype=np.float32)
    s1, s2 = rt.Stream(f"{B}:0"), rt.Stream(f"{B}:1")
    a = rt.DeviceBuffer(src.nbytes, s1)
    b = rt.DeviceBuffer(src.nbytes, s2)
    sim.device_sim_kernel_sleep(s1.native_handle, 20_000)
    h2d(a, src, s1)
    sim.device_sim_kernel_axpb_f32(s1.native_handle, a.ptr, a.ptr, n, 2.0, 1.0)
    rt.wait_stream(s2, s1)
    rt.memcpy(B, b.ptr, a.ptr, src.nbytes, "d2d", s2)  # between devices
    d2h(out, b, s2)
    s2.synchronize()
    np.testing.assert_array_equal(out, src * 2 + 1)
    with pytest.raises(ValueError, match="memory is on privateusethree:0 but the stream is"):
        a.record_stream(s2)  # record_stream takes a stream of the memory's device


def test_synchronous_copies_and_device_synchronize(sim):
    src = np.arange(1000, dtype=np.int64)
    out = np.zeros_like(src)
    buf = rt.DeviceBuffer(src.nbytes, rt.default_stream(f"{B}:1"))
    h2d(buf, src)
    d2h(out, buf)
    np.testing.assert_array_equal(out, src)
    host = np.zeros_like(src)
    rt.memcpy(B, host.ctypes.data, src.ctypes.data, src.nbytes, "h2h")
    np.testing.assert_array_equal(host, src)
    rt.memset_async(buf.ptr, 0xFF, src.nbytes, rt.default_stream(f"{B}:1"))
    rt.synchronize(f"{B}:1")
    d2h(out, buf)
    assert (out == -1).all()


def test_copy_bad_input():
    src = np.arange(16, dtype=np.float32)
    buf = rt.DeviceBuffer(src.nbytes, rt.default_stream(f"{B}:0"))
    with pytest.raises(ValueError, match="host-to-device but dst .* is not a device pointer"):
        rt.memcpy(B, src.ctypes.data, buf.ptr, src.nbytes, "h2d")
    with pytest.raises(ValueError, match="device-to-host but dst .* is a pointer into device 0"):
        rt.memcpy(B, buf.ptr, src.ctypes.data, src.nbytes, "d2h")
    with pytest.raises(ValueError, match="run past the end"):
        rt.memcpy(B, buf.ptr, src.ctypes.data, 3 << 20, "h2d")  # past the 2 MiB segment
    with pytest.raises(ValueError, match="non-negative"):
        rt.memcpy(B, buf.ptr, src.ctypes.data, -1, "h2d")
    with pytest.raises(ValueError, match="kind must be"):
        rt.memcpy(B, buf.ptr, src.ctypes.data, 4, "sideways")
    with pytest.raises(ValueError, match="non-negative"):
        rt.DeviceBuffer(-5, rt.default_stream(f"{B}:0"))


def test_host_function_exception_does_not_kill_the_stream(monkeypatch):
    s = rt.Stream(f"{B}:0")
    ran, reported = [], []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: reported.append(u.exc_value))

    def bad():
        raise RuntimeError("boom")

    s.launch_host_func(bad)
    s.launch_host_func(lambda: ran.append(1))
    s.synchronize()
    assert ran == [1]
    assert len(reported) == 1 and str(reported[0]) == "boom"


def test_work_on_two_streams_of_one_device_runs_concurrently(sim):
    # Note [Worker spin]: two kernels enqueued back to back on two streams as the spinning worker wakes
    # used to both wait for that one worker (issue 15 saw 5 of 12 trials serialised). Sleep kernels need
    # no CPU, so concurrency shows on a loaded machine too: every trial takes one kernel's time, not two.
    dev = f"{B}:0"
    a, b = rt.Stream(dev), rt.Stream(dev)
    serialised = 0
    for _ in range(8):
        start = time.perf_counter()
        sim.device_sim_kernel_sleep(a.native_handle, 120_000)
        sim.device_sim_kernel_sleep(b.native_handle, 120_000)
        a.synchronize()
        b.synchronize()
        serialised += time.perf_counter() - start > 0.2
    assert serialised == 0, f"{serialised} of 8 trials ran the two streams one after the other"
