"""convolution's im2col / col2im (ops/Convolution.cpp, Note [Convolution by im2col]) at the edges of their
column ranges: strides, dilations and paddings that put whole rows and column runs outside the input,
against a direct numpy convolution, forward and all three gradients, on every test device."""
from __future__ import annotations

import numpy as np
import pytest

import backend_sdk as torch
from backend_sdk.autograd import gradcheck

F = torch.nn.functional


def np_conv2d(x, w, stride, padding, dilation):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i * dh: i * dh + sh * (oh - 1) + 1: sh, j * dw: j * dw + sw * (ow - 1) + 1: sw]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j].astype(np.float64))
    return out


CASES = [  # (input hw, kernel, stride, padding, dilation)
    ((7, 9), (3, 3), (1, 1), (1, 1), (1, 1)),
    ((7, 9), (3, 2), (2, 3), (2, 1), (1, 1)),
    ((6, 5), (2, 2), (1, 1), (3, 3), (1, 1)),   # padding past the kernel's reach: rows and runs of zeros only
    ((8, 8), (3, 3), (3, 2), (0, 2), (2, 2)),
    ((5, 11), (1, 5), (1, 4), (0, 4), (1, 3)),
]


@pytest.mark.parametrize("hw,k,stride,padding,dilation", CASES)
def test_forward_and_gradients_against_numpy(device, hw, k, stride, padding, dilation) -> None:
    rng = np.random.default_rng(sum(hw) + sum(k))
    x = rng.standard_normal((2, 3) + hw).astype(np.float32)
    w = rng.standard_normal((4, 3) + k).astype(np.float32)
    tx = torch.tensor(x, device=device, requires_grad=True)
    tw = torch.tensor(w, device=device, requires_grad=True)
    out = F.conv2d(tx, tw, stride=stride, padding=padding, dilation=dilation)
    ref = np_conv2d(x, w, stride, padding, dilation)
    assert tuple(out.shape) == ref.shape
    np.testing.assert_allclose(out.detach().cpu().numpy(), ref, rtol=1e-4, atol=1e-4)
    # gradients against the adjoint computed by numpy: <g, conv(x, w)> is linear in x and in w
    g = rng.standard_normal(ref.shape).astype(np.float32)
    gx, gw = torch.autograd.grad(out, (tx, tw), torch.tensor(g, device=device))
    eps = 1e-3
    for (name, arr, grad) in (("x", x, gx), ("w", w, gw)):
        flat = grad.cpu().numpy().reshape(-1)
        for idx in np.random.default_rng(1).choice(arr.size, 6, replace=False):
            d = np.zeros(arr.size)
            d[idx] = eps
            d = d.reshape(arr.shape)
            xs, ws = (x + d, w) if name == "x" else (x, w + d)
            num = (np.sum(g * np_conv2d(xs, ws, stride, padding, dilation)) - np.sum(g * ref)) / eps
            np.testing.assert_allclose(flat[idx], num, rtol=1e-3, atol=1e-3)


def test_gradcheck_strided_dilated_padded(device) -> None:
    rng = np.random.default_rng(5)
    x = torch.tensor(rng.standard_normal((1, 2, 5, 6)), device=device, requires_grad=True)
    w = torch.tensor(rng.standard_normal((3, 2, 2, 3)), device=device, requires_grad=True)
    b = torch.tensor(rng.standard_normal(3), device=device, requires_grad=True)
    assert gradcheck(lambda a, c, d: F.conv2d(a, c, d, stride=(2, 1), padding=(2, 3), dilation=(1, 2)), (x, w, b))

