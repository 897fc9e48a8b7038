"""Robustness of the simulator and the accel sample (issue 12, findings 6, 7 and 13).

* bad, destroyed and foreign-device handles are refused by every entry point
  of the contract and of device_sim.h (Note [Simulated handles]);
* kernels that fault or are drained after device_lost release their jobs;
* raw copies past the end of an allocation fail naming the allocation and the
  requested range; a segfaulting JIT-extension kernel is reported with its
  operator and library before the process dies.
"""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import backend_sdk
from backend_sdk import _runtime as rt
import device_sim
from backend_sdk.utils.python_device import DeviceLibrary

from _helpers import SIM_BACKEND as B

SUCCESS, INVALID_VALUE, INVALID_HANDLE = 0, 1, 4

vp = ctypes.c_void_p


class Api(DeviceLibrary):
    """The simulator's contract, callable slot by slot: every slot of SDK_DEVICE_API_SLOTS (through
    _C._runtime._device_api_slots()), pointers as plain addresses, the context passed first."""

    def __init__(self) -> None:
        super().__init__(device_sim.lib(), raw=True)

    def stream(self, device: int = 0) -> int:
        h = vp()
        assert self.stream_create(device, 0, ctypes.byref(h)) == SUCCESS
        return h.value

    def event(self, device: int = 0, flags: int = 1) -> int:
        h = vp()
        assert self.event_create(device, flags, ctypes.byref(h)) == SUCCESS
        return h.value

    def malloc_(self, device: int, n: int) -> int:
        p = vp()
        assert self.malloc(device, ctypes.byref(p), n) == SUCCESS, self.last_error()
        return p.value


@pytest.fixture(scope="module")
def api(sim) -> Api:
    """The contract of the simulator the shared ``sim`` fixture attached (tests/conftest.py)."""
    assert rt.device_count(B) >= 2, "these tests need two simulated devices"
    return Api()


@pytest.fixture(autouse=True)
def healthy_devices(api):
    yield
    for d in range(rt.device_count(B)):
        device_sim.reset_device(d)


# A handle forged to look like the old in-memory layout (the magic tag "STRM" /
# "EVNT" in the first word), an unmapped address, a small integer, a live host
# object's address, and each kind of handle passed as the other kind.
_FORGED = ctypes.create_string_buffer(b"MRTS\x00\x00\x00\x00" + bytes(248))
_FORGED_EVENT = ctypes.create_string_buffer(b"TNVE\x00\x00\x00\x00" + bytes(248))


def bad_streams(api: Api) -> dict[str, int]:
    return {"small integer": 12345, "unmapped address": 0xDEAD0000, "host object": id(object()),
            "forged magic": ctypes.addressof(_FORGED), "event handle": api.event(), "all ones": (1 << 64) - 1}


def bad_events(api: Api) -> dict[str, int]:
    return {"small integer": 12345, "unmapped address": 0xDEAD0000, "host object": id(object()),
            "forged magic": ctypes.addressof(_FORGED_EVENT), "stream handle": api.stream(), "all ones": (1 << 64) - 1}


def destroyed_stream(api: Api) -> int:
    s = api.stream()
    assert api.stream_destroy(s) == SUCCESS
    return s


def destroyed_event(api: Api) -> int:
    e = api.event()
    assert api.event_destroy(e) == SUCCESS
    return e


def stream_calls(api: Api, sim, buf: int, host) -> dict:
    """Every entry point taking a stream, as a function of the handle."""
    noop = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda _: None)
    kernel = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda _: None)
    ev = api.event()
    return {
        "memcpy_async": lambda h: api.memcpy_async(buf, ctypes.addressof(host), 16, 1, h),
        "memset_async": lambda h: api.memset_async(buf, 0, 16, h),
        "stream_query": api.stream_query,
        "stream_synchronize": api.stream_synchronize,
        "stream_wait_event": lambda h: api.stream_wait_event(h, ev),
        "event_record": lambda h: api.event_record(ev, h),
        "launch_host_func": lambda h: api.launch_host_func(h, ctypes.cast(noop, vp), None, None),
        "device_sim_launch_kernel": lambda h: sim.device_sim_launch_kernel(h, ctypes.cast(kernel, vp), None, 0),
        "device_sim_launch_kernel_named": lambda h: sim.device_sim_launch_kernel_named(
            h, b"k", ctypes.cast(kernel, vp), None, 0),
        "device_sim_kernel_sleep": lambda h: sim.device_sim_kernel_sleep(h, 1),
        "device_sim_kernel_axpb_f32": lambda h: sim.device_sim_kernel_axpb_f32(h, buf, buf, 4, 1.0, 0.0),
        "device_sim_kernel_empty": sim.device_sim_kernel_empty,
        "stream_destroy": api.stream_destroy,
    }


def event_calls(api: Api) -> dict:
    """Every entry point taking an event, as a function of the handle."""
    s = api.stream()
    ok = api.event()
    assert api.event_record(ok, s) == SUCCESS
    assert api.stream_synchronize(s) == SUCCESS
    ms = ctypes.c_float()
    return {
        "stream_wait_event": lambda h: api.stream_wait_event(s, h),
        "event_record": lambda h: api.event_record(h, s),
        "event_query": api.event_query,
        "event_synchronize": api.event_synchronize,
        "event_elapsed_time (start)": lambda h: api.event_elapsed_time(ctypes.byref(ms), h, ok),
        "event_elapsed_time (end)": lambda h: api.event_elapsed_time(ctypes.byref(ms), ok, h),
        "event_destroy": api.event_destroy,
    }


@pytest.fixture()
def device_buffer(api):
    p = api.malloc_(0, 4096)
    yield p
    assert api.free(0, p) == SUCCESS


def test_bad_stream_handles_are_refused_by_every_entry_point(api, sim, device_buffer):
    host = ctypes.create_string_buffer(64)
    calls = stream_calls(api, sim, device_buffer, host)
    handles = bad_streams(api) | {"destroyed": destroyed_stream(api)}
    for call_name, call in calls.items():
        for what, h in handles.items():
            assert call(h) == INVALID_HANDLE, (call_name, what)
            msg = api.last_error() if not call_name.startswith("device_sim") else _sim_error()
            assert hex(h) in msg and "not a valid stream handle" in msg, (call_name, what, msg)


def _sim_error() -> str:
    return device_sim._last_error()


def test_bad_event_handles_are_refused_by_every_entry_point(api):
    calls = event_calls(api)
    handles = bad_events(api) | {"destroyed": destroyed_event(api)}
    for call_name, call in calls.items():
        for what, h in handles.items():
            assert call(h) == INVALID_HANDLE, (call_name, what)
            msg = api.last_error()
            assert hex(h) in msg and "not a valid event handle" in msg, (call_name, what, msg)


def test_destroyed_handles_stay_invalid_after_their_slots_are_reused(api):
    old_streams = [destroyed_stream(api) for _ in range(8)]
    old_events = [destroyed_event(api) for _ in range(8)]
    fresh_streams = [api.stream() for _ in range(2000)]  # far more than the reuse threshold
    fresh_events = [api.event() for _ in range(2000)]
    try:
        for s in old_streams:
            assert s not in fresh_streams
            assert api.stream_query(s) == INVALID_HANDLE
        for e in old_events:
            assert e not in fresh_events
            assert api.event_query(e) == INVALID_HANDLE
    finally:
        for s in fresh_streams:
            assert api.stream_destroy(s) == SUCCESS
        for e in fresh_events:
            assert api.event_destroy(e) == SUCCESS


def test_double_destroy_is_refused(api):
    s, e = api.stream(), api.event()
    assert api.stream_destroy(s) == SUCCESS and api.event_destroy(e) == SUCCESS
    assert api.stream_destroy(s) == INVALID_HANDLE and "stream_destroy" in api.last_error()
    assert api.event_destroy(e) == INVALID_HANDLE and "event_destroy" in api.last_error()


def test_foreign_device_handles_and_pointers_are_refused(api, sim):
    s0, s1 = api.stream(0), api.stream(1)
    e0, e1 = api.event(0), api.event(1)
    p0 = api.malloc_(0, 4096)
    p1 = api.malloc_(1, 4096)
    host = ctypes.create_string_buffer(64)
    ms = ctypes.c_float()
    try:
        assert api.event_record(e0, s1) == INVALID_VALUE and "device 0" in api.last_error()
        assert api.memset_async(p0, 0, 16, s1) == INVALID_VALUE
        assert "belongs to device 1" in api.last_error()
        assert api.memcpy_async(p0, ctypes.addressof(host), 16, 1, s1) == INVALID_VALUE
        assert "belongs to device 1" in api.last_error()
        assert api.memcpy_async(ctypes.addressof(host), p0, 16, 2, s1) == INVALID_VALUE
        assert api.memcpy_async(p1, p0, 16, 3, s1) == SUCCESS  # between devices: the peer's stream may copy
        assert api.free(0, p1) == INVALID_VALUE and "not a pointer into the memory of device 0" in api.last_error()
        assert api.event_record(e0, s0) == SUCCESS and api.event_record(e1, s1) == SUCCESS
        assert api.stream_synchronize(s0) == SUCCESS and api.stream_synchronize(s1) == SUCCESS
        assert api.event_elapsed_time(ctypes.byref(ms), e0, e1) == INVALID_VALUE
        assert "device 0" in api.last_error() and "device 1" in api.last_error()
        assert sim.device_sim_kernel_axpb_f32(s1, p0, p0, 4, 1.0, 0.0) == INVALID_VALUE
        assert "stream's device 1" in _sim_error()
        with pytest.raises(ValueError, match="belongs to device 1, not device 0"):
            device_sim.inject("kernel_fault", 0, stream=s1)
    finally:
        for s in (s0, s1):
            api.stream_synchronize(s)
            api.stream_destroy(s)
        api.event_destroy(e0)
        api.event_destroy(e1)
        api.free(0, p0)
        api.free(1, p1)


def test_null_out_pointers_are_refused(api):
    assert api.device_count(None) == INVALID_VALUE and "count is NULL" in api.last_error()
    assert api.get_device(None) == INVALID_VALUE
    assert api.mem_get_info(0, None, None) == INVALID_VALUE
    assert api.stream_create(0, 0, None) == INVALID_VALUE
    assert api.event_create(0, 0, None) == INVALID_VALUE
    assert api.malloc(0, None, 16) == INVALID_VALUE


@pytest.mark.parametrize("handle", [12345, 0xDEAD0000, (1 << 64) - 1])
def test_inject_with_a_bad_stream_raises_naming_the_handle(api, handle):
    with pytest.raises(ValueError, match=f"{hex(handle)} is not a valid stream handle"):
        device_sim.inject("kernel_fault", 0, stream=handle)


def test_inject_with_a_destroyed_stream_raises(api):
    s = rt.Stream(f"{B}:0")
    h = s.native_handle
    device_sim.inject("kernel_fault", 0, stream=h, count=0)  # a live stream is accepted
    dead = destroyed_stream(api)
    with pytest.raises(ValueError, match=f"{hex(dead)} is not a valid stream handle"):
        device_sim.inject("kernel_fault", 0, stream=dead)
    with pytest.raises(ValueError, match="not a valid stream handle"):
        device_sim.inject("kernel_fault", 0, stream=-1)
    with pytest.raises(TypeError, match="must be a backend_sdk Stream or a native handle"):
        device_sim.inject("kernel_fault", 0, stream="s")


def test_kernel_fault_message_names_the_handle_the_user_holds(api, sim):
    s = api.stream(0)
    try:
        device_sim.inject("kernel_fault", 0, stream=s)
        assert sim.device_sim_kernel_empty(s) == SUCCESS
        assert api.stream_synchronize(s) == 7
        assert f"on stream {hex(s)} of device 0" in api.last_error()
    finally:
        api.stream_destroy(s)


# ---- finding 7: kernels that do not run release their jobs ------------------------------------------

_LEAK_SCRIPT = textwrap.dedent("""
    import os, sys
    import accel, backend_sdk as sdk, device_sim

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    x = sdk.ones(16, device="accel:0")

    def faulted(n):  # every kernel marked by an injected fault: none runs
        device_sim.inject("kernel_fault", 0, count=n)
        for _ in range(n):
            y = x + 1
        try:
            sdk.accel.synchronize(0)
        except sdk.AcceleratorError:
            pass
        else:
            raise AssertionError("the injected faults did not surface")

    def drained(n):  # queued behind a long kernel, then dropped by device_lost
        s = sdk.accel.current_stream(0)
        assert device_sim.lib().device_sim_kernel_sleep(s.native_handle, 20000) == 0
        for _ in range(n):
            y = x + 1
        device_sim.inject("device_lost", 0)
        device_sim.reset_device(0)

    f = faulted if sys.argv[1] == "fault" else drained
    for _ in range(3):  # warm up: job pools, caches, allocator segments
        f(1000)
    before = rss()
    for _ in range(20):
        f(1000)
    print((rss() - before) / 2**20)
""")


@pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""),
                    reason="RSS is not a leak measure under ASan's quarantine (tests/test_leaks.py skips too)")
@pytest.mark.parametrize("mode", ["fault", "lost"])
def test_kernels_that_do_not_run_do_not_leak(mode):
    env = dict(os.environ, DEVICE_SIM_NUM_DEVICES="2")
    r = subprocess.run([sys.executable, "-c", _LEAK_SCRIPT, mode], capture_output=True, text=True, timeout=120,
                       env=env)
    assert r.returncode == 0, r.stderr
    grown_mib = float(r.stdout.strip().splitlines()[-1])
    assert grown_mib < 5, f"20k {mode} kernels grew RSS by {grown_mib:.1f} MiB"


def test_release_fn_runs_instead_of_a_kernel_that_does_not_run(api, sim):
    """device_sim_launch_kernel_ex: exactly one of fn and release is called per launch."""
    ran, released = [], []
    fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda p: ran.append(ctypes.c_int64.from_address(p).value))
    rel = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda p: released.append(ctypes.c_int64.from_address(p).value))
    s = api.stream(0)
    try:
        def launch(i):
            arg = ctypes.c_int64(i)
            assert sim.device_sim_launch_kernel_ex(s, b"k", ctypes.cast(fn, vp), ctypes.cast(rel, vp),
                                                   ctypes.byref(arg), 8) == SUCCESS
        launch(1)
        device_sim.inject("kernel_fault", 0, stream=s)
        launch(2)
        launch(3)
        assert api.stream_synchronize(s) == 7  # the fault of kernel 2
        assert sim.device_sim_kernel_sleep(s, 20000) == SUCCESS
        launch(4)
        device_sim.inject("device_lost", 0)
        device_sim.reset_device(0)
        assert ran == [1, 3] and released == [2, 4]
    finally:
        api.stream_destroy(s)


# ---- finding 13: raw copies stay inside their allocations -------------------------------------------

RANGE = r"\d+ bytes at \[0x[0-9a-f]+, 0x[0-9a-f]+\)"
ALLOCATION = r"the allocation \[0x[0-9a-f]+, 0x[0-9a-f]+\) of {n} bytes at 0x[0-9a-f]+"


def test_copy_into_a_small_tensor_does_not_overwrite_its_neighbour(api):
    s = rt.default_stream(f"{B}:0")
    small, neighbour = rt.DeviceBuffer(8, s), rt.DeviceBuffer(512, s)
    guard = np.full(128, 7, dtype=np.int32)
    rt.memcpy(B, neighbour.ptr, guard.ctypes.data, guard.nbytes, "h2d")
    big = np.zeros(1000, dtype=np.int32)
    pattern = f"dst: 4000 bytes at \\[{hex(small.ptr)}, {hex(small.ptr + 4000)}\\) run past the end of " + \
        ALLOCATION.format(n=8)
    for stream in (None, s):
        with pytest.raises(ValueError, match=pattern):
            rt.memcpy(B, small.ptr, big.ctypes.data, big.nbytes, "h2d", stream)
    with pytest.raises(ValueError, match=f"dst: {RANGE} run past the end of " + ALLOCATION.format(n=8)):
        rt.memcpy(B, small.ptr, neighbour.ptr, 16, "d2d")
    with pytest.raises(ValueError, match=f"src: {RANGE} run past the end of " + ALLOCATION.format(n=8)):
        rt.memcpy(B, neighbour.ptr, small.ptr, 16, "d2d", s)
    with pytest.raises(ValueError, match=f"src: {RANGE} run past the end of " + ALLOCATION.format(n=8)):
        rt.memcpy(B, big.ctypes.data, small.ptr, 4000, "d2h")
    with pytest.raises(ValueError, match=f"dst: {RANGE} run past the end of " + ALLOCATION.format(n=8)):
        rt.memset_async(small.ptr, 0xFF, 9, s)
    with pytest.raises(ValueError, match=f"dst: {RANGE} run past the end of " + ALLOCATION.format(n=8)):
        rt.memcpy(B, small.ptr + 4, big.ctypes.data, 8, "h2d")  # inside, but the end is past it
    rt.memcpy(B, small.ptr, big.ctypes.data, 8, "h2d", s)  # exactly the allocation: fine
    rt.memset_async(small.ptr + 4, 0, 4, s)
    s.synchronize()
    out = np.zeros(128, dtype=np.int32)
    rt.memcpy(B, out, neighbour.ptr, out.nbytes, "d2h")
    np.testing.assert_array_equal(out, guard)  # the neighbour is untouched
    small.free()
    neighbour.free()


def test_copy_into_a_freed_block_is_refused(api):
    s = rt.default_stream(f"{B}:0")
    keep = rt.DeviceBuffer(512, s)  # keeps the segment alive
    buf = rt.DeviceBuffer(512, s)
    p = buf.ptr
    buf.free()
    host = np.zeros(16, dtype=np.uint8)
    with pytest.raises(ValueError, match="start in a freed block"):
        rt.memcpy(B, p, host.ctypes.data, host.nbytes, "h2d")
    keep.free()


def test_device_to_host_copy_into_a_short_numpy_buffer_is_refused(api):
    s = rt.default_stream(f"{B}:0")
    buf = rt.DeviceBuffer(4096, s)
    short = np.zeros(4, dtype=np.uint8)
    with pytest.raises(ValueError, match="dst is a host buffer of 4 bytes, too small for a copy of 4096 bytes"):
        rt.memcpy(B, short, buf.ptr, 4096, "d2h")
    with pytest.raises(ValueError, match="src is a host buffer of 4 bytes, too small for a copy of 4096 bytes"):
        rt.memcpy(B, buf.ptr, short, 4096, "h2d", s)
    with pytest.raises(ValueError, match="dst bytes is not a writable contiguous buffer"):
        rt.memcpy(B, b"12345678", buf.ptr, 8, "d2h")
    with pytest.raises(ValueError, match="dst is a host buffer of 4 bytes"):
        rt.copy_async(short, buf.ptr, 4096, "d2h", s)
    with pytest.raises(ValueError, match="writes device memory but dst is a host buffer"):
        rt.memcpy(B, short, buf.ptr, 4, "d2d")
    with pytest.raises(TypeError, match="dst must be an address"):
        rt.memcpy(B, "x", buf.ptr, 4, "d2h")
    data = np.arange(1024, dtype=np.float32)
    rt.memcpy(B, buf.ptr, data, data.nbytes, "h2d")  # buffers of the right size work both ways
    back = np.zeros_like(data)
    rt.memcpy(B, back, buf.ptr, back.nbytes, "d2h")
    np.testing.assert_array_equal(back, data)
    buf.free()


def test_simulator_bounds_raw_allocations_by_their_requested_size(api):
    """The device's own check, below the allocator: an 8-byte malloc is not 512 bytes."""
    p = api.malloc_(0, 8)
    host = ctypes.create_string_buffer(4096)
    s = api.stream(0)
    try:
        for call in (lambda: api.memcpy(p, ctypes.addressof(host), 16, 1),
                     lambda: api.memcpy(ctypes.addressof(host), p, 4000, 2),
                     lambda: api.memcpy_async(p, ctypes.addressof(host), 9, 1, s),
                     lambda: api.memset_async(p, 0, 512, s)):
            assert call() == INVALID_VALUE
            msg = api.last_error()
            assert f"bytes at [{hex(p)}, " in msg, msg
            assert f"run past the end of the allocation [{hex(p)}, {hex(p + 8)}) of 8 bytes at {hex(p)}" in msg, msg
        assert api.memcpy(p, ctypes.addressof(host), 8, 1) == SUCCESS
    finally:
        api.stream_destroy(s)
        api.free(0, p)


# ---- finding 13: a segfaulting extension kernel is named before the process dies ----------------------

_CRASH_SOURCES = r"""
    namespace {
    volatile int* volatile g_null = nullptr;
    sdk::Tensor boom(const sdk::Tensor& x) {
      *g_null = 1;  // a NULL dereference inside the extension
      return x;
    }
    void boom_boxed(sdk::OperatorKernel*, const sdk::OperatorHandle&, sdk::DispatchKeySet, sdk::Stack*) {
      *g_null = 2;
    }
    sdk::Tensor fine(const sdk::Tensor& x) { return sdk::ops::add(x, sdk::Scalar(1)); }
    }
    SDK_LIBRARY(jit_crash, m) {
      m.def("boom(Tensor x) -> Tensor");
      m.def("boom_boxed(Tensor x) -> Tensor");
      m.def("fine(Tensor x) -> Tensor");
    }
    SDK_LIBRARY_IMPL(jit_crash, CPU, m) {
      m.impl("boom", &boom);
      m.impl("boom_boxed", sdk::CppFunction::make_from_boxed(&boom_boxed));
      m.impl("fine", &fine);
    }
"""

_CRASH_CHILD = textwrap.dedent("""
    import sys
    import backend_sdk
    from backend_sdk.utils import cpp_extension
    path = cpp_extension.load_inline("jit_crash_ext", sys.argv[2], build_directory=sys.argv[3],
                                     is_python_module=False)
    x = backend_sdk.tensor([1.0, 2.0])
    assert backend_sdk.ops.jit_crash.fine(x).tolist() == [2.0, 3.0]  # a tracked kernel that returns normally
    print(path, flush=True)
    getattr(backend_sdk.ops.jit_crash, sys.argv[1])(x)
    print("survived", flush=True)
""")


@pytest.fixture(scope="module")
def crash_build(tmp_path_factory):
    build = tmp_path_factory.mktemp("jit_crash")
    from backend_sdk.utils import cpp_extension
    path = cpp_extension.load_inline("jit_crash_ext", _CRASH_SOURCES, build_directory=str(build),
                                     is_python_module=False)
    return str(build), path


@pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", "") or "libtsan" in os.environ.get("LD_PRELOAD", ""),
                    reason="under a sanitizer its own SIGSEGV handler reports the crash (tools/sanitize.sh)")
@pytest.mark.parametrize("op", ["boom", "boom_boxed"])
def test_segfault_in_an_extension_kernel_names_the_operator_and_the_library(crash_build, op):
    import signal
    build, path = crash_build
    env = {k: v for k, v in os.environ.items() if k != "PYTHONFAULTHANDLER"}
    r = subprocess.run([sys.executable, "-c", _CRASH_CHILD, op, _CRASH_SOURCES, build], capture_output=True,
                       text=True, timeout=300, env=env)
    assert r.returncode == -signal.SIGSEGV, (r.returncode, r.stdout, r.stderr)
    assert "survived" not in r.stdout
    lib = r.stdout.split()[0]
    # The child's own build (its backend_sdk may be the checkout's where the parent's is installed:
    # another SDK, another cache key), in the same build directory.
    assert os.path.dirname(os.path.realpath(lib)) == os.path.dirname(os.path.realpath(path))
    assert os.path.basename(lib).startswith("jit_crash_ext")
    assert f"SIGSEGV (segmentation fault) while running the kernel of operator 'jit_crash::{op}' for CPU" in r.stderr
    assert f"registered from {lib}" in r.stderr, r.stderr
    assert f"faulting instruction 0x" in r.stderr and f" in {lib}" in r.stderr, r.stderr
    assert "accessing address 0x0" in r.stderr, r.stderr
