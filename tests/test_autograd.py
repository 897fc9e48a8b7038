"""Autograd: graph semantics, Tensor API, grad mode, errors, version counters."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import backend_sdk as B
from backend_sdk import _C
from backend_sdk.testing import assert_close


def leaf(values, dtype=B.float64):
    return B.tensor(np.asarray(values, dtype=np.float64), dtype=dtype).requires_grad_()


def np_of(t):
    return t.detach().numpy()


# ---- basics -------------------------------------------------------------------------------
def test_simple_backward_matches_hand_derivative():
    x = leaf([1.0, 2.0, 3.0])
    y = (x * x + 3 * x).sum()
    y.backward()
    np.testing.assert_allclose(np_of(x.grad), 2 * np.array([1, 2, 3.0]) + 3)


def test_requires_grad_flags_and_leaves():
    x = B.ones(3)
    assert not x.requires_grad and x.is_leaf and x.grad_fn is None
    x.requires_grad_()
    assert x.requires_grad and x.is_leaf
    y = x * 2
    assert y.requires_grad and not y.is_leaf
    assert y.grad_fn.name() == "MulBackward0"
    (acc, nr), = [e for e in y.grad_fn.next_functions if e[0] is not None]
    assert acc.name() == "backend_sdk::autograd::AccumulateGrad" and acc.variable is x and nr == 0
    w = x + B.ones(3)  # an input that does not require grad is a (None, 0) edge, as in PyTorch
    assert w.grad_fn.next_functions == ((acc, 0), (None, 0))
    z = B.ones(3)
    assert not (z + 1).requires_grad and (z + 1).grad_fn is None
    x.requires_grad = False
    assert not x.requires_grad


def test_requires_grad_on_integer_tensor_is_refused():
    with pytest.raises(RuntimeError, match="only Tensors of floating point and complex dtype can require gradients"):
        B.tensor([1, 2]).requires_grad_()


def test_factories_take_requires_grad():
    assert B.zeros(2, requires_grad=True).requires_grad
    assert B.ones(2, requires_grad=True).is_leaf
    assert B.tensor([1.0], requires_grad=True).requires_grad
    assert not B.tensor(leaf([1.0])).requires_grad  # tensor(t) copies without history


def test_cannot_clear_requires_grad_of_non_leaf():
    y = leaf([1.0]) * 2
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        y.requires_grad_(False)


def test_grad_accumulates_and_can_be_reset():
    x = leaf([1.0, 2.0])
    (x * 3).sum().backward()
    (x * 3).sum().backward()
    np.testing.assert_allclose(np_of(x.grad), [6.0, 6.0])
    x.grad = None
    assert x.grad is None
    with pytest.raises(RuntimeError, match="assigned grad has data of a different size"):
        x.grad = B.zeros(3, dtype=B.float64)


def test_backward_errors():
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
        B.ones(1).backward()
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (leaf([1.0, 2.0]) * 2).backward()
    y = leaf([1.0, 2.0]) * 2
    with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_output\[0\] has a shape of"):
        y.backward(B.ones(3, dtype=B.float64))


def test_second_backward_raises_and_retain_graph_allows_it():
    x = leaf([2.0])
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(np_of(x.grad), [8.0])
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_gradient_argument_weights_backward():
    x = leaf([1.0, 2.0])
    (x * x).backward(B.tensor([1.0, 10.0], dtype=B.float64))
    np.testing.assert_allclose(np_of(x.grad), [2.0, 40.0])


def test_shared_subexpression_accumulates_along_both_paths():
    x = leaf([3.0])
    a = x * 2
    y = (a * a + a).sum()  # dy/dx = (2a + 1) * 2
    y.backward()
    np.testing.assert_allclose(np_of(x.grad), [(2 * 6 + 1) * 2])


def test_detach_shares_data_and_drops_history():
    x = leaf([1.0, 2.0])
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.is_leaf and d.data_ptr() == y.data_ptr()
    y.detach_()
    assert not y.requires_grad and y.grad_fn is None


def test_retain_grad_and_hooks():
    x = leaf([1.0, 2.0])
    y = x * 3
    y.retain_grad()
    assert y.retains_grad
    seen = []
    y.register_hook(lambda g: seen.append(np_of(g).copy()))
    x.register_hook(lambda g: g * 10)
    (y * y).sum().backward()
    np.testing.assert_allclose(np_of(y.grad), 2 * np.array([3.0, 6.0]))
    np.testing.assert_allclose(seen[0], [6.0, 12.0])
    np.testing.assert_allclose(np_of(x.grad), 10 * 3 * 2 * np.array([3.0, 6.0]))
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
        B.ones(1).retain_grad()
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        B.ones(1).register_hook(lambda g: g)


def test_non_leaf_grad_access_warns():
    y = leaf([1.0]) * 2
    with pytest.warns(UserWarning, match="not a leaf Tensor"):
        assert y.grad is None


# ---- autograd.grad ------------------------------------------------------------------------
def test_autograd_grad_does_not_accumulate():
    x = leaf([1.0, 2.0])
    y = (x ** 3).sum()
    (g,) = B.autograd.grad(y, x)
    np.testing.assert_allclose(np_of(g), 3 * np.array([1.0, 4.0]))
    assert x.grad is None


def test_autograd_grad_allow_unused_and_errors():
    x, z = leaf([1.0]), leaf([2.0])
    y = (x * 2).sum()
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        B.autograd.grad(y, [x, z], retain_graph=True)
    gx, gz = B.autograd.grad(y, [x, z], allow_unused=True, retain_graph=True)
    assert gz is None and np_of(gx)[0] == 2.0
    gx, gz = B.autograd.grad(y, [x, z], materialize_grads=True, retain_graph=True)
    assert np_of(gz)[0] == 0.0
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors does not require grad"):
        B.autograd.grad(y, [B.ones(1)])


def test_autograd_grad_wrt_intermediate():
    x = leaf([1.0, 2.0])
    h = x * 2
    y = (h * h).sum()
    (gh,) = B.autograd.grad(y, h)
    np.testing.assert_allclose(np_of(gh), 2 * np_of(h))


def test_create_graph_second_derivative():
    x = leaf([1.5, -2.0])
    y = (x ** 3).sum()
    (g,) = B.autograd.grad(y, x, create_graph=True)
    assert g.requires_grad
    (gg,) = B.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(np_of(gg), 6 * np.array([1.5, -2.0]))


def test_backward_with_inputs_only_fills_those():
    x, z = leaf([1.0]), leaf([2.0])
    (x * z).sum().backward(inputs=[x])
    assert np_of(x.grad)[0] == 2.0 and z.grad is None


# ---- grad mode ------------------------------------------------------------------------------
def test_no_grad_context_and_decorator():
    x = leaf([1.0])
    with B.no_grad():
        assert not B.is_grad_enabled()
        y = x * 2
        with B.enable_grad():
            assert (x * 2).requires_grad
    assert not y.requires_grad and y.grad_fn is None
    assert B.is_grad_enabled()

    @B.no_grad()
    def f(t):
        return t * 2

    @B.no_grad
    def f2(t):
        return t * 2

    assert not f(x).requires_grad and not f2(x).requires_grad and B.is_grad_enabled()


def test_set_grad_enabled_function_and_context():
    x = leaf([1.0])
    with B.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert B.is_grad_enabled()
    B.set_grad_enabled(False)
    try:
        assert not B.is_grad_enabled()
    finally:
        B.set_grad_enabled(True)
    assert B.is_grad_enabled()


def test_grad_mode_is_thread_local():
    x = leaf([1.0])
    results = {}
    started, release = threading.Event(), threading.Event()

    def worker():
        with B.no_grad():
            started.set()
            release.wait(5)
            results["worker"] = (x * 2).requires_grad

    t = threading.Thread(target=worker)
    t.start()
    started.wait(5)
    results["main"] = (x * 2).requires_grad  # the worker's no_grad does not reach this thread
    release.set()
    t.join()
    assert results == {"main": True, "worker": False}

    def fresh():
        results["fresh"] = B.is_grad_enabled()

    with B.no_grad():
        t = threading.Thread(target=fresh)
        t.start()
        t.join()
    assert results["fresh"] is True


def test_no_grad_lets_optimizer_update_leaves_in_place():
    w = leaf([1.0, 2.0])
    (w * w).sum().backward()
    with B.no_grad():
        w -= 0.1 * w.grad
    np.testing.assert_allclose(np_of(w), [0.8, 1.6])
    assert w.is_leaf and w.requires_grad


# ---- in-place and version counters ------------------------------------------------------------
def test_inplace_on_leaf_requiring_grad_raises():
    x = leaf([1.0])
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation."):
        x.add_(1)


def test_inplace_on_non_leaf_rebases_grad_fn():
    x = leaf([1.0, 2.0])
    y = x * 2
    y.add_(1)
    assert y.grad_fn.name() == "AddBackward0"
    y.mul_(y)  # uses self before the write
    y.sum().backward()
    # y = (2x + 1)^2 -> dy/dx = 4 (2x + 1)
    np.testing.assert_allclose(np_of(x.grad), 4 * (2 * np.array([1.0, 2.0]) + 1))


def test_modified_saved_tensor_is_caught_by_version_counter():
    x = leaf([1.0, 2.0])
    a = x * 1
    b = a.exp()  # saves its result
    assert b._version == 0
    b.add_(1)
    with pytest.raises(RuntimeError, match=r"one of the variables needed for gradient computation has been modified "
                                           r"by an inplace operation: \[backend_sdk.DoubleTensor \[2\]\], which is "
                                           r"output 0 of ExpBackward0, is at version 1; expected version 0 instead"):
        b.sum().backward()


def test_modified_saved_input_is_caught():
    x = leaf([1.0, 2.0])
    a = x * 1
    b = a.sin()  # saves its input a
    a.mul_(2)
    with pytest.raises(RuntimeError, match=r"\[backend_sdk.DoubleTensor \[2\]\], which is output 0 of MulBackward0, "
                                           r"is at version 1; expected version 0 instead"):
        b.sum().backward()


def test_kernels_bump_version_once_per_write():
    t = B.zeros(3)
    v = t._version
    t.add_(1)
    assert t._version == v + 1
    B.ops.aten.add.out(t, t, out=t)
    assert t._version == v + 2
    x = leaf([1.0]) * 1  # through the autograd layer too
    v = x._version
    x.add_(1)
    assert x._version == v + 1


def test_out_variant_with_requires_grad_raises():
    x = leaf([1.0])
    out = B.empty(1, dtype=B.float64)
    with pytest.raises(RuntimeError, match=r"add\(\): functions with out=... arguments don't support automatic "
                                           "differentiation, but one of the arguments requires grad."):
        B.ops.aten.add.out(x, x, out=out)


def test_inplace_on_view_rebases_the_base_through_copy_slices():
    x = leaf([1.0, 2.0, 3.0])
    y = x * 2
    y[0].mul_(3)  # y = [6x0, 2x1, 2x2]
    y[1:] = B.tensor([5.0, 5.0], dtype=B.float64)  # setitem on a slice: overwritten, no gradient
    assert y.grad_fn.name() == "backend_sdk::autograd::CopySlices"
    (y * B.tensor([1.0, 10.0, 100.0], dtype=B.float64)).sum().backward()
    np.testing.assert_allclose(np_of(x.grad), [6.0, 0.0, 0.0])


def test_write_into_view_of_tracked_base_routes_gradient_to_source():
    w = leaf([1.0, 2.0])
    z = B.zeros(2, 3, dtype=B.float64) + 0 * w.sum()  # z takes part in autograd, so its views are tracked
    z[:, 1].copy_(w)
    assert z.requires_grad and z.grad_fn.name() == "backend_sdk::autograd::CopySlices"
    (z * z).sum().backward()
    np.testing.assert_allclose(np_of(w.grad), [2.0, 4.0])


def test_write_into_view_of_plain_tensor_routes_gradient_to_source():
    w = leaf([1.0, 2.0])
    z = B.zeros(2, 3, dtype=B.float64)
    z[:, 1].copy_(w)  # the view was taken before anything required grad (Note [Autograd view bases])
    assert z.requires_grad and z.grad_fn.name() == "backend_sdk::autograd::CopySlices"
    (z * z).sum().backward()
    np.testing.assert_allclose(np_of(w.grad), [2.0, 4.0])
    buf = B.zeros(3, dtype=B.float64)
    buf[1:] = w * 3  # setitem: view, then copy_
    (buf * B.tensor([5.0, 7.0, 11.0], dtype=B.float64)).sum().backward()
    np.testing.assert_allclose(np_of(w.grad), [2.0 + 21.0, 4.0 + 33.0])


def test_views_made_without_grad_mode_are_tracked_with_their_creation_meta():
    # Note [View creation meta]: as PyTorch, a no_grad view keeps its base; detach() is no view at all.
    z = B.zeros(3, dtype=B.float64)
    with B.no_grad():
        v = z[1:]
    assert _C._view_base(v) is z and _C._view_creation_meta(v) == 1
    assert _C._view_base(z[1:]) is z and _C._view_creation_meta(z[1:]) == 0
    assert _C._view_base(z.detach()) is None and not z.detach()._is_view()


def test_inplace_on_view_of_leaf_requiring_grad_raises():
    x = leaf([1.0, 2.0])
    v = x[0]
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used in an "
                                           "in-place operation."):
        v.add_(1)


# ---- views -------------------------------------------------------------------------------------
def test_views_get_grad_fn_through_the_view_op():
    x = leaf(np.arange(6.0).reshape(2, 3))
    v = x.view(3, 2)
    assert v.grad_fn.name() == "ViewBackward0"
    t = x.transpose(0, 1)  # aten::transpose.int (Note [View operators])
    assert t.grad_fn.name() == "TransposeBackward0"
    (v.sum() + (t * t).sum()).backward()
    np.testing.assert_allclose(np_of(x.grad), 1 + 2 * np.arange(6.0).reshape(2, 3))


# ---- missing formula ----------------------------------------------------------------------------
def test_op_without_formula_runs_forward_and_fails_in_backward_naming_it():
    x = leaf([1.0, 2.0, 3.0])
    y = B.ops.aten.scatter.value_reduce(x, 0, B.tensor([0]), 2.0, reduce="multiply")  # no formula, not composite
    assert y.requires_grad and y.grad_fn.name() == "ScatterBackward0"
    np.testing.assert_allclose(np_of(y), [2.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match=r"the derivative for 'aten::scatter.value_reduce' is not implemented"):
        y.sum().backward()


def test_non_differentiable_outputs_do_not_require_grad():
    x = leaf([1.0, 3.0, 2.0])
    values, indices = x.max(0)
    assert values.requires_grad and not indices.requires_grad
    assert not x.argmax().requires_grad
    assert not (x > 1).requires_grad


# ---- composites ---------------------------------------------------------------------------------
def test_composite_ops_differentiate_by_decomposition():
    x = leaf(np.arange(6.0).reshape(2, 3) / 10)
    w = leaf(np.ones((4, 3)) / 3)
    y = B.linear(x, w)
    assert "CompositeImplicitAutograd" in _C._dispatch_dump("aten::linear")
    y.sum().backward()
    np.testing.assert_allclose(np_of(w.grad), np.tile(np_of(x).sum(0), (4, 1)))
    np.testing.assert_allclose(np_of(x.grad), np.full((2, 3), 4 / 3))


def test_fast_path_dispatch_table_has_autograd_fallback():
    table = _C._dispatch_dump_table("aten::add.Tensor")
    assert "AutogradCPU: fallthrough" not in table


def test_custom_operator_without_formula_names_itself_in_backward(ns):
    from backend_sdk.library import Library

    with Library(ns, "DEF") as lib:
        lib.define("twice(Tensor x) -> Tensor")
        lib.impl("twice", lambda x: x * 2, "CPU")
        x = leaf([1.0, 2.0])
        y = getattr(B.ops, ns).twice(x)
        np.testing.assert_allclose(np_of(y), [2.0, 4.0])
        assert y.requires_grad and y.grad_fn.name() == "TwiceBackward0"
        with pytest.raises(RuntimeError, match=f"the derivative for '{ns}::twice' is not implemented"):
            y.sum().backward()


def test_custom_autograd_kernel_still_sees_plain_tensors(ns):
    from backend_sdk.library import Library

    calls = []
    with Library(ns, "DEF") as lib:
        lib.define("ident(Tensor x) -> Tensor")

        def autograd_kernel(keyset, x):
            calls.append("autograd")
            return _C._redispatch(f"{ns}::ident", keyset.keys_after("AutogradCPU"), x)

        lib.impl("ident", autograd_kernel, "Autograd", with_keyset=True)
        lib.impl("ident", lambda x: x.clone(), "CPU")
        getattr(B.ops, ns).ident(B.ones(1))
        assert calls == ["autograd"]
        with B.no_grad():  # grad mode off skips the Autograd keys, as PyTorch's inference paths do
            getattr(B.ops, ns).ident(B.ones(1))
        assert calls == ["autograd"]


def test_python_kernels_receive_dtypes_as_dtype_objects(ns):
    from backend_sdk.library import Library

    seen = []
    with Library(ns, "DEF") as lib:
        lib.define("cast(Tensor x, ScalarType? dtype=None) -> Tensor")

        def kernel(x, dtype=None):
            seen.append(dtype)
            return x.to(dtype)

        lib.impl("cast", kernel, "CPU")
        getattr(B.ops, ns).cast(B.ones(1), B.float64)
    assert seen == [B.float64]


def test_state_survives_the_wrapper_the_hook_annotated():
    # The recording hook annotates the wrapper _redispatch returns; the dispatcher then unwraps the
    # result into an IValue (that wrapper dies) and Python gets a new wrapper of the same tensor.
    # Note [Autograd state across wrappers] carries grad_fn and the rest over.
    x = leaf([1.0, 2.0])
    y = B.ops.aten.mul.Tensor(x, 3.0)
    assert y.grad_fn is not None and y.grad_fn.name() == "MulBackward0"
    y.my_tag = "kept"
    holder = [y.view(2)]  # a view is another tensor: it has its own state
    assert holder[0].grad_fn.name() == "ViewBackward0"


def test_meta_tensors_record_and_backward_without_data():
    x = B.empty(2, 3, device="meta").requires_grad_()
    y = (x * 2).sum(1)
    assert y.grad_fn.name() == "SumBackward1" and y.device.type == "meta"
    y.sum().backward()
    assert tuple(x.grad.shape) == (2, 3) and x.grad.device.type == "meta"


def test_backward_of_several_roots_with_their_gradients():
    x = leaf([1.0, 2.0])
    y1, y2 = x * 2, x * x
    B.autograd.backward([y1, y2], [B.ones(2, dtype=B.float64), B.tensor([1.0, 10.0], dtype=B.float64)])
    np.testing.assert_allclose(np_of(x.grad), [2.0 + 2.0, 2.0 + 40.0])


def test_graphs_are_freed_by_reference_counting():
    import gc
    import weakref

    x = leaf([1.0, 2.0])
    gc.disable()
    try:
        y = (x * 2).sin().sum()
        node = weakref.ref(y.grad_fn)
        del y
        assert node() is None
        y = (x * 2).exp().tanh().relu().sum()  # formulas that save their outputs
        node = weakref.ref(y.grad_fn.next_functions[0][0])
        del y
        assert node() is None
    finally:
        gc.enable()
