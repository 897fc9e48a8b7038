"""The profiler's cost (docs/profiler.md): the C++ dispatch loop with no profiler and while one records, and a
small Python op with and without a profiler, against PyTorch's profiler on the same op when torch is installed.

    PYTHONPATH=.:samples/accel_sim python benchmarks/bench_profiler.py [--quick]
"""
from __future__ import annotations

import argparse
import os
import time

import backend_sdk as sdk
from backend_sdk import _C
from backend_sdk.profiler import ProfilerActivity, profile


def _per_call_us(fn, n: int) -> float:
    fn()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    iters = 200_000 if args.quick else 2_000_000
    print(f"load average: {os.getloadavg()}")
    off = min(_C._benchmark_dispatch(iters) for _ in range(3))
    with profile(activities=[ProfilerActivity.CPU]):
        on = min(_C._benchmark_dispatch(20_000) for _ in range(3))
    print(f"C++ dispatch of an empty kernel: {off:.2f} ns/call without a profiler, {on:.1f} ns/call while one "
          f"records ({on / off:.1f}x)")
    n = 2_000 if args.quick else 20_000
    a = sdk.ones(4)
    base = _per_call_us(lambda: a + a, n)
    with profile(activities=[ProfilerActivity.CPU]):
        prof_us = _per_call_us(lambda: a + a, n)
    print(f"backend_sdk a + a: {base:.2f} us, profiled {prof_us:.2f} us (+{prof_us - base:.2f} us per op)")
    try:
        import torch
    except ImportError:
        print("torch not installed: no PyTorch comparison")
        return
    t = torch.ones(4)
    tbase = _per_call_us(lambda: t + t, n)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
        tprof = _per_call_us(lambda: t + t, n)
    ratio = f"{(prof_us - base) / (tprof - tbase):.2f}" if tprof > tbase and prof_us > base else "n/a (noise)"
    print(f"torch a + a: {tbase:.2f} us, profiled {tprof:.2f} us (+{tprof - tbase:.2f} us per op); "
          f"overhead ratio ours/torch = {ratio}")


if __name__ == "__main__":
    main()
