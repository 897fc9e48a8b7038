"""backend_sdk.autograd.Function: both styles, ctx API, errors."""
from __future__ import annotations

import numpy as np
import pytest

import backend_sdk as B
from backend_sdk.autograd import Function
from backend_sdk.testing import gradcheck


def leaf(values):
    return B.tensor(np.asarray(values, dtype=np.float64), dtype=B.float64).requires_grad_()


class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


class ScaledMul(Function):
    """PyTorch 2 style: forward without ctx, setup_context separate; a non-tensor argument."""

    @staticmethod
    def forward(x, y, scale):
        return x * y * scale

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, y, scale = inputs
        ctx.save_for_backward(x, y)
        ctx.scale = scale

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        gx = g * y * ctx.scale if ctx.needs_input_grad[0] else None
        gy = g * x * ctx.scale if ctx.needs_input_grad[1] else None
        return gx, gy, None


def test_function_forward_backward_and_node():
    x = leaf([0.5, 1.0])
    y = Exp.apply(x)
    assert y.requires_grad and y.grad_fn.name() == "ExpBackward"
    assert y.grad_fn.next_functions[0][0].variable is x
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.5, 1.0]))
    assert gradcheck(Exp.apply, (leaf([0.1, -0.3]),))


def test_setup_context_style_and_needs_input_grad():
    x, y = leaf([1.0, 2.0]), B.tensor([3.0, 4.0], dtype=B.float64)
    seen = {}

    class Probe(ScaledMul):
        @staticmethod
        def backward(ctx, g):
            seen["needs"] = ctx.needs_input_grad
            return ScaledMul.backward(ctx, g)

    out = Probe.apply(x, y, 2.0)
    out.sum().backward()
    assert seen["needs"] == (True, False, False)
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 8.0])
    assert gradcheck(lambda a, b: ScaledMul.apply(a, b, 0.5), (leaf([1.0, 2.0]), leaf([0.5, -1.0])))


def test_function_without_grad_inputs_records_nothing():
    y = Exp.apply(B.tensor([1.0], dtype=B.float64))
    assert not y.requires_grad and y.grad_fn is None
    with B.no_grad():
        assert Exp.apply(leaf([1.0])).grad_fn is None


def test_saved_tensor_modified_in_place_is_detected():
    x = leaf([1.0])
    y = Exp.apply(x)
    with B.no_grad():
        y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_saved_tensors_freed_after_backward():
    x = leaf([1.0])
    y = Exp.apply(x)
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_mark_non_differentiable():
    class SortLike(Function):
        @staticmethod
        def forward(ctx, x):
            idx = B.tensor([1, 0])
            out = x.flip([0])
            ctx.mark_non_differentiable(idx)
            return out, idx

        @staticmethod
        def backward(ctx, g, gidx):
            assert gidx is None or float(gidx.abs().sum()) == 0
            return g.flip([0])

    x = leaf([1.0, 2.0])
    out, idx = SortLike.apply(x)
    assert out.requires_grad and not idx.requires_grad
    (out * B.tensor([1.0, 3.0], dtype=B.float64)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 1.0])


def test_mark_dirty_in_place_function():
    class AddOneInPlace(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    x = leaf([1.0])
    a = x * 2
    out = AddOneInPlace.apply(a)
    assert out is a and a.grad_fn.name() == "AddOneInPlaceBackward"
    (out * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0])
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used in an in-place"):
        AddOneInPlace.apply(leaf([1.0]))


def test_set_materialize_grads():
    received = {}

    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 1, x * 2

        @staticmethod
        def backward(ctx, g1, g2):
            received["g2"] = g2
            return g1

    x = leaf([1.0])
    a, b = Two.apply(x)
    a.sum().backward()
    assert received["g2"] is None


def test_wrong_number_of_gradients():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match=r"function BadBackward returned an incorrect number of gradients "
                                           r"\(expected 2, got 1\)"):
        Bad.apply(leaf([1.0]), leaf([1.0])).backward()


def test_double_backward_through_function():
    class Cube(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x * x

    x = leaf([2.0])
    (g,) = B.autograd.grad(Cube.apply(x), x, create_graph=True)
    (gg,) = B.autograd.grad(g, x)
    np.testing.assert_allclose(gg.numpy(), [12.0])
