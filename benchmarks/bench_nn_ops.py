"""nn operators (issue 20): backend_sdk vs torch 2.13 CPU (when importable) in one run, single-threaded
and default threads.

    PYTHONPATH=.:/tmp/tv/lib/python3.11/site-packages python benchmarks/bench_nn_ops.py   # default threads
    SDK_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=.:/tmp/tv/lib/python3.11/site-packages python benchmarks/bench_nn_ops.py

Targets (issue 20): conv2d forward and backward at ResNet-18 block shapes at most 1.5x torch;
layer_norm, softmax, scaled_dot_product_attention and embedding at most 1.2x. Backward rows time
the backward operators directly (convolution_backward, native_layer_norm_backward,
embedding_dense_backward): the autograd table does not reach them yet.
"""
from __future__ import annotations

import os
import timeit

import numpy as np

import backend_sdk as sdk

A = sdk.ops.aten


def best_ms(fn, number: int = 2, repeat: int = 3) -> float:
    fn()
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e3


def cases(torch):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 64, 56, 56), dtype=np.float32)
    w = rng.standard_normal((64, 64, 3, 3), dtype=np.float32) * 0.05
    g = rng.standard_normal((8, 64, 56, 56), dtype=np.float32)
    ln = rng.standard_normal((8 * 256, 512), dtype=np.float32)
    q = rng.standard_normal((8, 4, 256, 64), dtype=np.float32)
    emb = rng.standard_normal((50257, 128), dtype=np.float32)
    idx = rng.integers(0, 50257, (32, 64))
    sx, sw, sg, sln, sq, se, si = (sdk.from_numpy(a) for a in (x, w, g, ln, q, emb, idx))
    out = [
        ("conv2d fwd 8x64x56x56 k3", lambda: A.conv2d(sx, sw, None, [1], [1]),
         (lambda: torch.nn.functional.conv2d(tx, tw, padding=1)) if torch else None),
        ("conv2d bwd (input+weight)", lambda: A.convolution_backward(sg, sx, sw, None, [1, 1], [1, 1], [1, 1], False,
                                                                     [0, 0], 1, [True, True, False]),
         (lambda: torch.ops.aten.convolution_backward(tg, tx, tw, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
                                                      [True, True, False])) if torch else None),
        ("layer_norm fwd 2048x512", lambda: A.native_layer_norm(sln, [512], None, None, 1e-5),
         (lambda: torch.native_layer_norm(tln, [512], None, None, 1e-5)) if torch else None),
        ("softmax 2048x512", lambda: A.softmax(sln, -1), (lambda: torch.softmax(tln, -1)) if torch else None),
        ("sdpa fwd 8x4x256x64 causal", lambda: A.scaled_dot_product_attention(sq, sq, sq, is_causal=True),
         (lambda: torch.nn.functional.scaled_dot_product_attention(tq, tq, tq, is_causal=True)) if torch else None),
        ("embedding fwd 32x64 of 50257x128", lambda: A.embedding(se, si),
         (lambda: torch.nn.functional.embedding(ti, te)) if torch else None),
    ]
    if torch:
        tx, tw, tg, tln, tq, te, ti = (torch.from_numpy(a) for a in (x, w, g, ln, q, emb, idx))
    return out


def main() -> None:
    try:
        import torch
    except ImportError:
        torch = None
    threads = int(os.environ.get("SDK_NUM_THREADS", os.cpu_count() or 1))
    if torch:
        torch.set_num_threads(threads)  # the same thread count as the SDK's pool (SDK_NUM_THREADS)
    print(f"load average: {os.getloadavg()}, threads: {threads}")
    print(f"{'case':36s} {'sdk ms':>9s} {'torch ms':>9s} {'x torch':>8s}")
    for name, ours, theirs in cases(torch):
        a = best_ms(ours)
        b = best_ms(theirs) if theirs else float("nan")
        print(f"{name:36s} {a:9.2f} {b:9.2f} {a / b:8.2f}")

if __name__ == "__main__":
    main()
