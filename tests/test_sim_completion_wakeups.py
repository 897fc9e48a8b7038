"""device_sim wakes a thread waiting for completion only when its wait may have ended (Note [Completion
wake-ups], device_sim/csrc/SimDevice.cpp).

Before, every finished kernel notified every waiter: a synchronize over 40 queued kernels woke the host
about 40 times, each a voluntary context switch of the waiting thread. The count is read with
``getrusage(RUSAGE_THREAD)`` around the wait, so it is the calling thread's own blocking waits (Linux)."""
from __future__ import annotations

import resource
import sys
import threading

import numpy as np
import pytest

import accel
import backend_sdk as sdk

from _helpers import run_threads

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RUSAGE_THREAD is Linux's")

KERNELS = 40
# Each kernel takes ~0.2 ms (exp of 400k floats), longer than a waiter's spin, so the waiter sleeps; the
# old code woke it once per kernel (33-40 in a run), the new one once or twice.
MAX_BLOCKING_WAITS = 10


def _blocking_waits_of(wait) -> int:
    """Voluntary context switches of this thread while ``wait`` runs, fewest of three rounds."""
    x = sdk.ones(400_000, device="accel")
    counts = []
    for _ in range(3):
        accel.synchronize()
        results = [x.exp() for _ in range(KERNELS)]
        before = resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw
        wait()
        counts.append(resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw - before)
        np.testing.assert_allclose(results[-1].cpu().numpy()[:4], np.e, rtol=1e-6)
    return min(counts)


def test_device_synchronize_sleeps_through_the_queue():
    assert _blocking_waits_of(accel.synchronize) < MAX_BLOCKING_WAITS


def test_stream_synchronize_sleeps_through_the_queue():
    stream = accel.current_stream()
    assert _blocking_waits_of(stream.synchronize) < MAX_BLOCKING_WAITS


def test_event_synchronize_sleeps_through_the_queue():
    def wait() -> None:
        event = accel.Event()
        event.record()
        event.synchronize()

    assert _blocking_waits_of(wait) < MAX_BLOCKING_WAITS


def test_waiters_of_two_streams_each_wake_for_their_own_work():
    """A waiter registered for one stream still wakes when another stream's waiter is woken first."""
    x = sdk.ones(200_000, device="accel")
    accel.synchronize()  # x is written on the default stream and read on two others
    streams = [accel.Stream(), accel.Stream()]
    out: list = [None, None]

    def worker(i: int) -> None:
        with accel.stream(streams[i]):
            out[i] = [(x * (i + 2)).exp() for _ in range(10 * (i + 1))][-1]
            streams[i].synchronize()

    run_threads([lambda i=i: worker(i) for i in range(2)], budget=30)  # a waiter never woken fails as a hang
    for i in range(2):
        np.testing.assert_allclose(out[i].cpu().numpy()[:3], np.exp(i + 2.0), rtol=1e-6)


def test_many_waiters_of_one_stream_with_different_targets_all_return():
    """Targets registered by several waiters of one stream: the smallest is woken first, the others register
    again (SimStream::wake_at) and are woken when theirs is reached."""
    x = sdk.ones(100_000, device="accel")
    accel.synchronize()  # x is written on the default stream and read on another
    stream = accel.Stream()
    done: list[int] = []
    lock = threading.Lock()

    def waiter(i: int) -> None:
        with accel.stream(stream):
            for _ in range(5):
                x.exp()
            stream.synchronize()
        with lock:
            done.append(i)

    run_threads([lambda i=i: waiter(i) for i in range(6)], budget=30)
    assert sorted(done) == list(range(6))
