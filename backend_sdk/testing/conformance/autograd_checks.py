"""Conformance area "autograd": for every operator the backend implements natively that has a
derivative formula (``supports_autograd`` in the operator database), the gradients computed on the
backend equal the CPU's (same samples, same output gradients), in float32 and float64."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import backend_sdk as sdk
from backend_sdk.testing.conformance import first_mismatch
from backend_sdk.testing.conformance.operator_checks import (_opinfo, native_opinfos, paired_samples, summarize,
                                                             supported_dtypes)

GRAD_DTYPES = ("float32", "float64")


def pytest_generate_tests(metafunc: Any) -> None:
    if "grad_opinfo" not in metafunc.fixturenames:
        return
    backend = metafunc.config.getoption("backend", None)
    only = metafunc.config.getoption("conformance_op", None)
    ops = []
    if backend:
        ops = [op for op in native_opinfos(backend) if op.supports_autograd and "functional" in op.variants
               and (not only or op.name in only or op.full_name in only)]
    metafunc.parametrize("grad_opinfo", ops or [None], ids=[op.full_name for op in ops] or ["none"])


def _flat(value: Any) -> list:
    return list(value) if isinstance(value, (tuple, list)) else [value]


def _host(t: Any) -> np.ndarray:
    return t.detach().cpu().numpy()


def _grad_output(t: Any, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.0, 1.0, size=tuple(t.shape))


def gradients(op: Any, sample: Any, grad_outputs: list[np.ndarray] | None) -> tuple[list, list]:
    """(gradients w.r.t. the sample's tensors that require grad, output gradients used)."""
    from backend_sdk.testing._opinfo import call_variant

    inputs = [t for t in sample.tensors() if t.requires_grad]
    outs = [o for o in _flat(call_variant(op, "functional", sample))
            if isinstance(o, sdk.Tensor) and o.requires_grad]
    if not inputs or not outs:
        return [], []
    if grad_outputs is None:
        grad_outputs = [_grad_output(o, i) for i, o in enumerate(outs)]
    gos = [sdk.tensor(g, dtype=o.dtype, device=o.device) for g, o in zip(grad_outputs, outs)]
    grads = sdk.autograd.grad(outs, inputs, gos, allow_unused=True)
    return list(grads), grad_outputs


def test_gradients_match_cpu(conformance_backend, grad_opinfo):
    if _opinfo() is None:
        pytest.skip("the operator database (backend_sdk.testing._opinfo) is not available")
    if grad_opinfo is None:
        pytest.skip(f"'{conformance_backend.name}' implements no differentiable operator of the database natively")
    op = grad_opinfo
    if not conformance_backend.devices:
        pytest.skip(f"'{conformance_backend.name}' has no devices")
    device = conformance_backend.devices[-1]
    ok = supported_dtypes(conformance_backend.name)
    dtypes = [getattr(sdk, n) for n in GRAD_DTYPES if n in ok and getattr(sdk, n) in op.dtypes]
    if not dtypes:
        pytest.skip(f"{op.full_name}: no floating dtype of the operator is supported by the device")
    failures, compared = [], 0
    for dtype in dtypes:
        if op.skip_for("functional", dtype, "device") is not None:
            continue
        atol, rtol = op.tolerance(dtype)
        atol, rtol = max(atol, 1e-5 if dtype == sdk.float32 else 1e-9), max(rtol, 1e-4 if dtype == sdk.float32
                                                                          else 1e-7)
        for cpu_sample, dev_sample in paired_samples(op, dtype, device, requires_grad=True):
            label = f"{op.full_name} ({dtype}) on sample {cpu_sample!r}"
            try:
                expected, gos = gradients(op, cpu_sample, None)
            except Exception:  # noqa: BLE001 - the CPU refuses the sample (or has no formula): nothing to compare
                continue
            try:
                actual, _ = gradients(op, dev_sample, gos)
            except Exception as e:  # noqa: BLE001
                failures.append(f"{label}: backward on {device} raised {type(e).__name__}: {e}")
                continue
            compared += 1
            for i, (e, a) in enumerate(zip(expected, actual)):
                if e is None and a is None:
                    continue
                if (e is None) != (a is None):
                    failures.append(f"{label}: gradient {i} is {'None' if a is None else 'defined'} on {device}, "
                                    f"{'None' if e is None else 'defined'} on the CPU")
                    continue
                if str(a.device) != device:
                    failures.append(f"{label}: gradient {i} is on {a.device}, expected on {device}")
                    continue
                msg = first_mismatch(_host(e), _host(a), atol, rtol)
                if msg:
                    failures.append(f"{label}: gradient {i}: {msg}")
    if failures:
        pytest.fail(f"{len(failures)} of {compared} gradients differ from the CPU:\n{summarize(failures)}",
                    pytrace=False)
