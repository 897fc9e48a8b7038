"""The hot paths of issue 18, side by side with numpy and PyTorch CPU, measured in one run.

    python benchmarks/bench_hot.py [--threads 1] [--rounds 5] [--only exp,norm]

Each row is measured interleaved over several rounds (sdk, numpy, torch, sdk, numpy, ...) and the
best round is kept, so a burst of load from other processes hits all columns alike. The 1-minute
load average is printed beside the table. `--threads 1` runs single-threaded: it must be given
before the SDK starts its pool, so it sets SDK_NUM_THREADS and `torch.set_num_threads(1)`.
Nothing is asserted; the target column is the issue's.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Callable, Optional

N_BIG = 1 << 24


def _best(fn: Callable[[], object], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=0, help="0: default threads")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", default="", help="comma-separated row-name prefixes")
    args = parser.parse_args()
    if args.threads:
        os.environ["SDK_NUM_THREADS"] = str(args.threads)
        os.environ["OMP_NUM_THREADS"] = str(args.threads)

    import numpy as np

    import backend_sdk as sdk

    try:
        import torch

        if args.threads:
            torch.set_num_threads(args.threads)
    except ImportError:
        torch = None

    rng = np.random.default_rng(0)
    big = rng.random(N_BIG, dtype=np.float32) + np.float32(0.5)
    big2 = rng.random(N_BIG, dtype=np.float32) + np.float32(0.5)
    sbig, sbig2 = sdk.from_numpy(big), sdk.from_numpy(big2)
    sout = sdk.empty(N_BIG)
    m = rng.random((4096, 4096), dtype=np.float32)
    sm = sdk.from_numpy(m)
    sq = rng.random((2048, 2048), dtype=np.float32)
    ssq = sdk.from_numpy(sq)
    rows_idx = rng.integers(0, 2048, size=2048)
    srows = sdk.from_numpy(rows_idx)
    small = np.ones((4, 4), dtype=np.float32)
    ssmall = sdk.ones(4, 4)
    one = sdk.ones(1)
    gen = np.random.default_rng(1)
    if torch is not None:
        tbig, tbig2 = torch.from_numpy(big), torch.from_numpy(big2)
        tm, tsq = torch.from_numpy(m), torch.from_numpy(sq)
        trows = torch.from_numpy(rows_idx)
        tsmall, tone = torch.ones(4, 4), torch.ones(1)
        tout = torch.empty(N_BIG)

    def gelu_np(a):
        return 0.5 * a * (1.0 + _erf_np(a / np.float32(np.sqrt(2.0))))

    # (name, number, sdk, numpy or None, torch or None, target text)
    T = torch
    rows: list[tuple[str, int, Callable, Optional[Callable], Optional[Callable], str]] = []
    for op in ("exp", "log", "tanh", "sin", "cos", "sigmoid", "erf", "gelu"):
        s_fn = getattr(sdk.nn.functional, op) if op == "gelu" else getattr(sdk, op)
        n_fn = {"sigmoid": lambda a: 1 / (1 + np.exp(-a)), "erf": _erf_np, "gelu": gelu_np}.get(op) or getattr(np, op)
        t_fn = (getattr(T.nn.functional, op) if op == "gelu" else getattr(T, op)) if T else None
        rows.append((f"{op} 16M f32", 3, (lambda f=s_fn: f(sbig)), (lambda f=n_fn: f(big)),
                     (lambda f=t_fn: f(tbig)) if T else None, "<=1.0 np, <=0.8 torch"))
    rows += [
        ("norm 16M f32", 3, lambda: sdk.norm(sbig), lambda: np.linalg.norm(big),
         (lambda: T.norm(tbig)) if T else None, "<=1.0 np"),
        ("amax(dim=1) 4096^2", 3, lambda: sm.amax(1), lambda: m.max(1),
         (lambda: tm.amax(1)) if T else None, "<=1.0 np"),
        ("sum(dim=0) 4096^2", 3, lambda: sm.sum(0), lambda: m.sum(0),
         (lambda: tm.sum(0)) if T else None, "<=1.0 np"),
        ("rand 16M", 3, lambda: sdk.rand(N_BIG), lambda: gen.random(N_BIG, dtype=np.float32),
         (lambda: T.rand(N_BIG)) if T else None, "<=1.0 np"),
        ("randn 16M", 3, lambda: sdk.randn(N_BIG), lambda: gen.standard_normal(N_BIG, dtype=np.float32),
         (lambda: T.randn(N_BIG)) if T else None, "<=1.0 np"),
        ("flip(0,1) 2048^2", 3, lambda: sdk.flip(ssq, [0, 1]), lambda: np.flip(sq, (0, 1)).copy(),
         (lambda: T.flip(tsq, [0, 1])) if T else None, "<=1.0 np"),
        ("x[rows] 2048^2", 3, lambda: ssq[srows], lambda: sq[rows_idx],
         (lambda: tsq[trows]) if T else None, "<=1.0 np"),
        ("x[0]", 20000, lambda: ssmall[0], lambda: small[0], (lambda: tsmall[0]) if T else None, "<=0.5 torch"),
        ("x[1:3]", 20000, lambda: ssmall[1:3], lambda: small[1:3], (lambda: tsmall[1:3]) if T else None,
         "<=0.5 torch"),
        ("x.transpose(0,1)", 20000, lambda: ssmall.transpose(0, 1), lambda: small.swapaxes(0, 1),
         (lambda: tsmall.transpose(0, 1)) if T else None, "<=0.5 torch"),
        ("x.t()", 20000, lambda: ssmall.t(), lambda: small.T, (lambda: tsmall.t()) if T else None, "keep"),
        ("zeros(3)", 20000, lambda: sdk.zeros(3), lambda: np.zeros(3, dtype=np.float32),
         (lambda: T.zeros(3)) if T else None, "<=0.5 torch"),
        ("ones_like(x)", 20000, lambda: sdk.ones_like(ssmall), lambda: np.ones_like(small),
         (lambda: T.ones_like(tsmall)) if T else None, "<=0.5 torch"),
        ("x.item()", 20000, lambda: one.item(), lambda: small[0, 0].item(), (lambda: tone.item()) if T else None,
         "<=1.0 torch"),
        ("a + b 16M alloc", 3, lambda: sbig + sbig2, lambda: big + big2, (lambda: tbig + tbig2) if T else None,
         "<=1.1 out="),
        ("a + b 16M out=", 3, lambda: sdk.add(sbig, sbig2, out=sout), lambda: np.add(big, big2, out=big),
         (lambda: T.add(tbig, tbig2, out=tout)) if T else None, "ref"),
    ]
    try:  # the accel launch row (Note [Deferred wake-ups], device_sim): wall time only here; bench_accel.py
        # --launch-only [--busy 2] adds the calling thread's CPU time and context switches
        import accel  # noqa: F401

        aa, ab = sdk.ones(1, device="accel"), sdk.ones(1, device="accel")
        na, nb = np.ones(1, dtype=np.float32), np.ones(1, dtype=np.float32)
        rows.append(("accel a + b launch", 20000, lambda: aa + ab, lambda: na + nb,
                     (lambda: tone + tone) if T else None, "<=1.0 torch"))
    except ImportError:
        pass
    if args.only:
        prefixes = tuple(args.only.split(","))
        rows = [r for r in rows if r[0].startswith(prefixes)]
    best = {r[0]: [float("inf")] * 3 for r in rows}
    for _ in range(args.rounds):
        for name, number, *fns, _target in rows:
            for i, fn in enumerate(fns):
                if fn is not None:
                    fn()  # warm-up
                    best[name][i] = min(best[name][i], _best(fn, number))
    load = os.getloadavg()[0]
    threads = args.threads or "default"
    print(f"threads: {threads}; cpus: {os.cpu_count()}; 1-min load: {load:.2f}; best of {args.rounds} rounds")
    print(f"{'case':<22}{'sdk':>11}{'numpy':>11}{'torch':>11}{'x np':>7}{'x torch':>8}  target")
    for name, number, *_fns, target in rows:
        s, n, t = best[name]
        unit, scale = ("us", 1e6) if number > 100 else ("ms", 1e3)
        tt = f"{t * scale:>9.3f}{unit}" if t != float("inf") else f"{'n/a':>11}"
        xt = f"{s / t:>8.2f}" if t != float("inf") else f"{'n/a':>8}"
        print(f"{name:<22}{s * scale:>9.3f}{unit}{n * scale:>9.3f}{unit}{tt}{s / n:>7.2f}{xt}  {target}")
    if "a + b 16M alloc" in best and "a + b 16M out=" in best:
        print(f"alloc / out= (sdk): {best['a + b 16M alloc'][0] / best['a + b 16M out='][0]:.2f} (target <= 1.1)")
    sys.stdout.flush()


def _erf_np(a):
    """erf without scipy: numpy has none, so the reference is math.erf vectorised (slow, reference only)."""
    import math

    import numpy as np

    return np.frompyfunc(math.erf, 1, 1)(a).astype(a.dtype) if a.size < 1 << 16 else _erf_as(a)


def _erf_as(a):
    """Abramowitz-Stegun 7.1.26 (|error| < 1.5e-7) in numpy: the numpy-side cost of an erf pass."""
    import numpy as np

    s = np.sign(a)
    x = np.abs(a)
    t = 1.0 / (1.0 + np.float32(0.3275911) * x)
    y = 1.0 - (((((np.float32(1.061405429) * t - np.float32(1.453152027)) * t) + np.float32(1.421413741)) * t
                - np.float32(0.284496736)) * t + np.float32(0.254829592)) * t * np.exp(-x * x)
    return s * y


if __name__ == "__main__":
    main()
