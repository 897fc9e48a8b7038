"""The generated device module (`accel`, also `backend_sdk.accel`).

The generic checks (every function present with a docstring, device queries, invalid ordinals, device
and stream contexts restored on error, streams, events, memory statistics, rng state, tensor methods)
are the conformance suite's device_module area (backend_sdk/testing/conformance/device_module_checks.py),
run here in-process on accel; the tests below add what is specific to accel on the simulator."""
from __future__ import annotations

import ctypes
import inspect

import device_sim
import numpy as np
import pytest

import accel
import backend_sdk as sdk
from backend_sdk.testing.conformance import device_module_checks as checks
from backend_sdk.testing.conformance.plugin import Backend

BACKEND = Backend("accel", accel, accel.device_count(), sdk.accel)


def _suite_cases() -> list:
    cases = []
    for name, fn in vars(checks).items():
        if not name.startswith("test_") or not callable(fn):
            continue
        params = inspect.signature(fn).parameters
        if "group" in params:
            cases += [pytest.param(name, {"group": g}, id=f"{name}[{g}]") for g in sorted(checks.DEVICE_MODULE_API)]
        elif "conformance_device" in params:
            cases += [pytest.param(name, {"conformance_device": d}, id=f"{name}[{d}]") for d in BACKEND.devices]
        else:
            cases.append(pytest.param(name, {}, id=name))
    return cases


@pytest.mark.parametrize("check, kwargs", _suite_cases())
def test_conformance_device_module_check(check, kwargs):
    getattr(checks, check)(conformance_backend=BACKEND, **kwargs)


def test_devices():
    assert accel.is_available() and accel.device_count() == 2
    assert accel.get_device_name() == accel.get_device_name(1) == "device_sim"
    props = accel.get_device_properties("accel:1")
    assert props.total_memory == 1 << 30 and "device_sim" in repr(props)


def test_wait_stream_orders_work():
    a, b = accel.Stream(0), accel.Stream(0)
    x = sdk.zeros(1 << 14, device="accel")
    sleep = device_sim.lib().device_sim_kernel_sleep
    sleep.argtypes, sleep.restype = [ctypes.c_void_p, ctypes.c_int64], ctypes.c_int
    with accel.stream(a):
        assert sleep(a.native_handle, 50_000) == 0  # 50 ms of work before the fill on stream a
        x.fill_(3.0)
    b.wait_stream(a)
    with accel.stream(b):
        y = x + 1                      # must see the fill, although it was queued on another stream
    b.synchronize()
    np.testing.assert_array_equal(y.cpu().numpy(), 4.0)


def test_memory_stats_move_with_allocations_and_frees():
    accel.synchronize()
    accel.empty_cache()
    accel.reset_peak_memory_stats()
    accel.reset_accumulated_memory_stats()
    before = accel.memory_allocated()
    x = sdk.empty(1 << 20, device="accel")  # 4 MiB
    assert accel.memory_allocated() == before + (4 << 20)
    assert accel.memory_reserved() >= accel.memory_allocated()
    assert accel.memory_stats()["allocation.all.allocated"] >= 1
    del x
    assert accel.memory_allocated() == before
    assert accel.max_memory_allocated() >= before + (4 << 20)
    assert accel.max_memory_reserved() >= 4 << 20
    assert accel.memory_reserved() >= 4 << 20  # cached, not returned
    accel.empty_cache()
    assert accel.memory_reserved() < 4 << 20 or accel.memory_reserved() == accel.memory_stats()["reserved_bytes.all.current"]
    free, total = accel.mem_get_info()
    assert total == 1 << 30 and 0 < free <= total
    assert "memory summary" in accel.memory_summary() and isinstance(accel.memory_snapshot(), list)
    accel.reset_peak_memory_stats()
    assert accel.max_memory_allocated() == accel.memory_allocated()


def test_out_of_memory_and_memory_fraction():
    with pytest.raises(accel.OutOfMemoryError, match="Tried to allocate 2.00 GiB"):
        sdk.empty(1 << 29, device="accel:1")  # 2 GiB on a 1 GiB device
    assert issubclass(accel.OutOfMemoryError, MemoryError)
    accel.set_per_process_memory_fraction(0.01, 1)
    try:
        with pytest.raises(accel.OutOfMemoryError):
            sdk.empty(1 << 24, device="accel:1")  # 64 MiB > 1% of 1 GiB
    finally:
        accel.set_per_process_memory_fraction(1.0, 1)
    with pytest.raises(ValueError, match="invalid fraction"):
        accel.set_per_process_memory_fraction(2.0)
    assert sdk.empty(1 << 24, device="accel:1").numel() == 1 << 24


def test_rng_state_round_trip_and_seeds():
    accel.manual_seed(123)
    assert accel.initial_seed() == 123
    state = accel.get_rng_state()
    a = sdk.rand(16, device="accel")
    accel.set_rng_state(state)
    b = sdk.rand(16, device="accel")
    np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy())
    accel.manual_seed_all(7)
    states = accel.get_rng_state_all()
    assert len(states) == 2
    x0 = sdk.rand(8, device="accel:0")
    x1 = sdk.rand(8, device="accel:1")
    np.testing.assert_array_equal(x0.cpu().numpy(), x1.cpu().numpy())  # same seed, same numbers on every device
    accel.set_rng_state_all(states)
    np.testing.assert_array_equal(sdk.rand(8, device="accel:1").cpu().numpy(), x1.cpu().numpy())
    accel.seed()
    accel.seed_all()
    assert accel.initial_seed() != 7


def test_amp_dtypes_and_module_identity():
    assert accel.get_amp_supported_dtype() == [sdk.float16, sdk.bfloat16]
    assert sdk.accel.Stream is accel.Stream and set(accel.__all__) >= {"Stream", "Event", "memory_allocated"}


def test_stub_is_up_to_date(tmp_path):
    """The .pyi shipped with the accel package is what write_device_module_stub writes today."""
    import pathlib

    out = tmp_path / "stub.pyi"
    sdk.utils.write_device_module_stub(str(out))
    shipped = pathlib.Path(accel.__file__).with_name("__init__.pyi")
    assert shipped.read_text().endswith(out.read_text())
