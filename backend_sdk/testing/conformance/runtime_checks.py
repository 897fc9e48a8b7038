"""Conformance area "runtime": the device runtime semantics a backend must keep (streams, events,
waits, the caching allocator across streams, out-of-memory, asynchronous faults, fork).

Note [Runtime checks run on the device]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A check of stream order, waits or events proves nothing when its work runs through the CPU fallback
(synchronous: every result is ready before the next line) or when the timing happens to hide a
missing wait. So the checks (1) queue only work the backend executes on its device: its native
``add_``/``mul_`` kernels where it has them, else device-to-device ``copy_`` (which every backend
serves natively), and skip saying so when it has neither; and (2) hold a stream with a *gate*: a host
function (``launch_host_func``) that blocks the stream's worker until the check releases it. Work
queued behind the gate is certainly pending, so a wait that does not wait, a synchronize that returns
early or an event that always reports completion is caught on every run, not only when the timing
exposes it. A device that runs host functions inline (a synchronous device) has no pending work: the
gate notices (``held`` is False) and the checks keep only what holds without it (results, query() True
after a synchronisation). A gate also releases itself after a few seconds, so a broken backend fails
instead of hanging. The kernel checker is off during these checks (``_kernel_checker_off``): a checked
kernel reads its allocations' guards back with a synchronous copy (Note [Allocator guard regions]), which
would wait for the gate and complete the very work a check holds pending; the operators area checks the
kernels with it on.
"""
from __future__ import annotations

import os
import sys
import threading
import time

from typing import Any

import numpy as np
import pytest

import backend_sdk as sdk
from backend_sdk import _runtime


@pytest.fixture(autouse=True)
def _kernel_checker_off():
    """Turns the kernel checker off for one runtime check and back as it was (see the module's Note)."""
    from backend_sdk.testing import check_kernels, kernel_checks_enabled

    before = kernel_checks_enabled()
    check_kernels(False)
    try:
        yield
    finally:
        check_kernels(before)


def _index(device: str) -> int:
    return int(device.rsplit(":", 1)[1])


def _host(t: sdk.Tensor) -> np.ndarray:
    return t.cpu().numpy()


_GATE_TIMEOUT = 5.0  # seconds: a gate never held longer (Note [Runtime checks run on the device])


class _Gate:
    """Holds a stream: work queued on it after the gate waits until release() (or the timeout). ``held`` is
    False on a device that ran the host function inside its launch (a synchronous device)."""

    def __init__(self, stream: Any, auto_release_after: float | None = None) -> None:
        self._release = threading.Event()
        self.done = threading.Event()
        self.inline = False
        timer = threading.Timer(_GATE_TIMEOUT if auto_release_after is None else auto_release_after,
                                self._release.set)
        timer.daemon = True
        timer.start()
        launching = threading.get_ident()

        def hold() -> None:
            self.inline = threading.get_ident() == launching
            if not self.inline:  # inline: waiting would only block the launching thread
                self._release.wait(_GATE_TIMEOUT)
            self.done.set()

        try:
            _runtime.launch_host_func(stream, hold)
        except (NotImplementedError, RuntimeError) as e:
            self._release.set()
            pytest.skip(f"the backend cannot launch a host function on a stream ({e}): the ordering checks "
                        "need one to hold a stream")
        self.held = not self.inline

    def release(self) -> None:
        self._release.set()


class _DeviceWork:
    """Work the backend executes on its device (Note [Runtime checks run on the device])."""

    def __init__(self, backend: Any) -> None:
        from . import operator_coverage

        kinds = operator_coverage(backend.name).kinds
        self.native = {op for op, kind in kinds.items() if kind == "native"}
        self.arith = {"aten::add_.Tensor", "aten::mul_.Tensor"} <= self.native
        if "aten::copy_" not in self.native:
            pytest.skip(f"'{backend.name}' serves too few operators natively to check its runtime on the device: "
                        "neither add_/mul_ nor copy_ has a kernel of its own (served by the fallback, the work "
                        "would run synchronously on the CPU)")

    def kernel(self, x: sdk.Tensor) -> sdk.Tensor:
        """A fresh result computed on the device from x."""
        if "aten::add.Tensor" in self.native:
            return x + x
        out = sdk.empty_like(x)
        out.copy_(x)
        return out


def _runs_while_held(stream: Any, gate: _Gate, seconds: float = 1.5) -> bool:
    """True if ``stream``'s queued work completes while ``gate`` (on another stream) still holds the work it
    waits for: polled for ``seconds``, so a wait that does not wait is caught however slowly the device's
    worker runs, not only when it happens to run before the check looks."""
    if not gate.held:
        return False
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if stream.query():
            return True
        time.sleep(0.01)
    return False


def _const(like: sdk.Tensor, value: float) -> sdk.Tensor:
    """A device tensor full of `value` (filled through a host-to-device copy, before any gate)."""
    return sdk.full(tuple(like.shape), float(value), dtype=like.dtype).to(like.device)


def test_stream_context_restores_the_current_stream(conformance_backend, conformance_device):
    m = conformance_backend.module
    before = m.current_stream(conformance_device)
    s = m.Stream(conformance_device)
    with pytest.raises(KeyError):
        with m.stream(s):
            assert m.current_stream(conformance_device) == s
            raise KeyError("boom")
    assert m.current_stream(conformance_device) == before


def test_stream_runs_work_in_order(conformance_backend, conformance_device):
    """Work queued on one stream, behind a gate, runs in the order it was queued."""
    m = conformance_backend.module
    work = _DeviceWork(conformance_backend)
    n = 4096
    x = sdk.zeros(n, device=conformance_device)
    twos = _const(x, 2.0)
    consts = [_const(x, float(i)) for i in range(1, 9)]
    scratch = sdk.zeros(n, device=conformance_device)
    values = [_const(x, float(i)) for i in range(1, 9)]
    m.synchronize(conformance_device)
    s = m.Stream(conformance_device)
    with m.stream(s):
        gate = _Gate(s)
        if work.arith:
            for c in consts:
                x.mul_(twos).add_(c)
        else:
            for v in values:            # x <- v, through scratch: only the last value may remain
                scratch.copy_(v)
                x.copy_(scratch)
        assert not gate.held or not s.query(), (
            "Stream.query() is True while work queued behind a held host function is pending")
        gate.release()
    s.synchronize()
    assert s.query(), "Stream.query() is False after Stream.synchronize()"
    expected = 0.0
    for i in range(1, 9):
        expected = expected * 2 + i
    np.testing.assert_array_equal(_host(x), np.full(n, expected if work.arith else 8.0, np.float32))


def test_stream_synchronize_waits_for_queued_work(conformance_backend, conformance_device):
    """Stream.synchronize() and synchronize() return only once the work queued before them has finished."""
    m = conformance_backend.module
    work = _DeviceWork(conformance_backend)
    x = _const(sdk.empty(1024, device=conformance_device), 3.0)
    m.synchronize(conformance_device)
    s = m.Stream(conformance_device)
    with m.stream(s):
        gate = _Gate(s, auto_release_after=0.3)
        y = work.kernel(x)
    s.synchronize()
    assert gate.done.is_set(), "Stream.synchronize() returned before the stream's queued work finished"
    with m.stream(s):
        gate = _Gate(s, auto_release_after=0.3)
        work.kernel(x)
    m.synchronize(conformance_device)
    assert gate.done.is_set(), "synchronize() (the device) returned before a stream's queued work finished"
    np.testing.assert_array_equal(_host(y), np.full(1024, 6.0 if "aten::add.Tensor" in work.native
                                                    else 3.0, np.float32))


def test_event_reports_pending_work(conformance_backend, conformance_device):
    """An event recorded behind pending work is not complete (query() False) until that work is done;
    Event.synchronize() waits for it."""
    m = conformance_backend.module
    _DeviceWork(conformance_backend)
    s = m.Stream(conformance_device)
    m.synchronize(conformance_device)
    with m.stream(s):
        gate = _Gate(s)
        event = m.Event()
        event.record(s)
        assert not gate.held or not event.query(), (
            "Event.query() reports completion while the work recorded before it is pending")
        gate.release()
    event.synchronize()
    assert gate.done.is_set(), "Event.synchronize() returned before the work recorded before it finished"
    assert event.query(), "Event.query() is False after Event.synchronize()"


def test_events_and_elapsed_time(conformance_backend, conformance_device):
    """elapsed_time() between two timed events measures the work between them (a held stream: >= 0.2 s)."""
    m = conformance_backend.module
    work = _DeviceWork(conformance_backend)
    x = sdk.ones(1 << 14, device=conformance_device)
    with m.device(conformance_device):
        s = m.current_stream()
        start, end = m.Event(enable_timing=True), m.Event(enable_timing=True)
        start.record()
        gate = _Gate(s, auto_release_after=0.25)
        y = work.kernel(x)
        end.record()
        end.synchronize()
        assert gate.done.is_set(), "Event.synchronize() returned before the work recorded before it finished"
        assert start.query() and end.query()
        ms = start.elapsed_time(end)
        assert isinstance(ms, float) and ms >= (200.0 if gate.held else 0.0), (
            f"elapsed_time() is {ms} ms across work that held the stream for 250 ms")
        assert _host(y).shape == (1 << 14,)


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
    """Work queued on stream b after b.wait_stream(a) (or b.wait_event(e)) runs after a's work; before that
    it is pending (b.query() False)."""
    m = conformance_backend.module
    _DeviceWork(conformance_backend)
    n = 1 << 14
    x = sdk.zeros(n, device=conformance_device)
    source, zeros = _const(x, 25.0), _const(x, 0.0)
    y = sdk.zeros(n, device=conformance_device)
    m.synchronize(conformance_device)
    a, b = m.Stream(conformance_device), m.Stream(conformance_device)
    for wait in ("wait_stream", "wait_event"):
        x.copy_(zeros)
        m.synchronize(conformance_device)
        with m.stream(a):
            gate = _Gate(a)
            x.copy_(source)            # the producer's write, on a, behind the gate
        if wait == "wait_stream":
            b.wait_stream(a)
        else:
            done = m.Event()
            done.record(a)
            b.wait_event(done)
        with m.stream(b):
            y.copy_(x)                 # must see a's write
        ran = _runs_while_held(b, gate)
        gate.release()
        b.synchronize()
        assert not ran, f"Stream.{wait}() did not make the waiting stream wait: its work ran while the other " \
                        "stream was still held"
        np.testing.assert_array_equal(_host(y), np.full(n, 25.0, np.float32),
                                      err_msg=f"after Stream.{wait}(), the waiting stream read stale data")


def test_event_wait_orders_work_across_devices(conformance_backend, conformance_device):
    """A stream of another device that waits on an event of this device's stream runs after that stream's
    work."""
    m = conformance_backend.module
    if conformance_backend.device_count < 2:
        pytest.skip(f"'{conformance_backend.name}' has one device: nothing to wait for across devices")
    _DeviceWork(conformance_backend)
    index = _index(conformance_device)
    other = f"{conformance_backend.name}:{(index + 1) % conformance_backend.device_count}"
    n = 1 << 14
    x = sdk.zeros(n, device=conformance_device)
    source = _const(x, 20.0)
    marker, ones = sdk.zeros(n, device=other), _const(sdk.empty(n, device=other), 1.0)
    m.synchronize(conformance_device)
    m.synchronize(other)
    producer, consumer = m.Stream(conformance_device), m.Stream(other)
    with m.stream(producer):
        gate = _Gate(producer)
        x.copy_(source)
        done = m.Event()
        done.record(producer)
    consumer.wait_event(done)
    with m.stream(consumer):
        marker.copy_(ones)  # queued behind the wait
        ran = _runs_while_held(consumer, gate)
    gate.release()
    consumer.synchronize()
    assert not ran, ("Stream.wait_event() on another device's event did not make the stream wait: "
                                 "its work ran while the recording stream was still held")
    with m.stream(consumer):
        y = x.to(other)
    consumer.synchronize()
    assert y.device == sdk.device(other)
    np.testing.assert_array_equal(_host(y), np.full(n, 20.0, np.float32))


def test_allocator_does_not_reuse_memory_still_used_by_another_stream(conformance_backend, conformance_device):
    """record_stream: a block freed on one stream while another stream still uses it is not handed out
    until that stream's work is done; once it is, the block is reused."""
    m = conformance_backend.module
    _DeviceWork(conformance_backend)
    n = 1 << 16
    side = m.Stream(conformance_device)
    with m.device(conformance_device):
        m.synchronize()
        x = sdk.full((n,), 2.0, device=conformance_device)
        sevens = sdk.full((n,), 7.0, device=conformance_device)
        y = sdk.empty((n,), device=conformance_device)
        side.wait_stream(m.current_stream())
        with m.stream(side):
            gate = _Gate(side)
            y.copy_(x)              # reads x on the side stream, behind the gate
        _runtime.record_stream(x, side)
        del x
        z = sdk.empty((n,), device=conformance_device)  # must not be x's block: the side stream still reads it
        z.copy_(sevens)             # on the current stream, while the side stream is held
        m.current_stream().synchronize()
        gate.release()
        side.synchronize()
        np.testing.assert_array_equal(_host(y), np.full(n, 2.0, np.float32),
                                      err_msg="a block still read by another stream (record_stream) was reused")
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
    """An injected fault makes the next kernel the device runs fail; the error surfaces at the next
    synchronisation (AcceleratorError) and the device works again afterwards. The check launches a kernel
    the backend runs on its device (Note [Runtime checks run on the device])."""
    inject = conformance_backend.fault_injector()
    if inject is None:
        pytest.skip(f"'{conformance_backend.name}' offers no fault injection (define "
                    f"{conformance_backend.name}.conformance_inject_fault(device_index) to enable this check)")
    m = conformance_backend.module
    work = _DeviceWork(conformance_backend)
    index = _index(conformance_device)
    x = sdk.ones(1024, device=conformance_device)
    m.synchronize(index)
    inject(index)
    y = work.kernel(x)  # the fault is asynchronous: the launch itself returns
    try:
        m.synchronize(index)
    except sdk.AcceleratorError:
        pass
    else:
        pytest.fail("an injected fault did not surface at the next synchronize() as AcceleratorError: the "
                    "fault hook did nothing, or the device ran no kernel")
    # The error was read: the device works again.
    z = work.kernel(x)
    m.synchronize(index)
    assert _host(z).shape == (1024,)
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
