"""Issue 15 part 3 leftovers: the allocator's history in the memory snapshot (_record_memory_history),
ExternalStream, utilization / memory_usage, the graph names of the device module
(Note [Allocation history], Note [External streams])."""
from __future__ import annotations

import ctypes
import gc
import pickle
from typing import Any

import pytest

import accel
import backend_sdk as sdk
import device_sim
from backend_sdk.utils import python_device as pd


def test_names_exist_with_docstrings():
    for name in ("ExternalStream", "utilization", "memory_usage", "Graph", "graph", "graph_pool_handle",
                 "is_current_stream_capturing"):
        assert name in accel.__all__ and getattr(accel, name).__doc__, name
    assert accel.memory._record_memory_history is sdk.accel._record_memory_history
    assert "Graph" in sdk.accelerator.__all__ and issubclass(accel.Graph, sdk.accelerator.Graph)


def test_record_memory_history_fills_device_traces(tmp_path):
    gc.collect()
    accel.memory._record_memory_history(max_entries=1000, clear_history=True)
    try:
        x = sdk.empty(3000, dtype=sdk.uint8, device="accel")
        addr = x.data_ptr()
        del x
        gc.collect()
        snap = accel.memory._snapshot()
    finally:
        accel.memory._record_memory_history(enabled=None)
    trace = snap["device_traces"][accel.current_device()]
    allocs = [e for e in trace if e["action"] == "alloc" and e["addr"] == addr]
    frees = [e for e in trace if e["action"] == "free_completed" and e["addr"] == addr]
    assert allocs and allocs[-1]["size"] == 3000 and frees
    assert set(allocs[-1]) >= {"action", "addr", "size", "stream", "time_us", "frames"}
    assert frees[-1]["time_us"] >= allocs[-1]["time_us"]
    # stopped: nothing more is recorded
    before = len(accel.memory._snapshot()["device_traces"][0])
    y = sdk.empty(100, device="accel")
    del y
    assert len(accel.memory._snapshot()["device_traces"][0]) == before
    path = tmp_path / "snap.pickle"
    accel.memory._dump_snapshot(str(path))
    assert "device_traces" in pickle.loads(path.read_bytes())


def test_record_memory_history_keeps_the_last_max_entries():
    accel.memory._record_memory_history(max_entries=4, clear_history=True)
    try:
        for _ in range(10):
            t = sdk.empty(64, device="accel")
            del t
        trace = accel.memory._snapshot()["device_traces"][accel.current_device()]
    finally:
        accel.memory._record_memory_history(enabled=None, clear_history=True)
    assert len(trace) == 4
    with pytest.raises(ValueError, match="enabled must be"):
        accel.memory._record_memory_history(enabled="yes")


def test_external_stream_wraps_a_native_handle():
    sim = pd.DeviceLibrary(device_sim.lib())
    handle = ctypes.c_void_p()
    assert sim.stream_create(1, 0, ctypes.byref(handle)) == 0
    try:
        s = accel.ExternalStream(handle.value, device=1)
        assert isinstance(s, accel.Stream) and s.native_handle == handle.value and s.device == sdk.device("accel:1")
        assert accel.ExternalStream(handle.value, device="accel:1") == s  # same handle, same stream
        x = sdk.ones(4, device="accel:1")
        s.wait_stream(accel.current_stream(1))  # the fill ran on the default stream: order the mul after it
        with s:
            assert accel.current_stream(1) == s
            x.mul_(3)
        s.synchronize()
        assert x.cpu().tolist() == [3.0] * 4 and s.query()
        assert sdk.Stream(stream_id=s.stream_id, device_index=s.device_index, device_type=s.device_type) == s
    finally:
        accel.synchronize(1)
        sim.stream_destroy(handle)


def test_external_stream_refuses_bad_handles():
    with pytest.raises(TypeError, match="stream_ptr must be an int"):
        accel.ExternalStream("0x1")
    with pytest.raises(Exception, match="not a valid stream handle"):
        accel.ExternalStream(0x123456)
    with pytest.raises(ValueError, match="NULL"):
        accel.ExternalStream(0)


def test_utilization_and_memory_usage_are_percentages():
    # device_sim implements "sdk.stats"; the figures themselves: tests/test_device_stats.py
    for f in (accel.utilization, accel.memory_usage):
        v = f()
        assert type(v) is int and 0 <= v <= 100


def _allocate_here(n: int) -> "sdk.Tensor":
    return sdk.empty(n, dtype=sdk.uint8, device="accel")


def _frames_name(frames: list[dict]) -> list[str]:
    return [f["name"] for f in frames]


def _history_of_one_allocation(n: int, **history: Any) -> tuple[dict, dict, dict]:
    """Records the history while one tensor of n bytes is allocated (from _allocate_here) and freed: its alloc
    and free_completed events and its block in the snapshot taken while it lived."""
    gc.collect()
    accel.memory._record_memory_history(max_entries=1000, clear_history=True, **history)
    try:
        x = _allocate_here(n)
        addr = x.data_ptr()
        snap = accel.memory._snapshot()
        del x
        gc.collect()
        trace = accel.memory._snapshot()["device_traces"][accel.current_device()]
    finally:
        accel.memory._record_memory_history(enabled=None, clear_history=True)
    alloc = [e for e in trace if e["action"] == "alloc" and e["addr"] == addr][-1]
    free = [e for e in trace if e["action"] == "free_completed" and e["addr"] == addr][-1]
    block = [b for seg in snap["segments"] for b in seg["blocks"] if b["address"] == addr][0]
    return alloc, free, block


def test_record_memory_history_records_python_frames():
    """Note [Allocation history]: frames as PyTorch's snapshot has them ({filename, line, name}, innermost first)
    on alloc and free events (context="all") and on live blocks."""
    alloc, free, block = _history_of_one_allocation(5000, enabled="all", context="all", stacks="python")
    frames = alloc["frames"]
    assert frames and all(set(f) == {"filename", "line", "name"} for f in frames)
    names = _frames_name(frames)
    assert names.index("_allocate_here") < names.index("test_record_memory_history_records_python_frames")
    here = frames[names.index("_allocate_here")]
    assert here["filename"] == __file__ and here["line"] == _allocate_here.__code__.co_firstlineno + 1
    assert "test_record_memory_history_records_python_frames" in _frames_name(free["frames"])
    assert block["state"] == "active_allocated" and "_allocate_here" in _frames_name(block["frames"])
    assert pickle.loads(pickle.dumps([alloc, free, block])) == [alloc, free, block]  # plain data, as _dump_snapshot


@pytest.mark.parametrize("context, on_alloc, on_free, on_block", [
    ("state", False, False, True), ("alloc", True, False, True), (None, False, False, False),
])
def test_record_memory_history_context_levels(context, on_alloc, on_free, on_block):
    alloc, free, block = _history_of_one_allocation(6000, context=context)
    assert bool(alloc["frames"]) == on_alloc and bool(free["frames"]) == on_free
    assert bool(block["frames"]) == on_block
    with pytest.raises(ValueError, match="context must be"):
        accel.memory._record_memory_history(context="everything")
    with pytest.raises(ValueError, match="stacks must be"):
        accel.memory._record_memory_history(stacks="cpp")


def test_record_memory_history_frames_off_the_python_thread():
    """Allocations made without the GIL (a device worker, a waiting thread) carry no frames instead of blocking;
    enabled="state" keeps block frames but no trace."""
    accel.memory._record_memory_history(enabled="state", max_entries=1000, clear_history=True)
    try:
        x = _allocate_here(7000)
        snap = accel.memory._snapshot()
    finally:
        accel.memory._record_memory_history(enabled=None, clear_history=True)
    assert snap["device_traces"][accel.current_device()] == []
    block = [b for seg in snap["segments"] for b in seg["blocks"] if b["address"] == x.data_ptr()][0]
    assert "_allocate_here" in _frames_name(block["frames"])


def test_tensor_type_names_and_conversions():
    assert sdk.ones(2).type() == "backend_sdk.FloatTensor"
    assert sdk.ones(2, dtype=sdk.int64, device="accel").type() == "backend_sdk.accel.LongTensor"
    assert sdk.ones(2, dtype=sdk.uint8).type() == "backend_sdk.ByteTensor"
    assert sdk.ones(2).type(sdk.float64).dtype == sdk.float64
    assert sdk.ones(2).type("backend_sdk.IntTensor").dtype == sdk.int32
    with pytest.raises(ValueError, match="invalid type: 'foo'"):
        sdk.ones(2).type("foo")
