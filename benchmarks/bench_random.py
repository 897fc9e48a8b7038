"""Random numbers, cumsum and norm: backend_sdk vs numpy on 16M elements, measured in one run.

    python benchmarks/bench_random.py

numpy's Generator uses PCG64 and a ziggurat for normals; backend_sdk uses Philox4x32-10 and
Box-Muller (the same numbers on every device), so the ratios are indicative, not like for like.
"""
from __future__ import annotations

import timeit

import numpy as np

import backend_sdk


def best_ms(fn, number: int = 2, repeat: int = 3) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e3


def main() -> None:
    n = 1 << 24
    rng = np.random.default_rng(0)
    x = rng.random(n, dtype=np.float32)
    t = backend_sdk.from_numpy(x)
    cases = [
        ("rand float32", lambda: backend_sdk.rand(n), lambda: rng.random(n, dtype=np.float32)),
        ("rand float64", lambda: backend_sdk.rand(n, dtype=backend_sdk.float64), lambda: rng.random(n)),
        ("randn float32", lambda: backend_sdk.randn(n), lambda: rng.standard_normal(n, dtype=np.float32)),
        ("randint [0, 100)", lambda: backend_sdk.randint(0, 100, (n,)), lambda: rng.integers(0, 100, n)),
        ("bernoulli_(0.3)", lambda: t.bernoulli_(0.3), lambda: rng.random(n) < 0.3),
        ("cumsum", lambda: backend_sdk.cumsum(t, 0), lambda: np.cumsum(x)),
        ("norm 2", lambda: backend_sdk.norm(t), lambda: np.linalg.norm(x)),
    ]
    print(f"{'16M elements':20s} {'sdk ms':>8s} {'numpy ms':>9s} {'x numpy':>8s}")
    for name, ours, theirs in cases:
        a, b = best_ms(ours), best_ms(theirs)
        print(f"{name:20s} {a:8.2f} {b:9.2f} {a / b:8.2f}")


if __name__ == "__main__":
    main()
