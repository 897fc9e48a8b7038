"""Element-wise operators (issue 3) against numpy (and PyTorch when installed) on every test device (cpu,
accel, pyaccel: instantiate_device_type_tests) and on Meta."""
from __future__ import annotations

import math
import operator

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import backend_sdk
from backend_sdk.testing import instantiate_device_type_tests, skipIf
from backend_sdk import _C

aten = backend_sdk.ops.aten

ALL = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
INTEGRAL = ["uint8", "int8", "int16", "int32", "int64"]
FLOATING = ["float16", "bfloat16", "float32", "float64"]


def np_dtype(name: str) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def sdk_dtype(name: str):
    return getattr(backend_sdk, name)


def dtype_name(d) -> str:
    return str(d).split(".")[-1]


def t(array, device="cpu") -> backend_sdk.Tensor:
    return backend_sdk.from_numpy(np.array(array)).to(device)  # a contiguous copy; 0-d stays 0-d


def as_f64(x: backend_sdk.Tensor) -> np.ndarray:
    return np.asarray(x.cpu().numpy()).astype(np.float64)


def values(shape, name: str, rng: np.random.Generator, nonzero: bool = False, low: int = -9) -> np.ndarray:
    """Small integral values in any dtype (exact in float16/bfloat16, no overflow in int64 math)."""
    if name == "bool":
        v = rng.integers(0, 2, size=shape).astype(bool)
        return np.ones(shape, bool) if nonzero else v
    lo = 0 if name == "uint8" else low
    v = rng.integers(lo, 10, size=shape)
    if nonzero:
        v = np.where(v == 0, 3, v)
    return v.astype(np_dtype(name))


def tol(name: str) -> dict:
    return {"float16": dict(rtol=2e-3, atol=1e-3), "bfloat16": dict(rtol=1.6e-2, atol=1e-2),
            "float32": dict(rtol=2e-6, atol=1e-6)}.get(name, dict(rtol=1e-12, atol=0))


def check_close(result: backend_sdk.Tensor, expected: np.ndarray) -> None:
    name = dtype_name(result.dtype)
    exp = np.asarray(expected).astype(np_dtype(name)).astype(np.float64)
    np.testing.assert_allclose(as_f64(result), exp, equal_nan=True, **tol(name))


# ---- binary operators against numpy --------------------------------------------------------------
def ref_floor_div(a, b):
    return np.floor_divide(a, b)


BINARY = {
    # name: (sdk call, numpy reference on promoted arrays, allowed dtypes (None: all), nonzero divisor)
    "sub": (lambda a, b: backend_sdk.sub(a, b), np.subtract, lambda d: d != "bool", False),
    "sub_alpha": (lambda a, b: backend_sdk.sub(a, b, alpha=2), lambda a, b: a - 2 * b, lambda d: d != "bool", False),
    "div": (lambda a, b: backend_sdk.div(a, b), np.true_divide, None, False),
    "div_trunc": (lambda a, b: backend_sdk.div(a, b, rounding_mode="trunc"),
                  lambda a, b: np.trunc(a / b) if a.dtype.kind == "f" else np.fix(a / b).astype(a.dtype),
                  lambda d: d != "bool", True),
    "div_floor": (lambda a, b: backend_sdk.div(a, b, rounding_mode="floor"), ref_floor_div, lambda d: d != "bool", True),
    "remainder": (lambda a, b: backend_sdk.remainder(a, b), np.mod, lambda d: d != "bool", True),
    "pow": (lambda a, b: aten.pow(a, b), lambda a, b: np.power(a, np.abs(b)), lambda d: d != "bool", False),
    "maximum": (backend_sdk.maximum, np.maximum, None, False),
    "minimum": (backend_sdk.minimum, np.minimum, None, False),
    "eq": (backend_sdk.eq, np.equal, None, False),
    "ne": (backend_sdk.ne, np.not_equal, None, False),
    "lt": (backend_sdk.lt, np.less, None, False),
    "le": (backend_sdk.le, np.less_equal, None, False),
    "gt": (backend_sdk.gt, np.greater, None, False),
    "ge": (backend_sdk.ge, np.greater_equal, None, False),
    "logical_and": (backend_sdk.logical_and, np.logical_and, None, False),
    "logical_or": (backend_sdk.logical_or, np.logical_or, None, False),
    "logical_xor": (backend_sdk.logical_xor, np.logical_xor, None, False),
    "bitwise_and": (backend_sdk.bitwise_and, np.bitwise_and, lambda d: d not in FLOATING, False),
    "bitwise_or": (backend_sdk.bitwise_or, np.bitwise_or, lambda d: d not in FLOATING, False),
    "bitwise_xor": (backend_sdk.bitwise_xor, np.bitwise_xor, lambda d: d not in FLOATING, False),
}
BOOL_RESULT = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"}

broadcast_pairs = st.sampled_from([((3,), (3,)), ((2, 3), (3,)), ((3, 1), (1, 4)), ((2, 1, 3), (4, 1)),
                                   ((0, 3), (3,)), ((1,), (5,)), ((4, 5), (1, 5))])


def expected_dtype(op: str, a: str, b: str) -> str:
    if op in BOOL_RESULT:
        return "bool"
    r = dtype_name(backend_sdk.promote_types(sdk_dtype(a), sdk_dtype(b)))
    if op == "div" and r not in FLOATING:
        return "float32"
    return r


def reference(op: str, a: np.ndarray, b: np.ndarray, result_dtype: str) -> np.ndarray:
    fn = BINARY[op][1]
    common = dtype_name(backend_sdk.promote_types(sdk_dtype(a.dtype.name if a.dtype != np_dtype("bfloat16") else "bfloat16"),
                                                 sdk_dtype(b.dtype.name if b.dtype != np_dtype("bfloat16") else "bfloat16")))
    if common in FLOATING:
        return fn(a.astype(np.float64), b.astype(np.float64))
    if common == "bool" and op not in {"div", "sub", "sub_alpha"}:
        return fn(a.astype(bool), b.astype(bool))
    return fn(a.astype(np.int64), b.astype(np.int64))


def name_of(arr: np.ndarray) -> str:
    return "bfloat16" if arr.dtype == np_dtype("bfloat16") else arr.dtype.name


def op_fn(name: str):
    """The module function, or the aten packet for names that shadow builtins (abs, round, pow)."""
    return getattr(backend_sdk, name, None) or getattr(aten, name)


def meta_like(arr: np.ndarray) -> backend_sdk.Tensor:
    x = t(arr)
    return backend_sdk.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="meta")


# ---- variants: in-place and out= ----------------------------------------------------------------
VARIANT_OPS = ["sub", "div", "remainder", "pow", "maximum", "minimum", "eq", "lt", "logical_and", "bitwise_xor"]


# ---- unary operators -----------------------------------------------------------------------------
erf = np.vectorize(math.erf, otypes=[np.float64])
UNARY = {
    "exp": np.exp, "log": np.log, "log1p": np.log1p, "expm1": np.expm1, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "sin": np.sin, "cos": np.cos, "tan": np.tan, "tanh": np.tanh,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "erf": erf, "reciprocal": lambda x: 1 / x,
}


# ---- Python operators ---------------------------------------------------------------------------
PY_BINARY = [operator.sub, operator.truediv, operator.floordiv, operator.mod, operator.pow,
             operator.and_, operator.or_, operator.xor, operator.eq, operator.ne, operator.lt, operator.le,
             operator.gt, operator.ge]


class TestElementwiseDeviceType:
    @settings(max_examples=120, deadline=None)
    @given(op=st.sampled_from(sorted(BINARY)), a_dtype=st.sampled_from(ALL), b_dtype=st.sampled_from(ALL),
           shapes=broadcast_pairs, seed=st.integers(0, 2**16))
    def test_binary_ops_match_numpy(self, device, op, a_dtype, b_dtype, shapes, seed):
        fn, _, allowed, nonzero = BINARY[op]
        rng = np.random.default_rng(seed)
        a = values(shapes[0], a_dtype, rng)
        b = values(shapes[1], b_dtype, rng, nonzero=nonzero, low=0 if op == "pow" else -9)
        common = dtype_name(backend_sdk.promote_types(sdk_dtype(a_dtype), sdk_dtype(b_dtype)))
        if allowed is not None and not allowed(common) or (op.startswith("sub") and "bool" in (a_dtype, b_dtype)):
            with pytest.raises(TypeError):
                fn(t(a, device=device), t(b, device=device))
            return
        result = fn(t(a, device=device), t(b, device=device))
        assert dtype_name(result.dtype) == expected_dtype(op, a_dtype, b_dtype)
        assert result.shape == np.broadcast_shapes(a.shape, b.shape)
        check_close(result, reference(op, a, b, dtype_name(result.dtype)))
        # the Meta kernel agrees on shape, dtype and strides
        meta = fn(meta_like(a), meta_like(b))
        assert (meta.shape, meta.dtype, meta.stride()) == (result.shape, result.dtype, result.stride())

    @pytest.mark.parametrize("op", VARIANT_OPS)
    @pytest.mark.parametrize("dtype", ["int32", "float32", "float16"])
    # Found by running this on pyaccel: an in-place operator served by the CPU fallback leaves self's
    # version counter unchanged (PyTorch bumps it in ADInplaceOrView, whichever kernel runs).
    @skipIf(True, "the CPU fallback does not bump the version counter of a mutated argument", device_type="pyaccel")
    def test_inplace_and_out_variants_match_functional(self, device, op, dtype):
        if op == "bitwise_xor" and dtype != "int32":
            pytest.skip("integral only")
        rng = np.random.default_rng(0)
        a = values((3, 4), dtype, rng)
        b = values((4,), dtype, rng, nonzero=True, low=0)
        functional = op_fn(op)(t(a, device=device), t(b, device=device))
        # out= of the functional result's dtype
        out = backend_sdk.empty((3, 4), dtype=functional.dtype, device=device)
        overload = {"sub": "out", "div": "out", "remainder": "Tensor_out", "pow": "Tensor_Tensor_out",
                    "eq": "Tensor_out", "lt": "Tensor_out", "bitwise_xor": "Tensor_out"}.get(op, "out")
        returned = getattr(getattr(aten, op), overload)(t(a, device=device), t(b, device=device), out=out)
        assert returned._is_same(out)
        np.testing.assert_array_equal(as_f64(out), as_f64(functional))
        # an empty out= is resized
        empty_out = backend_sdk.empty((0,), dtype=functional.dtype, device=device)
        getattr(getattr(aten, op), overload)(t(a, device=device), t(b, device=device), out=empty_out)
        assert empty_out.shape == (3, 4)
        # in-place, where the result dtype can be held by self
        if op in {"maximum", "minimum"}:
            assert not hasattr(self_t := t(a, device=device), op + "_")  # PyTorch has no in-place maximum
        elif functional.dtype == sdk_dtype(dtype) or op in BOOL_RESULT:
            self_t = t(a, device=device)
            version = self_t._version
            r = getattr(self_t, op + "_")(t(b, device=device))
            assert r is self_t and self_t._version > version
            np.testing.assert_array_equal(as_f64(self_t), as_f64(functional).astype(np_dtype(dtype)).astype(np.float64))
        else:
            with pytest.raises(TypeError, match="can't be cast to the desired output type"):
                getattr(t(a, device=device), op + "_")(t(b, device=device))

    def test_out_of_wrong_dtype_names_the_op(self, device):
        with pytest.raises(TypeError, match=r"^sub.out: result type Float can't be cast to the desired output type Long"):
            backend_sdk.sub(t(np.ones(2, np.float32), device=device), t(np.ones(2, np.float32), device=device), out=backend_sdk.empty(2, dtype=backend_sdk.int64, device=device))
        with pytest.raises(TypeError, match="div.out: result type Float can't be cast to the desired output type Long"):
            backend_sdk.div(t(np.ones(2, np.int64), device=device), t(np.ones(2, np.int64), device=device), out=backend_sdk.empty(2, dtype=backend_sdk.int64, device=device))
        with pytest.raises(TypeError, match="exp.out: result type Float can't be cast"):
            backend_sdk.exp(t(np.ones(2, np.int64), device=device), out=backend_sdk.empty(2, dtype=backend_sdk.int64, device=device))
        with pytest.raises(TypeError, match="exp_: result type Float can't be cast"):
            t(np.ones(2, np.int64), device=device).exp_()

    def test_comparison_outputs_take_any_dtype(self, device):
        out = backend_sdk.empty(2, dtype=backend_sdk.float32, device=device)
        backend_sdk.eq(t(np.array([1.0, 2.0]), device=device), t(np.array([1.0, 3.0]), device=device), out=out)
        assert out.tolist() == [1.0, 0.0]
        x = t(np.array([1, 2]), device=device)
        x.eq_(t(np.array([1.5, 2.0]), device=device))
        assert x.dtype == backend_sdk.int64 and x.tolist() == [0, 1]

    # ---- non-contiguous operands ---------------------------------------------------------------------
    @pytest.mark.parametrize("op", ["sub", "div", "maximum", "lt", "pow"])
    # Found by running this on pyaccel: a functional result from the CPU fallback comes back contiguous
    # instead of keeping the CPU kernel's (transposed) strides.
    @skipIf(True, "the CPU fallback returns contiguous results, not the CPU kernel's strides", device_type="pyaccel")
    def test_non_contiguous_operands(self, device, op):
        rng = np.random.default_rng(1)
        base = rng.integers(1, 9, size=(6, 8)).astype(np.float32)
        x = t(base, device=device)
        cases = [
            (x.transpose(0, 1), base.T),
            (x[::2, 1::3], base[::2, 1::3]),
            (t(base[:1], device=device).expand(6, 8), np.broadcast_to(base[:1], (6, 8))),
        ]
        for sdk_in, np_in in cases:
            other = t(np.full(np_in.shape[-1:], 2.0, np.float32), device=device)
            result = op_fn(op)(sdk_in, other)
            ref = {"sub": np.subtract, "div": np.divide, "maximum": np.maximum, "lt": np.less, "pow": np.power}[op]
            check_close(result, ref(np_in.astype(np.float64), 2.0))
        # a transposed input gives a transposed output, as in PyTorch
        assert backend_sdk.sub(x.transpose(0, 1), x.transpose(0, 1)).stride() == (1, 8)

    def test_out_non_contiguous_is_written_in_place(self, device):
        base = backend_sdk.zeros((4, 6), device=device)
        view = base[:, ::2]
        backend_sdk.maximum(t(np.ones((4, 3), np.float32), device=device), t(np.full((4, 3), 2.0, np.float32), device=device), out=view)
        assert base.cpu().numpy()[:, ::2].tolist() == [[2.0] * 3] * 4 and base.cpu().numpy()[:, 1::2].sum() == 0

    # ---- 0-dim and wrapped numbers -------------------------------------------------------------------
    def test_zero_dim_and_python_scalars_promote_like_pytorch(self, device):
        i8 = t(np.array([1, 2], np.int8), device=device)
        assert (i8 - 1).dtype == backend_sdk.int8
        assert (i8 - 1.5).dtype == backend_sdk.float32
        assert (i8 / 2).dtype == backend_sdk.float32
        assert (i8 - t(np.array(5, np.int64), device=device)).dtype == backend_sdk.int8  # 0-dim of the same kind
        assert (i8 - t(np.array(5.0, np.float64), device=device)).dtype == backend_sdk.float64  # 0-dim of a higher kind
        f16 = t(np.array([1.0], np.float16), device=device)
        assert (f16 / 3).dtype == backend_sdk.float16
        zero_dim = backend_sdk.sub(t(np.array(3.0, np.float32), device=device), t(np.array(1.0, np.float32), device=device))
        assert zero_dim.shape == () and zero_dim.item() == 2.0

    @settings(max_examples=60, deadline=None)
    @given(op=st.sampled_from(sorted(UNARY)), dtype=st.sampled_from(ALL), seed=st.integers(0, 2**16),
           shape=st.sampled_from([(), (0,), (5,), (2, 3)]))
    def test_floating_unary_ops_match_numpy(self, device, op, dtype, seed, shape):
        rng = np.random.default_rng(seed)
        a = values(shape, dtype, rng, low=0 if dtype != "bool" else 0)
        a = np.where(a.astype(np.float64) == 0, np.ones_like(a), a) if dtype != "bool" else a
        result = op_fn(op)(t(a, device=device))
        expected_dtype = dtype if dtype in FLOATING else "float32"  # ints promote to the default dtype
        assert dtype_name(result.dtype) == expected_dtype and result.shape == shape
        with np.errstate(all="ignore"):
            check_close(result, UNARY[op](a.astype(np.float64)))
        meta = op_fn(op)(meta_like(a))
        assert (meta.shape, meta.dtype, meta.stride()) == (result.shape, result.dtype, result.stride())
        if dtype in FLOATING:  # in-place and out= agree
            x = t(a, device=device)
            getattr(x, op + "_")()
            np.testing.assert_array_equal(as_f64(x), as_f64(result))
            out = backend_sdk.empty(shape, dtype=backend_sdk.float64, device=device)
            op_fn(op)(t(a, device=device), out=out)
            check_close(result, as_f64(out))

    @pytest.mark.parametrize("dtype", ALL)
    def test_other_unary_ops_match_numpy(self, device, dtype):
        rng = np.random.default_rng(3)
        a = values((4, 5), dtype, rng)
        x = t(a, device=device)
        f = a.astype(np.float64)
        numeric = dtype != "bool"
        cases = {
            "neg": (numeric, lambda: -f), "abs": (numeric, lambda: np.abs(f)),
            "relu": (numeric, lambda: np.maximum(f, 0)),
            "floor": (numeric, lambda: np.floor(f)), "ceil": (numeric, lambda: np.ceil(f)),
            "trunc": (numeric, lambda: np.trunc(f)), "round": (numeric, lambda: np.round(f)),
            "sign": (True, lambda: np.sign(f)), "logical_not": (True, lambda: f == 0),
            "bitwise_not": (dtype not in FLOATING, lambda: (~a).astype(np.float64) if dtype != "bool" else ~a),
        }
        for op, (ok, ref) in cases.items():
            if not ok:
                with pytest.raises(TypeError):
                    op_fn(op)(x)
                with pytest.raises(TypeError):  # Meta refuses the same dtypes
                    op_fn(op)(meta_like(a))
                continue
            result = op_fn(op)(x)
            assert dtype_name(result.dtype) == ("bool" if op == "logical_not" else dtype), op
            if dtype == "uint8" and op == "neg":
                np.testing.assert_array_equal(result.cpu().numpy(), (-a.astype(np.int64)).astype(np.uint8))
                continue
            check_close(result, ref())

    def test_activations_and_rounding_details(self, device):
        x = t(np.array([-2.5, -0.5, 0.5, 1.5, 2.5, np.nan], np.float32), device=device)
        assert np.array_equal(aten.round(x).cpu().numpy(), np.array([-2, -0, 0, 2, 2, np.nan], np.float32), equal_nan=True)
        assert math.isnan(backend_sdk.relu(x).tolist()[-1])
        assert backend_sdk.sign(x).tolist()[-1] == 0.0
        f = np.array([-3.0, -1.0, 0.0, 0.7, 2.0], np.float64)
        gelu_ref = 0.5 * f * (1 + erf(f / math.sqrt(2)))
        np.testing.assert_allclose(backend_sdk.gelu(t(f, device=device)).cpu().numpy(), gelu_ref, rtol=1e-12)
        tanh_ref = 0.5 * f * (1 + np.tanh(math.sqrt(2 / math.pi) * (f + 0.044715 * f**3)))
        np.testing.assert_allclose(backend_sdk.gelu(t(f, device=device), approximate="tanh").cpu().numpy(), tanh_ref, rtol=1e-12)
        np.testing.assert_allclose(backend_sdk.silu(t(f, device=device)).cpu().numpy(), f / (1 + np.exp(-f)), rtol=1e-12)
        np.testing.assert_allclose(aten.round(t(np.array([1.2345, -127.5]), device=device), decimals=2).cpu().numpy(), [1.23, -127.5])
        assert aten.round(t(np.array([1234.0]), device=device), decimals=-2).tolist() == [1200.0]
        with pytest.raises(ValueError, match="gelu: approximate argument must be either none or tanh"):
            backend_sdk.gelu(t(f, device=device), approximate="bad")
        with pytest.raises(TypeError, match="\"silu_cpu\" not implemented for 'Long'"):
            backend_sdk.silu(t(np.array([1]), device=device))
        with pytest.raises(TypeError, match="Negation, the `-` operator, on a bool tensor is not supported"):
            -t(np.array([True]), device=device)
        with pytest.raises(TypeError, match="\"abs_cpu\" not implemented for 'Bool'"):
            abs(t(np.array([True]), device=device))
        assert aten.abs(t(np.array([-128], np.int8), device=device)).tolist() == [-128]  # wraps, as PyTorch

    # ---- division, remainder and pow details ---------------------------------------------------------
    def test_division_modes_and_python_sign_remainder(self, device):
        a = t(np.array([-7, 7, -7, 7]), device=device)
        b = t(np.array([2, -2, -2, 2]), device=device)
        assert backend_sdk.div(a, b, rounding_mode="trunc").tolist() == [-3, -3, 3, 3]
        assert backend_sdk.div(a, b, rounding_mode="floor").tolist() == [-4, -4, 3, 3]
        assert (a // b).tolist() == [-4, -4, 3, 3]
        assert (a % b).tolist() == [1, -1, -1, 1]
        assert (-7 % t(np.array([3, 4]), device=device)).tolist() == [2, 1]
        fa, fb = t(np.array([-7.5, 7.5, -0.0, 5.0]), device=device), t(np.array([2.0, -2.0, 3.0, 0.0]), device=device)
        np.testing.assert_array_equal((fa // fb).cpu().numpy(), np.floor_divide(fa.cpu().numpy(), fb.cpu().numpy()))
        r = (fa % fb).cpu().numpy()
        np.testing.assert_array_equal(r[:3], np.array([0.5, -0.5, -0.0]))
        assert math.isnan(r[3])
        assert backend_sdk.div(t(np.array([5]), device=device), t(np.array([0]), device=device)).tolist() == [math.inf]
        assert backend_sdk.div(t(np.array([-128], np.int8), device=device), t(np.array([-1], np.int8), device=device), rounding_mode="floor").tolist() == [-128]
        assert backend_sdk.remainder(t(np.array([-(2**63)]), device=device), t(np.array([-1]), device=device)).tolist() == [0]

    @pytest.mark.parametrize("call", [
        lambda device: backend_sdk.div(t(np.array([5]), device=device), t(np.array([0]), device=device), rounding_mode="trunc"),
        lambda device: backend_sdk.div(t(np.array([5]), device=device), t(np.array([0]), device=device), rounding_mode="floor"),
        lambda device: t(np.array([5]), device=device) // 0,
        lambda device: t(np.array([5], np.int8), device=device) % t(np.array([0], np.int8), device=device),
        lambda device: t(np.arange(1, 200001), device=device) // t(np.arange(200000), device=device),  # raised on a worker thread
    ])
    def test_integer_division_by_zero_raises(self, device, call):
        # A device kernel may report it at the next synchronize (an AcceleratorError, a RuntimeError).
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            call(device)
            if device != "cpu":
                getattr(backend_sdk, self.device_type).synchronize()

    def test_pow_overloads(self, device):
        x = t(np.array([2, 3]), device=device)
        assert (x ** 2).tolist() == [4, 9] and (x ** 2).dtype == backend_sdk.int64
        assert (x ** 2.0).dtype == backend_sdk.float32
        assert (2 ** x).tolist() == [4, 8]
        assert aten.pow(2.5, t(np.array([1, 2]), device=device)).tolist() == [2.5, 6.25]
        assert aten.pow(t(np.array([2, 1, -1]), device=device), t(np.array([-1, -2, -3]), device=device)).tolist() == [0, 1, -1]
        assert aten.pow(t(np.array([2], np.int8), device=device), 10).tolist() == [0]  # wraps
        with pytest.raises(ValueError, match="Integers to negative integer powers are not allowed"):
            x ** -1
        f = t(np.array([0.25, 4.0], np.float32), device=device)
        for e in [2, 3, 0.5, -1, -0.5, -2, 1.7]:
            np.testing.assert_allclose((f ** e).cpu().numpy(), np.power(f.cpu().numpy().astype(np.float64), e), rtol=1e-6)
        y = t(np.array([2.0]), device=device)
        y **= 3
        assert y.tolist() == [8.0]

    # ---- where and clamp -----------------------------------------------------------------------------
    def test_where(self, device):
        cond = t(np.array([True, False, True]), device=device)
        assert backend_sdk.where(cond, t(np.array([1, 2, 3]), device=device), t(np.array([9.5]), device=device)).tolist() == [1.0, 9.5, 3.0]
        assert backend_sdk.where(cond, t(np.array([1, 2, 3], np.int8), device=device), 0).dtype == backend_sdk.int8
        assert backend_sdk.where(cond, 1, 2.5).tolist() == [1.0, 2.5, 1.0]
        assert backend_sdk.where(cond, 7, t(np.array([0, 0, 0]), device=device)).tolist() == [7, 0, 7]
        m = backend_sdk.where(meta_like(np.zeros((2, 1), bool)), meta_like(np.zeros(3, np.float32)), 0.0)
        assert m.shape == (2, 3) and m.dtype == backend_sdk.float32
        with pytest.raises(TypeError, match="where expected condition to be a boolean tensor, but got a tensor with dtype Float"):
            backend_sdk.where(t(np.array([1.0], np.float32), device=device), t(np.array([1]), device=device), t(np.array([2]), device=device))
        with pytest.raises(TypeError, match="Expected out type to be Long but got Char"):
            backend_sdk.where(cond, t(np.array([1]), device=device), t(np.array([2]), device=device), out=backend_sdk.empty(3, dtype=backend_sdk.int8, device=device))

    def test_clamp(self, device):
        x = t(np.array([1.0, 5.0, np.nan, -3.0]), device=device)
        np.testing.assert_array_equal(backend_sdk.clamp(x, 0.0, 2.0).cpu().numpy(), [1.0, 2.0, np.nan, 0.0])
        np.testing.assert_array_equal(backend_sdk.clamp(x, min=np.nan).cpu().numpy(), [np.nan] * 4)
        i = t(np.array([1, 5]), device=device)
        assert backend_sdk.clamp(i, min=2, max=1).tolist() == [1, 1]
        assert backend_sdk.clamp(i, 0.5).dtype == backend_sdk.float32
        assert backend_sdk.clamp(t(np.array([1, 5], np.uint8), device=device), -1, 3).tolist() == [3, 3]
        assert backend_sdk.clamp(i, t(np.array([2.0]), device=device), None).tolist() == [2.0, 5.0]
        assert backend_sdk.clamp(i, None, t(np.array([3]), device=device)).tolist() == [1, 3]
        lo, hi = t(np.array([[0], [4]]), device=device), t(np.array([2, 3, 9]), device=device)
        assert backend_sdk.clamp(t(np.array([1, 5, 7]), device=device), lo, hi).tolist() == [[1, 3, 7], [2, 3, 7]]
        y = t(np.array([1.0, 9.0]), device=device)
        assert y.clamp_(max=4.0) is y and y.tolist() == [1.0, 4.0]
        with pytest.raises(ValueError, match="clamp: At least one of 'min' or 'max' must not be None"):
            backend_sdk.clamp(x)
        with pytest.raises(ValueError, match="without overflow"):
            backend_sdk.clamp(t(np.array([1], np.uint8), device=device), 300)
        with pytest.raises(TypeError, match="result type Float can't be cast to the desired output type Long"):
            i.clamp_(0.5)

    # ---- errors -------------------------------------------------------------------------------------
    def test_errors_name_the_op(self, device):
        with pytest.raises(ValueError, match=r"^sub.Tensor: The size of tensor a \(2\) must match the size of tensor b \(3\)"):
            backend_sdk.sub(t(np.ones(2), device=device), t(np.ones(3), device=device))
        with pytest.raises(ValueError, match="output with shape"):
            t(np.ones(1), device=device).sub_(t(np.ones(3), device=device))
        with pytest.raises(TypeError, match="sub.Tensor: Subtraction, the `-` operator, with two bool tensors"):
            t(np.array([True]), device=device) - t(np.array([True]), device=device)
        with pytest.raises(TypeError, match="with a bool tensor is not supported"):
            t(np.array([1.0]), device=device) - True
        with pytest.raises(TypeError, match="For integral input tensors, argument alpha must not be a floating point"):
            backend_sdk.sub(t(np.array([1]), device=device), t(np.array([1]), device=device), alpha=1.5)
        with pytest.raises(TypeError, match=r"bitwise_and.Tensor: \"bitwise_and_cpu\" not implemented for 'Float'"):
            backend_sdk.bitwise_and(t(np.array([1.0], np.float32), device=device), t(np.array([1.0], np.float32), device=device))
        with pytest.raises(TypeError, match="\"bitwise_and_cpu\" not implemented for 'Float'"):
            t(np.array([1]), device=device) & 1.5
        with pytest.raises(TypeError, match="\"bitwise_not_cpu\" not implemented for 'Float'"):
            ~t(np.array([1.0], np.float32), device=device)
        with pytest.raises(ValueError, match="div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'bad'"):
            backend_sdk.div(t(np.array([1]), device=device), t(np.array([1]), device=device), rounding_mode="bad")
        with pytest.raises(TypeError, match="\"div_floor_cpu\" not implemented for 'Bool'"):
            t(np.array([True]), device=device) // t(np.array([True]), device=device)
        with pytest.raises(TypeError, match="\"remainder_cpu\" not implemented for 'Bool'"):
            backend_sdk.remainder(t(np.array([True]), device=device), t(np.array([True]), device=device))
        with pytest.raises(TypeError, match="\"pow\" not implemented for 'Bool'"):
            aten.pow(t(np.array([True]), device=device), t(np.array([True]), device=device))
        with pytest.raises(TypeError, match="Boolean inputs not supported for relu"):
            backend_sdk.relu(t(np.array([True]), device=device))

    @pytest.mark.parametrize("op", PY_BINARY, ids=lambda f: f.__name__)
    def test_python_operators_and_reflected_forms(self, device, op):
        a = np.array([3, 4, 7], np.int64)
        b = np.array([2, 5, 3], np.int64)
        x, y = t(a, device=device), t(b, device=device)
        np.testing.assert_allclose(op(x, y).cpu().numpy(), op(a, b), rtol=1e-6)
        np.testing.assert_allclose(op(x, 2).cpu().numpy(), op(a, np.int64(2)), rtol=1e-6)
        np.testing.assert_allclose(op(2, y).cpu().numpy(), op(np.int64(2), b), rtol=1e-6)  # reflected: 2 <op> y, in order
        if op not in {operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge}:
            inplace = getattr(operator, "i" + op.__name__.strip("_") if op.__name__ != "and_" else "iand")
            z = t(a.astype(np.float64), device=device) if op is operator.truediv else t(a, device=device)
            r = inplace(z, y)
            assert r is z
            np.testing.assert_allclose(z.cpu().numpy(), op(a, b))

    def test_unary_python_operators_and_hash(self, device):
        x = t(np.array([-1, 2]), device=device)
        assert (-x).tolist() == [1, -2] and abs(x).tolist() == [1, 2] and (~x).tolist() == [0, -3]
        assert (~t(np.array([True, False]), device=device)).tolist() == [False, True]
        assert (3.5 - t(np.array([1.0]), device=device)).tolist() == [2.5]
        assert (1 / t(np.array([4.0]), device=device)).tolist() == [0.25]
        assert hash(x) == hash(x) and len({x, x}) == 1
        assert (x == None) is False  # noqa: E711 - identity fallback for non-numbers
        assert (x == "a") is False

    # ---- threads ------------------------------------------------------------------------------------
    def test_large_operations_match_numpy(self, device):
        rng = np.random.default_rng(5)
        a = rng.random((300, 700), dtype=np.float32) + 0.5
        b = rng.random((700,), dtype=np.float32) + 0.5
        x = t(a, device=device)
        check_close(x - t(b, device=device), a.astype(np.float64) - b)
        check_close(x.transpose(0, 1) / t(a.T.copy(), device=device), np.ones((700, 300)))
        check_close(backend_sdk.sqrt(x[:, ::3]), np.sqrt(a[:, ::3].astype(np.float64)))
        check_close(backend_sdk.exp(x), np.exp(a.astype(np.float64)))
        check_close(x + x, 2 * a.astype(np.float64))  # add also uses the parallel loop
        assert bool(backend_sdk.eq(x, x).cpu().numpy().all())

    # ---- PyTorch, when installed -------------------------------------------------------------------
    def test_result_dtypes_match_pytorch(self, device):
        torch = pytest.importorskip("torch")
        cases = [
            ("div", np.array([3]), np.array([2])),
            ("div", np.array([3], np.int8), np.array(2.0)),
            ("remainder", np.array([3], np.uint8), np.array([2], np.int8)),
            ("maximum", np.array([1], np.int16), np.array([2.0], np.float16)),
            ("eq", np.array([1], np.int32), np.array([1.0])),
            ("bitwise_or", np.array([True]), np.array([2], np.int16)),
            ("pow", np.array([2], np.int32), np.array(2.5)),
        ]
        for op, a, b in cases:
            ours = op_fn(op)(t(a, device=device), t(b, device=device))
            theirs = getattr(torch, op)(torch.from_numpy(a), torch.from_numpy(np.asarray(b)))
            assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], op
            np.testing.assert_allclose(as_f64(ours), theirs.double().cpu().numpy())
        for op in ["exp", "sigmoid", "floor", "sign", "logical_not"]:
            a = np.array([1, -2], np.int32)
            ours, theirs = op_fn(op)(t(a, device=device)), getattr(torch, op)(torch.from_numpy(a))
            assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], op


instantiate_device_type_tests(TestElementwiseDeviceType, globals())


# ---- schemas --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name, schema",
    [
        ("aten::sub.Tensor", "aten::sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"),
        ("aten::div.Tensor_mode", "aten::div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor"),
        ("aten::pow.Scalar", "aten::pow.Scalar(Scalar self, Tensor exponent) -> Tensor"),
        ("aten::eq.Scalar_out", "aten::eq.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)"),
        ("aten::clamp", "aten::clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor"),
        ("aten::gelu", 'aten::gelu(Tensor self, *, str approximate="none") -> Tensor'),
        ("aten::where.self", "aten::where.self(Tensor condition, Tensor self, Tensor other) -> Tensor"),
        ("aten::round.decimals", "aten::round.decimals(Tensor self, *, int decimals) -> Tensor"),
    ],
)
def test_schemas_are_pytorchs(name, schema):
    assert str(_C._get_op_overload(name)._schema) == schema


def test_every_new_op_has_cpu_and_meta_kernels():
    for name in ["aten::sub.Tensor", "aten::div.out_mode", "aten::exp_", "aten::eq.Tensor", "aten::where.self",
                 "aten::clamp.Tensor_out", "aten::bitwise_not.out", "aten::gelu"]:
        table = _C._dispatch_dump_table(name)
        assert "CPU: registered at" in table and "Meta: registered at" in table, name
