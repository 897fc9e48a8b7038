"""In-place writes into views of views (issue 14, PyTorch 2.13's behaviour checked side by side): the base's
history becomes CopySlices, and every other view of the base whose history is stale after the write is
regenerated as an AsStridedBackward0 of the base's new history when it is next read (Note [View grad_fn
regeneration], csrc/backend_sdk/autograd/Node.cpp), so using an intermediate view after the write gives the
right gradients."""
from __future__ import annotations

import numpy as np
import pytest

import backend_sdk as B
from backend_sdk.testing import gradcheck, gradgradcheck

rng = np.random.default_rng(77)
X, Y, W = rng.standard_normal((5, 3)), rng.standard_normal((2, 3)), rng.standard_normal((5, 3))


def leaf(a):
    return B.tensor(a, dtype=B.float64).requires_grad_()


def written_view_of_view():
    """base = x.clone(); v = base[1:]; w = v[:2]; w.mul_(y): the in-place write into a view of a view."""
    x, y = leaf(X), leaf(Y)
    base = x.clone()
    v = base[1:]
    w = v[:2]
    w.mul_(y)
    return x, y, base, v, w


def test_the_briefs_case_names_and_gradients():
    x, y, base, v, w = written_view_of_view()
    assert [base.grad_fn.name(), v.grad_fn.name(), w.grad_fn.name()] == [
        "backend_sdk::autograd::CopySlices", "AsStridedBackward0", "AsStridedBackward0"]  # PyTorch: torch::autograd::
    (base * B.tensor(W, dtype=B.float64)).sum().backward()
    expected = W.copy()
    expected[1:3] *= Y
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-14)
    np.testing.assert_allclose(y.grad.numpy(), W[1:3] * X[1:3], rtol=1e-14)


def test_an_intermediate_view_used_after_the_write_sees_it():
    x, y, base, v, w = written_view_of_view()
    ((base * B.tensor(W, dtype=B.float64)).sum() + (v * 2).sum()).backward()
    expected = W + 2
    expected[0] = W[0]
    expected[1:3] *= Y
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-14)
    np.testing.assert_allclose(y.grad.numpy(), (W[1:3] + 2) * X[1:3], rtol=1e-14)


def test_a_view_taken_before_an_in_place_write_into_its_base():
    x = leaf(X)
    base = x * 1
    v = base[1:3]
    base.mul_(3)
    assert v.grad_fn.name() == "AsStridedBackward0"
    (v * v).sum().backward()
    expected = np.zeros_like(X)
    expected[1:3] = 18 * X[1:3]
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-14)


def test_a_view_of_a_leaf_after_a_no_grad_write():
    p = leaf(X)
    v = p[0]
    with B.no_grad():
        p.add_(1.0)  # an optimizer step
    assert v.grad_fn.name() == "AsStridedBackward0"
    (v * 2).sum().backward()
    expected = np.zeros_like(X)
    expected[0] = 2
    np.testing.assert_array_equal(p.grad.numpy(), expected)


def test_an_unchanged_view_keeps_its_node():
    base = leaf(X) * 1
    v = base[1:]
    first = v.grad_fn
    assert first.name() == "SliceBackward0"
    assert v.grad_fn is first
    v.mul_(2)  # the view's own write rebases it once; reading again gives the same node
    assert v.grad_fn is v.grad_fn


@pytest.mark.parametrize("case", ["slice_slice", "transpose_select", "view_slice", "strided"])
def test_views_of_views_are_twice_differentiable(case):
    def f(x, y):
        base = x * 1
        if case == "slice_slice":
            v = base[1:]
            w = v[:2]
            w.mul_(y)
        elif case == "transpose_select":
            v = base.t()
            w = v[1]
            w.mul_(y[0, :1].sum() + y.sum(0)[:1])
        elif case == "view_slice":
            v = base.view(15)
            w = v[2:8]
            w.mul_(y.reshape(6))
        else:
            v = base[::2]
            w = v[1:]
            w.mul_(y[:1])
        return (base ** 2).sum() + (v * v * v).sum()

    inputs = (leaf(X), leaf(Y))
    assert gradcheck(f, inputs)
    assert gradgradcheck(f, inputs)


def test_a_view_of_a_base_outside_autograd_joins_once_the_base_has_a_history():
    # The base takes no part in autograd when v is taken; the write into w (another view) gives it a
    # CopySlices history, and v's gradient must reach y through it (PyTorch: AsStridedBackward0).
    y = leaf(Y)
    base = B.zeros(5, 3, dtype=B.float64) + 1
    v = base[1:]
    w = v[:2]
    assert v.grad_fn is None and not v.requires_grad
    w.mul_(y)
    assert v.requires_grad and v.grad_fn.name() == "AsStridedBackward0"
    (v * v).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), 2 * Y, rtol=1e-14)  # v[:2] = y there: d(y^2)/dy


REBASED = "and its base or another view of its base has been modified inplace"


def test_a_no_grad_view_of_a_written_base_refuses_to_give_a_history():
    # PyTorch's handle_view_on_rebase: it cannot be regenerated (it was not recorded), so reading its
    # history, or computing with it in grad mode, raises; an in-place write into it keeps its own message.
    x, w = leaf(X), leaf(Y[0])
    with B.no_grad():
        v = x[1:]
        x.add_(1.0)  # an optimizer step
    with pytest.raises(RuntimeError, match=f"^A view was created in no_grad mode {REBASED} with grad mode enabled"):
        (v * w).sum()
    base = leaf(X) * 1
    with B.no_grad():
        v = base[1:]
    u = v[:2]  # recorded: a view of the no_grad view
    base.mul_(2)
    with pytest.raises(RuntimeError, match=f"^A view was created in no_grad mode {REBASED}"):
        v.grad_fn
    with pytest.raises(RuntimeError, match=f"^Output 0 of Slice is a view of a view which was created in no_grad "
                                           f"mode {REBASED}"):
        u.grad_fn
    with pytest.raises(RuntimeError, match="^A view was created in no_grad mode and is being modified inplace"):
        v.mul_(2)


def test_an_inference_mode_view_of_a_written_base_refuses_too():
    base = leaf(X) * 1
    with B.inference_mode():
        v = base[1:]
    base.mul_(2)
    with pytest.raises(RuntimeError, match=f"^A view was created in inference mode {REBASED} in normal mode"):
        v.grad_fn


def test_a_no_grad_view_of_a_tensor_outside_autograd_is_fine():
    d = B.ones(5, 3, dtype=B.float64)
    w = leaf(Y[0])
    with B.no_grad():
        v = d[1:]
    d.add_(1.0)
    assert (v * w).sum().grad_fn.name() == "SumBackward0"
