"""Graph replay against eager launches on accel (issue 15 part 5).

    python benchmarks/bench_graphs.py [--quick]

Target: replaying a captured graph of 100 small ops costs at least 5x less per op than launching the
same 100 ops eagerly (host time to launch and run them, synchronised once per round). numpy's per-op cost
of the same ops on the host, and PyTorch CPU's eager cost when torch is installed, are printed beside them,
measured in the same run. Nothing is asserted.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

N_OPS = 100


def best_per_op_us(fn, rounds: int, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(rounds):
            fn()
        best = min(best, (time.perf_counter() - t) / rounds / N_OPS * 1e6)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rounds = 5 if args.quick else 30

    import accel
    import backend_sdk as sdk

    x = sdk.ones(16, device="accel")

    def ops() -> None:
        for _ in range(N_OPS // 2):
            x.mul_(1.0)
            x.add_(0.0)

    def eager() -> None:
        ops()
        accel.synchronize()

    s = sdk.Stream()
    g = sdk.accelerator.Graph()
    with s, g:
        ops()

    def replay() -> None:
        g.replay()
        accel.synchronize()

    eager()
    replay()
    eager_us = best_per_op_us(eager, rounds)
    replay_us = best_per_op_us(replay, rounds)

    a = np.ones(16, dtype=np.float32)

    def numpy_ops() -> None:
        for _ in range(N_OPS // 2):
            np.multiply(a, 1.0, out=a)
            np.add(a, 0.0, out=a)

    numpy_us = best_per_op_us(numpy_ops, rounds)
    print(f"load average {os.getloadavg()[0]:.1f} (uptime)")
    print(f"{N_OPS} small ops per round, per op:")
    print(f"  accel eager launches  {eager_us:8.2f} us")
    print(f"  accel graph replay    {replay_us:8.2f} us   eager / replay = {eager_us / replay_us:.1f}x (target >= 5x)")
    print(f"  numpy (host)          {numpy_us:8.2f} us   replay / numpy = {replay_us / numpy_us:.1f}x")
    try:
        import torch

        t = torch.ones(16)

        def torch_ops() -> None:
            for _ in range(N_OPS // 2):
                t.mul_(1.0)
                t.add_(0.0)

        torch_us = best_per_op_us(torch_ops, rounds)
        print(f"  torch CPU eager       {torch_us:8.2f} us   replay / torch = {replay_us / torch_us:.1f}x")
    except ImportError:
        print("  torch CPU eager       (torch not installed)")


if __name__ == "__main__":
    main()
