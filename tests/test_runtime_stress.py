"""Several threads, many streams, random allocations, copies and kernels on the simulator."""
from __future__ import annotations

import random
import threading

import numpy as np
import pytest

from backend_sdk import _runtime as rt
import device_sim

B = "privateusethree"


@pytest.fixture(scope="module", autouse=True)
def sim():
    rt.attach_device_library(B, device_sim.library_path())
    return device_sim.lib()


def test_stress_threads_streams_allocations(sim):
    n_dev = rt.device_count(B)
    errors: list[BaseException] = []

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for it in range(40):
                dev = f"{B}:{rng.randrange(n_dev)}"
                s = rt.Stream(dev, priority=rng.choice([0, -1]))
                other = rt.Stream(dev)
                n = rng.randrange(1, 1 << 15)
                x = np.arange(n, dtype=np.float32) * (seed + 1)
                out = np.empty(n, dtype=np.float32)
                with rt.stream(s):
                    a = rt.DeviceBuffer(x.nbytes, s)
                    b = rt.DeviceBuffer(x.nbytes, s)
                    rt.memcpy(B, a.ptr, x.ctypes.data, x.nbytes, "h2d", s)
                    assert sim.device_sim_kernel_axpb_f32(s.native_handle, b.ptr, a.ptr, n, 3.0, float(it)) == 0
                    rt.wait_stream(other, s)
                    rt.memcpy(B, out.ctypes.data, b.ptr, x.nbytes, "d2h", other)
                    b.record_stream(other)
                    a.free()
                    b.free()
                    other.synchronize()
                np.testing.assert_array_equal(out, x * 3 + it)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for d in range(n_dev):
        rt.synchronize(f"{B}:{d}")
        assert rt.memory_allocated(f"{B}:{d}") == 0
