"""Conformance area "device_module": the generated device module ``backend_sdk.<name>`` (and the
vendor package that re-exports it) has every function of ``torch.cuda``'s shape that the SDK
promises, and each behaves as users rely on."""
from __future__ import annotations

import numpy as np
import pytest

import backend_sdk as sdk

#: Every public name of a device module (the accel issue's list).
DEVICE_MODULE_API = {
    "devices": ["is_available", "device_count", "current_device", "set_device", "device", "get_device_name",
                "get_device_properties", "get_device_capability", "synchronize", "init", "is_initialized"],
    "streams": ["Stream", "current_stream", "default_stream", "set_stream", "stream"],
    "events": ["Event"],
    "memory": ["memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
               "memory_stats", "memory_summary", "memory_snapshot", "reset_peak_memory_stats",
               "reset_accumulated_memory_stats", "empty_cache", "mem_get_info", "set_per_process_memory_fraction",
               "OutOfMemoryError"],
    "random": ["manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed", "get_rng_state",
               "set_rng_state", "get_rng_state_all", "set_rng_state_all"],
    "amp": ["get_amp_supported_dtype"],
}
STREAM_METHODS = ["query", "synchronize", "wait_event", "wait_stream", "record_event", "priority", "device"]
EVENT_METHODS = ["record", "wait", "query", "synchronize", "elapsed_time"]


def _index(device: str) -> int:
    return int(device.rsplit(":", 1)[1])


@pytest.mark.parametrize("group", sorted(DEVICE_MODULE_API))
def test_every_function_is_present(conformance_backend, group):
    m = conformance_backend.module
    missing = [n for n in DEVICE_MODULE_API[group] if not hasattr(m, n)]
    assert not missing, f"backend_sdk.{conformance_backend.name} lacks {group} functions: {missing}"
    not_exported = [n for n in DEVICE_MODULE_API[group] if n not in getattr(m, "__all__", ())]
    assert not not_exported, f"backend_sdk.{conformance_backend.name}.__all__ lacks {not_exported}"
    for name in DEVICE_MODULE_API[group]:
        assert getattr(m, name).__doc__, f"backend_sdk.{conformance_backend.name}.{name} has no docstring"


def test_vendor_package_exposes_the_module(conformance_backend):
    pkg, m = conformance_backend.package, conformance_backend.module
    missing = [n for names in DEVICE_MODULE_API.values() for n in names if not hasattr(pkg, n)]
    assert not missing, f"the package '{conformance_backend.name}' does not re-export {missing}"
    assert pkg.Stream is m.Stream and pkg.memory_allocated is m.memory_allocated


def test_device_queries(conformance_backend, conformance_device):
    m, name = conformance_backend.module, conformance_backend.name
    index = _index(conformance_device)
    assert m.is_available() and m.device_count() == conformance_backend.device_count
    m.init()
    assert m.is_initialized()
    props = m.get_device_properties(index)
    assert isinstance(props.name, str) and props.name and props.total_memory > 0
    assert m.get_device_name(index) == props.name == m.get_device_name(conformance_device)
    assert m.get_device_properties(sdk.device(conformance_device)).total_memory == props.total_memory
    assert m.get_device_capability(index) == (props.major, props.minor)
    assert props.name in repr(props)
    with pytest.raises(TypeError):
        m.get_device_properties(1.5)


def test_invalid_device_ordinal(conformance_backend):
    m, name, count = conformance_backend.module, conformance_backend.name, conformance_backend.device_count
    for bad in (count, f"{name}:{count}"):
        with pytest.raises(IndexError, match="Invalid device ordinal"):
            m.get_device_properties(bad)
    with pytest.raises(IndexError, match="Invalid device ordinal"):
        m.set_device(count)
    with pytest.raises((IndexError, ValueError), match="(?i)invalid device ordinal|device"):
        sdk.empty(2, device=f"{name}:{count}")


def test_set_device_and_device_context_restore_even_on_error(conformance_backend, conformance_device):
    m, name = conformance_backend.module, conformance_backend.name
    index = _index(conformance_device)
    before = m.current_device()
    with pytest.raises(ZeroDivisionError):
        with m.device(index):
            assert m.current_device() == index
            assert sdk.empty(2, device=name).device.index == index  # the bare name is the current device
            1 / 0
    assert m.current_device() == before
    m.set_device(conformance_device)
    try:
        assert m.current_device() == index
    finally:
        m.set_device(before)


def test_streams(conformance_backend, conformance_device):
    m = conformance_backend.module
    for method in STREAM_METHODS:
        assert hasattr(m.Stream, method), f"Stream lacks {method}"
    s = m.Stream(conformance_device, priority=-1)
    assert s.device == sdk.device(conformance_device)
    props = m.get_device_properties(_index(conformance_device))
    assert s.priority == max(-1, props.stream_priority_greatest)
    d = sdk.device(conformance_device)
    assert s.query() and s == s and hash(s) == hash(s)
    assert f"device_type={d.type}, device_index={d.index}" in repr(s)  # PyTorch's Stream repr
    assert m.default_stream(conformance_device) != s
    with m.device(conformance_device):
        assert m.current_stream() == m.default_stream()
        with m.stream(s):
            assert m.current_stream() == s
            x = sdk.ones(1 << 10, device=conformance_device) * 2
        assert m.current_stream() == m.default_stream()
        m.set_stream(s)
        try:
            assert m.current_stream() == s
        finally:
            m.set_stream(m.default_stream())
    s.synchronize()
    e = s.record_event()
    e.synchronize()
    np.testing.assert_array_equal(x.cpu().numpy(), 2.0)
    with pytest.raises((ValueError, TypeError, AttributeError)):
        m.set_stream("not a stream")


def test_events(conformance_backend, conformance_device):
    m = conformance_backend.module
    for method in EVENT_METHODS:
        assert hasattr(m.Event, method), f"Event lacks {method}"
    with m.device(conformance_device):
        e = m.Event()
        assert e.query()  # never recorded: nothing to wait for
        s = m.Stream(conformance_device)
        e.record(s)
        e.wait()          # the current stream waits for it
        e.synchronize()
        assert e.query()
        blocking = m.Event(enable_timing=True, blocking=True)
        blocking.record()
        blocking.synchronize()


def test_memory_stats_move_with_allocations_and_frees(conformance_backend, conformance_device):
    m = conformance_backend.module
    index = _index(conformance_device)
    m.synchronize(index)
    m.empty_cache()
    m.reset_peak_memory_stats(index)
    m.reset_accumulated_memory_stats(index)
    before = m.memory_allocated(index)
    # 1 MiB less 128 bytes: a 1 MiB block with or without the kernel checker's 64-byte guard
    # (Note [Allocator guard regions]), as PyTorch's allocator rounds to 512 bytes.
    x = sdk.empty((1 << 18) - 32, device=conformance_device)
    assert m.memory_allocated(index) == before + (1 << 20)
    assert m.memory_reserved(index) >= m.memory_allocated(index)
    assert m.memory_stats(index)["allocation.all.allocated"] >= 1
    del x
    assert m.memory_allocated(index) == before
    assert m.max_memory_allocated(index) >= before + (1 << 20)
    assert m.max_memory_reserved(index) >= 1 << 20
    free, total = m.mem_get_info(index)
    assert total == m.get_device_properties(index).total_memory and 0 <= free <= total
    assert isinstance(m.memory_summary(index), str) and isinstance(m.memory_snapshot(), list)
    m.reset_peak_memory_stats(index)
    assert m.max_memory_allocated(index) == m.memory_allocated(index)
    with pytest.raises(ValueError):
        m.set_per_process_memory_fraction(2.0, index)


def test_rng_state_round_trip_and_seeds(conformance_backend, conformance_device):
    m = conformance_backend.module
    index = _index(conformance_device)
    m.manual_seed(123)
    assert m.initial_seed() == 123
    state = m.get_rng_state(index)
    a = sdk.rand(16, device=conformance_device)
    m.set_rng_state(state, index)
    b = sdk.rand(16, device=conformance_device)
    np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy())
    assert ((a.cpu().numpy() >= 0) & (a.cpu().numpy() < 1)).all()
    m.manual_seed_all(7)
    states = m.get_rng_state_all()
    assert len(states) == conformance_backend.device_count
    first = sdk.rand(8, device=conformance_device)
    m.set_rng_state_all(states)
    np.testing.assert_array_equal(sdk.rand(8, device=conformance_device).cpu().numpy(), first.cpu().numpy())
    m.seed()
    m.seed_all()
    assert m.initial_seed() != 7


def test_amp_supported_dtypes(conformance_backend):
    dtypes = conformance_backend.module.get_amp_supported_dtype()
    assert isinstance(dtypes, list) and all(isinstance(d, sdk.dtype) for d in dtypes)


def test_tensor_methods_and_device_strings(conformance_backend, conformance_device):
    name = conformance_backend.name
    x = sdk.arange(6, dtype=sdk.float32).reshape(2, 3)
    y = x.to(conformance_device)
    assert getattr(y, f"is_{name}") and not getattr(x, f"is_{name}")
    assert y.device == sdk.device(conformance_device) and f"device='{conformance_device}'" in repr(y)
    z = getattr(x, name)(_index(conformance_device))
    assert z.device == y.device
    w = x.to(conformance_device, non_blocking=True)
    conformance_backend.module.synchronize(conformance_device)
    np.testing.assert_array_equal(w.cpu().numpy(), x.numpy())
    np.testing.assert_array_equal(z.cpu().numpy(), x.numpy())
