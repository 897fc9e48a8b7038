"""Element-wise operators against numpy (and PyTorch when installed), in one run.

Prints, for each operator, the median time of backend_sdk and numpy on 16M float32
elements and on 1-element tensors (per-call overhead), and the ratio sdk / numpy.
Functional forms on both sides: each call allocates its result.

    python benchmarks/bench_elementwise.py [--n 16777216] [--repeat 7]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Callable

import numpy as np

import backend_sdk


def median_time(fn: Callable[[], object], repeat: int, number: int) -> float:
    """Median over `repeat` runs of the mean time of `number` calls, in seconds."""
    fn()  # warm-up: first-touch allocation, lazy thread start
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number)
    return statistics.median(times)


def cases(a: np.ndarray, b: np.ndarray) -> list[tuple[str, Callable[[], object], Callable[[], object]]]:
    """(name, sdk call, numpy call) for each benchmarked operator."""
    x, y = backend_sdk.from_numpy(a), backend_sdk.from_numpy(b)
    return [
        ("add", lambda: x + y, lambda: np.add(a, b)),
        ("mul", lambda: x * y, lambda: np.multiply(a, b)),
        ("sub", lambda: x - y, lambda: np.subtract(a, b)),
        ("div", lambda: x / y, lambda: np.divide(a, b)),
        ("maximum", lambda: backend_sdk.maximum(x, y), lambda: np.maximum(a, b)),
        ("exp", lambda: backend_sdk.exp(x), lambda: np.exp(a)),
        ("sqrt", lambda: backend_sdk.sqrt(x), lambda: np.sqrt(a)),
        ("relu", lambda: backend_sdk.relu(x), lambda: np.maximum(a, np.float32(0))),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 24)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    big = [rng.random(args.n, dtype=np.float32) + np.float32(0.5) for _ in range(2)]
    small = [np.array([1.5], dtype=np.float32), np.array([2.5], dtype=np.float32)]
    print(f"cpus: {os.cpu_count()} (SDK_NUM_THREADS caps the SDK's threads)")
    print(f"{'op':<10}{'size':>10}{'sdk':>12}{'numpy':>12}{'ratio':>8}")
    big_label = "16M" if args.n == 1 << 24 else str(args.n)
    for label, (a, b), number in ((big_label, big, 3), ("1", small, 20000)):
        for name, ours, theirs in cases(a, b):
            t_ours = median_time(ours, args.repeat, number)
            t_np = median_time(theirs, args.repeat, number)
            unit, scale = ("ms", 1e3) if label == big_label else ("us", 1e6)
            print(f"{name:<10}{label:>10}{t_ours * scale:>10.3f}{unit}{t_np * scale:>10.3f}{unit}{t_ours / t_np:>8.2f}")


if __name__ == "__main__":
    main()
