"""The operator database: one ``OpInfo`` per operator of the SDK's aten set (as PyTorch's
``torch.testing._internal.common_methods_invocations``).

An ``OpInfo`` says how to call an operator (functional, in-place, ``out=`` and Tensor-method
forms; see ``call_variant``), which dtypes it supports, which aten overloads it covers, how to
build sample inputs for a device and dtype (0-d, empty, broadcast and non-contiguous ones:
transposed, sliced with steps, expanded), a numpy reference, and tolerances per dtype. The
differential tests (tests/test_opinfo_numpy.py), the Meta-kernel tests
(tests/test_opinfo_meta.py) and the conformance suite's "operators" area all read it.

Reference convention: ``ref(input, *args, **kwargs)`` receives the sample with tensors as numpy
arrays (float16/bfloat16 upcast to float32, so references compute in higher precision) and
backend_sdk dtypes as numpy dtypes; it returns an array (or a tuple for multi-output ops). Its
values are compared after casting to the operator's result dtype; the result dtype itself is
checked against ``result_dtype(sample)`` where the OpInfo has one.
"""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np

import backend_sdk
from backend_sdk import _C

from ._sample_inputs import (
    ALL_DTYPES, BOOL, FLOATING, HALF, INTEGRAL, INTEGRAL_AND_BOOL, NUMERIC, SIGNED, SampleInput, dtype_name,
    make_tensor, move, numpy_dtype, rng_for, shapes_binary, shapes_unary, to_numpy,
)

__all__ = [
    "OpInfo", "SampleInput", "Skip", "op_db", "op_db_by_name", "call_variant", "result_type", "make_tensor",
    "move", "to_numpy", "numpy_dtype", "ALL_DTYPES", "FLOATING", "INTEGRAL", "VARIANTS",
]

VARIANTS = ("functional", "inplace", "out", "method")

# Default comparison tolerances (atol, rtol) per dtype; integral and bool compare exactly.
_DEFAULT_TOL = {
    "float16": (1e-3, 1e-3), "bfloat16": (1e-2, 1.6e-2), "float32": (1e-5, 1.3e-6), "float64": (1e-7, 1e-7),
}


@dataclass(frozen=True)
class Skip:
    """A documented exception: the (variant, dtype) cases it matches are expected to fail
    (``xfail(strict=True)`` in the tests) for ``reason``. ``variants``/``dtypes`` None = all."""

    reason: str
    variants: tuple | None = None
    dtypes: tuple | None = None
    test: str | None = None  # "numpy", "meta" or None (every test)

    def matches(self, variant: str, dtype: Any, test: str | None = None) -> bool:
        return ((self.variants is None or variant in self.variants)
                and (self.dtypes is None or dtype in self.dtypes)
                and (self.test is None or test is None or self.test == test))


SampleFunc = Callable[["OpInfo", Any, np.random.Generator], Iterable[SampleInput]]


@dataclass
class OpInfo:
    """How to call, feed and check one operator.

    ``name`` is the aten name without overload ("add"); ``aten_overloads`` the qualified
    overloads the OpInfo's variants reach ("aten::add.Tensor", "aten::add_.Tensor",
    "aten::add.out"); Python-level operators (zeros, transpose, ...) list the aten operators
    they are built on. ``sample_inputs(device, dtype)`` yields ``SampleInput``s on ``device``.
    ``ref`` is the numpy reference (None: values are not compared, e.g. ``empty``).
    ``variants`` is a subset of ``VARIANTS``. ``random`` ops are checked for determinism under
    ``manual_seed`` instead of against a reference.
    """

    name: str
    sample_inputs_func: SampleFunc
    aten_overloads: tuple = ()
    dtypes: tuple = ALL_DTYPES
    ref: Callable | None = None
    variants: tuple = ("functional", "method")
    supports_autograd: bool = False
    atol: dict | Callable | None = None
    rtol: dict | Callable | None = None
    skips: tuple = ()
    op: Callable | None = None
    method_name: str | None = None
    inplace_name: str | None = None
    result_dtype: Callable[[SampleInput], Any] | None = None
    random: bool = False
    check_unsupported_dtypes: bool = True  # dtypes outside `dtypes` must raise (False where PyTorch is unclear)
    category: str = ""
    variant_name: str = ""
    doc: str = ""

    def __post_init__(self) -> None:
        if self.op is None:
            self.op = getattr(backend_sdk, self.name, None)
        if self.method_name is None:
            self.method_name = self.name
        if self.inplace_name is None:
            self.inplace_name = self.name + "_"
        bad = set(self.variants) - set(VARIANTS)
        if bad:
            raise ValueError(f"OpInfo {self.name}: unknown variants {sorted(bad)}")

    def sample_inputs(self, device: Any, dtype: Any, requires_grad: bool = False) -> Iterable[SampleInput]:
        """The samples for ``dtype`` on ``device`` (a fresh, deterministic set on each call)."""
        rng = rng_for(self.name, dtype_name(dtype))
        for s in self.sample_inputs_func(self, dtype, rng):
            s = s.transform(lambda t: move(t, device))
            if requires_grad:
                s = s.transform(lambda t: t.detach().requires_grad_(True) if t.dtype in FLOATING else t)
            yield s

    def tolerance(self, dtype: Any) -> tuple[float, float]:
        """(atol, rtol) for comparing results of ``dtype``."""
        name = dtype_name(dtype)
        atol, rtol = _DEFAULT_TOL.get(name, (0.0, 0.0))
        for which, spec in (("atol", self.atol), ("rtol", self.rtol)):
            if spec is None:
                continue
            v = spec(dtype) if callable(spec) else spec.get(dtype, spec.get(name))
            if v is not None:
                if which == "atol":
                    atol = v
                else:
                    rtol = v
        return atol, rtol

    def skip_for(self, variant: str, dtype: Any, test: str | None = None) -> Skip | None:
        for s in self.skips:
            if s.matches(variant, dtype, test):
                return s
        return None

    @property
    def full_name(self) -> str:
        """``name`` or ``name.variant_name`` (unique in op_db; used as test id)."""
        return f"{self.name}.{self.variant_name}" if self.variant_name else self.name

    def __repr__(self) -> str:
        return f"OpInfo({self.full_name})"


def _flat(result: Any) -> list:
    return list(result) if isinstance(result, (tuple, list)) else [result]


def call_variant(opinfo: OpInfo, variant: str, sample: SampleInput) -> Any:
    """Runs ``sample`` through one form of the operator and returns its result.

    functional: ``op(input, *args, **kwargs)``; method: ``input.<name>(*args, **kwargs)``;
    inplace: ``input.<name>_(*args, **kwargs)`` (mutates ``sample.input``); out: ``op(input,
    *args, **kwargs, out=out)`` with ``out`` from ``sample.kwargs`` or else freshly allocated
    with the functional result's sizes and dtypes on the input's device.
    """
    args, kwargs = tuple(sample.args), dict(sample.kwargs)
    if variant == "functional":
        return opinfo.op(sample.input, *args, **kwargs)
    if variant == "method":
        return getattr(sample.input, opinfo.method_name)(*args, **kwargs)
    if variant == "inplace":
        return getattr(sample.input, opinfo.inplace_name)(*args, **kwargs)
    if variant == "out":
        if "out" not in kwargs:
            expected = opinfo.op(sample.input, *args, **kwargs)
            outs = [backend_sdk.empty(list(e.shape), dtype=e.dtype, device=e.device) for e in _flat(expected)]
            kwargs["out"] = tuple(outs) if isinstance(expected, (tuple, list)) else outs[0]
        return opinfo.op(sample.input, *args, **kwargs)
    raise ValueError(f"call_variant: unknown variant {variant!r} (expected one of {VARIANTS})")


# ---------------------------------------------------------------------------------------------
# PyTorch's result_type (type promotion with dim / 0-dim / Python-scalar priority)
# ---------------------------------------------------------------------------------------------
def _category(d: Any) -> int:
    return 0 if d == _C.bool else 1 if d in INTEGRAL else 2


def _promote(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return backend_sdk.promote_types(a, b)


def _combine(higher: Any, lower: Any) -> Any:
    if higher is None:
        return lower
    if lower is None:
        return higher
    if _category(higher) == 2:
        return higher
    if higher == _C.bool or _category(lower) == 2:
        return _promote(higher, lower)
    return higher


def result_type(*operands: Any) -> Any:
    """The dtype PyTorch's type promotion gives for tensors and Python numbers: tensors with dims
    beat 0-d tensors beat Python numbers unless a lower-priority operand is of a higher category
    (bool < integral < floating); a Python float counts as the default dtype, a Python int as int64."""
    dim = zero = wrapped = None
    for x in operands:
        if isinstance(x, backend_sdk.Tensor):
            if x.dim() > 0:
                dim = _promote(dim, x.dtype)
            else:
                zero = _promote(zero, x.dtype)
        elif isinstance(x, bool):
            wrapped = _promote(wrapped, _C.bool)
        elif isinstance(x, int):
            wrapped = _promote(wrapped, _C.int64)
        elif isinstance(x, float):
            wrapped = _promote(wrapped, backend_sdk.get_default_dtype())
    return _combine(dim, _combine(zero, wrapped))


def _float_of(d: Any) -> Any:
    """Integral and bool promote to the default float dtype (unary float ops, true division)."""
    return d if d in FLOATING else backend_sdk.get_default_dtype()


# ---------------------------------------------------------------------------------------------
# Sample-input generators
# ---------------------------------------------------------------------------------------------
def _unary_samples(low: float | None = None, high: float | None = None, exclude_zero: bool = False,
                   kwargs_list: Sequence[dict] = ({},), int_low: float | None = None,
                   int_high: float | None = None) -> SampleFunc:
    def gen(op: OpInfo, dtype: Any, rng: np.random.Generator) -> Iterable[SampleInput]:
        lo, hi = (int_low, int_high) if dtype in INTEGRAL else (low, high)
        for shape, layout in shapes_unary():
            for kw in kwargs_list:
                x = make_tensor(shape, dtype, rng, low=lo, high=hi, exclude_zero=exclude_zero, layout=layout)
                yield SampleInput(x, (), dict(kw), f"{layout}_{shape}{'_' + str(kw) if kw else ''}")
    return gen


def _binary_samples(rhs_low: float | None = None, rhs_high: float | None = None, rhs_exclude_zero: bool = False,
                    lhs_low: float | None = None, lhs_high: float | None = None, scalars: Sequence[Any] = (),
                    kwargs_list: Sequence[dict] = ({},), int_rhs: tuple | None = None,
                    int_lhs: tuple | None = None, promotion: bool = True) -> SampleFunc:
    """Tensor-tensor pairs of every shape pairing in shapes_binary, Tensor-scalar pairs (the
    scalars valid for the dtype) and mixed-dtype pairs (type promotion)."""
    def gen(op: OpInfo, dtype: Any, rng: np.random.Generator) -> Iterable[SampleInput]:
        integral = dtype in INTEGRAL
        llo, lhi = int_lhs if (integral and int_lhs) else (lhs_low, lhs_high)
        rlo, rhi = int_rhs if (integral and int_rhs) else (rhs_low, rhs_high)
        for kw in kwargs_list:
            for sa, la, sb, lb, name in shapes_binary():
                a = make_tensor(sa, dtype, rng, low=llo, high=lhi, layout=la)
                b = make_tensor(sb, dtype, rng, low=rlo, high=rhi, exclude_zero=rhs_exclude_zero, layout=lb)
                yield SampleInput(a, (b,), dict(kw), name)
            for s in scalars:
                if isinstance(s, bool) and dtype != _C.bool:
                    continue
                if isinstance(s, float) and dtype in INTEGRAL_AND_BOOL and not promotion:
                    continue
                a = make_tensor((3, 4), dtype, rng, low=llo, high=lhi)
                yield SampleInput(a, (s,), dict(kw), f"scalar_{s!r}")
            if promotion:
                # mixed dtypes: a tensor of another category on the right (0-d and n-d)
                other = _C.float64 if dtype in INTEGRAL_AND_BOOL else _C.int32
                if dtype == _C.bool:
                    other = _C.int32
                a = make_tensor((3, 4), dtype, rng, low=llo, high=lhi)
                b = make_tensor((3, 4), other, rng, low=rlo if other in FLOATING or integral else 1,
                                high=rhi, exclude_zero=rhs_exclude_zero)
                yield SampleInput(a, (b,), dict(kw), f"promote_{dtype_name(other)}")
                z = make_tensor((), _C.float64, rng, low=rlo if rlo is not None else 1, high=rhi if rhi is not None else 3,
                                exclude_zero=rhs_exclude_zero)
                yield SampleInput(make_tensor((3, 4), dtype, rng, low=llo, high=lhi), (z,), dict(kw), "promote_0d_float64")
    return gen


def _reverse_samples(scalars: Sequence[Any], low: float | None = None, high: float | None = None,
                     exclude_zero: bool = False) -> SampleFunc:
    """A tensor and a Python scalar for ``scalar <op> tensor``."""
    def gen(op: OpInfo, dtype: Any, rng: np.random.Generator) -> Iterable[SampleInput]:
        for s in scalars:
            if isinstance(s, bool) and dtype != _C.bool:
                continue
            for shape, layout in (((3, 4), "contiguous"), ((), "contiguous"), ((3, 4), "transposed"), ((0,), "contiguous")):
                x = make_tensor(shape, dtype, rng, low=low, high=high, exclude_zero=exclude_zero, layout=layout)
                yield SampleInput(x, (s,), {}, f"scalar_{s!r}_{layout}_{shape}")
    return gen


# ---------------------------------------------------------------------------------------------
# Reference helpers
# ---------------------------------------------------------------------------------------------
def _np_erf(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return np.vectorize(math.erf, otypes=[np.float64])(x) if x.size else x.copy()


def _ref_sign(x: np.ndarray) -> np.ndarray:
    return x.copy() if x.dtype == np.bool_ else np.sign(x)


def _ref_gelu(x: np.ndarray, approximate: str = "none") -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + _np_erf(x / math.sqrt(2)))


def _ref_div(a: Any, b: Any, rounding_mode: str | None = None) -> np.ndarray:
    with np.errstate(all="ignore"):
        if rounding_mode is None:
            return np.true_divide(a, b)
        if rounding_mode == "trunc":
            ints = np.asarray(a).dtype.kind in "iub" and np.asarray(b).dtype.kind in "iub" \
                and not isinstance(a, float) and not isinstance(b, float)
            if ints:
                q = np.floor_divide(a, b)
                r = np.remainder(a, b)
                return np.where((r != 0) & ((np.asarray(a) < 0) != (np.asarray(b) < 0)), q + 1, q)
            return np.trunc(np.true_divide(a, b))
        return np.floor_divide(a, b)


def _ref_binary(fn: Callable) -> Callable:
    def ref(a: Any, b: Any, **kw: Any) -> Any:
        with np.errstate(all="ignore"):
            return fn(a, b, **kw)
    return ref


def _ref_unary(fn: Callable, float_inputs: bool = False) -> Callable:
    """``float_inputs``: integral/bool inputs are converted to float64 first (numpy would pick
    float16 for int8, PyTorch computes int -> float ops in the default dtype)."""
    def ref(a: Any, **kw: Any) -> Any:
        if float_inputs and np.asarray(a).dtype.kind in "biu":
            a = np.asarray(a, np.float64)
        with np.errstate(all="ignore"):
            return fn(a, **kw)
    return ref


def _rt_binary(s: SampleInput) -> Any:
    return result_type(s.input, *s.args[:1])


def _rt_bool(s: SampleInput) -> Any:
    return _C.bool


def _rt_same(s: SampleInput) -> Any:
    return s.input.dtype


def _rt_float(s: SampleInput) -> Any:
    return _float_of(s.input.dtype)


def _rt_true_div(s: SampleInput) -> Any:
    rt = _rt_binary(s)
    return rt if s.kwargs.get("rounding_mode") is not None else _float_of(rt)


# ---------------------------------------------------------------------------------------------
# Elementwise binary
# ---------------------------------------------------------------------------------------------
def _binary(name: str, ref: Callable, dtypes: tuple = ALL_DTYPES, *, overloads: Sequence[str] = (),
            variants: tuple = VARIANTS, result_dtype: Callable | None = _rt_binary, **kw: Any) -> OpInfo:
    sample_kw = {k: kw.pop(k) for k in list(kw) if k in (
        "rhs_low", "rhs_high", "rhs_exclude_zero", "lhs_low", "lhs_high", "scalars", "kwargs_list", "int_rhs",
        "int_lhs", "promotion")}
    sample_kw.setdefault("scalars", (2, 1.5, True))
    return OpInfo(name, _binary_samples(**sample_kw), aten_overloads=tuple(overloads), dtypes=dtypes,
                  ref=_ref_binary(ref), variants=variants, result_dtype=result_dtype,
                  category="binary", **kw)


def _ovl(name: str, *suffixes: str) -> tuple:
    return tuple(f"aten::{name}{s}" for s in suffixes)


_BINARY_ARITH_OVL = (".Tensor", "_.Tensor", ".out", ".Scalar")
_CMP_OVL = (".Tensor", "_.Tensor", ".Tensor_out", ".Scalar", "_.Scalar", ".Scalar_out")


def _make_binary_ops() -> list[OpInfo]:
    ops = [
        _binary("add", lambda a, b, alpha=1: np.add(a, np.multiply(b, alpha)), NUMERIC + BOOL,
                overloads=_ovl("add", *_BINARY_ARITH_OVL), kwargs_list=({}, {"alpha": 2}), supports_autograd=True),
        _binary("sub", lambda a, b, alpha=1: np.subtract(a, np.multiply(b, alpha)), NUMERIC,
                overloads=_ovl("sub", ".Tensor", "_.Tensor", ".out", ".Scalar", "_.Scalar"),
                kwargs_list=({}, {"alpha": 2}), scalars=(2, 1.5), supports_autograd=True),
        _binary("mul", np.multiply, ALL_DTYPES, overloads=_ovl("mul", *_BINARY_ARITH_OVL), supports_autograd=True),
        _binary("div", _ref_div, ALL_DTYPES, overloads=_ovl("div", ".Tensor", "_.Tensor", ".out", ".Scalar", "_.Scalar"),
                rhs_exclude_zero=True, scalars=(3, -2.5), result_dtype=_rt_true_div, supports_autograd=True,
                variant_name="no_rounding_mode"),
        _binary("div", _ref_div, NUMERIC, overloads=_ovl("div", ".Tensor_mode", "_.Tensor_mode", ".out_mode",
                                                         ".Scalar_mode", "_.Scalar_mode"),
                kwargs_list=({"rounding_mode": "trunc"},), rhs_exclude_zero=True, scalars=(3, -2.5),
                result_dtype=_rt_true_div, variant_name="trunc_rounding"),
        _binary("div", _ref_div, NUMERIC, overloads=_ovl("div", ".Tensor_mode", "_.Tensor_mode", ".out_mode",
                                                         ".Scalar_mode", "_.Scalar_mode"),
                kwargs_list=({"rounding_mode": "floor"},), rhs_exclude_zero=True, scalars=(3, -2.5),
                result_dtype=_rt_true_div, variant_name="floor_rounding"),
        _binary("floor_divide", np.floor_divide, NUMERIC,
                overloads=_ovl("floor_divide", "", "_.Tensor", ".out", ".Scalar", "_.Scalar"),
                rhs_exclude_zero=True, scalars=(3, -2.5)),
        _binary("remainder", np.remainder, NUMERIC,
                overloads=_ovl("remainder", ".Tensor", "_.Tensor", ".Tensor_out", ".Scalar", "_.Scalar"),
                rhs_exclude_zero=True, scalars=(3, -2.5)),
        _binary("pow", np.power, NUMERIC,
                overloads=_ovl("pow", ".Tensor_Tensor", "_.Tensor", ".Tensor_Tensor_out", ".Tensor_Scalar", "_.Scalar",
                               ".Tensor_Scalar_out"),
                lhs_low=0.5, lhs_high=3, rhs_low=-2, rhs_high=2, int_lhs=(-3, 3), int_rhs=(0, 3), scalars=(2, 0.5),
                supports_autograd=True, atol={"bfloat16": 5e-2, "float16": 5e-3}),
        _binary("maximum", np.maximum, ALL_DTYPES, overloads=_ovl("maximum", "", ".out"),
                variants=("functional", "out", "method"), scalars=(), supports_autograd=True),
        _binary("minimum", np.minimum, ALL_DTYPES, overloads=_ovl("minimum", "", ".out"),
                variants=("functional", "out", "method"), scalars=(), supports_autograd=True),
    ]
    for name, fn in (("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
                     ("gt", np.greater), ("ge", np.greater_equal)):
        ops.append(_binary(name, fn, ALL_DTYPES, overloads=_ovl(name, *_CMP_OVL), result_dtype=_rt_bool,
                           scalars=(2, 1.5, True)))
    for name, fn in (("logical_and", np.logical_and), ("logical_or", np.logical_or),
                     ("logical_xor", np.logical_xor)):
        ops.append(_binary(name, fn, ALL_DTYPES, overloads=_ovl(name, "", "_", ".out"), result_dtype=_rt_bool,
                           scalars=()))
    for name, fn in (("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
                     ("bitwise_xor", np.bitwise_xor)):
        ops.append(_binary(name, fn, INTEGRAL_AND_BOOL,
                           overloads=_ovl(name, ".Tensor", "_.Tensor", ".Tensor_out", ".Scalar", "_.Scalar",
                                          ".Scalar_out"),
                           scalars=(3, True), promotion=False))
    # Python scalars on the left: the reflected number slots (PyTorch's __radd__ & co.)
    for name, fn, ref, dts, kwgen in (
        ("__radd__", lambda x, s: s + x, lambda x, s: np.add(s, x), NUMERIC + BOOL, {}),
        ("__rsub__", lambda x, s: s - x, lambda x, s: np.subtract(s, x), NUMERIC, {}),
        ("__rmul__", lambda x, s: s * x, lambda x, s: np.multiply(s, x), ALL_DTYPES, {}),
        ("__rtruediv__", lambda x, s: s / x, lambda x, s: np.true_divide(s, x), ALL_DTYPES, {"exclude_zero": True}),
        ("__rpow__", lambda x, s: s ** x, lambda x, s: np.power(s, x), ALL_DTYPES, {"low": 0, "high": 3}),
        ("__rmod__", lambda x, s: s % x, lambda x, s: np.remainder(s, x), ALL_DTYPES, {"exclude_zero": True}),
        ("__rfloordiv__", lambda x, s: s // x, lambda x, s: np.floor_divide(s, x), ALL_DTYPES, {"exclude_zero": True}),
    ):
        rt = (lambda s: _float_of(result_type(s.input, s.args[0]))) if name == "__rtruediv__" else \
            (lambda s: result_type(s.input, s.args[0]))
        scalars = (3, 1.5, True) if name in ("__radd__", "__rmul__", "__rtruediv__") else (3, 1.5)
        ops.append(OpInfo(name, _reverse_samples(scalars, **kwgen), aten_overloads=(), dtypes=dts,
                          ref=_ref_binary(ref), variants=("functional",), op=fn, result_dtype=rt,
                          category="binary"))
    ops.append(OpInfo("rsub", _binary_samples(scalars=(2, 1.5)), aten_overloads=_ovl("rsub", ".Tensor", ".Scalar"),
                      dtypes=NUMERIC, ref=_ref_binary(lambda a, b, alpha=1: np.subtract(b, np.multiply(a, alpha))),
                      variants=("functional",), result_dtype=_rt_binary, category="binary"))
    return ops


# ---------------------------------------------------------------------------------------------
# Ternary: where, clamp
# ---------------------------------------------------------------------------------------------
def _where_samples(op: OpInfo, dtype: Any, rng: np.random.Generator) -> Iterable[SampleInput]:
    for sa, la, sb, lb, name in shapes_binary():
        c = make_tensor(sb, _C.bool, rng, layout=lb)
        a = make_tensor(sa, dtype, rng, layout=la)
        b = make_tensor(sb, dtype, rng, layout=lb)
        yield SampleInput(c, (a, b), {}, name)
    c = make_tensor((3, 4), _C.bool, rng)
    yield SampleInput(c, (make_tensor((3, 4), dtype, rng), 2), {}, "scalar_other")
    yield SampleInput(c, (2, make_tensor((3, 4), dtype, rng)), {}, "scalar_self")


def _clamp_samples(op: OpInfo, dtype: Any, rng: np.random.Generator) -> Iterable[SampleInput]:
    lo = 1 if dtype == _C.uint8 else -2
    for shape, layout in shapes_unary():
        x = make_tensor(shape, dtype, rng, layout=layout)
        yield SampleInput(x, (), {"min": lo, "max": 3}, f"{layout}_{shape}")
    x = make_tensor((3, 4), dtype, rng)
    yield SampleInput(x, (), {"min": lo + 1}, "min_only")
    yield SampleInput(x, (), {"max": 1}, "max_only")
    yield SampleInput(x, (), {"min": 3, "max": lo}, "min_gt_max")
    yield SampleInput(x, (make_tensor((3, 1), dtype, rng, low=lo - 3, high=lo + 2), make_tensor((4,), dtype, rng, low=lo + 2, high=9)),
                      {}, "tensor_bounds_broadcast")


def _ref_clamp(x: np.ndarray, min: Any = None, max: Any = None) -> np.ndarray:
    r = x
    if min is not None:
        r = np.maximum(r, min)
    if max is not None:
        r = np.minimum(r, max)
    return r


# ---------------------------------------------------------------------------------------------
# Unary
# ---------------------------------------------------------------------------------------------
def _unary(name: str, ref: Callable, dtypes: tuple = ALL_DTYPES, *, variants: tuple = VARIANTS,
           result_dtype: Callable | None = _rt_float, overloads: Sequence[str] | None = None,
           samples: SampleFunc | None = None, **kw: Any) -> OpInfo:
    sample_kw = {k: kw.pop(k) for k in list(kw) if k in ("low", "high", "exclude_zero", "kwargs_list", "int_low",
                                                          "int_high")}
    if overloads is None:
        overloads = _ovl(name, "", "_", ".out")
    return OpInfo(name, samples or _unary_samples(**sample_kw), aten_overloads=tuple(overloads), dtypes=dtypes,
                  ref=_ref_unary(ref, result_dtype is _rt_float), variants=variants, result_dtype=result_dtype, category="unary", **kw)


def _make_unary_ops() -> list[OpInfo]:
    F = FLOATING
    return [
        _unary("neg", np.negative, NUMERIC, result_dtype=_rt_same, supports_autograd=True),
        _unary("abs", np.abs, NUMERIC, result_dtype=_rt_same, supports_autograd=True),
        _unary("exp", np.exp, ALL_DTYPES, supports_autograd=True),
        _unary("log", np.log, ALL_DTYPES, low=0.05, high=5, int_low=1, supports_autograd=True),
        _unary("log1p", np.log1p, ALL_DTYPES, low=-0.9, high=5, int_low=0, supports_autograd=True),
        _unary("expm1", np.expm1, ALL_DTYPES, supports_autograd=True),
        _unary("sqrt", np.sqrt, ALL_DTYPES, low=0, high=9, int_low=0, supports_autograd=True),
        _unary("rsqrt", lambda x: 1 / np.sqrt(x), ALL_DTYPES, low=0.1, high=9, int_low=1, supports_autograd=True),
        _unary("sin", np.sin, ALL_DTYPES, supports_autograd=True),
        _unary("cos", np.cos, ALL_DTYPES, supports_autograd=True),
        _unary("tan", np.tan, ALL_DTYPES, low=-1.4, high=1.4, int_low=-1, int_high=1, supports_autograd=True,
               atol={"bfloat16": 5e-2, "float16": 5e-3}),
        _unary("tanh", np.tanh, ALL_DTYPES, supports_autograd=True),
        _unary("sigmoid", lambda x: 1 / (1 + np.exp(-np.asarray(x, np.float64))), ALL_DTYPES, supports_autograd=True),
        _unary("erf", _np_erf, ALL_DTYPES, supports_autograd=True),
        _unary("reciprocal", lambda x: 1 / np.asarray(x, np.float64), ALL_DTYPES, exclude_zero=True, supports_autograd=True),
        _unary("relu", lambda x: np.maximum(x, 0).astype(x.dtype), NUMERIC, result_dtype=_rt_same,
               overloads=_ovl("relu", "", "_"), variants=("functional", "inplace", "method"), supports_autograd=True),
        _unary("gelu", _ref_gelu, F, kwargs_list=({}, {"approximate": "tanh"}), result_dtype=_rt_same,
               supports_autograd=True),
        _unary("silu", lambda x: np.asarray(x, np.float64) / (1 + np.exp(-np.asarray(x, np.float64))), F,
               result_dtype=_rt_same, supports_autograd=True),
        _unary("floor", np.floor, NUMERIC, result_dtype=_rt_same),
        _unary("ceil", np.ceil, NUMERIC, result_dtype=_rt_same),
        _unary("trunc", np.trunc, NUMERIC, result_dtype=_rt_same),
        _unary("round", lambda x: np.round(x), NUMERIC, result_dtype=_rt_same),
        OpInfo("round", _unary_samples(kwargs_list=({"decimals": 1}, {"decimals": -1})),
               aten_overloads=_ovl("round", ".decimals", "_.decimals", ".decimals_out"), dtypes=F,
               ref=_ref_unary(lambda x, decimals=0: np.round(np.asarray(x, np.float64), decimals)),
               variants=VARIANTS, result_dtype=_rt_same, category="unary", variant_name="decimals"),
        _unary("sign", _ref_sign, ALL_DTYPES, result_dtype=_rt_same),
        _unary("logical_not", np.logical_not, ALL_DTYPES, result_dtype=_rt_bool),
        _unary("bitwise_not", np.invert, INTEGRAL_AND_BOOL, result_dtype=_rt_same),
    ]


# ---------------------------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------------------------
def _reduction_samples(dims: bool = True, keepdim: bool = True, extra: Sequence[dict] = ({},),
                       full: bool = True, nonempty: bool = False, low: float | None = None,
                       high: float | None = None, dim_kw: str = "dim", dim_required: bool = False,
                       tuple_dims: bool = True) -> SampleFunc:
    """Full reductions (no dim) and reductions along an int dim, a negative dim, a tuple of dims,
    with and without keepdim, over 0-d, empty and non-contiguous inputs."""
    def gen(op: OpInfo, dtype: Any, rng: np.random.Generator) -> Iterable[SampleInput]:
        def T(shape: tuple, layout: str = "contiguous") -> Any:
            return make_tensor(shape, dtype, rng, low=low, high=high, layout=layout)
        for kw in extra:
            if full and not dim_required:
                for shape, layout in (((), "contiguous"), ((3, 4), "contiguous"), ((2, 3, 5), "transposed"),
                                      ((3, 4), "sliced"), ((3, 4), "expanded"), ((0, 3), "contiguous")):
                    if nonempty and 0 in shape:
                        continue
                    yield SampleInput(T(shape, layout), (), dict(kw), f"full_{layout}_{shape}",
                                      variants=("functional", "method"))
            if not dims:
                continue
            cases: list[tuple[tuple, Any, str]] = [
                ((3, 4), 1, "contiguous"), ((3, 4), 0, "transposed"), ((2, 3, 5), -1, "contiguous"),
                ((2, 3, 5), 1, "sliced"), ((3, 4), 0, "expanded"), ((), 0, "contiguous"), ((0, 3), 1, "contiguous"),
            ]
            if tuple_dims:
                cases += [((2, 3, 5), (0, 2), "contiguous"), ((2, 3, 5), (-1, 0), "transposed")]
            if not nonempty:
                cases.append(((3, 0), 0, "contiguous"))
            for shape, d, layout in cases:
                if nonempty and 0 in shape:
                    continue
                for kd in ((False, True) if keepdim else (None,)):
                    k = dict(kw)
                    k[dim_kw] = list(d) if isinstance(d, tuple) else d
                    if kd is not None:
                        k["keepdim"] = kd
                    yield SampleInput(T(shape, layout), (), k, f"dim{d}_keep{kd}_{layout}_{shape}")
    return gen


def _np_axis(dim: Any) -> Any:
    return tuple(dim) if isinstance(dim, (list, tuple)) else dim


def _zero_dim(fn: Callable) -> Callable:
    """PyTorch lets a 0-d tensor be reduced over dim 0 / -1 (as if it were 1-element 1-D, with
    a 0-d result); numpy does not: reshape around the call."""
    def ref(x: Any, *args: Any, **kw: Any) -> Any:
        x = np.asarray(x)
        if x.ndim == 0 and kw.get("dim", args[0] if args else None) is not None:
            if "dim" in kw:
                kw["dim"] = 0
            else:
                args = (0,) + tuple(args[1:])
            kw.pop("keepdim", None) if "keepdim" in kw else None
            r = fn(x.reshape(1), *args, **kw)
            return tuple(np.asarray(v).reshape(()) for v in r) if isinstance(r, tuple) else np.asarray(r).reshape(())
        return fn(x, *args, **kw)
    return ref


def _ref_reduce(fn: Callable, int_to_int64: bool = False) -> Callable:
    def ref(x: np.ndarray, dim: Any = None, keepdim: bool = False, dtype: Any = None, **kw: Any) -> Any:
        x = np.asarray(x)
        if dtype is not None:
            x = x.astype(np.float32 if dtype.name == "bfloat16" or dtype == np.float16 else dtype)
        elif int_to_int64 and x.dtype.kind in "biu":
            x = x.astype(np.int64)
        with np.errstate(all="ignore"):
            return fn(x, axis=_np_axis(dim), keepdims=keepdim, **kw)
    return _zero_dim(ref)


def _rt_sum(s: SampleInput) -> Any:
    d = s.kwargs.get("dtype")
    if d is not None:
        return d
    return _C.int64 if s.input.dtype in INTEGRAL_AND_BOOL else s.input.dtype


def _rt_mean(s: SampleInput) -> Any:
    return s.kwargs.get("dtype") or s.input.dtype


def _rt_allany(s: SampleInput) -> Any:
    return _C.uint8 if s.input.dtype == _C.uint8 else _C.bool


@_zero_dim
def _ref_var(x: np.ndarray, dim: Any = None, correction: Any = None, keepdim: bool = False) -> Any:
    ddof = 1 if correction is None else correction
    with np.errstate(all="ignore"):
        return np.var(np.asarray(x, np.float64), axis=_np_axis(dim), ddof=ddof, keepdims=keepdim)


@_zero_dim
def _ref_std(x: np.ndarray, dim: Any = None, correction: Any = None, keepdim: bool = False) -> Any:
    return np.sqrt(_ref_var(x, dim, correction, keepdim))


def _ref_minmax_dim(fn: Callable, argfn: Callable) -> Callable:
    def ref(x: np.ndarray, dim: Any = None, keepdim: bool = False) -> Any:
        if dim is None:
            return fn(x)
        x = np.asarray(x)
        if x.ndim == 0:
            return x.copy(), np.array(0, np.int64)
        v = fn(x, axis=dim, keepdims=keepdim)
        i = argfn(x, axis=dim, keepdims=keepdim)
        return v, i.astype(np.int64)
    return ref


def _ref_arg(argfn: Callable) -> Callable:
    def ref(x: np.ndarray, dim: Any = None, keepdim: bool = False) -> Any:
        x = np.asarray(x)
        if dim is None:
            r = np.asarray(argfn(x.reshape(-1)), np.int64)
            return r.reshape((1,) * x.ndim) if keepdim else r
        if x.ndim == 0:
            return np.array(0, np.int64)
        return argfn(x, axis=dim, keepdims=keepdim).astype(np.int64)
    return ref


@_zero_dim
def _ref_logsumexp(x: np.ndarray, dim: Any, keepdim: bool = False) -> Any:
    x = np.asarray(x, np.float64)
    ax = _np_axis(dim)
    if x.ndim == 0:
        return x.copy()
    m = np.max(x, axis=ax, keepdims=True) if x.size else np.zeros([1] * x.ndim)
    m = np.where(np.isfinite(m), m, 0)
    r = np.log(np.sum(np.exp(x - m), axis=ax, keepdims=True)) + m
    return r if keepdim else np.squeeze(r, axis=ax)


def _ref_softmax(x: np.ndarray, dim: int, dtype: Any = None, log: bool = False) -> Any:
    x = np.asarray(x, np.float64)
    if x.ndim == 0:
        return np.zeros_like(x) if log else np.ones_like(x)
    m = np.max(x, axis=dim, keepdims=True) if x.size else 0
    e = np.exp(x - m)
    s = np.sum(e, axis=dim, keepdims=True)
    return (x - m - np.log(s)) if log else e / s


def _softmax_samples(op: OpInfo, dtype: Any, rng: np.random.Generator) -> Iterable[SampleInput]:
    for shape, d, layout in (((3, 4), 1, "contiguous"), ((3, 4), 0, "transposed"), ((2, 3, 5), -1, "sliced"),
                             ((), 0, "contiguous"), ((0, 3), 1, "contiguous"), ((3, 4), -1, "expanded")):
        yield SampleInput(make_tensor(shape, dtype, rng, layout=layout), (d,), {}, f"dim{d}_{layout}_{shape}")
    yield SampleInput(make_tensor((3, 4), dtype, rng), (1,), {"dtype": _C.float64}, "dtype_float64")


def _cum_samples(op: OpInfo, dtype: Any, rng: np.random.Generator) -> Iterable[SampleInput]:
    low, high = (-2, 2) if op.name == "cumprod" else (None, None)
    for shape, d, layout in (((3, 4), 1, "contiguous"), ((3, 4), 0, "transposed"), ((2, 3, 5), -1, "sliced"),
                             ((), 0, "contiguous"), ((0, 3), 1, "contiguous"), ((3, 4), 1, "expanded"),
                             ((7,), 0, "contiguous")):
        yield SampleInput(make_tensor(shape, dtype, rng, layout=layout, low=low, high=high), (d,), {},
                          f"dim{d}_{layout}_{shape}")
    yield SampleInput(make_tensor((3, 4), dtype, rng, low=low, high=high), (1,), {"dtype": _C.float64}, "dtype_float64")


def _ref_cum(fn: Callable) -> Callable:
    def ref(x: np.ndarray, dim: int, dtype: Any = None) -> Any:
        x = np.asarray(x)
        if dtype is not None:
            x = x.astype(dtype)
        elif x.dtype.kind in "biu":
            x = x.astype(np.int64)
        if x.ndim == 0:
            return x.copy()
        return fn(x, axis=dim)
    return ref


def _norm_samples(op: OpInfo, dtype: Any, rng: np.random.Generator) -> Iterable[SampleInput]:
    for p in (2, 1, float("inf"), 3):
        for shape, layout in (((3, 4), "contiguous"), ((2, 3, 5), "transposed"), ((), "contiguous"), ((0, 3), "contiguous")):
            if 0 in shape and p == float("inf"):
                continue
            yield SampleInput(make_tensor(shape, dtype, rng, layout=layout), (p,), {}, f"p{p}_{layout}_{shape}")
        yield SampleInput(make_tensor((2, 3, 5), dtype, rng, layout="sliced"), (p, [1]), {}, f"p{p}_dim1")
        yield SampleInput(make_tensor((2, 3, 5), dtype, rng), (p, [0, 2], True), {}, f"p{p}_dims_keepdim")


def _ref_norm(x: np.ndarray, p: Any = 2, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Any:
    x = np.abs(np.asarray(x, np.float64))
    ax = _np_axis(dim) if dim is not None else None
    if ax is not None and isinstance(ax, tuple) and len(ax) == 0:
        ax = None
    if x.ndim == 0:
        return x.copy()
    if p == float("inf"):
        return np.max(x, axis=ax, keepdims=keepdim, initial=0)
    if p == 0:
        return np.sum(x != 0, axis=ax, keepdims=keepdim).astype(np.float64)
    return np.sum(x ** p, axis=ax, keepdims=keepdim) ** (1.0 / p)


def _make_reduction_ops() -> list[OpInfo]:
    F = FLOATING
    red_tol = {"float16": 1e-2, "bfloat16": 5e-2, "float32": 1e-5}
    red_rtol = {"float16": 1e-2, "bfloat16": 5e-2, "float32": 1e-5}
    sum_dtype = ({}, {"dtype": _C.float64})
    ops = [
        OpInfo("sum", _reduction_samples(extra=sum_dtype), _ovl("sum", "", ".dim_IntList", ".IntList_out"),
               ALL_DTYPES, _ref_reduce(np.sum, True), ("functional", "out", "method"), True, red_tol, red_rtol,
               result_dtype=_rt_sum, category="reduction"),
        OpInfo("mean", _reduction_samples(extra=({}, {"dtype": _C.float64})), _ovl("mean", "", ".dim"), F,
               _ref_reduce(np.mean), ("functional", "method"), True, red_tol, red_rtol, result_dtype=_rt_mean,
               category="reduction"),
        OpInfo("prod", _reduction_samples(low=-2, high=2, tuple_dims=False, extra=({}, {"dtype": _C.float64})),
               _ovl("prod", "", ".dim_int"), ALL_DTYPES, _ref_reduce(np.prod, True), ("functional", "method"),
               True, red_tol, red_rtol, result_dtype=_rt_sum, category="reduction"),
        OpInfo("amax", _reduction_samples(nonempty=True), _ovl("amax", ""), ALL_DTYPES,
               _ref_reduce(np.max), ("functional", "method"), True, result_dtype=_rt_same, category="reduction"),
        OpInfo("amin", _reduction_samples(nonempty=True), _ovl("amin", ""), ALL_DTYPES,
               _ref_reduce(np.min), ("functional", "method"), True, result_dtype=_rt_same, category="reduction"),
        OpInfo("max", _reduction_samples(nonempty=True, tuple_dims=False), _ovl("max", "", ".dim"), ALL_DTYPES,
               _ref_minmax_dim(np.max, np.argmax), ("functional", "method"), True, category="reduction"),
        OpInfo("min", _reduction_samples(nonempty=True, tuple_dims=False), _ovl("min", "", ".dim"), ALL_DTYPES,
               _ref_minmax_dim(np.min, np.argmin), ("functional", "method"), True, category="reduction"),
        OpInfo("argmax", _reduction_samples(nonempty=True, tuple_dims=False), _ovl("argmax", ""), NUMERIC,
               _ref_arg(np.argmax), ("functional", "method"), result_dtype=lambda s: _C.int64, category="reduction"),
        OpInfo("argmin", _reduction_samples(nonempty=True, tuple_dims=False), _ovl("argmin", ""), NUMERIC,
               _ref_arg(np.argmin), ("functional", "method"), result_dtype=lambda s: _C.int64, category="reduction"),
        OpInfo("var", _reduction_samples(extra=({}, {"correction": 0}, {"correction": 2})), _ovl("var", ".correction"),
               F, _ref_var, ("functional", "method"), True, red_tol, red_rtol, result_dtype=_rt_same,
               category="reduction"),
        OpInfo("std", _reduction_samples(extra=({}, {"correction": 0})), _ovl("std", ".correction"),
               F, _ref_std, ("functional", "method"), True, red_tol, red_rtol, result_dtype=_rt_same,
               category="reduction"),
        OpInfo("all", _reduction_samples(tuple_dims=False), _ovl("all", "", ".dim"), ALL_DTYPES,
               _ref_reduce(np.all), ("functional", "method"), result_dtype=_rt_allany, category="reduction"),
        OpInfo("any", _reduction_samples(tuple_dims=False), _ovl("any", "", ".dim"), ALL_DTYPES,
               _ref_reduce(np.any), ("functional", "method"), result_dtype=_rt_allany, category="reduction"),
        OpInfo("logsumexp", _reduction_samples(full=False, dim_required=True), _ovl("logsumexp", ""), ALL_DTYPES,
               _ref_logsumexp, ("functional", "method"), True, red_tol, red_rtol, result_dtype=_rt_float,
               category="reduction"),
        OpInfo("norm", _norm_samples, _ovl("norm", ".Scalar", ".ScalarOpt_dim", ".ScalarOpt_dim_dtype",
                                            ".ScalarOpt_dtype", ".out", ".dtype_out") + ("aten::linalg_vector_norm",),
               F, _ref_norm, ("functional", "method"), True, red_tol, red_rtol, result_dtype=_rt_same,
               op=backend_sdk.norm, category="reduction"),
        OpInfo("softmax", _softmax_samples, _ovl("softmax", ".int"), F, _ref_softmax, ("functional", "method"),
               True, red_tol, red_rtol, result_dtype=lambda s: s.kwargs.get("dtype") or s.input.dtype,
               category="reduction"),
        OpInfo("log_softmax", _softmax_samples, _ovl("log_softmax", ".int"), F,
               lambda x, dim, dtype=None: _ref_softmax(x, dim, dtype, log=True), ("functional", "method"),
               True, red_tol, red_rtol, result_dtype=lambda s: s.kwargs.get("dtype") or s.input.dtype,
               category="reduction"),
        OpInfo("cumsum", _cum_samples, _ovl("cumsum", "", "_", ".out"), ALL_DTYPES, _ref_cum(np.cumsum),
               ("functional", "out", "method"), True, red_tol, red_rtol, result_dtype=_rt_sum,
               category="reduction"),
        OpInfo("cumprod", _cum_samples, _ovl("cumprod", "", "_", ".out"), ALL_DTYPES, _ref_cum(np.cumprod),
               ("functional", "out", "method"), True, red_tol, red_rtol, result_dtype=_rt_sum,
               category="reduction"),
    ]
    return ops


# ---------------------------------------------------------------------------------------------
# Linear algebra
# ---------------------------------------------------------------------------------------------
def _la_samples(kind: str) -> SampleFunc:
    def gen(op: OpInfo, dtype: Any, rng: np.random.Generator) -> Iterable[SampleInput]:
        def T(shape: tuple, layout: str = "contiguous") -> Any:
            return make_tensor(shape, dtype, rng, low=-3, high=3, layout=layout)
        if kind == "mm":
            for (m, k, n), la, lb in (((3, 4, 5), "contiguous", "contiguous"), ((3, 4, 5), "transposed", "transposed"),
                                      ((2, 3, 4), "sliced", "contiguous"), ((0, 3, 4), "contiguous", "contiguous"),
                                      ((3, 0, 4), "contiguous", "contiguous"), ((1, 1, 1), "contiguous", "contiguous"),
                                      ((17, 33, 9), "contiguous", "transposed")):
                yield SampleInput(T((m, k), la), (T((k, n), lb),), {}, f"{m}x{k}x{n}_{la}_{lb}")
        elif kind == "bmm":
            for (b, m, k, n), la, lb in (((2, 3, 4, 5), "contiguous", "contiguous"), ((2, 3, 4, 5), "transposed", "sliced"),
                                         ((0, 3, 4, 5), "contiguous", "contiguous"), ((2, 3, 0, 5), "contiguous", "contiguous"),
                                         ((3, 2, 4, 2), "expanded", "contiguous")):
                yield SampleInput(T((b, m, k), la), (T((b, k, n), lb),), {}, f"{b}x{m}x{k}x{n}_{la}_{lb}")
        elif kind == "matmul":
            for sa, sb, la in (((4,), (4,), "contiguous"), ((3, 4), (4,), "contiguous"), ((4,), (4, 5), "sliced"),
                               ((3, 4), (4, 5), "transposed"), ((2, 3, 4), (4, 5), "contiguous"),
                               ((4,), (2, 4, 5), "contiguous"), ((2, 1, 3, 4), (5, 4, 2), "contiguous"),
                               ((2, 3, 4), (4,), "contiguous"), ((0, 3, 4), (4, 2), "contiguous")):
                yield SampleInput(T(sa, la), (T(sb),), {}, f"{sa}@{sb}_{la}")
        elif kind == "addmm":
            for sself, kw in (((3, 5), {}), ((5,), {}), ((), {}), ((3, 1), {"beta": 2, "alpha": 3}),
                              ((3, 5), {"beta": 0})):
                yield SampleInput(T(sself), (T((3, 4)), T((4, 5), "transposed")), dict(kw), f"self{sself}_{kw}")
        elif kind == "dot":
            for n, layout in ((5, "contiguous"), (0, "contiguous"), (7, "sliced"), (1, "contiguous")):
                yield SampleInput(T((n,), layout), (T((n,)),), {}, f"n{n}_{layout}")
        elif kind == "linear":
            for sx, bias in (((3, 4), True), ((2, 3, 4), False), ((4,), True), ((0, 4), True)):
                args = (T((5, 4)), T((5,))) if bias else (T((5, 4)),)
                yield SampleInput(T(sx), args, {}, f"x{sx}_bias{bias}")
    return gen


def _ref_mm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in "iu" or b.dtype.kind in "iu":
        return np.matmul(a.astype(np.int64), b.astype(np.int64))
    if a.dtype == np.bool_:
        return np.matmul(a, b)
    return np.matmul(a.astype(np.float64), b.astype(np.float64))


def _ref_addmm(s: np.ndarray, a: np.ndarray, b: np.ndarray, beta: Any = 1, alpha: Any = 1) -> np.ndarray:
    prod = _ref_mm(a, b)
    return (alpha * prod) if beta == 0 else beta * np.asarray(s, prod.dtype) + alpha * prod


def _ref_linear(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    r = _ref_mm(x, np.swapaxes(w, -1, -2))
    return r if b is None else r + np.asarray(b, r.dtype)


def _make_linalg_ops() -> list[OpInfo]:
    tol = {"float16": 1e-2, "bfloat16": 6e-2, "float32": 1e-5}
    rtol = {"float16": 1e-2, "bfloat16": 2e-2, "float32": 1e-5}
    return [
        OpInfo("mm", _la_samples("mm"), _ovl("mm", "", ".out"), NUMERIC, _ref_mm, ("functional", "out", "method"),
               True, tol, rtol, result_dtype=_rt_same, category="linalg"),
        OpInfo("bmm", _la_samples("bmm"), _ovl("bmm", "", ".out"), NUMERIC, _ref_mm, ("functional", "out", "method"),
               True, tol, rtol, result_dtype=_rt_same, category="linalg"),
        OpInfo("matmul", _la_samples("matmul"), _ovl("matmul", "", ".out"), NUMERIC, _ref_mm,
               ("functional", "out", "method"), True, tol, rtol, result_dtype=_rt_same, category="linalg"),
        OpInfo("addmm", _la_samples("addmm"), _ovl("addmm", "", ".out", "_"), NUMERIC, _ref_addmm,
               ("functional", "out", "method"), True, tol, rtol, result_dtype=_rt_same, category="linalg"),
        OpInfo("dot", _la_samples("dot"), _ovl("dot", ""), NUMERIC, _ref_mm, ("functional", "method"), True, tol, rtol,
               result_dtype=_rt_same, category="linalg"),
        OpInfo("linear", _la_samples("linear"), _ovl("linear", ""), NUMERIC, _ref_linear, ("functional",), True,
               tol, rtol, result_dtype=_rt_same, category="linalg"),
    ]


# ---------------------------------------------------------------------------------------------
# Registry
# ---------------------------------------------------------------------------------------------
def _build() -> list[OpInfo]:
    ops: list[OpInfo] = []
    ops += _make_binary_ops()
    ops.append(OpInfo("where", _where_samples, _ovl("where", ".self", ".self_out", ".ScalarSelf", ".ScalarOther"),
                      ALL_DTYPES, lambda c, a, b: np.where(c, a, b), ("functional",),
                      True, result_dtype=lambda s: result_type(*s.args), category="ternary"))
    ops.append(OpInfo("clamp", _clamp_samples, _ovl("clamp", "", "_", ".out", ".Tensor", "_.Tensor", ".Tensor_out"),
                      NUMERIC, _ref_clamp, VARIANTS, True, result_dtype=_rt_same, category="ternary",
                      check_unsupported_dtypes=False))
    ops += _make_unary_ops()
    ops += _make_reduction_ops()
    ops += _make_linalg_ops()
    return ops


op_db: list[OpInfo] = _build()

# name -> OpInfo (the first one of that name; variants such as round.decimals share a name)
op_db_by_name: dict[str, OpInfo] = {}
for _o in op_db:
    op_db_by_name.setdefault(_o.name, _o)
del _o
