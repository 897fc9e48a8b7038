"""Autograd: what the autograd layer costs per call, measured in one run (PyTorch beside it when installed).

    python benchmarks/bench_autograd.py [--quick]

Rows: `a + b` on 1-element float32 tensors that do not require grad, normally and under no_grad
(the Autograd keys skipped entirely: the difference is the layer's no-grad cost, target +10%);
the C++ dispatch of an empty kernel likewise; the same add with an input that requires grad
(recorded in the graph); forward plus backward of `(a * b).sum()`.
"""
from __future__ import annotations

import argparse
import timeit

import backend_sdk
from backend_sdk import _C


def per_call_us(stmt, number: int, repeat: int = 5) -> float:
    return min(timeit.repeat(stmt, number=number, repeat=repeat)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n = 20_000 if args.quick else 100_000
    a, b = backend_sdk.ones(1), backend_sdk.ones(1)
    ga = backend_sdk.ones(1, requires_grad=True)

    def fwd_bwd() -> None:
        (ga * b).sum().backward()

    rows = [("sdk    a + b (no input requires grad)", lambda: a + b, n)]
    with backend_sdk.no_grad():
        plain_no_grad = per_call_us(lambda: a + b, n)
    rows_measured = [(name, per_call_us(f, k)) for name, f, k in rows]
    rows_measured.append(("sdk    a + b under no_grad", plain_no_grad))
    rows_measured.append(("sdk    a + b, a requires grad (recorded)", per_call_us(lambda: ga + b, max(n // 20, 500))))
    rows_measured.append(("sdk    (a * b).sum().backward()", per_call_us(fwd_bwd, max(n // 100, 200))))
    try:
        import torch

        ta, tb = torch.ones(1), torch.ones(1)
        tga = torch.ones(1, requires_grad=True)

        def torch_fwd_bwd() -> None:
            (tga * tb).sum().backward()

        rows_measured.append(("torch  a + b", per_call_us(lambda: ta + tb, n)))
        rows_measured.append(("torch  a + b, a requires grad", per_call_us(lambda: tga + tb, n)))
        rows_measured.append(("torch  (a * b).sum().backward()", per_call_us(torch_fwd_bwd, max(n // 100, 200))))
    except ImportError:
        pass
    print(f"{'call':45s} {'us/call':>10s}")
    for name, us in rows_measured:
        print(f"{name:45s} {us:10.3f}")
    iters = 200_000 if args.quick else 2_000_000
    cpp = min(_C._benchmark_dispatch(iters) for _ in range(3))
    with backend_sdk.no_grad():
        cpp_ng = min(_C._benchmark_dispatch(iters) for _ in range(3))
    print(f"\nC++ dispatch of an empty kernel: {cpp:.1f} ns; under no_grad (Autograd keys skipped): {cpp_ng:.1f} ns")
    print(f"no-grad cost of the autograd layer: Python {100 * (rows_measured[0][1] / plain_no_grad - 1):+.1f}%, "
          f"C++ {100 * (cpp / cpp_ng - 1):+.1f}% (target: within +10%)")


if __name__ == "__main__":
    main()
