"""vmap of ``x @ W`` over a batch of 64: against a Python loop and against one batched matmul.

    python benchmarks/bench_vmap.py [--quick]

Target (issue 19, vmap): ``vmap(lambda x: x @ W)(X)`` within 1.5x of the one batched matmul ``X @ W``.
Every row is measured in this run, with numpy's ``X @ W`` and, when installed, PyTorch's
``torch.vmap`` beside it; the 1-minute load average is printed with the figures (the machine may be
shared). Nothing is asserted.
"""
from __future__ import annotations

import argparse
import os
import sys
import timeit

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def best_us(fn, number: int, repeat: int) -> float:
    fn()  # warm-up
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    import backend_sdk as sdk

    number, repeat = (3, 3) if args.quick else (10, 5)
    batch = 64
    print(f"load average (1 min): {os.getloadavg()[0]:.2f}")
    print(f"{'shape (per example x, W)':<28}{'batched mm':>12}{'vmap':>12}{'loop':>12}{'numpy':>12}"
          f"{'vmap/mm':>9}{'loop/mm':>9}{'torch vmap/mm':>15}")
    try:
        import torch
    except ImportError:
        torch = None
    for n, k, m in ((16, 64, 64), (64, 128, 128)):
        rng = np.random.default_rng(0)
        xn = rng.standard_normal((batch, n, k)).astype(np.float32)
        wn = rng.standard_normal((k, m)).astype(np.float32)
        X, W = sdk.from_numpy(xn), sdk.from_numpy(wn)
        f = sdk.vmap(lambda x: x @ W)
        mm = best_us(lambda: X @ W, number, repeat)
        vm = best_us(lambda: f(X), number, repeat)
        lp = best_us(lambda: sdk.stack([X[i] @ W for i in range(batch)]), max(1, number // 4), repeat)
        npy = best_us(lambda: xn @ wn, number, repeat)
        torch_ratio = ""
        if torch is not None:
            tx, tw = torch.from_numpy(xn), torch.from_numpy(wn)
            tf = torch.vmap(lambda x: x @ tw)
            torch_ratio = f"{best_us(lambda: tf(tx), number, repeat) / best_us(lambda: tx @ tw, number, repeat):.2f}"
        print(f"{f'[{n}x{k}] @ [{k}x{m}]':<28}{mm:>10.0f}us{vm:>10.0f}us{lp:>10.0f}us{npy:>10.0f}us"
              f"{vm / mm:>9.2f}{lp / mm:>9.2f}{torch_ratio:>15}")
    print(f"load average (1 min): {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
