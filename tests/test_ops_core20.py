"""The core-tagged operators issue 20 adds (ops/CoreOps20.cpp, UnaryExtras.cpp, BinaryArith.cpp, NNOps.cpp):
values against numpy, gradients against numerical ones, cpu and accel agreeing, and PyTorch's errors for bad
input. The OpInfos (backend_sdk/testing/_opinfo_core20.py) add dtypes, layouts, variants and Meta."""
from __future__ import annotations

import numpy as np
import pytest

import backend_sdk as torch
from backend_sdk import ops
from backend_sdk.autograd import gradcheck
from backend_sdk.testing._opinfo_core20 import ref_col2im, ref_grid_sampler_2d, ref_group_norm, ref_max_pool3d

A = ops.aten


def _t(a, device="cpu", requires_grad=False):
    return torch.tensor(np.asarray(a), device=device, requires_grad=requires_grad)


def _np(t):
    return t.detach().cpu().numpy()


def _rand(shape, device="cpu", seed=0, low=-2.0, high=2.0, requires_grad=False):
    rng = np.random.default_rng(seed)
    return _t(rng.uniform(low, high, shape), device, requires_grad)


@pytest.mark.parametrize("name,low,high", [("acos", -0.9, 0.9), ("asin", -0.9, 0.9), ("atan", -3, 3),
                                           ("acosh", 1.2, 4), ("asinh", -3, 3), ("atanh", -0.9, 0.9),
                                           ("sinh", -2, 2), ("cosh", -2, 2)])
def test_inverse_and_hyperbolic_functions(device, name, low, high) -> None:
    x = _rand((3, 4), device, low=low, high=high, requires_grad=True)
    ref = getattr(np, {"acos": "arccos", "asin": "arcsin", "atan": "arctan", "acosh": "arccosh",
                       "asinh": "arcsinh", "atanh": "arctanh"}.get(name, name))
    np.testing.assert_allclose(_np(getattr(torch, name)(x)), ref(_np(x)), rtol=1e-12)
    assert gradcheck(getattr(torch, name), (x,))
    # integers promote to the default float dtype, as PyTorch's
    assert getattr(torch, name)(_t([1, 0], device)).dtype == torch.float32
    # node names are PyTorch's
    assert getattr(torch, name)(x).grad_fn.name() == name.capitalize() + "Backward0"


def test_atan2_and_fmod(device) -> None:
    a, b = _rand((3, 4), device, 1, requires_grad=True), _rand((4,), device, 2, low=0.5, high=2, requires_grad=True)
    np.testing.assert_allclose(_np(torch.atan2(a, b)), np.arctan2(_np(a), _np(b)), rtol=1e-12)
    np.testing.assert_allclose(_np(torch.fmod(a, b)), np.fmod(_np(a), _np(b)), rtol=1e-12)
    assert gradcheck(torch.atan2, (a, b))
    assert gradcheck(torch.fmod, (a, b))
    ints = _t([-7, 7, -8, 5], device)
    assert _np(torch.fmod(ints, 3)).tolist() == [-1, 1, -2, 2]  # the dividend's sign (remainder has the divisor's)
    assert _np(torch.fmod(ints, _t([-3, -3, 3, 1], device))).tolist() == [-1, 1, -2, 0]
    assert torch.atan2(_t([1], device), _t([2], device)).dtype == torch.float32
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        torch.fmod(ints, 0).cpu()


def test_activations(device) -> None:
    x = _t([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, float("nan")], device)
    np.testing.assert_array_equal(_np(A.hardtanh(x)), [-1, -1, -0.5, 0, 0.5, 1, 1, np.nan])
    np.testing.assert_allclose(_np(A.leaky_relu(x, 0.1)), [-0.2, -0.1, -0.05, 0, 0.5, 1, 2, np.nan])
    e = _np(A.elu(x, 2.0, 1.5, 0.5))
    np.testing.assert_allclose(e[:7], np.where(_np(x)[:7] > 0, 1.5 * _np(x)[:7], 3.0 * np.expm1(0.5 * _np(x)[:7])))
    # gradients: hardtanh's is 1 only strictly inside (min_val, max_val), as hardtanh_backward's
    y = _t([-1.0, -0.5, 1.0, 3.0], device, requires_grad=True)
    A.hardtanh(y).sum().backward()
    assert _np(y.grad).tolist() == [0.0, 1.0, 0.0, 0.0]
    z = _rand((5,), device, 3, requires_grad=True)
    assert gradcheck(lambda t: A.leaky_relu(t, 0.2), (z,))
    assert gradcheck(lambda t: A.elu(t, 1.0, 1.0, 1.0), (z,))
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        A.hardtanh(x, 1.0, -1.0)


def test_underscore_softmax_and_batch_norm_entry_points(device) -> None:
    x = _rand((3, 5), device, 4, requires_grad=True)
    np.testing.assert_allclose(_np(A._softmax(x, 1, False)), _np(torch.softmax(x, 1)))
    np.testing.assert_allclose(_np(A._log_softmax(x, 0, False)), _np(torch.log_softmax(x, 0)))
    assert gradcheck(lambda t: A._softmax(t, 1, False), (x,))
    with pytest.raises(ValueError, match="conversion is supported for Half type only"):
        A._softmax(x, 1, True)
    inp = _rand((4, 3, 2), device, 5)
    w, b = _rand((3,), device, 6), _rand((3,), device, 7)
    rm, rv = torch.zeros(3, device=device), torch.ones(3, device=device)
    out, mean, invstd = A._native_batch_norm_legit(inp, w, b, rm, rv, True, 0.1, 1e-5)
    ref = A.native_batch_norm(inp, w, b, None, None, True, 0.1, 1e-5)
    np.testing.assert_allclose(_np(out), _np(ref[0]), rtol=1e-12)
    np.testing.assert_allclose(_np(rm), 0.1 * _np(inp).mean(axis=(0, 2)), rtol=1e-6)  # running stats updated
    y = A._native_batch_norm_legit_no_training(inp, w, b, rm, rv, 0.1, 1e-5)[0]
    expect = (_np(inp) - _np(rm)[:, None]) / np.sqrt(_np(rv)[:, None] + 1e-5) * _np(w)[:, None] + _np(b)[:, None]
    np.testing.assert_allclose(_np(y), expect, rtol=1e-6)
    with pytest.raises(ValueError, match="running statistics"):
        A._native_batch_norm_legit.no_stats(inp, w, b, False, 0.1, 1e-5)


def test_native_group_norm_and_backward(device) -> None:
    x = _rand((2, 6, 5), device, 8, requires_grad=True)
    w, b = _rand((6,), device, 9, requires_grad=True), _rand((6,), device, 10, requires_grad=True)
    out, mean, rstd = A.native_group_norm(x, w, b, 2, 6, 5, 3, 1e-5)
    for got, want in zip((out, mean, rstd), ref_group_norm(_np(x), _np(w), _np(b), 2, 6, 5, 3, 1e-5)):
        np.testing.assert_allclose(_np(got), want, rtol=1e-10, atol=1e-12)
    # native_group_norm_backward equals the gradient autograd computes through the composite
    g = _rand((2, 6, 5), device, 11)
    gx, gw, gb = torch.autograd.grad(out, (x, w, b), g)
    bx, bw, bb = A.native_group_norm_backward(g, x.detach(), mean.detach(), rstd.detach(), w.detach(), 2, 6, 5, 3,
                                              [True, True, True])
    for got, want in ((bx, gx), (bw, gw), (bb, gb)):
        np.testing.assert_allclose(_np(got), _np(want), rtol=1e-9, atol=1e-12)
    none_x, _, none_b = A.native_group_norm_backward(g, x.detach(), mean.detach(), rstd.detach(), None, 2, 6, 5, 3,
                                                     [False, True, False])
    assert none_x is None and none_b is None
    # F.group_norm goes through native_group_norm
    np.testing.assert_allclose(_np(torch.nn.functional.group_norm(x, 3, w, b)), _np(out), rtol=1e-12)
    with pytest.raises(ValueError, match="divisible by num_groups"):
        A.native_group_norm(x, w, b, 2, 6, 5, 4, 1e-5)
    assert gradcheck(lambda *a: A.native_group_norm(*a, 2, 6, 5, 3, 1e-5)[0], (x, w, b))


def test_reductions_copy_fill_and_factories(device) -> None:
    m = _t([[0, 1, 0], [0, 0, 0]], device)
    assert _np(A.any.dims(m, [1])).tolist() == [True, False]
    assert _np(A.any.dims(m, [0, 1], True)).tolist() == [[True]]
    assert bool(A.any.dims(m))
    with pytest.raises(RuntimeError, match="appears multiple times"):
        A.any.dims(m, [1, -1])
    x = _rand((4, 3), device, 12, requires_grad=True)
    np.testing.assert_allclose(_np(A.var.dim(x, [0], False)), _np(x).var(axis=0), rtol=1e-12)
    np.testing.assert_allclose(_np(A.var.dim(x, [0, 1])), _np(x).var(ddof=1), rtol=1e-12)
    c = A.copy(torch.zeros(2, 3, dtype=torch.int64, device=device), _t([1.7, 2.2, -3.9], device))
    assert c.dtype == torch.int64 and _np(c).tolist() == [[1, 2, -3]] * 2
    assert _np(A.fill.Scalar(torch.zeros(2, device=device), 4)).tolist() == [4.0, 4.0]
    assert A.full([2], 3, device=device).dtype == torch.int64
    assert A.full([2], True, device=device).dtype == torch.bool
    assert A.full([2], 1.5, device=device).dtype == torch.float32
    fl = A.full_like(x, 7, dtype=torch.int32)
    assert fl.dtype == torch.int32 and fl.device == x.device and _np(fl).tolist() == [[7] * 3] * 4
    assert A.scalar_tensor(3, device=device).dtype == torch.float32
    assert _np(A.arange.start_step(1, 10, 3, device=device)).tolist() == [1, 4, 7]
    assert _np(A.arange.start_step(5, -4, -2, device=device)).tolist() == [5, 3, 1, -1, -3]
    np.testing.assert_allclose(_np(A.arange.start_step(0.5, 3.0, 0.75, device=device)), np.arange(0.5, 3.0, 0.75))
    with pytest.raises(ValueError, match="step must be nonzero"):
        A.arange.start_step(0, 5, 0)
    with pytest.raises(ValueError, match="inconsistent with step sign"):
        A.arange.start_step(0, 5, -1)


def test_select_and_slice_scatter(device) -> None:
    base = _rand((4, 3), device, 13, requires_grad=True)
    src = _rand((2, 3), device, 14, requires_grad=True)
    out = A.slice_scatter(base, src, 0, 1, None, 2)
    want = _np(base).copy()
    want[1::2] = _np(src)
    np.testing.assert_array_equal(_np(out), want)
    assert gradcheck(lambda a, s: A.slice_scatter(a, s, 0, 1, None, 2), (base, src))
    row = _rand((3,), device, 15, requires_grad=True)
    out = A.select_scatter(base, row, 0, -1)
    want = _np(base).copy()
    want[-1] = _np(row)
    np.testing.assert_array_equal(_np(out), want)
    assert gradcheck(lambda a, s: A.select_scatter(a, s, 0, 2), (base, row))
    with pytest.raises(RuntimeError, match="expected src to have a size equal to the slice of self"):
        A.slice_scatter(base, src, 0, 0, None, 1)
    with pytest.raises(IndexError, match="out of range"):
        A.select_scatter(base, row, 0, 4)


def _ref_avg_pool(x: np.ndarray, k, s, p, ceil_mode=False, count_include_pad=True, divisor=None) -> np.ndarray:
    nd = len(k)
    dims = x.shape[-nd:]
    outs = []
    for i in range(nd):
        n = (dims[i] + 2 * p[i] - k[i] + (s[i] - 1 if ceil_mode else 0)) // s[i] + 1
        if ceil_mode and (n - 1) * s[i] >= dims[i] + p[i]:
            n -= 1
        outs.append(n)
    out = np.zeros(x.shape[:-nd] + tuple(outs))
    for o in np.ndindex(*outs):
        lo = [o[i] * s[i] - p[i] for i in range(nd)]
        hi = [min(lo[i] + k[i], dims[i] + p[i]) for i in range(nd)]
        pool = int(np.prod([hi[i] - lo[i] for i in range(nd)]))
        lo_c = [max(v, 0) for v in lo]
        hi_c = [min(hi[i], dims[i]) for i in range(nd)]
        window = x[(...,) + tuple(slice(lo_c[i], hi_c[i]) for i in range(nd))]
        total = window.sum(axis=tuple(range(-nd, 0)))
        count = divisor or (pool if count_include_pad else int(np.prod([hi_c[i] - lo_c[i] for i in range(nd)])))
        out[(...,) + o] = total / count
    return out


@pytest.mark.parametrize("ceil_mode,cip,divisor", [(False, True, None), (True, False, None), (False, True, 5)])
def test_avg_pool3d_and_1d(device, ceil_mode, cip, divisor) -> None:
    x = _rand((2, 2, 5, 6, 7), device, 16, requires_grad=True)
    got = A.avg_pool3d(x, [3, 2, 3], [2, 2, 2], [1, 1, 0], ceil_mode, cip, divisor)
    np.testing.assert_allclose(_np(got), _ref_avg_pool(_np(x), [3, 2, 3], [2, 2, 2], [1, 1, 0], ceil_mode, cip,
                                                       divisor), rtol=1e-10)
    assert gradcheck(lambda t: A.avg_pool3d(t, [2, 2, 2], [2, 1, 2], [1, 0, 1], ceil_mode, cip, divisor),
                     (_rand((1, 1, 3, 3, 4), device, 17, requires_grad=True),))
    y = _rand((2, 3, 9), device, 18, requires_grad=True)
    np.testing.assert_allclose(_np(A.avg_pool1d(y, [3], [2], [1], ceil_mode, cip)),
                               _ref_avg_pool(_np(y), [3], [2], [1], ceil_mode, cip), rtol=1e-10)
    with pytest.raises(ValueError, match="Expected 4D or 5D"):
        A.avg_pool3d(y, [2, 2, 2])


def _ref_adaptive(x: np.ndarray, out: list) -> np.ndarray:
    nd = len(out)
    dims = x.shape[-nd:]
    res = np.zeros(x.shape[:-nd] + tuple(out))
    for o in np.ndindex(*out):
        sl = tuple(slice((o[i] * dims[i]) // out[i], -((-(o[i] + 1) * dims[i]) // out[i])) for i in range(nd))
        res[(...,) + o] = x[(...,) + sl].mean(axis=tuple(range(-nd, 0)))
    return res


def test_adaptive_pooling_1d_3d(device) -> None:
    x = _rand((2, 2, 5, 4, 7), device, 19, requires_grad=True)
    np.testing.assert_allclose(_np(A._adaptive_avg_pool3d(x, [3, 2, 4])), _ref_adaptive(_np(x), [3, 2, 4]),
                               rtol=1e-10)
    y = _rand((3, 7), device, 20, requires_grad=True)
    np.testing.assert_allclose(_np(A.adaptive_avg_pool1d(y, [3])), _ref_adaptive(_np(y), [3]), rtol=1e-10)
    assert gradcheck(lambda t: A._adaptive_avg_pool3d(t, [2, 2, 3]),
                     (_rand((1, 1, 3, 3, 4), device, 21, requires_grad=True),))


def test_max_pool3d_with_indices(device) -> None:
    x = _rand((2, 2, 5, 6, 7), device, 22, requires_grad=True)
    vals, idx = A.max_pool3d_with_indices(x, [3, 2, 3], [2, 2, 2], [1, 1, 0], [1, 2, 1])
    rv, ri = ref_max_pool3d(_np(x), [3, 2, 3], [2, 2, 2], [1, 1, 0], [1, 2, 1])
    np.testing.assert_array_equal(_np(vals), rv)
    np.testing.assert_array_equal(_np(idx), ri)
    # ties: the first element in (d, h, w) order wins, as the 3-d kernel scans
    ones = torch.ones(1, 1, 2, 2, 2, device=device)
    assert _np(A.max_pool3d_with_indices(ones, [2, 2, 2])[1]).ravel().tolist() == [0]
    assert gradcheck(lambda t: A.max_pool3d_with_indices(t, [2, 2, 2], [1, 2, 1])[0],
                     (_rand((1, 1, 3, 4, 3), device, 23, requires_grad=True),))


def test_pad3d_upsample_vec(device) -> None:
    x = _rand((1, 2, 3, 4, 5), device, 24, requires_grad=True)
    pad = [1, 2, 0, 1, 2, 1]
    widths = [(0, 0), (0, 0), (2, 1), (0, 1), (1, 2)]
    np.testing.assert_array_equal(_np(A.reflection_pad3d(x, pad)), np.pad(_np(x), widths, mode="reflect"))
    np.testing.assert_array_equal(_np(A.replication_pad3d(x, pad)), np.pad(_np(x), widths, mode="edge"))
    assert gradcheck(lambda t: A.reflection_pad3d(t, [1, 1, 1, 0, 0, 1]),
                     (_rand((1, 1, 2, 3, 3), device, 25, requires_grad=True),))
    with pytest.raises(ValueError, match="padding size is expected to be 6"):
        A.reflection_pad3d(x, [1, 1])
    img = _rand((1, 2, 3, 4), device, 26)
    np.testing.assert_array_equal(_np(A.upsample_nearest2d.vec(img, None, [2.0, 1.5])),
                                  _np(A.upsample_nearest2d(img, [6, 6], 2.0, 1.5)))
    np.testing.assert_array_equal(_np(A.upsample_bilinear2d.vec(img, [5, 7], True, None)),
                                  _np(A.upsample_bilinear2d(img, [5, 7], True)))
    with pytest.raises(ValueError, match="exactly one of output_size and scale_factors"):
        A.upsample_nearest2d.vec(img, [2, 2], [2.0, 2.0])


def test_col2im(device) -> None:
    cols = _rand((2, 2 * 6, 6), device, 27, requires_grad=True)
    args = ([3, 5], [2, 3], [1, 1], [1, 0], [2, 1])
    np.testing.assert_allclose(_np(A.col2im(cols, *args)), ref_col2im(_np(cols), *args), rtol=1e-12)
    assert gradcheck(lambda t: A.col2im(t, *args), (cols,))
    with pytest.raises(ValueError, match="expected size of input's dimension 2 to match the calculated number of "
                                         "sliding blocks"):
        A.col2im(_rand((2, 12, 7), device), *args)


def test_distances(device) -> None:
    a, b = _rand((3, 4), device, 28, requires_grad=True), _rand((5, 4), device, 29, requires_grad=True)
    for p in (0.5, 1.0, 2.0, 3.0, float("inf")):
        diff = np.abs(_np(a)[:, None, :] - _np(b)[None, :, :])
        want = diff.max(-1) if p == float("inf") else (diff ** p).sum(-1) ** (1 / p)
        np.testing.assert_allclose(_np(A._cdist_forward(a, b, p, None)), want, rtol=1e-10)
    assert gradcheck(lambda x, y: A._cdist_forward(x, y, 2.0, None), (a, b))
    d = A._pdist_forward(a, 2.0)
    i, j = np.triu_indices(3, 1)
    np.testing.assert_allclose(_np(d), np.linalg.norm(_np(a)[i] - _np(a)[j], axis=1), rtol=1e-12)
    with pytest.raises(ValueError, match="same number of columns"):
        A._cdist_forward(a, _rand((2, 3), device), 2.0, None)
    with pytest.raises(ValueError, match="pdist only supports 2D tensors"):
        A._pdist_forward(_rand((2, 3, 4), device), 2.0)


@pytest.mark.parametrize("mode,padding,align", [(0, 0, False), (0, 1, True), (0, 2, False), (0, 2, True),
                                                (1, 0, False), (1, 2, True)])
def test_grid_sampler_2d(device, mode, padding, align) -> None:
    x = _rand((2, 3, 4, 5), device, 31, requires_grad=True)
    grid = _rand((2, 3, 6, 2), device, 32, low=-1.4, high=1.4, requires_grad=True)
    got = A.grid_sampler_2d(x, grid, mode, padding, align)
    np.testing.assert_allclose(_np(got), ref_grid_sampler_2d(_np(x), _np(grid), mode, padding, align), rtol=1e-12,
                               atol=1e-12)
    if mode == 0:
        assert gradcheck(lambda a, g: A.grid_sampler_2d(a, g, mode, padding, align), (x, grid))
    with pytest.raises(NotImplementedError, match="bicubic"):
        A.grid_sampler_2d(x, grid, 2, padding, align)
    with pytest.raises(ValueError, match="expected 4D input and grid"):
        A.grid_sampler_2d(x, grid[0], mode, padding, align)


def test_embedding_bag(device) -> None:
    """Values torch 2.13 gives for these inputs (all four outputs, its CPU conventions)."""
    w = torch.arange(12.0, device=device).reshape(6, 2)
    idx, off = _t([1, 2, 4, 5, 4, 3, 2], device), _t([0, 2, 2, 5], device)

    def bag(*args):
        return [t.cpu().tolist() for t in A._embedding_bag(w, idx, off, False, *args)]

    assert bag(0) == [[[6, 8], [0, 0], [26, 29], [10, 12]], [], [0, 0, 0, 0], [0, 0, 0, 0]]
    out, o2b, size, maxi = bag(1, False, None, True, -1)
    np.testing.assert_allclose(out, [[3, 4], [0, 0], [5.2, 5.8]], rtol=1e-6)
    assert (o2b, size, maxi) == ([0, 0, 2, 2, 2, 2, 2], [2, 0, 5], [2, 0, 5])
    assert bag(2) == [[[4, 5], [0, 0], [10, 11], [6, 7]], [0, 0, 2, 2, 2, 3, 3], [2, 0, 3, 2],
                      [[2, 2], [0, 0], [5, 5], [3, 3]]]
    out, _, size, _ = bag(1, False, None, False, 2)
    np.testing.assert_allclose(out, [[2, 3], [0, 0], [26 / 3, 29 / 3], [6, 7]], rtol=1e-6)
    assert size == [1, 0, 3, 1]
    psw = torch.full((7,), 2.0, dtype=torch.float64, device=device, requires_grad=True)
    wr = _rand((6, 2), device, 33, requires_grad=True)
    assert gradcheck(lambda a, p: A._embedding_bag(a, idx, off, False, 0, False, p)[0], (wr, psw))
    assert gradcheck(lambda a: A._embedding_bag(a, idx, off, False, 1)[0], (wr,))
    with pytest.raises(ValueError, match="offsets\\[0\\] has to be 0"):
        A._embedding_bag(w, idx, _t([1, 2], device))
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for mode='sum'"):
        A._embedding_bag(w, idx, off, False, 1, False, psw)


def test_sym_queries(device) -> None:
    x = torch.zeros(2, 3, 4, device=device).transpose(0, 2)[1:]
    assert A.sym_size(x, 0) == 3 and A.sym_size(x, -1) == 2
    assert A.sym_stride(x, 0) == 1 and A.sym_stride(x, 2) == 12
    assert A.sym_numel(x) == 18 and A.sym_storage_offset(x) == 1
    with pytest.raises(IndexError, match="Dimension out of range"):
        A.sym_size(x, 3)


def test_backend_matches_cpu(backend_device) -> None:
    """Every backend runs the same composites/kernels: identical numbers."""
    x = _rand((2, 2, 4, 5, 6), "cpu", 30)
    xa = x.to(backend_device)
    for f in (lambda t: A.avg_pool3d(t, [2, 2, 2]), lambda t: A.max_pool3d_with_indices(t, [2, 2, 2])[1],
              lambda t: torch.acos(t.clamp(-0.9, 0.9)), lambda t: torch.fmod(t, 0.7),
              lambda t: A.native_group_norm(t.reshape(2, 4, 60), None, None, 2, 4, 60, 2, 1e-5)[0]):
        np.testing.assert_array_equal(_np(f(xa)), _np(f(x)))
