"""Python-level autograd behaviours as PyTorch's (issue 14): autograd.Function's ctx API and keyword inputs,
once_differentiable under create_graph, autograd.grad's allow_unused / materialize_grads / is_grads_batched,
autograd.graph's GradientEdge, get_gradient_edge, increment_version, register_multi_grad_hook, and version
counters."""
from __future__ import annotations

import numpy as np
import pytest

import backend_sdk as B
from backend_sdk.autograd import Function, once_differentiable
from backend_sdk.autograd.graph import GradientEdge, get_gradient_edge, increment_version, register_multi_grad_hook


def t(values, rg=False):
    return B.tensor(np.asarray(values, dtype=np.float64)).requires_grad_(rg)


# ---- Function: keyword inputs, setup_context, ctx flags ---------------------------------------------------
class ScaledMul(Function):
    @staticmethod
    def forward(x, y=None, scale=2.0):
        return x * y * scale

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.inputs_seen = inputs
        ctx.needs_seen = ctx.needs_input_grad
        x, y, scale = inputs
        ctx.save_for_backward(x, y)
        ctx.scale = scale

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * y * ctx.scale, g * x * ctx.scale, None


def test_setup_context_receives_keyword_inputs_and_defaults():
    x, y = t([1.0, 2.0], True), t([3.0, 4.0], True)
    out = ScaledMul.apply(x, y=y)
    ctx = out.grad_fn  # not the ctx; find it through the closure-free route below
    assert out.requires_grad and ctx is not None
    out.sum().backward()
    assert x.grad.tolist() == [6.0, 8.0]
    assert y.grad.tolist() == [2.0, 4.0]  # the keyword tensor was tracked and got its gradient


def test_setup_context_inputs_tuple_and_needs_input_grad():
    seen = {}

    class Spy(ScaledMul):
        @staticmethod
        def setup_context(ctx, inputs, output):
            seen["inputs"] = inputs
            seen["needs"] = ctx.needs_input_grad
            ScaledMul.setup_context(ctx, inputs, output)

    x, y = t([1.0], True), t([2.0])
    Spy.apply(x, y=y, scale=5.0)
    assert len(seen["inputs"]) == 3 and seen["inputs"][2] == 5.0 and seen["inputs"][1] is y
    assert seen["needs"] == (True, False, False)
    Spy.apply(x, y)
    assert seen["inputs"][2] == 2.0  # the default, bound as PyTorch binds it


def test_ctx_style_forward_tracks_keyword_tensors():
    seen = {}

    class Add(Function):
        @staticmethod
        def forward(ctx, x, y=None):
            seen["needs"] = ctx.needs_input_grad
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g, 2 * g

    x, y = t([1.0], True), t([1.0], True)
    Add.apply(x, y=y).sum().backward()
    assert seen["needs"] == (True, True)
    assert y.grad.tolist() == [2.0]


def test_apply_with_an_unknown_keyword_is_a_type_error():
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        ScaledMul.apply(t([1.0], True), z=1)


def test_save_for_forward_keeps_tensors_and_refuses_other_values():
    class F(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_forward(x)
            F.saved = ctx.saved_for_forward
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = t([1.0], True)
    F.apply(x)
    assert F.saved[0] is x

    class Bad(F):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_forward(x, 3)
            return x

    with pytest.raises(AssertionError, match="save_for_forward expects all arguments to be tensors"):
        Bad.apply(x)


def test_saved_variables_is_a_deprecated_alias():
    class F(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_variables
            return g * 2

    with pytest.warns(DeprecationWarning, match="'saved_variables' is deprecated; use 'saved_tensors'"):
        F.apply(t([1.0], True)).sum().backward()


class DoubleInPlace(Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_mark_dirty_returns_the_input_with_the_node_and_counts_the_write():
    leaf = t([1.0, 2.0], True)
    a = leaf.clone()
    v0 = a._version
    b = DoubleInPlace.apply(a)
    assert b is a and a.grad_fn.name() == "DoubleInPlaceBackward"
    assert a._version == v0 + 2  # the kernel's write and mark_dirty's, as PyTorch counts them
    a.sum().backward()
    assert leaf.grad.tolist() == [2.0, 2.0]


def test_mark_dirty_on_a_leaf_that_requires_grad_is_refused():
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used in an in-place "
                                           "operation."):
        DoubleInPlace.apply(t([1.0], True))


class TwoOut(Function):
    materialize_non_diff = True

    @staticmethod
    def forward(ctx, x):
        a, b = x.clone(), x.clone()
        ctx.mark_non_differentiable(b)
        ctx._materialize_non_diff_grads = TwoOut.materialize_non_diff
        return a, b

    @staticmethod
    def backward(ctx, ga, gb):
        TwoOut.seen = gb
        return ga


def test_non_differentiable_output_and_materialize_non_diff_grads():
    x = t([1.0, 2.0], True)
    a, b = TwoOut.apply(x)
    assert a.requires_grad and not b.requires_grad
    a.sum().backward()
    assert TwoOut.seen is not None and TwoOut.seen.tolist() == [0.0, 0.0]  # materialized by default
    TwoOut.materialize_non_diff = False
    try:
        TwoOut.apply(x)[0].sum().backward()
        assert TwoOut.seen is None
    finally:
        TwoOut.materialize_non_diff = True


def test_set_materialize_grads_false_gives_none_for_unused_outputs():
    class F(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x.clone(), x.clone()

        @staticmethod
        def backward(ctx, g0, g1):
            F.seen = (g0, g1)
            return g0

    x = t([1.0], True)
    F.apply(x)[0].sum().backward()
    assert F.seen[0] is not None and F.seen[1] is None


class OnceMul(Function):
    @staticmethod
    def forward(ctx, x, k, y):
        ctx.save_for_backward(x, y)
        ctx.k = k
        return x * y * k

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        assert not B.is_grad_enabled()
        x, y = ctx.saved_tensors
        return g * y * ctx.k, None, g * x * ctx.k


def test_once_differentiable_under_create_graph_hangs_grads_from_an_error_node():
    x, y = t([1.0, 2.0], True), t([3.0, 4.0], True)
    go = B.ones((), dtype=B.float64).requires_grad_()
    OnceMul.apply(x, 2, y).sum().backward(go, create_graph=True)
    assert x.grad.tolist() == [6.0, 8.0]
    fn = x.grad.grad_fn
    assert fn is not None and fn.name() == "Error"
    # PyTorch's graph: Error(AccumulateGrad(), None, AccumulateGrad()), one edge per gradient of backward
    assert [type(n).__name__ if n is not None else None for n, _ in fn.next_functions] == [
        "AccumulateGrad", None, "AccumulateGrad"]
    with pytest.raises(RuntimeError, match="trying to differentiate twice a function that was marked with "
                                           "@once_differentiable"):
        x.grad.sum().backward()


def test_once_differentiable_without_create_graph_leaves_plain_grads():
    x, y = t([1.0], True), t([3.0], True)
    OnceMul.apply(x, 2, y).sum().backward()
    assert x.grad.grad_fn is None and x.grad.tolist() == [6.0]


# ---- autograd.grad arguments ----------------------------------------------------------------------------
def test_allow_unused_and_materialize_grads():
    x, y = t([1.0, 2.0], True), t([5.0], True)
    z = (x * x).sum()
    with pytest.raises(RuntimeError, match="Set allow_unused=True if this is the desired behavior"):
        B.autograd.grad(z, (x, y), retain_graph=True)
    gx, gy = B.autograd.grad(z, (x, y), allow_unused=True, retain_graph=True)
    assert gy is None and gx.tolist() == [2.0, 4.0]
    gx, gy = B.autograd.grad(z, (x, y), materialize_grads=True)  # allow_unused implied
    assert gy.tolist() == [0.0] and not gy.requires_grad
    with pytest.raises(ValueError, match="Expected allow_unused to be True or not passed when materialize_grads"):
        B.autograd.grad(z, x, allow_unused=False, materialize_grads=True)


def test_grad_with_empty_inputs_is_pytorch_213s_error():
    x = t([1.0], True)
    with pytest.raises(RuntimeError, match=r"`inputs` argument to `grad\(\)` cannot be empty."):
        B.autograd.grad(2 * x, [], grad_outputs=t([1.0]))


def test_is_grads_batched_gives_one_gradient_per_batch_entry():
    x = t([[1.0, 2.0], [3.0, 4.0]], True)
    out = x * x
    batch = B.stack([B.ones(2, 2, dtype=B.float64), 2 * B.ones(2, 2, dtype=B.float64),
                     B.zeros(2, 2, dtype=B.float64)])
    (g,) = B.autograd.grad(out, x, batch, is_grads_batched=True)
    assert tuple(g.shape) == (3, 2, 2)
    xs = np.array([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(g.numpy(), np.stack([2 * xs, 4 * xs, 0 * xs]))
    with pytest.raises(RuntimeError, match="If `is_grads_batched=True`, we interpret the first dimension"):
        B.autograd.grad(x * 2, x, B.ones(2, 2, dtype=B.float64), is_grads_batched=True)


# ---- graph API ------------------------------------------------------------------------------------------
def test_get_gradient_edge_of_leaf_and_non_leaf():
    x = t([1.0, 2.0], True)
    e = get_gradient_edge(x)
    assert isinstance(e, GradientEdge) and e.node.name().endswith("AccumulateGrad") and e.output_nr == 0
    y = x * 2
    e = get_gradient_edge(y)
    assert e.node is y.grad_fn and e.output_nr == y.output_nr
    with pytest.raises(RuntimeError, match="It is not possible to get the gradient edge for a Tensor that does not "
                                           "require gradients"):
        get_gradient_edge(t([1.0]))


def test_grad_to_an_edge_equals_grad_to_the_tensor_and_sees_the_old_value():
    x = t([1.0, 2.0], True).clone()
    edge = get_gradient_edge(x)
    x *= 3  # x now has a new grad_fn; the edge still names the old one
    g_old, g_new = B.autograd.grad(x.sum(), (edge, x))
    assert g_old.tolist() == [3.0, 3.0] and g_new.tolist() == [1.0, 1.0]


def test_edge_as_output_of_grad_and_backward():
    x = t([1.0, 2.0], True)
    tmp = (x * x).sum()
    out = (tmp * 3).exp()
    edge = get_gradient_edge(tmp)
    (g_tmp,) = B.autograd.grad(out, edge, retain_graph=True)
    (gx,) = B.autograd.grad(edge, x, grad_outputs=g_tmp, retain_graph=True)
    (ref,) = B.autograd.grad(out, x, retain_graph=True)
    np.testing.assert_allclose(gx.numpy(), ref.numpy())
    B.autograd.backward(edge, retain_graph=True)  # an implicit gradient of 1 for a scalar edge
    assert x.grad.tolist() == [2.0, 4.0]
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        B.autograd.grad(edge, x, grad_outputs=t([1.0, 2.0]))


def test_materialize_grads_refuses_only_an_unused_edge_input():
    x, y = t([1.0], True).clone(), t([2.0], True).clone()
    edge_x, edge_y = get_gradient_edge(x), get_gradient_edge(y)
    out = x * 3
    gx, gy = B.autograd.grad(out.sum(), (edge_x, y), materialize_grads=True, retain_graph=True)
    assert gx.tolist() == [3.0] and gy.tolist() == [0.0]  # a used edge and a materialized tensor: fine
    with pytest.raises(RuntimeError, match="materialize_grads cannot be used when the given input is a GradientEdge"):
        B.autograd.grad(out.sum(), (x, edge_y), allow_unused=True, materialize_grads=True)


def test_materialized_zeros_require_grad_under_create_graph():
    x, a = B.tensor(0.5, dtype=B.float64).requires_grad_(), B.tensor(1.0, dtype=B.float64).requires_grad_()
    (d,) = B.autograd.grad(x * a, x, create_graph=True)
    (d2,) = B.autograd.grad(d, x, create_graph=True, materialize_grads=True)
    assert d2.item() == 0.0 and d2.requires_grad and d2.grad_fn is None
    (d3,) = B.autograd.grad(d2, x, materialize_grads=True)  # differentiable again, as PyTorch's
    assert d3.item() == 0.0


def test_backward_inputs_may_be_edges():
    leaf = t([1.0, 2.0], True)
    x = leaf * 1
    B.autograd.backward((x * 2).sum(), inputs=(get_gradient_edge(leaf),))
    assert leaf.grad.tolist() == [2.0, 2.0]


def test_increment_version_tensor_and_list():
    a, b = B.zeros(2), B.zeros(3)
    va, vb = a._version, b._version
    increment_version(a)
    increment_version([a, b])
    assert (a._version, b._version) == (va + 2, vb + 1)
    with pytest.raises(TypeError, match="increment_version"):
        increment_version([a, 3])


def test_increment_version_invalidates_saved_tensors():
    x = t([1.0, 2.0], True)
    a = x * 1
    y = (a * a).sum()  # saves a
    increment_version(a)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_multi_grad_hook_all_mode_waits_for_the_tensors_that_run():
    a, b = t([1.0, 2.0], True), t([3.0, 4.0], True)
    c = a * b
    d = a * b
    calls = []
    h = register_multi_grad_hook((a, b, c, d), lambda grads: calls.append([g is not None for g in grads]))
    c.sum().backward(retain_graph=True)
    assert calls == [[True, True, True, False]]
    c.sum().backward(inputs=(a,), retain_graph=True)
    assert calls[-1] == [True, False, True, False]
    h.remove()
    c.sum().backward(retain_graph=True)
    assert len(calls) == 2


def test_multi_grad_hook_any_mode_runs_once_per_backward_with_the_first_grad():
    a, b = t([1.0], True), t([2.0], True)
    got = []
    register_multi_grad_hook((a, b), lambda g: got.append(g.tolist()), mode="any")
    (a * 3 + b * 5).sum().backward()
    assert len(got) == 1 and got[0] in ([3.0], [5.0])
    (a * 3).sum().backward()
    assert len(got) == 2 and got[1] == [3.0]


def test_multi_grad_hook_mode_is_checked():
    with pytest.raises(ValueError, match=r"Expects mode to be one of \('all', 'any'\) but got both"):
        register_multi_grad_hook((t([1.0], True),), print, mode="both")


def test_will_engine_execute_node_outside_backward_is_refused():
    from backend_sdk.autograd._graph_api import _current_graph_task_id, _will_engine_execute_node

    assert _current_graph_task_id() == -1
    x = t([1.0], True) * 2
    with pytest.raises(RuntimeError, match="during the backward pass"):
        _will_engine_execute_node(x.grad_fn)


# ---- version counters -----------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda: B.ones(3), lambda: B.zeros(2, 2), lambda: B.full((2,), 7.0), lambda: B.empty(3),
    lambda: B.tensor([1.0, 2.0]), lambda: B.arange(4), lambda: B.randn(3), lambda: B.rand(3),
    lambda: B.ones_like(B.empty(2)), lambda: B.zeros_like(B.empty(2)), lambda: B.full_like(B.empty(2), 3.0),
    lambda: B.ones(3, requires_grad=True),
], ids=["ones", "zeros", "full", "empty", "tensor", "arange", "randn", "rand", "ones_like", "zeros_like",
        "full_like", "ones_requires_grad"])
def test_fresh_factory_tensor_is_at_version_zero(make):
    assert make()._version == 0


def test_each_inplace_write_adds_one_and_views_share_the_counter():
    a = B.ones(4)
    assert a._version == 0
    a.add_(1)
    assert a._version == 1
    v = a[1:3]
    assert v._version == 1
    v.mul_(2)
    assert a._version == 2 and v._version == 2
    a.fill_(0)
    assert v._version == 3
    b = a.clone()  # a new tensor, its own counter
    assert b._version == 0
