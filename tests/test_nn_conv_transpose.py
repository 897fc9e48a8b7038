"""Transposed convolution (Note [Transposed convolution], csrc/backend_sdk/ops/Convolution.cpp):
aten::convolution with transposed=True and its backward against a numpy scatter-add reference,
F.conv_transpose1d/2d, nn.ConvTranspose1d/2d (signature, init, repr, state_dict, output_size) and
PyTorch 2.13's error messages. Device-generic (cpu and accel)."""
from __future__ import annotations

from typing import Optional, Sequence, Union

import numpy as np
import pytest

import backend_sdk as torch
from backend_sdk import nn
from backend_sdk.autograd import gradcheck
from backend_sdk.nn import functional as F

IntOrPair = Union[int, Sequence[int]]


def T(a: np.ndarray, device: str = "cpu", **kw) -> torch.Tensor:
    return torch.tensor(np.asarray(a), device=device, **kw)


def N(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


def rnd(*shape: int, seed: int = 0, dtype=np.float32) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _pair(v: IntOrPair, n: int) -> list[int]:
    return [int(x) for x in v] if isinstance(v, (list, tuple)) else [int(v)] * n


def conv_transpose_ref(x: np.ndarray, w: np.ndarray, b: Optional[np.ndarray], stride: IntOrPair = 1,
                       padding: IntOrPair = 0, output_padding: IntOrPair = 0, groups: int = 1,
                       dilation: IntOrPair = 1) -> np.ndarray:
    """The scatter-add form, in float64: every input element adds x * w[cin, co] at
    (i * stride + k * dilation - padding) of output channel (group, co)."""
    spatial = w.ndim - 2
    s, p, op, d = (_pair(v, spatial) for v in (stride, padding, output_padding, dilation))
    n, cin = x.shape[:2]
    cog = w.shape[1]
    ks = w.shape[2:]
    full = [(x.shape[2 + i] - 1) * s[i] + d[i] * (ks[i] - 1) + 1 + op[i] for i in range(spatial)]
    out = np.zeros((n, cog * groups, *full))
    cig = cin // groups
    for c in range(cin):
        g = c // cig
        for idx in np.ndindex(*x.shape[2:]):
            for k in np.ndindex(*ks):
                pos = tuple(idx[i] * s[i] + k[i] * d[i] for i in range(spatial))
                out[(slice(None), slice(g * cog, (g + 1) * cog)) + pos] += (
                    x[(slice(None), c) + idx][:, None] * w[(c, slice(None)) + k][None, :])
    crop = tuple(slice(p[i], full[i] - p[i]) for i in range(spatial))
    out = out[(slice(None), slice(None)) + crop]
    if b is not None:
        out += b.reshape((1, -1) + (1,) * spatial)
    return out


CASES_2D = [  # stride, padding, output_padding, groups, dilation, bias
    (1, 0, 0, 1, 1, True),
    (2, 1, 1, 2, 1, True),
    ((2, 3), (1, 0), (1, 2), 1, 1, False),
    (1, 1, 0, 1, 2, True),
    (2, 0, 1, 1, 2, True),  # output_padding 1 < dilation 2 with stride 2
    (3, 2, 0, 3, (1, 2), True),
]


@pytest.mark.parametrize("stride, padding, output_padding, groups, dilation, bias", CASES_2D)
def test_conv_transpose2d_matches_numpy(device, stride, padding, output_padding, groups, dilation, bias):
    x, w = rnd(2, 6, 5, 4, seed=1), rnd(6, 2, 3, 2, seed=2)
    b = rnd(2 * groups, seed=3) if bias else None
    want = conv_transpose_ref(x, w, b, stride, padding, output_padding, groups, dilation)
    got = F.conv_transpose2d(T(x, device), T(w, device), T(b, device) if bias else None, stride, padding,
                             output_padding, groups, dilation)
    assert got.device.type == device.split(":")[0] and tuple(got.shape) == want.shape
    np.testing.assert_allclose(N(got), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("stride, padding, output_padding, groups, dilation", [
    (1, 0, 0, 1, 1), (3, 1, 2, 3, 1), (2, 2, 1, 1, 3)])
def test_conv_transpose1d_matches_numpy(device, stride, padding, output_padding, groups, dilation):
    x, w, b = rnd(2, 6, 7, seed=4), rnd(6, 2, 3, seed=5), rnd(2 * groups, seed=6)
    want = conv_transpose_ref(x, w, b, stride, padding, output_padding, groups, dilation)
    got = F.conv_transpose1d(T(x, device), T(w, device), T(b, device), stride, padding, output_padding, groups,
                             dilation)
    np.testing.assert_allclose(N(got), want, rtol=1e-5, atol=1e-5)


def test_unbatched_input_and_the_aten_operator(device):
    x, w = rnd(4, 5, 5, seed=7), rnd(4, 3, 3, 3, seed=8)
    un = F.conv_transpose2d(T(x, device), T(w, device), stride=2)
    assert tuple(un.shape) == (3, 11, 11)
    np.testing.assert_allclose(N(un), conv_transpose_ref(x[None], w, None, 2)[0], rtol=1e-5, atol=1e-5)
    direct = torch.ops.aten.convolution(T(x[None], device), T(w, device), None, [2, 2], [0, 0], [1, 1], True,
                                        [0, 0], 1)
    np.testing.assert_array_equal(N(direct)[0], N(un))
    x1 = rnd(4, 6, seed=9)
    un1 = F.conv_transpose1d(T(x1, device), T(w[..., 0], device), padding=1)
    np.testing.assert_allclose(N(un1), conv_transpose_ref(x1[None], w[..., 0], None, 1, 1)[0], rtol=1e-5,
                               atol=1e-5)


def test_accel_is_bit_for_bit_the_cpu():
    pytest.importorskip("accel")
    x, w, b = rnd(2, 6, 5, 4, seed=10), rnd(6, 3, 3, 3, seed=11), rnd(6, seed=12)
    g = rnd(2, 6, 10, 8, seed=13)

    def run(device: str) -> list[np.ndarray]:
        xs, ws, bs = (T(a, device).requires_grad_() for a in (x, w, b))
        out = F.conv_transpose2d(xs, ws, bs, 2, 1, 1, 2)
        out.backward(T(g, device))
        return [N(out), N(xs.grad), N(ws.grad), N(bs.grad)]

    for a, c in zip(run("accel"), run("cpu")):
        np.testing.assert_array_equal(a, c)


@pytest.mark.parametrize("stride, padding, output_padding, groups, dilation", [
    (1, 0, 0, 1, 1), (2, 1, 1, 2, 1), ((1, 2), (0, 1), (0, 1), 1, (2, 1))])
def test_gradcheck_2d(device, stride, padding, output_padding, groups, dilation):
    x = T(rnd(2, 4, 3, 3, seed=14, dtype=np.float64), device, requires_grad=True)
    w = T(rnd(4, 2, 2, 3, seed=15, dtype=np.float64), device, requires_grad=True)
    b = T(rnd(2 * groups, seed=16, dtype=np.float64), device, requires_grad=True)
    assert gradcheck(lambda x, w, b: F.conv_transpose2d(x, w, b, stride, padding, output_padding, groups,
                                                        dilation), (x, w, b))


def test_gradcheck_1d_and_masked_gradients(device):
    x = T(rnd(2, 3, 4, seed=17, dtype=np.float64), device, requires_grad=True)
    w = T(rnd(3, 2, 3, seed=18, dtype=np.float64), device, requires_grad=True)
    assert gradcheck(lambda x, w: F.conv_transpose1d(x, w, None, 2, 1, 1), (x, w))
    # only the weight needs a gradient: convolution_backward's mask leaves the input's undefined
    xd = T(rnd(2, 3, 4, seed=17, dtype=np.float64), device)
    F.conv_transpose1d(xd, w, None, 2).sum().backward()
    assert xd.grad is None and w.grad is not None


def test_meta_shapes():
    x, w = torch.empty(2, 4, 5, 7, device="meta"), torch.empty(4, 3, 3, 2, device="meta")
    assert tuple(F.conv_transpose2d(x, w, stride=(2, 3), padding=1, output_padding=(1, 2)).shape) == (2, 3, 10, 20)
    assert tuple(F.conv_transpose2d(x, torch.empty(4, 1, 3, 3, device="meta"), groups=4).shape) == (2, 4, 7, 9)
    gi, gw, gb = torch.ops.aten.convolution_backward(torch.empty(2, 3, 7, 8, device="meta"), x, w, [3], [1, 1],
                                                     [0, 0], [1, 1], True, [0, 0], 1, [True, True, True])
    assert tuple(gi.shape) == (2, 4, 5, 7) and tuple(gw.shape) == (4, 3, 3, 2) and tuple(gb.shape) == (3,)


# ---- errors: PyTorch 2.13's types and messages -------------------------------------------------

@pytest.mark.parametrize("kwargs, message", [
    (dict(output_padding=1), "output padding must be smaller than either stride or dilation, but got "
                             "output_padding_height: 1 output_padding_width: 1 stride_height: 1 stride_width: 1 "
                             "dilation_height: 1 dilation_width: 1"),
    (dict(output_padding=(1, 0), stride=(1, 2)), "output padding must be smaller than either stride or dilation, "
                                                 "but got output_padding_height: 1 output_padding_width: 0 "
                                                 "stride_height: 1 stride_width: 2"),
    (dict(output_padding=-1, stride=2), "negative output_padding is not supported"),
    (dict(stride=0), "non-positive stride is not supported"),
    (dict(padding=-1), "negative padding is not supported"),
    (dict(padding=3, input_shape=(1, 4, 1, 1)), r"Given input size per channel: \(1 x 1\). Calculated output size "
                                                r"per channel: \(-3 x -3\). Output size is too small"),
    (dict(input_shape=(1, 3, 5, 5)), r"Given transposed=1, weight of size \[4, 3, 3, 3\], expected input\[1, 3, 5, "
                                     r"5\] to have 4 channels, but got 3 channels instead"),
    (dict(bias_shape=(4,)), r"Given transposed=1, weight of size \[4, 3, 3, 3\], expected bias to be 1-dimensional "
                            r"with 3 elements, but got bias of size \[4\] instead"),
    (dict(input_shape=(2, 1, 4, 5, 5)), r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv_transpose2d, "
                                        r"but got input of size: \[2, 1, 4, 5, 5\]"),
    (dict(groups=3), "Given groups=3, expected weight to be divisible by 3 at dimension 0"),
])
def test_conv_transpose2d_errors(device, kwargs, message):
    kwargs = dict(kwargs)
    x = T(rnd(*kwargs.pop("input_shape", (1, 4, 5, 5))), device)
    b = kwargs.pop("bias_shape", None)
    w = T(rnd(4, 3, 3, 3), device)
    with pytest.raises(RuntimeError, match=message):
        F.conv_transpose2d(x, w, T(rnd(*b), device) if b else None, **kwargs)


def test_conv_transpose_errors_1d_and_aten(device):
    with pytest.raises(RuntimeError, match="output padding must be smaller than either stride or dilation, but got "
                                           "output_padding_height: 0 output_padding_width: 1 stride_height: 1"):
        F.conv_transpose1d(T(rnd(1, 4, 5), device), T(rnd(4, 3, 3), device), output_padding=1)
    with pytest.raises(RuntimeError, match=r"Given input size per channel: \(1 x 1\). Calculated output size per "
                                           r"channel: \(1 x -3\). Output size is too small"):
        F.conv_transpose1d(T(rnd(1, 4, 1), device), T(rnd(4, 3, 3), device), padding=3)
    with pytest.raises(RuntimeError, match=r"expected output_padding to be a single integer value or a list of 2 "
                                           r"values to match the convolution dimensions, but got "
                                           r"output_padding=\[1, 1, 1\]"):
        torch.ops.aten.convolution(T(rnd(1, 4, 5, 5), device), T(rnd(4, 3, 3, 3), device), None, [2, 2], [1, 1],
                                   [1, 1], True, [1, 1, 1], 1)
    with pytest.raises(TypeError, match=r"conv_transpose2d\(\): argument 'padding' must be tuple of ints"):
        F.conv_transpose2d(T(rnd(1, 4, 5, 5), device), T(rnd(4, 3, 3, 3), device), padding="same")


# ---- the modules -------------------------------------------------------------------------------

def test_module_signature_attributes_and_state_dict():
    m = nn.ConvTranspose2d(4, 6, 3, 2, 1, 1, 2)  # positional: stride, padding, output_padding, groups
    assert (m.stride, m.padding, m.output_padding, m.groups, m.dilation) == ((2, 2), (1, 1), (1, 1), 2, (1, 1))
    assert m.transposed and m.padding_mode == "zeros" and m.kernel_size == (3, 3)
    assert {k: tuple(v.shape) for k, v in m.state_dict().items()} == {"weight": (4, 3, 3, 3), "bias": (6,)}
    m1 = nn.ConvTranspose1d(4, 6, 5, bias=False, dilation=2)
    assert list(m1.state_dict()) == ["weight"] and tuple(m1.weight.shape) == (4, 6, 5) and m1.bias is None
    assert not nn.Conv2d(4, 6, 3).transposed


def test_module_init_is_pytorchs_scheme():
    """kaiming_uniform_(a=sqrt(5)) over fan_in = weight.size(1) * kernel (out / groups * kH * kW), and the
    bias uniform in +-1/sqrt(fan_in); the default generator's seed reproduces them."""
    torch.manual_seed(3)
    m = nn.ConvTranspose2d(8, 6, 3, groups=2)
    bound = 1 / np.sqrt(3 * 9)
    w, b = N(m.weight), N(m.bias)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.abs(b).max() <= bound
    torch.manual_seed(3)
    np.testing.assert_array_equal(N(nn.ConvTranspose2d(8, 6, 3, groups=2).weight), w)


def test_module_repr_is_pytorchs():
    assert repr(nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)) == (
        "ConvTranspose2d(4, 6, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), output_padding=(1, 1), groups=2)")
    assert repr(nn.ConvTranspose2d(4, 6, (3, 2), bias=False, dilation=2)) == (
        "ConvTranspose2d(4, 6, kernel_size=(3, 2), stride=(1, 1), dilation=(2, 2), bias=False)")
    assert repr(nn.ConvTranspose1d(4, 6, 3)) == "ConvTranspose1d(4, 6, kernel_size=(3,), stride=(1,))"


def test_module_constructor_errors():
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for ConvTranspose2d'):
        nn.ConvTranspose2d(4, 6, 3, padding_mode="reflect")
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for ConvTranspose1d'):
        nn.ConvTranspose1d(4, 6, 3, padding_mode="bogus")
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.ConvTranspose2d(4, 6, 3, groups=3)
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        nn.ConvTranspose1d(4, 6, 3, groups=4)
    with pytest.raises(ValueError, match="groups must be a positive integer"):
        nn.ConvTranspose1d(4, 6, 3, groups=0)


def test_module_forward_matches_numpy_and_trains(device):
    torch.manual_seed(0)
    m = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2).to(device)
    x = rnd(2, 4, 5, 5, seed=20)
    out = m(T(x, device))
    want = conv_transpose_ref(x, N(m.weight), N(m.bias), 2, 1, 1, 2)
    assert tuple(out.shape) == (2, 6, 10, 10)
    np.testing.assert_allclose(N(out), want, rtol=1e-5, atol=1e-5)
    out.square().sum().backward()
    assert tuple(m.weight.grad.shape) == (4, 3, 3, 3) and tuple(m.bias.grad.shape) == (6,)


def test_module_output_size(device):
    m = nn.ConvTranspose2d(4, 6, 3, stride=2).to(device)
    x = T(rnd(1, 4, 5, 5), device)
    assert tuple(m(x).shape) == (1, 6, 11, 11)
    assert tuple(m(x, output_size=[12, 11]).shape) == (1, 6, 12, 11)
    assert tuple(m(x, output_size=torch.Size([1, 6, 12, 12])).shape) == (1, 6, 12, 12)
    np.testing.assert_array_equal(N(m(x, output_size=[12, 11])),
                                  N(F.conv_transpose2d(x, m.weight, m.bias, 2, 0, (1, 0))))
    with pytest.raises(ValueError, match=r"requested an output size of \[13, 12\], but valid sizes range from "
                                         r"\[11, 11\] to \[12, 12\] \(for an input of "):
        m(x, output_size=[13, 12])
    with pytest.raises(ValueError, match=r"ConvTranspose2D: for 4D input, output_size must have 2 or 4 elements "
                                         r"\(got 1\)"):
        m(x, output_size=[5])
    m1 = nn.ConvTranspose1d(4, 6, 3, stride=2).to(device)
    x1 = T(rnd(4, 5), device)  # unbatched
    assert tuple(m1(x1, output_size=(12,)).shape) == (6, 12) == tuple(m1(x1, output_size=[6, 12]).shape)
    with pytest.raises(ValueError, match=r"ConvTranspose1D: for 2D input, output_size must have 1 or 2 elements "
                                         r"\(got 3\)"):
        m1(x1, output_size=[1, 6, 12])
