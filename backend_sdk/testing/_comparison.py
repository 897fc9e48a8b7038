"""``assert_close``: PyTorch's tensor comparison, tolerances and mismatch messages."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Callable

import numpy as np

from .. import _C

__all__ = ["assert_close"]

# PyTorch's default (rtol, atol) per dtype; integers and bool compare exactly.
_DEFAULT_TOLERANCES = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
}


def _dtype_name(dtype: Any) -> str:
    return str(dtype).replace("backend_sdk.", "")


def default_tolerances(*dtypes: Any) -> tuple[float, float]:
    """The largest default (rtol, atol) among dtypes."""
    rtol = atol = 0.0
    for d in dtypes:
        r, a = _DEFAULT_TOLERANCES.get(_dtype_name(d), (0.0, 0.0))
        rtol, atol = max(rtol, r), max(atol, a)
    return rtol, atol


def _is_tensor(v: Any) -> bool:
    return isinstance(v, _C.TensorBase)


def _to_numpy(t: Any) -> np.ndarray:
    t = t.detach() if hasattr(t, "detach") else t
    if not t.is_cpu:
        t = t.cpu()
    arr = np.array(t.numpy(), copy=True)
    if arr.dtype.kind == "V" or str(arr.dtype) == "bfloat16":
        arr = arr.astype(np.float64)
    return arr


def _fail(msg: str | Callable[[str], str] | None, generated: str, exc: type = AssertionError) -> None:
    if callable(msg):
        raise exc(msg(generated))
    raise exc(generated if msg is None else msg)


def _compare_arrays(a: np.ndarray, e: np.ndarray, rtol: float, atol: float, equal_nan: bool, exact: bool,
                    msg: Any, kind: str = "Tensor-likes") -> None:
    a64, e64 = a.astype(np.float64), e.astype(np.float64)
    close = np.isclose(a64, e64, rtol=rtol, atol=atol, equal_nan=equal_nan) if a64.size else np.ones(0, bool)
    if a.dtype == np.bool_ or e.dtype == np.bool_:
        close = a == e
    if close.all():
        return
    n_bad, n = int((~close).sum()), close.size
    diff = np.abs(a64 - e64)
    diff_masked = np.where(close, 0.0, np.nan_to_num(diff, nan=np.inf))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = diff / np.abs(e64)
    rel_masked = np.where(close, 0.0, np.nan_to_num(rel, nan=np.inf))
    ia = np.unravel_index(int(np.argmax(np.where(close, -1.0, diff_masked))), a.shape) if a.shape else ()
    ir = np.unravel_index(int(np.argmax(np.where(close, -1.0, rel_masked))), a.shape) if a.shape else ()
    da, dr = float(diff[ia]) if a.shape else float(diff), float(rel[ir]) if a.shape else float(rel)

    def num(x: float) -> str:
        if exact and math.isfinite(x) and x == int(x):
            return str(int(x))
        return str(x)

    verb = "equal" if exact else "close"
    if not a.shape and not e.shape:  # 0-dim tensors are reported as scalars, as PyTorch does
        got, want = a.item(), e.item()
        allowed_a, allowed_r = ("", "") if exact else (f" (up to {atol} allowed)", f" (up to {rtol} allowed)")
        _fail(msg, f"Scalars are not {verb}!\n\nExpected {want} but got {got}.\nAbsolute difference: {num(da)}"
                   f"{allowed_a}\nRelative difference: {num(dr)}{allowed_r}")
    lines = [f"{kind} are not {verb}!", "", f"Mismatched elements: {n_bad} / {n} ({100.0 * n_bad / n:.1f}%)"]
    idx_a = "(" + ", ".join(str(int(i)) for i in ia) + ("," if len(ia) == 1 else "") + ")"
    idx_r = "(" + ", ".join(str(int(i)) for i in ir) + ("," if len(ir) == 1 else "") + ")"
    if exact:
        lines.append(f"Greatest absolute difference: {num(da)} at index {idx_a}")
        lines.append(f"Greatest relative difference: {num(dr)} at index {idx_r}")
    else:
        lines.append(f"Greatest absolute difference: {num(da)} at index {idx_a} (up to {atol} allowed)")
        lines.append(f"Greatest relative difference: {num(dr)} at index {idx_r} (up to {rtol} allowed)")
    _fail(msg, "\n".join(lines))


def assert_close(
    actual: Any,
    expected: Any,
    *,
    allow_subclasses: bool = True,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = False,
    check_device: bool = True,
    check_dtype: bool = True,
    check_layout: bool = True,
    check_stride: bool = False,
    msg: str | Callable[[str], str] | None = None,
) -> None:
    """Asserts that actual and expected are close (PyTorch's ``torch.testing.assert_close``).

    Tensors are compared elementwise with ``|actual - expected| <= atol + rtol * |expected|``; without
    rtol/atol the defaults of the dtype apply (float32: 1.3e-6 / 1e-5, float64: 1e-7 / 1e-7, float16:
    1e-3 / 1e-5, bfloat16: 1.6e-2 / 1e-5, exact for integers and bool). Sequences and mappings are
    compared element by element; numbers too.
    """
    if (rtol is None) != (atol is None):
        raise ValueError(
            f"Both 'rtol' and 'atol' must be either specified or omitted, but got no {'rtol' if rtol is None else 'atol'}."
        )
    _compare(actual, expected, rtol, atol, equal_nan, check_device, check_dtype, check_stride, msg, [])


def _compare(actual: Any, expected: Any, rtol: Any, atol: Any, equal_nan: bool, check_device: bool,
             check_dtype: bool, check_stride: bool, msg: Any, path: list) -> None:
    where = "".join(f"[{p!r}]" for p in path)
    if _is_tensor(actual) or _is_tensor(expected):
        if not (_is_tensor(actual) and _is_tensor(expected)):
            raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and "
                            f"{type(expected)}.")
        suffix = f" at {where}" if where else ""
        if tuple(actual.shape) != tuple(expected.shape):
            _fail(msg, f"The values for attribute 'shape' do not match: {actual.shape} != {expected.shape}{suffix}.")
        if check_device and actual.device != expected.device:
            _fail(msg, f"The values for attribute 'device' do not match: {actual.device} != {expected.device}{suffix}.")
        if check_dtype and actual.dtype != expected.dtype:
            _fail(msg, f"The values for attribute 'dtype' do not match: {actual.dtype} != {expected.dtype}{suffix}.")
        if check_stride and tuple(actual.stride()) != tuple(expected.stride()):
            _fail(msg, f"The values for attribute 'stride()' do not match: {tuple(actual.stride())} != "
                  f"{tuple(expected.stride())}{suffix}.")
        if rtol is None:
            r, a = default_tolerances(actual.dtype, expected.dtype)
        else:
            r, a = rtol, atol
        exact = r == 0 and a == 0
        _compare_arrays(_to_numpy(actual), _to_numpy(expected), r, a, equal_nan, exact, msg)
        return
    if isinstance(actual, (bool, int, float)) and isinstance(expected, (bool, int, float)):
        if check_dtype and type(actual) is not type(expected):
            _fail(msg, f"The values for attribute 'dtype' do not match: {type(actual).__name__} != "
                  f"{type(expected).__name__}.")
        if rtol is None:
            r, a = ((1.3e-6, 1e-5) if isinstance(actual, float) or isinstance(expected, float) else (0.0, 0.0))
        else:
            r, a = rtol, atol
        if (equal_nan and isinstance(actual, float) and isinstance(expected, float) and math.isnan(actual)
                and math.isnan(expected)):
            return
        diff = abs(actual - expected)
        if diff <= a + r * abs(expected):
            return
        if r == 0 and a == 0:
            _fail(msg, f"Scalars are not equal!\n\nExpected {expected} but got {actual}.\nAbsolute difference: "
                  f"{diff}\nRelative difference: {diff / abs(expected) if expected else math.inf}")
        _fail(msg, f"Scalars are not close!\n\nExpected {expected} but got {actual}.\nAbsolute difference: {diff} "
              f"(up to {a} allowed)\nRelative difference: {diff / abs(expected) if expected else math.inf} "
              f"(up to {r} allowed)")
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        if set(actual.keys()) != set(expected.keys()):
            _fail(msg, f"The keys of the mappings do not match:\nMissing keys in the actual mapping: "
                  f"{sorted(set(expected) - set(actual))}\nAdditional keys in the actual mapping: "
                  f"{sorted(set(actual) - set(expected))}")
        for k in expected:
            _compare(actual[k], expected[k], rtol, atol, equal_nan, check_device, check_dtype, check_stride, msg,
                     path + [k])
        return
    if (isinstance(actual, Sequence) and isinstance(expected, Sequence) and not isinstance(actual, str)
            and not isinstance(expected, str)):
        if len(actual) != len(expected):
            _fail(msg, f"The length of the sequences mismatch: {len(actual)} != {len(expected)}")
        for i, (x, y) in enumerate(zip(actual, expected)):
            _compare(x, y, rtol, atol, equal_nan, check_device, check_dtype, check_stride, msg, path + [i])
        return
    if actual is None and expected is None:
        return
    if actual != expected:
        raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and {type(expected)}.")
