"""Autocast: the per-call cost of the Autocast<backend> kernels (issue 19).

    PYTHONPATH=.:/tmp/tv/lib/python3.11/site-packages python benchmarks/bench_autocast.py [--quick]

Prints, for small tensors on cpu: mm and add outside autocast, mm inside (the cast-policy kernel
plus two casts, the weight's cached), add inside (on no list: the fallthrough), and the same
under PyTorch's torch.autocast when torch is installed, with ratios measured in this run. Nothing
is asserted.
"""
from __future__ import annotations

import argparse
import os
import timeit

import numpy as np


def per_call_us(stmt, number: int, repeat: int = 7) -> float:
    return min(timeit.repeat(stmt, number=number, repeat=repeat)) / number * 1e6


def measure(lib, number: int) -> dict:
    a = lib.from_numpy(np.ones((8, 8), np.float32))
    w = lib.from_numpy(np.ones((8, 8), np.float32)).requires_grad_(True)
    out = {"mm": per_call_us(lambda: lib.mm(a, a), number), "add": per_call_us(lambda: a + a, number)}
    with lib.autocast("cpu"):
        out["mm autocast"] = per_call_us(lambda: lib.mm(a, a), number)
        with lib.no_grad():
            out["mm autocast (cached weight)"] = per_call_us(lambda: lib.mm(a, w), number)
        out["add autocast"] = per_call_us(lambda: a + a, number)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    number = 2000 if parser.parse_args().quick else 20000
    import backend_sdk

    ours = measure(backend_sdk, number)
    try:
        import torch

        theirs = measure(torch, number)
    except ImportError:
        theirs = None
    print(f"load average: {os.getloadavg()[0]:.1f}")
    print(f"{'call (8x8 float32, cpu)':32s} {'ours us':>9s} {'torch us':>9s} {'ours/torch':>10s}")
    for k, v in ours.items():
        t = theirs[k] if theirs else float("nan")
        print(f"{k:32s} {v:9.2f} {t:9.2f} {v / t:10.2f}")
    print(f"autocast mm / plain mm: ours {ours['mm autocast'] / ours['mm']:.2f}" +
          (f", torch {theirs['mm autocast'] / theirs['mm']:.2f}" if theirs else ""))


if __name__ == "__main__":
    main()
