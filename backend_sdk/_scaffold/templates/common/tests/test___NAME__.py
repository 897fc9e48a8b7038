"""__NAME__'s own tests: the device module and the operators it implements, against the CPU."""
from __future__ import annotations

import numpy as np
import pytest

import backend_sdk as sdk
import __NAME__

RNG = np.random.default_rng(0)


def on_both(array: np.ndarray) -> tuple[sdk.Tensor, sdk.Tensor]:
    cpu = sdk.from_numpy(array)
    return cpu, cpu.to("__NAME__")


def assert_same(device_result: sdk.Tensor, cpu_result: sdk.Tensor) -> None:
    assert device_result.device.type == "__NAME__"
    assert device_result.dtype == cpu_result.dtype and tuple(device_result.shape) == tuple(cpu_result.shape)
    np.testing.assert_allclose(device_result.cpu().numpy(), cpu_result.numpy(), rtol=1e-5, atol=1e-6)


def test_device_module():
    assert __NAME__.is_available() and __NAME__.device_count() >= 1
    assert sdk.__NAME__ is not None and __NAME__.current_device() == 0
    x = sdk.ones(1024, device="__NAME__")
    assert x.is___NAME__ and x.device == sdk.device("__NAME__:0")
    assert __NAME__.memory_allocated() >= 4096
    stream = __NAME__.Stream()
    start, end = __NAME__.Event(enable_timing=True), __NAME__.Event(enable_timing=True)
    with __NAME__.stream(stream):
        start.record()
        y = (x + x).relu()
        end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 0
    __NAME__.synchronize()
    assert y.cpu().tolist() == [2.0] * 1024
    assert sdk.zeros(2).__NAME__().device.type == "__NAME__"


CASES = {
    "contiguous float32": lambda: (RNG.standard_normal((4, 5)).astype(np.float32),
                                   RNG.standard_normal((4, 5)).astype(np.float32)),
    "broadcast": lambda: (RNG.standard_normal((4, 5)).astype(np.float32),
                          RNG.standard_normal((5,)).astype(np.float32)),
    "int64": lambda: (RNG.integers(-9, 9, (3, 4)), RNG.integers(-9, 9, (3, 4))),
    "0-d": lambda: (np.array(1.5, dtype=np.float32), np.array(-2.0, dtype=np.float32)),
    "empty": lambda: (np.zeros((0, 3), dtype=np.float32), np.zeros((0, 3), dtype=np.float32)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_operators_match_cpu(case):
    a, b = CASES[case]()
    a_cpu, a_dev = on_both(a)
    b_cpu, b_dev = on_both(b)
    assert_same(a_dev + b_dev, a_cpu + b_cpu)
    assert_same(sdk.add(a_dev, b_dev, alpha=2), sdk.add(a_cpu, b_cpu, alpha=2))
    assert_same(a_dev * b_dev, a_cpu * b_cpu)
    assert_same(a_dev.relu(), a_cpu.relu())
    assert_same(a_dev.sum(), a_cpu.sum())


def test_non_contiguous_inputs():
    a_cpu, a_dev = on_both(RNG.standard_normal((6, 4)).astype(np.float32))
    assert_same(a_dev.t() + a_dev.t(), a_cpu.t() + a_cpu.t())
    assert_same(a_dev[::2] * a_dev[1::2], a_cpu[::2] * a_cpu[1::2])
    assert_same(a_dev.t().relu(), a_cpu.t().relu())
    assert_same(a_dev[:, 1].sum(), a_cpu[:, 1].sum())


def test_errors_are_the_cpus():
    a = sdk.ones(2, 3, device="__NAME__")
    with pytest.raises(ValueError, match="must match the size"):
        a + sdk.ones(4, device="__NAME__")


def test_collectives_extension_when_the_device_offers_it():
    """A device with the "sdk.collectives" extension gets the process-group backend "__NAME__:__NAME__ccl"."""
    from backend_sdk.distributed import Backend, register_device_backends

    backends = register_device_backends()  # {device type: backend} for the devices offering "sdk.collectives"
    if "__NAME__" not in backends:
        pytest.skip("no collectives on this device: backend_sdk.distributed stages its tensors through host memory")
    assert backends["__NAME__"] == "__NAME__ccl"
    assert Backend.default_device_backend_map["__NAME__"] == "__NAME__ccl"
