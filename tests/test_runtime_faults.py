"""device_sim faults (alloc failure, kernel fault, device lost), fork safety, Chrome trace and the timing model."""
from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import backend_sdk
from backend_sdk import _runtime as rt
import device_sim

from _helpers import SIM_BACKEND as B, d2h, h2d
MiB = 1 << 20
KERNEL_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


pytestmark = pytest.mark.usefixtures("sim")  # device_sim attached to privateusethree (tests/conftest.py)


@pytest.fixture(autouse=True)
def healthy_devices():
    yield
    for d in range(rt.device_count(B)):
        device_sim.reset_device(d)
    device_sim.configure(launch_latency_us=0, copy_bandwidth_gbps=0)


def axpb(sim, s, y, x, n, a, b):
    assert sim.device_sim_kernel_axpb_f32(s.native_handle, y.ptr, x.ptr, n, a, b) == 0


# ---- allocation failure ----

def test_alloc_failure_retry_succeeds_then_oom():
    dev = f"{B}:1"
    s = rt.default_stream(dev)
    rt.empty_cache(B)
    rt.reset_accumulated_memory_stats(dev)
    device_sim.inject("alloc_failure", 1, count=1)
    a = rt.DeviceBuffer(30 * MiB, s)  # the first device malloc fails; the allocator's retry succeeds
    assert rt.memory_stats(dev)["num_alloc_retries"] == 1
    a.free()
    rt.empty_cache(B)
    device_sim.inject("alloc_failure", 1, count=2)
    with pytest.raises(backend_sdk.OutOfMemoryError) as info:
        rt.DeviceBuffer(30 * MiB, s)
    msg = str(info.value)
    assert "Tried to allocate 30.00 MiB" in msg and "injected allocation failure" in msg
    assert rt.memory_stats(dev)["num_ooms"] == 1
    b = rt.DeviceBuffer(30 * MiB, s)  # the injection is used up
    b.free()
    rt.empty_cache(B)


# ---- kernel faults ----

KERNEL_FAULT = r"kernel fault in 'axpb_f32' on stream 0x[0-9a-f]+ of device 0"


@pytest.mark.parametrize("sync", ["stream", "event", "device", "d2h_copy"])
def test_injected_kernel_fault_surfaces_at_the_next_synchronisation(sim, sync):
    s = rt.Stream(f"{B}:0")
    n = 256
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(n, dtype=np.float32)
    a, y = rt.DeviceBuffer(x.nbytes, s), rt.DeviceBuffer(x.nbytes, s)
    h2d(a, x, s)
    device_sim.inject("kernel_fault", 0, stream=s)
    axpb(sim, s, y, a, n, 2.0, 0.0)  # returns at once: the fault is asynchronous
    e = rt.record_event(s)
    with pytest.raises(backend_sdk.AcceleratorError, match=KERNEL_FAULT) as info:
        if sync == "stream":
            s.synchronize()
        elif sync == "event":
            e.synchronize()
        elif sync == "device":
            rt.synchronize(f"{B}:0")
        else:
            d2h(out, y)  # a synchronous device-to-host copy
    assert isinstance(info.value, RuntimeError)
    assert hex(s.native_handle) in str(info.value)
    # The error was read: the device works again.
    s.synchronize()
    axpb(sim, s, y, a, n, 2.0, 1.0)
    d2h(out, y, s)
    s.synchronize()
    np.testing.assert_array_equal(out, x * 2 + 1)


def test_kernel_fault_targets_one_stream(sim):
    s1, s2 = rt.Stream(f"{B}:0"), rt.Stream(f"{B}:0")
    assert s1 != s2
    device_sim.inject("kernel_fault", 0, stream=s1, message="illegal memory access")
    assert sim.device_sim_kernel_empty(s2.native_handle) == 0
    s2.synchronize()  # the other stream's kernel does not fault
    assert sim.device_sim_kernel_empty(s1.native_handle) == 0
    with pytest.raises(backend_sdk.AcceleratorError,
                       match=r"kernel fault in 'empty' on stream 0x[0-9a-f]+ of device 0: illegal memory access"):
        s1.synchronize()
    assert sim.device_sim_kernel_empty(s1.native_handle) == 0
    s1.synchronize()  # one injected fault only


def test_kernel_reports_its_own_fault(sim):
    s = rt.Stream(f"{B}:0")
    ran = []

    def div_kernel(_args):
        ran.append(1)
        assert sim.device_sim_kernel_fail(b"integer division by zero") == 0

    fn = KERNEL_FN(div_kernel)
    assert sim.device_sim_launch_kernel_named(s.native_handle, b"div_i64", ctypes.cast(fn, ctypes.c_void_p), None, 0) == 0
    with pytest.raises(backend_sdk.AcceleratorError,
                       match=r"kernel fault in 'div_i64' on stream 0x[0-9a-f]+ of device 0: integer division by zero"):
        s.synchronize()
    assert ran == [1]
    s.synchronize()
    # Outside a kernel it is refused (SDK_ERROR_INVALID_VALUE).
    assert sim.device_sim_kernel_fail(b"x") == 1


def test_only_the_first_fault_is_kept_and_later_ones_are_counted(sim):
    s = rt.Stream(f"{B}:0")
    device_sim.inject("kernel_fault", 0, stream=s, count=3)
    for _ in range(3):
        sim.device_sim_kernel_empty(s.native_handle)
    with pytest.raises(backend_sdk.AcceleratorError, match=r"and 2 later faults on device 0"):
        s.synchronize()
    s.synchronize()


def test_fault_read_by_the_allocator_is_raised_not_lost(sim):
    # empty_cache waits for the record_stream events of freed blocks; a fault
    # that wait reports belongs to the user, so empty_cache raises it.
    s, side = rt.Stream(f"{B}:0"), rt.Stream(f"{B}:0")
    buf = rt.DeviceBuffer(4096, s)
    device_sim.inject("kernel_fault", 0, stream=side)
    sim.device_sim_kernel_empty(side.native_handle)
    buf.record_stream(side)
    buf.free()
    with pytest.raises(backend_sdk.AcceleratorError, match="kernel fault in 'empty'"):
        rt.empty_cache(B)
    side.synchronize()


# ---- device lost ----

def test_device_lost_until_reset(sim):
    dev = f"{B}:1"
    s = rt.Stream(dev)
    s0 = rt.Stream(f"{B}:0")
    x = np.arange(1024, dtype=np.float32)
    out = np.zeros_like(x)
    buf = rt.DeviceBuffer(x.nbytes, s)
    h2d(buf, x, s)
    s.synchronize()
    # Work queued before the loss: a wait on it from another device must not hang.
    sim.device_sim_kernel_sleep(s.native_handle, 20_000)
    e = rt.record_event(s)
    s0.wait_event(e)
    device_sim.inject("device_lost", 1)
    assert device_sim.is_device_lost(1)
    s0.synchronize()  # returns: the lost device's records still complete
    lost = r"device 1 was lost"
    with pytest.raises(backend_sdk.AcceleratorError, match=lost):
        s.synchronize()
    with pytest.raises(backend_sdk.AcceleratorError, match=lost):
        rt.synchronize(dev)
    with pytest.raises(backend_sdk.AcceleratorError, match=lost):
        d2h(out, buf)
    with pytest.raises(backend_sdk.AcceleratorError, match=lost):
        h2d(buf, x, s)
    with pytest.raises(backend_sdk.AcceleratorError, match=lost):
        rt.memset_async(buf.ptr, 0, 16, s)
    with pytest.raises(backend_sdk.AcceleratorError, match=lost):
        e.synchronize()
    with pytest.raises(backend_sdk.AcceleratorError, match=lost):
        rt.record_event(s)
    with pytest.raises(backend_sdk.AcceleratorError, match=lost):
        s.launch_host_func(lambda: None)
    with pytest.raises(backend_sdk.AcceleratorError, match=lost):
        rt.DeviceBuffer(40 * MiB, s)  # needs a new segment from the device
    assert sim.device_sim_kernel_empty(s.native_handle) == 8  # SDK_ERROR_DEVICE_LOST
    assert "until device_sim.reset_device(1)" in device_sim._last_error()
    # Device 0 is unaffected.
    b0 = rt.DeviceBuffer(x.nbytes, s0)
    h2d(b0, x)
    d2h(out, b0)
    np.testing.assert_array_equal(out, x)
    device_sim.reset_device(1)
    assert not device_sim.is_device_lost(1)
    s.synchronize()
    x3 = x * 3
    h2d(buf, x3, s)
    d2h(out, buf, s)
    s.synchronize()
    np.testing.assert_array_equal(out, x * 3)


def test_inject_bad_input():
    with pytest.raises(ValueError, match="unknown fault kind 'meltdown'"):
        device_sim.inject("meltdown", 0)
    with pytest.raises(IndexError, match="device index 9 is out of range"):
        device_sim.inject("device_lost", 9)
    with pytest.raises(ValueError, match="count must be non-negative"):
        device_sim.inject("alloc_failure", 0, count=-1)
    with pytest.raises(ValueError, match="the stream belongs to device 1, not device 0"):
        device_sim.inject("kernel_fault", 0, stream=rt.Stream(f"{B}:1"))
    with pytest.raises(TypeError, match="stream must be a backend_sdk Stream"):
        device_sim.inject("kernel_fault", 0, stream="s")


# ---- fork ----

def test_fork_child_gets_a_clear_error():
    s = rt.default_stream(f"{B}:0")
    keep = rt.DeviceBuffer(4096, s)  # memory the child inherits
    ev = rt.record_event(s)
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: report through the pipe, never return into pytest
        results = []
        try:
            results.append(f"bad_fork={rt.is_in_bad_fork()}")
            for name, action in [("synchronize", lambda: s.synchronize()),
                                 ("alloc", lambda: rt.DeviceBuffer(64, s)),
                                 ("event", lambda: ev.synchronize()),
                                 ("device_sync", lambda: rt.synchronize(f"{B}:0"))]:
                try:
                    action()
                    results.append(f"{name}: no error")
                except RuntimeError as e:
                    results.append(f"{name}: {type(e).__name__}: {e}")
            keep.free()  # inherited memory is leaked, not freed into the parent's device
            del ev
            status = device_sim.lib().device_sim_kernel_empty(s.native_handle)
            results.append(f"sim_status={status} {device_sim._last_error()}")
        except BaseException as e:  # noqa: BLE001
            results.append(f"unexpected: {e!r}")
        os.write(write_fd, "\n".join(results).encode())
        os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd) as f:
        report = f.read()
    _, status = os.waitpid(pid, 0)
    assert status == 0, report
    lines = report.splitlines()
    assert lines[0] == "bad_fork=True"
    for line in lines[1:5]:
        assert ": RuntimeError: Cannot re-initialize privateusethree in forked subprocess" in line, report
        assert "use the 'spawn' start method" in line
    assert lines[5].startswith("sim_status=9") and "fork()" in lines[5]
    # The parent is unaffected.
    assert not rt.is_in_bad_fork()
    s.synchronize()
    keep.free()


# ---- Chrome trace ----

def _stream_events(trace: dict, stream) -> list[dict]:
    return [e for e in trace["traceEvents"] if e["ph"] == "X" and e["args"]["stream"] == hex(stream.native_handle)]


def test_chrome_trace_records_work_per_stream_in_order(sim, tmp_path):
    s = rt.Stream(f"{B}:1")
    n = 4096
    x = np.arange(n, dtype=np.float32)
    out = np.zeros_like(x)
    a, y = rt.DeviceBuffer(x.nbytes, s), rt.DeviceBuffer(x.nbytes, s)
    device_sim.start_trace()
    h2d(a, x, s)
    axpb(sim, s, y, a, n, 1.0, 1.0)
    rt.memset_async(a.ptr, 0, x.nbytes, s)
    rt.record_event(s)
    d2h(out, y, s)
    s.synchronize()
    d2h(out, y)  # synchronous copy: tid 0
    device_sim.stop_trace()
    assert sim.device_sim_kernel_empty(s.native_handle) == 0  # not traced any more
    s.synchronize()
    path = tmp_path / "trace.json"
    device_sim.export_chrome_trace(path)
    trace = json.loads(path.read_text())
    events = _stream_events(trace, s)
    assert [e["name"] for e in events] == ["memcpy HtoD", "axpb_f32", "memset", "event record", "memcpy DtoH"]
    assert {e["pid"] for e in events} == {1} and len({e["tid"] for e in events}) == 1
    assert events[0]["args"]["bytes"] == x.nbytes and events[0]["cat"] == "memcpy"
    for prev, cur in zip(events, events[1:]):
        assert cur["ts"] >= prev["ts"] + prev["dur"] - 1e-3  # in order, no overlap within a stream
    assert all(e["dur"] >= 0 for e in events)
    starts = [e["ts"] for e in trace["traceEvents"] if e["ph"] == "X"]
    assert starts == sorted(starts)
    sync = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["tid"] == 0]
    assert [e["name"] for e in sync] == ["memcpy DtoH"] and sync[0]["pid"] == 1
    meta = [e for e in trace["traceEvents"] if e["ph"] == "M"]
    assert {"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "device_sim device 1"}} in meta
    assert any(m["name"] == "thread_name" and m["tid"] == events[0]["tid"] for m in meta)
    assert trace["otherData"]["dropped_events"] == 0


def test_chrome_trace_ring_buffer_is_bounded(sim, tmp_path):
    s = rt.Stream(f"{B}:0")
    device_sim.start_trace(capacity=4)
    for _ in range(10):
        sim.device_sim_kernel_empty(s.native_handle)
    s.synchronize()
    device_sim.stop_trace()
    assert device_sim.trace_event_count() == 4
    path = tmp_path / "t.json"
    device_sim.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    assert len([e for e in trace["traceEvents"] if e["ph"] == "X"]) == 4
    assert trace["otherData"]["dropped_events"] == 6
    with pytest.raises(ValueError, match="capacity must be positive"):
        device_sim.start_trace(capacity=0)
    with pytest.raises(OSError, match="cannot open"):
        device_sim.export_chrome_trace(tmp_path / "missing_dir" / "t.json")


# ---- timing model ----

def test_timing_model_shapes_elapsed_time(sim):
    s = rt.Stream(f"{B}:0")
    device_sim.configure(launch_latency_us=5000)
    assert device_sim.timing()["launch_latency_us"] == 5000
    start, end = rt.Event(enable_timing=True), rt.Event(enable_timing=True)
    start.record(s)
    for _ in range(4):
        sim.device_sim_kernel_empty(s.native_handle)
    end.record(s)
    end.synchronize()
    assert start.elapsed_time(end) >= 20.0  # 4 kernels of at least 5 ms each
    device_sim.configure(launch_latency_us=0, copy_bandwidth_gbps=1.0)  # 1 GB/s: 1 byte per ns
    nbytes = 4 * MiB
    host = np.ones(nbytes, dtype=np.uint8)
    buf = rt.DeviceBuffer(nbytes, s)
    start.record(s)
    h2d(buf, host, s)
    end.record(s)
    end.synchronize()
    assert start.elapsed_time(end) >= nbytes / 1e6  # ms at 1 byte per ns
    assert device_sim.timing() == {"launch_latency_us": 0.0, "copy_bandwidth_gbps": 1.0}
    with pytest.raises(ValueError, match="launch_latency_us must be >= 0"):
        device_sim.configure(launch_latency_us=-1)


def test_timing_model_from_environment():
    code = textwrap.dedent("""
        import device_sim
        t = device_sim.timing()
        print(t["launch_latency_us"], t["copy_bandwidth_gbps"])
    """)
    env = dict(os.environ, DEVICE_SIM_LAUNCH_LATENCY_US="250", DEVICE_SIM_COPY_BANDWIDTH_GBPS="12.5")
    env["PYTHONPATH"] = os.pathsep.join([os.getcwd()] + sys.path)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    lat, bw = map(float, r.stdout.split())
    assert lat == 250.0 and bw == pytest.approx(12.5)


def test_kernel_names_default_to_the_symbol(sim, tmp_path):
    # A kernel launched without a name is named after its exported symbol, or its address.
    s = rt.Stream(f"{B}:0")
    fn = KERNEL_FN(lambda _a: None)
    device_sim.start_trace()
    assert sim.device_sim_launch_kernel(s.native_handle, ctypes.cast(fn, ctypes.c_void_p), None, 0) == 0
    s.synchronize()
    device_sim.stop_trace()
    device_sim.export_chrome_trace(tmp_path / "k.json")
    names = [e["name"] for e in _stream_events(json.loads((tmp_path / "k.json").read_text()), s)]
    assert len(names) == 1 and re.fullmatch(r"kernel@0x[0-9a-f]+|\w+", names[0])
