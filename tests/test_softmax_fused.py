"""The fused softmax operators (ops/Softmax.cpp, Note [Fused softmax]): aten::_softmax, aten::_log_softmax,
aten::_softmax_backward_data and aten::_log_softmax_backward_data against numpy in float64, on every test
device; the row kernels (last dim, float32: AVX2 where the CPU has it) and the block loop (other dims, float64)
both; the derivative formulas (first and second order) and PyTorch's node names and errors."""
from __future__ import annotations

import numpy as np
import pytest

import backend_sdk as torch
from backend_sdk import ops
from backend_sdk.autograd import gradcheck, gradgradcheck

A = ops.aten


def _np(t):
    return t.detach().cpu().numpy()


def np_softmax(x, axis, log=False):
    x = np.asarray(x, np.float64)
    s = x - x.max(axis=axis, keepdims=True)
    lse = np.log(np.exp(s).sum(axis=axis, keepdims=True))
    return s - lse if log else np.exp(s - lse)


def np_softmax_backward(g, y, axis, log=False):
    g, y = np.asarray(g, np.float64), np.asarray(y, np.float64)
    if log:
        return g - np.exp(y) * g.sum(axis=axis, keepdims=True)
    return y * (g - (g * y).sum(axis=axis, keepdims=True))


# Lengths around the vector width (8) and its tails, and a long row (the 50257-way vocabulary's kind).
SHAPES_DIMS = [((3, 1), -1), ((4, 7), 1), ((2, 8), -1), ((5, 9), 1), ((3, 33), -1), ((2, 3, 17), 0),
               ((2, 3, 17), 1), ((2, 3, 17), 2), ((2, 5000), 1)]


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("shape,dim", SHAPES_DIMS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_forward_and_backward_data_against_numpy(device, log, shape, dim, dtype) -> None:
    rng = np.random.default_rng(len(shape) * 10 + dim)
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    fwd = A._log_softmax if log else A._softmax
    bwd = A._log_softmax_backward_data if log else A._softmax_backward_data
    tol = dict(rtol=2e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-14)
    y = fwd(torch.tensor(x, device=device), dim, False)
    assert y.dtype == getattr(torch, dtype) and tuple(y.shape) == shape and y.device.type == device
    np.testing.assert_allclose(_np(y), np_softmax(x, dim, log), **tol)
    gi = bwd(torch.tensor(g, device=device), y, dim, getattr(torch, dtype))
    assert gi.dtype == getattr(torch, dtype)
    np.testing.assert_allclose(_np(gi), np_softmax_backward(g, _np(y), dim, log), **tol)


def test_rows_sum_to_one_and_non_contiguous_input(device) -> None:
    x = torch.tensor(np.random.default_rng(1).standard_normal((64, 40)).astype(np.float32), device=device)
    xt = x.t()  # non-contiguous: the kernel works on a contiguous copy
    y = A._softmax(xt, 1, False)
    np.testing.assert_allclose(_np(y).sum(1), np.ones(40), rtol=1e-6)
    np.testing.assert_allclose(_np(y), np_softmax(_np(x).T, 1), rtol=2e-5, atol=1e-7)
    # softmax.int / log_softmax.int decompose into the fused operators: the same bits
    assert np.array_equal(_np(torch.softmax(xt, 1)), _np(y))
    assert np.array_equal(_np(torch.log_softmax(x, 0)), _np(A._log_softmax(x, 0, False)))


def test_special_values_as_pytorch(device) -> None:
    nan, inf = float("nan"), float("inf")
    x = torch.tensor([[nan, 1.0, 2.0], [-inf, -inf, -inf], [inf, 1.0, 0.0], [-inf, 0.0, 0.0]], device=device)
    y = _np(A._softmax(x, 1, False))
    assert np.isnan(y[:3]).all()  # a NaN, a row of -inf, +inf - inf: the whole row is NaN, as PyTorch's
    np.testing.assert_allclose(y[3], [0.0, 0.5, 0.5])
    ly = _np(A._log_softmax(x, 1, False))
    assert np.isnan(ly[:3]).all()
    np.testing.assert_allclose(ly[3], [-inf, np.log(0.5), np.log(0.5)])
    # far below the max: exact down to exp(-87) (the smallest normal float32 result), under FLT_MIN below it
    row = np.array([[0.0, -20.0, -86.0, -88.0, -1e30, -inf, 1.0, -3.0, -50.0]], np.float32)
    y = _np(A._softmax(torch.tensor(row, device=device), 1, False))
    ref = np_softmax(row, 1)
    np.testing.assert_allclose(y[0, [0, 1, 2, 6, 7, 8]], ref[0, [0, 1, 2, 6, 7, 8]], rtol=1e-5)
    assert (y[0, 3:6] < 1.2e-38).all() and (y[0, 4:6] == 0).all()
    np.testing.assert_allclose(_np(A._log_softmax(torch.tensor(row, device=device), 1, False)), np_softmax(row, 1, True),
                               rtol=1e-6)
    # very large and very small logits do not overflow
    big = torch.tensor([[1e4, 0.0], [-1e4, 0.0]], device=device)
    np.testing.assert_allclose(_np(A._softmax(big, 1, False)), [[1.0, 0.0], [0.0, 1.0]])


def test_zero_dim_empty_and_low_precision(device) -> None:
    s = torch.tensor(3.0, device=device)
    assert _np(A._softmax(s, 0, False)) == 1.0 and _np(A._log_softmax(s, -1, False)) == 0.0
    e = torch.zeros((0, 5), device=device)
    assert tuple(A._softmax(e, 1, False).shape) == (0, 5)
    assert tuple(A._softmax_backward_data(e, e, 1, torch.float32).shape) == (0, 5)
    x = np.random.default_rng(2).standard_normal((3, 20)).astype(np.float32)
    for dt, rtol in ((torch.float16, 2e-3), (torch.bfloat16, 1.6e-2)):
        t = torch.tensor(x, device=device).to(dt)
        y = A._softmax(t, 1, False)
        assert y.dtype == dt  # computed in float32, rounded once
        np.testing.assert_allclose(_np(y.float()), np_softmax(_np(t.float()), 1), rtol=rtol, atol=1e-3)
    h = torch.tensor(x, device=device).half()
    y32 = A._softmax(h, 1, True)  # half_to_float: a float32 result
    assert y32.dtype == torch.float32
    np.testing.assert_allclose(_np(y32), np_softmax(_np(h.float()), 1), rtol=1e-5, atol=1e-7)
    gi = A._softmax_backward_data(y32, y32, 1, torch.float16)  # the gradient has the input's dtype
    assert gi.dtype == torch.float16


def test_meta_shapes_and_dtypes() -> None:
    x = torch.empty((4, 6), device="meta")
    assert A._softmax(x, 1, False).device.type == "meta"
    assert tuple(A._log_softmax(x, 0, False).shape) == (4, 6)
    assert A._softmax(x.half(), 1, True).dtype == torch.float32
    assert A._softmax_backward_data(x, x, 1, torch.float64).dtype == torch.float64
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"):
        A._softmax(x, 2, False)


@pytest.mark.parametrize("log", [False, True])
def test_autograd_formulas_first_and_second_order(device, log) -> None:
    x = torch.tensor(np.random.default_rng(3).standard_normal((3, 5)), device=device, requires_grad=True)
    fn = torch.log_softmax if log else torch.softmax
    y = fn(x, 1)
    assert y.grad_fn.name() == ("LogSoftmaxBackward0" if log else "SoftmaxBackward0")  # PyTorch's names
    g = torch.tensor(np.random.default_rng(4).standard_normal((3, 5)), device=device)
    (gx,) = torch.autograd.grad(y, x, g)
    np.testing.assert_allclose(_np(gx), np_softmax_backward(_np(g), _np(y), 1, log), rtol=1e-12, atol=1e-14)
    assert gradcheck(lambda t: fn(t, 1), (x,))
    assert gradcheck(lambda t: fn(t, 0), (x,))
    assert gradgradcheck(lambda t: fn(t, 1), (x,))
    # the backward operators' own formulas (both arguments differentiable)
    gout = torch.tensor(np.random.default_rng(5).standard_normal((3, 5)), device=device, requires_grad=True)
    out = fn(x, 1).detach().requires_grad_()
    bwd = A._log_softmax_backward_data if log else A._softmax_backward_data
    r = bwd(gout, out, 1, torch.float64)
    assert r.grad_fn.name() == ("LogSoftmaxBackwardDataBackward0" if log else "SoftmaxBackwardDataBackward0")
    assert gradcheck(lambda a, b: bwd(a, b, 1, torch.float64), (gout, out))


def test_bad_inputs_name_the_operator(device) -> None:
    x = torch.ones((3, 4), device=device)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"):
        A._softmax(x, 2, False)
    with pytest.raises(IndexError, match="Dimension out of range"):
        A._log_softmax_backward_data(x, x, -3, torch.float32)
    with pytest.raises(NotImplementedError, match="\"softmax_lastdim_kernel_impl\" not implemented for 'Long'"):
        A._softmax(torch.ones((3, 4), dtype=torch.int64, device=device), 1, False)
    with pytest.raises(NotImplementedError, match="\"log_softmax_kernel_impl\" not implemented for 'Long'"):
        A._log_softmax(torch.ones((3, 4), dtype=torch.int64, device=device), 0, False)
    with pytest.raises(ValueError, match="_softmax: conversion is supported for Half type only"):
        A._softmax(x, 1, True)
    with pytest.raises(RuntimeError, match=r"Expected tensor for argument #1 'grad' to have same size as tensor for "
                                           r"argument #2 'output'; but \[3, 4\] does not equal \[2, 4\] \(while "
                                           r"checking arguments for softmax_backward\)"):
        A._softmax_backward_data(x, x[:2], 1, torch.float32)
    with pytest.raises(TypeError, match="_log_softmax_backward_data: expected floating point"):
        A._log_softmax_backward_data(x.long(), x, 1, torch.float32)
