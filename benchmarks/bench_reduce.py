"""Reductions: backend_sdk vs numpy on a 4096x4096 float32 matrix, measured in one run.

    python benchmarks/bench_reduce.py

Target (issue 3): sum over all and along a dim at most 1.5x numpy's time.
"""
from __future__ import annotations

import timeit

import numpy as np

import backend_sdk


def best_ms(fn, number: int = 3, repeat: int = 5) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e3


def main() -> None:
    x = np.random.default_rng(0).random((4096, 4096), dtype=np.float32)
    t = backend_sdk.from_numpy(x)
    cases = [
        ("sum()", lambda: t.sum(), lambda: x.sum()),
        ("sum(dim=0)", lambda: t.sum(0), lambda: x.sum(0)),
        ("sum(dim=1)", lambda: t.sum(1), lambda: x.sum(1)),
        ("amax(dim=1)", lambda: t.amax(1), lambda: x.max(1)),
        ("mean()", lambda: t.mean(), lambda: x.mean()),
    ]
    print(f"{'4096x4096 float32':20s} {'sdk ms':>8s} {'numpy ms':>9s} {'x numpy':>8s}")
    for name, ours, theirs in cases:
        a, b = best_ms(ours), best_ms(theirs)
        print(f"{name:20s} {a:8.2f} {b:9.2f} {a / b:8.2f}")


if __name__ == "__main__":
    main()
