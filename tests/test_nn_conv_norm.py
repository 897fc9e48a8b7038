"""nn operators of issue 20 against numpy: convolution, normalization, pooling, embedding, dropout,
attention, padding, interpolation, einsum; their backward operators against numerical gradients;
the nn layers over them. Device-generic (cpu and accel)."""
from __future__ import annotations

import numpy as np
import pytest

import backend_sdk as torch
from backend_sdk import nn
from backend_sdk.autograd import gradcheck
from backend_sdk.nn import functional as F

A = torch.ops.aten


def T(a, device="cpu", **kw):
    return torch.tensor(np.asarray(a), device=device, **kw)


def N(t):
    return t.detach().cpu().numpy()


def rnd(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def numeric_grad(f, x: np.ndarray, g: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """d/dx sum(f(x) * g) by central differences (float64)."""
    out = np.zeros_like(x)
    flat = x.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        hi = (f(x) * g).sum()
        flat[i] = old - eps
        lo = (f(x) * g).sum()
        flat[i] = old
        out.reshape(-1)[i] = (hi - lo) / (2 * eps)
    return out


def ref_conv2d(x, w, b, stride, pad, dil, groups):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    oh = (h + 2 * pad[0] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * pad[1] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow), np.float64)
    og = o // groups
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        ws = w[g * og:(g + 1) * og]
        for i in range(oh):
            for j in range(ow):
                patch = xs[:, :, i * stride[0]:i * stride[0] + dil[0] * (kh - 1) + 1:dil[0],
                           j * stride[1]:j * stride[1] + dil[1] * (kw - 1) + 1:dil[1]]
                out[:, g * og:(g + 1) * og, i, j] = np.einsum("ncij,ocij->no", patch, ws)
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    return out


# ---- convolution ---------------------------------------------------------------------------------


@pytest.mark.parametrize("stride,pad,dil,groups", [((1, 1), (0, 0), (1, 1), 1), ((2, 1), (1, 2), (1, 1), 1),
                                                   ((1, 1), (1, 1), (2, 1), 2), ((2, 2), (0, 1), (1, 2), 4)])
def test_conv2d_matches_numpy(device, stride, pad, dil, groups):
    x, w, b = rnd(2, 4, 7, 6), rnd(8, 4 // groups, 3, 2, seed=1), rnd(8, seed=2)
    got = F.conv2d(T(x, device), T(w, device), T(b, device), stride, pad, dil, groups)
    np.testing.assert_allclose(N(got), ref_conv2d(x, w, b, stride, pad, dil, groups), rtol=1e-4, atol=1e-4)


def test_conv1d_and_unbatched(device):
    x, w = rnd(2, 3, 9), rnd(5, 3, 3, seed=1)
    got = F.conv1d(T(x, device), T(w, device), None, 2, 1)
    ref = ref_conv2d(x[:, :, None], w[:, :, None], None, (1, 2), (0, 1), (1, 1), 1)[:, :, 0]
    np.testing.assert_allclose(N(got), ref, rtol=1e-4, atol=1e-5)
    un = F.conv2d(T(x[0][:, None], device), T(w[:, :, None], device))
    assert list(un.shape) == [5, 1, 7]
    same = F.conv2d(T(rnd(1, 3, 5, 5), device), T(rnd(2, 3, 3, 3), device), padding="same")
    assert list(same.shape) == [1, 2, 5, 5]


def test_conv_errors(device):
    x = T(rnd(2, 4, 5, 5), device)
    with pytest.raises(RuntimeError, match=r"Given groups=1, weight of size \[8, 3, 3, 3\], expected input\[2, 4, 5, "
                                           r"5\] to have 3 channels, but got 4 channels instead"):
        F.conv2d(x, T(rnd(8, 3, 3, 3), device))
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input size"):
        F.conv2d(x, T(rnd(8, 4, 7, 7), device))
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d"):
        F.conv2d(T(rnd(4, 5), device), T(rnd(8, 4, 3, 3), device))
    with pytest.raises(RuntimeError, match="expected bias to be 1-dimensional with 8 elements"):
        F.conv2d(x, T(rnd(8, 4, 3, 3), device), T(rnd(4), device))
    with pytest.raises(RuntimeError, match="non-positive stride is not supported"):
        F.conv2d(x, T(rnd(8, 4, 3, 3), device), stride=0)
    # transposed=True is implemented (tests/test_nn_conv_transpose.py): weight (in, out / groups, kH, kW)
    assert tuple(A.convolution(x, T(rnd(4, 8, 3, 3), device), None, [1], [0], [1], True, [0], 1).shape) == (2, 8, 7, 7)


def test_convolution_backward_matches_numerical_gradients(device):
    x, w, b = rnd(2, 4, 5, 4, dtype=np.float64), rnd(6, 2, 3, 2, seed=1, dtype=np.float64), rnd(6, seed=2, dtype=np.float64)
    args = ((2, 1), (1, 1), (1, 2), 2)
    out = ref_conv2d(x, w, b, *args)
    g = rnd(*out.shape, seed=3, dtype=np.float64)
    gi, gw, gb = A.convolution_backward(T(g, device), T(x, device), T(w, device), [6], list(args[0]), list(args[1]),
                                        list(args[2]), False, [0, 0], args[3], [True, True, True])
    np.testing.assert_allclose(N(gi), numeric_grad(lambda v: ref_conv2d(v, w, b, *args), x.copy(), g), atol=1e-6)
    np.testing.assert_allclose(N(gw), numeric_grad(lambda v: ref_conv2d(x, v, b, *args), w.copy(), g), atol=1e-6)
    np.testing.assert_allclose(N(gb), g.sum(axis=(0, 2, 3)), atol=1e-9)
    gi, gw, gb = A.convolution_backward(T(g, device), T(x, device), T(w, device), None, list(args[0]), list(args[1]),
                                        list(args[2]), False, [0, 0], args[3], [False, True, False])
    assert gi is None and gb is None and gw is not None
    meta = A.convolution_backward(T(g).to("meta"), T(x).to("meta"), T(w).to("meta"), [6], [2, 1], [1, 1], [1, 2],
                                  False, [0, 0], 2, [True, True, True])
    assert [list(t.shape) for t in meta] == [list(x.shape), list(w.shape), [6]]


# ---- normalization --------------------------------------------------------------------------------


def test_layer_norm_forward_and_backward(device):
    x, w, b = rnd(3, 4, 5), rnd(4, 5, seed=1), rnd(4, 5, seed=2)
    out, mean, rstd = A.native_layer_norm(T(x, device), [4, 5], T(w, device), T(b, device), 1e-5)
    mu = x.mean(axis=(1, 2), keepdims=True)
    var = x.var(axis=(1, 2), keepdims=True)
    np.testing.assert_allclose(N(out), (x - mu) / np.sqrt(var + 1e-5) * w + b, rtol=1e-4, atol=1e-5)
    assert list(mean.shape) == [3, 1, 1] and list(rstd.shape) == [3, 1, 1]
    np.testing.assert_allclose(N(F.layer_norm(T(x, device), (5,))), (x - x.mean(-1, keepdims=True)) /
                               np.sqrt(x.var(-1, keepdims=True) + 1e-5), rtol=1e-4, atol=1e-5)
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\], but "
                                           r"got input of size\[3, 4, 5\]"):
        F.layer_norm(T(x, device), (4,))


def test_layer_norm_backward_matches_numerical_gradients(device):
    x, w, b = rnd(3, 6, dtype=np.float64), rnd(6, seed=1, dtype=np.float64), rnd(6, seed=2, dtype=np.float64)
    g = rnd(3, 6, seed=3, dtype=np.float64)

    def f(xv, wv=w, bv=b):
        mu = xv.mean(-1, keepdims=True)
        return (xv - mu) / np.sqrt(xv.var(-1, keepdims=True) + 1e-5) * wv + bv

    _, mean, rstd = A.native_layer_norm(T(x, device), [6], T(w, device), T(b, device), 1e-5)
    gi, gw, gb = A.native_layer_norm_backward(T(g, device), T(x, device), [6], mean, rstd, T(w, device), T(b, device),
                                              [True, True, True])
    np.testing.assert_allclose(N(gi), numeric_grad(f, x.copy(), g), atol=1e-6)
    np.testing.assert_allclose(N(gw), numeric_grad(lambda v: f(x, v), w.copy(), g), atol=1e-6)
    np.testing.assert_allclose(N(gb), g.sum(0), atol=1e-9)


def test_batch_norm_train_eval_and_running_stats(device):
    x = rnd(4, 3, 2, 5)
    rm, rv = T(np.zeros(3, np.float32), device), T(np.ones(3, np.float32), device)
    out = F.batch_norm(T(x, device), rm, rv, training=True, momentum=0.2)
    mu, var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    np.testing.assert_allclose(N(out), (x - mu.reshape(1, 3, 1, 1)) / np.sqrt(var.reshape(1, 3, 1, 1) + 1e-5),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(N(rm), 0.2 * mu, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(N(rv), 0.8 + 0.2 * x.var(axis=(0, 2, 3), ddof=1), rtol=1e-5)
    ev = F.batch_norm(T(x, device), rm, rv, T(np.full(3, 2, np.float32), device), None, training=False)
    np.testing.assert_allclose(N(ev), 2 * (x - N(rm).reshape(1, 3, 1, 1)) / np.sqrt(N(rv).reshape(1, 3, 1, 1) + 1e-5),
                               rtol=1e-4, atol=1e-5)
    with pytest.raises(RuntimeError, match="Expected more than 1 value per channel when training"):
        F.batch_norm(T(rnd(1, 3), device), None, None, training=True)
    with pytest.raises(RuntimeError, match="running_mean should contain 3 elements not 4"):
        F.batch_norm(T(x, device), T(np.zeros(4, np.float32), device), rv)


def test_batch_norm_backward_matches_numerical_gradients(device):
    x, w = rnd(4, 3, 2, dtype=np.float64), rnd(3, seed=1, dtype=np.float64)
    g = rnd(4, 3, 2, seed=3, dtype=np.float64)

    def f(xv, wv=w):
        mu = xv.mean(axis=(0, 2), keepdims=True)
        return (xv - mu) / np.sqrt(xv.var(axis=(0, 2), keepdims=True) + 1e-5) * wv.reshape(1, 3, 1)

    _, sm, si = A.native_batch_norm(T(x, device), T(w, device), None, None, None, True, 0.1, 1e-5)
    gi, gw, gb = A.native_batch_norm_backward(T(g, device), T(x, device), T(w, device), None, None, sm, si, True, 1e-5,
                                              [True, True, True])
    np.testing.assert_allclose(N(gi), numeric_grad(f, x.copy(), g), atol=1e-6)
    np.testing.assert_allclose(N(gw), numeric_grad(lambda v: f(x, v), w.copy(), g), atol=1e-6)
    np.testing.assert_allclose(N(gb), g.sum(axis=(0, 2)), atol=1e-9)


def test_group_norm_and_rms_norm(device):
    x, w, b = rnd(2, 6, 5), rnd(6, seed=1), rnd(6, seed=2)
    got = F.group_norm(T(x, device), 3, T(w, device), T(b, device))
    xg = x.reshape(2, 3, -1)
    ref = ((xg - xg.mean(-1, keepdims=True)) / np.sqrt(xg.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
    np.testing.assert_allclose(N(got), ref * w.reshape(1, 6, 1) + b.reshape(1, 6, 1), rtol=1e-4, atol=1e-5)
    with pytest.raises(RuntimeError, match="Expected number of channels in input to be divisible by num_groups"):
        F.group_norm(T(x, device), 4)
    r = F.rms_norm(T(x, device), [5], T(w[:5], device), 1e-6)
    np.testing.assert_allclose(N(r), x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w[:5], rtol=1e-4, atol=1e-5)
    xd = T(rnd(2, 4, 3, dtype=np.float64), device, requires_grad=True)
    assert gradcheck(lambda t: F.group_norm(t, 2), (xd,))
    assert gradcheck(lambda t: F.rms_norm(t, [3]), (xd,))


# ---- pooling ----------------------------------------------------------------------------------------


def test_max_pool2d_values_indices_and_backward(device):
    x = rnd(2, 3, 7, 6)
    out, idx = F.max_pool2d(T(x, device), 3, 2, 1, return_indices=True)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    ref = np.stack([np.stack([xp[..., 2 * i:2 * i + 3, 2 * j:2 * j + 3].max(axis=(-2, -1)) for j in range(3)], -1)
                    for i in range(4)], -2)
    np.testing.assert_array_equal(N(out), ref)
    np.testing.assert_array_equal(np.take_along_axis(x.reshape(2, 3, -1), N(idx).reshape(2, 3, -1), -1),
                                  ref.reshape(2, 3, -1))
    g = rnd(*ref.shape, seed=4)
    gi = A.max_pool2d_with_indices_backward(T(g, device), T(x, device), [3, 3], [2, 2], [1, 1], [1, 1], False, idx)
    expect = np.zeros(x.shape, np.float32).reshape(2, 3, -1)
    for p in np.ndindex(2, 3):
        np.add.at(expect[p], N(idx)[p].reshape(-1), g[p].reshape(-1))
    np.testing.assert_allclose(N(gi), expect.reshape(x.shape), rtol=1e-6)
    assert list(F.max_pool2d(T(x, device), 2, ceil_mode=True).shape) == [2, 3, 4, 3]
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size"):
        F.max_pool2d(T(x, device), 2, padding=2)
    nan = x.copy()
    nan[0, 0, 0, 0] = np.nan
    assert np.isnan(N(F.max_pool2d(T(nan, device), 2))[0, 0, 0, 0])


@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool2d_and_backward(device, count_include_pad):
    x = rnd(1, 2, 5, 5, dtype=np.float64)
    out = F.avg_pool2d(T(x, device), 3, 2, 1, count_include_pad=count_include_pad)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ones = np.pad(np.ones_like(x), ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros((1, 2, 3, 3))
    for i in range(3):
        for j in range(3):
            win = xp[..., 2 * i:2 * i + 3, 2 * j:2 * j + 3]
            cnt = 9 if count_include_pad else ones[..., 2 * i:2 * i + 3, 2 * j:2 * j + 3].sum(axis=(-2, -1))
            ref[..., i, j] = win.sum(axis=(-2, -1)) / cnt
    np.testing.assert_allclose(N(out), ref, rtol=1e-12)
    g = rnd(1, 2, 3, 3, seed=5, dtype=np.float64)
    gi = A.avg_pool2d_backward(T(g, device), T(x, device), [3, 3], [2, 2], [1, 1], False, count_include_pad, None)
    num = numeric_grad(lambda v: N(F.avg_pool2d(T(v), 3, 2, 1, count_include_pad=count_include_pad)), x.copy(), g)
    np.testing.assert_allclose(N(gi), num, atol=1e-6)
    assert N(F.avg_pool2d(T(x, device), 2, divisor_override=1))[0, 0, 0, 0] == pytest.approx(x[0, 0, :2, :2].sum())


def test_adaptive_avg_pool2d(device):
    x = rnd(2, 3, 7, 5, dtype=np.float64)
    got = F.adaptive_avg_pool2d(T(x, device), (3, 2))
    ref = np.zeros((2, 3, 3, 2))
    for i in range(3):
        for j in range(2):
            y0, y1 = (i * 7) // 3, -(-(i + 1) * 7 // 3)
            x0, x1 = (j * 5) // 2, -(-(j + 1) * 5 // 2)
            ref[..., i, j] = x[..., y0:y1, x0:x1].mean(axis=(-2, -1))
    np.testing.assert_allclose(N(got), ref, rtol=1e-12)
    np.testing.assert_allclose(N(F.adaptive_avg_pool2d(T(x, device), 1)), x.mean(axis=(2, 3), keepdims=True))
    g = rnd(2, 3, 3, 2, seed=6, dtype=np.float64)
    gi = A._adaptive_avg_pool2d_backward(T(g, device), T(x, device))
    num = numeric_grad(lambda v: N(A._adaptive_avg_pool2d(T(v), [3, 2])), x.copy(), g)
    np.testing.assert_allclose(N(gi), num, atol=1e-6)


# ---- embedding, dropout, attention ---------------------------------------------------------------


def test_embedding_and_padding_gradient(device):
    w = rnd(6, 3)
    idx = np.array([[1, 2, 0], [0, 5, 1]])
    np.testing.assert_array_equal(N(F.embedding(T(idx, device), T(w, device))), w[idx])
    wt = T(w, device, requires_grad=True)
    out = F.embedding(T(idx, device), wt, padding_idx=0)
    np.testing.assert_array_equal(N(out), w[idx])
    out.sum().backward()
    expect = np.zeros_like(w)
    np.add.at(expect, idx.reshape(-1), 1.0)
    expect[0] = 0
    np.testing.assert_array_equal(N(wt.grad), expect)
    gd = A.embedding_dense_backward(T(np.ones((2, 3, 3), np.float32), device), T(idx, device), 6, 0, True)
    ref = np.zeros((6, 3), np.float32)
    ref[[1, 2, 5]] = 1.0
    np.testing.assert_allclose(N(gd), ref)
    with pytest.raises(RuntimeError, match="'indices' to have one of the following scalar types: Long, Int"):
        F.embedding(T(np.zeros(2, np.float32), device), T(w, device))


def test_dropout_semantics(device):
    x = T(np.ones((200, 50), np.float32), device)
    torch.manual_seed(0)
    y = N(F.dropout(x, 0.3))
    kept = y != 0
    assert abs(kept.mean() - 0.7) < 0.02
    np.testing.assert_allclose(y[kept], 1 / 0.7, rtol=1e-6)
    assert F.dropout(x, 0.3, training=False) is x
    assert not N(F.dropout(x, 1.0)).any()
    torch.manual_seed(0)
    np.testing.assert_array_equal(N(F.dropout(x, 0.3)), y)  # the seed reproduces the mask
    xr = T(np.ones((4, 5), np.float32), device, requires_grad=True)
    torch.manual_seed(1)
    out = F.dropout(xr, 0.5)
    out.sum().backward()
    np.testing.assert_allclose(N(xr.grad), N(out))  # d/dx (x * mask * 2) = mask * 2 = out for x = 1
    o, m = A.native_dropout(T(np.ones((3, 4), np.float32), device), 0.5, True)
    assert m.dtype == torch.bool and np.allclose(N(o), N(m) * 2.0)
    np.testing.assert_allclose(N(A.native_dropout_backward(T(np.ones((3, 4), np.float32), device), m, 2.0)), N(o))
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.dropout(x, 1.5)


def ref_attention(q, k, v, mask=None, causal=False, scale=None):
    s = (q @ np.swapaxes(k, -1, -2)) * (scale if scale is not None else 1 / np.sqrt(q.shape[-1]))
    if causal:
        s = np.where(np.tril(np.ones((q.shape[-2], k.shape[-2]), bool)), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ v


def test_scaled_dot_product_attention(device):
    q, k, v = rnd(2, 3, 5, 8), rnd(2, 3, 6, 8, seed=1), rnd(2, 3, 6, 4, seed=2)
    tq, tk, tv = T(q, device), T(k, device), T(v, device)
    np.testing.assert_allclose(N(F.scaled_dot_product_attention(tq, tk, tv)), ref_attention(q, k, v), rtol=1e-4,
                               atol=1e-5)
    qs = rnd(2, 3, 6, 8, seed=3)
    np.testing.assert_allclose(N(F.scaled_dot_product_attention(T(qs, device), tk, tv, is_causal=True)),
                               ref_attention(qs, k, v, causal=True), rtol=1e-4, atol=1e-5)
    bmask = np.random.default_rng(4).random((5, 6)) > 0.3
    bmask[:, 0] = True
    np.testing.assert_allclose(N(F.scaled_dot_product_attention(tq, tk, tv, attn_mask=T(bmask, device))),
                               ref_attention(q, k, v, bmask), rtol=1e-4, atol=1e-5)
    amask = rnd(5, 6, seed=5)
    np.testing.assert_allclose(N(F.scaled_dot_product_attention(tq, tk, tv, attn_mask=T(amask, device), scale=0.5)),
                               ref_attention(q, k, v, amask, scale=0.5), rtol=1e-4, atol=1e-5)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when is_causal=True"):
        F.scaled_dot_product_attention(tq, tk, tv, attn_mask=T(bmask, device), is_causal=True)
    dq = T(rnd(1, 2, 3, 4, dtype=np.float64), device, requires_grad=True)
    dk = T(rnd(1, 2, 3, 4, seed=1, dtype=np.float64), device, requires_grad=True)
    dv = T(rnd(1, 2, 3, 4, seed=2, dtype=np.float64), device, requires_grad=True)
    assert gradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True), (dq, dk, dv))


# ---- padding, interpolation, einsum -----------------------------------------------------------------


@pytest.mark.parametrize("mode,np_mode", [("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")])
def test_pad_modes(device, mode, np_mode):
    x = rnd(1, 2, 4, 5)
    got = F.pad(T(x, device), (2, 1, 1, 3), mode=mode)
    np.testing.assert_array_equal(N(got), np.pad(x, ((0, 0), (0, 0), (1, 3), (2, 1)), mode=np_mode))
    xd = T(rnd(1, 2, 4, dtype=np.float64), device, requires_grad=True)
    assert gradcheck(lambda t: F.pad(t, (2, 1), mode=mode), (xd,))


def test_constant_pad(device):
    x = rnd(2, 3, 4)
    np.testing.assert_array_equal(N(F.pad(T(x, device), (1, 2), value=7.0)),
                                  np.pad(x, ((0, 0), (0, 0), (1, 2)), constant_values=7.0))
    np.testing.assert_array_equal(N(F.pad(T(x, device), (-1, 1, 2, 0))),
                                  np.pad(x[:, :, 1:], ((0, 0), (2, 0), (0, 1))))
    with pytest.raises(RuntimeError, match="Length of pad must be even"):
        F.pad(T(x, device), (1,))
    with pytest.raises(RuntimeError, match="Padding size should be less than the corresponding input dimension"):
        F.pad(T(x, device), (4, 4), mode="reflect")
    xd = T(rnd(2, 3, dtype=np.float64), device, requires_grad=True)
    assert gradcheck(lambda t: F.pad(t, (1, -1, 2, 0)), (xd,))


def test_interpolate(device):
    x = T(np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2), device)
    np.testing.assert_allclose(N(F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False))[0, 0],
                               [[0.0, 0.25, 0.75, 1.0], [0.5, 0.75, 1.25, 1.5], [1.5, 1.75, 2.25, 2.5],
                                [2.0, 2.25, 2.75, 3.0]], rtol=1e-6)
    np.testing.assert_allclose(N(F.interpolate(x, size=3, mode="bilinear", align_corners=True))[0, 0],
                               [[0.0, 0.5, 1.0], [1.0, 1.5, 2.0], [2.0, 2.5, 3.0]], rtol=1e-6)
    np.testing.assert_array_equal(N(F.interpolate(x, scale_factor=2))[0, 0],
                                  np.repeat(np.repeat(N(x)[0, 0], 2, 0), 2, 1))
    np.testing.assert_array_equal(N(F.interpolate(T(rnd(1, 1, 6, 6), device), size=(3, 2)))[0, 0],
                                  rnd(1, 1, 6, 6)[0, 0][[0, 2, 4]][:, [0, 3]])
    with pytest.raises(ValueError, match="only one of size or scale_factor should be defined"):
        F.interpolate(x)
    xd = T(rnd(1, 1, 2, 3, dtype=np.float64), device, requires_grad=True)
    assert gradcheck(lambda t: F.interpolate(t, size=(3, 4), mode="bilinear"), (xd,))


@pytest.mark.parametrize("eq,shapes", [("ij,jk->ik", [(3, 4), (4, 5)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
                                       ("ii->i", [(4, 4)]), ("ij->", [(3, 4)]), ("i,j->ij", [(3,), (4,)]),
                                       ("...ij,...jk", [(2, 3, 4), (4, 2)]), ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
                                       ("ijk,kj,i->ik", [(2, 3, 4), (4, 3), (2,)]), ("ji", [(3, 4)])])
def test_einsum(device, eq, shapes):
    arrs = [rnd(*s, seed=i) for i, s in enumerate(shapes)]
    got = torch.einsum(eq, [T(a, device) for a in arrs])
    np.testing.assert_allclose(N(got), np.einsum(eq, *arrs), rtol=1e-4, atol=1e-5)


def test_einsum_errors_and_gradient(device):
    with pytest.raises(RuntimeError, match="more operands were provided than specified in the equation"):
        torch.einsum("ij", [T(rnd(2, 2), device), T(rnd(2, 2), device)])
    with pytest.raises(RuntimeError, match="does not match the number of dimensions"):
        torch.einsum("ijk", [T(rnd(2, 2), device)])
    a = T(rnd(2, 3, dtype=np.float64), device, requires_grad=True)
    b = T(rnd(3, 4, seed=1, dtype=np.float64), device, requires_grad=True)
    assert gradcheck(lambda x, y: torch.einsum("ij,jk->ik", [x, y]), (a, b))


# ---- layers -----------------------------------------------------------------------------------------


def test_layers_shapes_state_and_repr(device):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(8, 4, 3, stride=2, bias=False), nn.AvgPool2d(2, 1), nn.AdaptiveAvgPool2d((1, 1)),
                        nn.Flatten(), nn.Linear(4, 2)).to(device)
    out = net(T(rnd(5, 3, 16, 16), device))
    assert list(out.shape) == [5, 2]
    keys = set(net.state_dict())
    assert {"1.running_mean", "1.running_var", "1.num_batches_tracked", "0.weight", "4.weight"} <= keys
    assert "4.bias" not in keys
    assert int(net[1].num_batches_tracked.item()) == 1
    assert repr(net[0]) == "Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))"
    assert repr(net[1]) == "BatchNorm2d(8, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)"
    assert repr(nn.LayerNorm(4)) == "LayerNorm((4,), eps=1e-05, elementwise_affine=True)"
    assert repr(nn.Embedding(10, 3, padding_idx=1)) == "Embedding(10, 3, padding_idx=1)"
    net.eval()
    a, b = net(T(rnd(2, 3, 16, 16), device)), net(T(rnd(2, 3, 16, 16), device))
    assert int(net[1].num_batches_tracked.item()) == 1 and list(a.shape) == list(b.shape)
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        net[1](T(rnd(2, 8, 3), device))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 6, 3, groups=2)
    emb = nn.Embedding(10, 4, padding_idx=0).to(device)
    assert not N(emb.weight[0]).any()
    ln, gn, rms = nn.LayerNorm(4).to(device), nn.GroupNorm(2, 4).to(device), nn.RMSNorm(4).to(device)
    h = emb(T(np.array([[0, 3, 9]]), device))
    assert list(ln(h).shape) == [1, 3, 4] and list(rms(h).shape) == [1, 3, 4]
    assert list(gn(T(rnd(2, 4, 5), device)).shape) == [2, 4, 5]
    bn1 = nn.BatchNorm1d(4).to(device)
    assert list(bn1(T(rnd(6, 4), device)).shape) == [6, 4]
    c1 = nn.Conv1d(4, 2, 3, padding_mode="reflect", padding=1).to(device)
    assert list(c1(T(rnd(2, 4, 7), device)).shape) == [2, 2, 7]


@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_matches_numpy(device, batch_first):
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2, batch_first=batch_first).to(device)
    assert set(mha.state_dict()) == {"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"}
    x = rnd(5, 3, 8)  # (L, N, E)
    pad = np.zeros((3, 5), bool)
    pad[1, -2:] = True
    causal = np.triu(np.ones((5, 5), bool), 1)
    inp = T(np.swapaxes(x, 0, 1) if batch_first else x, device)
    out, w = mha(inp, inp, inp, key_padding_mask=T(pad, device), attn_mask=T(causal, device))
    W, B = N(mha.in_proj_weight), N(mha.in_proj_bias)
    q, k, v = (x @ W[i * 8:(i + 1) * 8].T + B[i * 8:(i + 1) * 8] for i in range(3))

    def heads(t):
        return t.reshape(5, 3, 2, 4).transpose(1, 2, 0, 3)

    q, k, v = heads(q), heads(k), heads(v)
    s = q @ k.transpose(0, 1, 3, 2) / 2.0
    s = np.where(causal | pad[:, None, None, :], -np.inf, s)
    a = np.exp(s - s.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    o = (a @ v).transpose(2, 0, 1, 3).reshape(5, 3, 8) @ N(mha.out_proj.weight).T + N(mha.out_proj.bias)
    np.testing.assert_allclose(N(out), np.swapaxes(o, 0, 1) if batch_first else o, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(N(w), a.mean(1), rtol=1e-4, atol=1e-6)
    fast, none = mha(inp, inp, inp, key_padding_mask=T(pad, device), attn_mask=T(causal, device), need_weights=False)
    assert none is None
    np.testing.assert_allclose(N(fast), N(out), rtol=1e-4, atol=1e-5)
