"""The device module's torch.cuda names beyond the basics: deprecated memory aliases, raw caching-allocator
memory, the allocator snapshot in PyTorch's format, bf16 support and the sync debug mode."""
from __future__ import annotations

import gc
import pickle
import warnings

import pytest

import accel
import backend_sdk as sdk


def test_names_exist_with_docstrings():
    for name in ("StreamContext", "device_of", "is_bf16_supported", "reset_max_memory_allocated",
                 "caching_allocator_alloc", "caching_allocator_delete", "get_allocator_backend",
                 "get_sync_debug_mode", "set_sync_debug_mode", "memory"):
        assert name in accel.__all__ and getattr(accel, name).__doc__, name
    assert accel.memory._snapshot is sdk.accel._snapshot and accel.memory.memory_allocated is accel.memory_allocated


def test_reset_max_memory_allocated_warns_and_resets_peak():
    gc.collect()
    x = sdk.empty(1 << 20, dtype=sdk.uint8, device="accel")
    del x
    gc.collect()
    assert accel.max_memory_allocated() > accel.memory_allocated()
    with pytest.warns(FutureWarning, match="reset_peak_memory_stats"):
        accel.reset_max_memory_allocated()
    assert accel.max_memory_allocated() == accel.memory_allocated()
    assert accel.memory_cached() == accel.memory_reserved() and accel.max_memory_cached() == accel.max_memory_reserved()


def test_caching_allocator_alloc_and_delete():
    gc.collect()
    before = accel.memory_allocated(1)
    ptr = accel.caching_allocator_alloc(4096, device=1)
    assert isinstance(ptr, int) and ptr != 0 and accel.memory_allocated(1) >= before + 4096
    accel.caching_allocator_delete(ptr)
    assert accel.memory_allocated(1) == before
    with pytest.raises(ValueError, match="was not allocated by caching_allocator_alloc"):
        accel.caching_allocator_delete(ptr)
    s = accel.Stream(0)
    ptr = accel.caching_allocator_alloc(128, stream=s)
    accel.caching_allocator_delete(ptr)
    with pytest.raises(TypeError, match="size must be an int"):
        accel.caching_allocator_alloc(1.5)
    assert accel.get_allocator_backend() == "native"


def test_snapshot_has_pytorchs_format(tmp_path):
    x = sdk.ones(1000, device="accel:0")
    snap = accel.memory._snapshot()
    assert set(snap) == {"segments", "device_traces"} and len(snap["device_traces"]) == accel.device_count()
    keys = {"device", "address", "total_size", "allocated_size", "active_size", "requested_size", "stream",
            "segment_type", "segment_pool_id", "is_expandable", "frames", "blocks"}
    assert snap["segments"] and all(set(seg) == keys for seg in snap["segments"])
    blocks = [b for seg in snap["segments"] for b in seg["blocks"]]
    assert {"address", "size", "requested_size", "state", "frames"} <= set(blocks[0])
    assert any(b["state"] == "active_allocated" and b["requested_size"] >= 4000 for b in blocks)
    assert {b["state"] for b in blocks} <= {"active_allocated", "active_pending_free", "inactive"}
    path = tmp_path / "snap.pickle"
    accel.memory._dump_snapshot(str(path))
    assert set(pickle.loads(path.read_bytes())) == {"segments", "device_traces"}
    del x


def test_is_bf16_supported():
    assert accel.is_bf16_supported() is True


def test_sync_debug_mode_warns_and_errors_naming_the_call():
    x = sdk.ones(4, device="accel")
    assert accel.get_sync_debug_mode() == 0
    try:
        accel.set_sync_debug_mode("warn")
        assert accel.get_sync_debug_mode() == 1
        with pytest.warns(UserWarning, match="called a synchronizing device operation: synchronize"):
            accel.synchronize()
        with pytest.warns(UserWarning, match="called a synchronizing device operation"):
            x.cpu()
        accel.set_sync_debug_mode(2)
        with pytest.raises(RuntimeError, match=r"called a synchronizing device operation: synchronize\(accel:0\)"):
            accel.synchronize(0)
        with pytest.raises(RuntimeError, match="synchronizing"):
            accel.Stream(0).synchronize()
        with pytest.raises(RuntimeError, match="invalid value of debug_mode"):
            accel.set_sync_debug_mode("loud")
    finally:
        accel.set_sync_debug_mode("default")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        accel.synchronize()
        assert x.cpu().tolist() == [1.0] * 4
