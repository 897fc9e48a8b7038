"""Autograd: what the autograd layer costs per call, measured in one run (PyTorch beside it when installed).

    python benchmarks/bench_autograd.py [--quick] [--threads N] [--device accel] [--only ROW]

Run it with an interpreter that has torch (e.g. /tmp/tv/bin/python with PYTHONPATH=.:samples/accel_sim)
to get the ratios; without torch only our times are printed. The MLP row is bound by matrix
products: the BLAS in use is printed; a venv without scipy-openblas gets the builtin loops unless
BACKEND_SDK_BLAS names a BLAS library (e.g. the scipy_openblas32 one of the project's interpreter). ``--threads 1`` sets SDK_NUM_THREADS=1
and OPENBLAS_NUM_THREADS=1 (read when the SDK's thread pool and BLAS start) and ``torch.set_num_threads(1)``.

Rows (issue 14's targets, each a ratio to torch CPU measured in the same run):
  * recorded ``a * b`` (a requires grad) at 1 and 1000 elements, its no-grad twin, and the recording
    overhead (recorded minus no-grad);
  * ``(a * b).sum().backward()`` at 1000 elements;
  * a chain of 20 elementwise ops, forward + backward;
  * an MLP step (784-256-128-10, batch 64: forward, backward, SGD update, grads set to None);
and the no-grad cost of the layer: ``a + b`` without and under ``no_grad`` in Python, and the C++
dispatch of an empty kernel with and without the Autograd keys (target: within 1 ns).
"""
from __future__ import annotations

import argparse
import os
import sys
import timeit
from typing import Any, Callable


def per_call_us(stmt: Callable[[], Any], number: int, repeat: int = 5) -> float:
    """Best of ``repeat`` runs of ``number`` calls, in microseconds per call."""
    return min(timeit.repeat(stmt, number=number, repeat=repeat)) / number * 1e6


def programs(lib: Any, device: str, sync: Callable[[], None]) -> dict[str, tuple[Callable[[], Any], int]]:
    """The benchmarked programs written once against a torch-like module ``lib`` (backend_sdk or torch)."""
    a1, b1 = lib.ones(1, device=device, requires_grad=True), lib.ones(1, device=device)
    a1k, b1k = lib.ones(1000, device=device, requires_grad=True), lib.ones(1000, device=device)
    na1, na1k = lib.ones(1, device=device), lib.ones(1000, device=device)
    c = lib.full((1000,), 0.5, device=device, requires_grad=True)
    d = lib.full((1000,), 0.25, device=device)

    def mul_backward() -> None:
        (a1k * b1k).sum().backward()

    def chain() -> None:
        y = c
        for i in range(4):  # 5 ops x 4 = 20 elementwise ops
            y = y * d
            y = y + d
            y = y.tanh()
            y = y - d
            y = y.sigmoid()
        y.sum().backward()

    gen = lib.Generator(device="cpu") if hasattr(lib, "Generator") else None
    if gen is not None:
        gen.manual_seed(0)
    sizes = [784, 256, 128, 10]
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        w = (lib.rand(fan_in, fan_out, generator=gen) * 0.1).to(device).requires_grad_()
        b = lib.zeros(fan_out, device=device, requires_grad=True)
        params += [w, b]
    x = lib.rand(64, 784, generator=gen).to(device)

    def mlp_step() -> None:
        h = x
        for k in range(0, len(params), 2):
            h = lib.addmm(params[k + 1], h, params[k])
            if k + 2 < len(params):
                h = h.relu()
        loss = (h * h).mean()
        loss.backward()
        with lib.no_grad():
            for p in params:
                p.sub_(p.grad, alpha=0.01)
                p.grad = None
        sync()

    def synced(f: Callable[[], Any]) -> Callable[[], None]:
        def g() -> None:
            f()
            sync()
        return g

    def no_grad(f: Callable[[], Any]) -> Callable[[], None]:
        def g() -> None:
            with lib.no_grad():
                f()
        return g

    return {
        "a * b recorded, 1 elem": (synced(lambda: a1 * b1), 20000),
        "a * b no-grad, 1 elem": (synced(lambda: na1 * b1), 20000),
        "a * b recorded, 1000 elem": (synced(lambda: a1k * b1k), 20000),
        "a * b no-grad, 1000 elem": (synced(lambda: na1k * b1k), 20000),
        "(a * b).sum().backward(), 1000": (synced(mul_backward), 2000),
        "20-op chain fwd + bwd, 1000": (synced(chain), 500),
        "MLP step 784-256-128-10, b64": (mlp_step, 100),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--threads", type=int, default=0, help="0: default threads")
    parser.add_argument("--device", default="cpu", help="our device (torch always runs on cpu)")
    parser.add_argument("--only", default="", help="run only rows whose name contains this")
    args = parser.parse_args()
    if args.threads:
        os.environ["SDK_NUM_THREADS"] = str(args.threads)
        os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)  # read when the BLAS loads
    import backend_sdk
    from backend_sdk import _C

    sync: Callable[[], None] = lambda: None  # noqa: E731
    if args.device != "cpu":
        import accel  # noqa: F401  (registers the sample backend)

        sync = backend_sdk.accelerator.synchronize
    scale = 0.2 if args.quick else 1.0
    ours = programs(backend_sdk, args.device, sync)
    try:
        import torch

        if args.threads:
            torch.set_num_threads(args.threads)
        theirs: dict[str, Any] | None = programs(torch, "cpu", lambda: None)
    except ImportError:
        theirs = None
    load = os.getloadavg()
    print(f"device {args.device}, threads {args.threads or 'default'}, load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
          f"BLAS {_C._blas_library()}")
    print(f"{'program':34s} {'sdk us':>10s} {'torch us':>10s} {'ratio':>7s}")
    results: dict[str, tuple[float, float | None]] = {}
    for name, (f, n) in ours.items():
        if args.only and args.only not in name:
            continue
        k = max(int(n * scale), 20)
        f()
        ous = per_call_us(f, k)
        tus = None
        if theirs is not None:
            tf = theirs[name][0]
            tf()
            tus = per_call_us(tf, k)
        results[name] = (ous, tus)
        ratio = f"{ous / tus:7.2f}" if tus else "      -"
        print(f"{name:34s} {ous:10.3f} {tus if tus is not None else float('nan'):10.3f} {ratio}")
    for size in ("1 elem", "1000 elem"):
        rec, ng = results.get(f"a * b recorded, {size}"), results.get(f"a * b no-grad, {size}")
        if rec and ng:
            o = rec[0] - ng[0]
            t = rec[1] - ng[1] if rec[1] is not None and ng[1] is not None else None
            ratio = f"{o / t:7.2f}" if t else "      -"
            print(f"{'recording overhead, ' + size:34s} {o:10.3f} {t if t is not None else float('nan'):10.3f} {ratio}")
    if args.only:
        return
    a, b = backend_sdk.ones(1), backend_sdk.ones(1)
    n = 20_000 if args.quick else 100_000
    plain = per_call_us(lambda: a + b, n)
    with backend_sdk.no_grad():
        plain_ng = per_call_us(lambda: a + b, n)
    iters = 200_000 if args.quick else 2_000_000
    cpp = min(_C._benchmark_dispatch(iters) for _ in range(3))
    with backend_sdk.no_grad():
        cpp_ng = min(_C._benchmark_dispatch(iters) for _ in range(3))
    print(f"\nPython a + b (no input requires grad): {plain:.3f} us; under no_grad: {plain_ng:.3f} us "
          f"({100 * (plain / plain_ng - 1):+.1f}%)")
    print(f"C++ dispatch of an empty kernel: {cpp:.1f} ns; under no_grad (Autograd keys skipped): {cpp_ng:.1f} ns "
          f"(difference {cpp - cpp_ng:+.1f} ns)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
