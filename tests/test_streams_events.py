"""The generic backend_sdk.Stream / backend_sdk.Event (torch.Stream / torch.Event) and the device module's
Stream, Event, StreamContext, stream and device_of built on them."""
from __future__ import annotations

import pytest

import accel
import backend_sdk as sdk
from backend_sdk import accelerator as acc


@pytest.fixture(autouse=True)
def _restore():
    yield
    acc.set_device_index(0)
    for i in range(2):
        sdk._runtime.set_stream(sdk._runtime.default_stream(f"accel:{i}"))


def test_stream_construction_forms():
    s = sdk.Stream(device="accel:1")
    assert s.device == sdk.device("accel:1") and s.device_index == 1
    assert sdk.Stream(1).device.type == "accel" and sdk.Stream(device="accel").device_index == 0
    same = sdk.Stream(stream_id=s.stream_id, device_index=s.device_index, device_type=s.device_type)
    assert same == s and hash(same) == hash(s) and same is not s
    assert sdk.Stream("accel:0") != sdk.Stream("accel:0")  # round-robin pool
    assert sdk.Stream("accel", priority=-1).priority == -1
    with pytest.raises(ValueError, match="stream_id"):
        sdk.Stream(stream_id=s.stream_id, device_index=0, device_type=s.device_type)
    with pytest.raises(TypeError, match="priority"):
        sdk.Stream("accel", priority="high")
    assert "backend_sdk.Stream device_type=accel, device_index=1" in repr(s)
    assert s != None  # noqa: E711 (PyTorch compares unequal to None)


def test_with_stream_switches_device_and_restores_on_error():
    s1 = sdk.Stream("accel:1")
    before = acc.current_stream(1)
    with pytest.raises(ZeroDivisionError):
        with s1:
            assert acc.current_device_index() == 1 and acc.current_stream() == s1
            x = sdk.ones(8, device="accel")
            assert x.device == sdk.device("accel:1")
            with s1:  # re-entrant
                assert acc.current_stream() == s1
            assert acc.current_stream() == s1
            1 / 0
    assert acc.current_device_index() == 0 and acc.current_stream(1) == before


def test_wait_stream_and_record_event_across_devices():
    s0, s1 = sdk.Stream("accel:0"), sdk.Stream("accel:1")
    s1.wait_stream(s0)
    e = s0.record_event()
    assert isinstance(e, sdk.Event) and e.device == sdk.device("accel:0") and e.event_id != 0
    s1.wait_event(e)  # an event of accel:0 waited on by a stream of accel:1
    e.wait(s1)
    s1.synchronize()
    assert e.query() and s1.query()
    assert not s0.is_capturing()


def test_event_before_and_after_record():
    e = sdk.Event(device="accel:1")
    assert e.device.type == "accel" and e.device.index is None and e.event_id == 0 and e.query()
    e.synchronize()  # never recorded: returns
    s = sdk.Stream("accel:1")
    e.record(s)
    assert e.device == sdk.device("accel:1") and e.event_id != 0
    e.synchronize()
    assert e.query()
    e.record(s)  # reuse
    s.synchronize()
    e2 = s.record_event()
    assert e2.event_id not in (0, e.event_id)
    with pytest.raises(ValueError, match="belongs to accel:1"):
        e.record(sdk.Stream("accel:0"))


def test_event_record_defaults_to_current_stream_and_times():
    a, b = sdk.Event(enable_timing=True), sdk.Event(enable_timing=True)
    x = sdk.randn(1000, device="accel")
    a.record()
    (x * x).sum()
    b.record()
    b.synchronize()
    assert a.elapsed_time(b) > 0
    plain = sdk.Event()
    plain.record()
    with pytest.raises(ValueError, match=r"Both events must be created with argument 'enable_timing=True'\."):
        plain.elapsed_time(b)
    with pytest.raises(ValueError, match="Both events must be recorded"):
        sdk.Event(enable_timing=True).elapsed_time(b)


def test_event_errors_name_backend():
    with pytest.raises(NotImplementedError, match="'accel' backend does not support interprocess"):
        sdk.Event(interprocess=True)
    e = sdk.Event()
    with pytest.raises(NotImplementedError, match="accel"):
        e.ipc_handle()
    with pytest.raises(NotImplementedError, match="accel"):
        sdk.Event.from_ipc_handle("accel:0", b"")
    with pytest.raises(TypeError, match="Stream"):
        e.record(3)


def test_multiple_streams_wait_same_event_results_match():
    x, y = sdk.randn(30, 30, device="accel"), sdk.randn(30, 30, device="accel")
    s1, s2, s3 = (sdk.Stream("accel:0") for _ in range(3))
    # x and y are written on the current stream: s1 must wait for it, or its event says nothing about them
    s1.wait_stream(acc.current_stream())
    e = s1.record_event()
    s2.wait_event(e)
    s3.wait_event(e)
    with s2:
        z2 = sdk.matmul(x, y)
    with s3:
        z3 = sdk.matmul(x, y)
    acc.synchronize()
    assert sdk.sum(z2).item() == sdk.sum(z3).item()


def test_device_module_types_are_the_generic_ones():
    assert issubclass(accel.Stream, sdk.Stream) and issubclass(accel.Event, sdk.Event)
    cur, dflt = accel.current_stream(), accel.default_stream(1)
    assert type(cur) is accel.Stream and type(dflt) is accel.Stream
    assert hasattr(cur, "wait_stream") and dflt.device == sdk.device("accel:1")
    e = accel.Event(device="accel:1", enable_timing=True)
    assert e.device.index is None and isinstance(e, sdk.Event)
    e.record(accel.Stream(1))
    assert e.device.index == 1
    s = accel.Stream(stream_id=dflt.stream_id, device_index=1, device_type=dflt.device_type)
    assert s == dflt


def test_device_module_stream_context_and_device_of():
    s1 = accel.Stream(1)
    with accel.stream(s1) as got:
        assert got is s1 and accel.current_device() == 1 and accel.current_stream() == s1
    assert accel.current_device() == 0 and accel.current_stream(1) == accel.default_stream(1)
    with accel.StreamContext(None):
        assert accel.current_device() == 0
    accel.set_stream(s1)
    assert accel.current_device() == 1 and accel.current_stream() == s1
    accel.set_stream(accel.default_stream(1))
    t = sdk.ones(2, device="accel:1")
    with accel.device_of(t):
        assert accel.current_device() == 1
    with accel.device_of(sdk.ones(2)):  # a CPU tensor: no change
        assert accel.current_device() == 1
    accel.set_device(0)
    with pytest.raises(TypeError, match="expected a Stream"):
        accel.stream(object())
