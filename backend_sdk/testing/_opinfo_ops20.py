"""OpInfos of the operators issue 20 adds (tensor methods and nn operators), read by ``_opinfo._build``.

Same conventions as ``_opinfo``: numpy references receive float16/bfloat16 upcast, results are
compared after casting to the operator's result dtype.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

import numpy as np

from backend_sdk import _C

from ._sample_inputs import ALL_DTYPES, FLOATING, NUMERIC, SampleInput, make_tensor

__all__ = ["make_ops20_ops"]


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
