"""OpInfos of the core-tagged operators issue 20 adds (ops/CoreOps20.cpp, UnaryExtras.cpp, BinaryArith.cpp,
NNOps.cpp), read by ``_opinfo._build``.

Same conventions as ``_opinfo``: numpy references receive float16/bfloat16 upcast, results are compared after
casting to the operator's result dtype. Values of the pooling, norm-backward and distance operators are also
checked against numpy and numerical gradients in tests/test_ops_core20.py.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

import numpy as np

from backend_sdk import _C

from ._opinfo_ops20 import _S, _ovl, _positive_samples, _ref_batch_norm, _ref_pad_mode, _unary_samples, _unit_samples
from ._sample_inputs import ALL_DTYPES, FLOATING, NUMERIC, SampleInput, make_tensor

__all__ = ["make_core20_ops"]


def _aten() -> Any:
    from backend_sdk import ops

    return ops.aten


def _acosh_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4), low=1.1, high=9), (), {}, "2d")
    yield SampleInput(T((2, 3, 4), "transposed", low=1.1, high=9), (), {}, "transposed")


def _hyperbolic_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4), low=-3, high=3), (), {}, "2d")
    yield SampleInput(T((2, 3, 4), "transposed", low=-3, high=3), (), {}, "transposed")
    yield SampleInput(T(()), (), {}, "0d")


def _binary_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), (T((3, 4), low=1, high=5),), {}, "same")
    yield SampleInput(T((2, 3, 4), "transposed"), (T((4,), low=1, high=4),), {}, "broadcast")


def _fmod_scalar_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), (3,), {}, "int_scalar")
    yield SampleInput(T((2, 3), "transposed"), (-2 if dtype != _C.uint8 else 2,), {}, "negative_scalar")


def _activation_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), (), {}, "default")
    yield SampleInput(T((2, 3, 4), "transposed"), (), {}, "transposed")


def _ref_hardtanh(x: np.ndarray, lo: float = -1, hi: float = 1) -> np.ndarray:
    return np.where(x <= lo, lo, np.where(x >= hi, hi, x))


def _ref_elu(x: np.ndarray, alpha: float = 1, scale: float = 1, input_scale: float = 1) -> np.ndarray:
    return np.where(x > 0, scale * x, scale * alpha * np.expm1(x * input_scale))


def _softmax_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), (1, False), {}, "last")
    yield SampleInput(T((2, 3, 4), "transposed"), (0, False), {}, "dim0")


def _ref_softmax(x: np.ndarray, dim: int, half_to_float: bool = False) -> np.ndarray:
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def _ref_log_softmax(x: np.ndarray, dim: int, half_to_float: bool = False) -> np.ndarray:
    return np.log(_ref_softmax(x.astype(np.float64), dim))


def _softmax_backward_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), (T((3, 4)), 1, dtype), {}, "last")
    yield SampleInput(T((2, 3, 4), "transposed"), (T((2, 3, 4)), 0, dtype), {}, "dim0")


def _ref_softmax_backward_data(g: np.ndarray, y: np.ndarray, dim: int, input_dtype: Any) -> np.ndarray:
    return (g - (g * y).sum(axis=dim, keepdims=True)) * y


def _ref_log_softmax_backward_data(g: np.ndarray, y: np.ndarray, dim: int, input_dtype: Any) -> np.ndarray:
    return g - np.exp(y) * g.sum(axis=dim, keepdims=True)


def _bn_legit_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((4, 3, 2, 2)), (T((3,)), T((3,)), T((3,)), T((3,), low=0.5, high=2), True, 0.1, 1e-5), {},
                      "train")
    yield SampleInput(T((4, 3)), (None, None, T((3,)), T((3,), low=0.5, high=2), False, 0.1, 1e-5), {}, "eval")


def _bn_no_stats_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((4, 3, 2)), (T((3,)), T((3,)), True, 0.1, 1e-5), {}, "train")


def _bn_no_training_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((4, 3, 2)), (T((3,)), None, T((3,)), T((3,), low=0.5, high=2), 0.1, 1e-5), {}, "eval")


def _group_norm_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((2, 4, 3)), (T((4,)), T((4,)), 2, 4, 3, 2, 1e-5), {}, "affine")
    yield SampleInput(T((3, 6, 2, 2)), (None, None, 3, 6, 4, 3, 1e-5), {}, "plain")


def ref_group_norm(x: np.ndarray, w: Any, b: Any, n: int, c: int, hxw: int, g: int, eps: float) -> tuple:
    """numpy native_group_norm: (output, mean, rstd), statistics in float64."""
    xs = x.astype(np.float64).reshape(n, g, -1)
    mean = xs.mean(axis=2, keepdims=True)
    rstd = 1 / np.sqrt(xs.var(axis=2, keepdims=True) + eps)
    y = ((xs - mean) * rstd).reshape(n, c, hxw)
    if w is not None:
        y = y * w.reshape(c, 1)
    if b is not None:
        y = y + b.reshape(c, 1)
    return y.reshape(x.shape), mean.reshape(n, g), rstd.reshape(n, g)


def _group_norm_backward_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((2, 4, 3)), (T((2, 4, 3)), T((2, 2)), T((2, 2), low=0.5, high=2), T((4,)), 2, 4, 3, 2,
                                     [True, True, True]), {}, "all")


def _any_dims_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4, 2)), ([0, 2],), {}, "two_dims")
    yield SampleInput(T((3, 4), "transposed"), ([1], True), {}, "keepdim")
    yield SampleInput(T((3, 4)), (None,), {}, "all")


def _ref_any_dims(x: np.ndarray, dim: Any = None, keepdim: bool = False) -> np.ndarray:
    return np.any(x, axis=None if not dim else tuple(dim), keepdims=keepdim)


def _var_dim_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), ([0], True), {}, "unbiased")
    yield SampleInput(T((2, 3, 4), "transposed"), ([1, 2], False, True), {}, "biased_keepdim")


def _ref_var_dim(x: np.ndarray, dim: Any, unbiased: bool = True, keepdim: bool = False) -> np.ndarray:
    return np.var(x.astype(np.float64), axis=tuple(dim), ddof=1 if unbiased else 0, keepdims=keepdim)


def _copy_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), (T((4,)),), {}, "broadcast")
    yield SampleInput(T((2, 3), "transposed"), (make_tensor((2, 3), _C.float64, rng, low=0, high=1),), {}, "convert")


def _ref_copy(x: np.ndarray, src: np.ndarray, non_blocking: bool = False) -> np.ndarray:
    return np.broadcast_to(src, x.shape).astype(x.dtype)


def _fill_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), (True if dtype == _C.bool else 2,), {}, "2d")
    yield SampleInput(T((2, 3), "transposed"), (0,), {}, "transposed")


def _scatter_slice_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((4, 3)), (T((2, 3)), 0, 0, None, 2), {}, "step")
    yield SampleInput(T((3, 5), "transposed"), (T((3, 2)), 1, -3, 4), {}, "negative_start")


def _ref_slice_scatter(x: np.ndarray, src: np.ndarray, dim: int = 0, start: Any = None, end: Any = None,
                       step: int = 1) -> np.ndarray:
    out = x.copy()
    sl = [slice(None)] * x.ndim
    sl[dim] = slice(start, end, step)
    out[tuple(sl)] = src
    return out


def _scatter_select_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), (T((4,)), 0, 1), {}, "row")
    yield SampleInput(T((2, 3, 4), "transposed"), (T((2, 4)), 1, -1), {}, "negative_index")


def _ref_select_scatter(x: np.ndarray, src: np.ndarray, dim: int, index: int) -> np.ndarray:
    out = x.copy()
    sl = [slice(None)] * x.ndim
    sl[dim] = index
    out[tuple(sl)] = src
    return out


def _avg_pool1d_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((2, 3, 7)), ([3], [2], [1]), {}, "padded")
    yield SampleInput(T((3, 8)), ([2],), {}, "unbatched")


def _adaptive1d_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((2, 3, 7)), ([3],), {}, "uneven")


def _pool3d_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((2, 2, 4, 5, 6)), ([2, 2, 2],), {}, "default_stride")
    yield SampleInput(T((2, 5, 5, 4)), ([3, 2, 3], [2, 1, 2], [1, 0, 1]), {}, "padded_unbatched")


def ref_max_pool3d(x: np.ndarray, k: list, s: Any = None, p: Any = (0, 0, 0), d: Any = (1, 1, 1),
                   ceil_mode: bool = False) -> tuple:
    """numpy max_pool3d_with_indices (no ceil_mode): values and flat D*H*W indices, first maximum wins."""
    k, s, p, d = [list(v) * (3 // len(v)) for v in (k, s or k, p, d)]
    dims = x.shape[-3:]
    out_sz = [(dims[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(3)]
    vals = np.full(x.shape[:-3] + tuple(out_sz), -np.inf)
    idx = np.zeros(x.shape[:-3] + tuple(out_sz), np.int64)
    for o in np.ndindex(*out_sz):
        for w in np.ndindex(*k):
            pos = [o[i] * s[i] - p[i] + w[i] * d[i] for i in range(3)]
            if all(0 <= pos[i] < dims[i] for i in range(3)):
                v = x[(...,) + tuple(pos)]
                better = v > vals[(...,) + o]
                vals[(...,) + o] = np.where(better, v, vals[(...,) + o])
                idx[(...,) + o] = np.where(better, (pos[0] * dims[1] + pos[1]) * dims[2] + pos[2], idx[(...,) + o])
    return vals, idx


def _adaptive3d_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((2, 2, 5, 4, 3)), ([2, 3, 2],), {}, "uneven")


def _pad3d_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((1, 2, 3, 4, 5)), ([1, 2, 0, 1, 2, 1],), {}, "batched")


def _upsample_vec_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((1, 2, 3, 4)), (None, [2.0, 1.5]), {}, "scales")
    yield SampleInput(T((1, 2, 3, 4)), ([5, 6], None), {}, "size")


def _bilinear_vec_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((1, 2, 3, 4)), (None, False, [2.0, 1.5]), {}, "scales")
    yield SampleInput(T((1, 2, 4, 4)), ([3, 2], True, None), {}, "size_align_corners")


def _col2im_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((2, 12, 9)), ([4, 4], [2, 2], [1, 1], [0, 0], [1, 1]), {}, "batched")
    yield SampleInput(T((8, 6)), ([3, 5], [2, 2], [1, 2], [1, 0], [2, 1]), {}, "unbatched_padded_dilated")


def ref_col2im(x: np.ndarray, out: list, k: list, d: list, p: list, s: list) -> np.ndarray:
    """numpy col2im (fold): sum each column entry into its image position."""
    batched = x.ndim == 3
    x = x if batched else x[None]
    n, ckk, _ = x.shape
    c = ckk // (k[0] * k[1])
    hp, wp = out[0] + 2 * p[0], out[1] + 2 * p[1]
    bh = (hp - (d[0] * (k[0] - 1) + 1)) // s[0] + 1
    bw = (wp - (d[1] * (k[1] - 1) + 1)) // s[1] + 1
    img = np.zeros((n, c, hp, wp), np.float64)
    cols = x.reshape(n, c, k[0], k[1], bh, bw)
    for ki in range(k[0]):
        for kj in range(k[1]):
            for bi in range(bh):
                for bj in range(bw):
                    img[:, :, bi * s[0] + ki * d[0], bj * s[1] + kj * d[1]] += cols[:, :, ki, kj, bi, bj]
    img = img[:, :, p[0]:p[0] + out[0], p[1]:p[1] + out[1]]
    return img if batched else img[0]


def _cdist_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), (T((5, 4)), 2.0, None), {}, "euclidean")
    yield SampleInput(T((2, 3, 4)), (T((2, 2, 4)), 1.0, None), {}, "batched_l1")
    yield SampleInput(T((3, 2)), (T((4, 2)), float("inf"), None), {}, "chebyshev")


def _ref_cdist(a: np.ndarray, b: np.ndarray, p: float, mode: Any = None) -> np.ndarray:
    diff = np.abs(a.astype(np.float64)[..., :, None, :] - b.astype(np.float64)[..., None, :, :])
    if p == float("inf"):
        return diff.max(axis=-1)
    return (diff ** p).sum(axis=-1) ** (1 / p)


def _pdist_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((5, 4)), (2.0,), {}, "euclidean")
    yield SampleInput(T((4, 3)), (1.0,), {}, "l1")


def _ref_pdist(x: np.ndarray, p: float = 2.0) -> np.ndarray:
    i, j = np.triu_indices(x.shape[0], 1)
    return _ref_cdist(x[i][:, None, :], x[j][:, None, :], p)[:, 0, 0]


def _factory_arange_samples(op: Any, dtype: Any, rng: np.random.Generator) -> Iterable[SampleInput]:
    yield SampleInput(1, (10, 3), {"dtype": dtype}, "int_step")
    if dtype in FLOATING:
        yield SampleInput(0.5, (3.0, 0.25), {"dtype": dtype}, "float_step")
    yield SampleInput(5, (-4, -2), {"dtype": dtype} if dtype not in (_C.uint8,) else {"dtype": _C.int64}, "negative")


def _scalar_tensor_samples(op: Any, dtype: Any, rng: np.random.Generator) -> Iterable[SampleInput]:
    yield SampleInput(True if dtype == _C.bool else 3, (), {"dtype": dtype}, "value")


def _grid_sampler_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((2, 3, 4, 5)), (T((2, 3, 6, 2), low=-1.2, high=1.2), 0, 0, False), {}, "bilinear_zeros")
    yield SampleInput(T((1, 2, 3, 3)), (T((1, 2, 2, 2), low=-1.5, high=1.5), 1, 1, True), {}, "nearest_border")
    yield SampleInput(T((1, 2, 4, 3)), (T((1, 3, 2, 2), low=-2, high=2), 0, 2, False), {}, "bilinear_reflection")


def ref_grid_sampler_2d(x: np.ndarray, grid: np.ndarray, mode: int, padding: int, align: bool) -> np.ndarray:
    """numpy grid_sampler_2d (bilinear / nearest; zeros, border, reflection), PyTorch's coordinate rules."""
    n, c, h, w = x.shape

    def source(coord: np.ndarray, size: int) -> np.ndarray:
        v = (coord + 1) / 2 * (size - 1) if align else ((coord + 1) * size - 1) / 2
        if padding == 2:
            lo, hi = (0.0, 2.0 * (size - 1)) if align else (-1.0, 2.0 * size - 1)
            if lo == hi:
                v = np.zeros_like(v)
            else:
                mn, span = lo / 2, (hi - lo) / 2
                a = np.abs(v - mn)
                extra, flips = np.fmod(a, span), np.floor(a / span)
                v = np.where(flips % 2 == 0, extra + mn, span - extra + mn)
        if padding >= 1:
            v = np.clip(v, 0, size - 1)
        return v

    ix, iy = source(grid[..., 0], w), source(grid[..., 1], h)
    out = np.zeros((n, c) + grid.shape[1:3])

    def tap(xi: np.ndarray, yi: np.ndarray) -> np.ndarray:
        ok = (xi >= 0) & (xi <= w - 1) & (yi >= 0) & (yi <= h - 1)
        xc, yc = np.clip(xi, 0, w - 1).astype(int), np.clip(yi, 0, h - 1).astype(int)
        vals = np.stack([x[b][:, yc[b], xc[b]] for b in range(n)])
        return vals * ok[:, None]

    if mode == 1:
        return tap(np.round(ix), np.round(iy))
    x0, y0 = np.floor(ix), np.floor(iy)
    wx1, wy1 = ix - x0, iy - y0
    for xi, yi, wgt in ((x0, y0, (1 - wx1) * (1 - wy1)), (x0 + 1, y0, wx1 * (1 - wy1)),
                        (x0, y0 + 1, (1 - wx1) * wy1), (x0 + 1, y0 + 1, wx1 * wy1)):
        out = out + tap(xi, yi) * wgt[:, None]
    return out


def _embedding_bag_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    import backend_sdk

    idx = make_tensor((7,), _C.int64, rng, low=0, high=5)
    off = backend_sdk.tensor([0, 2, 2, 5])
    yield SampleInput(T((6, 3)), (idx, off, False, 0), {}, "sum")
    yield SampleInput(T((6, 3)), (idx, off, False, 1, False, None, True, 2), {}, "mean_last_offset_padding")
    yield SampleInput(T((6, 3)), (idx, off, False, 2), {}, "max")


def ref_embedding_bag(w: np.ndarray, idx: np.ndarray, off: np.ndarray, scale: bool = False, mode: int = 0,
                      sparse: bool = False, psw: Any = None, last: bool = False, pad: int = -1) -> np.ndarray:
    """numpy _embedding_bag output 0 (PyTorch's CPU rules: with include_last_offset the reduction stops at the
    last offset, the mean divides by every non-padding index of the bag)."""
    b = len(off) - (1 if last else 0)
    n = len(idx)
    end = off[b] if last else n
    out = np.zeros((b, w.shape[1]))
    for i in range(b):
        hi = off[i + 1] if i + 1 < b else n
        js = [j for j in range(off[i], hi) if idx[j] != pad]
        rows = [w[idx[j]] * (1 if psw is None else psw[j]) for j in js if j < end]
        if rows:
            out[i] = np.max(rows, axis=0) if mode == 2 else np.sum(rows, axis=0) / (len(js) if mode == 1 else 1)
    return out


def _same(s: SampleInput) -> Any:
    return s.input.dtype


def _floating_result(s: SampleInput) -> Any:
    return s.input.dtype if s.input.dtype in FLOATING else _C.float32


def make_core20_ops(OpInfo: Any) -> list:
    """The OpInfos (OpInfo is ``_opinfo.OpInfo``, passed in to avoid a circular import)."""
    from ._opinfo import _factory_samples

    F = FLOATING
    fn = ("functional",)
    all_v = ("functional", "method", "inplace", "out")
    loose = {"float16": 5e-2, "bfloat16": 2e-1, "float32": 1e-4}
    unary = [
        ("acos", _unit_samples, np.arccos), ("asin", _unit_samples, np.arcsin), ("atan", _unary_samples, np.arctan),
        ("acosh", _acosh_samples, np.arccosh), ("asinh", _unary_samples, np.arcsinh),
        ("atanh", _unit_samples, np.arctanh), ("sinh", _hyperbolic_samples, np.sinh),
        ("cosh", _hyperbolic_samples, np.cosh),
    ]
    ops = [
        OpInfo(name, _S(samples), _ovl(name, "", "_", ".out"), F, ref, all_v, True, result_dtype=_floating_result,
               category="unary", check_unsupported_dtypes=False)
        for name, samples, ref in unary
    ]
    ops += [
        OpInfo("atan2", _S(_binary_samples), _ovl("atan2", "", "_", ".out"), F, np.arctan2, all_v, True,
               result_dtype=_same, category="binary", check_unsupported_dtypes=False),
        OpInfo("fmod", _S(_binary_samples), _ovl("fmod", ".Tensor", "_.Tensor", ".Tensor_out"), NUMERIC, np.fmod,
               all_v, True, result_dtype=_same, category="binary", check_unsupported_dtypes=False),
        OpInfo("fmod", _S(_fmod_scalar_samples), _ovl("fmod", ".Scalar", "_.Scalar", ".Scalar_out"), NUMERIC,
               np.fmod, all_v, True, result_dtype=_same, category="binary_scalar", variant_name="scalar",
               check_unsupported_dtypes=False),
        OpInfo("hardtanh", _S(_activation_samples), _ovl("hardtanh", ""), F, _ref_hardtanh, fn, True,
               result_dtype=_same, category="nn", op=lambda *a: _aten().hardtanh(*a), check_unsupported_dtypes=False),
        OpInfo("leaky_relu", _S(_activation_samples), _ovl("leaky_relu", ""), F,
               lambda x, s=0.01: np.where(x > 0, x, x * s), fn, True, result_dtype=_same, category="nn",
               op=lambda *a: _aten().leaky_relu(*a), check_unsupported_dtypes=False),
        OpInfo("elu", _S(_activation_samples), _ovl("elu", ""), F, _ref_elu, fn, True, loose, loose,
               result_dtype=_same, category="nn", op=lambda *a: _aten().elu(*a), check_unsupported_dtypes=False),
        OpInfo("_softmax", _S(_softmax_samples), _ovl("_softmax", ""), F, _ref_softmax, fn, True, loose, loose,
               result_dtype=_same, category="nn", op=lambda *a: _aten()._softmax(*a), check_unsupported_dtypes=False),
        OpInfo("_log_softmax", _S(_softmax_samples), _ovl("_log_softmax", ""), F, _ref_log_softmax, fn, True, loose,
               loose, result_dtype=_same, category="nn", op=lambda *a: _aten()._log_softmax(*a),
               check_unsupported_dtypes=False),
        OpInfo("_softmax_backward_data", _S(_softmax_backward_samples), _ovl("_softmax_backward_data", ""), F,
               _ref_softmax_backward_data, fn, True, loose, loose, result_dtype=_same, category="nn",
               op=lambda *a: _aten()._softmax_backward_data(*a), check_unsupported_dtypes=False),
        OpInfo("_log_softmax_backward_data", _S(_softmax_backward_samples), _ovl("_log_softmax_backward_data", ""), F,
               _ref_log_softmax_backward_data, fn, True, loose, loose, result_dtype=_same, category="nn",
               op=lambda *a: _aten()._log_softmax_backward_data(*a), check_unsupported_dtypes=False),
        OpInfo("_native_batch_norm_legit", _S(_bn_legit_samples), _ovl("_native_batch_norm_legit", ""), F,
               _ref_batch_norm, fn, category="nn", atol=loose, rtol=loose, check_unsupported_dtypes=False,
               op=lambda *a: _aten()._native_batch_norm_legit(*a)),
        OpInfo("_native_batch_norm_legit", _S(_bn_no_stats_samples), _ovl("_native_batch_norm_legit", ".no_stats"), F,
               lambda x, w, b, t, m, e: _ref_batch_norm(x, w, b, None, None, t, m, e), fn, category="nn",
               atol=loose, rtol=loose, variant_name="no_stats", check_unsupported_dtypes=False,
               op=lambda *a: _aten()._native_batch_norm_legit.no_stats(*a)),
        OpInfo("_native_batch_norm_legit_no_training", _S(_bn_no_training_samples),
               _ovl("_native_batch_norm_legit_no_training", ""), F,
               lambda x, w, b, rm, rv, m, e: _ref_batch_norm(x, w, b, rm, rv, False, m, e), fn, category="nn",
               atol=loose, rtol=loose, check_unsupported_dtypes=False,
               op=lambda *a: _aten()._native_batch_norm_legit_no_training(*a)),
        OpInfo("native_group_norm", _S(_group_norm_samples), _ovl("native_group_norm", ""), F, ref_group_norm, fn,
               True, loose, loose, category="nn", check_unsupported_dtypes=False,
               op=lambda *a: _aten().native_group_norm(*a)),
        OpInfo("native_group_norm_backward", _S(_group_norm_backward_samples), _ovl("native_group_norm_backward", ""),
               F, None, fn, category="nn", check_unsupported_dtypes=False,
               op=lambda *a: _aten().native_group_norm_backward(*a)[0],
               doc="grad_input here; all three outputs against numerical gradients in tests/test_ops_core20.py"),
        OpInfo("any", _S(_any_dims_samples), _ovl("any", ".dims"), (_C.bool, _C.int64, _C.float32), _ref_any_dims,
               fn, result_dtype=lambda s: _C.bool, category="reduction", variant_name="dims",
               op=lambda *a: _aten().any.dims(*a), check_unsupported_dtypes=False),
        OpInfo("var", _S(_var_dim_samples), _ovl("var", ".dim"), F, _ref_var_dim, fn, True, loose, loose,
               result_dtype=_same, category="reduction", variant_name="dim", op=lambda *a, **kw: _aten().var.dim(*a, **kw),
               check_unsupported_dtypes=False),
        OpInfo("copy", _S(_copy_samples), _ovl("copy", ""), ALL_DTYPES, _ref_copy, fn, True, result_dtype=_same,
               category="shape", op=lambda *a: _aten().copy(*a), check_unsupported_dtypes=False),
        OpInfo("fill", _S(_fill_samples), _ovl("fill", ".Scalar"), ALL_DTYPES, lambda x, v: np.full_like(x, v), fn,
               result_dtype=_same, category="shape", variant_name="functional_scalar",
               op=lambda *a: _aten().fill.Scalar(*a), check_unsupported_dtypes=False),
        OpInfo("full_like", _S(_fill_samples), _ovl("full_like", ""), ALL_DTYPES, lambda x, v: np.full_like(x, v), fn,
               result_dtype=_same, category="shape", op=lambda *a: _aten().full_like(*a),
               check_unsupported_dtypes=False),
        OpInfo("full", _factory_samples("full"), _ovl("full", ""), ALL_DTYPES,
               lambda size, v, dtype=None: np.full(size, v), fn, op=lambda *a, **kw: _aten().full(*a, **kw),
               result_dtype=lambda s: s.kwargs["dtype"], category="factory", variant_name="aten"),
        OpInfo("scalar_tensor", _scalar_tensor_samples, _ovl("scalar_tensor", ""), ALL_DTYPES,
               lambda v, dtype=None: np.asarray(v), fn, op=lambda *a, **kw: _aten().scalar_tensor(*a, **kw),
               result_dtype=lambda s: s.kwargs["dtype"], category="factory"),
        OpInfo("arange", _factory_arange_samples, _ovl("arange", ".start_step"),
               tuple(d for d in NUMERIC if d != _C.uint8), lambda *a, dtype=None: np.arange(*a, dtype=np.float64),
               fn, op=lambda *a, **kw: _aten().arange.start_step(*a, **kw), result_dtype=lambda s: s.kwargs["dtype"],
               category="factory", variant_name="start_step"),
        OpInfo("slice_scatter", _S(_scatter_slice_samples), _ovl("slice_scatter", ""), ALL_DTYPES,
               _ref_slice_scatter, ("functional", "method"), True, result_dtype=_same, category="shape",
               check_unsupported_dtypes=False),
        OpInfo("select_scatter", _S(_scatter_select_samples), _ovl("select_scatter", ""), ALL_DTYPES,
               _ref_select_scatter, ("functional", "method"), True, result_dtype=_same, category="shape",
               check_unsupported_dtypes=False),
        OpInfo("avg_pool1d", _S(_avg_pool1d_samples), _ovl("avg_pool1d", ""), F, None, fn, True, category="nn",
               check_unsupported_dtypes=False, op=lambda *a: _aten().avg_pool1d(*a)),
        OpInfo("adaptive_avg_pool1d", _S(_adaptive1d_samples), _ovl("adaptive_avg_pool1d", ""), F, None, fn, True,
               category="nn", check_unsupported_dtypes=False, op=lambda *a: _aten().adaptive_avg_pool1d(*a)),
        OpInfo("avg_pool3d", _S(_pool3d_samples), _ovl("avg_pool3d", ""), F, None, fn, True, category="nn",
               check_unsupported_dtypes=False, op=lambda *a: _aten().avg_pool3d(*a)),
        OpInfo("_adaptive_avg_pool3d", _S(_adaptive3d_samples), _ovl("_adaptive_avg_pool3d", ""), F, None, fn, True,
               category="nn", check_unsupported_dtypes=False, op=lambda *a: _aten()._adaptive_avg_pool3d(*a)),
        OpInfo("max_pool3d_with_indices", _S(_pool3d_samples), _ovl("max_pool3d_with_indices", ""), F, ref_max_pool3d,
               fn, True,
               category="nn", check_unsupported_dtypes=False, op=lambda *a: _aten().max_pool3d_with_indices(*a)),
        OpInfo("reflection_pad3d", _S(_pad3d_samples), _ovl("reflection_pad3d", ""), ALL_DTYPES,
               lambda x, p: _ref_pad_mode(x, p, "reflect"), fn, True, result_dtype=_same, category="nn",
               check_unsupported_dtypes=False, op=lambda *a: _aten().reflection_pad3d(*a)),
        OpInfo("replication_pad3d", _S(_pad3d_samples), _ovl("replication_pad3d", ""), ALL_DTYPES,
               lambda x, p: _ref_pad_mode(x, p, "replicate"), fn, True, result_dtype=_same, category="nn",
               check_unsupported_dtypes=False, op=lambda *a: _aten().replication_pad3d(*a)),
        OpInfo("upsample_nearest2d", _S(_upsample_vec_samples), _ovl("upsample_nearest2d", ".vec"), F, None, fn, True,
               category="nn", variant_name="vec", check_unsupported_dtypes=False,
               op=lambda *a: _aten().upsample_nearest2d.vec(*a)),
        OpInfo("upsample_bilinear2d", _S(_bilinear_vec_samples), _ovl("upsample_bilinear2d", ".vec"), F, None, fn,
               True, category="nn", variant_name="vec", check_unsupported_dtypes=False,
               op=lambda *a: _aten().upsample_bilinear2d.vec(*a)),
        OpInfo("col2im", _S(_col2im_samples), _ovl("col2im", ""), F, ref_col2im, fn, True, loose, loose,
               result_dtype=_same, category="nn", check_unsupported_dtypes=False,
               op=lambda *a: _aten().col2im(*a)),
        OpInfo("grid_sampler_2d", _S(_grid_sampler_samples), _ovl("grid_sampler_2d", ""), F, ref_grid_sampler_2d, fn,
               True, loose, loose, result_dtype=_same, category="nn", check_unsupported_dtypes=False,
               op=lambda *a: _aten().grid_sampler_2d(*a)),
        OpInfo("_embedding_bag", _S(_embedding_bag_samples), _ovl("_embedding_bag", ""), F, ref_embedding_bag, fn,
               True, loose, loose, result_dtype=_same, category="nn", check_unsupported_dtypes=False,
               op=lambda *a: _aten()._embedding_bag(*a)[0],
               doc="output 0 here; the other three against torch 2.13's values in tests/test_ops_core20.py"),
        OpInfo("_cdist_forward", _S(_cdist_samples), _ovl("_cdist_forward", ""), F, _ref_cdist, fn, True, loose,
               loose, result_dtype=_same, category="nn", check_unsupported_dtypes=False,
               op=lambda *a: _aten()._cdist_forward(*a)),
        OpInfo("_pdist_forward", _S(_pdist_samples), _ovl("_pdist_forward", ""), F, _ref_pdist, fn, True, loose,
               loose, result_dtype=_same, category="nn", check_unsupported_dtypes=False,
               op=lambda *a: _aten()._pdist_forward(*a)),
    ]
    return ops
