"""Cost of Python dispatch: a passthrough TorchDispatchMode and a wrapper subclass vs a plain call.

    python benchmarks/bench_python_dispatch.py

Each case adds two 1-element tensors: plainly, under a mode whose __torch_dispatch__ just calls
func, and on a wrapper subclass that unwraps, adds and rewraps. numpy's add is the floor; PyTorch
(CPU build) runs the same cases in the same run when it can be imported, here or through the
interpreter named by $TORCH_PYTHON (default /tmp/tv/bin/python when it exists), so the ratios
compare like with like.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import timeit


def best_us(fn, number: int = 5000, repeat: int = 5) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def cases(lib, mode_base, make_wrapper) -> dict[str, float]:
    """The three cases for a torch-like library (backend_sdk or torch)."""

    class Passthrough(mode_base):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    class Wrapper(lib.Tensor):
        @staticmethod
        def __new__(cls, elem):
            r = make_wrapper(cls, elem.shape, strides=elem.stride(), dtype=elem.dtype, device=elem.device)
            r.elem = elem
            return r

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            out = func(*[a.elem if isinstance(a, Wrapper) else a for a in args], **(kwargs or {}))
            return Wrapper(out)

    a, b = lib.ones(1), lib.ones(1)
    wa, wb = Wrapper(lib.ones(1)), Wrapper(lib.ones(1))
    out = {"plain": best_us(lambda: a + b)}
    with Passthrough():
        out["mode"] = best_us(lambda: a + b)
    out["subclass"] = best_us(lambda: wa + wb)
    return out


def sdk_case() -> dict[str, float]:
    import backend_sdk
    from backend_sdk.utils._python_dispatch import TorchDispatchMode

    return cases(backend_sdk, TorchDispatchMode, backend_sdk.Tensor._make_wrapper_subclass)


def torch_case_here() -> dict[str, float]:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    torch.set_num_threads(1)
    return cases(torch, TorchDispatchMode, torch.Tensor._make_wrapper_subclass)


def torch_case() -> dict[str, float] | None:
    try:
        import torch  # noqa: F401
        return torch_case_here()
    except ImportError:
        pass
    python = os.environ.get("TORCH_PYTHON", "/tmp/tv/bin/python")
    if not os.path.exists(python):
        return None
    run = subprocess.run([python, __file__, "--torch-json"], capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        print(f"(torch run failed: {run.stderr.strip().splitlines()[-1:]})")
        return None
    return json.loads(run.stdout.strip().splitlines()[-1])


def numpy_us() -> float:
    import numpy as np

    a, b = np.ones(1, dtype=np.float32), np.ones(1, dtype=np.float32)
    return best_us(lambda: a + b)


def main() -> None:
    ours = sdk_case()
    theirs = torch_case()
    floor = numpy_us()
    load = os.getloadavg()
    print(f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; numpy a + b: {floor:.2f} us")
    print(f"{'a + b, 1 element, us/call':30s} {'sdk':>8s} {'torch':>8s} {'sdk/torch':>10s} {'sdk/numpy':>10s}")
    for key, label in (("plain", "plain tensors"), ("mode", "under a passthrough mode"),
                       ("subclass", "wrapper subclass")):
        a = ours[key]
        b = theirs.get(key) if theirs else None
        sb = f"{b:8.2f}" if b is not None else f"{'n/a':>8s}"
        ratio = f"{a / b:10.2f}" if b is not None else f"{'':>10s}"
        print(f"{label:30s} {a:8.2f} {sb} {ratio} {a / floor:10.1f}")
    line = f"mode / plain: sdk {ours['mode'] / ours['plain']:.1f}x, subclass / plain: sdk {ours['subclass'] / ours['plain']:.1f}x"
    if theirs:
        line += (f"; torch {theirs['mode'] / theirs['plain']:.1f}x and "
                 f"{theirs['subclass'] / theirs['plain']:.1f}x")
    print(line)


if __name__ == "__main__":
    if "--torch-json" in sys.argv:
        print(json.dumps(torch_case_here()))
    else:
        main()
