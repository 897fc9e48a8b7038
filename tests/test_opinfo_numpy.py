"""Differential tests of every OpInfo (backend_sdk.testing._opinfo) against its numpy reference,
for every supported dtype and variant (functional, method, in-place, out=), on every test device (the
``device`` fixture: cpu, accel, pyaccel).

Per sample: the functional result's values match the reference (cast to the result dtype, with
the OpInfo's tolerances) and its dtype is PyTorch's result dtype; the method form gives the same
values; ``out=`` writes into and returns the given tensor; the in-place form returns its input,
mutated to the functional result when that result can be written into the input (same shape,
castable dtype, PyTorch's canCast) and fails with a clear error otherwise. Unsupported dtypes
raise TypeError/ValueError (never crash). Random operators are checked for determinism under
manual_seed. A hypothesis test varies shapes, strides and values for the elementwise ops.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import backend_sdk
from backend_sdk import _C
from backend_sdk.testing._opinfo import (
    ALL_DTYPES, FLOATING, INTEGRAL, OpInfo, SampleInput, call_variant, make_tensor, numpy_dtype, op_db,
)
from backend_sdk.testing._sample_inputs import copy_with_strides, dtype_name, move, rng_for

settings.register_profile("opinfo", max_examples=8, derandomize=True, deadline=None,
                          suppress_health_check=list(HealthCheck))


def _dn(d: Any) -> str:
    return dtype_name(d)


def _cases() -> list:
    out = []
    for op in op_db:
        if op.random:
            continue
        for dtype in op.dtypes:
            for variant in op.variants:
                skip = op.skip_for(variant, dtype, "numpy")
                marks = [pytest.mark.xfail(strict=True, reason=skip.reason)] if skip else []
                out.append(pytest.param(op, dtype, variant, marks=marks, id=f"{op.full_name}-{_dn(dtype)}-{variant}"))
    return out


def can_cast(src: Any, dst: Any) -> bool:
    """PyTorch's canCast: no float -> integral/bool, no non-bool -> bool."""
    if src in FLOATING and dst not in FLOATING:
        return False
    if src != _C.bool and dst == _C.bool:
        return False
    return True


def _flat(r: Any) -> list:
    return list(r) if isinstance(r, (tuple, list)) else [r]


def _np(t: backend_sdk.Tensor) -> np.ndarray:
    return np.array(t.cpu().numpy(), copy=True)


def _as_f64(a: np.ndarray) -> np.ndarray:
    return a if a.dtype == np.bool_ else a.astype(np.float64)


def assert_values(op: OpInfo, actual: backend_sdk.Tensor, expected: Any, sample: SampleInput, what: str) -> None:
    """actual == expected (cast to actual's dtype) within op's tolerance for actual's dtype; NaNs
    match NaNs. The failure message names the sample and the first mismatching element."""
    exp = np.asarray(expected)
    assert tuple(actual.shape) == exp.shape, f"{what}: shape {tuple(actual.shape)} vs reference {exp.shape} for {sample}"
    with np.errstate(all="ignore"):
        exp = _as_f64(exp.astype(numpy_dtype(actual.dtype)))
    got = _as_f64(_np(actual))
    if actual.dtype in FLOATING:
        atol, rtol = op.tolerance(actual.dtype)
        with np.errstate(all="ignore"):
            ok = np.isclose(got, exp, rtol=rtol, atol=atol, equal_nan=True)
    else:
        ok = got == exp
    if not np.all(ok):
        i = tuple(int(v) for v in np.argwhere(~np.asarray(ok))[0]) if np.ndim(ok) else ()
        raise AssertionError(f"{what}: {int(np.size(ok) - np.count_nonzero(ok))} mismatches; first at {i}: "
                             f"got {got[i]}, reference {exp[i]} (dtype {_dn(actual.dtype)}) for {sample}")


def assert_same(a: Any, b: Any, sample: SampleInput, what: str) -> None:
    for x, y in zip(_flat(a), _flat(b)):
        assert x.dtype == y.dtype and tuple(x.shape) == tuple(y.shape), \
            f"{what}: {x.dtype}{tuple(x.shape)} vs {y.dtype}{tuple(y.shape)} for {sample}"
        gx, gy = _as_f64(_np(x)), _as_f64(_np(y))
        if not np.array_equal(gx, gy, equal_nan=gx.dtype != np.bool_):
            raise AssertionError(f"{what}: values differ for {sample}:\n{gx}\nvs\n{gy}")


def _overlapping(t: backend_sdk.Tensor) -> bool:
    """PyTorch's has_internal_overlap: a stride-0 dim of size > 1 (an empty tensor never overlaps)."""
    return t.numel() > 0 and any(st == 0 and s > 1 for s, st in zip(t.shape, t.stride()))


_prepared_cache: dict = {}


def _prepared(op: OpInfo, dtype: Any, device: str) -> list:
    """(sample, functional result) pairs of op and dtype, computed once for all variants (the
    cache keeps one (op, dtype) at a time; the parametrisation orders cases by op and dtype).
    Samples are never mutated: the in-place check works on copies."""
    key = (id(op), _dn(dtype), device)
    if key not in _prepared_cache:
        _prepared_cache.clear()
        _prepared_cache[key] = [(s, call_variant(op, "functional", s)) for s in op.sample_inputs(device, dtype)]
    return _prepared_cache[key]


@pytest.mark.parametrize("op, dtype, variant", _cases())
def test_against_numpy(device: str, op: OpInfo, dtype: Any, variant: str) -> None:
    n = 0
    for sample, functional in _prepared(op, dtype, device):
        n += 1
        if sample.variants is not None and variant not in sample.variants:
            continue
        if variant == "functional" and op.ref is None:  # values undefined (empty): metadata only
            assert functional.dtype == sample.kwargs.get("dtype", functional.dtype)
        elif variant == "functional":
            inp, args, kwargs = sample.numpy()
            kwargs.pop("device", None)
            expected = op.ref(inp, *args, **kwargs)
            outs, exps = _flat(functional), _flat(expected)
            assert len(outs) == len(exps), f"{len(outs)} outputs vs reference's {len(exps)} for {sample}"
            for i, (a, e) in enumerate(zip(outs, exps)):
                assert_values(op, a, e, sample, f"{op.full_name} output {i}")
            if op.result_dtype is not None:
                want = op.result_dtype(sample)
                assert outs[0].dtype == want, f"result dtype {outs[0].dtype}, PyTorch gives {want} for {sample}"
        elif variant == "method":
            assert_same(call_variant(op, "method", sample), functional, sample, "method vs functional")
        elif variant == "out":
            outs = [backend_sdk.empty(list(f.shape), dtype=f.dtype, device=f.device) for f in _flat(functional)]
            out_arg = tuple(outs) if isinstance(functional, (tuple, list)) else outs[0]
            kw = {k: v for k, v in sample.kwargs.items() if not (op.category == "factory" and k in ("dtype", "device"))}
            s = SampleInput(sample.input, sample.args, {**kw, "out": out_arg}, sample.name)
            r = call_variant(op, "out", s)
            for got, given_out in zip(_flat(r), outs):
                assert got is given_out or got.data_ptr() == given_out.data_ptr(), f"out= did not return out for {sample}"
            assert_same(r, functional, sample, "out= vs functional")
        elif variant == "inplace":
            x = sample.input
            if not isinstance(x, backend_sdk.Tensor):
                continue
            f = _flat(functional)[0]
            ok = tuple(f.shape) == tuple(x.shape) and can_cast(f.dtype, x.dtype) and not _overlapping(x)
            target = copy_with_strides(x)
            s = SampleInput(target, sample.args, sample.kwargs, sample.name)
            if not ok:
                with pytest.raises((ValueError, TypeError, RuntimeError)):
                    call_variant(op, "inplace", s)
                continue
            r = call_variant(op, "inplace", s)
            assert r is target or (r.data_ptr() == target.data_ptr() and tuple(r.stride()) == tuple(target.stride())), \
                f"in-place did not return self for {sample}"
            assert target.dtype == x.dtype
            assert_values(op, target, _np(f.to(x.dtype)) if f.dtype != x.dtype else _np(f), sample, "in-place")
    assert n > 0, f"{op.full_name} has no samples for {dtype}"


# ---- unsupported dtypes fail cleanly --------------------------------------------------------------
def _unsupported() -> list:
    out = []
    for op in op_db:
        if op.category in ("factory",) or op.random or not op.check_unsupported_dtypes:
            continue
        for dtype in ALL_DTYPES:
            if dtype not in op.dtypes:
                out.append(pytest.param(op, dtype, id=f"{op.full_name}-{_dn(dtype)}"))
    return out


# The sample backends refuse bool matrix products at the call, as PyTorch's kernels: accel_sim at launch
# (Note [Host-side dtype checks] in its AccelKernels.cpp), pyaccel in its numpy kernel.


@pytest.mark.parametrize("op, dtype", _unsupported())
def test_unsupported_dtype_raises(device: str, op: OpInfo, dtype: Any) -> None:
    """A dtype outside op.dtypes is rejected with TypeError/ValueError naming the operator (on the
    first sample that has a tensor of that dtype) -- PyTorch rejects it too."""
    for sample in op.sample_inputs(device, dtype):
        if sample.input.numel() == 0 if isinstance(sample.input, backend_sdk.Tensor) else False:
            continue
        with pytest.raises((TypeError, ValueError, NotImplementedError)):
            call_variant(op, "functional", sample)
        if device.startswith("accel"):  # refused at the call: no kernel fault is left for the next sync
            backend_sdk.accel.synchronize()
        return


# ---- hypothesis: shapes, strides and values vary -------------------------------------------------
_ELEMENTWISE = [o for o in op_db if o.category in ("binary", "unary") and not o.name.startswith("__")
                and o.name != "rsub" and o.variant_name != "scalar_self"]


@st.composite
def _layouts(draw: Any, ndim: int) -> str:
    return draw(st.sampled_from(["contiguous", "transposed", "sliced", "expanded"] if ndim else ["contiguous"]))


@pytest.mark.parametrize("op", _ELEMENTWISE, ids=lambda o: o.full_name)
@settings(settings.get_profile("opinfo"))
@given(data=st.data())
def test_elementwise_hypothesis(device: str, op: OpInfo, data: Any) -> None:
    dtype = data.draw(st.sampled_from(list(op.dtypes)), label="dtype")
    seed = data.draw(st.integers(0, 2 ** 16), label="seed")
    rng = rng_for(op.name, seed)
    proto = next(iter(op.sample_inputs_func(op, dtype, rng_for(op.name, "proto"))))
    kwargs = dict(proto.kwargs)
    if op.category == "binary":
        shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=4),
                           label="shapes").input_shapes
    else:
        shapes = (data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4), label="shape"),)
    tensors = []
    for i, shape in enumerate(shapes):
        layout = data.draw(_layouts(len(shape)), label=f"layout{i}")
        # value ranges of the OpInfo's own samples (first sample's tensors) keep domains valid
        ref_t = ([proto.input] + [a for a in proto.args if isinstance(a, backend_sdk.Tensor)])[min(i, len(proto.args))]
        arr = _np(ref_t) if ref_t.numel() else np.zeros(1)
        lo = float(np.min(arr.astype(np.float64))) if arr.size else None
        hi = float(np.max(arr.astype(np.float64))) if arr.size else None
        exclude_zero = bool(arr.size) and not np.any(arr.astype(np.float64) == 0) and (
            op.name in ("div", "remainder", "floor_divide", "reciprocal") and i == len(shapes) - 1)
        tensors.append(move(make_tensor(shape, dtype, rng, low=lo, high=hi, layout=layout, exclude_zero=exclude_zero),
                            device))
    sample = SampleInput(tensors[0], tuple(tensors[1:]), kwargs, "hypothesis")
    result = call_variant(op, "functional", sample)
    inp, args, kw = sample.numpy()
    assert_values(op, result, op.ref(inp, *args, **kw), sample, op.full_name)


# ---- random operators: determinism under manual_seed, range ------------------------------------
def _random_cases() -> list:
    return [pytest.param(op, dtype, id=f"{op.full_name}-{_dn(dtype)}") for op in op_db if op.random
            for dtype in op.dtypes]


def _fresh(sample: SampleInput) -> SampleInput:
    return sample.transform(copy_with_strides)


def _check_range(op: OpInfo, sample: SampleInput, r: backend_sdk.Tensor) -> None:
    if r.numel() == 0:
        return
    v = _np(r).astype(np.float64)
    assert not np.isnan(v).any(), f"{op.full_name}: NaN in {sample}"
    if op.name in ("rand", "rand_like", "uniform_"):
        assert v.min() >= 0 and v.max() <= 1, f"{op.full_name}: values outside [0, 1] for {sample}"
    elif op.name in ("bernoulli", "bernoulli_"):
        assert set(np.unique(v)) <= {0.0, 1.0}, f"{op.full_name}: non-0/1 values for {sample}"
    elif op.name == "exponential_":
        assert v.min() >= 0
    elif op.name in ("randint", "randint_like"):
        low, high = (sample.input, sample.args[0]) if op.name == "randint" and len(sample.args) == 2 else (0, (
            sample.input if op.name == "randint" else sample.args[0]))
        assert v.min() >= low and v.max() < high, f"{op.full_name}: values outside [{low}, {high}) for {sample}"


@pytest.mark.parametrize("op, dtype", _random_cases())
def test_random_ops_are_deterministic_under_manual_seed(device: str, op: OpInfo, dtype: Any) -> None:
    variant = op.variants[0]
    for sample in op.sample_inputs(device, dtype):
        backend_sdk.manual_seed(1234)
        a = call_variant(op, variant, _fresh(sample))
        b_ = call_variant(op, variant, _fresh(sample))
        backend_sdk.manual_seed(1234)
        c = call_variant(op, variant, _fresh(sample))
        for x, y in zip(_flat(a), _flat(c)):
            np.testing.assert_array_equal(_np(x), _np(y), err_msg=f"{op.full_name}: same seed, different values")
        if "dtype" in sample.kwargs:
            assert a.dtype == sample.kwargs["dtype"]
        elif isinstance(sample.input, backend_sdk.Tensor):
            assert a.dtype == sample.input.dtype and tuple(a.shape) == tuple(sample.input.shape)
        _check_range(op, sample, a)
        if a.numel() >= 32 and op.name not in ("bernoulli", "bernoulli_") and dtype != _C.bool:
            assert not np.array_equal(_np(a), _np(b_)), f"{op.full_name}: two draws gave the same values"


_REDUCTIONS = [o for o in op_db if o.name in ("sum", "prod", "mean", "amax", "amin", "var", "std", "logsumexp")]


@pytest.mark.parametrize("op", _REDUCTIONS, ids=lambda o: o.full_name)
@settings(settings.get_profile("opinfo"))
@given(data=st.data())
def test_reduction_hypothesis(device: str, op: OpInfo, data: Any) -> None:
    """Reductions over random shapes, layouts, dim subsets and keepdim against numpy."""
    dtype = data.draw(st.sampled_from(list(op.dtypes)), label="dtype")
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5), label="shape")
    layout = data.draw(st.sampled_from(["contiguous", "transposed", "sliced", "expanded"]), label="layout")
    dims = data.draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=len(shape), unique=True),
                     label="dims")
    keepdim = data.draw(st.booleans(), label="keepdim")
    low, high = (-2, 2) if op.name == "prod" else (None, None)
    x = move(make_tensor(shape, dtype, rng_for(op.name, data.draw(st.integers(0, 2 ** 16), label="seed")),
                         layout=layout, low=low, high=high), device)
    if op.name in ("amax", "amin") or (op.name == "prod" and len(dims) > 1):
        dims = dims if op.name != "prod" else dims[:1]
    kwargs: dict = {"dim": dims if op.name != "prod" else dims[0], "keepdim": keepdim}
    sample = SampleInput(x, (), kwargs, "hypothesis")
    result = call_variant(op, "functional", sample)
    inp, args, kw = sample.numpy()
    assert_values(op, result, op.ref(inp, *args, **kw), sample, op.full_name)
