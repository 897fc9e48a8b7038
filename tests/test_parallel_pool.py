"""The CPU thread pool (Note [Parallel loops], Note [Pool spin], csrc/backend_sdk/ops/Parallel.cpp): loops
back to back (workers still spinning), after a pause (workers asleep: the wake-up path), from several
threads at once (one holds the pool, the others run alone) and with an error in a chunk all give the serial
loop's results. Each check runs in a fresh process with SDK_NUM_THREADS=4, so the pool has workers even on a
machine with fewer cores."""
from __future__ import annotations

import textwrap

import pytest

from _helpers import run_python

_PRELUDE = """
import os, threading, time
import numpy as np
import backend_sdk as sdk
n = 1 << 20  # 32 grains: every loop is split
a_np = np.arange(n, dtype=np.float32) % 97
a = sdk.from_numpy(a_np.copy())
"""


@pytest.fixture(autouse=True)
def four_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SDK_NUM_THREADS", "4")  # the subprocesses inherit it


def _run(body: str) -> None:
    proc = run_python(_PRELUDE + textwrap.dedent(body), timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ok" in proc.stdout, proc.stdout + proc.stderr


def test_back_to_back_and_after_a_pause():
    _run("""
    for i in range(300):  # back to back: the workers find each loop while spinning
        np.testing.assert_array_equal((a * 2 + i).numpy(), a_np * 2 + i)
    for i in range(20):   # a pause longer than the spin: each loop wakes sleeping workers
        time.sleep(0.003)
        np.testing.assert_array_equal((a + i).numpy(), a_np + i)
    print("ok")
    """)


def test_loops_from_several_threads_at_once():
    _run("""
    errors = []
    def worker(k):
        try:
            for i in range(60):
                np.testing.assert_array_equal((a * k + i).numpy(), a_np * k + i)
                if i % 20 == 0:
                    time.sleep(0.002)
        except BaseException as e:
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(1, 6)]
    for t in threads: t.start()
    for t in threads: t.join(120)
    assert not any(t.is_alive() for t in threads), "a parallel loop hung"
    assert not errors, errors
    print("ok")
    """)


def test_an_error_in_a_chunk_reaches_the_caller_and_the_pool_recovers():
    _run("""
    x = sdk.from_numpy(np.ones(n, dtype=np.int64))
    z = x.clone()
    z[n // 2 + 12345] = 0  # one zero divisor, in some worker's chunk
    for _ in range(3):
        try:
            x // z
        except RuntimeError as e:  # PyTorch's type for an integer division by zero
            assert "ZeroDivisionError" in str(e)
        else:
            raise AssertionError("integer division by zero did not raise")
        np.testing.assert_array_equal((a + 1).numpy(), a_np + 1)  # the pool still runs loops
    print("ok")
    """)
