"""The caching pinned-host allocator (Note [Pinned host allocator]) on the simulator."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

import backend_sdk
from backend_sdk import _runtime as rt
import device_sim

from _helpers import SIM_BACKEND as B


pytestmark = pytest.mark.usefixtures("sim")  # device_sim attached to privateusethree (tests/conftest.py)


def test_pinned_empty_is_a_pinned_cpu_tensor():
    t = rt.pinned_empty((4, 8), backend_sdk.float64, backend=B)
    assert t.shape == (4, 8) and t.dtype == backend_sdk.float64 and t.device == backend_sdk.device("cpu")
    assert rt.is_pinned(t, B) and rt.is_pinned(t.data_ptr() + 8, B)  # anywhere inside the block
    assert not rt.is_pinned(backend_sdk.zeros(4), B)
    assert not rt.is_pinned(0, B)
    a = t.numpy()
    a[:] = np.arange(32).reshape(4, 8)
    np.testing.assert_array_equal(t.numpy(), np.arange(32).reshape(4, 8))
    assert rt.pinned_empty(3, backend=B).dtype == backend_sdk.float32
    with pytest.raises(ValueError, match="negative dimension -1"):
        rt.pinned_empty((2, -1), backend=B)
    with pytest.raises(TypeError, match="expected a dtype"):
        rt.pinned_empty(3, "float32x", backend=B)


def test_blocks_are_cached_and_reused():
    rt.host_empty_cache(B)
    before = rt.host_memory_stats(B)
    t = rt.pinned_empty(1000, backend_sdk.uint8, backend=B)  # rounded to 1024
    ptr = t.data_ptr()
    stats = rt.host_memory_stats(B)
    assert stats["allocated_bytes"] == before["allocated_bytes"] + 1024
    assert stats["num_host_alloc"] == before["num_host_alloc"] + 1
    del t
    assert not rt.is_pinned(ptr, B)  # cached, not live
    u = rt.pinned_empty(1024, backend_sdk.uint8, backend=B)
    assert u.data_ptr() == ptr
    stats = rt.host_memory_stats(B)
    assert stats["num_reuses"] == before["num_reuses"] + 1 and stats["num_host_alloc"] == before["num_host_alloc"] + 1
    del u
    rt.host_empty_cache(B)
    stats = rt.host_memory_stats(B)
    assert stats["reserved_bytes"] == stats["allocated_bytes"] and stats["cached_bytes"] == 0


def _reuse_while_copy_pending(sim, record: bool):
    """Queues a copy out of a pinned block behind a slow kernel, frees the block, reallocates and overwrites."""
    s = rt.Stream(f"{B}:0")
    n = 1 << 12
    src = rt.pinned_empty(n, backend_sdk.float32, backend=B)
    src.numpy()[:] = 7.0
    buf = rt.DeviceBuffer(4 * n, s)
    out = np.zeros(n, dtype=np.float32)
    sim.device_sim_kernel_sleep(s.native_handle, 50_000)
    if record:
        rt.copy_async(buf.ptr, src.data_ptr(), 4 * n, "h2d", s)  # records the pinned use on s
    else:
        # The raw contract call: nothing tells the allocator the block is in use.
        assert api_memcpy_async(buf.ptr, src.data_ptr(), 4 * n, s) == 0
    old = src.data_ptr()
    del src
    again = rt.pinned_empty(n, backend_sdk.float32, backend=B)
    reused = again.data_ptr() == old
    again.numpy()[:] = -1.0
    s.synchronize()
    rt.memcpy(B, out.ctypes.data, buf.ptr, 4 * n, "d2h")
    buf.free()
    return out, reused


def api_memcpy_async(dst: int, src: int, nbytes: int, s) -> int:
    """memcpy_async (H2D) straight through the contract's struct."""
    from backend_sdk.utils.python_device import DeviceLibrary

    return DeviceLibrary(device_sim.lib(), raw=True).memcpy_async(dst, src, nbytes, 1, s.native_handle)


def test_pinned_block_is_not_reused_before_the_copy_ran(sim):
    out, reused = _reuse_while_copy_pending(sim, record=False)
    assert reused and (out == -1.0).all()  # without the recorded use the copy reads overwritten data
    out, reused = _reuse_while_copy_pending(sim, record=True)
    assert not reused and (out == 7.0).all()
    # Once the stream's work is done the block comes back.
    t = rt.pinned_empty(1 << 12, backend_sdk.float32, backend=B)
    del t


def test_memcpy_with_a_stream_records_pinned_host_memory(sim):
    s = rt.Stream(f"{B}:0")
    n = 1 << 12
    src = rt.pinned_empty(n, backend_sdk.float32, backend=B)
    src.numpy()[:] = 3.0
    buf = rt.DeviceBuffer(4 * n, s)
    sim.device_sim_kernel_sleep(s.native_handle, 30_000)
    rt.memcpy(B, buf.ptr, src.data_ptr(), 4 * n, "h2d", s)
    old = src.data_ptr()
    del src
    assert rt.host_memory_stats(B)["pending_bytes"] >= 4 * n
    again = rt.pinned_empty(n, backend_sdk.float32, backend=B)
    assert again.data_ptr() != old
    again.numpy()[:] = -1.0
    s.synchronize()
    out = np.zeros(n, dtype=np.float32)
    rt.memcpy(B, out.ctypes.data, buf.ptr, 4 * n, "d2h")
    assert (out == 3.0).all()
    del again
    third = rt.pinned_empty(n, backend_sdk.float32, backend=B)  # the event completed: reused now
    assert third.data_ptr() == old
    buf.free()


def test_record_stream_on_a_pinned_tensor(sim):
    s = rt.Stream(f"{B}:1")
    t = rt.pinned_empty(256, backend_sdk.uint8, backend=B)
    sim.device_sim_kernel_sleep(s.native_handle, 30_000)
    rt.record_stream(t, s)
    old = t.data_ptr()
    del t
    u = rt.pinned_empty(256, backend_sdk.uint8, backend=B)
    assert u.data_ptr() != old
    s.synchronize()


def test_copy_async_stages_pageable_memory(sim):
    s = rt.Stream(f"{B}:0")
    n = 1 << 14
    x = np.arange(n, dtype=np.float32)
    buf = rt.DeviceBuffer(x.nbytes, s)
    sim.device_sim_kernel_sleep(s.native_handle, 20_000)
    rt.copy_async(buf.ptr, x.ctypes.data, x.nbytes, "h2d", s)
    x[:] = -5.0  # the caller may reuse a pageable source at once
    out = rt.pinned_empty(n, backend_sdk.float32, backend=B)
    rt.copy_async(out.data_ptr(), buf.ptr, x.nbytes, "d2h", s)
    s.synchronize()
    np.testing.assert_array_equal(out.numpy(), np.arange(n, dtype=np.float32))
    page = np.zeros(n, dtype=np.float32)
    with pytest.raises(ValueError, match="needs pinned destination memory"):
        rt.copy_async(page.ctypes.data, buf.ptr, x.nbytes, "d2h", s)
    with pytest.raises(ValueError, match="non-negative"):
        rt.copy_async(buf.ptr, x.ctypes.data, -1, "h2d", s)
    buf.free()
