"""Every derivative formula against finite differences (gradcheck, float64)."""
from __future__ import annotations

import numpy as np
import pytest

import backend_sdk as B
from backend_sdk.testing import gradcheck, gradgradcheck

ops = B.ops.aten
rng = np.random.default_rng(1234)


def rand(*shape, low=-1.0, high=1.0, requires_grad=True):
    t = B.tensor(rng.uniform(low, high, size=shape), dtype=B.float64)
    return t.requires_grad_() if requires_grad else t


def pos(*shape):
    return rand(*shape, low=0.5, high=2.0)


def distinct(*shape):
    """Values far apart (so max/min/sort-like ops have a unique winner under finite differences)."""
    n = int(np.prod(shape)) if shape else 1
    vals = rng.permutation(n).astype(np.float64) * 0.5 - n / 4 + 0.1
    return B.tensor(vals.reshape(shape), dtype=B.float64).requires_grad_()


def away_from(values, *shape, margin=0.1):
    """Random values not within margin of any of `values` (kinks of relu/abs/clamp)."""
    a = rng.uniform(-1.0, 1.0, size=shape)
    for v in values:
        a = np.where(np.abs(a - v) < margin, v + margin * 2 * np.sign(a - v + 1e-12), a)
    return B.tensor(a, dtype=B.float64).requires_grad_()


CASES = {
    # arithmetic, with broadcasting, scalars and alpha
    "add": (lambda a, b: a + b, lambda: (rand(2, 3), rand(3))),
    "add_alpha": (lambda a, b: B.add(a, b, alpha=2.5), lambda: (rand(2, 3), rand(2, 1))),
    "add_scalar": (lambda a: a + 2.0, lambda: (rand(3),)),
    "sub": (lambda a, b: B.sub(a, b, alpha=0.5), lambda: (rand(2, 3), rand(1, 3))),
    "sub_scalar": (lambda a: a - 2.0, lambda: (rand(3),)),
    "rsub": (lambda a: 2.0 - a, lambda: (rand(3),)),
    "rsub_tensor": (lambda a, b: ops.rsub.Tensor(a, b, alpha=2), lambda: (rand(3), rand(2, 3))),
    "mul": (lambda a, b: a * b, lambda: (rand(2, 3), rand(2, 1))),
    "mul_scalar": (lambda a: a * 3.0, lambda: (rand(3),)),
    "div": (lambda a, b: a / b, lambda: (rand(2, 3), pos(3))),
    "div_scalar": (lambda a: a / 4.0, lambda: (rand(3),)),
    "neg": (lambda a: -a, lambda: (rand(3),)),
    "pow_scalar": (lambda a: a ** 3, lambda: (rand(4),)),
    "pow_frac": (lambda a: a ** 2.5, lambda: (pos(4),)),
    "pow_tensor": (lambda a, b: a ** b, lambda: (pos(3), rand(3))),
    "pow_scalar_base": (lambda b: 2.0 ** b, lambda: (rand(3),)),
    # unary
    "exp": (lambda a: a.exp(), lambda: (rand(4),)),
    "log": (lambda a: a.log(), lambda: (pos(4),)),
    "log1p": (lambda a: a.log1p(), lambda: (pos(4),)),
    "expm1": (lambda a: a.expm1(), lambda: (rand(4),)),
    "sqrt": (lambda a: a.sqrt(), lambda: (pos(4),)),
    "rsqrt": (lambda a: a.rsqrt(), lambda: (pos(4),)),
    "reciprocal": (lambda a: a.reciprocal(), lambda: (pos(4),)),
    "sin": (lambda a: a.sin(), lambda: (rand(4),)),
    "cos": (lambda a: a.cos(), lambda: (rand(4),)),
    "tan": (lambda a: a.tan(), lambda: (rand(4),)),
    "tanh": (lambda a: a.tanh(), lambda: (rand(4),)),
    "sigmoid": (lambda a: a.sigmoid(), lambda: (rand(4),)),
    "relu": (lambda a: a.relu(), lambda: (away_from([0.0], 6),)),
    "gelu": (lambda a: ops.gelu(a), lambda: (rand(5),)),
    "gelu_tanh": (lambda a: ops.gelu(a, approximate="tanh"), lambda: (rand(5),)),
    "silu": (lambda a: ops.silu(a), lambda: (rand(5),)),
    "erf": (lambda a: a.erf(), lambda: (rand(4),)),
    "abs": (lambda a: a.abs(), lambda: (away_from([0.0], 6),)),
    "clamp": (lambda a: a.clamp(-0.5, 0.5), lambda: (away_from([-0.5, 0.5], 8),)),
    "clamp_min": (lambda a: a.clamp(min=0.0), lambda: (away_from([0.0], 6),)),
    "maximum": (lambda a, b: B.maximum(a, b), lambda: (distinct(5), rand(5) * 0.01)),
    "minimum": (lambda a, b: B.minimum(a, b), lambda: (distinct(5), rand(5) * 0.01)),
    "where": (lambda a, b: B.where(a > 0, a, b), lambda: (away_from([0.0], 5), rand(5))),
    "masked_fill": (lambda a: a.masked_fill(a > 0, 2.0), lambda: (away_from([0.0], 5),)),
    # reductions
    "sum": (lambda a: a.sum(), lambda: (rand(2, 3),)),
    "sum_dim": (lambda a: a.sum(1), lambda: (rand(2, 3, 2),)),
    "sum_dims_keepdim": (lambda a: a.sum([0, 2], keepdim=True), lambda: (rand(2, 3, 2),)),
    "mean": (lambda a: a.mean(), lambda: (rand(2, 3),)),
    "mean_dim": (lambda a: a.mean(-1, keepdim=True), lambda: (rand(2, 3),)),
    "amax": (lambda a: a.amax(1), lambda: (distinct(2, 3),)),
    "amin": (lambda a: a.amin(0, keepdim=True), lambda: (distinct(2, 3),)),
    "max": (lambda a: a.max(), lambda: (distinct(2, 3),)),
    "min": (lambda a: a.min(), lambda: (distinct(2, 3),)),
    "max_dim": (lambda a: a.max(1)[0], lambda: (distinct(2, 3),)),
    "min_dim_keepdim": (lambda a: a.min(0, keepdim=True)[0], lambda: (distinct(2, 3),)),
    "var": (lambda a: a.var(1), lambda: (rand(2, 4),)),
    "var_all": (lambda a: ops.var.correction(a, None, correction=0), lambda: (rand(2, 4),)),
    "std": (lambda a: a.std(0, keepdim=True), lambda: (rand(3, 2),)),
    "logsumexp": (lambda a: a.logsumexp(1), lambda: (rand(2, 3),)),
    "softmax": (lambda a: a.softmax(1), lambda: (rand(2, 3),)),
    "log_softmax": (lambda a: a.log_softmax(0), lambda: (rand(2, 3),)),
    "cumsum": (lambda a: a.cumsum(1), lambda: (rand(2, 3),)),
    "norm": (lambda a: B.norm(a), lambda: (rand(2, 3),)),
    "norm_dim": (lambda a: B.norm(a, p=3, dim=1), lambda: (rand(2, 3),)),
    "norm_1": (lambda a: ops.linalg_vector_norm(a, 1), lambda: (away_from([0.0], 5),)),
    # linear algebra
    "mm": (lambda a, b: a.mm(b), lambda: (rand(2, 3), rand(3, 4))),
    "bmm": (lambda a, b: a.bmm(b), lambda: (rand(2, 2, 3), rand(2, 3, 2))),
    "addmm": (lambda c, a, b: B.addmm(c, a, b, beta=0.5, alpha=2.0), lambda: (rand(4), rand(2, 3), rand(3, 4))),
    "dot": (lambda a, b: a.dot(b), lambda: (rand(3), rand(3))),
    "matmul": (lambda a, b: a.matmul(b), lambda: (rand(2, 3, 4), rand(4, 2))),
    "linear": (lambda x, w, b: B.linear(x, w, b), lambda: (rand(2, 3), rand(4, 3), rand(4))),
    # views and shape ops
    "view": (lambda a: a.view(3, 2) * 1, lambda: (rand(2, 3),)),
    "reshape": (lambda a: a.transpose(0, 1).reshape(6) * 1, lambda: (rand(2, 3),)),
    "as_strided": (lambda a: a.as_strided([2, 2], [1, 2], 1) * 1, lambda: (rand(6),)),
    "transpose": (lambda a: a.transpose(0, 1) * 1, lambda: (rand(2, 3),)),
    "permute": (lambda a: a.permute(2, 0, 1) * 1, lambda: (rand(2, 3, 2),)),
    "expand": (lambda a: a.expand(3, 2, 4) * 1, lambda: (rand(2, 1),)),
    "squeeze": (lambda a: a.squeeze(1) * 1, lambda: (rand(2, 1, 3),)),
    "unsqueeze": (lambda a: a.unsqueeze(0) * 1, lambda: (rand(2, 3),)),
    "select": (lambda a: a.select(1, 2) * 1, lambda: (rand(2, 3),)),
    "slice": (lambda a: a[:, 1:3] * 1, lambda: (rand(2, 4),)),
    "slice_step": (lambda a: a[::2] * 1, lambda: (rand(5),)),
    "cat": (lambda a, b: B.cat([a, b], 1), lambda: (rand(2, 1), rand(2, 3))),
    "stack": (lambda a, b: B.stack([a, b], 1), lambda: (rand(2, 3), rand(2, 3))),
    "index": (lambda a: a[B.tensor([0, 2, 0])], lambda: (rand(3, 2),)),
    "gather": (lambda a: a.gather(1, B.tensor([[0, 0], [1, 0]])), lambda: (rand(2, 3),)),
    "index_select": (lambda a: a.index_select(1, B.tensor([2, 0, 2])), lambda: (rand(2, 3),)),
    "flip": (lambda a: a.flip([0]), lambda: (rand(3, 2),)),
    "repeat": (lambda a: a.repeat(2, 1, 3), lambda: (rand(2, 2),)),
    "clone": (lambda a: a.clone(), lambda: (rand(3),)),
    "to_copy": (lambda a: a.to(B.float64, copy=True), lambda: (rand(3),)),
    "contiguous": (lambda a: a.t().contiguous() * 1, lambda: (rand(2, 3),)),
    "prod": (lambda a: a.prod(), lambda: (rand(2, 3),)),
    "prod_with_zero": (lambda a: a.prod(), lambda: (B.tensor([0.0, 2.0, 3.0], dtype=B.float64).requires_grad_(),)),
    "prod_dim": (lambda a: a.prod(1), lambda: (rand(2, 3),)),
    "cumprod": (lambda a: a.cumprod(1), lambda: (pos(2, 3),)),
    "remainder": (lambda a, b: a.remainder(b), lambda: (pos(4) * 3, B.tensor([0.7, 0.9, 1.1, 1.3], dtype=B.float64)
                                                       .requires_grad_())),
    "scatter_src": (lambda a, s: a.scatter(1, B.tensor([[0, 2]]), s), lambda: (rand(1, 3), rand(1, 2))),
    "scatter_add": (lambda a, s: a.scatter_add(0, B.tensor([0, 0, 1]), s), lambda: (rand(3), rand(3))),
    "index_put": (lambda a, v: ops.index_put(a, [B.tensor([0, 2])], v), lambda: (rand(3, 2), rand(2, 2))),
    "index_put_acc": (lambda a, v: ops.index_put(a, [B.tensor([0, 0])], v, True), lambda: (rand(3), rand(2))),
    "masked_select": (lambda a: a.masked_select(B.tensor([True, False, True])), lambda: (rand(3),)),
    "take": (lambda a: a.take(B.tensor([3, 0, 3])), lambda: (rand(2, 2),)),
    "pow_inplace": (lambda a: (a * 1).pow_(2.0), lambda: (rand(3),)),
    "clamp_tensor": (lambda a, lo: a.clamp(lo, B.tensor([0.5], dtype=B.float64)),
                     lambda: (away_from([0.5, -0.3], 5), B.tensor([-0.3], dtype=B.float64).requires_grad_())),
    "where_scalar_other": (lambda a: B.where(a > 0, a, 1.0), lambda: (away_from([0.0], 4),)),
    # losses
    "mse_loss": (lambda a, b: ops.mse_loss(a, b), lambda: (rand(2, 3), rand(2, 3))),
    "mse_loss_sum": (lambda a, b: ops.mse_loss(a, b, 2), lambda: (rand(2, 3), rand(2, 3))),
    "nll_loss": (lambda a: ops.nll_loss(a, B.tensor([0, 2, 1])), lambda: (rand(3, 4),)),
    "nll_loss_weight_sum": (lambda a, w: ops.nll_loss(a, B.tensor([0, 2, 1]), w, 2),
                            lambda: (rand(3, 4), pos(4, ).detach())),
    "cross_entropy": (lambda a: ops.cross_entropy_loss(a, B.tensor([3, 0])), lambda: (rand(2, 4),)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck(name):
    fn, make = CASES[name]
    assert gradcheck(fn, make())


SECOND_ORDER = ["mul", "div", "exp", "log", "sin", "tanh", "sigmoid", "pow_scalar", "sum_dim", "mm", "softmax",
                "mse_loss", "select_sq", "slice_sq", "cat", "prod", "gelu", "silu", "norm"]
CASES["select_sq"] = (lambda a: a.select(1, 2) ** 2, lambda: (rand(2, 3),))
CASES["slice_sq"] = (lambda a: a[:, 1:3] ** 2, lambda: (rand(2, 4),))


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_gradgradcheck(name):
    fn, make = CASES[name]
    assert gradgradcheck(fn, make())


def test_dtype_conversion_gradient_comes_back_in_the_input_dtype():
    x = B.tensor([1.0, 2.0], dtype=B.float32, requires_grad=True)
    y = x.to(B.float64)
    assert y.grad_fn.name() == "ToCopyBackward0"
    (y * y).sum().backward()
    assert x.grad.dtype == B.float32
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])


def test_mixed_dtype_broadcast_gradients_match_input_dtype_and_shape():
    a = B.tensor([[1.0], [2.0]], dtype=B.float32, requires_grad=True)
    b = B.tensor([1.0, 2.0, 3.0], dtype=B.float64, requires_grad=True)
    (a * b).sum().backward()
    assert a.grad.dtype == B.float32 and tuple(a.grad.shape) == (2, 1)
    assert b.grad.dtype == B.float64 and tuple(b.grad.shape) == (3,)
    np.testing.assert_allclose(a.grad.numpy(), [[6.0], [6.0]])
    np.testing.assert_allclose(b.grad.numpy(), [3.0, 3.0, 3.0])


def test_fill_on_non_leaf_cuts_gradient_of_overwritten_value():
    x = rand(3)
    y = x * 2
    y.fill_(1.0)
    (y * x).sum().backward()  # only the second factor's path remains
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 1.0, 1.0])


def test_copy_into_non_leaf_routes_gradient_to_source():
    src = rand(3)
    dst = B.zeros(3, dtype=B.float64)
    dst.copy_(src)
    assert dst.grad_fn.name() == "CopyBackwards"  # PyTorch 2.13's name for copy_'s node
    (dst * 2).sum().backward()
    np.testing.assert_allclose(src.grad.numpy(), [2.0, 2.0, 2.0])


def test_gradcheck_catches_a_wrong_formula():
    class Wrong(B.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, g):
            return g  # should be 2 x g

    with pytest.raises(B.testing.GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        gradcheck(Wrong.apply, (rand(3),))
    assert gradcheck(Wrong.apply, (rand(3),), raise_exception=False) is False
