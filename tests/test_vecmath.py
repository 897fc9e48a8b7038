"""Differential tests of the vectorised transcendental functions (Note [Vector math]) against numpy.

Every float16 and bfloat16 value is tested (exhaustively), float32 and float64 over bit patterns drawn
from the whole range (normals of every exponent, subnormals, zeros, inf, NaN). The reference is numpy in
long double (80-bit on x86-64), so its own error is far below one ulp of the dtype under test; erf, which
numpy lacks, comes from scipy (float64) and mpmath (for float64 results). Bounds: at most 4 ulp for
float32 and float64 (libmvec's documented bound, tighter than PyTorch's float32 tolerance of rtol 1.3e-6,
about 11 ulp) and at most 1 ulp for float16 and bfloat16 (computed in float, rounded once); the composite
activations (silu, gelu) whose formulas cancel are held to PyTorch's default tolerances instead.
The layout does not change a result: contiguous, strided, transposed and out= runs agree bit for bit.
CPU only: these are the CPU kernels' vector paths (a backend's transcendental functions are held to the
OpInfo tolerances in tests/test_opinfo_numpy.py, on every test device).
"""
from __future__ import annotations

import math
from typing import Callable

import ml_dtypes
import numpy as np
import pytest

import backend_sdk
from backend_sdk import _C  # noqa: F401  (the extension must load)

LD = np.longdouble


def _sigmoid_ld(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return LD(1) / (LD(1) + np.exp(-x))


# name -> (sdk function, long-double reference or None for erf)
FUNCS: dict[str, tuple[Callable, Callable | None]] = {
    "exp": (backend_sdk.exp, np.exp),
    "log": (backend_sdk.log, np.log),
    "log1p": (backend_sdk.log1p, np.log1p),
    "expm1": (backend_sdk.expm1, np.expm1),
    "sin": (backend_sdk.sin, np.sin),
    "cos": (backend_sdk.cos, np.cos),
    "tan": (backend_sdk.tan, np.tan),
    "tanh": (backend_sdk.tanh, np.tanh),
    "sigmoid": (backend_sdk.sigmoid, _sigmoid_ld),
    "erf": (backend_sdk.erf, None),
}

NP_DTYPES = {
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "float32": np.float32,
    "float64": np.float64,
}
SDK_DTYPES = {
    "float16": backend_sdk.float16,
    "bfloat16": backend_sdk.bfloat16,
    "float32": backend_sdk.float32,
    "float64": backend_sdk.float64,
}
ULP_BOUND = {"float16": 1.0, "bfloat16": 1.0, "float32": 4.0, "float64": 4.0}


def _inputs(dtype: str) -> np.ndarray:
    """Every 16-bit pattern, or 2^18 (float32) / 2^16 (float64) random bit patterns plus the specials."""
    if dtype in ("float16", "bfloat16"):
        return np.arange(1 << 16, dtype=np.uint16).view(NP_DTYPES[dtype])
    rng = np.random.default_rng(18)
    if dtype == "float32":
        bits = rng.integers(0, 1 << 32, size=1 << 18, dtype=np.uint64).astype(np.uint32).view(np.float32)
        sub = np.arange(1, 1 << 12, dtype=np.uint32).view(np.float32)  # smallest subnormals
        big_sub = (np.uint32(0x007FFFFF) - np.arange(1 << 10, dtype=np.uint32)).view(np.float32)
        extra = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 88.72283, 88.72284, -103.97, -87.33655,
                          np.finfo(np.float32).max, np.finfo(np.float32).tiny, 1e-30, 105414.3, 1e30], dtype=np.float32)
        x = np.concatenate([bits, sub, -sub, big_sub, extra])
    else:
        bits = rng.integers(0, 1 << 63, size=1 << 16, dtype=np.uint64)
        sign = rng.integers(0, 2, size=1 << 16, dtype=np.uint64) << np.uint64(63)
        x = (bits | sign).view(np.float64)
        sub = np.arange(1, 1 << 10, dtype=np.uint64).view(np.float64)
        extra = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 709.78, 709.79, -745.1, -708.4,
                          np.finfo(np.float64).max, np.finfo(np.float64).tiny, 1e-300, 1e22, 1e300])
        x = np.concatenate([x, sub, -sub, extra])
    return x


def _ulp_errors(got: np.ndarray, ref: np.ndarray, dtype: str) -> np.ndarray:
    """|got - ref| in ulps of the dtype at ref (NaN where exactly one side is NaN, 0 where they agree)."""
    t = NP_DTYPES[dtype]
    g = got.astype(LD)
    info = ml_dtypes.finfo(t) if dtype == "bfloat16" else np.finfo(t)
    tiny_ulp = LD(float(info.smallest_subnormal))
    max_v = LD(float(info.max))
    # ulp at |ref|: 2^(e - mantissa bits), never below the subnormal spacing; past max, the last binade's.
    a = np.minimum(np.abs(ref), max_v)
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.floor(np.log2(np.where(a > 0, a, LD(1))))
        ulp = np.maximum(np.exp2(e - LD(info.nmant)), tiny_ulp)
        err = np.abs(g - ref) / ulp
    same = (g == ref) | (np.isnan(g) & np.isnan(ref))
    # A result that rounds to the same dtype value as the reference (inf included) is exact.
    with np.errstate(over="ignore", invalid="ignore"):
        rounded = ref.astype(np.float64).astype(t).astype(LD)
    same |= (g == rounded) | (np.isnan(g) & np.isnan(rounded))
    err = np.where(same, 0, err)
    return np.where(np.isnan(g) != np.isnan(ref), np.inf, err)


def _reference(name: str, x: np.ndarray, dtype: str) -> np.ndarray:
    ref_fn = FUNCS[name][1]
    if ref_fn is not None:
        with np.errstate(all="ignore"):
            return ref_fn(x.astype(LD))
    if dtype == "float64":
        mpmath = pytest.importorskip("mpmath")
        mpmath.mp.prec = 80
        return np.array([LD(float(mpmath.erf(mpmath.mpf(float(v))))) if np.isfinite(v) else LD(math.erf(v))
                         for v in x.astype(np.float64)], dtype=LD)
    special = pytest.importorskip("scipy.special")
    return special.erf(x.astype(np.float64)).astype(LD)


def _sdk(name: str, x: np.ndarray, dtype: str) -> np.ndarray:
    out = FUNCS[name][0](backend_sdk.from_numpy(np.ascontiguousarray(x)))
    assert out.dtype == SDK_DTYPES[dtype]
    return out.numpy()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("dtype", list(NP_DTYPES))
@pytest.mark.parametrize("name", list(FUNCS))
def test_within_ulp_bound_over_whole_range(name: str, dtype: str) -> None:
    x = _inputs(dtype)
    if name == "erf" and dtype == "float64":
        x = np.concatenate([x[:: 32], x[-2100:]])  # mpmath is slow: every 32nd pattern, all the specials
    got = _sdk(name, x, dtype)
    ref = _reference(name, x, dtype)
    if name == "sigmoid":
        # 1 / (1 + exp(-x)) is 0 once exp(-x) overflows, as PyTorch's sigmoid (torch.sigmoid(-89.3) == 0
        # in float32 although the value is 1.6e-39): there the result must be 0, elsewhere within the bound.
        with np.errstate(over="ignore"):
            flushed = np.isinf(np.exp(-x.astype(np.float32 if dtype != "float64" else np.float64)))
        assert np.all(got[flushed & ~np.isnan(x)] == 0), "sigmoid: 0 where exp(-x) overflows"
        ref = np.where(flushed, LD(0), ref)
    err = _ulp_errors(got, ref, dtype)
    worst = int(np.argmax(err))
    assert err[worst] <= ULP_BOUND[dtype], (
        f"{name}({x[worst]!r}) as {dtype}: got {got[worst]!r}, reference {float(ref[worst])!r}: "
        f"{err[worst]:.2f} ulp > {ULP_BOUND[dtype]}")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(FUNCS))
def test_specials_exact(name: str, dtype: str) -> None:
    """inf, NaN and signed zeros give exactly what the C library gives (IEEE 754 / C99 Annex F)."""
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0], dtype=NP_DTYPES[dtype])
    got = _sdk(name, x, dtype)
    with np.errstate(all="ignore"):
        if name == "erf":
            want = np.array([math.erf(float(v)) if not np.isnan(v) else np.nan for v in x])
        elif name == "sigmoid":
            want = 1 / (1 + np.exp(-x.astype(np.float64)))
        else:
            want = getattr(np, name)(x.astype(np.float64))
    want = want.astype(NP_DTYPES[dtype])
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got[3:]), np.signbit(want[3:])), f"{name}: sign of zero"


TOLERANCES = {  # PyTorch's default assert_close tolerances per dtype
    "float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7),
}


@pytest.mark.parametrize("dtype", list(NP_DTYPES))
@pytest.mark.parametrize("name", ["silu", "gelu", "gelu_tanh"])
def test_activations_match_reference(name: str, dtype: str) -> None:
    x = _inputs(dtype)
    x = x[np.isfinite(x.astype(np.float64)) & (np.abs(x.astype(np.float64)) < 1e4)]
    xl = x.astype(LD)
    F = backend_sdk.nn.functional
    with np.errstate(all="ignore"):
        if name == "silu":
            ref, fn = xl * _sigmoid_ld(xl), F.silu
        elif name == "gelu":
            special = pytest.importorskip("scipy.special")
            ref, fn = xl / 2 * (1 + special.erf(x.astype(np.float64) / math.sqrt(2)).astype(LD)), F.gelu
        else:
            k = LD(math.sqrt(2 / math.pi))
            ref = xl / 2 * (1 + np.tanh(k * (xl + LD(0.044715) * xl ** 3)))
            fn = lambda t: F.gelu(t, approximate="tanh")  # noqa: E731
    t = backend_sdk.from_numpy(np.ascontiguousarray(x))
    got = fn(t).to(backend_sdk.float64).numpy()
    rtol, atol = TOLERANCES[dtype]
    np.testing.assert_allclose(got, ref.astype(np.float64), rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", list(FUNCS) + ["silu", "gelu"])
def test_layout_does_not_change_results(name: str) -> None:
    """Contiguous, strided, transposed, float16-converted and out= runs give the same bits."""
    fn = getattr(backend_sdk.nn.functional, name) if name in ("silu", "gelu") else FUNCS[name][0]
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((37, 29)) * 4).astype(np.float32)
    t = backend_sdk.from_numpy(a)
    whole = fn(t).numpy()
    np.testing.assert_array_equal(fn(t.t()).numpy(), whole.T)
    np.testing.assert_array_equal(fn(t[:, ::3]).numpy(), whole[:, ::3])
    np.testing.assert_array_equal(fn(t[5:6, 7:8]).numpy(), whole[5:6, 7:8])  # one element: the tail path
    flat = fn(t.reshape(-1)).numpy()
    np.testing.assert_array_equal(flat.reshape(37, 29), whole)
    if name not in ("silu", "gelu"):
        out = backend_sdk.empty(29, 37)
        fn(t.t(), out=out)
        np.testing.assert_array_equal(out.numpy(), whole.T)
    h = t.to(backend_sdk.float16)
    want_h = fn(h.to(backend_sdk.float32)).to(backend_sdk.float16).numpy()
    np.testing.assert_array_equal(fn(h).numpy(), want_h)


def test_threads_split_runs_consistently() -> None:
    """A 16M-element run (split across the pool's threads) equals the same values computed in small pieces."""
    rng = np.random.default_rng(4)
    a = (rng.standard_normal(1 << 20) * 10).astype(np.float32)
    whole = backend_sdk.exp(backend_sdk.from_numpy(a)).numpy()
    parts = np.concatenate([backend_sdk.exp(backend_sdk.from_numpy(a[i:i + 1000])).numpy()
                            for i in range(0, a.size, 1000)])
    np.testing.assert_array_equal(whole, parts)
