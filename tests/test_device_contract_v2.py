"""Version 2 of the device contract (issue 13, "Device contract v2"): major/minor versioning, the slot list
from one X-macro, the context handle, dtype numbers, the extension chain and its "sdk.trace" extension, the
release callback of launch_host_func, and version-1 devices built from the frozen v1 header.

Attaching is once per process and backend, so scenarios that attach a new device run in a subprocess."""
from __future__ import annotations

import ctypes
import gc
import shutil
import subprocess
import time
import weakref

import numpy as np
import pytest

import backend_sdk
from backend_sdk import _C
from backend_sdk import _runtime as rt
from backend_sdk.utils import python_device as pd
import device_sim

from _helpers import ROOT, SIM_BACKEND as B, run_python as _run_python

V1_HEADER_DIR = ROOT / "tests" / "device_api_v1"
CC = shutil.which("cc") or shutil.which("gcc")


def run_python(code: str, timeout: int = 120) -> subprocess.CompletedProcess:
    return _run_python(code, timeout=timeout, check=True)


@pytest.fixture(scope="module")
def sim(sim):
    """The shared fixture's simulator (tests/conftest.py), called slot by slot through the contract."""
    return pd.DeviceLibrary(sim)


# ---- constants and the slot list ----

def test_dtype_numbers_are_pinned():
    # Note [Device dtype numbers]: PyTorch's c10::ScalarType numbers, never the SDK's C++ enum order.
    expected = {"UINT8": 0, "INT8": 1, "INT16": 2, "INT32": 3, "INT64": 4, "FLOAT16": 5, "FLOAT32": 6,
                "FLOAT64": 7, "BOOL": 11, "BFLOAT16": 15}
    consts = _C._runtime._device_api_constants()
    for name, number in expected.items():
        assert consts[f"SDK_DTYPE_{name}"] == number == getattr(pd, f"SDK_DTYPE_{name}"), name
    assert {consts[f"SDK_TRACE_{k}"] for k in ("KERNEL", "MEMCPY", "MEMSET", "HOST_FUNC", "EVENT_RECORD")} == \
        set(rt.TRACE_KINDS)


def test_slot_list_from_the_x_macro():
    slots = pd.device_api_slots()
    names = [s.name for s in slots]
    assert names[:4] == ["device_count", "get_device_properties", "get_device", "set_device"]
    assert names[-1] == "can_access_peer" and len(names) == 28
    by_name = {s.name: s for s in slots}
    assert not by_name["mem_get_info"].required and not by_name["get_last_error_message"].required
    assert by_name["malloc"].required and by_name["launch_host_func"].required
    assert all(s.minor == 0 for s in slots[:-1]) and by_name["can_access_peer"].minor == 1
    assert all(not s.required for s in slots if s.minor > 0)  # later minors only add optional slots
    # Every slot takes the context first; launch_host_func has the release callback.
    assert all(s.argtypes[0] is ctypes.c_void_p for s in slots)
    assert len(by_name["launch_host_func"].argtypes) == 5
    # The sizes of each minor come from the header (offsetof the end of its last slot).
    assert _C._runtime._device_api_size_of_minor(0) == by_name["get_last_error_message"].offset + 8
    assert _C._runtime._device_api_size_of_minor(1) == by_name["can_access_peer"].offset + 8
    assert _C._runtime._device_api_constants()["sizeof(sdk_device_api)"] == _C._runtime._device_api_size_of_minor(1)


# ---- versions ----

def _table_copy(sim: pd.DeviceLibrary, extra: int = 0) -> ctypes.Array:
    """The simulator's table in a fresh buffer with `extra` more bytes (slots of a newer minor)."""
    size = sim.table.struct_size
    buf = (ctypes.c_char * (size + extra))()
    ctypes.memmove(buf, sim.address, size)
    return buf


def _header(buf: ctypes.Array) -> pd.device_api_struct:  # type: ignore[valid-type]
    return pd.device_api_struct().from_buffer(buf)


def test_other_major_is_refused_naming_library_and_versions(sim):
    for major in (0, 3, 7):
        buf = _table_copy(sim)
        _header(buf).major_version = major
        with pytest.raises(ValueError, match=rf"'libvendor.so' implements device API version {major}\.1, but this "
                                             r"SDK \(device API 2\.1\) supports major versions 1 and 2"):
            rt._rt._attach_device_api("privateusetwo", ctypes.addressof(buf), "libvendor.so", context=sim.context)
    assert not rt.has_device("privateusetwo")


def test_newer_minor_is_accepted_and_its_extra_slots_ignored(sim):
    r = run_python(f"""
        import ctypes, device_sim
        from backend_sdk import _runtime as rt
        from backend_sdk.utils import python_device as pd
        sim = pd.DeviceLibrary(device_sim.lib())
        size = sim.table.struct_size
        buf = (ctypes.c_char * (size + 24))()
        ctypes.memmove(buf, sim.address, size)
        t = pd.device_api_struct().from_buffer(buf)
        t.minor_version = 9                         # built for 2.9: three more slots this SDK does not know
        t.struct_size = size + 24
        for i in range(3):
            ctypes.c_void_p.from_buffer(buf, size + 8 * i).value = 0xdead0000 + i   # never called
        rt._rt._attach_device_api("privateusetwo", ctypes.addressof(buf), "newer", (buf,), context=sim.context)
        assert rt.device_api_version("privateusetwo") == (2, 9)
        assert rt.can_device_access_peer("privateusetwo:0", "privateusetwo:1")   # minor-1 slot read: sim says yes
        b = rt.DeviceBuffer(256, rt.default_stream("privateusetwo:1"))
        b.free()
        rt.synchronize("privateusetwo:1")
        print("ok")
    """)
    assert "ok" in r.stdout


def test_older_minor_gets_the_documented_defaults(sim):
    r = run_python("""
        import ctypes, device_sim
        from backend_sdk import _C, _runtime as rt
        from backend_sdk.utils import python_device as pd
        sim = pd.DeviceLibrary(device_sim.lib())
        assert sim.can_access_peer is not None
        size_2_0 = _C._runtime._device_api_size_of_minor(0)
        buf = (ctypes.c_char * sim.table.struct_size)()
        ctypes.memmove(buf, sim.address, sim.table.struct_size)
        t = pd.device_api_struct().from_buffer(buf)
        t.minor_version = 0                          # built for 2.0: no can_access_peer
        t.struct_size = size_2_0
        t.mem_get_info = ctypes.cast(None, type(t.mem_get_info))   # optional in 2.0: default NOT_SUPPORTED
        rt._rt._attach_device_api("privateusetwo", ctypes.addressof(buf), "older", (buf,), context=sim.context)
        assert rt.device_api_version("privateusetwo") == (2, 0)
        # can_access_peer's default: a device reaches only itself (the simulator would say yes: not called).
        assert rt.can_device_access_peer("privateusetwo:0", "privateusetwo:0")
        assert not rt.can_device_access_peer("privateusetwo:0", "privateusetwo:1")
        # mem_get_info's default: total from the properties, free = total - reserved by this process.
        free, total = rt._rt.mem_get_info("privateusetwo:0")
        assert total == rt.get_device_properties("privateusetwo:0")["total_memory"] and free == total
        # A struct smaller than its declared minor is refused.
        print("ok")
    """)
    assert "ok" in r.stdout
    small = _table_copy(sim)
    h = _header(small)
    h.minor_version = 0
    h.struct_size = _C._runtime._device_api_size_of_minor(0) - 8
    with pytest.raises(ValueError, match=r"declares device API version 2\.0 with struct_size \d+, smaller than the "
                                         r"\d+ bytes of version 2\.0"):
        rt._rt._attach_device_api("privateusetwo", ctypes.addressof(small), "short", context=sim.context)


# ---- the context ----

def test_context_is_passed_to_every_slot_and_one_table_serves_several_devices():
    r = run_python("""
        import backend_sdk as sdk
        from backend_sdk import _runtime as rt
        from backend_sdk.utils import python_device as pd
        seen = []
        class Recording(pd.PythonDevice):
            def malloc(self, device, nbytes):
                seen.append((self.tag, device))
                return super().malloc(device, nbytes)
        a, b = Recording(device_count=1), Recording(device_count=2)
        a.tag, b.tag = "a", "b"
        pd.attach_python_device("privateuseone", a)
        pd.attach_python_device("privateusetwo", b)
        ca, cb = rt._rt.device_context("privateuseone"), rt._rt.device_context("privateusetwo")
        assert ca and cb and ca != cb
        table = pd._shared_table()
        assert table.bridges[ca].device is a and table.bridges[cb].device is b   # one struct, two contexts
        pd.register_contract_kernels("privateuseone")
        pd.register_contract_kernels("privateusetwo")
        sdk.empty(16, device="privateusetwo:1")
        sdk.empty(16, device="privateuseone:0")
        assert seen == [("b", 1), ("a", 0)], seen
        assert rt.device_count("privateuseone") == 1 and rt.device_count("privateusetwo") == 2
        print("ok")
    """)
    assert "ok" in r.stdout


def test_a_slot_called_with_an_unknown_context_is_refused(sim):
    table = pd._shared_table()
    p = ctypes.c_void_p()
    malloc = pd.device_api_slots()[5]
    assert malloc.name == "malloc"
    fn = malloc.prototype(ctypes.c_void_p.from_address(ctypes.addressof(table.struct) + malloc.offset).value)
    assert fn(0xbad0, 0, ctypes.byref(p), 16) == pd.SDK_ERROR_INVALID_HANDLE


# ---- dtypes ----

def test_supported_dtypes_are_mapped_from_the_c_numbers():
    r = run_python("""
        from backend_sdk import _runtime as rt
        from backend_sdk.utils import python_device as pd
        dev = pd.PythonDevice(device_count=1)
        orig = dev.get_device_properties
        def props(d):
            p = orig(d)
            p.supported_dtypes = (1 << pd.SDK_DTYPE_FLOAT32) | (1 << pd.SDK_DTYPE_BFLOAT16) | (1 << 40)
            return p
        dev.get_device_properties = props
        pd.attach_python_device("privateuseone", dev)
        mask = rt.get_device_properties("privateuseone:0")["supported_dtypes"]
        # In the SDK's ScalarType order: BFloat16 = 7, Float32 = 8; the unknown bit 40 is ignored.
        assert mask == (1 << 7) | (1 << 8), bin(mask)
        from backend_sdk.testing.conformance.operator_checks import supported_dtypes
        assert supported_dtypes("privateuseone") == {"float32", "bfloat16"}
        print("ok")
    """)
    assert "ok" in r.stdout


# ---- version-1 devices ----

@pytest.fixture(scope="module")
def v1_device(tmp_path_factory) -> Path:
    if CC is None:
        pytest.skip("needs a C compiler")
    out = tmp_path_factory.mktemp("v1") / "libv1_host_device.so"
    cmd = [CC, "-std=c99", "-D_ISOC11_SOURCE", "-D_POSIX_C_SOURCE=200112L", "-O1", "-shared", "-fPIC",
           "-Wall", "-Werror", f"-I{V1_HEADER_DIR}", str(V1_HEADER_DIR / "v1_host_device.c"), "-o", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return out


def test_frozen_v1_header_is_the_version_1_layout():
    text = (V1_HEADER_DIR / "backend_sdk" / "runtime" / "DeviceApi.h").read_text()
    assert "#define SDK_DEVICE_API_VERSION 1u" in text and "void* context" not in text
    assert "const sdk_device_api* (*sdk_device_api_entry_fn)(void)" in text


def test_v1_device_loads_and_runs_tensors(v1_device):
    r = run_python(f"""
        import ctypes
        import numpy as np
        import backend_sdk as sdk
        from backend_sdk import _runtime as rt
        from backend_sdk.utils import python_device as pd
        rt.attach_device_library("privateusetwo", {str(v1_device)!r})
        assert rt.device_api_version("privateusetwo") == (1, 0)
        assert rt.device_count("privateusetwo") == 2
        props = rt.get_device_properties("privateusetwo:1")
        assert props["name"] == "v1_host_device"
        assert props["supported_dtypes"] == (1 << 0) | (1 << 8)   # v1 bits: Bool and Float32, as they were
        assert rt.device_extensions("privateusetwo") == {{}}
        pd.register_contract_kernels("privateusetwo")
        pd.register_cpu_fallback("privateusetwo")
        import warnings
        warnings.simplefilter("ignore")
        a_np = np.arange(12, dtype=np.float32).reshape(3, 4)
        a = sdk.from_numpy(a_np).to("privateusetwo:1")
        assert a.device == sdk.device("privateusetwo:1")
        np.testing.assert_array_equal((a + a).cpu().numpy(), a_np * 2)   # CPU fallback over the v1 copies
        np.testing.assert_array_equal(a.t().contiguous().cpu().numpy(), a_np.T)
        s = rt.Stream("privateusetwo:0")
        ran = []
        s.launch_host_func(lambda: ran.append(1))   # the adapter drops the release callback (v1 has none)
        s.synchronize()
        assert ran == [1]
        e1, e2 = rt.Event(enable_timing=True), rt.Event(enable_timing=True)
        e1.record(s); e2.record(s); e2.synchronize()
        assert e1.elapsed_time(e2) >= 0
        free, total = rt._rt.mem_get_info("privateusetwo:0")   # v1's NULL optional slot: the default
        assert total == 64 << 20
        lib = ctypes.CDLL({str(v1_device)!r})
        lib.v1_device_calls.restype = ctypes.c_int64
        assert lib.v1_device_calls() > 10
        print("ok")
    """)
    assert "ok" in r.stdout


def test_v1_device_with_a_null_required_slot_is_refused():
    r = run_python("""
        import ctypes, device_sim
        from backend_sdk import _runtime as rt
        # A v1 struct: struct_size, api_version 1, reserved, 27 slots; malloc (slot 5) NULL.
        slots = (ctypes.c_void_p * 27)(*([0x1000] * 27))
        slots[5] = None
        class V1(ctypes.Structure):
            _fields_ = [("struct_size", ctypes.c_size_t), ("api_version", ctypes.c_uint32),
                        ("reserved0", ctypes.c_uint32), ("slots", ctypes.c_void_p * 27)]
        v1 = V1(16 + 27 * 8, 1, 0, slots)
        try:
            rt._rt._attach_device_api("privateusetwo", ctypes.addressof(v1), "old.so")
        except ValueError as e:
            assert "'old.so' leaves required device API slots NULL: malloc" in str(e), e
        v1.struct_size = 100
        try:
            rt._rt._attach_device_api("privateusetwo", ctypes.addressof(v1), "old.so")
        except ValueError as e:
            assert "declares device API version 1 with struct_size 100, smaller than the 232 bytes" in str(e), e
        assert not rt.has_device("privateusetwo")
        print("ok")
    """)
    assert "ok" in r.stdout


# ---- extensions ----

class _Ext(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("name", ctypes.c_char_p), ("version", ctypes.c_uint32),
                ("reserved0", ctypes.c_uint32), ("next", ctypes.c_void_p)]


def test_simulator_lists_its_trace_extension(sim):
    # graph, stats: issue 15; collectives: issue 21; trace v2: issue 19
    assert rt.device_extensions(B) == {"sdk.trace": 2, "sdk.graph": 1, "sdk.stats": 1, "sdk.collectives": 1}
    assert rt.has_device_extension(B, "sdk.trace") and rt.has_device_extension(B, "sdk.graph")
    assert rt.has_device_extension(B, "sdk.collectives") and not rt.has_device_extension(B, "sdk.nosuch")
    assert sim.table.extension_start


def test_unknown_extensions_are_ignored_and_malformed_chains_refused(sim):
    keep = []

    def attach_with_chain(first, source="chain"):
        buf = _table_copy(sim)
        _header(buf).extension_start = first
        keep.append(buf)
        rt._rt._attach_device_api("privateusetwo", ctypes.addressof(buf), source, context=sim.context)

    a, b = _Ext(ctypes.sizeof(_Ext), b"vendor.a", 1, 0, None), _Ext(ctypes.sizeof(_Ext), b"vendor.b", 1, 0, None)
    a.next, b.next = ctypes.addressof(b), ctypes.addressof(a)
    with pytest.raises(ValueError, match=r"extension chain of 'chain' has a cycle: extension #2 .*'vendor.a'"):
        attach_with_chain(ctypes.addressof(a))
    tiny = _Ext(8, b"vendor.tiny", 1, 0, None)
    with pytest.raises(ValueError, match=r"extension #0 of 'chain' declares struct_size 8, smaller than the 32 bytes"):
        attach_with_chain(ctypes.addressof(tiny))
    nameless = _Ext(ctypes.sizeof(_Ext), None, 1, 0, None)
    with pytest.raises(ValueError, match="NULL, empty or over-long name"):
        attach_with_chain(ctypes.addressof(nameless))
    d1, d2 = _Ext(ctypes.sizeof(_Ext), b"vendor.x", 1, 0, None), _Ext(ctypes.sizeof(_Ext), b"vendor.x", 2, 0, None)
    d1.next = ctypes.addressof(d2)
    with pytest.raises(ValueError, match="lists the extension 'vendor.x' twice"):
        attach_with_chain(ctypes.addressof(d1))
    short_trace = _Ext(ctypes.sizeof(_Ext) + 8, b"sdk.trace", 1, 0, None)
    with pytest.raises(ValueError, match=r"extension 'sdk.trace' of 'chain' declares struct_size 40, smaller than "
                                         r"the 56 bytes of its version 1"):
        attach_with_chain(ctypes.addressof(short_trace))
    short_graph = _Ext(ctypes.sizeof(_Ext) + 8, b"sdk.graph", 1, 0, None)  # Note [Device graph extension]
    with pytest.raises(ValueError, match=r"extension 'sdk.graph' of 'chain' declares struct_size 40, smaller than "
                                         r"the 80 bytes of its version 1"):
        attach_with_chain(ctypes.addressof(short_graph))
    assert not rt.has_device("privateusetwo")


def test_unknown_extension_is_ignored_and_listed():
    r = run_python("""
        import ctypes, device_sim
        import pytest
        from backend_sdk import _runtime as rt
        from backend_sdk.utils import python_device as pd
        class Ext(ctypes.Structure):
            _fields_ = [("struct_size", ctypes.c_size_t), ("name", ctypes.c_char_p), ("version", ctypes.c_uint32),
                        ("reserved0", ctypes.c_uint32), ("next", ctypes.c_void_p), ("payload", ctypes.c_char * 100)]
        sim = pd.DeviceLibrary(device_sim.lib())
        future = Ext(ctypes.sizeof(Ext), b"vendor.future", 3, 0, None)
        buf = (ctypes.c_char * sim.table.struct_size)()
        ctypes.memmove(buf, sim.address, sim.table.struct_size)
        pd.device_api_struct().from_buffer(buf).extension_start = ctypes.addressof(future)
        rt._rt._attach_device_api("privateusetwo", ctypes.addressof(buf), "future", (buf, future), context=sim.context)
        assert rt.device_extensions("privateusetwo") == {"vendor.future": 3}
        with pytest.raises(NotImplementedError, match="does not implement the 'sdk.trace' extension"):
            rt.trace_start("privateusetwo")
        print("ok")
    """)
    assert "ok" in r.stdout


def test_trace_extension_end_to_end(sim):
    s = rt.Stream(f"{B}:0")
    host = np.arange(1024, dtype=np.float32)
    buf = rt.DeviceBuffer(host.nbytes, s)
    rt.trace_collect(B)  # drain whatever an earlier test left
    t0 = time.monotonic_ns()
    rt.trace_start(B, capacity=1000)
    rt.memcpy(B, buf.ptr, host, host.nbytes, "h2d", s)
    rt.memset_async(buf.ptr, 0, 64, s)
    assert device_sim.lib().device_sim_kernel_empty(ctypes.c_void_p(s.native_handle)) == 0
    s.synchronize()
    rt.trace_stop(B)
    t1 = time.monotonic_ns()
    device_sim.lib().device_sim_kernel_empty(ctypes.c_void_p(s.native_handle))  # after stop: not recorded
    s.synchronize()
    records, dropped = rt.trace_collect(B)
    assert dropped == 0
    kinds = [rt.TRACE_KINDS[r["kind"]] for r in records]
    assert kinds == ["memcpy", "memset", "kernel"], records
    assert records[0]["name"] == "memcpy HtoD" and records[0]["bytes"] == host.nbytes
    assert records[1]["bytes"] == 64 and records[2]["name"] == "empty"
    for r in records:
        assert r["device"] == 0 and r["stream"] == s.native_handle
        assert t0 <= r["start_ns"] <= r["end_ns"] <= t1  # the host's monotonic clock
    assert rt.trace_collect(B) == ([], 0)  # collect drains
    # A small buffer overwrites the oldest and reports them as dropped.
    rt.trace_start(B, capacity=2)
    for _ in range(5):
        device_sim.lib().device_sim_kernel_empty(ctypes.c_void_p(s.native_handle))
    s.synchronize()
    rt.trace_stop(B)
    records, dropped = rt.trace_collect(B)
    assert len(records) == 2 and dropped == 3
    with pytest.raises(ValueError, match="capacity must be positive"):
        rt.trace_start(B, capacity=0)
    buf.free()


# ---- launch_host_func's release callback ----

def test_host_function_dropped_on_a_lost_device_is_released(sim):
    class Fn:
        called = False

        def __call__(self) -> None:
            Fn.called = True

    s = rt.Stream(f"{B}:1")
    fn = Fn()
    gone = []
    weakref.finalize(fn, gone.append, 1)
    assert device_sim.lib().device_sim_kernel_sleep(ctypes.c_void_p(s.native_handle), 200_000) == 0
    s.launch_host_func(fn)
    del fn
    device_sim.inject("device_lost", 1)
    try:
        device_sim.reset_device(1)  # waits for the queue to drain: the host function is dropped, then released
        for _ in range(100):
            gc.collect()
            if gone:
                break
            time.sleep(0.01)
        assert gone == [1] and not Fn.called
    finally:
        device_sim.reset_device(1)
