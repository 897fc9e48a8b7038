"""The accel sample backend: per-operator launch overhead and import time.

    python benchmarks/bench_accel.py [--quick]

Targets (issue: the accel backend): `a + b` on accel with 1-element tensors, launch only
(no synchronisation), at most 2 us, listed beside numpy and PyTorch CPU; `import accel` in a
fresh process at most 0.2x the time of `import torch`. Everything is measured in this run;
nothing is asserted.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
import timeit

import numpy as np


def per_call_us(stmt, number: int, repeat: int = 7) -> float:
    return min(timeit.repeat(stmt, number=number, repeat=repeat)) / number * 1e6


def import_seconds(module: str, runs: int) -> float:
    """Median wall time of `import module` in a fresh interpreter (interpreter start-up subtracted)."""
    def run(code: str) -> float:
        out = subprocess.run([sys.executable, "-c", "import time; t = time.perf_counter(); " + code +
                              "; print(time.perf_counter() - t)"], capture_output=True, text=True, check=True)
        return float(out.stdout.strip().splitlines()[-1])
    return statistics.median(run(f"import {module}") for _ in range(runs))


def launch_cost(stmt, number: int, rounds: int = 5) -> tuple[float, float, int]:
    """Best-of-rounds wall us/call, the calling thread's CPU us/call (time.thread_time) in that round,
    and its involuntary context switches per `number` calls (getrusage RUSAGE_THREAD)."""
    best = (float("inf"), 0.0, 0)
    for _ in range(rounds):
        ru0, c0, w0 = resource.getrusage(resource.RUSAGE_THREAD), time.thread_time(), time.perf_counter()
        for _ in range(number):
            stmt()
        w1, c1, ru1 = time.perf_counter(), time.thread_time(), resource.getrusage(resource.RUSAGE_THREAD)
        wall = (w1 - w0) / number * 1e6
        if wall < best[0]:
            best = (wall, (c1 - c0) / number * 1e6, ru1.ru_nivcsw - ru0.ru_nivcsw)
    return best


def launch_table(number: int) -> None:
    """The issue-18 row: accel a + b launch vs torch CPU a + b, wall and thread CPU time, with the
    1-minute load beside it (run with --busy N to add N spinning processes)."""
    import accel
    import backend_sdk as sdk

    a, b = sdk.ones(1, device="accel"), sdk.ones(1, device="accel")
    rows = [("accel  a + b (launch only)", lambda: a + b)]
    try:
        import torch

        ta, tb = torch.ones(1), torch.ones(1)
        rows.append(("torch  a + b (CPU)", lambda: ta + tb))
    except ImportError:
        pass
    print(f"1-min load {os.getloadavg()[0]:.2f}; cpus {os.cpu_count()}; {number} calls per round")
    print(f"{'row':<30}{'wall us':>9}{'cpu us':>9}{'invol. cs':>11}")
    results = []
    for name, stmt in rows:
        r = launch_cost(stmt, number)
        accel.synchronize()
        results.append(r)
        print(f"{name:<30}{r[0]:>9.3f}{r[1]:>9.3f}{r[2]:>11d}")
    if len(results) == 2:
        print(f"accel / torch: wall {results[0][0] / results[1][0]:.2f}, cpu {results[0][1] / results[1][1]:.2f} "
              "(target <= 1.0)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--launch-only", action="store_true", help="only the launch table (issue 18)")
    parser.add_argument("--busy", type=int, default=0, help="spinning processes to run beside the launch table")
    args = parser.parse_args()
    number = 2_000 if args.quick else 20_000
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    try:
        launch_table(number)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    if args.launch_only:
        return

    import accel
    import backend_sdk as sdk

    a, b = sdk.ones(1, device="accel"), sdk.ones(1, device="accel")
    na, nb = np.ones(1, dtype=np.float32), np.ones(1, dtype=np.float32)
    rows = [("numpy  na + nb", lambda: na + nb), ("accel  a + b (launch only)", lambda: a + b)]
    try:
        import torch

        ta, tb = torch.ones(1), torch.ones(1)
        rows.append(("torch  a + b (CPU)", lambda: ta + tb))
    except ImportError:
        torch = None
    results = []
    for name, stmt in rows:
        us = per_call_us(stmt, number)
        accel.synchronize()  # drain the queued launches between rows
        results.append((name, us))
    print(f"{'1-element a + b':<32} {'us/call':>9}")
    for name, us in results:
        print(f"{name:<32} {us:>9.3f}")
    launch = results[1][1]
    print(f"target: accel launch <= 2 us -> {'met' if launch <= 2 else 'MISSED'} ({launch:.3f} us); "
          f"x numpy {launch / results[0][1]:.2f}" + (f", x torch {launch / results[2][1]:.2f}" if torch else ""))

    runs = 3 if args.quick else 7
    t_accel = import_seconds("accel", runs)
    line = f"import accel (fresh process, median of {runs}): {t_accel * 1e3:.0f} ms"
    if torch is not None:
        t_torch = import_seconds("torch", runs)
        ratio = t_accel / t_torch
        line += (f"; import torch: {t_torch * 1e3:.0f} ms; ratio {ratio:.2f} "
                 f"(target <= 0.2: {'met' if ratio <= 0.2 else 'MISSED'})")
    print(line)


if __name__ == "__main__":
    main()
