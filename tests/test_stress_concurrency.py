"""Concurrency stress on accel (issue 12): threads on several streams of both devices, events,
allocation churn, and libraries registered and closed while other threads call operators.

tests/test_runtime_stress.py drives the raw runtime (DeviceBuffer, memcpy, simulator kernels) on
a backend of its own; these tests drive the same machinery through tensors, operators, the
dispatcher and Python kernels, as user code does. Each test runs for a fixed wall-clock budget
(a few seconds, ~20 s for the file) rather than a fixed count, so a slow machine or a sanitizer
build does fewer iterations instead of taking longer. Every result is checked against numpy, and
the caching allocator's count of live bytes is back at its starting value at the end.
"""
from __future__ import annotations

import gc
import itertools
import random
import time

import numpy as np
import pytest

import accel
import backend_sdk as sdk

from _helpers import run_threads

_DEVICES = [f"accel:{d}" for d in range(accel.device_count())]
_ns_ids = itertools.count()


def _allocated() -> list[int]:
    for d in _DEVICES:
        accel.synchronize(d)
    gc.collect()  # tensors held by earlier tests' exception tracebacks
    return [accel.memory_allocated(d) for d in _DEVICES]


@pytest.fixture
def allocation_balance():
    """Asserts that the test leaves every device's memory_allocated() where it found it."""
    before = _allocated()
    yield
    assert _allocated() == before


def test_streams_events_and_allocations_on_both_devices(allocation_balance):
    """Threads queue kernels on side streams of accel:0 and accel:1, order them with events and
    wait_stream, copy across devices, and free tensors while other streams still run."""
    budget = 5.0
    stop = time.monotonic() + budget

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        it = 0
        while time.monotonic() < stop or it < 3:
            it += 1
            dev = rng.choice(_DEVICES)
            other_dev = rng.choice(_DEVICES)
            n = rng.randrange(1, 1 << 12)
            a = (np.arange(n, dtype=np.float32) % 97) * (seed + 1)
            b = rng.uniform(-2, 2)
            s1 = accel.Stream(dev, priority=rng.choice([0, -1]))
            s2 = accel.Stream(dev)
            with accel.stream(s1):
                x = sdk.from_numpy(a).to(dev)
                y = x * b + it
                done = s1.record_event()
                scratch = sdk.empty(rng.randrange(1, 1 << 14), device=dev)  # allocation churn
                del scratch
            with accel.stream(s2):
                done.wait(s2)  # s2's work starts after y is written
                z = (y * y).sum()
                w = y.to(other_dev)  # cross-device copy from s2
            s2.wait_stream(s1)
            expected_y = a * np.float32(b) + np.float32(it)
            with accel.stream(s2):
                np.testing.assert_allclose(w.cpu().numpy(), expected_y, rtol=1e-6)
                np.testing.assert_allclose(z.item(), float((expected_y.astype(np.float64) ** 2).sum()), rtol=1e-4)
            if rng.random() < 0.3:
                e = accel.Event(enable_timing=True)
                e.record(s1)
                e.synchronize()
                assert e.query()
            del x, y, z, w

    run_threads([lambda s=s: worker(s) for s in range(4)], budget)


def test_python_kernels_and_aten_ops_from_many_threads(allocation_balance):
    """Python kernels (cpu and accel) of one library, called with aten operators from threads."""
    budget = 4.0
    stop = time.monotonic() + budget
    ns = f"stress_stable_{next(_ns_ids)}"
    with sdk.library.Library(ns, "DEF") as lib:
        lib.define("scale_shift(Tensor x, float a, float b) -> Tensor")

        def kernel(x: sdk.Tensor, a: float, b: float) -> sdk.Tensor:
            return x * a + b

        lib.impl("scale_shift", kernel, "CPU")
        lib.impl("scale_shift", kernel, "PrivateUse1")
        op = getattr(sdk.ops, ns).scale_shift.default

        def worker(seed: int) -> None:
            rng = random.Random(100 + seed)
            it = 0
            while time.monotonic() < stop or it < 3:
                it += 1
                dev = rng.choice(["cpu"] + _DEVICES)
                a = np.linspace(-3, 3, rng.randrange(1, 300), dtype=np.float32)
                x = sdk.from_numpy(a).to(dev)
                r = op(x, 2.0, -1.0).relu().cpu().numpy()
                np.testing.assert_allclose(r, np.maximum(a * 2 - 1, 0), rtol=1e-6)

        run_threads([lambda s=s: worker(s) for s in range(4)], budget)


def _churn_and_call(call_churned: bool, budget: float) -> None:
    """Two threads define, implement and close libraries in a loop while three call operators.

    The callers call a stable Python-kernel operator and aten operators and, with call_churned,
    the churned operators themselves. A churned operator returns x + k for its namespace's k
    whichever incarnation runs; between a close and the next define, calling it raises an error
    that names it, or its namespace is not there (AttributeError from the lookup)."""
    stop = time.monotonic() + budget
    slots = [f"stress_churn_{next(_ns_ids)}" for _ in range(4)]
    churn_count = [0]
    closed_under_call = [0]  # calls whose library was closed while their kernel ran
    generation = {ns: 0 for ns in slots}
    ns_stable = f"stress_stable_{next(_ns_ids)}"
    stable = sdk.library.Library(ns_stable, "DEF")
    stable.define("twice(Tensor x) -> Tensor")
    stable.impl("twice", lambda x: x + x, "CPU")
    stable.impl("twice", lambda x: x + x, "PrivateUse1")
    twice = getattr(sdk.ops, ns_stable).twice.default

    def churner(seed: int) -> None:
        rng = random.Random(200 + seed)
        it = 0
        while time.monotonic() < stop or it < 3:
            it += 1
            ns = slots[rng.randrange(seed, len(slots), 2)]  # churner 0 owns the even slots, 1 the odd
            k = float(slots.index(ns) + 1)
            lib = sdk.library.Library(ns, "DEF")
            try:
                lib.define("f(Tensor x) -> Tensor")
                lib.define(f"g{rng.randrange(1000)}(Tensor x, int n) -> Tensor")

                def kernel(x: sdk.Tensor, k: float = k, ns: str = ns) -> sdk.Tensor:
                    seen = generation[ns]
                    time.sleep(random.random() * 3e-3)  # long enough for a close() to happen meanwhile
                    if generation[ns] != seen:
                        closed_under_call[0] += 1
                    return x + k

                lib.impl("f", kernel, "CPU")
                lib.impl("f", kernel, "PrivateUse1")
                time.sleep(rng.random() * 2e-3)
            finally:
                lib.close()
                generation[ns] += 1
            churn_count[0] += 1

    def caller(seed: int) -> None:
        rng = random.Random(300 + seed)
        it = 0
        while time.monotonic() < stop or it < 3:
            it += 1
            dev = rng.choice(["cpu"] + _DEVICES)
            a = np.arange(rng.randrange(1, 64), dtype=np.float32)
            x = sdk.from_numpy(a).to(dev)
            np.testing.assert_array_equal(twice(x).cpu().numpy(), a * 2)
            np.testing.assert_array_equal((x - 1).cpu().numpy(), a - 1)
            if not call_churned:
                continue
            i = rng.randrange(len(slots))
            try:
                r = getattr(sdk.ops, slots[i]).f(x)
            except AttributeError as e:  # the namespace or the operator is not defined right now
                assert slots[i] in str(e) or "'f'" in str(e), e
                continue
            except (RuntimeError, NotImplementedError, ValueError) as e:  # closed under the call
                assert f"{slots[i]}::f" in str(e), e
                continue
            np.testing.assert_array_equal(r.cpu().numpy(), a + (i + 1))

    try:
        run_threads([lambda: churner(0), lambda: churner(1)] + [lambda s=s: caller(s) for s in range(3)], budget)
    finally:
        stable.close()
    assert churn_count[0] >= 4
    if call_churned:
        assert closed_under_call[0] > 0, "no call was in flight when its library closed: nothing was tested"


def test_library_churn_while_other_threads_call_stable_operators(allocation_balance):
    _churn_and_call(call_churned=False, budget=4.0)


def test_library_churn_while_other_threads_call_the_churned_operators(allocation_balance):
    """Calls in flight while their library is closed (issue 12 finding 1: the dispatcher read the
    freed schema when the Python kernel returned)."""
    _churn_and_call(call_churned=True, budget=5.0)
