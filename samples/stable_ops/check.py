"""Checks a built samples/stable_ops library: values, errors and opcheck on cpu and on accel (when loaded).

``python samples/stable_ops/check.py LIBRARY`` loads the library into this process's SDK (whatever SDK
``backend_sdk`` imports: tools/stable_abi_check.sh runs it on one built with another TensorImpl layout)
and prints ``OK`` when every check passes. tests/test_stable_abi.py imports ``check`` and calls it.
"""
from __future__ import annotations

import sys

import numpy as np

import backend_sdk
from backend_sdk.library import opcheck

__all__ = ["check", "load"]


def load(path: str) -> None:
    """Loads the library with ``backend_sdk.ops.load_library`` (its registration errors: RuntimeError)."""
    backend_sdk.ops.load_library(path)


def check(device: str) -> None:
    """Raises AssertionError (or the operator's error) when a check fails on ``device``."""
    ops = backend_sdk.ops.stable_ops
    rng = np.random.default_rng(0)
    an = rng.standard_normal((3, 5)).astype(np.float32)
    bn = rng.standard_normal((3, 5)).astype(np.float32)
    a = backend_sdk.from_numpy(an).to(device)
    b = backend_sdk.from_numpy(bn).to(device)
    out = ops.scaled_add(a, b, 0.5)
    assert str(out.device).startswith(device), out.device
    np.testing.assert_allclose(out.cpu().numpy(), an + 0.5 * bn, rtol=1e-6)
    # a non-contiguous input (transposed views) and the schema's default alpha=1.0
    at, bt = a.t(), b.t()
    np.testing.assert_allclose(ops.scaled_add(at, bt).cpu().numpy(), (an + bn).T, rtol=1e-6)
    for dtype in ("float64", "float16", "bfloat16"):
        x = a.to(getattr(backend_sdk, dtype))
        r = ops.scaled_add(x, x, 2.0)
        assert r.dtype == x.dtype
        np.testing.assert_allclose(r.cpu().to(backend_sdk.float32).numpy(), x.cpu().to(backend_sdk.float32).numpy() * 3, rtol=1e-2)
    y = a.clone()
    r = ops.axpy_(y, b, -2.0)
    np.testing.assert_allclose(y.cpu().numpy(), an - 2.0 * bn, rtol=1e-6)
    assert ops.numel_plus(a, 7) == 22
    try:
        ops.scaled_add(a, b[0], 1.0)
    except ValueError as e:
        assert "stable_ops::scaled_add: a and b must have the same sizes, got [3, 5] and [5]" in str(e), str(e)
    else:
        raise AssertionError("scaled_add accepted mismatched sizes")
    try:
        ops.scaled_add(a.to(backend_sdk.int64), b.to(backend_sdk.int64), 1.0)
    except TypeError as e:
        assert "expected a floating-point dtype, got int64" in str(e), str(e)
    else:
        raise AssertionError("scaled_add accepted int64")
    opcheck(ops.scaled_add.default, (a, b, 0.25))
    opcheck(ops.scaled_add.default, (at, bt, -1.0))
    # axpy_ returns its mutated argument (-> Tensor(a!)): as in PyTorch, every check but the AOT-dispatch
    # one applies; functionalization refuses custom operators whose outputs alias an input.
    opcheck(ops.axpy_.default, (a.clone(), b, 3.0),
            test_utils=("test_schema", "test_autograd_registration", "test_faketensor"))
    try:
        opcheck(ops.axpy_.default, (a.clone(), b, 3.0), test_utils="test_aot_dispatch_dynamic")
    except Exception as e:  # noqa: BLE001 (opcheck's OpCheckError)
        assert "whose output has alias annotations" in str(e), str(e)
    else:
        raise AssertionError("opcheck's AOT-dispatch check accepted an aliasing output of a custom operator")


def main(argv: list[str]) -> int:
    load(argv[1])
    devices = ["cpu"]
    if "accel" in sys.modules or len(argv) > 2 and argv[2] == "accel":
        import accel  # noqa: F401

        devices.append("accel")
    for device in devices:
        check(device)
        print(f"stable_ops: {device} passed")
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
