"""Several threads, many streams, random allocations, copies and kernels on the simulator."""
from __future__ import annotations

import gc
import random

import numpy as np
import pytest

import backend_sdk
from backend_sdk import _runtime as rt
import device_sim

from _helpers import SIM_BACKEND as B, run_threads


pytestmark = pytest.mark.usefixtures("sim")  # device_sim attached to privateusethree (tests/conftest.py)


def test_stress_threads_streams_allocations(sim):
    n_dev = rt.device_count(B)
    gc.collect()  # earlier tests' buffers held by exception tracebacks
    baseline = [rt.memory_allocated(f"{B}:{d}") for d in range(n_dev)]
    host_baseline = rt.host_memory_stats(B)["allocated_bytes"]

    def worker(seed: int) -> None:
        rng = random.Random(seed)
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

    run_threads([lambda i=i: worker(i) for i in range(4)])
    for d in range(n_dev):
        rt.synchronize(f"{B}:{d}")
        assert rt.memory_allocated(f"{B}:{d}") == baseline[d]


def test_stress_kernels_memsets_events_and_pinned_memory(sim):
    """Random mixes of work on many streams of both devices from several threads; every result checked."""
    n_dev = rt.device_count(B)
    gc.collect()  # earlier tests' buffers held by exception tracebacks
    baseline = [rt.memory_allocated(f"{B}:{d}") for d in range(n_dev)]
    host_baseline = rt.host_memory_stats(B)["allocated_bytes"]

    def worker(seed: int) -> None:
        rng = random.Random(1000 + seed)
        for it in range(30):
            dev = f"{B}:{rng.randrange(n_dev)}"
            streams = [rt.Stream(dev, priority=rng.choice([0, -1])) for _ in range(3)]
            n = rng.randrange(1, 1 << 14)
            src = rt.pinned_empty(n, backend_sdk.float32, backend=B)
            src.numpy()[:] = np.arange(n, dtype=np.float32) + seed
            a = rt.DeviceBuffer(4 * n, streams[0])
            b = rt.DeviceBuffer(4 * n, streams[0])
            s0, s1, s2 = streams
            if rng.random() < 0.3:
                sim.device_sim_kernel_sleep(s0.native_handle, rng.randrange(0, 500))
            rt.memcpy(B, a.ptr, src.data_ptr(), 4 * n, "h2d", s0)
            del src  # pinned block: not reused before the copy ran
            rt.memset_async(b.ptr, 0, 4 * n, s0)
            rt.wait_stream(s1, s0)
            assert sim.device_sim_kernel_axpb_f32(s1.native_handle, b.ptr, a.ptr, n, 2.0, -1.0) == 0
            a.record_stream(s1)
            a.free()  # still read by s1's kernel
            rt.wait_stream(s2, s1)
            out = rt.pinned_empty(n, backend_sdk.float32, backend=B)
            rt.memcpy(B, out.data_ptr(), b.ptr, 4 * n, "d2h", s2)
            b.record_stream(s2)
            b.free()
            s2.synchronize()
            np.testing.assert_array_equal(out.numpy(), (np.arange(n, dtype=np.float32) + seed) * 2 - 1)

    run_threads([lambda i=i: worker(i) for i in range(4)])
    for d in range(n_dev):
        rt.synchronize(f"{B}:{d}")
        assert rt.memory_allocated(f"{B}:{d}") == baseline[d]
    assert rt.host_memory_stats(B)["allocated_bytes"] == host_baseline
