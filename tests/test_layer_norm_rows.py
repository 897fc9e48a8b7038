"""native_layer_norm and native_layer_norm_backward on float32 rows (the AVX2 row kernels of LayerNormAvx2.cpp
where the CPU has them, Note [Normalization kernels]) against numpy in float64: row lengths around the vector
width and its tails, with and without weight and bias, every output of the backward, on every test device."""
from __future__ import annotations

import numpy as np
import pytest

import backend_sdk as torch
from backend_sdk import ops

A = ops.aten


def _np(t):
    return t.detach().cpu().numpy().astype(np.float64)


def np_layer_norm(x, w, b, eps):
    x = x.astype(np.float64)
    mu = x.mean(-1, keepdims=True)
    rstd = 1 / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + eps)
    y = (x - mu) * rstd
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y, mu, rstd


def np_layer_norm_backward(g, x, w, mu, rstd):
    g, x = g.astype(np.float64), x.astype(np.float64)
    xhat = (x - mu) * rstd
    gw = g * (w if w is not None else 1.0)
    n = x.shape[-1]
    gi = rstd * (gw - gw.sum(-1, keepdims=True) / n - xhat * (gw * xhat).sum(-1, keepdims=True) / n)
    return gi, (g * xhat).reshape(-1, n).sum(0), g.reshape(-1, n).sum(0)


@pytest.mark.parametrize("n", [1, 7, 8, 9, 33, 512])
@pytest.mark.parametrize("affine", [True, False])
def test_rows_against_numpy(device, n, affine) -> None:
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((2, 3, n)) * 3 + 1).astype(np.float32)
    g = rng.standard_normal((2, 3, n)).astype(np.float32)
    w = rng.uniform(0.5, 2, n).astype(np.float32) if affine else None
    b = rng.standard_normal(n).astype(np.float32) if affine else None
    T = lambda a: None if a is None else torch.tensor(a, device=device)  # noqa: E731
    y, mean, rstd = A.native_layer_norm(T(x), [n], T(w), T(b), 1e-5)
    ry, rmu, rrstd = np_layer_norm(x, w, b, 1e-5)
    assert y.dtype == torch.float32 and tuple(mean.shape) == (2, 3, 1)
    np.testing.assert_allclose(_np(y), ry, rtol=1e-5, atol=2e-5)
    np.testing.assert_allclose(_np(mean), rmu, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(_np(rstd), rrstd, rtol=1e-6)
    wt = T(w) if affine else torch.ones(n, device=device)
    bt = T(b) if affine else torch.zeros(n, device=device)
    gi, gw, gb = A.native_layer_norm_backward(T(g), T(x), [n], mean, rstd, wt, bt, [True, True, True])
    rgi, rgw, rgb = np_layer_norm_backward(g, x, w, _np(mean), _np(rstd))
    np.testing.assert_allclose(_np(gi), rgi, rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(_np(gw), rgw, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(gb), rgb, rtol=1e-5, atol=1e-5)
    # masked outputs stay undefined; grad_input alone is the same
    gi2, gw2, gb2 = A.native_layer_norm_backward(T(g), T(x), [n], mean, rstd, wt, bt, [True, False, False])
    assert gw2 is None and gb2 is None
    np.testing.assert_array_equal(_np(gi2), _np(gi))


def test_float32_agrees_with_float64_and_a_constant_row(device) -> None:
    rng = np.random.default_rng(7)
    x = rng.standard_normal((64, 100)).astype(np.float32)
    x[3] = 2.5  # a constant row: zero variance, output 0 (times weight, plus bias)
    w, b = rng.uniform(0.5, 2, 100).astype(np.float32), rng.standard_normal(100).astype(np.float32)
    y32 = A.native_layer_norm(torch.tensor(x, device=device), [100], torch.tensor(w, device=device),
                              torch.tensor(b, device=device), 1e-5)[0]
    y64 = A.native_layer_norm(torch.tensor(x.astype(np.float64), device=device), [100],
                              torch.tensor(w.astype(np.float64), device=device),
                              torch.tensor(b.astype(np.float64), device=device), 1e-5)[0]
    np.testing.assert_allclose(_np(y32), _np(y64), rtol=1e-5, atol=2e-5)
    np.testing.assert_allclose(_np(y32)[3], b, rtol=1e-6)


def test_many_rows_split_over_threads_are_deterministic(device) -> None:
    rng = np.random.default_rng(8)
    x = torch.tensor(rng.standard_normal((300, 130)).astype(np.float32), device=device)
    g = torch.tensor(rng.standard_normal((300, 130)).astype(np.float32), device=device)
    w, b = torch.ones(130, device=device), torch.zeros(130, device=device)
    _, mean, rstd = A.native_layer_norm(x, [130], w, b, 1e-5)
    first = [_np(t) for t in A.native_layer_norm_backward(g, x, [130], mean, rstd, w, b, [True, True, True])]
    again = [_np(t) for t in A.native_layer_norm_backward(g, x, [130], mean, rstd, w, b, [True, True, True])]
    for p, q in zip(first, again):
        np.testing.assert_array_equal(p, q)
    rgi, rgw, rgb = np_layer_norm_backward(_np(g), _np(x), None, _np(mean), _np(rstd))
    np.testing.assert_allclose(first[1], rgw, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(first[2], rgb, rtol=1e-5, atol=1e-4)
