"""Indexing: backend_sdk vs numpy on a 2048x2048 float32 matrix, measured in one run.

    python benchmarks/bench_indexing.py

Nothing is asserted; the ratio column is sdk time / numpy time.
"""
from __future__ import annotations

import timeit

import numpy as np

import backend_sdk


def best_ms(fn, number: int = 3, repeat: int = 5) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e3


def main() -> None:
    rng = np.random.default_rng(0)
    x = rng.random((2048, 2048), dtype=np.float32)
    t = backend_sdk.from_numpy(x)
    rows = rng.integers(0, 2048, size=2048)
    trows = backend_sdk.from_numpy(rows)
    mask = x > 0.5
    tmask = backend_sdk.from_numpy(mask)
    gidx = rng.integers(0, 2048, size=(2048, 2048))
    tgidx = backend_sdk.from_numpy(gidx)

    def np_index_put_acc() -> None:
        y = x.copy()
        np.add.at(y, rows, x)

    def sdk_index_put_acc() -> None:
        t.clone().index_put_((trows,), t, True)

    cases = [
        ("x[rows]", lambda: t[trows], lambda: x[rows]),
        ("x[:, cols]", lambda: t[:, trows], lambda: x[:, rows]),
        ("x[mask]", lambda: t[tmask], lambda: x[mask]),
        ("nonzero(mask)", lambda: backend_sdk.nonzero(tmask), lambda: np.argwhere(mask)),
        ("gather(1)", lambda: backend_sdk.gather(t, 1, tgidx), lambda: np.take_along_axis(x, gidx, 1)),
        ("index_put_ acc", sdk_index_put_acc, np_index_put_acc),
        ("flip(0, 1)", lambda: backend_sdk.flip(t, [0, 1]), lambda: np.flip(x, (0, 1)).copy()),
        ("index_select(1)", lambda: backend_sdk.index_select(t, 1, trows), lambda: np.take(x, rows, 1)),
    ]
    print(f"{'2048x2048 float32':20s} {'sdk ms':>8s} {'numpy ms':>9s} {'x numpy':>8s}")
    for name, ours, theirs in cases:
        a, b = best_ms(ours), best_ms(theirs)
        print(f"{name:20s} {a:8.2f} {b:9.2f} {a / b:8.2f}")


if __name__ == "__main__":
    main()
