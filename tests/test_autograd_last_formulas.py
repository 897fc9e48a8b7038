"""Issue 14: the last Python formulas moved to the C++ table (csrc/backend_sdk/autograd/derivatives.def):
the Tensor[] returns unbind / split / split_with_sizes / chunk (recorded in C++, a _CppNode, their views
refusing in-place writes as PyTorch's MULTI_OUTPUT_NODE views), copy_ (CopyBackwards), the in-place
samplers (their own entries: Note [In-place entries in the formula table]) and the operators PyTorch does
not differentiate (Note [Operators that are not differentiable]); views of views keep their creation meta.
Node names, gradients and messages are PyTorch 2.13's (checked side by side)."""
from __future__ import annotations

import numpy as np
import pytest

import backend_sdk as B
from backend_sdk import _C
from backend_sdk.autograd import _formulas, _record
from backend_sdk.testing import gradcheck, gradgradcheck

ops = B.ops.aten
rng = np.random.default_rng(1414)


def rand(*shape):
    return B.tensor(rng.uniform(-1.0, 1.0, size=shape), dtype=B.float64).requires_grad_()


LIST_OPS = {
    "unbind": (lambda x: x.unbind(1), "UnbindBackward0"),
    "unbind_negative_dim": (lambda x: B.unbind(x, -1), "UnbindBackward0"),
    "split": (lambda x: x.split(2), "SplitBackward0"),
    "split_dim1": (lambda x: B.split(x, 2, dim=1), "SplitBackward0"),
    "split_with_sizes": (lambda x: x.split([1, 3]), "SplitWithSizesBackward0"),
    "chunk": (lambda x: x.chunk(2, 1), "SplitBackward0"),
}


@pytest.mark.parametrize("name", sorted(LIST_OPS))
def test_tensor_list_returns_are_recorded_in_cpp(name):
    fn, node = LIST_OPS[name]
    outs = fn(rand(4, 3))
    assert {o.grad_fn.name() for o in outs} == {node}
    assert len({id(o.grad_fn) for o in outs}) == 1  # one node, output i per element
    assert [o.output_nr for o in outs] == list(range(len(outs)))
    assert type(outs[0].grad_fn) is _C._CppNode  # not the Python hook's FormulaNode


@pytest.mark.parametrize("name", sorted(LIST_OPS))
def test_tensor_list_returns_gradients_and_double_backward(name):
    fn, _ = LIST_OPS[name]

    def weighted(x):  # every output, each weighted differently, so a misrouted gradient shows
        return sum((o * (i + 1)).sum() * o.sum() for i, o in enumerate(fn(x)))

    x = rand(4, 3)
    assert gradcheck(weighted, (x,))
    assert gradgradcheck(weighted, (x,))


def test_unbind_gradient_is_zeros_where_no_output_was_used():
    x = rand(3, 2)
    x.unbind(0)[1].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0], [1, 1], [0, 0]])


MULTI_VIEW = ("Output {} of {} is a view and is being modified inplace. This view is the output of a function "
              "that returns multiple views.")


@pytest.mark.parametrize("fn, nr, name", [
    (lambda y: y.unbind(0)[2], 2, "Unbind"),
    (lambda y: y.split(2)[1], 1, "Split"),
    (lambda y: y.split([1, 3])[0], 0, "SplitWithSizes"),
    (lambda y: y.unbind(0)[0][1:], 0, "Slice"),  # a view of such a view (PyTorch propagates the meta)
])
def test_in_place_into_a_multi_output_view_raises_pytorchs_error(fn, nr, name):
    y = rand(4, 3) * 1
    v = fn(y)
    with pytest.raises(RuntimeError, match=MULTI_VIEW.format(nr, name).replace("(", r"\(").replace(")", r"\)")):
        v.mul_(2)


def test_multi_output_views_made_under_no_grad_keep_the_no_grad_message():
    y = rand(4, 3) * 1
    with B.no_grad():
        u = y.unbind(0)
    with pytest.raises(RuntimeError, match="^A view was created in no_grad mode"):
        u[0].mul_(2)


@pytest.mark.parametrize("mode, words", [(B.no_grad, "in no_grad mode"), (B.inference_mode, "in inference mode")])
def test_a_recorded_view_of_a_no_grad_view_refuses_in_place_writes(mode, words):
    y = rand(4, 3) * 1
    with mode():
        v = y[1:]
    w = v[:2]
    assert w.grad_fn.name() == "SliceBackward0"
    with pytest.raises(RuntimeError, match=f"^Output 0 of Slice is a view of a view which was created {words}"):
        w.mul_(2)


def test_copy_in_place_runs_the_cpp_formula():
    src = rand(3)
    dst = B.zeros(3, dtype=B.float32)
    dst.copy_(src)
    assert dst.grad_fn.name() == "CopyBackwards"
    assert _record.op_info(ops.copy_.default).formula.node_name == "CopyBackwards"
    (dst * B.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert src.grad.dtype == B.float64  # cast back to src's dtype
    np.testing.assert_allclose(src.grad.numpy(), [1.0, 2.0, 3.0])


def test_copy_in_place_gives_the_overwritten_history_zeros_and_broadcasts_src():
    x, src = rand(2, 3), rand(3)
    y = x * 2
    y.copy_(src)
    (y * y).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((2, 3)))
    np.testing.assert_allclose(src.grad.numpy(), 4 * src.detach().numpy())  # two rows, 2 * value each


def test_copy_into_a_view_rebases_the_base():
    x, src = rand(4), rand(2)
    base = x * 1
    base[1:3].copy_(src)
    assert base.grad_fn.name() == "backend_sdk::autograd::CopySlices"
    (base * B.tensor([1.0, 2.0, 3.0, 4.0], dtype=B.float64)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 0.0, 0.0, 4.0])
    np.testing.assert_allclose(src.grad.numpy(), [2.0, 3.0])


SAMPLERS = [
    (lambda z, x: z.uniform_(), "UniformBackward0"),
    (lambda z, x: z.normal_(), "NormalBackward0"),
    (lambda z, x: z.exponential_(), "ExponentialBackward0"),
    (lambda z, x: z.bernoulli_(0.5), "BernoulliBackward2"),
    (lambda z, x: z.bernoulli_(x), "BernoulliBackward1"),
    (lambda z, x: z.random_(1, 5), "RandomBackward0"),
    (lambda z, x: z.random_(5), "RandomBackward1"),
    (lambda z, x: z.random_(), "RandomBackward2"),
]


@pytest.mark.parametrize("fn, name", SAMPLERS, ids=[n + str(i) for i, (_, n) in enumerate(SAMPLERS)])
def test_in_place_samplers_have_pytorchs_nodes_and_zero_gradients(fn, name):
    x = B.tensor([0.2, 0.5, 0.7], dtype=B.float64).requires_grad_()
    p = B.tensor([0.1, 0.9, 0.4], dtype=B.float64).requires_grad_()
    z = fn(x * 1, p)
    assert z.grad_fn.name() == name
    (z * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(3))
    if name == "BernoulliBackward1":
        np.testing.assert_array_equal(p.grad.numpy(), np.zeros(3))  # derivatives.yaml: p: zeros_like(p)


def test_bernoulli_p_has_no_derivative_as_in_pytorch():
    x = B.tensor([0.2, 0.5], dtype=B.float64).requires_grad_()
    y = B.bernoulli(x, 0.5)  # aten::bernoulli.p: not in derivatives.yaml (PyTorch: NotImplemented)
    with pytest.raises(RuntimeError, match="derivative for 'aten::bernoulli.p' is not implemented"):
        y.sum().backward()


@pytest.mark.parametrize("fn", [
    B.rand_like, B.randn_like, lambda x: B.randint_like(x, 5), lambda x: B.randint_like(x, 1, 5),
    lambda x: x.new_zeros(2), lambda x: x.new_ones(2), lambda x: x.new_full((2,), 3.0), lambda x: x.new_empty(2),
    lambda x: ops.detach(x),
])
def test_not_differentiable_operators_run_below_autograd_in_cpp(fn):
    y = fn(rand(3))
    assert not y.requires_grad and y.grad_fn is None


def test_the_not_differentiable_list_is_the_tables():
    names = set(_C._autograd_not_differentiable_ops())
    assert {"aten::rand_like", "aten::randn_like", "aten::randint_like", "aten::new_zeros", "aten::detach"} <= names
    assert _formulas.NOT_DIFFERENTIABLE == frozenset(names)
    assert not names & set(_formulas.FORMULAS)
