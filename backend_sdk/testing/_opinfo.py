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
import warnings
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
        if self.op is None:  # Tensor-method-only operators (normal_, resize_, ...): call the method
            method = self.method_name or self.name
            self.op = lambda x, *args, **kwargs: getattr(x, method)(*args, **kwargs)
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
            if self.category in ("factory", "random") and not isinstance(s.input, backend_sdk.Tensor):
                s.kwargs.setdefault("device", device)
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
        if opinfo.category == "factory":  # out= decides dtype and device
            kwargs.pop("dtype", None)
            kwargs.pop("device", None)
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
    # Python scalar as self: the Scalar_Tensor / Scalar overloads, called as functions
    for name, ref, dts, kwgen, variants, ovl in (
        ("pow", lambda x, s: np.power(s, x), ALL_DTYPES, {"low": 0, "high": 3}, ("functional", "out"),
         _ovl("pow", ".Scalar", ".Scalar_out")),
        ("remainder", lambda x, s: np.remainder(s, x), ALL_DTYPES, {"exclude_zero": True}, ("functional",),
         _ovl("remainder", ".Scalar_Tensor")),
        ("bitwise_and", lambda x, s: np.bitwise_and(s, x), INTEGRAL_AND_BOOL, {}, ("functional",),
         _ovl("bitwise_and", ".Scalar_Tensor")),
        ("bitwise_or", lambda x, s: np.bitwise_or(s, x), INTEGRAL_AND_BOOL, {}, ("functional",),
         _ovl("bitwise_or", ".Scalar_Tensor")),
        ("bitwise_xor", lambda x, s: np.bitwise_xor(s, x), INTEGRAL_AND_BOOL, {}, ("functional",),
         _ovl("bitwise_xor", ".Scalar_Tensor")),
    ):
        fn = getattr(backend_sdk, name)
        scalars = (3, True) if name.startswith("bitwise") else (3, 1.5)
        if name == "pow":
            scalars = (2, 1.5)
        ops.append(OpInfo(name, _reverse_samples(scalars, **kwgen), aten_overloads=ovl, dtypes=dts,
                          ref=_ref_binary(ref), variants=variants,
                          op=(lambda f: lambda x, s, **kw: f(s, x, **kw))(fn),
                          result_dtype=lambda s: result_type(s.input, s.args[0]), category="binary",
                          variant_name="scalar_self"))
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


def _where_scalar_samples(op: OpInfo, dtype: Any, rng: np.random.Generator) -> Iterable[SampleInput]:
    for shape, layout in (((3, 4), "contiguous"), ((3, 4), "transposed"), ((), "contiguous"), ((0,), "contiguous")):
        c = make_tensor(shape, _C.bool, rng, layout=layout)
        yield SampleInput(c, (2, 3), {}, f"int_int_{layout}_{shape}")
        yield SampleInput(c, (2.5, 3), {}, f"float_int_{layout}_{shape}")
        yield SampleInput(c, (True, False), {}, f"bool_bool_{layout}_{shape}")


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
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # mean of an empty slice is NaN, as in PyTorch
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
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # ddof >= n gives inf/NaN, as in PyTorch
        return np.var(np.asarray(x, np.float64), axis=_np_axis(dim), ddof=ddof, keepdims=keepdim)


@_zero_dim
def _ref_std(x: np.ndarray, dim: Any = None, correction: Any = None, keepdim: bool = False) -> Any:
    return np.sqrt(_ref_var(x, dim, correction, keepdim))


def _ref_moments(spread: Callable) -> Callable:
    """var_mean / std_mean: (spread, mean) over the same dims."""
    mean = _ref_reduce(np.mean)

    def ref(x: np.ndarray, dim: Any = None, correction: Any = None, keepdim: bool = False) -> Any:
        return spread(x, dim=dim, correction=correction, keepdim=keepdim), mean(x, dim=dim, keepdim=keepdim)
    return ref


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


def _vector_norm_samples(op: OpInfo, dtype: Any, rng: np.random.Generator) -> Iterable[SampleInput]:
    for ord_ in (2, 1, 3):
        yield SampleInput(make_tensor((3, 4), dtype, rng), (ord_,), {}, f"ord{ord_}")
        yield SampleInput(make_tensor((2, 3, 5), dtype, rng, layout="transposed"), (ord_, [0, 2], True), {},
                          f"ord{ord_}_dims_keepdim")
    yield SampleInput(make_tensor((), dtype, rng), (), {}, "0d")


def _resize_samples(op: OpInfo, dtype: Any, rng: np.random.Generator) -> Iterable[SampleInput]:
    yield SampleInput(make_tensor((3, 4), dtype, rng), ([2, 3],), {}, "shrink")
    yield SampleInput(make_tensor((3, 4), dtype, rng), ([12],), {}, "flatten")
    yield SampleInput(make_tensor((3, 4), dtype, rng), ([0],), {}, "to_empty")


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
        OpInfo("var_mean", _reduction_samples(extra=({}, {"correction": 0}, {"correction": 2})),
               _ovl("var_mean", ".correction", ".dim"), F, _ref_moments(_ref_var), ("functional",), True, red_tol,
               red_rtol, result_dtype=_rt_same, category="reduction"),
        OpInfo("std_mean", _reduction_samples(extra=({}, {"correction": 0})), _ovl("std_mean", ".correction", ".dim"),
               F, _ref_moments(_ref_std), ("functional",), True, red_tol, red_rtol, result_dtype=_rt_same,
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
# Shape and indexing
# ---------------------------------------------------------------------------------------------
def _S(fn: Callable[[Any, np.random.Generator, Callable], Iterable[SampleInput]]) -> SampleFunc:
    """Adapts fn(dtype, rng, T) where T(shape, layout="contiguous", **kw) makes a tensor."""
    def gen(op: OpInfo, dtype: Any, rng: np.random.Generator) -> Iterable[SampleInput]:
        def T(shape: tuple, layout: str = "contiguous", **kw: Any) -> Any:
            return make_tensor(shape, dtype, rng, layout=layout, **kw)
        return fn(dtype, rng, T)
    return gen


def _index(shape: Sequence[int], high: int, rng: np.random.Generator, layout: str = "contiguous",
           low: int = 0) -> Any:
    """An int64 index tensor with values in [low, high)."""
    return make_tensor(shape, _C.int64, rng, low=low, high=max(high - 1, low), layout=layout)


def _mask(shape: Sequence[int], rng: np.random.Generator, layout: str = "contiguous") -> Any:
    return make_tensor(shape, _C.bool, rng, layout=layout)


def _cat_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput([T((2, 3)), T((4, 3), "transposed"), T((1, 3))], (0,), {}, "dim0")
    yield SampleInput([T((2, 3)), T((2, 5), "sliced")], (1,), {}, "dim1_sliced")
    yield SampleInput([T((2, 3)), T((2, 3), "expanded")], (-1,), {}, "neg_dim_expanded")
    yield SampleInput([T((2, 3)), T((0, 3))], (0,), {}, "with_empty")
    yield SampleInput([T((3,))], (0,), {}, "single")
    yield SampleInput([T((2, 3)), T((0,))], (0,), {}, "legacy_empty_1d")


def _stack_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    for d in (0, 1, 2, -1):
        yield SampleInput([T((2, 3)), T((2, 3), "transposed"), T((2, 3), "sliced")], (d,), {}, f"dim{d}")
    yield SampleInput([T(()), T(())], (0,), {}, "0d")
    yield SampleInput([T((0, 3)), T((0, 3))], (1,), {}, "empty")


def _split_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((7, 4)), (3,), {}, "size3")
    yield SampleInput(T((4, 7), "transposed"), (2, 1), {}, "size2_dim1")
    yield SampleInput(T((5, 6), "sliced"), (6, -1), {}, "whole")
    yield SampleInput(T((0, 3)), (2,), {}, "empty")


def _split_sizes_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((7, 4)), ([2, 5],), {}, "2_5")
    yield SampleInput(T((4, 7), "transposed"), ([4, 0, 3], 1), {}, "with_zero_dim1")


def _chunk_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((7, 4)), (3,), {}, "3")
    yield SampleInput(T((4, 6), "sliced"), (2, 1), {}, "2_dim1")
    yield SampleInput(T((2, 3)), (5,), {}, "more_chunks_than_size")


def _ref_split(x: np.ndarray, size: int, dim: int = 0) -> tuple:
    n = x.shape[dim]
    return tuple(np.take(x, range(i, min(i + size, n)), axis=dim) for i in range(0, max(n, 1), size)) if n else (x,)


def _ref_split_sizes(x: np.ndarray, sizes: list, dim: int = 0) -> tuple:
    return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=dim))


def _ref_chunk(x: np.ndarray, chunks: int, dim: int = 0) -> tuple:
    size = -(-x.shape[dim] // chunks)
    return _ref_split(x, size, dim)


def _flatten_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((2, 3, 4)), (), {}, "all")
    yield SampleInput(T((2, 3, 4), "transposed"), (1, 2), {}, "last_two_transposed")
    yield SampleInput(T((2, 3, 4), "sliced"), (0, 1), {}, "first_two_sliced")
    yield SampleInput(T(()), (), {}, "0d")
    yield SampleInput(T((0, 3)), (), {}, "empty")


def _ref_flatten(x: np.ndarray, start_dim: int = 0, end_dim: int = -1) -> np.ndarray:
    if x.ndim == 0:
        return x.reshape(1)
    s, e = start_dim % x.ndim, end_dim % x.ndim
    return x.reshape(x.shape[:s] + (-1,) + x.shape[e + 1:]) if x.size else x.reshape(
        x.shape[:s] + (int(np.prod(x.shape[s:e + 1])),) + x.shape[e + 1:])


def _reshape_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((2, 3, 4)), ((6, 4),), {}, "merge")
    yield SampleInput(T((2, 3, 4), "transposed"), ((4, -1),), {}, "transposed_copy")
    yield SampleInput(T((2, 6), "sliced"), ((3, 4),), {}, "sliced")
    yield SampleInput(T(()), ((1, 1),), {}, "0d")
    yield SampleInput(T((0, 3)), ((3, 0),), {}, "empty")
    yield SampleInput(T((6,)), ((),), {}, "to_0d_fails_unless_1") if False else SampleInput(T((1,)), ((),), {}, "to_0d")


def _view_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((2, 3, 4)), ([6, 4],), {}, "merge")
    yield SampleInput(T((2, 3, 4)), ([2, -1],), {}, "infer")
    yield SampleInput(T((2, 6), "sliced"), ([2, 3, 2],), {}, "split_sliced_dim")
    yield SampleInput(T(()), ([1],), {}, "0d")
    yield SampleInput(T((0, 3)), ([3, 0],), {}, "empty")


def _permute_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((2, 3, 4)), ((2, 0, 1),), {}, "cycle")
    yield SampleInput(T((2, 3, 4), "sliced"), ((-1, 1, 0),), {}, "neg_sliced")
    yield SampleInput(T(()), ((),), {}, "0d")
    yield SampleInput(T((0, 3)), ((1, 0),), {}, "empty")


def _transpose_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((2, 3, 4)), (0, 2), {}, "0_2")
    yield SampleInput(T((3, 4), "sliced"), (-1, -2), {}, "neg_sliced")
    yield SampleInput(T((3, 4), "expanded"), (0, 1), {}, "expanded")
    yield SampleInput(T(()), (0, -1), {}, "0d")


def _t_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), (), {}, "2d")
    yield SampleInput(T((3, 4), "sliced"), (), {}, "sliced")
    yield SampleInput(T((5,)), (), {}, "1d")
    yield SampleInput(T(()), (), {}, "0d")


def _squeeze_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((1, 3, 1)), (), {}, "all")
    yield SampleInput(T((1, 3, 1)), (2,), {}, "dim2")
    yield SampleInput(T((1, 3, 1)), (1,), {}, "non_one_dim")
    yield SampleInput(T((1, 3, 1)), ((0, 2),), {}, "tuple")
    yield SampleInput(T(()), (), {}, "0d")


def _ref_squeeze(x: np.ndarray, dim: Any = None) -> np.ndarray:
    if dim is None:
        return np.squeeze(x)
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    dims = tuple(d % max(x.ndim, 1) for d in dims if x.ndim and x.shape[d % x.ndim] == 1)
    return np.squeeze(x, axis=dims) if dims else x


def _unsqueeze_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    for d in (0, 1, 2, -1):
        yield SampleInput(T((3, 4), "transposed"), (d,), {}, f"dim{d}")
    yield SampleInput(T(()), (0,), {}, "0d")


def _expand_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 1)), (3, 4), {}, "1_to_4")
    yield SampleInput(T((1, 4)), (2, 3, -1), {}, "new_dims")
    yield SampleInput(T(()), (2, 2), {}, "0d")
    yield SampleInput(T((3, 1), "sliced"), (3, 0), {}, "to_empty")


def _select_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), (0, 1), {}, "dim0")
    yield SampleInput(T((2, 3, 4), "transposed"), (-1, -2), {}, "neg_transposed")
    yield SampleInput(T((3, 4), "sliced"), (1, 3), {}, "sliced")


def _slice_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((5, 4)), (0, 1, 4, 2), {}, "step2")
    yield SampleInput(T((3, 6), "transposed"), (1, -4, None, 1), {}, "neg_start")
    yield SampleInput(T((3, 4)), (1, 2, 100, 1), {}, "clamped_end")
    yield SampleInput(T((3, 4), "sliced"), (0, 2, 1, 1), {}, "empty")


def _ref_slice(x: np.ndarray, dim: int = 0, start: Any = None, end: Any = None, step: int = 1) -> np.ndarray:
    index = [slice(None)] * x.ndim
    index[dim] = slice(start, end, step)
    return x[tuple(index)]


def _narrow_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((5, 4)), (0, 1, 3), {}, "dim0")
    yield SampleInput(T((3, 6), "transposed"), (-1, -4, 2), {}, "neg_start")
    yield SampleInput(T((3, 4)), (1, 4, 0), {}, "empty_at_end")


def _unfold_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 5)), (1, 2, 1), {}, "overlapping")
    yield SampleInput(T((6, 2), "transposed"), (0, 2, 3), {}, "disjoint_gap")
    yield SampleInput(T((4,)), (0, 4, 1), {}, "whole")
    yield SampleInput(T(()), (0, 1, 1), {}, "0d")


def _ref_unfold(x: np.ndarray, dim: int, size: int, step: int) -> np.ndarray:
    if x.ndim == 0:
        return x.reshape(size)
    d = dim % x.ndim
    n = (x.shape[d] - size) // step + 1
    windows = [np.take(x, range(i * step, i * step + size), axis=d) for i in range(n)]
    return np.moveaxis(np.stack(windows, axis=d), d + 1, -1)


def _repeat_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((2, 3)), ((2, 2),), {}, "2x2")
    yield SampleInput(T((2, 3), "transposed"), ((1, 2, 1),), {}, "new_dim")
    yield SampleInput(T(()), ((3,),), {}, "0d")
    yield SampleInput(T((2, 3)), ((0, 1),), {}, "zero")


def _ref_repeat(x: np.ndarray, repeats: Sequence[int]) -> np.ndarray:
    x = x.reshape((1,) * (len(repeats) - x.ndim) + x.shape)
    return np.tile(x, repeats)


def _flip_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), ([0],), {}, "dim0")
    yield SampleInput(T((2, 3, 4), "transposed"), ([0, 2],), {}, "dims")
    yield SampleInput(T((3, 4), "expanded"), ([-1],), {}, "expanded")
    yield SampleInput(T(()), ([],), {}, "0d")
    yield SampleInput(T((0, 3)), ([1],), {}, "empty")


def _gather_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), (1, _index((3, 5), 4, rng)), {}, "dim1")
    yield SampleInput(T((3, 4), "transposed"), (0, _index((2, 4), 3, rng)), {}, "dim0_transposed")
    yield SampleInput(T((3, 4)), (-1, _index((2, 2), 4, rng)), {}, "smaller_index")
    yield SampleInput(T(()), (0, _index((), 1, rng)), {}, "0d")
    yield SampleInput(T((3, 4)), (1, _index((3, 0), 4, rng)), {}, "empty_index")


def _ref_gather(x: np.ndarray, dim: int, index: np.ndarray) -> np.ndarray:
    if x.ndim == 0:
        return x.copy()
    d = dim % x.ndim
    sl = tuple(slice(0, s) for s in index.shape)
    return np.take_along_axis(x[tuple(sl[i] if i != d else slice(None) for i in range(x.ndim))], index, axis=d)


def _scatter_samples(kind: str) -> Callable:
    def gen(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
        # indices unique along dim (a permutation), so the result is deterministic
        perm = backend_sdk.from_numpy(np.stack([rng.permutation(4)[:3] for _ in range(2)]).astype(np.int64))
        perm0 = backend_sdk.from_numpy(np.stack([rng.permutation(3)[:2] for _ in range(4)], axis=1).astype(np.int64))
        if kind == "src":
            yield SampleInput(T((2, 4)), (1, perm, T((2, 3))), {}, "dim1")
            yield SampleInput(T((3, 4), "transposed"), (0, perm0, T((2, 4), "sliced")), {}, "dim0_noncontig")
        elif kind == "value":
            yield SampleInput(T((2, 4)), (1, perm, 3), {}, "dim1")
            yield SampleInput(T((3, 4), "sliced"), (0, perm0, 1), {}, "dim0_sliced")
        elif kind == "add":
            rep = backend_sdk.from_numpy(rng.integers(0, 4, size=(2, 5)).astype(np.int64))
            yield SampleInput(T((2, 4)), (1, rep, T((2, 5))), {}, "repeated_indices")
            yield SampleInput(T((3, 4), "transposed"), (0, perm0, T((2, 4))), {}, "dim0")
        elif kind == "reduce":
            for red in ("add", "multiply"):
                yield SampleInput(T((2, 4)), (1, perm, T((2, 3))), {"reduce": red}, f"{red}")
        elif kind == "value_reduce":
            for red in ("add", "multiply"):
                yield SampleInput(T((2, 4)), (1, perm, 2), {"reduce": red}, f"{red}")
    return gen


def _ref_scatter(x: np.ndarray, dim: int, index: np.ndarray, src: Any, reduce: str | None = None,
                 add: bool = False) -> np.ndarray:
    out = np.array(x, copy=True)
    srcv = np.asarray(src)
    for pos in np.ndindex(*index.shape):
        tgt = list(pos)
        tgt[dim] = int(index[pos])
        v = srcv[pos] if srcv.ndim else srcv
        if add or reduce == "add":
            out[tuple(tgt)] = out[tuple(tgt)] + v
        elif reduce == "multiply":
            out[tuple(tgt)] = out[tuple(tgt)] * v
        else:
            out[tuple(tgt)] = v
    return out


def _index_func_samples(kind: str) -> Callable:
    """index_add / index_copy / index_fill: unique indices (a permutation prefix) along each dim,
    repeated ones for index_add, non-contiguous self and source, 0-d self."""
    def gen(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
        def perm(n: int, k: int) -> Any:
            return backend_sdk.from_numpy(rng.permutation(n)[:k].astype(np.int64))
        def last(shape: tuple, idx: Any, dim: int) -> Any:
            if kind == "fill":
                return True if dtype == _C.bool else 3
            s = list(shape)
            s[dim] = idx.numel()
            return T(tuple(s), "sliced")
        for shape, layout, dim, k in (((4, 5), "contiguous", 0, 3), ((4, 5), "transposed", 1, 2),
                                      ((2, 3, 4), "contiguous", -1, 4), ((4, 5), "contiguous", 0, 0)):
            idx = perm(shape[dim], k)
            yield SampleInput(T(shape, layout), (dim, idx, last(shape, idx, dim)), {}, f"dim{dim}_{layout}_k{k}")
        if kind == "add":
            rep = backend_sdk.from_numpy(np.array([1, 1, 3], np.int64))
            yield SampleInput(T((4, 5)), (0, rep, T((3, 5))), {}, "repeated_indices")
            if dtype != _C.bool:  # PyTorch: Boolean alpha only for Boolean results
                yield SampleInput(T((4, 5)), (1, perm(5, 2), T((4, 2))), {"alpha": 2}, "alpha")
        if kind == "fill":
            yield SampleInput(T((4, 5)), (1, perm(5, 2), backend_sdk.tensor(1, dtype=dtype)), {}, "0d_tensor_value")
        idx32 = backend_sdk.from_numpy(np.array([2, 0], np.int32))
        yield SampleInput(T((4, 5)), (0, idx32, last((4, 5), idx32, 0)), {}, "int32_index")
        idx0 = backend_sdk.from_numpy(np.array(0, np.int64))
        yield SampleInput(T(()), (0, idx0, T(()) if kind != "fill" else last((), idx0, 0)), {}, "0d")
    return gen


def _ref_index_func(kind: str) -> Callable:
    def ref(x: np.ndarray, dim: int, index: np.ndarray, source: Any, alpha: Any = 1) -> np.ndarray:
        out = np.array(x, copy=True)
        o = out.reshape(1) if out.ndim == 0 else out
        d = dim % max(out.ndim, 1)
        idx = np.atleast_1d(index).astype(np.int64)
        src = np.asarray(source)
        src = src.reshape(1) if out.ndim == 0 and src.ndim == 0 and kind != "fill" else src
        for j, i in enumerate(idx):
            sl = [slice(None)] * o.ndim
            sl[d] = i
            if kind == "fill":
                o[tuple(sl)] = src
                continue
            ssl = [slice(None)] * src.ndim
            ssl[d] = j
            v = src[tuple(ssl)]
            if kind == "add":
                o[tuple(sl)] = (o[tuple(sl)] | v) if o.dtype == np.bool_ else o[tuple(sl)] + v * alpha
            else:
                o[tuple(sl)] = v
        return out
    return ref


def _scatter_reduce_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    """Repeated indices (several values per destination) and untouched destinations, every
    reduce with and without include_self, non-contiguous self and src."""
    rep = backend_sdk.from_numpy(rng.integers(0, 3, size=(2, 5)).astype(np.int64))  # dim 1 of a (2, 4) self
    rep0 = backend_sdk.from_numpy(rng.integers(0, 3, size=(3, 4)).astype(np.int64))
    lo, hi = (-2, 2) if dtype != _C.uint8 else (0, 2)  # products stay in range
    for red in ("sum", "prod", "mean", "amax", "amin"):
        for inc in (True, False):
            yield SampleInput(T((2, 4), low=lo, high=hi), (1, rep, T((2, 5), "sliced", low=lo, high=hi), red),
                              {"include_self": inc}, f"{red}_self{inc}")
        yield SampleInput(T((4, 4), "transposed", low=lo, high=hi), (0, rep0, T((3, 4), low=lo, high=hi), red), {},
                          f"{red}_dim0_transposed")


def _ref_scatter_reduce(x: np.ndarray, dim: int, index: np.ndarray, src: np.ndarray, reduce: str,
                        include_self: bool = True) -> np.ndarray:
    out = np.array(x, copy=True)
    acc = out.astype(np.float64)
    count = np.zeros(out.shape, np.int64)
    for pos in np.ndindex(*index.shape):
        tgt = list(pos)
        tgt[dim] = int(index[pos])
        tgt = tuple(tgt)
        v = float(src[pos])
        if not include_self and count[tgt] == 0:
            acc[tgt] = v
        elif reduce in ("sum", "mean"):
            acc[tgt] += v
        elif reduce == "prod":
            acc[tgt] *= v
        elif reduce == "amax":
            acc[tgt] = max(acc[tgt], v)
        else:
            acc[tgt] = min(acc[tgt], v)
        count[tgt] += 1
    if reduce == "mean":
        n = count + (1 if include_self else 0)
        touched = count > 0
        if out.dtype.kind in "iub":
            acc = np.where(touched, np.floor_divide(acc, np.maximum(n, 1)), acc)
        else:
            acc = np.where(touched, acc / np.maximum(n, 1), acc)
    return acc


def _masked_scatter_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), (_mask((3, 4), rng), T((12,))), {}, "same")
    yield SampleInput(T((3, 4), "transposed"), (_mask((4,), rng), T((3, 5), "sliced")), {}, "broadcast_mask")
    yield SampleInput(T((3, 4)), (_mask((), rng), T((4, 4))), {}, "0d_mask")
    yield SampleInput(T((4,)), (_mask((3, 4), rng), T((12,))), {}, "broadcast_self", variants=("functional", "out",
                                                                                          "method"))
    yield SampleInput(T((0, 3)), (_mask((0, 3), rng), T((0,))), {}, "empty")


def _ref_masked_scatter(x: np.ndarray, mask: np.ndarray, source: np.ndarray) -> np.ndarray:
    xb, mb = np.broadcast_arrays(x, mask)
    out = np.array(xb, copy=True)
    n = int(np.count_nonzero(mb))
    out[mb] = np.ravel(source)[:n]
    return out


def _index_select_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), (1, _index((5,), 4, rng)), {}, "dim1")
    yield SampleInput(T((3, 4), "transposed"), (0, _index((2,), 3, rng)), {}, "dim0_transposed")
    yield SampleInput(T((3, 4)), (0, _index((0,), 3, rng)), {}, "empty_index")
    yield SampleInput(T(()), (0, _index((1,), 1, rng)), {}, "0d")
    yield SampleInput(T((3, 4), "sliced"), (-1, _index((), 4, rng)), {}, "0d_index")


def _ref_index_select(x: np.ndarray, dim: int, index: np.ndarray) -> np.ndarray:
    if x.ndim == 0:
        return x.copy()
    return np.take(x, np.atleast_1d(index), axis=dim)


def _masked_fill_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    v = True if dtype == _C.bool else 3
    yield SampleInput(T((3, 4)), (_mask((3, 4), rng), v), {}, "same")
    yield SampleInput(T((3, 4), "transposed"), (_mask((4,), rng), v), {}, "broadcast_mask")
    yield SampleInput(T((3, 4)), (_mask((), rng), v), {}, "0d_mask")
    yield SampleInput(T(()), (_mask((), rng), v), {}, "0d")
    yield SampleInput(T((3, 4)), (_mask((3, 4), rng), backend_sdk.tensor(v, dtype=dtype)), {}, "0d_tensor_value")
    yield SampleInput(T((3, 4), "sliced"), (_mask((4,), rng), backend_sdk.tensor(2.5 if dtype in FLOATING else 1)), {},
                      "0d_tensor_value_other_dtype")


def _ref_masked_fill(x: np.ndarray, mask: np.ndarray, value: Any) -> np.ndarray:
    return np.where(mask, np.asarray(value), x)


def _index_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((4, 5)), ([_index((3,), 4, rng)],), {}, "int_dim0")
    yield SampleInput(T((4, 5), "transposed"), ([None, _index((2, 2), 5, rng)],), {}, "int_dim1_2d")
    yield SampleInput(T((4, 5)), ([_index((3,), 4, rng), _index((3,), 5, rng)],), {}, "two_ints")
    yield SampleInput(T((4, 5)), ([_index((3,), 4, rng, low=-4)],), {}, "negative")
    yield SampleInput(T((4, 5), "sliced"), ([_mask((4, 5), rng)],), {}, "bool_full")
    yield SampleInput(T((4, 5)), ([_mask((4,), rng)],), {}, "bool_dim0")
    yield SampleInput(T((4, 5)), ([_index((0,), 4, rng)],), {}, "empty_index")


def _ref_index(x: np.ndarray, indices: list) -> np.ndarray:
    idx = tuple(slice(None) if i is None else i for i in indices)
    return x[idx]


def _index_put_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    perm = backend_sdk.from_numpy(rng.permutation(4)[:3].astype(np.int64))
    for acc in (False, True):
        yield SampleInput(T((4, 5)), ([perm], T((3, 5)), acc), {}, f"rows_acc{acc}")
        yield SampleInput(T((4, 5), "transposed"), ([perm], T((5,)), acc), {}, f"broadcast_values_acc{acc}")
        yield SampleInput(T((4, 5)), ([_mask((4, 5), rng)], T(()), acc), {}, f"bool_mask_acc{acc}")
    dup = backend_sdk.from_numpy(np.array([1, 1, 3], np.int64))
    yield SampleInput(T((4, 5)), ([dup], T((3, 5)), True), {}, "duplicates_accumulate")
    yield SampleInput(T((4, 5)), ([perm, perm], T((3,)), False), {}, "two_indices")


def _ref_index_put(x: np.ndarray, indices: list, values: np.ndarray, accumulate: bool = False) -> np.ndarray:
    out = np.array(x, copy=True)
    idx = tuple(slice(None) if i is None else i for i in indices)
    if accumulate:
        if out.dtype == np.bool_:
            tmp = out.astype(np.int64)
            np.add.at(tmp, idx, np.broadcast_to(values, out[idx].shape).astype(np.int64))
            return tmp.astype(bool)
        np.add.at(out, idx, np.broadcast_to(values, out[idx].shape).astype(out.dtype))
    else:
        out[idx] = values
    return out


def _masked_select_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), (_mask((3, 4), rng),), {}, "same")
    yield SampleInput(T((3, 4), "transposed"), (_mask((4,), rng),), {}, "broadcast_mask")
    yield SampleInput(T((4,)), (_mask((3, 4), rng),), {}, "broadcast_self")
    yield SampleInput(T(()), (_mask((), rng),), {}, "0d")


def _ref_masked_select(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    x, mask = np.broadcast_arrays(x, mask)
    return x[mask]


def _take_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), (_index((2, 3), 12, rng),), {}, "2d_index")
    yield SampleInput(T((3, 4), "transposed"), (_index((5,), 12, rng, low=-12),), {}, "negative_transposed")
    yield SampleInput(T(()), (_index((2,), 1, rng),), {}, "0d")


def _nonzero_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4), low=-1, high=1), (), {}, "2d")
    yield SampleInput(T((2, 3, 4), "transposed", low=-1, high=1), (), {}, "3d_transposed")
    yield SampleInput(T((), low=1, high=1), (), {}, "0d")
    yield SampleInput(T((0, 3)), (), {}, "empty")


def _unbind_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), (), {}, "dim0")
    yield SampleInput(T((3, 4), "transposed"), (1,), {}, "dim1")
    yield SampleInput(T((0, 2)), (1,), {}, "empty")


def _as_strided_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    yield SampleInput(T((3, 4)), ([2, 2], [1, 2]), {}, "overlap")
    yield SampleInput(T((3, 4)), ([2, 3], [4, 1], 1), {}, "offset")
    yield SampleInput(T((12,)), ([3, 4], [1, 3]), {}, "transposed_view")


def _ref_as_strided(x: np.ndarray, size: list, stride: list, storage_offset: int = 0) -> np.ndarray:
    flat = np.ascontiguousarray(x).reshape(-1)
    idx = storage_offset + sum(np.indices(size)[i] * stride[i] for i in range(len(size))) if size else storage_offset
    return flat[idx]


def _make_shape_ops() -> list[OpInfo]:
    A = ALL_DTYPES
    V = ("functional", "method")
    return [
        OpInfo("cat", _S(_cat_samples), _ovl("cat", ""), A,
               lambda ts, dim=0: np.concatenate([t for t in ts if not (t.ndim == 1 and t.shape[0] == 0)], axis=dim),
               ("functional",), True, result_dtype=lambda s: s.input[0].dtype, category="shape"),
        OpInfo("stack", _S(_stack_samples), _ovl("stack", ""), A, lambda ts, dim=0: np.stack(ts, axis=dim),
               ("functional",), True, category="shape"),
        OpInfo("split", _S(_split_samples), _ovl("split", ".Tensor"), A, _ref_split, V, True, category="shape"),
        OpInfo("split_with_sizes", _S(_split_sizes_samples), _ovl("split_with_sizes", ""), A, _ref_split_sizes, V,
               True, category="shape"),
        OpInfo("chunk", _S(_chunk_samples), _ovl("chunk", ""), A, _ref_chunk, V, True, category="shape"),
        OpInfo("unbind", _S(_unbind_samples), _ovl("unbind", ".int"), A,
               lambda x, dim=0: tuple(np.moveaxis(x, dim, 0)), V, True, category="shape"),
        OpInfo("flatten", _S(_flatten_samples), _ovl("flatten", ".using_ints"), A, _ref_flatten, V, True,
               category="shape"),
        OpInfo("reshape", _S(_reshape_samples), _ovl("view", ""), A, lambda x, shape: np.reshape(x, shape),
               ("method",), True, op=lambda x, shape: x.reshape(shape), category="shape"),
        OpInfo("view", _S(_view_samples), _ovl("view", ""), A, lambda x, size: np.reshape(x, size), V, True,
               category="shape"),
        OpInfo("as_strided", _S(_as_strided_samples), _ovl("as_strided", ""), A, _ref_as_strided, V, True,
               category="shape"),
        OpInfo("permute", _S(_permute_samples), _ovl("permute", ""), A, lambda x, dims: np.transpose(x, dims) if x.ndim else x,
               ("method",), True, op=lambda x, dims: x.permute(dims), category="shape",
               doc="aten::permute (Note [View operators])"),
        OpInfo("transpose", _S(_transpose_samples), _ovl("transpose", ".int"), A,
               lambda x, a, b: np.swapaxes(x, a, b) if x.ndim else x, ("method",), True,
               op=lambda x, a, b: x.transpose(a, b), category="shape"),
        OpInfo("t", _S(_t_samples), _ovl("t", ""), A, lambda x: x.T, V, True, category="shape"),
        OpInfo("squeeze", _S(_squeeze_samples), _ovl("squeeze", "", ".dim", ".dims"), A, _ref_squeeze, ("method",), True,
               op=lambda x, *a: x.squeeze(*a), category="shape"),
        OpInfo("unsqueeze", _S(_unsqueeze_samples), _ovl("unsqueeze", ""), A, lambda x, d: np.expand_dims(x, d), ("method",), True,
               op=lambda x, d: x.unsqueeze(d), category="shape"),
        OpInfo("expand", _S(_expand_samples), _ovl("expand", ""), A,
               lambda x, *size: np.broadcast_to(x, tuple(x.shape[i - (len(size) - x.ndim)] if s == -1 else s
                                                         for i, s in enumerate(size))),
               ("method",), True, op=lambda x, *size: x.expand(*size), category="shape"),
        OpInfo("select", _S(_select_samples), _ovl("select", ".int"), A, lambda x, d, i: np.take(x, i, axis=d),
               ("method",), True, op=lambda x, d, i: x.select(d, i), category="shape"),
        OpInfo("slice", _S(_slice_samples), _ovl("slice", ".Tensor"), A, _ref_slice, ("functional",), True,
               op=lambda x, *a: backend_sdk.ops.aten.slice.Tensor(x, *a), category="shape"),
        OpInfo("narrow", _S(_narrow_samples), _ovl("narrow", ""), A,
               lambda x, d, start, n: np.take(x, range(start % max(x.shape[d], 1), start % max(x.shape[d], 1) + n),
                                              axis=d), V, True, category="shape"),
        OpInfo("alias", _S(_t_samples), _ovl("alias", ""), A, lambda x: x, ("functional",), True,
               op=lambda x: backend_sdk.ops.aten.alias(x), category="shape"),
        OpInfo("detach", _S(_t_samples), _ovl("detach", ""), A, lambda x: x, ("method",), False,
               op=lambda x: x.detach(), category="shape"),
        OpInfo("unfold", _S(_unfold_samples), _ovl("unfold", ""), A, _ref_unfold, ("method",), True,
               op=lambda x, d, size, step: x.unfold(d, size, step), category="shape"),
        OpInfo("repeat", _S(_repeat_samples), _ovl("repeat", ""), A, _ref_repeat, ("method",), True,
               op=lambda x, r: x.repeat(r), category="shape"),
        OpInfo("flip", _S(_flip_samples), _ovl("flip", "", ".out"), A,
               lambda x, dims: np.flip(x, tuple(dims)) if dims else x.copy(), ("functional", "out", "method"), True,
               category="shape"),
        OpInfo("gather", _S(_gather_samples), _ovl("gather", "", ".out"), A, _ref_gather,
               ("functional", "out", "method"), True, category="indexing"),
        OpInfo("scatter", _S(_scatter_samples("src")), _ovl("scatter", ".src", "_.src", ".src_out"), A,
               _ref_scatter, VARIANTS, True, category="indexing", variant_name="src"),
        OpInfo("scatter", _S(_scatter_samples("value")), _ovl("scatter", ".value", "_.value", ".value_out"), A,
               _ref_scatter, VARIANTS, True, category="indexing", variant_name="value"),
        OpInfo("scatter", _S(_scatter_samples("reduce")), _ovl("scatter", ".reduce", "_.reduce", ".reduce_out"),
               A, _ref_scatter, VARIANTS, category="indexing", variant_name="reduce"),
        OpInfo("scatter", _S(_scatter_samples("value_reduce")),
               _ovl("scatter", ".value_reduce", "_.value_reduce", ".value_reduce_out"), A, _ref_scatter,
               VARIANTS, category="indexing", variant_name="value_reduce"),
        OpInfo("scatter_add", _S(_scatter_samples("add")), _ovl("scatter_add", "", "_", ".out"), A,
               lambda x, d, i, s: _ref_scatter(x, d, i, s, add=True), VARIANTS, True,
               atol={"float16": 1e-2, "bfloat16": 5e-2}, category="indexing"),
        OpInfo("index_add", _S(_index_func_samples("add")), _ovl("index_add", "", "_", ".out"), A,
               _ref_index_func("add"), VARIANTS, True, category="indexing"),
        OpInfo("index_copy", _S(_index_func_samples("copy")), _ovl("index_copy", "", "_", ".out"), A,
               _ref_index_func("copy"), VARIANTS, True, category="indexing"),
        OpInfo("index_fill", _S(_index_func_samples("fill")),
               _ovl("index_fill", ".int_Scalar", "_.int_Scalar", ".int_Tensor", "_.int_Tensor"), A,
               _ref_index_func("fill"), ("functional", "inplace", "method"), True, category="indexing"),
        OpInfo("scatter_reduce", _S(_scatter_reduce_samples),
               _ovl("scatter_reduce", ".two", "_.two", ".two_out"), NUMERIC, _ref_scatter_reduce, VARIANTS,
               category="indexing", check_unsupported_dtypes=False, variant_name="two",
               atol={"float16": 1e-2, "bfloat16": 5e-2}, doc="no autograd formula yet"),
        OpInfo("masked_scatter", _S(_masked_scatter_samples), _ovl("masked_scatter", "", "_", ".out"), A,
               _ref_masked_scatter, VARIANTS, category="indexing", doc="no autograd formula yet"),
        OpInfo("index_select", _S(_index_select_samples), _ovl("index_select", "", ".out"), A, _ref_index_select,
               ("functional", "out", "method"), True, category="indexing"),
        OpInfo("masked_fill", _S(_masked_fill_samples), _ovl("masked_fill", ".Scalar", "_.Scalar", ".Tensor", "_.Tensor"), A,
               _ref_masked_fill, ("functional", "inplace", "method"), True, category="indexing"),
        OpInfo("index", _S(_index_samples), _ovl("index", ".Tensor", ".Tensor_out"), A, _ref_index,
               ("functional", "out"), True, op=backend_sdk.ops.aten.index, category="indexing"),
        OpInfo("index_put", _S(_index_put_samples), _ovl("index_put", "", "_"), A, _ref_index_put,
               ("functional", "inplace", "method"), True, category="indexing"),
        OpInfo("masked_select", _S(_masked_select_samples), _ovl("masked_select", "", ".out"), A,
               _ref_masked_select, ("functional", "out", "method"), True, category="indexing"),
        OpInfo("take", _S(_take_samples), _ovl("take", "", ".out"), A,
               lambda x, i: np.ravel(x)[i] if x.ndim else np.broadcast_to(x, i.shape).copy(),
               ("functional", "out", "method"), True, category="indexing"),
        OpInfo("nonzero", _S(_nonzero_samples), _ovl("nonzero", "", ".out"), A,
               lambda x: np.argwhere(x).astype(np.int64) if x.ndim else np.zeros((int(bool(x)), 0), np.int64),
               ("functional", "out", "method"), category="indexing", result_dtype=lambda s: _C.int64),
        OpInfo("nonzero", _S(_nonzero_samples), _ovl("nonzero_numpy", "", "") + _ovl("where", ""), A,
               lambda x: tuple(np.nonzero(np.atleast_1d(x))), ("functional",),
               op=lambda x: backend_sdk.nonzero(x, as_tuple=True), category="indexing", variant_name="as_tuple"),
    ]


# ---------------------------------------------------------------------------------------------
# Conversion and copies
# ---------------------------------------------------------------------------------------------
def _to_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    for target in ALL_DTYPES:
        yield SampleInput(T((3, 4), "transposed", low=0 if target == _C.uint8 else None), (target,), {},
                          f"to_{dtype_name(target)}")
    yield SampleInput(T(()), (_C.float64,), {}, "0d")
    yield SampleInput(T((0, 3)), (_C.int32,), {}, "empty")


def _ref_astype(x: np.ndarray, dtype: Any = None, **kw: Any) -> np.ndarray:
    x = np.asarray(x)
    if dtype is None:
        return x.copy()
    if np.dtype(dtype).kind in "iu" and x.dtype.kind == "f":
        x = np.trunc(x)
    if np.dtype(dtype) == np.bool_:
        return x != 0
    return x.astype(np.float32 if dtype == np.dtype(np.float16) or str(dtype) == "bfloat16" else dtype)


def _clone_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    for shape, layout in shapes_unary():
        yield SampleInput(T(shape, layout), (), {}, f"{layout}_{shape}")


def _copy_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    for src_dtype in ALL_DTYPES:
        src = make_tensor((3, 4), src_dtype, rng, low=0 if dtype == _C.uint8 else -9, high=9)
        yield SampleInput(T((4, 3), "transposed").transpose(0, 1).transpose(0, 1) if False else T((3, 4), "transposed"),
                          (src,), {}, f"from_{dtype_name(src_dtype)}")
    yield SampleInput(T((3, 4)), (make_tensor((4,), dtype, rng),), {}, "broadcast")
    yield SampleInput(T((3, 4), "sliced"), (make_tensor((), _C.float64, rng, low=0, high=5),), {}, "0d_src")


def _ref_copy(x: np.ndarray, src: np.ndarray, non_blocking: bool = False) -> np.ndarray:
    return np.broadcast_to(_ref_astype(src, x.dtype), x.shape).copy()


def _fill_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    v = True if dtype == _C.bool else 3
    yield SampleInput(T((3, 4), "transposed"), (v,), {}, "scalar")
    yield SampleInput(T(()), (v,), {}, "0d")


def _make_conversion_ops() -> list[OpInfo]:
    A = ALL_DTYPES
    return [
        OpInfo("to", _S(_to_samples), _ovl("to", ".dtype", ".dtype_layout", ".other", ".device") + ("aten::_to_copy",),
               A, _ref_astype, ("method",), True, op=lambda x, d: x.to(d), result_dtype=lambda s: s.args[0],
               category="conversion"),
        OpInfo("_to_copy", _S(_to_samples), _ovl("_to_copy", ""), A, _ref_astype, ("functional",), True,
               op=lambda x, d: backend_sdk.ops.aten._to_copy(x, dtype=d), result_dtype=lambda s: s.args[0],
               category="conversion"),
        OpInfo("clone", _S(_clone_samples), _ovl("clone", ""), A, lambda x: np.array(x, copy=True),
               ("functional", "method"), True, result_dtype=_rt_same, category="conversion"),
        OpInfo("contiguous", _S(_clone_samples), _ovl("clone", ""), A, lambda x: np.array(x, copy=True),
               ("method",), True, op=lambda x: x.contiguous(), result_dtype=_rt_same, category="conversion"),
        OpInfo("copy_", _S(_copy_samples), _ovl("copy_", ""), A, _ref_copy, ("functional",), True,
               op=lambda x, src: x.copy_(src), result_dtype=_rt_same, category="conversion",
               doc="type promotion on copy: any source dtype into any destination dtype"),
        OpInfo("fill_", _S(_fill_samples), _ovl("fill_", ".Scalar"), A,
               lambda x, v: np.full_like(x, np.asarray(v)), ("functional",), op=lambda x, v: x.fill_(v),
               result_dtype=_rt_same, category="conversion"),
    ]


# ---------------------------------------------------------------------------------------------
# Factories (deterministic) and random operators
# ---------------------------------------------------------------------------------------------
def _factory_samples(kind: str) -> SampleFunc:
    def gen(op: OpInfo, dtype: Any, rng: np.random.Generator) -> Iterable[SampleInput]:
        kw = {"dtype": dtype}
        if kind in ("empty", "zeros", "ones"):
            for size in ((2, 3), (), (0, 4)):
                yield SampleInput(size, (), dict(kw), f"size{size}")
        elif kind == "empty_strided":
            yield SampleInput((2, 3), ((1, 2),), dict(kw), "transposed")
            yield SampleInput((2, 3), ((4, 1),), dict(kw), "padded")
        elif kind == "full":
            v = True if dtype == _C.bool else 3
            for size in ((2, 3), ()):
                yield SampleInput(size, (v,), dict(kw), f"size{size}")
        elif kind == "arange":
            hi = 2 if dtype == _C.bool else 10
            yield SampleInput(hi, (), dict(kw), "end")
            yield SampleInput(1, (hi, 2) if dtype != _C.bool else (2, 1), dict(kw), "start_end_step")
            if dtype in FLOATING:
                yield SampleInput(0.5, (3.0, 0.25), dict(kw), "float_step")
            yield SampleInput(0, (0,), dict(kw), "empty")
        elif kind == "linspace":
            for start, end, steps in ((0, 10, 5), (-1.0, 1.0, 7), (3, 3, 1), (0, 1, 0)):
                if dtype in INTEGRAL_AND_BOOL and isinstance(start, float):
                    continue
                yield SampleInput(start, (end, steps), dict(kw), f"{start}_{end}_{steps}")
        elif kind == "eye":
            yield SampleInput(3, (), dict(kw), "n")
            yield SampleInput(2, (4,), dict(kw), "n_m")
            yield SampleInput(0, (), dict(kw), "empty")
    return gen


def _ref_linspace(start: Any, end: Any, steps: int, dtype: Any = None) -> np.ndarray:
    r = np.linspace(start, end, steps, dtype=np.float64)
    if dtype is not None and np.dtype(dtype).kind in "iub":
        r = np.trunc(r)
    return r


def _make_factory_ops() -> list[OpInfo]:
    A = ALL_DTYPES
    F = ("functional",)
    fac = "factory"
    return [
        OpInfo("empty", _factory_samples("empty"), _ovl("empty", ".memory_format"), A, None, F,
               op=lambda size, **kw: backend_sdk.empty(*size, **kw), category=fac,
               doc="values are undefined: only metadata is compared"),
        OpInfo("empty_strided", _factory_samples("empty_strided"), _ovl("empty_strided", ""), A, None, F,
               op=lambda size, stride, **kw: backend_sdk.empty_strided(size, stride, **kw), category=fac),
        OpInfo("zeros", _factory_samples("zeros"), (), A, lambda size, dtype=None: np.zeros(size), F,
               op=lambda size, **kw: backend_sdk.zeros(*size, **kw), result_dtype=lambda s: s.kwargs["dtype"],
               category=fac),
        OpInfo("ones", _factory_samples("ones"), (), A, lambda size, dtype=None: np.ones(size), F,
               op=lambda size, **kw: backend_sdk.ones(*size, **kw), result_dtype=lambda s: s.kwargs["dtype"],
               category=fac),
        OpInfo("full", _factory_samples("full"), (), A, lambda size, v, dtype=None: np.full(size, v), F,
               op=lambda size, v, **kw: backend_sdk.full(size, v, **kw), result_dtype=lambda s: s.kwargs["dtype"],
               category=fac),
        OpInfo("arange", _factory_samples("arange"), (), NUMERIC,
               lambda *a, dtype=None: np.arange(*a, dtype=np.float64), F, op=backend_sdk.arange,
               result_dtype=lambda s: s.kwargs["dtype"], category=fac),
        OpInfo("linspace", _factory_samples("linspace"), _ovl("linspace", "", ".out"), NUMERIC, _ref_linspace,
               ("functional", "out"), op=backend_sdk.ops.aten.linspace, result_dtype=lambda s: s.kwargs["dtype"],
               category=fac),
        OpInfo("eye", _factory_samples("eye"), _ovl("eye", "", ".m", ".out", ".m_out"), A,
               lambda n, m=None, dtype=None: np.eye(n, m), ("functional", "out"), op=backend_sdk.ops.aten.eye,
               result_dtype=lambda s: s.kwargs["dtype"], category=fac),
    ]


def _random_samples(kind: str) -> SampleFunc:
    """Random ops: the first argument is a size or a tensor; values are checked for determinism
    under manual_seed and for their range, not against a reference."""
    def gen(op: OpInfo, dtype: Any, rng: np.random.Generator) -> Iterable[SampleInput]:
        if kind == "size":
            for size in ([64], [4, 5], [], [0, 3]):
                yield SampleInput(size, (), {"dtype": dtype}, f"size{size}")
        elif kind == "randint":
            for size in ([64], [4, 5], [0]):
                yield SampleInput(2 if dtype == _C.bool else 10, (size,), {"dtype": dtype}, f"high_size{size}")
            yield SampleInput(0 if dtype in (_C.uint8, _C.bool) else -5, (2 if dtype == _C.bool else 5, [32]),
                              {"dtype": dtype}, "low_high")
        elif kind == "like":
            for shape, layout in (((64,), "contiguous"), ((4, 5), "transposed"), ((), "contiguous")):
                yield SampleInput(make_tensor(shape, dtype, rng, layout=layout), (), {}, f"{layout}_{shape}")
        elif kind == "randint_like":
            for shape, layout in (((64,), "contiguous"), ((4, 5), "transposed")):
                yield SampleInput(make_tensor(shape, dtype, rng, layout=layout), (2 if dtype == _C.bool else 10,), {},
                                  f"{layout}_{shape}")
        elif kind == "inplace":
            for shape, layout in (((64,), "contiguous"), ((4, 5), "transposed"), ((4, 6), "sliced"), ((), "contiguous")):
                yield SampleInput(make_tensor(shape, dtype, rng, layout=layout), (), {}, f"{layout}_{shape}")
        elif kind == "bernoulli_tensor":
            for shape, layout in (((64,), "contiguous"), ((4, 5), "transposed")):
                p = make_tensor(shape, dtype, rng, low=0, high=1, layout=layout)
                yield SampleInput(p, (), {}, f"{layout}_{shape}")
        elif kind == "normal":
            yield SampleInput(make_tensor((64,), dtype, rng), (2.0,), {}, "Tensor_float")
            yield SampleInput(make_tensor((4, 5), dtype, rng, layout="transposed"),
                              (make_tensor((4, 5), dtype, rng, low=0.5, high=2),), {}, "Tensor_Tensor")
    return gen


def _make_random_ops() -> list[OpInfo]:
    F = FLOATING
    R = "random"
    inplace = ("method",)
    return [
        OpInfo("rand", _random_samples("size"), _ovl("rand", "", ".generator", ".out", ".generator_out"), F, None,
               ("functional", "out"), random=True, category=R, doc="values in [0, 1)"),
        OpInfo("randn", _random_samples("size"), _ovl("randn", "", ".generator", ".out", ".generator_out"), F, None,
               ("functional", "out"), random=True, category=R),
        OpInfo("randint", _random_samples("randint"),
               _ovl("randint", "", ".generator", ".low", ".low_generator", ".out", ".generator_out", ".low_out",
                    ".low_generator_out"), NUMERIC, None, ("functional",), random=True, category=R),
        OpInfo("rand_like", _random_samples("like"), _ovl("rand_like", "", ".generator"), F, None, ("functional",),
               random=True, category=R),
        OpInfo("randn_like", _random_samples("like"), _ovl("randn_like", "", ".generator"), F, None, ("functional",),
               random=True, category=R),
        OpInfo("randint_like", _random_samples("randint_like"),
               _ovl("randint_like", "", ".generator", ".low_dtype", ".low_generator_dtype"), NUMERIC, None,
               ("functional",), random=True, category=R),
        OpInfo("normal_", _random_samples("inplace"), _ovl("normal_", ""), F, None, inplace, random=True, category=R),
        OpInfo("uniform_", _random_samples("inplace"), _ovl("uniform_", ""), F, None, inplace, random=True, category=R),
        OpInfo("bernoulli_", _random_samples("inplace"), _ovl("bernoulli_", ".float", ".Tensor"), ALL_DTYPES, None,
               inplace, random=True, category=R),
        OpInfo("random_", _random_samples("inplace"), _ovl("random_", "", ".from", ".to"), ALL_DTYPES, None, inplace,
               random=True, category=R),
        OpInfo("exponential_", _random_samples("inplace"), _ovl("exponential_", ""), F, None, inplace, random=True,
               category=R),
        OpInfo("bernoulli", _random_samples("bernoulli_tensor"), _ovl("bernoulli", "", ".out", ".p"), F, None,
               ("functional", "out", "method"), random=True, category=R),
        OpInfo("normal", _random_samples("normal"),
               _ovl("normal", ".Tensor_float", ".Tensor_Tensor", ".float_Tensor", ".float_float"), F, None,
               ("functional",), random=True, category=R),
    ]


# ---------------------------------------------------------------------------------------------
# Losses
# ---------------------------------------------------------------------------------------------
_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduce_loss(v: np.ndarray, reduction: str) -> np.ndarray:
    return v if reduction == "none" else np.mean(v) if reduction == "mean" else np.sum(v)


def _mse_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    for red in ("mean", "sum", "none"):
        yield SampleInput(T((3, 4)), (T((3, 4), "transposed"),), {"reduction": red}, f"{red}")
    yield SampleInput(T(()), (T(()),), {}, "0d")
    yield SampleInput(T((3, 4), "sliced"), (T((4,)),), {"reduction": "sum"}, "broadcast_target")


def _nll_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    for red in ("mean", "sum", "none"):
        yield SampleInput(T((5, 4), low=-3, high=0), (_index((5,), 4, rng),), {"reduction": red}, red)
    yield SampleInput(T((5, 4), "transposed", low=-3, high=0), (_index((5,), 4, rng),),
                      {"weight": T((4,), low=0.5, high=2)}, "weight")
    tgt = backend_sdk.from_numpy(np.array([0, 3, -100, 1, 2], np.int64))
    yield SampleInput(T((5, 4), low=-3, high=0), (tgt,), {"ignore_index": -100}, "ignore_index")
    yield SampleInput(T((4,), low=-3, high=0), (_index((), 4, rng),), {}, "unbatched")
    yield SampleInput(T((2, 4, 3), low=-3, high=0), (_index((2, 3), 4, rng),), {"reduction": "none"}, "nd")


def _ref_nll(x: np.ndarray, target: np.ndarray, weight: np.ndarray | None = None, reduction: str = "mean",
             ignore_index: int = -100, label_smoothing: float = 0.0) -> np.ndarray:
    x = np.asarray(x, np.float64)
    if x.ndim == 1:
        x, target = x[None], np.asarray(target)[None]
        squeeze = True
    else:
        squeeze = False
    x = np.moveaxis(x, 1, -1)  # (N, ..., C)
    c = x.shape[-1]
    w = np.ones(c) if weight is None else np.asarray(weight, np.float64)
    t = np.asarray(target)
    valid = t != ignore_index
    tc = np.where(valid, t, 0)
    picked = np.take_along_axis(x, tc[..., None], axis=-1)[..., 0]
    wt = np.where(valid, w[tc], 0.0)
    loss = -picked * wt
    if reduction == "none":
        return loss[0] if squeeze else loss
    if reduction == "sum":
        return np.sum(loss)
    return np.sum(loss) / np.sum(wt)


def _nll2d_samples(dtype: Any, rng: np.random.Generator, T: Callable) -> Iterable[SampleInput]:
    for red in (0, 1, 2):
        yield SampleInput(T((2, 4, 3, 5), low=-3, high=0), (_index((2, 3, 5), 4, rng), None, red, -100), {},
                          f"reduction{red}")
    yield SampleInput(T((2, 4, 3, 5), "transposed", low=-3, high=0),
                      (_index((2, 3, 5), 4, rng), T((4,), low=0.5, high=2), 1, 2), {}, "weight_ignore_index")


def _ref_nll2d(x: np.ndarray, target: np.ndarray, weight: Any = None, reduction: int = 1,
               ignore_index: int = -100) -> np.ndarray:
    return _ref_nll(x, target, weight, _REDUCTIONS[reduction], ignore_index)


def _ref_cross_entropy(x: np.ndarray, target: np.ndarray, weight: Any = None, reduction: str = "mean",
                       ignore_index: int = -100, label_smoothing: float = 0.0) -> np.ndarray:
    x = np.asarray(x, np.float64)
    d = 0 if x.ndim == 1 else 1
    m = np.max(x, axis=d, keepdims=True)
    logp = x - m - np.log(np.sum(np.exp(x - m), axis=d, keepdims=True))
    return _ref_nll(logp, target, weight, reduction, ignore_index)


def _make_loss_ops() -> list[OpInfo]:
    import backend_sdk.nn.functional as F

    tol = {"float16": 1e-2, "bfloat16": 5e-2}
    return [
        OpInfo("mse_loss", _S(_mse_samples), _ovl("mse_loss", ""), FLOATING,
               lambda a, b, reduction="mean": _reduce_loss((np.asarray(a, np.float64) - b) ** 2, reduction),
               ("functional",), True, tol, tol, op=F.mse_loss, result_dtype=_rt_same, category="loss"),
        OpInfo("nll_loss", _S(_nll_samples), _ovl("nll_loss", "", "_nd", "_forward", "_forward.output"), FLOATING,
               _ref_nll, ("functional",), True, tol, tol, op=F.nll_loss, result_dtype=_rt_same, category="loss"),
        OpInfo("nll_loss2d", _S(_nll2d_samples), _ovl("nll_loss2d", ""), FLOATING, _ref_nll2d, ("functional",), True,
               tol, tol, op=backend_sdk.ops.aten.nll_loss2d, result_dtype=_rt_same, category="loss"),
        OpInfo("cross_entropy", _S(_nll_samples), _ovl("cross_entropy_loss", ""), FLOATING, _ref_cross_entropy,
               ("functional",), True, tol, tol, op=F.cross_entropy, result_dtype=_rt_same, category="loss"),
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
    ops.append(OpInfo("where", _where_scalar_samples, _ovl("where", ".Scalar"), (_C.bool,),
                      lambda c, a, b: np.where(c, a, b), ("functional",), result_dtype=lambda s: result_type(*s.args),
                      category="ternary", variant_name="scalars", check_unsupported_dtypes=False))
    ops.append(OpInfo("clamp", _clamp_samples, _ovl("clamp", "", "_", ".out", ".Tensor", "_.Tensor", ".Tensor_out"),
                      NUMERIC, _ref_clamp, VARIANTS, True, result_dtype=_rt_same, category="ternary",
                      check_unsupported_dtypes=False))
    ops += _make_unary_ops()
    ops.append(OpInfo("linalg_vector_norm", _vector_norm_samples, _ovl("linalg_vector_norm", "", ".out"), FLOATING,
                      lambda x, ord=2, dim=None, keepdim=False: _ref_norm(x, ord, dim, keepdim),
                      ("functional", "out"), True, {"float16": 1e-2, "bfloat16": 5e-2}, {"float16": 1e-2, "bfloat16": 5e-2},
                      result_dtype=_rt_same, category="reduction"))
    ops.append(OpInfo("resize_", _resize_samples, _ovl("resize_", ""), ALL_DTYPES,
                      lambda x, size: np.ravel(x)[:int(np.prod(size))].reshape(size), ("functional",),
                      op=lambda x, size: x.resize_(size), result_dtype=_rt_same, category="shape", doc="shrinking a contiguous tensor keeps its prefix"))
    ops += _make_reduction_ops()
    ops += _make_linalg_ops()
    ops += _make_shape_ops()
    ops += _make_conversion_ops()
    ops += _make_factory_ops()
    ops += _make_random_ops()
    ops += _make_loss_ops()
    from ._opinfo_ops20 import make_ops20_nn_ops, make_ops20_ops

    ops += make_ops20_ops(OpInfo)
    ops += make_ops20_nn_ops(OpInfo)
    from ._opinfo_core20 import make_core20_ops

    ops += make_core20_ops(OpInfo)
    return ops


op_db: list[OpInfo] = _build()

# name -> OpInfo (the first one of that name; variants such as round.decimals share a name)
op_db_by_name: dict[str, OpInfo] = {}
for _o in op_db:
    op_db_by_name.setdefault(_o.name, _o)
del _o
