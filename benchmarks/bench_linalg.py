"""Matrix products: backend_sdk vs numpy (and PyTorch when installed), measured in one run.

    python benchmarks/bench_linalg.py

Target (issue 3): matmul 1024x1024 float32 at most 1.5x numpy's time.
"""
from __future__ import annotations

import timeit

import numpy as np

import backend_sdk


def best_ms(fn, number: int = 5, repeat: int = 5) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e3


def main() -> None:
    print(f"BLAS: {backend_sdk._C._blas_library()}")
    print(f"{'case':34s} {'sdk ms':>9s} {'numpy ms':>9s} {'x numpy':>8s} {'torch ms':>9s}")
    try:
        import torch
    except ImportError:
        torch = None
    rng = np.random.default_rng(0)
    for n, dtype in [(1024, np.float32), (256, np.float32), (512, np.float64)]:
        x = rng.standard_normal((n, n)).astype(dtype)
        y = rng.standard_normal((n, n)).astype(dtype)
        tx, ty = backend_sdk.from_numpy(x), backend_sdk.from_numpy(y)
        ours = best_ms(lambda: backend_sdk.matmul(tx, ty))
        theirs = best_ms(lambda: x @ y)
        torch_ms = "n/a"
        if torch is not None:
            px, py_ = torch.from_numpy(x), torch.from_numpy(y)
            torch_ms = f"{best_ms(lambda: torch.matmul(px, py_)):9.2f}"
        print(f"{f'matmul {n}x{n} {np.dtype(dtype).name}':34s} {ours:9.2f} {theirs:9.2f} {ours / theirs:8.2f} {torch_ms:>9s}")


if __name__ == "__main__":
    main()
