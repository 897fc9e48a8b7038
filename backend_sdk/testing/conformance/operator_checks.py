"""Conformance area "operators": every operator the backend implements natively (a kernel under its
dispatch key) is checked against the CPU over the operator database's sample inputs: the dtypes
the operator and the device support, 0-d, empty, broadcast and non-contiguous inputs, and the
functional, method, in-place and out= forms. Operators served by the SDK's composites or by the
backend's fallback are listed in the coverage table, not re-checked (the CPU kernels have their
own tests). A mismatch names the first mismatching element (index, expected, actual).

Options: ``--conformance-dtypes all`` checks every dtype (default: a representative subset,
``DEFAULT_DTYPES``, so the area stays fast); ``--conformance-op NAME`` (repeatable) restricts the
operators.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

import numpy as np
import pytest

import backend_sdk as sdk
from backend_sdk.testing.conformance import first_mismatch, operator_coverage
from backend_sdk.testing._sample_inputs import copy_with_strides

#: One dtype per kind by default: float32, float16 (reduced precision), int64, uint8 (unsigned), bool.
DEFAULT_DTYPES = ("float32", "float16", "int64", "uint8", "bool")
#: Variants in the order they are checked.
VARIANT_ORDER = ("functional", "method", "inplace", "out")


def _opinfo() -> Any:
    try:
        from backend_sdk.testing import _opinfo
    except ImportError:  # the operator database is not part of this SDK build
        return None
    return _opinfo


def native_opinfos(backend: str) -> list[Any]:
    """The OpInfos with at least one aten overload that has a kernel of ``backend`` (and no random values)."""
    db = _opinfo()
    if db is None:
        return []
    kinds = operator_coverage(backend).kinds
    chosen = []
    for op in db.op_db:
        if getattr(op, "random", False):
            continue
        if any(kinds.get(o) == "native" for o in op.aten_overloads):
            chosen.append(op)
    return chosen


def _dtype_name(dtype: Any) -> str:
    return str(dtype).split(".")[-1]


def supported_dtypes(backend: str, index: int = 0) -> set[str]:
    """Names of the dtypes the device reports as supported (its properties' bit mask)."""
    from backend_sdk import _runtime

    mask = _runtime.get_device_properties(f"{backend}:{index}")["supported_dtypes"]
    names = set()
    for d in (sdk.uint8, sdk.int8, sdk.int16, sdk.int32, sdk.int64, sdk.float16, sdk.float32, sdk.float64,
              sdk.bool, sdk.bfloat16):
        if mask >> int(_scalar_type_number(d)) & 1:
            names.add(_dtype_name(d))
    return names


def _scalar_type_number(dtype: Any) -> int:
    # The ScalarType enumeration (csrc/backend_sdk/core/ScalarType.h), which numbers the supported_dtypes bits.
    order = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
    return order.index(_dtype_name(dtype))


def dtypes_for(op: Any, config: Any, backend: str) -> list[Any]:
    """The dtypes an OpInfo is checked in on the backend."""
    wanted = config.getoption("conformance_dtypes", None) or "default"
    names = [_dtype_name(d) for d in op.dtypes]
    try:
        device_ok = supported_dtypes(backend)
    except Exception:  # noqa: BLE001
        device_ok = set(names)
    if wanted != "all":
        names = [n for n in names if n in DEFAULT_DTYPES]
        if not names and op.dtypes:
            names = [_dtype_name(op.dtypes[0])]
    return [getattr(sdk, n) for n in names if n in device_ok]


def pytest_generate_tests(metafunc: Any) -> None:
    if "opinfo_variant" not in metafunc.fixturenames:
        return
    backend = metafunc.config.getoption("backend", None)
    only = metafunc.config.getoption("conformance_op", None)
    params, ids = [], []
    if backend:
        for op in native_opinfos(backend):
            if only and op.name not in only and op.full_name not in only:
                continue
            for variant in VARIANT_ORDER:
                if variant in op.variants:
                    params.append((op, variant))
                    ids.append(f"{op.full_name}-{variant}")
    if not params:
        params, ids = [None], ["none"]
    metafunc.parametrize("opinfo_variant", params, ids=ids)


def _flat(value: Any) -> list:
    return list(value) if isinstance(value, (tuple, list)) else [value]


def _to_host(t: Any) -> np.ndarray:
    t = t.detach() if t.requires_grad else t
    if t.device.type != "cpu":
        t = t.cpu()
    if t.dtype == sdk.bfloat16:
        return t.float().numpy()
    return t.numpy()


def _describe(sample: Any) -> str:
    return repr(sample)


def paired_samples(op: Any, dtype: Any, device: str, requires_grad: bool = False) -> Iterable[tuple[Any, Any]]:
    """(CPU sample, device sample) pairs: independent copies of each of the database's samples with the same
    layouts, so that an in-place form run on one never changes the other (or a later sample)."""
    def make(device: str) -> Any:
        def fn(t: Any) -> Any:
            c = copy_with_strides(t, device)
            if requires_grad and c.dtype in (sdk.float16, sdk.bfloat16, sdk.float32, sdk.float64):
                c = c.detach().requires_grad_(True)
            return c
        return fn

    for base in op.sample_inputs("cpu", dtype):
        cpu_sample, dev_sample = base.transform(make("cpu")), base.transform(make(device))
        if not base.tensors():  # a factory: it makes its result on the device its kwargs name
            cpu_sample.kwargs["device"] = "cpu"
            dev_sample.kwargs["device"] = device
        yield cpu_sample, dev_sample


def _call(op: Any, variant: str, sample: Any) -> tuple[Any, BaseException | None]:
    from backend_sdk.testing._opinfo import call_variant

    try:
        return call_variant(op, variant, sample), None
    except Exception as e:  # noqa: BLE001 - compared with the CPU's behaviour
        return None, e


def compare_results(expected: Any, actual: Any, device: str, atol: float, rtol: float,
                    values: bool = True, tolerance: Callable[[Any], tuple[float, float]] | None = None) -> str | None:
    """None if the device's results equal the CPU's; else what differs (first mismatching element).
    ``values=False`` compares only device, dtype and shape (operators whose values are undefined, e.g. empty).
    ``tolerance(dtype)``: (atol, rtol) by the *result's* dtype (the OpInfo's, so per operator), which
    replaces ``atol``/``rtol`` for a floating result: a float result of an integer input (``exp`` of
    int64) is compared with float tolerances, not exactly."""
    exp, act = _flat(expected), _flat(actual)
    if len(exp) != len(act):
        return f"expected {len(exp)} results, got {len(act)}"
    for i, (e, a) in enumerate(zip(exp, act)):
        where = f"result {i}: " if len(exp) > 1 else ""
        if isinstance(e, sdk.Tensor):
            if not isinstance(a, sdk.Tensor):
                return f"{where}expected a Tensor, got {type(a).__name__}"
            if e.device.type == "cpu" and str(a.device) != device:
                return f"{where}the result is on {a.device}, expected on {device}"
            if e.dtype != a.dtype:
                return f"{where}dtype mismatch: expected {e.dtype}, actual {a.dtype}"
            if tuple(e.shape) != tuple(a.shape):
                return f"{where}shape mismatch: expected {tuple(e.shape)}, actual {tuple(a.shape)}"
            tol = tolerance(e.dtype) if tolerance is not None and e.dtype.is_floating_point else (atol, rtol)
            msg = first_mismatch(_to_host(e), _to_host(a), *tol) if values else None
            if msg:
                return where + msg
        elif isinstance(e, float) and isinstance(a, float) and np.isnan(e) and np.isnan(a):
            continue
        elif e != a:
            return f"{where}expected {e!r}, actual {a!r}"
    return None


def check_operator(op: Any, variant: str, device: str, dtypes: Iterable[Any]) -> tuple[int, list[str]]:
    """Runs every sample of ``op`` in ``variant`` on the CPU and on ``device``; returns (number of samples
    compared, failure messages). Expected failures (the OpInfo's documented skips) are not run."""
    failures: list[str] = []
    compared = 0
    for dtype in dtypes:
        if op.skip_for(variant, dtype, "device") is not None:
            continue
        for cpu_sample, dev_sample in paired_samples(op, dtype, device):
            label = f"{op.full_name} ({variant}, {_dtype_name(dtype)}) on sample {_describe(cpu_sample)}"
            expected, cpu_error = _call(op, variant, cpu_sample)
            actual, dev_error = _call(op, variant, dev_sample)
            compared += 1
            if cpu_error is not None:
                if dev_error is None:
                    failures.append(f"{label}: the CPU raised {type(cpu_error).__name__}: {cpu_error}, but "
                                    f"{device} returned a result")
                elif not isinstance(dev_error, type(cpu_error)) and not isinstance(cpu_error, type(dev_error)):
                    failures.append(f"{label}: the CPU raised {type(cpu_error).__name__}: {cpu_error}, {device} "
                                    f"raised {type(dev_error).__name__}: {dev_error}")
                continue
            if dev_error is not None:
                failures.append(f"{label}: {device} raised {type(dev_error).__name__}: {dev_error}")
                continue
            atol, rtol = op.tolerance(dtype)
            values = op.ref is not None  # the database's convention: no reference, values are undefined
            msg = compare_results(expected, actual, device, atol, rtol, values, op.tolerance)
            if msg is None and variant == "inplace":
                if actual is not dev_sample.input:
                    msg = "the in-place form did not return its input"
                else:
                    msg = compare_results(cpu_sample.input, dev_sample.input, device, atol, rtol, values,
                                          op.tolerance)
            if msg is None and variant == "out" and isinstance(actual, sdk.Tensor):
                out = dev_sample.kwargs.get("out")
                if out is not None and actual is not out:
                    msg = "the out= form did not return out"
            if msg is not None:
                failures.append(f"{label}: {msg}")
    return compared, failures


def test_operator_matches_cpu(conformance_backend, opinfo_variant, request):
    """Operators are checked on the backend's last device, so that a kernel that allocates its result on the
    current device (0) instead of its inputs' device is caught."""
    if _opinfo() is None:
        pytest.skip("the operator database (backend_sdk.testing._opinfo) is not available")
    if opinfo_variant is None:
        pytest.skip(f"'{conformance_backend.name}' implements no operator of the operator database natively")
    op, variant = opinfo_variant
    dtypes = dtypes_for(op, request.config, conformance_backend.name)
    if not dtypes:
        pytest.skip(f"{op.full_name}: no dtype of the operator is supported by the device")
    if not conformance_backend.devices:
        pytest.skip(f"'{conformance_backend.name}' has no devices")
    device = conformance_backend.devices[-1]
    compared, failures = check_operator(op, variant, device, dtypes)
    if failures:
        pytest.fail(f"{len(failures)} of {compared} samples differ from the CPU:\n{summarize(failures)}",
                    pytrace=False)


def summarize(failures: list[str], limit: int = 6) -> str:
    """The first failure of each dtype (the part of a message before " on sample"), then others, up to
    ``limit`` lines."""
    firsts, seen = [], set()
    for f in failures:
        key = f.split(" on sample", 1)[0]
        if key not in seen:
            seen.add(key)
            firsts.append(f)
    shown = (firsts + [f for f in failures if f not in firsts])[:limit]
    more = f"\n... and {len(failures) - len(shown)} more" if len(failures) > len(shown) else ""
    return "\n".join(shown) + more
