"""vmap of ``x @ W`` over a batch of 64: against a Python loop and against one batched matmul.

    python benchmarks/bench_vmap.py [--quick]
    SDK_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=.:/tmp/tv/lib/python3.11/site-packages python \
        benchmarks/bench_vmap.py          # single-threaded (stable figures on a shared machine), torch beside

Target (issue 19, vmap): ``vmap(lambda x: x @ W)(X)`` within 1.5x of the one batched matmul ``X @ W``.
Every row is measured in this run, with numpy's ``X @ W`` and, when installed, PyTorch's
``torch.vmap`` beside it; the 1-minute load average is printed with the figures (the machine may be
shared); the rows are measured in interleaved rounds so they see the same load. Nothing is asserted.
The batching rule of ``[B, n, k] @ [k, m]`` folds the batch into the rows of one 2-D mm, so vmap can
be faster than the SDK's own 3-D @ 2-D matmul.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def interleaved_best_us(fns: dict, rounds: int) -> dict:
    """Best time (us) of each callable, measured in interleaved rounds so that every row sees the same load
    (the minimum over rounds is the least disturbed run)."""
    for fn in fns.values():
        fn()  # warm-up
    best = {name: float("inf") for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], (time.perf_counter() - t0) * 1e6)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    import backend_sdk as sdk

    rounds = 5 if args.quick else 25
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
        fns = {"mm": lambda: X @ W, "vmap": lambda: f(X), "loop": lambda: sdk.stack([X[i] @ W for i in range(batch)]),
               "numpy": lambda: xn @ wn}
        torch_ratio = ""
        if torch is not None:
            tx, tw = torch.from_numpy(xn), torch.from_numpy(wn)
            tf = torch.vmap(lambda x: x @ tw)
            fns["torch_mm"], fns["torch_vmap"] = (lambda: tx @ tw), (lambda: tf(tx))
        t = interleaved_best_us(fns, rounds)
        mm, vm, lp, npy = t["mm"], t["vmap"], t["loop"], t["numpy"]
        if torch is not None:
            torch_ratio = f"{t['torch_vmap'] / t['torch_mm']:.2f}"
        print(f"{f'[{n}x{k}] @ [{k}x{m}]':<28}{mm:>10.0f}us{vm:>10.0f}us{lp:>10.0f}us{npy:>10.0f}us"
              f"{vm / mm:>9.2f}{lp / mm:>9.2f}{torch_ratio:>15}")
    print(f"load average (1 min): {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
