"""Conformance area "runtime": the device runtime semantics a backend must keep (streams, events,
waits, the caching allocator across streams, out-of-memory, asynchronous faults, fork)."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import backend_sdk as sdk
from backend_sdk import _runtime


def _index(device: str) -> int:
    return int(device.rsplit(":", 1)[1])


def _host(t: sdk.Tensor) -> np.ndarray:
    return t.cpu().numpy()


def test_stream_runs_work_in_order(conformance_backend, conformance_device):
    """Work queued on one stream runs in the order it was queued."""
    m = conformance_backend.module
    s = m.Stream(conformance_device)
    x = sdk.zeros(4096, device=conformance_device)
    m.synchronize(conformance_device)
    with m.stream(s):
        for i in range(1, 11):
            x.mul_(2).add_(i)      # not commutative: any reordering changes the result
    s.synchronize()
    assert s.query(), "Stream.query() is False after Stream.synchronize()"
    expected = 0.0
    for i in range(1, 11):
        expected = expected * 2 + i
    np.testing.assert_array_equal(_host(x), np.full(4096, expected, np.float32))


def test_stream_context_restores_the_current_stream(conformance_backend, conformance_device):
    m = conformance_backend.module
    before = m.current_stream(conformance_device)
    s = m.Stream(conformance_device)
    with pytest.raises(KeyError):
        with m.stream(s):
            assert m.current_stream(conformance_device) == s
            raise KeyError("boom")
    assert m.current_stream(conformance_device) == before


def test_events_and_elapsed_time(conformance_backend, conformance_device):
    m = conformance_backend.module
    with m.device(conformance_device):
        start, end = m.Event(enable_timing=True), m.Event(enable_timing=True)
        start.record()
        x = sdk.ones(1 << 14, device=conformance_device)
        for _ in range(4):
            x = x * 1.5
        end.record()
        end.synchronize()
        assert start.query() and end.query()
        ms = start.elapsed_time(end)
        assert isinstance(ms, float) and ms >= 0.0
        np.testing.assert_allclose(_host(x), 1.5 ** 4)


def test_elapsed_time_errors_when_timing_is_off_or_not_recorded(conformance_backend, conformance_device):
    m = conformance_backend.module
    with m.device(conformance_device):
        plain, timed = m.Event(), m.Event(enable_timing=True)
        plain.record()
        timed.record()
        timed.synchronize()
        with pytest.raises(ValueError, match="enable_timing"):
            plain.elapsed_time(timed)
        with pytest.raises(ValueError, match="recorded"):
            m.Event(enable_timing=True).elapsed_time(timed)


def test_wait_stream_orders_work_across_streams(conformance_backend, conformance_device):
    m = conformance_backend.module
    a, b = m.Stream(conformance_device), m.Stream(conformance_device)
    x = sdk.zeros(1 << 14, device=conformance_device)
    m.synchronize(conformance_device)
    with m.stream(a):
        for _ in range(8):
            x.add_(1.0)
        x.mul_(3.0)
    b.wait_stream(a)
    with m.stream(b):
        y = x + 1  # must see every write queued on a
    b.synchronize()
    np.testing.assert_array_equal(_host(y), np.full(1 << 14, 25.0, np.float32))


def test_event_wait_orders_work_across_devices(conformance_backend, conformance_device):
    m = conformance_backend.module
    if conformance_backend.device_count < 2:
        pytest.skip(f"'{conformance_backend.name}' has one device: nothing to wait for across devices")
    index = _index(conformance_device)
    other = f"{conformance_backend.name}:{(index + 1) % conformance_backend.device_count}"
    producer, consumer = m.Stream(conformance_device), m.Stream(other)
    x = sdk.zeros(1 << 14, device=conformance_device)
    m.synchronize(conformance_device)
    with m.stream(producer):
        for _ in range(5):
            x.add_(2.0)
        done = m.Event()
        done.record(producer)
    consumer.wait_event(done)
    with m.stream(consumer):
        y = x.to(other) * 2
    consumer.synchronize()
    assert y.device == sdk.device(other)
    np.testing.assert_array_equal(_host(y), np.full(1 << 14, 20.0, np.float32))


def test_allocator_does_not_reuse_memory_still_used_by_another_stream(conformance_backend, conformance_device):
    """record_stream: a block freed on one stream while another stream still uses it is not handed out
    until that stream's work is done; once it is, the block is reused."""
    m = conformance_backend.module
    n = 1 << 16
    side = m.Stream(conformance_device)
    with m.device(conformance_device):
        m.synchronize()
        x = sdk.full((n,), 2.0, device=conformance_device)
        side.wait_stream(m.current_stream())
        with m.stream(side):
            y = x
            for _ in range(6):
                y = y * 1.0 + x   # reads x on the side stream
        _runtime.record_stream(x, side)
        del x
        z = sdk.full((n,), 7.0, device=conformance_device)  # on the current stream: must not clobber x early
        side.synchronize()
        np.testing.assert_array_equal(_host(y), np.full(n, 14.0, np.float32))
        np.testing.assert_array_equal(_host(z), np.full(n, 7.0, np.float32))
        # Once the side stream is done, freed memory is reused: allocating the same sizes again does not grow
        # the reserved memory.
        del y, z
        m.synchronize()
        reserved = m.memory_reserved()
        again = [sdk.empty((n,), device=conformance_device) for _ in range(3)]
        assert m.memory_reserved() == reserved, "freed blocks were not reused after the stream finished"
        del again


def test_out_of_memory_raises_OutOfMemoryError(conformance_backend, conformance_device):
    m = conformance_backend.module
    index = _index(conformance_device)
    total = m.get_device_properties(index).total_memory
    assert total > 0
    assert issubclass(m.OutOfMemoryError, MemoryError)
    with pytest.raises(m.OutOfMemoryError, match="Tried to allocate"):
        sdk.empty(2 * total, dtype=sdk.uint8, device=conformance_device)
    m.synchronize(index)
    m.empty_cache()
    m.set_per_process_memory_fraction(0.01, index)
    try:
        with pytest.raises(m.OutOfMemoryError):
            sdk.empty(int(total * 0.05), dtype=sdk.uint8, device=conformance_device)
    finally:
        m.set_per_process_memory_fraction(1.0, index)
    x = sdk.empty(int(total * 0.05), dtype=sdk.uint8, device=conformance_device)  # fine again
    assert x.numel() == int(total * 0.05)


def test_fault_surfaces_at_the_next_synchronisation(conformance_backend, conformance_device):
    inject = conformance_backend.fault_injector()
    if inject is None:
        pytest.skip(f"'{conformance_backend.name}' offers no fault injection (define "
                    f"{conformance_backend.name}.conformance_inject_fault(device_index) to enable this check)")
    m = conformance_backend.module
    index = _index(conformance_device)
    x = sdk.ones(1024, device=conformance_device)
    m.synchronize(index)
    inject(index)
    y = x + 1  # the fault is asynchronous: the launch itself returns
    with pytest.raises(sdk.AcceleratorError):
        m.synchronize(index)
    # The error was read: the device works again.
    z = x + 2
    m.synchronize(index)
    np.testing.assert_array_equal(_host(z), np.full(1024, 3.0, np.float32))
    del y


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "win32", reason="needs os.fork")
def test_fork_child_gets_a_clear_error(conformance_backend, conformance_device):
    name = conformance_backend.name
    x = sdk.ones(16, device=conformance_device)
    conformance_backend.module.synchronize(conformance_device)
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report through the pipe, never return into pytest
        try:
            try:
                (x + 1).cpu()
                result = "no error"
            except RuntimeError as e:
                result = f"RuntimeError: {e}"
            except BaseException as e:  # noqa: BLE001
                result = f"{type(e).__name__}: {e}"
            os.write(write_fd, result.encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd) as f:
        report = f.read()
    os.waitpid(pid, 0)
    assert report.startswith(f"RuntimeError: Cannot re-initialize {name} in forked subprocess"), report
    np.testing.assert_array_equal(_host(x + 1), 2.0)  # the parent is unaffected


@pytest.mark.parametrize("op", ["add", "mul", "mm"])
def test_operators_refuse_tensors_on_two_devices(conformance_backend, conformance_device, op):
    """One operator given tensors on two devices of the backend, or on the backend and the CPU, is a clear
    error (a 0-d CPU tensor is a scalar and is accepted)."""
    fn = getattr(sdk, op)
    shape = (2, 2)
    a = sdk.ones(*shape, device=conformance_device)
    others = [sdk.ones(*shape)]
    if conformance_backend.device_count > 1:
        index = _index(conformance_device)
        other = f"{conformance_backend.name}:{(index + 1) % conformance_backend.device_count}"
        others.append(sdk.ones(*shape, device=other))
    for b in others:
        for x, y in ((a, b), (b, a)):
            with pytest.raises(ValueError, match="Expected all tensors to be on the same device, but found at "
                                                 "least two devices"):
                fn(x, y)
    if op != "mm":
        r = fn(a, sdk.tensor(3.0))
        assert r.device == a.device
        np.testing.assert_array_equal(_host(r), 4.0 if op == "add" else 3.0)
