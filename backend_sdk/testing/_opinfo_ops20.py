"""OpInfos of the operators issue 20 adds (tensor methods and nn operators), read by ``_opinfo._build``.

Same conventions as ``_opinfo``: numpy references receive float16/bfloat16 upcast, results are
compared after casting to the operator's result dtype.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

import numpy as np

from backend_sdk import _C

from ._sample_inputs import ALL_DTYPES, FLOATING, NUMERIC, SampleInput, make_tensor

__all__ = ["make_ops20_ops", "make_ops20_nn_ops"]


def _S(fn: Callable) -> Callable:
    def gen(op: Any, dtype: Any, rng: np.random.Generator) -> Iterable[SampleInput]:
        def T(shape: tuple, layout: str = "contiguous", **kw: Any) -> Any:
            return make_tensor(shape, dtype, rng, layout=layout, **kw)
        return fn(dtype, rng, T)
    return gen


def _ovl(name: str, *suffixes: str) -> tuple:
    return tuple(f"aten::{name}{s}" for s in suffixes)


def _unary_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), (), {}, "2d")
    yield SampleInput(T((2, 3, 4), "transposed"), (), {}, "transposed")
    yield SampleInput(T(()), (), {}, "0d")
    yield SampleInput(T((0, 3)), (), {}, "empty")


def _positive_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4), low=0.5, high=9), (), {}, "2d")
    yield SampleInput(T((2, 3, 4), "transposed", low=0.5, high=9), (), {}, "transposed")


def _unit_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4), low=-0.9, high=0.9), (), {}, "2d")
    yield SampleInput(T((2, 3), "transposed", low=-0.9, high=0.9), (), {}, "transposed")


def _tri_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), (), {}, "main")
    yield SampleInput(T((2, 3, 4), "transposed"), (1,), {}, "batched_above")
    yield SampleInput(T((4, 3)), (-2,), {}, "below")


def _ternary_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), (T((3, 4)), T((4,), low=1, high=5)), {}, "broadcast")
    yield SampleInput(T((3, 4)), (T((3, 4), "transposed"), T((3, 4), low=1, high=5)), {"value": 0.5}, "value")


def _lerp_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), (T((3, 4)), 0.25), {}, "scalar_weight")
    yield SampleInput(T((3, 4)), (T((4,)), T((3, 4), low=0, high=1)), {}, "tensor_weight")


def _outer_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3,)), (T((4,)),), {}, "vectors")


def _diagonal_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), (), {}, "main")
    yield SampleInput(T((3, 4)), (1,), {}, "above")
    yield SampleInput(T((2, 3, 4), "transposed"), (-1, 1, 2), {}, "batched")


def _diag_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3,)), (), {}, "vector")
    yield SampleInput(T((3,)), (-1,), {}, "vector_below")
    yield SampleInput(T((3, 4)), (1,), {}, "matrix")


def _matrix_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), (), {}, "matrix")
    yield SampleInput(T((4, 4), "transposed"), (), {}, "transposed")


def _roll_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), (1, 1), {}, "dim")
    yield SampleInput(T((3, 4)), (-5,), {}, "flat")
    yield SampleInput(T((2, 3, 4), "transposed"), ((1, 2), (0, 2)), {}, "dims")


def _tile_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), ((2,),), {}, "fewer")
    yield SampleInput(T((3,)), ((2, 2),), {}, "more")


def _repeat_interleave_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), (2,), {}, "flat")
    yield SampleInput(T((3, 4)), (3,), {"dim": 0}, "dim")
    yield SampleInput(T((3, 2)), (make_tensor((3,), _C.int64, rng, low=0, high=3),), {"dim": 0}, "tensor")


def _nan_to_num_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), (), {}, "finite")
    yield SampleInput(T((3, 4)), (), {"nan": 1.0, "posinf": 2.0, "neginf": -2.0}, "replacements")


def _isclose_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    a = T((3, 4))
    yield SampleInput(a, (a.clone(),), {}, "same")
    yield SampleInput(T((3, 4)), (T((3, 4)),), {"rtol": 0.5, "atol": 1.0}, "tolerances")


def _clip_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), (-2, 2), {}, "both")
    yield SampleInput(T((3, 4), "transposed"), (None, 1), {}, "max")


def _baddbmm_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((2, 3, 4)), (T((2, 3, 5)), T((2, 5, 4))), {}, "plain")
    yield SampleInput(T((3, 4)), (T((2, 3, 5)), T((2, 5, 4))), {"beta": 0.5, "alpha": 2}, "broadcast")


def _sort_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 5), integers_only=True), (), {}, "last")
    yield SampleInput(T((4, 3), "transposed", integers_only=True), (0, True), {}, "dim0_descending")
    yield SampleInput(T((), integers_only=True), (), {}, "0d")


def _topk_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 5), integers_only=True), (2,), {}, "largest")
    yield SampleInput(T((4, 3), "transposed", integers_only=True), (2, 0, False), {}, "smallest_dim0")


def _stable_order(x: np.ndarray, dim: int, descending: bool) -> np.ndarray:
    if x.ndim == 0:
        return np.zeros((), np.int64)
    # stable descending: sort the reversed keys' negation while keeping index order of equals
    return np.argsort(-x if descending else x, axis=dim, kind="stable")


def _ref_sort(x: np.ndarray, dim: int = -1, descending: bool = False) -> tuple:
    if x.dtype == np.bool_:
        x = x.astype(np.int64)
    idx = _stable_order(x.astype(np.float64), dim, descending)
    return (np.take_along_axis(x, idx, dim) if x.ndim else x), idx


def _ref_topk(x: np.ndarray, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> tuple:
    v, i = _ref_sort(x, dim, largest)
    sl = [slice(None)] * x.ndim
    sl[dim] = slice(0, k)
    return v[tuple(sl)], i[tuple(sl)]


def _ref_erfinv(x: np.ndarray) -> np.ndarray:
    """erfinv by bisection on math.erf (64 halvings reach double precision)."""
    import math

    flat = np.asarray(x, dtype=np.float64).ravel()
    out = np.empty_like(flat)
    for n, v in enumerate(flat):
        if np.isnan(v) or abs(v) > 1:
            out[n] = np.nan
        elif abs(v) == 1:
            out[n] = math.copysign(np.inf, v)
        else:
            lo, hi = -6.0, 6.0
            for _ in range(64):
                mid = 0.5 * (lo + hi)
                lo, hi = (mid, hi) if math.erf(mid) < v else (lo, mid)
            out[n] = 0.5 * (lo + hi)
    return out.reshape(np.shape(x))


def _ref_roll(x: np.ndarray, shifts: Any, dims: Any = None) -> np.ndarray:
    return np.roll(x, shifts, dims)


def _ref_nan_to_num(x: np.ndarray, nan: float = 0.0, posinf: Any = None, neginf: Any = None) -> np.ndarray:
    return np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)


def _ref_repeat_interleave(x: np.ndarray, repeats: Any, dim: Any = None) -> np.ndarray:
    return np.repeat(x, repeats, axis=dim)


def _same(s: SampleInput) -> Any:
    return s.input.dtype


def _floating_result(s: SampleInput) -> Any:
    return s.input.dtype if s.input.dtype in FLOATING else _C.float32


def make_ops20_ops(OpInfo: Any) -> list:
    """The OpInfos (OpInfo is ``_opinfo.OpInfo``, passed in to avoid a circular import)."""
    F = FLOATING
    V = ("functional", "method")
    VI = ("functional", "method", "inplace")
    bool_result = lambda s: _C.bool  # noqa: E731
    return [
        OpInfo("isnan", _S(_unary_samples), _ovl("isnan", ""), ALL_DTYPES, np.isnan, V, result_dtype=bool_result,
               category="unary"),
        OpInfo("isinf", _S(_unary_samples), _ovl("isinf", ""), ALL_DTYPES, np.isinf, V, result_dtype=bool_result,
               category="unary"),
        OpInfo("isfinite", _S(_unary_samples), _ovl("isfinite", ""), ALL_DTYPES, np.isfinite, V,
               result_dtype=bool_result, category="unary"),
        OpInfo("log2", _S(_positive_samples), _ovl("log2", "", "_", ".out"), F, np.log2,
               ("functional", "method", "inplace", "out"), result_dtype=_floating_result, category="unary",
               check_unsupported_dtypes=False),
        OpInfo("log10", _S(_positive_samples), _ovl("log10", "", "_", ".out"), F, np.log10,
               ("functional", "method", "inplace", "out"), result_dtype=_floating_result, category="unary",
               check_unsupported_dtypes=False),
        OpInfo("erfinv", _S(_unit_samples), _ovl("erfinv", "", "_", ".out"), F, _ref_erfinv,
               ("functional", "method", "inplace", "out"), result_dtype=_floating_result, category="unary",
               check_unsupported_dtypes=False),
        OpInfo("tril", _S(_tri_samples), _ovl("tril", "", "_"), ALL_DTYPES, lambda x, k=0: np.tril(x, k), VI, True,
               result_dtype=_same, category="shape"),
        OpInfo("triu", _S(_tri_samples), _ovl("triu", "", "_"), ALL_DTYPES, lambda x, k=0: np.triu(x, k), VI, True,
               result_dtype=_same, category="shape"),
        OpInfo("addcmul", _S(_ternary_samples), _ovl("addcmul", "", "_"), F,
               lambda a, b, c, value=1: a + value * b * c, VI, True, result_dtype=_same, category="ternary",
               check_unsupported_dtypes=False),
        OpInfo("addcdiv", _S(_ternary_samples), _ovl("addcdiv", "", "_"), F,
               lambda a, b, c, value=1: a + value * b / c, VI, True, result_dtype=_same, category="ternary",
               check_unsupported_dtypes=False),
        OpInfo("lerp", _S(_lerp_samples), _ovl("lerp", ".Scalar", ".Tensor", "_.Scalar", "_.Tensor"), F,
               lambda a, b, w: a + w * (b - a), VI, True, {"float16": 1e-2, "bfloat16": 5e-2}, result_dtype=_same,
               category="ternary"),
        OpInfo("outer", _S(_outer_samples), _ovl("outer", ""), NUMERIC, np.outer, V, True, category="linalg",
               check_unsupported_dtypes=False),
        OpInfo("diagonal", _S(_diagonal_samples), _ovl("diagonal", ""), ALL_DTYPES,
               lambda x, offset=0, dim1=0, dim2=1: np.diagonal(x, offset, dim1, dim2), V, True, result_dtype=_same,
               category="shape"),
        OpInfo("diag", _S(_diag_samples), _ovl("diag", ""), ALL_DTYPES, lambda x, k=0: np.diag(x, k), V, True,
               result_dtype=_same, category="shape"),
        OpInfo("trace", _S(_matrix_samples), _ovl("trace", ""), F, np.trace, V, True, category="reduction",
               op=lambda x: x.trace(),  # backend_sdk.trace is the graph tracer
               check_unsupported_dtypes=False),
        OpInfo("roll", _S(_roll_samples), _ovl("roll", ""), ALL_DTYPES, _ref_roll, V, True, result_dtype=_same,
               category="shape"),
        OpInfo("tile", _S(_tile_samples), _ovl("tile", ""), ALL_DTYPES, np.tile, V, True, result_dtype=_same,
               category="shape"),
        OpInfo("repeat_interleave", _S(_repeat_interleave_samples),
               _ovl("repeat_interleave", ".self_int", ".self_Tensor", ".Tensor"), ALL_DTYPES, _ref_repeat_interleave,
               V, True, result_dtype=_same, category="shape", doc="repeat_interleave.Tensor: tests/test_ops_nn_kernels.py"),
        OpInfo("nan_to_num", _S(_nan_to_num_samples), _ovl("nan_to_num", "", "_"), F, _ref_nan_to_num, VI, True,
               result_dtype=_same, category="unary", check_unsupported_dtypes=False),
        OpInfo("isclose", _S(_isclose_samples), ("aten::isclose", "aten::allclose", "aten::equal"), NUMERIC,
               lambda a, b, rtol=1e-5, atol=1e-8: np.isclose(a, b, rtol, atol), V, result_dtype=bool_result,
               category="binary", check_unsupported_dtypes=False,
               doc="allclose and equal (bool results): tests/test_ops_nn_kernels.py"),
        OpInfo("clip", _S(_clip_samples), _ovl("clip", "", "_"), F + (_C.int32, _C.int64), lambda x, lo, hi: np.clip(x, lo, hi), VI,
               True, result_dtype=_same, category="ternary", check_unsupported_dtypes=False),
        OpInfo("square", _S(_unary_samples), ("aten::square", "aten::zero_", "aten::is_floating_point"), F, np.square, V, True,
               result_dtype=_same, category="unary", check_unsupported_dtypes=False,
               doc="zero_ and is_floating_point: tests/test_ops_nn_kernels.py"),
        OpInfo("baddbmm", _S(_baddbmm_samples), _ovl("baddbmm", ""), F,
               lambda s, a, b, beta=1, alpha=1: beta * s + alpha * (a @ b), V, True, result_dtype=_same,
               category="linalg", check_unsupported_dtypes=False,
               atol={"float16": 5e-2, "bfloat16": 5e-1}, rtol={"float16": 1e-2, "bfloat16": 5e-2}),
        OpInfo("sort", _S(_sort_samples), ("aten::sort", "aten::sort.stable", "aten::argsort", "aten::argsort.stable"), NUMERIC, _ref_sort,
               V, category="sorting", check_unsupported_dtypes=False),
        OpInfo("topk", _S(_topk_samples), _ovl("topk", ""), NUMERIC, _ref_topk, V, category="sorting",
               check_unsupported_dtypes=False),
    ]


# ---- nn operators (values are checked against numpy in tests/test_nn_conv_norm.py; here: Meta vs CPU,
# dtypes, variants) ----
def _conv_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((2, 3, 6, 5)), (T((4, 3, 3, 3)), T((4,)), [1], [1], [1], False, [0], 1), {}, "2d")
    yield SampleInput(T((1, 4, 7), "transposed"), (T((2, 2, 3)), None, [2], [0], [2], False, [0], 2), {}, "1d_groups")
    yield SampleInput(T((2, 4, 3, 4)), (T((4, 3, 3, 2)), T((6,)), [2], [1], [1], True, [1], 2), {}, "transposed_2d")


def _conv_backward_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((2, 4, 6, 5)), (T((2, 3, 6, 5)), T((4, 3, 3, 3)), [4], [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
                                        [True, True, True]), {}, "all")
    yield SampleInput(T((2, 6, 6, 7)), (T((2, 4, 3, 4)), T((4, 3, 3, 2)), [6], [2, 2], [1, 1], [1, 1], True, [1, 1], 2,
                                        [True, True, True]), {}, "transposed")


def _conv_nd_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((2, 3, 6, 5)), (T((4, 3, 3, 3)), T((4,)), [2], [1]), {}, "conv2d")


def _conv1d_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 7)), (T((4, 3, 3)),), {}, "unbatched")


def _conv_transpose2d_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((2, 4, 3, 4)), (T((4, 3, 3, 2)), T((6,)), [2, 2], [1, 1], [1, 1], 2), {}, "groups")


def _conv_transpose1d_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((4, 5)), (T((4, 2, 3)), None, [2], [0], [1], 1, [2]), {}, "unbatched")


def _layer_norm_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4, 5)), ([5], T((5,)), T((5,)), 1e-5), {}, "affine")
    yield SampleInput(T((2, 3, 4), "transposed"), ([3, 4], None, None, 1e-5), {}, "plain")


def _layer_norm_backward_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 5)), (T((3, 5)), [5], T((3, 1)), T((3, 1), low=0.5, high=2), T((5,)), T((5,)),
                                  [True, True, True]), {}, "affine")


def _batch_norm_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((4, 3, 2, 2)), (T((3,)), T((3,)), None, None, True, 0.1, 1e-5), {}, "train_untracked")
    yield SampleInput(T((4, 3)), (None, None, T((3,)), T((3,), low=0.5, high=2), False, 0.1, 1e-5), {}, "eval")


def _batch_norm_backward_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((4, 3, 2)), (T((4, 3, 2)), T((3,)), None, None, T((3,)), T((3,), low=0.5, high=2), True, 1e-5,
                                     [True, True, True]), {}, "train")


def _pool_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((2, 3, 6, 5)), ([2, 2],), {}, "default_stride")
    yield SampleInput(T((3, 7, 7), "transposed"), ([3, 3], [2, 2], [1, 1]), {}, "padded_unbatched")


def _max_pool_backward_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((2, 3, 3, 2)), (T((2, 3, 6, 5)), [2, 2], [2, 2], [0, 0], [1, 1], False,
                                        make_tensor((2, 3, 3, 2), _C.int64, rng, low=0, high=4)), {}, "plain")


def _avg_pool_backward_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((2, 3, 3, 2)), (T((2, 3, 6, 5)), [2, 2], [2, 2], [0, 0], False, True, None), {}, "plain")


def _adaptive_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((2, 3, 7, 5)), ([3, 2],), {}, "uneven")
    yield SampleInput(T((3, 4, 4)), ([1, 1],), {}, "global")


def _adaptive_backward_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((2, 3, 3, 2)), (T((2, 3, 7, 5)),), {}, "uneven")


def _embedding_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((6, 3)), (make_tensor((2, 4), _C.int64, rng, low=0, high=5),), {}, "plain")
    yield SampleInput(T((6, 3)), (make_tensor((5,), _C.int64, rng, low=0, high=5), 2), {}, "padding_idx")


def _embedding_backward_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((2, 4, 3)), (make_tensor((2, 4), _C.int64, rng, low=0, high=5), 6, 1, True), {}, "freq")


def _dropout_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), (0.0, True), {}, "p0")
    yield SampleInput(T((3, 4)), (0.5, False), {}, "eval")


def _native_dropout_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), (0.5, False), {}, "eval")


def _dropout_backward_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), (make_tensor((3, 4), _C.bool, rng), 2.0), {}, "plain")


def _sdpa_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((2, 2, 4, 8), low=-1, high=1), (T((2, 2, 5, 8), low=-1, high=1), T((2, 2, 5, 3))), {}, "plain")
    yield SampleInput(T((2, 4, 8), low=-1, high=1), (T((2, 4, 8), low=-1, high=1), T((2, 4, 8)), None, 0.0, True), {},
                      "causal")


def _pad_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((2, 3, 4)), ([1, 2, -1, 1],), {}, "constant_negative")


def _pad_mode_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((1, 2, 4, 5)), ([2, 1, 1, 3], "reflect"), {}, "reflect")
    yield SampleInput(T((2, 5)), ([2, 3], "replicate"), {}, "replicate")
    yield SampleInput(T((1, 2, 4)), ([3, 1], "circular"), {}, "circular")


def _pad1d_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((2, 3, 5)), ([2, 1],), {}, "batched")


def _pad2d_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((2, 4, 5)), ([1, 2, 3, 1],), {}, "unbatched")


def _upsample_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((1, 2, 3, 4)), ([6, 5],), {}, "up")


def _bilinear_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((1, 2, 3, 4)), ([6, 5], False), {}, "up")
    yield SampleInput(T((1, 2, 4, 4)), ([3, 2], True), {}, "down_align_corners")


def _einsum_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput("bij,bjk->bik", ([T((2, 3, 4)), T((2, 4, 5))],), {}, "bmm")
    yield SampleInput("ii->i", ([T((3, 3))],), {}, "diagonal")
    yield SampleInput("...ij,j", ([T((2, 3, 4)), T((4,))],), {}, "ellipsis_implicit")


def _np_einsum(eq: str, ts: list) -> np.ndarray:
    return np.einsum(eq, *ts)


def _ref_constant_pad(x: np.ndarray, pad: list, value: float = 0) -> np.ndarray:
    out = x
    for i in range(len(pad) // 2):
        d = x.ndim - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        sl = [slice(None)] * x.ndim
        sl[d] = slice(max(-lo, 0), out.shape[d] - max(-hi, 0))
        out = out[tuple(sl)]
        widths = [(0, 0)] * x.ndim
        widths[d] = (max(lo, 0), max(hi, 0))
        out = np.pad(out, widths, constant_values=value)
    return out


def _ref_pad_mode(x: np.ndarray, pad: list, mode: str = "constant", value: Any = None) -> np.ndarray:
    widths = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        widths[x.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    return np.pad(x, widths, mode={"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode])


def _ref_layer_norm(x: np.ndarray, shape: list, w: Any = None, b: Any = None, eps: float = 1e-5) -> tuple:
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    mean = x.astype(np.float64).mean(axis=axes, keepdims=True)
    rstd = 1 / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + eps)
    y = (x - mean) * rstd
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y, mean, rstd


def _ref_batch_norm(x: np.ndarray, w: Any, b: Any, rm: Any, rv: Any, training: bool, momentum: float,
                    eps: float) -> tuple:
    axes = (0,) + tuple(range(2, x.ndim))
    shape = [1, x.shape[1]] + [1] * (x.ndim - 2)
    if training:
        mean = x.astype(np.float64).mean(axis=axes)
        invstd = 1 / np.sqrt(((x - mean.reshape(shape)) ** 2).mean(axis=axes) + eps)
        saved = (mean, invstd)
    else:
        mean, invstd = rm, 1 / np.sqrt(rv + eps)
        saved = (np.zeros(0), np.zeros(0))
    y = (x - mean.reshape(shape)) * invstd.reshape(shape)
    if w is not None:
        y = y * w.reshape(shape)
    if b is not None:
        y = y + b.reshape(shape)
    return (y,) + saved


def _ref_max_pool(x: np.ndarray, k: list, stride: Any = None, pad: Any = (0, 0), dil: Any = (1, 1),
                  ceil_mode: bool = False) -> tuple:
    stride = stride or k
    h, w = x.shape[-2:]
    oh = (h + 2 * pad[0] - dil[0] * (k[0] - 1) - 1) // stride[0] + 1
    ow = (w + 2 * pad[1] - dil[1] * (k[1] - 1) - 1) // stride[1] + 1
    out = np.zeros(x.shape[:-2] + (oh, ow), x.dtype)
    idx = np.zeros(x.shape[:-2] + (oh, ow), np.int64)
    for i in range(oh):
        for j in range(ow):
            best = np.full(x.shape[:-2], -np.inf)
            at = np.full(x.shape[:-2], -1)
            for a in range(k[0]):
                y = i * stride[0] - pad[0] + a * dil[0]
                for c in range(k[1]):
                    xx = j * stride[1] - pad[1] + c * dil[1]
                    if 0 <= y < h and 0 <= xx < w:
                        v = x[..., y, xx]
                        better = v > best
                        best = np.where(better, v, best)
                        at = np.where(better, y * w + xx, at)
            out[..., i, j] = best
            idx[..., i, j] = at
    return out, idx


def _randperm_samples(op: Any, dtype: Any, rng: np.random.Generator) -> Iterable[SampleInput]:
    for n in (10, 0, 1):
        yield SampleInput(n, (), {"dtype": dtype}, f"n{n}")


def _multinomial_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 5), low=0.1, high=1), (3,), {}, "without_replacement")
    yield SampleInput(T((4,), low=0.1, high=1), (6, True), {}, "with_replacement")


def make_ops20_nn_ops(OpInfo: Any) -> list:
    """OpInfos of the nn operators (OpInfo passed in, as make_ops20_ops)."""
    F = FLOATING
    fn = ("functional",)
    loose = {"float16": 5e-2, "bfloat16": 2e-1, "float32": 1e-4}
    return [
        OpInfo("convolution", _S(_conv_samples), ("aten::convolution",), F, None, fn, category="nn",
               check_unsupported_dtypes=False, op=lambda *a: _aten().convolution(*a)),
        OpInfo("convolution_backward", _S(_conv_backward_samples), ("aten::convolution_backward",), F, None, fn,
               category="nn", check_unsupported_dtypes=False, op=lambda *a: _aten().convolution_backward(*a)[0],
               doc="grad_input here; all three outputs against numerical gradients in tests/test_nn_conv_norm.py"),
        OpInfo("conv2d", _S(_conv_nd_samples), ("aten::conv2d",), F, None, fn, category="nn",
               check_unsupported_dtypes=False, op=lambda *a: _aten().conv2d(*a)),
        OpInfo("conv1d", _S(_conv1d_samples), ("aten::conv1d",), F, None, fn, category="nn",
               check_unsupported_dtypes=False, op=lambda *a: _aten().conv1d(*a)),
        OpInfo("conv_transpose2d", _S(_conv_transpose2d_samples),
               ("aten::conv_transpose2d.input",), F, None, fn, category="nn", check_unsupported_dtypes=False,
               op=lambda *a: _aten().conv_transpose2d(*a)),
        OpInfo("conv_transpose1d", _S(_conv_transpose1d_samples),
               ("aten::conv_transpose1d",), F, None, fn, category="nn", check_unsupported_dtypes=False,
               op=lambda *a: _aten().conv_transpose1d(*a)),
        OpInfo("native_layer_norm", _S(_layer_norm_samples), ("aten::native_layer_norm", "aten::layer_norm"), F, _ref_layer_norm,
               fn, category="nn", check_unsupported_dtypes=False, op=lambda *a: _aten().native_layer_norm(*a)),
        OpInfo("native_layer_norm_backward", _S(_layer_norm_backward_samples), ("aten::native_layer_norm_backward",),
               F, None, fn, category="nn", check_unsupported_dtypes=False,
               op=lambda *a: _aten().native_layer_norm_backward(*a)[0],
               doc="grad_input here; all three outputs in tests/test_nn_conv_norm.py"),
        OpInfo("native_batch_norm", _S(_batch_norm_samples), ("aten::native_batch_norm", "aten::batch_norm"), F, _ref_batch_norm,
               fn, category="nn", check_unsupported_dtypes=False, op=lambda *a: _aten().native_batch_norm(*a)),
        OpInfo("native_batch_norm_backward", _S(_batch_norm_backward_samples), ("aten::native_batch_norm_backward",),
               F, None, fn, category="nn", check_unsupported_dtypes=False,
               op=lambda *a: _aten().native_batch_norm_backward(*a)[0],
               doc="grad_input here; all three outputs in tests/test_nn_conv_norm.py"),
        OpInfo("group_norm", _S(lambda d, r, T: iter([SampleInput(T((2, 4, 3)), (2, T((4,)), T((4,))), {}, "affine")])),
               ("aten::group_norm", "aten::rms_norm"), F, None, fn, category="nn", check_unsupported_dtypes=False,
               op=lambda *a: _aten().group_norm(*a), doc="rms_norm: tests/test_nn_conv_norm.py"),
        OpInfo("max_pool2d_with_indices", _S(_pool_samples), ("aten::max_pool2d_with_indices", "aten::max_pool2d"), F,
               _ref_max_pool, fn, category="nn", check_unsupported_dtypes=False,
               op=lambda *a: _aten().max_pool2d_with_indices(*a)),
        OpInfo("max_pool2d_with_indices_backward", _S(_max_pool_backward_samples),
               ("aten::max_pool2d_with_indices_backward",), F, None, fn, category="nn", check_unsupported_dtypes=False,
               op=lambda *a: _aten().max_pool2d_with_indices_backward(*a)),
        OpInfo("avg_pool2d", _S(_pool_samples), ("aten::avg_pool2d",), F, None, fn, category="nn",
               check_unsupported_dtypes=False, op=lambda *a: _aten().avg_pool2d(*a)),
        OpInfo("avg_pool2d_backward", _S(_avg_pool_backward_samples), ("aten::avg_pool2d_backward",), F, None, fn,
               category="nn", check_unsupported_dtypes=False, op=lambda *a: _aten().avg_pool2d_backward(*a)),
        OpInfo("adaptive_avg_pool2d", _S(_adaptive_samples),
               ("aten::adaptive_avg_pool2d", "aten::_adaptive_avg_pool2d"), F, None, fn, category="nn",
               check_unsupported_dtypes=False, op=lambda *a: _aten().adaptive_avg_pool2d(*a)),
        OpInfo("_adaptive_avg_pool2d_backward", _S(_adaptive_backward_samples), ("aten::_adaptive_avg_pool2d_backward",),
               F, None, fn, category="nn", check_unsupported_dtypes=False,
               op=lambda *a: _aten()._adaptive_avg_pool2d_backward(*a)),
        OpInfo("embedding", _S(_embedding_samples), ("aten::embedding",), F,
               lambda w, i, p=-1: w[i], fn, category="nn", check_unsupported_dtypes=False,
               op=lambda *a: _aten().embedding(*a)),
        OpInfo("embedding_dense_backward", _S(_embedding_backward_samples), ("aten::embedding_dense_backward",), F,
               None, fn, category="nn", check_unsupported_dtypes=False,
               op=lambda *a: _aten().embedding_dense_backward(*a)),
        OpInfo("dropout", _S(_dropout_samples), ("aten::dropout",), F, lambda x, p, train: x, fn, category="nn",
               check_unsupported_dtypes=False, op=lambda *a: _aten().dropout(*a)),
        OpInfo("native_dropout", _S(_native_dropout_samples), ("aten::native_dropout",), F,
               lambda x, p, train: (x, np.ones(x.shape, np.bool_)), fn, category="nn",
               check_unsupported_dtypes=False, op=lambda *a: _aten().native_dropout(*a)),
        OpInfo("native_dropout_backward", _S(_dropout_backward_samples), ("aten::native_dropout_backward",), F,
               lambda g, m, s: g * m * s, fn, category="nn", check_unsupported_dtypes=False,
               op=lambda *a: _aten().native_dropout_backward(*a)),
        OpInfo("scaled_dot_product_attention", _S(_sdpa_samples),
               ("aten::scaled_dot_product_attention", "aten::_scaled_dot_product_attention_math"), F, None, fn,
               category="nn", check_unsupported_dtypes=False, op=lambda *a: _aten().scaled_dot_product_attention(*a)),
        OpInfo("constant_pad_nd", _S(_pad_samples), ("aten::constant_pad_nd",), ALL_DTYPES, _ref_constant_pad, fn,
               category="nn", check_unsupported_dtypes=False, op=lambda *a: _aten().constant_pad_nd(*a)),
        OpInfo("pad", _S(_pad_mode_samples), ("aten::pad",), ALL_DTYPES, _ref_pad_mode, fn, category="nn",
               check_unsupported_dtypes=False, op=lambda *a: _aten().pad(*a)),
        OpInfo("reflection_pad1d", _S(_pad1d_samples), ("aten::reflection_pad1d", "aten::replication_pad1d"),
               ALL_DTYPES, lambda x, p: _ref_pad_mode(x, p, "reflect"), fn, category="nn",
               check_unsupported_dtypes=False, op=lambda *a: _aten().reflection_pad1d(*a)),
        OpInfo("replication_pad2d", _S(_pad2d_samples), ("aten::replication_pad2d", "aten::reflection_pad2d"),
               ALL_DTYPES, lambda x, p: _ref_pad_mode(x, p, "replicate"), fn, category="nn",
               check_unsupported_dtypes=False, op=lambda *a: _aten().replication_pad2d(*a)),
        OpInfo("upsample_nearest2d", _S(_upsample_samples), ("aten::upsample_nearest2d",), ALL_DTYPES, None, fn,
               category="nn", check_unsupported_dtypes=False, op=lambda *a: _aten().upsample_nearest2d(*a)),
        OpInfo("upsample_bilinear2d", _S(_bilinear_samples), ("aten::upsample_bilinear2d",), F, None, fn,
               category="nn", check_unsupported_dtypes=False, op=lambda *a: _aten().upsample_bilinear2d(*a)),
        OpInfo("randperm", _randperm_samples, ("aten::randperm", "aten::randperm.generator"),
               tuple(d for d in ALL_DTYPES if d not in (_C.bool, _C.int8, _C.uint8)), None, fn, random=True,
               category="random", check_unsupported_dtypes=False, doc="values: tests/test_ops_nn_kernels.py"),
        OpInfo("multinomial", _S(_multinomial_samples), ("aten::multinomial",), F, None, ("functional",),
               category="random", check_unsupported_dtypes=False,
               doc="int64 result (not a *_like op): determinism and frequencies in tests/test_ops_nn_kernels.py"),
        OpInfo("einsum", _S(_einsum_samples), ("aten::einsum",), F, _np_einsum, fn, atol=loose, rtol=loose,
               category="nn", check_unsupported_dtypes=False, op=lambda *a: _aten().einsum(*a)),
    ]


def _aten() -> Any:
    from backend_sdk import ops

    return ops.aten
