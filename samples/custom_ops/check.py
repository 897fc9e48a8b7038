"""Runs opcheck on every sample operator on one device with edge inputs (empty, non-contiguous).

    PYTHONPATH=.:samples/accel_sim python samples/custom_ops/check.py accel path/to/libmuladd.so
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import backend_sdk  # noqa: E402
import sample_ops  # noqa: E402
from backend_sdk.library import opcheck  # noqa: E402


def inputs(device: str, seed: int) -> dict[str, backend_sdk.Tensor]:
    """Named edge inputs of one shape family: regular, empty, transposed, sliced, 0-dim."""
    rng = np.random.default_rng(seed)

    def t(a: np.ndarray) -> backend_sdk.Tensor:
        return backend_sdk.from_numpy(np.ascontiguousarray(a, dtype=np.float32)).to(device)

    base = t(rng.standard_normal((4, 6)))
    return {
        "regular": base,
        "empty": t(np.zeros((0, 6))),
        "transposed": t(rng.standard_normal((6, 4))).t(),
        "sliced": t(rng.standard_normal((4, 12)))[:, ::2],
        "scalar": t(np.array(0.7)),
    }


def check(device: str, cpp_path: str | None = None) -> list[str]:
    """opcheck results of every sample operator on every edge input; returns the failures."""
    failures = []
    xs, ys = inputs(device, 0), inputs(device, 1)
    muladd = sample_ops.load_cpp_op(cpp_path) if cpp_path else None
    for name in xs:
        x, y = xs[name], ys[name]
        cases = [
            (sample_ops.sin_relu, (x,), {}),
            (sample_ops.scale_add_, (x.clone() if name != "transposed" else x.clone().t().t(), y, 0.5), {}),
            (sample_ops.abs_diff_out, (x, y), {"out": backend_sdk.empty(list(x.shape), device=device)}),
            (sample_ops.abs_diff_out, (x, y), {"out": backend_sdk.empty(0, device=device)}),
            (sample_ops.abs_diff, (x, y), {}),
        ]
        if muladd is not None:
            cases.append((muladd, (x, y, x), {}))
        if hasattr(backend_sdk.Tensor, "requires_grad") and x.dtype.is_floating_point:
            # functional operators with inputs that require grad: autograd registration, gradients through trace
            xg = x.detach().clone()
            xg.requires_grad_(True)
            yg = y.detach().clone()
            yg.requires_grad_(True)
            cases.append((sample_ops.sin_relu, (xg,), {}))
            cases.append((sample_ops.abs_diff, (xg, yg), {}))
            if muladd is not None:
                cases.append((muladd, (xg, yg, xg), {}))
        for op, args, kwargs in cases:
            result = opcheck(op, args, kwargs, raise_exception=False)
            for test, outcome in result.items():
                if outcome != "SUCCESS":
                    failures.append(f"{op.__name__} on {name} {device}: {test}: {outcome!r}")
    for n in (0, 5):
        result = opcheck(sample_ops.ramp, (n, 0.5, backend_sdk.device(device)), raise_exception=False)
        for test, outcome in result.items():
            if outcome != "SUCCESS":
                failures.append(f"samples::ramp({n}) on {device}: {test}: {outcome!r}")
    value = sample_ops.ramp(4, 0.5, backend_sdk.device(device))
    if value.device.type != device or value.cpu().tolist() != [0.0, 0.5, 1.0, 1.5]:
        failures.append(f"samples::ramp on {device} gave {value.cpu().tolist()} on {value.device}")
    return failures


if __name__ == "__main__":
    device = sys.argv[1] if len(sys.argv) > 1 else "cpu"
    if device != "cpu":
        __import__(device)
    problems = check(device, sys.argv[2] if len(sys.argv) > 2 else None)
    print("\n".join(problems) if problems else "OK")
    sys.exit(1 if problems else 0)
