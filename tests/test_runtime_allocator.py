"""The caching allocator over the simulator (PrivateUse3, not renamed)."""
from __future__ import annotations

import numpy as np
import pytest

import backend_sdk
from backend_sdk import _runtime as rt
import device_sim

from _helpers import SIM_BACKEND as B, run_threads
MiB = 1 << 20


pytestmark = pytest.mark.usefixtures("sim")  # device_sim attached to privateusethree (tests/conftest.py)


def test_stats_keys_and_reuse():
    dev = f"{B}:0"
    s = rt.Stream(dev)
    rt.reset_accumulated_memory_stats(dev)
    before = rt.memory_allocated(dev)
    a = rt.DeviceBuffer(1000, s)
    stats = rt.memory_stats(dev)
    for key in ("allocated_bytes.all.current", "reserved_bytes.small_pool.peak", "active_bytes.large_pool.freed",
                "allocation.all.allocated", "segment.all.current", "num_alloc_retries", "num_ooms"):
        assert key in stats
    assert stats["allocated_bytes.all.current"] == before + 1024  # rounded to 512
    assert stats["requested_bytes.all.current"] >= 1000
    ptr = a.ptr
    a.free()
    b = rt.DeviceBuffer(900, s)
    assert b.ptr == ptr  # cached block reused on the same stream
    b.free()
    assert rt.memory_allocated(dev) == before
    assert "Allocated memory" in rt.memory_summary(dev)
    segs = [g for g in rt.memory_snapshot(B) if g["device"] == 0]
    assert segs and all(sum(blk["size"] for blk in g["blocks"]) == g["total_size"] for g in segs)


def test_blocks_are_not_shared_between_streams():
    dev = f"{B}:0"
    s1, s2 = rt.Stream(dev), rt.Stream(dev)
    a = rt.DeviceBuffer(4096, s1)
    ptr = a.ptr
    a.free()
    b = rt.DeviceBuffer(4096, s2)
    assert b.ptr != ptr


def _reuse_scenario(sim, use_record_stream: bool):
    """Frees memory still being read on a side stream, then reallocates and overwrites it."""
    dev = f"{B}:0"
    alloc_stream, side = rt.Stream(dev), rt.Stream(dev)
    n = 1 << 14
    x = np.full(n, 7.0, dtype=np.float32)
    y = np.full(n, -1.0, dtype=np.float32)
    out = np.zeros(n, dtype=np.float32)
    buf = rt.DeviceBuffer(x.nbytes, alloc_stream)
    rt.memcpy(B, buf.ptr, x.ctypes.data, x.nbytes, "h2d", alloc_stream)
    rt.wait_stream(side, alloc_stream)
    sim.device_sim_kernel_sleep(side.native_handle, 50_000)
    rt.memcpy(B, out.ctypes.data, buf.ptr, x.nbytes, "d2h", side)  # reads buf 50 ms from now
    if use_record_stream:
        rt.record_stream(buf, side)
    old = buf.ptr
    buf.free()
    buf2 = rt.DeviceBuffer(x.nbytes, alloc_stream)
    rt.memcpy(B, buf2.ptr, y.ctypes.data, y.nbytes, "h2d", alloc_stream)
    alloc_stream.synchronize()
    side.synchronize()
    reused = buf2.ptr == old
    buf2.free()
    return out, reused


def test_record_stream_prevents_reuse_before_the_other_stream_is_done(sim):
    out, reused = _reuse_scenario(sim, use_record_stream=False)
    assert reused and (out == -1.0).all()  # without record_stream the data is corrupted
    out, reused = _reuse_scenario(sim, use_record_stream=True)
    assert not reused and (out == 7.0).all()


def test_record_stream_block_comes_back_after_the_stream_finishes(sim):
    dev = f"{B}:0"
    a_stream, side = rt.Stream(dev), rt.Stream(dev)
    buf = rt.DeviceBuffer(8192, a_stream)
    sim.device_sim_kernel_sleep(side.native_handle, 5_000)
    buf.record_stream(side)
    ptr = buf.ptr
    buf.free()
    side.synchronize()
    again = rt.DeviceBuffer(8192, a_stream)
    assert again.ptr == ptr
    again.free()


def test_oom_then_retry_then_success():
    dev = f"{B}:1"
    s = rt.default_stream(dev)
    rt.empty_cache(B)
    total = rt.get_device_properties(dev)["total_memory"]
    rt.reset_accumulated_memory_stats(dev)
    rt.set_per_process_memory_fraction((64 * MiB) / total, dev)
    try:
        a = rt.DeviceBuffer(40 * MiB, s)
        with pytest.raises(backend_sdk.OutOfMemoryError) as info:
            rt.DeviceBuffer(40 * MiB, s)
        msg = str(info.value)
        assert "Tried to allocate 40.00 MiB" in msg and "Device 1 has a total capacity of" in msg
        assert "is allocated by the SDK" in msg and "reserved by the SDK but unallocated" in msg
        assert isinstance(info.value, MemoryError)
        a.free()  # cached, still reserved
        b = rt.DeviceBuffer(50 * MiB, s)  # needs the cached 40 MiB released: retry succeeds
        stats = rt.memory_stats(dev)
        assert stats["num_ooms"] == 1 and stats["num_alloc_retries"] >= 1
        b.free()
    finally:
        rt.set_per_process_memory_fraction(1.0, dev)
        rt.empty_cache(B)
    assert rt.memory_reserved(dev) == 0 or rt.memory_allocated(dev) == 0


def test_allocator_bad_input():
    with pytest.raises(ValueError, match="not in \\[0, 1\\]"):
        rt.set_per_process_memory_fraction(1.5, f"{B}:0")
    with pytest.raises(backend_sdk.OutOfMemoryError, match="Tried to allocate"):
        rt.DeviceBuffer(1 << 62, rt.default_stream(f"{B}:0"))
    buf = rt.DeviceBuffer(16, rt.default_stream(f"{B}:0"))
    buf.free()
    buf.free()  # freeing twice through the SDK is harmless: the DataPtr is empty
    with pytest.raises(ValueError, match="freed"):
        buf.record_stream(rt.default_stream(f"{B}:0"))
    with pytest.raises(ValueError, match="the tensor is on cpu but the stream is"):
        rt.record_stream(backend_sdk.zeros(3), rt.default_stream(f"{B}:0"))


def test_fast_bins_keep_stats_exact_and_reserve_nothing_extra():
    """Note [Allocator fast bins]: a freed small block is parked and handed back, and counts as free meanwhile."""
    dev = f"{B}:0"
    s = rt.Stream(dev)
    rt.empty_cache(B)
    rt.reset_accumulated_memory_stats(dev)
    base = rt.memory_stats(dev)
    a = rt.DeviceBuffer(3000, s)  # 3072 bytes
    ptr = a.ptr
    a.free()
    st = rt.memory_stats(dev)
    assert st["allocated_bytes.all.current"] == base["allocated_bytes.all.current"]
    assert st["active_bytes.small_pool.current"] == base["active_bytes.small_pool.current"]
    assert st["allocation.all.allocated"] == 1 and st["allocation.all.freed"] == 1
    assert st["allocated_bytes.small_pool.freed"] == 3072
    blocks = [b for g in rt.memory_snapshot(B) for b in g["blocks"] if b["address"] == ptr]
    assert len(blocks) == 1 and blocks[0]["state"] == "inactive"
    b = rt.DeviceBuffer(2600, s)  # same rounded size, same stream: the parked block
    assert b.ptr == ptr
    assert rt.memory_stats(dev)["requested_bytes.all.current"] == base["requested_bytes.all.current"] + 2600
    b.free()
    reserved = rt.memory_reserved(dev)
    c = rt.DeviceBuffer(1 << 20, s)  # a different size: carved from the same segment, no new reservation
    c_ptr = c.ptr
    assert rt.memory_reserved(dev) == reserved
    c.free()
    rt.empty_cache(B)  # bins are flushed: every segment without a live block is returned
    # (A block an earlier test still holds keeps its segment: reserved == allocated only if nothing is.)
    segments = [g for g in rt.memory_snapshot(B) if g["device"] == 0]
    assert rt.memory_reserved(dev) == sum(g["total_size"] for g in segments)
    assert all(any(b["state"] == "active_allocated" for b in g["blocks"]) for g in segments), segments
    live = {b["address"] for g in segments for b in g["blocks"] if b["state"] == "active_allocated"}
    assert ptr not in live and c_ptr not in live


def test_concurrent_allocations_keep_stats_exact():
    dev = f"{B}:1"
    rt.reset_accumulated_memory_stats(dev)
    before = rt.memory_allocated(dev)

    def worker(seed: int) -> None:
        s = rt.Stream(dev)
        held = []
        for i in range(2000):
            held.append(rt.DeviceBuffer(512 * (1 + (i * 7 + seed) % 64), s))
            if len(held) > 8:
                held.pop(0).free()
        for h in held:
            h.free()

    run_threads([lambda i=i: worker(i) for i in range(4)])
    st = rt.memory_stats(dev)
    assert rt.memory_allocated(dev) == before
    assert st["allocation.all.allocated"] == st["allocation.all.freed"] == 8000
    assert st["allocated_bytes.all.allocated"] == st["allocated_bytes.all.freed"]
    assert st["active_bytes.all.current"] == st["allocated_bytes.all.current"]
