"""The C++ derivative table (csrc/backend_sdk/autograd/derivatives.def): multiple outputs,
saved results, non-tensor arguments, in-place variants through _C._autograd_run_formula, and
double backward of the moved formulas. PyTorch 2.13's behaviour is the reference."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import backend_sdk as B
from backend_sdk import _C
from backend_sdk.autograd import _formulas
from backend_sdk.testing import gradcheck, gradgradcheck

ops = B.ops.aten
rng = np.random.default_rng(7)
DEF = Path(__file__).resolve().parents[1] / "csrc/backend_sdk/autograd/derivatives.def"


def rand(*shape, low=-1.0, high=1.0):
    return B.tensor(rng.uniform(low, high, size=shape), dtype=B.float64).requires_grad_()


def distinct(*shape):
    n = int(np.prod(shape))
    return B.tensor((rng.permutation(n).astype(np.float64) * 0.5 - n / 4 + 0.1).reshape(shape),
                    dtype=B.float64).requires_grad_()


def table_keys() -> list[str]:
    return re.findall(r'SDK_DERIVATIVE\("([^"]+)"', DEF.read_text())


def test_every_table_entry_is_bound_and_has_no_python_twin():
    keys = table_keys()
    assert len(keys) >= 70
    for key in keys:
        spec = _C._autograd_formula_saves(key)
        assert spec is not None, key  # the entry found its operator
        assert key not in _formulas.FORMULAS, f"{key}: written twice (C++ table and Python)"
        names, tensor_names, saves, node = spec
        assert set(tensor_names) <= set(names)
        assert set(saves) <= set(names) | {"result"}
        assert re.fullmatch(r"[A-Z][A-Za-z0-9]*Backward\d", node) or node == "CopyBackwards", node  # PyTorch's


def test_every_library_formula_is_in_the_table():
    # Issue 14: the last Python formulas (unbind, split, chunk, copy, the samplers) moved to derivatives.def;
    # Python formulas remain for custom operators (register_autograd) and autograd.Function.
    assert _formulas.FORMULAS == {}
    for key in ("unbind.int", "split.Tensor", "split_with_sizes", "chunk", "copy", "uniform_", "normal_",
                "bernoulli_.float", "bernoulli_.Tensor", "random_", "random_.from", "random_.to", "exponential_"):
        assert _C._autograd_formula_saves(f"aten::{key}") is not None, key


@pytest.mark.parametrize("fn, name", [
    (lambda x: x.max(1)[0], "MaxBackward0"),
    (lambda x: x.min(0, keepdim=True)[0], "MinBackward0"),
    (lambda x: B.sort(x, 1)[0], "SortBackward0"),
    (lambda x: B.topk(x, 2, dim=1)[0], "TopkBackward0"),
    (lambda x: x.clamp(0.0, 1.0), "ClampBackward1"),
    (lambda x: x ** x, "PowBackward1"),
    (lambda x: ops.pow.Scalar(2.0, x), "PowBackward2"),
    (lambda x: ops.div.Tensor_mode(x, x, rounding_mode="floor"), "DivBackward2"),
    (lambda x: B.where(x > 0, x, 0.0), "WhereBackward0"),
    (lambda x: x.log1p(), "Log1PBackward0"),
])
def test_node_names_are_pytorchs(fn, name):
    assert fn(distinct(2, 3)).grad_fn.name() == name


def test_multi_output_indices_are_not_differentiable_and_values_route_through_them():
    x = B.tensor([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]], dtype=B.float64).requires_grad_()
    values, indices = x.max(1)
    assert indices.grad_fn is None and not indices.requires_grad
    (values * B.tensor([2.0, 3.0], dtype=B.float64)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 2, 0], [0, 0, 3]])


def test_multi_output_formula_sees_zeros_for_an_output_no_gradient_reached():
    # sort: only part of the values is used; the formula scatters the gradient that did flow.
    x = distinct(2, 4)
    v, i = B.sort(x, 1, descending=True)
    v[:, 0].sum().backward()
    expect = np.zeros((2, 4))
    idx = i.numpy()
    for r in range(2):
        expect[r, idx[r, 0]] = 1.0
    np.testing.assert_array_equal(x.grad.numpy(), expect)


def test_non_tensor_arguments_reach_the_formula():
    x = rand(3, 4)
    assert gradcheck(lambda a: B.topk(a, 2, dim=0, largest=False)[0], (distinct(3, 4),))
    assert gradcheck(lambda a: ops.var.correction(a, [1], correction=0, keepdim=True), (x,))
    assert gradcheck(lambda a: ops.gelu(a, approximate="tanh"), (x,))
    # rounding_mode selects the formula: a rounded quotient has zero gradient (derivatives.yaml).
    y = rand(4)
    ops.div.Tensor_mode(y, B.tensor([3.0] * 4, dtype=B.float64), rounding_mode="trunc").sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), np.zeros(4))


INPLACE = {
    "sigmoid_": (lambda a: (a * 1).sigmoid_(), "SigmoidBackward0"),
    "abs_": (lambda a: (a * 1).abs_(), "AbsBackward0"),
    "clamp_": (lambda a: (a * 1).clamp_(-0.5, 0.5), "ClampBackward1"),
    "mul_": (lambda a: (a * 1).mul_(a), "MulBackward0"),
    "div_mode": (lambda a: (a * 1).div_(2.0, rounding_mode="floor") + a, "AddBackward0"),
    "pow_": (lambda a: (a * 1).pow_(3.0), "PowBackward0"),
    "exp_": (lambda a: (a * 1).exp_(), "ExpBackward0"),
    "masked_fill_": (lambda a: (a * 1).masked_fill_(a > 0, 2.0), "MaskedFillBackward0"),
    "view_tanh_": (lambda a: _view_inplace(a), None),
}


def _view_inplace(a):
    b = a * 1
    b[1:].tanh_()  # CopySlices over the C++ formula of tanh
    return b


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_variants_run_the_cpp_formula(name):
    fn, node = INPLACE[name]
    x = B.tensor([-0.9, -0.3, 0.2, 0.7, 1.3], dtype=B.float64).requires_grad_()
    out = fn(x)
    if node is not None:
        assert out.grad_fn.name() == node
    assert gradcheck(fn, (x,))
    if node is not None:  # double backward through CopySlices is a separate, known limitation
        assert gradgradcheck(fn, (x,))


def test_inplace_variant_refuses_a_saved_tensor_modified_afterwards():
    x = rand(3)
    y = (x * 1).sigmoid_()  # saves its result
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_inplace_variant_second_backward_raises_pytorchs_message():
    x = rand(3)
    y = (x * 1).exp_().sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


GRADGRAD = {
    "max_dim": (lambda a: a.max(1)[0], lambda: (distinct(2, 3),)),
    "sort": (lambda a: B.sort(a, 0)[0] ** 2, lambda: (distinct(3, 2),)),
    "topk": (lambda a: B.topk(a, 2)[0] ** 2, lambda: (distinct(2, 4),)),
    "amax": (lambda a: a.amax(1) ** 2, lambda: (distinct(2, 3),)),
    "var": (lambda a: a.var(1), lambda: (rand(2, 4),)),
    "std": (lambda a: a.std(0), lambda: (rand(3, 2),)),
    "logsumexp": (lambda a: a.logsumexp(1), lambda: (rand(2, 3),)),
    "log_softmax": (lambda a: a.log_softmax(1), lambda: (rand(2, 3),)),
    "cumsum": (lambda a: a.cumsum(0) ** 2, lambda: (rand(3, 2),)),
    "pow_tensor": (lambda a, b: a ** b, lambda: (rand(3, low=0.5, high=2.0), rand(3))),
    "pow_scalar_base": (lambda b: ops.pow.Scalar(2.0, b), lambda: (rand(3),)),
    "maximum": (lambda a, b: B.maximum(a, b) ** 2, lambda: (distinct(4), rand(4) * 0.01)),
    "where": (lambda a, b: B.where(a > 0, a * a, b * b), lambda: (distinct(4), rand(4))),
    "bmm": (lambda a, b: a.bmm(b), lambda: (rand(2, 2, 3), rand(2, 3, 2))),
    "dot": (lambda a, b: a.dot(b), lambda: (rand(3), rand(3))),
    "erf": (lambda a: a.erf(), lambda: (rand(4),)),
    "tan": (lambda a: a.tan(), lambda: (rand(4),)),
    "rsqrt": (lambda a: a.rsqrt(), lambda: (rand(4, low=0.5, high=2.0),)),
    "reciprocal": (lambda a: a.reciprocal(), lambda: (rand(4, low=0.5, high=2.0),)),
    "log1p": (lambda a: a.log1p(), lambda: (rand(4, low=0.5, high=2.0),)),
    "expm1": (lambda a: a.expm1(), lambda: (rand(4),)),
    "gelu_tanh": (lambda a: ops.gelu(a, approximate="tanh"), lambda: (rand(4),)),
    "mse_loss": (lambda a, b: ops.mse_loss(a, b), lambda: (rand(2, 3), rand(2, 3))),
    "gather": (lambda a: a.gather(1, B.tensor([[0, 0], [1, 0]])) ** 2, lambda: (rand(2, 3),)),
}


@pytest.mark.parametrize("name", sorted(GRADGRAD))
def test_double_backward_of_moved_formulas(name):
    fn, make = GRADGRAD[name]
    inputs = make()
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


def test_run_formula_binding_rejects_bad_calls():
    with pytest.raises(ValueError, match="has no C.. formula"):
        _C._autograd_run_formula("aten::no_such_op", [], [], [], [], [])
    x = B.ones([2], dtype=B.float64)
    with pytest.raises(ValueError, match="takes 2 arguments"):
        _C._autograd_run_formula("aten::mul.Tensor", [x], [None], [x], [], [True, True])
    with pytest.raises(ValueError, match="needs flags"):
        _C._autograd_run_formula("aten::mul.Tensor", [x, x], [None, None], [x], [], [True])
    with pytest.raises(TypeError, match="argument 'alpha'"):
        _C._autograd_run_formula("aten::add.Tensor", [x, x, "two"], [None, None, None], [x], [], [True, True])


# ---- operators that had no formula (derivatives.yaml declares them) ----------------------------
@pytest.mark.parametrize("fn", [
    lambda x: (x * 1).uniform_(),
    lambda x: (x * 1).normal_(),
    lambda x: (x * 1).bernoulli_(0.5),
    lambda x: (x * 1).random_(0, 5),
    lambda x: (x * 1).exponential_(),
    lambda x: B.bernoulli(x),
    lambda x: B.normal(x, 1.0),
    lambda x: B.normal(0.0, x),
    lambda x: B.normal(x, x),
])
def test_random_operators_have_zero_gradient(fn):
    x = B.tensor([0.2, 0.5, 0.7], dtype=B.float64).requires_grad_()
    y = fn(x)
    assert y.requires_grad
    (y * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(3))


@pytest.mark.parametrize("fn", [B.rand_like, B.randn_like, lambda x: B.randint_like(x, 5)])
def test_random_like_factories_are_not_differentiable(fn):
    x = rand(3)
    y = fn(x)
    assert not y.requires_grad and y.grad_fn is None


@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_comparisons_outputs_are_not_differentiable_and_in_place_forms_give_zeros(op):
    x, y = rand(4), rand(4)
    out = getattr(x, op)(y)
    assert out.dtype == B.bool and not out.requires_grad
    z = getattr(x * 1, op + "_")(0.0)
    assert z.requires_grad
    w = getattr(x * 1, op + "_")(y)
    (z.sum() + w.sum()).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(4))
    np.testing.assert_array_equal(y.grad.numpy(), np.zeros(4))


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_gradients(reduce, include_self):
    index = B.tensor([0, 2, 0, 1, 2])

    def f(a, s):
        return ops.scatter_reduce.two(a, 0, index, s, reduce, include_self=include_self)

    a, s = distinct(4), distinct(5)
    assert f(a, s).grad_fn.name() == "ScatterReduceBackward0"
    assert gradcheck(f, (a, s))
    if reduce in ("sum", "mean"):
        assert gradgradcheck(f, (a, s))


def test_scatter_reduce_prod_raises_not_implemented():
    a, s = distinct(3), distinct(3)
    y = ops.scatter_reduce.two(a, 0, B.tensor([0, 1, 1]), s, "prod")
    with pytest.raises(NotImplementedError, match="reduce='prod'"):
        y.sum().backward()


def test_masked_scatter_gradients():
    mask = B.tensor([[True, False, True], [False, True, False]])

    def f(a, s):
        return ops.masked_scatter(a, mask, s)

    a, s = rand(2, 3), rand(5)  # source longer than the mask's true count: its tail gets zeros
    assert f(a, s).grad_fn.name() == "MaskedScatterBackward0"
    assert gradcheck(f, (a, s))
    assert gradgradcheck(f, (a, s))
    f(a, s).sum().backward()
    np.testing.assert_array_equal(s.grad.numpy(), [1, 1, 1, 0, 0])


def test_masked_select_with_a_mask_broadcasting_self():
    mask = B.tensor([[True, False, True], [False, True, True]])
    for x in (rand(3), rand(2, 1)):
        assert gradcheck(lambda a: a.masked_select(mask), (x,))
