"""Benchmark runner: per-call overhead of small operators, side by side with numpy and PyTorch.

    python benchmarks/run.py [--quick]

Every figure is measured in this run; ratios compare against numpy's `na + nb`
and, when PyTorch is installed, `torch.add`. Nothing here is asserted: the
issue targets are printed next to the measured ratios.
"""
from __future__ import annotations

import argparse
import timeit

import numpy as np

import backend_sdk
from backend_sdk import _C


def per_call_ns(stmt, number: int, repeat: int = 7) -> float:
    """Best-of-`repeat` nanoseconds per call (the minimum is the least disturbed by other load)."""
    return min(timeit.repeat(stmt, number=number, repeat=repeat)) / number * 1e9


def measure_rounds(rows: list, number: int, rounds: int = 3) -> list:
    """Best time of each row over several interleaved rounds, so a burst of load hits all rows alike."""
    best = {name: float("inf") for name, _ in rows}
    for _ in range(rounds):
        for name, stmt in rows:
            best[name] = min(best[name], per_call_ns(stmt, number))
    return [(name, best[name]) for name, _ in rows]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer iterations")
    args = parser.parse_args()
    number = 20_000 if args.quick else 200_000

    na = np.ones(1, dtype=np.float32)
    nb = np.ones(1, dtype=np.float32)
    a = backend_sdk.ones(1)
    b = backend_sdk.ones(1)
    add_tensor = backend_sdk.ops.aten.add.Tensor

    stmts = [
        ("numpy  na + nb", lambda: na + nb),
        ("sdk    a + b", lambda: a + b),
        ("sdk    backend_sdk.add(a, b)", lambda: backend_sdk.add(a, b)),
        ("sdk    ops.aten.add.Tensor(a, b)", lambda: add_tensor(a, b)),
    ]
    try:
        import torch

        ta, tb = torch.ones(1), torch.ones(1)
        stmts += [
            ("torch  torch.add(a, b)", lambda: torch.add(ta, tb)),
            ("torch  a + b", lambda: ta + tb),
            ("torch  torch.ops.aten.add.Tensor(a, b)", lambda: torch.ops.aten.add.Tensor(ta, tb)),
        ]
    except ImportError:
        pass
    rows = measure_rounds(stmts, number)
    numpy_ns = rows[0][1]
    torch_ns = next((ns for name, ns in rows if name.startswith("torch  torch.add")), None)

    print("Per-call time of add on 1-element float32 tensors")
    print(f"{'call':42s} {'ns/call':>10s} {'x numpy':>9s} {'x torch.add':>12s}")
    for name, ns in rows:
        vs_torch = f"{ns / torch_ns:12.2f}" if torch_ns else f"{'n/a':>12s}"
        print(f"{name:42s} {ns:10.0f} {ns / numpy_ns:9.2f} {vs_torch}")
    print("targets: sdk rows at most 2.0x numpy and at most 0.5x torch.add")

    dispatch_ns = min(_C._benchmark_dispatch(2_000_000 if not args.quick else 200_000) for _ in range(3))
    print()
    print(f"C++ dispatch of an empty unboxed kernel (key set + lookup + call): {dispatch_ns:.1f} ns (target <= 20 ns)")


if __name__ == "__main__":
    main()
