"""The CPU convolution kernel's own structure (ops/Convolution.cpp): im2col tiles of output rows (Note
[Convolution tiles]) on shapes with several tiles and a partial last one, forward and both gradients
against numpy, direct and transposed; the weight gradient's bits independent of the thread count (Note
[Convolution weight gradient order]); and the BLAS thread count a pool-split convolution restores (Note
[GEMMs inside parallel loops]). CPU only: these are properties of the CPU kernel, not of a device."""
from __future__ import annotations

import numpy as np
import pytest

import backend_sdk as torch
from _helpers import run_python, run_threads
from test_conv_im2col import np_conv2d

F = torch.nn.functional


def np_conv2d_grads(x, w, g, stride, padding, dilation, groups=1):
    """The two gradients of sum(g * conv2d(x, w)), in float64: the adjoint of np_conv2d's patch sums."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    oh, ow = g.shape[2:]
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    gxp = np.zeros_like(xp)
    gw = np.zeros(w.shape)
    og = o // groups
    for grp in range(groups):
        cs, os_ = slice(grp * cg, (grp + 1) * cg), slice(grp * og, (grp + 1) * og)
        for i in range(kh):
            for j in range(kw):
                rows = slice(i * dh, i * dh + sh * (oh - 1) + 1, sh)
                cols = slice(j * dw, j * dw + sw * (ow - 1) + 1, sw)
                gxp[:, cs, rows, cols] += np.einsum("nohw,oc->nchw", g[:, os_], w[os_, :, i, j].astype(np.float64))
                gw[os_, :, i, j] = np.einsum("nohw,nchw->oc", g[:, os_], xp[:, cs, rows, cols])
    return gxp[:, :, ph: ph + h, pw: pw + wd], gw


def np_conv2d_grouped(x, w, stride, padding, dilation, groups):
    cg, og = x.shape[1] // groups, w.shape[0] // groups
    return np.concatenate([np_conv2d(x[:, k * cg:(k + 1) * cg], w[k * og:(k + 1) * og], stride, padding, dilation)
                           for k in range(groups)], axis=1)


# 16 channels of 3x3 (k = 144) over 64 output columns is 36 KiB a row: 512 KiB tiles of 14 rows, the last
# one shorter (64 = 4 * 14 + 8), so the forward, grad_input and grad_weight each run five tile GEMMs.
TILED = [  # (input hw, stride, padding, dilation, groups)
    ((64, 64), (1, 1), (1, 1), (1, 1), 1),
    ((127, 64), (2, 1), (1, 1), (1, 1), 2),   # 64 output rows from a strided input, two groups
    ((66, 68), (1, 1), (0, 0), (1, 2), 1),    # dilated columns, no padding
]


@pytest.mark.parametrize("hw,stride,padding,dilation,groups", TILED)
def test_tiled_im2col_forward_and_gradients_against_numpy(hw, stride, padding, dilation, groups) -> None:
    rng = np.random.default_rng(hw[0])
    x = rng.standard_normal((3, 16 * groups) + hw).astype(np.float32)
    w = rng.standard_normal((8 * groups, 16, 3, 3)).astype(np.float32) * 0.1
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    out = F.conv2d(tx, tw, stride=stride, padding=padding, dilation=dilation, groups=groups)
    ref = np_conv2d_grouped(x, w, stride, padding, dilation, groups)
    assert tuple(out.shape) == ref.shape and ref.shape[2] == 64  # several tiles, the last one partial
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-4, atol=1e-4)
    g = rng.standard_normal(ref.shape).astype(np.float32)
    gx, gw = torch.autograd.grad(out, (tx, tw), torch.tensor(g))
    ref_gx, ref_gw = np_conv2d_grads(x, w, g, stride, padding, dilation, groups)
    np.testing.assert_allclose(gx.numpy(), ref_gx, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(gw.numpy(), ref_gw, rtol=1e-4, atol=1e-2)  # sums of 3 * 4096 products
    # One of the two gradients alone (its own pass, not the fused one) gives the same values.
    ops = torch.ops.aten
    for mask, want in (([True, False, False], gx), ([False, True, False], gw)):
        got = ops.convolution_backward(torch.tensor(g), tx.detach(), tw.detach(), None, list(stride), list(padding),
                                       list(dilation), False, [0, 0], groups, mask)
        alone = got[0] if mask[0] else got[1]
        np.testing.assert_array_equal(alone.numpy(), want.numpy())


def test_tiled_transposed_convolution_against_the_adjoint() -> None:
    # conv_transpose2d is the adjoint of conv2d: its forward runs conv_adjoint's tiles, its grad_input
    # conv_apply's, its grad_weight conv_weight_grad with the sides swapped.
    rng = np.random.default_rng(7)
    small = rng.standard_normal((2, 16, 64, 64)).astype(np.float32)  # the direct convolution's output side
    w = rng.standard_normal((16, 8, 3, 3)).astype(np.float32) * 0.1    # (in, out, kh, kw) of the transposed one
    ts, tw = torch.tensor(small, requires_grad=True), torch.tensor(w, requires_grad=True)
    out = F.conv_transpose2d(ts, tw, padding=1)
    # The direct convolution 8 -> 16 channels with weight w: the transposed output is its grad_input for the
    # gradient `small`, the transposed grad_input is its forward of g, and grad_weight its weight gradient.
    ref, _ = np_conv2d_grads(np.zeros((2, 8, 64, 64), np.float32), w, small, (1, 1), (1, 1), (1, 1))
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-4, atol=1e-3)
    g = rng.standard_normal(ref.shape).astype(np.float32)
    gs, gw = torch.autograd.grad(out, (ts, tw), torch.tensor(g))
    np.testing.assert_allclose(gs.numpy(), np_conv2d(g, w, (1, 1), (1, 1), (1, 1)), rtol=1e-4, atol=1e-3)
    _, ref_gw = np_conv2d_grads(g, w, small, (1, 1), (1, 1), (1, 1))
    np.testing.assert_allclose(gw.numpy(), ref_gw, rtol=1e-4, atol=1e-2)


_GRADS_PROGRAM = """
import hashlib, numpy as np, backend_sdk as torch
rng = np.random.default_rng(3)
x = torch.tensor(rng.standard_normal((21, 8, 20, 20)).astype(np.float32), requires_grad=True)
w = torch.tensor(rng.standard_normal((6, 8, 3, 3)).astype(np.float32), requires_grad=True)
torch.nn.functional.conv2d(x, w, padding=1).square().sum().backward()
print(hashlib.sha256(w.grad.numpy().tobytes()).hexdigest(), hashlib.sha256(x.grad.numpy().tobytes()).hexdigest())
"""


def test_weight_gradient_bits_do_not_depend_on_the_thread_count(monkeypatch) -> None:
    # 21 samples in 16 parts (some of one sample, some of two): the parts are fixed by the shapes, so one
    # thread and the machine's threads sum in the same order.

    digests = []
    for threads in ("1", None):
        if threads is None:
            monkeypatch.delenv("SDK_NUM_THREADS", raising=False)
        else:
            monkeypatch.setenv("SDK_NUM_THREADS", threads)
        digests.append(run_python(_GRADS_PROGRAM, check=True).stdout.split())
    assert digests[0] == digests[1]


def _blas_threads():
    import ctypes

    from backend_sdk import _C

    path = _C._blas_library()
    if path.startswith("builtin"):
        pytest.skip("no OpenBLAS loaded: GEMMs have no threads of their own")
    lib = ctypes.CDLL(path)
    for name in ("scipy_openblas_get_num_threads", "openblas_get_num_threads"):
        if hasattr(lib, name):
            return getattr(lib, name)
    pytest.skip("this BLAS has no openblas_get_num_threads")


def test_convolutions_on_many_threads_leave_the_blas_thread_count_as_they_found_it() -> None:
    # Note [GEMMs inside parallel loops]: a convolution split over the pool makes GEMMs single-threaded while
    # it runs; overlapping ones from several threads restore the count when the last one ends.

    get_threads = _blas_threads()
    before = get_threads()
    x = torch.ones(4, 8, 24, 24)
    w = torch.ones(8, 8, 3, 3) * 0.01
    expect = F.conv2d(x, w, padding=1)
    a = torch.ones(256, 256)

    def convolve():
        for _ in range(20):
            assert torch.equal(F.conv2d(x, w, padding=1), expect)

    def multiply():
        for _ in range(20):
            assert float((a @ a)[0, 0]) == 256.0

    run_threads([convolve, convolve, multiply])
    assert get_threads() == before
