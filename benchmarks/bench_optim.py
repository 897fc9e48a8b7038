"""Optimizer steps (issue 20): an AdamW step over 10M float32 parameters on the CPU in the three
implementations (per-parameter, foreach, fused) against PyTorch's same three and a numpy AdamW, and
the kernel launches of one step on accel (device_sim's trace).

    PYTHONPATH=.:samples/accel_sim:/tmp/tv/lib/python3.11/site-packages python benchmarks/bench_optim.py
    SDK_NUM_THREADS=1 OMP_NUM_THREADS=1 ... python benchmarks/bench_optim.py --threads 1

Target: the AdamW step at most 1.0x torch. Ratios are measured in this run; nothing is asserted.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

N_TENSORS = 10
PER_TENSOR = 1_000_000


def _time(step, repeat: int) -> float:
    step()  # warm-up: state allocated
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def _ours(impl: dict, repeat: int) -> float:
    import backend_sdk as sdk

    sdk.manual_seed(0)
    params = [sdk.randn(PER_TENSOR).requires_grad_() for _ in range(N_TENSORS)]
    for p in params:
        p.grad = sdk.randn(PER_TENSOR)
    opt = sdk.optim.AdamW(params, lr=1e-3, **impl)
    return _time(opt.step, repeat)


def _torch(impl: dict, repeat: int, threads: int | None) -> float | None:
    try:
        import torch
    except ImportError:
        return None
    if threads:
        torch.set_num_threads(threads)
    torch.manual_seed(0)
    params = [torch.randn(PER_TENSOR).requires_grad_() for _ in range(N_TENSORS)]
    for p in params:
        p.grad = torch.randn(PER_TENSOR)
    opt = torch.optim.AdamW(params, lr=1e-3, **impl)
    return _time(opt.step, repeat)


def _numpy(repeat: int) -> float:
    rng = np.random.default_rng(0)
    ps = [rng.standard_normal(PER_TENSOR, dtype=np.float32) for _ in range(N_TENSORS)]
    gs = [rng.standard_normal(PER_TENSOR, dtype=np.float32) for _ in range(N_TENSORS)]
    ms = [np.zeros_like(p) for p in ps]
    vs = [np.zeros_like(p) for p in ps]
    state = {"t": 0}
    lr, b1, b2, eps, wd = 1e-3, 0.9, 0.999, 1e-8, 1e-2

    def step() -> None:
        state["t"] += 1
        t = state["t"]
        for p, g, m, v in zip(ps, gs, ms, vs):
            p *= 1 - lr * wd
            m *= b1
            m += (1 - b1) * g
            v *= b2
            v += (1 - b2) * g * g
            denom = np.sqrt(v) / np.sqrt(1 - b2**t) + eps
            p -= (lr / (1 - b1**t)) * m / denom
    return _time(step, repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (set SDK_NUM_THREADS too)")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print(f"load: {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} {os.getloadavg()[2]:.1f}; "
          f"threads: {args.threads or 'default'} (SDK_NUM_THREADS={os.environ.get('SDK_NUM_THREADS', 'default')})")
    print(f"AdamW step over {N_TENSORS} x {PER_TENSOR:,} float32 parameters (ms, median of {args.repeat}):")
    np_ms = _numpy(args.repeat)
    rows = []
    for label, impl in (("per-parameter", dict(foreach=False)), ("foreach", dict(foreach=True)),
                        ("fused", dict(fused=True))):
        ours = _ours(impl, args.repeat)
        theirs = _torch(impl, args.repeat, args.threads)
        rows.append((label, ours, theirs))
    best_torch = min((t for _, _, t in rows if t is not None), default=None)
    print(f"  {'impl':<14} {'sdk':>9} {'torch':>9} {'sdk/torch':>10} {'sdk/best torch':>15} {'sdk/numpy':>10}")
    for label, ours, theirs in rows:
        ratio = f"{ours / theirs:.2f}x" if theirs else "-"
        best = f"{ours / best_torch:.2f}x" if best_torch else "-"
        print(f"  {label:<14} {ours:9.1f} {theirs if theirs is not None else float('nan'):9.1f} {ratio:>10} "
              f"{best:>15} {ours / np_ms:9.2f}x")
    print(f"  numpy AdamW    {np_ms:9.1f}")
    try:
        import accel  # noqa: F401
        import device_sim  # noqa: F401
    except ImportError:
        return
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
    from test_optim_foreach import launches_per_step

    import backend_sdk as sdk

    counts = {label: launches_per_step(sdk.optim.AdamW, impl, lr=0.1)
              for label, impl in (("per-parameter", dict(foreach=False)), ("foreach (default)", {}),
                                  ("fused", dict(fused=True)))}
    print("accel kernel launches of one AdamW step over 20 parameters: " +
          ", ".join(f"{k} {v}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
