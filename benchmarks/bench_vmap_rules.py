"""vmap's batching rules of issue 19's second round against the per-element loop (what the slow fallback
did for them before) and numpy, in one run: cross_entropy over a batch of classifiers' outputs, index_select
with a batched index, conv2d with a batched weight. With torch installed, torch.vmap's ratio to its own loop.

    SDK_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_vmap_rules.py
"""
from __future__ import annotations

import os
import time
import warnings
from typing import Any, Callable

import numpy as np

import backend_sdk as sdk
from backend_sdk.func import vmap

F = sdk.nn.functional
B = 64


def best(fn: Callable[[], Any], rounds: int = 15) -> float:
    fn()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def numpy_cross_entropy(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    z = x - x.max(-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(-1, keepdims=True))
    return -np.take_along_axis(logp, t[..., None], -1)[..., 0].mean(-1)


def cases() -> list[tuple[str, Callable, Callable, Callable | None]]:
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((B, 32, 10)).astype(np.float32)
    tn = rng.integers(0, 10, (B, 32))
    x, t = sdk.from_numpy(xn), sdk.from_numpy(tn)
    src = sdk.from_numpy(rng.standard_normal((B, 128, 16)).astype(np.float32))
    idx = sdk.from_numpy(rng.integers(0, 128, (B, 32)))
    srcn, idxn = src.numpy(), idx.numpy()
    img = sdk.from_numpy(rng.standard_normal((B, 1, 3, 16, 16)).astype(np.float32))
    w = sdk.from_numpy(rng.standard_normal((B, 8, 3, 3, 3)).astype(np.float32))
    return [
        ("cross_entropy [32x10], batched target",
         lambda: vmap(F.cross_entropy)(x, t),
         lambda: sdk.stack([F.cross_entropy(x[i], t[i]) for i in range(B)]),
         lambda: numpy_cross_entropy(xn, tn)),
        ("index_select [128x16], batched index [32]",
         lambda: vmap(lambda a, i: a.index_select(0, i))(src, idx),
         lambda: sdk.stack([src[i].index_select(0, idx[i]) for i in range(B)]),
         lambda: np.take_along_axis(srcn, idxn[:, :, None], 1)),
        ("conv2d [1x3x16x16], batched weight [8x3x3x3]",
         lambda: vmap(F.conv2d)(img, w),
         lambda: sdk.stack([F.conv2d(img[i], w[i]) for i in range(B)]),
         None),
    ]


def torch_ratios() -> dict[str, float]:
    try:
        import torch
    except ImportError:
        return {}
    torch.manual_seed(0)
    x, t = torch.randn(B, 32, 10), torch.randint(0, 10, (B, 32))
    src, idx = torch.randn(B, 128, 16), torch.randint(0, 128, (B, 32))
    img, w = torch.randn(B, 1, 3, 16, 16), torch.randn(B, 8, 3, 3, 3)
    tf = torch.nn.functional
    pairs = {
        "cross_entropy": (lambda: torch.vmap(tf.cross_entropy)(x, t),
                          lambda: torch.stack([tf.cross_entropy(x[i], t[i]) for i in range(B)])),
        "index_select": (lambda: torch.vmap(lambda a, i: a.index_select(0, i))(src, idx),
                         lambda: torch.stack([src[i].index_select(0, idx[i]) for i in range(B)])),
        "conv2d": (lambda: torch.vmap(tf.conv2d)(img, w),
                   lambda: torch.stack([tf.conv2d(img[i], w[i]) for i in range(B)])),
    }
    return {k: best(v) / best(l) for k, (v, l) in pairs.items()}


def main() -> None:
    warnings.simplefilter("error", UserWarning)  # a rule must serve each case, not the slow fallback
    print(f"batch {B}, float32, load average {os.getloadavg()[0]:.1f}")
    print(f"{'case':48} {'vmap':>10} {'loop':>10} {'numpy':>10} {'vmap/loop':>10} {'vmap/numpy':>10}")
    for name, v, loop, ref in cases():
        tv, tl = best(v), best(loop)
        tn = best(ref) if ref is not None else None
        print(f"{name:48} {tv * 1e6:8.0f}us {tl * 1e6:8.0f}us "
              f"{(f'{tn * 1e6:8.0f}us') if tn else '       -  '} {tv / tl:10.2f} "
              f"{(f'{tv / tn:10.1f}') if tn else '         -'}")
    for k, r in torch_ratios().items():
        print(f"torch {k}: vmap/loop {r:.2f}")


if __name__ == "__main__":
    main()
