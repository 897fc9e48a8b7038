"""Issue 14: the formulas moved from backend_sdk/autograd/_formulas.py and _formulas_nn.py into the C++
table (csrc/backend_sdk/autograd/derivatives.def). Node names, gradients (gradcheck, and gradgradcheck
where PyTorch's formula is twice differentiable through our operators), GRADS3 (one backward operator,
several inputs), operators PyTorch does not differentiate, and inference tensors entering autograd.
PyTorch 2.13's behaviour is the reference (checked side by side)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import backend_sdk as B
from backend_sdk import _C
from backend_sdk.autograd import _formulas
from backend_sdk.testing import gradcheck, gradgradcheck

ops = B.ops.aten
rng = np.random.default_rng(14)


def rand(*shape, low=-1.0, high=1.0):
    return B.tensor(rng.uniform(low, high, size=shape), dtype=B.float64).requires_grad_()


def f64(values):
    return B.tensor(values, dtype=B.float64)


# (forward, inputs, PyTorch's node name, double backward through our operators)
CASES = {
    "convolution": (lambda x, w, b: ops.convolution(x, w, b, [1, 1], [1, 1], [1, 1], False, [0, 0], 1),
                    lambda: (rand(1, 2, 4, 4), rand(3, 2, 3, 3), rand(3)), "ConvolutionBackward0", True),
    "convolution_no_bias": (lambda x, w: ops.convolution(x, w, None, [2, 2], [0, 0], [1, 1], False, [0, 0], 1),
                            lambda: (rand(1, 2, 5, 5), rand(3, 2, 3, 3)), "ConvolutionBackward0", True),
    "native_layer_norm": (lambda x, w, b: ops.native_layer_norm(x, [4], w, b, 1e-5)[0],
                          lambda: (rand(2, 3, 4), rand(4), rand(4)), "NativeLayerNormBackward0", True),
    "native_batch_norm": (lambda x, w, b: ops.native_batch_norm(x, w, b, None, None, True, 0.1, 1e-5)[0],
                          lambda: (rand(4, 3, 2), rand(3), rand(3)), "NativeBatchNormBackward0", True),
    "max_pool2d_with_indices": (lambda x: ops.max_pool2d_with_indices(x, [2, 2])[0], lambda: (rand(1, 2, 4, 4),),
                                "MaxPool2DWithIndicesBackward0", True),
    "avg_pool2d": (lambda x: ops.avg_pool2d(x, [2, 2]), lambda: (rand(1, 2, 4, 4),), "AvgPool2DBackward0", True),
    "_adaptive_avg_pool2d": (lambda x: ops._adaptive_avg_pool2d(x, [2, 2]), lambda: (rand(1, 2, 5, 4),),
                             "AdaptiveAvgPool2DBackward0", True),
    "log2": (lambda x: x.log2(), lambda: (rand(4, low=0.5, high=2.0),), "Log2Backward0", True),
    "log10": (lambda x: x.log10(), lambda: (rand(4, low=0.5, high=2.0),), "Log10Backward0", True),
    "erfinv": (lambda x: x.erfinv(), lambda: (rand(4, low=-0.8, high=0.8),), "ErfinvBackward0", True),
    "clamp.Tensor": (lambda x, lo, hi: ops.clamp.Tensor(x, lo, hi),
                     lambda: (rand(6), rand(6, low=-1.0, high=-0.3), rand(6, low=0.3, high=1.0)), "ClampBackward0", True),
    "clamp.Tensor_min_only": (lambda x, lo: ops.clamp.Tensor(x, lo, None), lambda: (rand(6), rand(6)),
                              "ClampBackward0", True),
    "_softmax": (lambda x: ops._softmax(x, 1, False), lambda: (rand(2, 3),), "SoftmaxBackward0", True),
    "_log_softmax": (lambda x: ops._log_softmax(x, 0, False), lambda: (rand(3, 2),), "LogSoftmaxBackward0", True),
    "softmax.int": (lambda x: x.softmax(1), lambda: (rand(2, 3),), "SoftmaxBackward0", True),
    "log_softmax.int": (lambda x: x.log_softmax(-1), lambda: (rand(2, 3),), "LogSoftmaxBackward0", True),
    "linalg_vector_norm": (lambda x: ops.linalg_vector_norm(x), lambda: (rand(2, 3),), "LinalgVectorNormBackward0",
                           True),
    "linalg_vector_norm_p3_dim": (lambda x: ops.linalg_vector_norm(x, 3, [1], True), lambda: (rand(2, 3),),
                                  "LinalgVectorNormBackward0", True),
    "norm.Scalar_p1": (lambda x: ops.norm.Scalar(x, 1), lambda: (rand(2, 3),), "NormBackward0", True),
    "norm.ScalarOpt_dim": (lambda x: ops.norm.ScalarOpt_dim(x, 2, [1]), lambda: (rand(2, 3),), "NormBackward1", True),
    "norm.ScalarOpt_dtype": (lambda x: ops.norm.ScalarOpt_dtype(x, 2, dtype=B.float64), lambda: (rand(2, 3),),
                             "NormBackward2", True),
    "norm.ScalarOpt_dim_dtype_inf": (lambda x: ops.norm.ScalarOpt_dim_dtype(x, math.inf, [0], False, dtype=B.float64),
                                     lambda: (rand(2, 3),), "NormBackward3", False),
    "prod": (lambda x: ops.prod(x), lambda: (rand(2, 3),), "ProdBackward0", True),
    "prod.dim_int": (lambda x: ops.prod.dim_int(x, 1), lambda: (rand(2, 3),), "ProdBackward1", True),
    "cumprod": (lambda x: ops.cumprod(x, 1), lambda: (rand(2, 3, low=0.5, high=1.5),), "CumprodBackward0", True),
    "remainder.Scalar": (lambda x: ops.remainder.Scalar(x, 0.7), lambda: (rand(5),), "RemainderBackward0", True),
    "remainder.Tensor": (lambda x, y: ops.remainder.Tensor(x, y), lambda: (rand(5), rand(5, low=0.7, high=1.3)),
                         "RemainderBackward1", True),
    "scatter.src": (lambda x, s: ops.scatter.src(x, 1, B.tensor([[2, 0, 1]]), s), lambda: (rand(2, 3), rand(1, 3)),
                    "ScatterBackward0", True),
    "scatter.value": (lambda x: ops.scatter.value(x, 1, B.tensor([[0, 1]]), 1.0), lambda: (rand(2, 3),),
                      "ScatterBackward1", True),
    "scatter_add": (lambda x, s: ops.scatter_add(x, 1, B.tensor([[0, 1, 0]]), s), lambda: (rand(2, 3), rand(1, 3)),
                    "ScatterAddBackward0", True),
    "masked_select": (lambda x: ops.masked_select(x, B.tensor([True, False, True])), lambda: (rand(2, 3),),
                      "MaskedSelectBackward0", True),
    "take": (lambda x: ops.take(x, B.tensor([0, 2, 2])), lambda: (rand(2, 3),), "TakeBackward0", True),
    "index_select": (lambda x: ops.index_select(x, 1, B.tensor([0, 2, 2])), lambda: (rand(2, 3),),
                     "IndexSelectBackward0", True),
    "fill.Scalar": (lambda x: ops.fill.Scalar(x, 1.0), lambda: (rand(2, 3),), "FillBackward0", True),
    "round.decimals": (lambda x: ops.round.decimals(x, decimals=1), lambda: (rand(3),), "RoundBackward1", True),
    "_to_copy": (lambda x: ops._to_copy(x), lambda: (rand(3),), "ToCopyBackward0", True),
    "clone": (lambda x: ops.clone(x), lambda: (rand(3),), "CloneBackward0", True),
    "flip": (lambda x: x.flip([0, 2]), lambda: (rand(2, 3, 2),), "FlipBackward0", True),
    "repeat": (lambda x: x.repeat(2, 1, 3), lambda: (rand(2, 3),), "RepeatBackward0", True),
    "repeat_scalar": (lambda x: x.repeat(3), lambda: (rand(),), "RepeatBackward0", True),
    "as_strided": (lambda x: x.as_strided([2, 2], [1, 2], 1), lambda: (rand(6),), "AsStridedBackward0", True),
    "as_strided_overlapping": (lambda x: x.as_strided([3, 2], [1, 1]), lambda: (rand(4),), "AsStridedBackward0",
                               True),
    "as_strided_of_a_view": (lambda x: x[1:].as_strided([2], [2]), lambda: (rand(5),), "AsStridedBackward0", True),
    "nll_loss_forward": (lambda x: ops.nll_loss_forward(x, B.tensor([0, 2]), None, 1, -100)[0],
                         lambda: (rand(2, 3),), "NllLossBackward0", True),
    "nll_loss_forward_weight_ignore": (
        lambda x: ops.nll_loss_forward(x, B.tensor([0, 2, 1]), f64([0.5, 1.0, 2.0]), 1, 2)[0],
        lambda: (rand(3, 3),), "NllLossBackward0", True),
    "nll_loss_forward_unbatched_sum": (lambda x: ops.nll_loss_forward(x, B.tensor(1), None, 2, -100)[0],
                                       lambda: (rand(3),), "NllLossBackward0", True),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_moved_formula_node_name_and_gradients(name):
    fn, make, node, twice = CASES[name]
    inputs = make()
    assert fn(*inputs).grad_fn.name() == node
    assert gradcheck(fn, inputs)
    if twice:
        assert gradgradcheck(fn, inputs)


@pytest.mark.parametrize("name", ["convolution", "native_layer_norm", "native_batch_norm", "avg_pool2d"])
def test_backward_operators_have_formulas_of_their_own(name):
    # Note [Backward operators under create_graph]: the first order is right under create_graph, and the
    # second reaches the backward operator's own formula (issue 14: double backward, as PyTorch's).
    fn, make, _, _ = CASES[name]
    inputs = make()
    (g,) = B.autograd.grad(fn(*inputs).pow(2).sum(), inputs[0], create_graph=True)
    (plain,) = B.autograd.grad(fn(*inputs).pow(2).sum(), inputs[0])
    np.testing.assert_allclose(g.detach().numpy(), plain.numpy(), rtol=1e-12)
    assert g.grad_fn.name().endswith("BackwardBackward0") or any(
        f is not None and f.name().endswith("BackwardBackward0") for f, _ in g.grad_fn.next_functions)
    (gg,) = B.autograd.grad(g.sum(), inputs[0])
    assert gg.shape == inputs[0].shape


def test_every_moved_overload_left_python():
    for key in ("convolution", "native_layer_norm", "native_batch_norm", "max_pool2d_with_indices", "avg_pool2d",
                "_adaptive_avg_pool2d", "native_dropout", "log2", "log10", "erfinv", "clamp.Tensor", "_softmax",
                "_log_softmax", "linalg_vector_norm", "norm.Scalar", "prod", "prod.dim_int", "cumprod",
                "remainder.Tensor", "scatter.src", "scatter_add", "masked_select", "take", "index_select",
                "fill.Scalar", "round.decimals", "_to_copy", "clone", "nll_loss_forward"):
        assert f"aten::{key}" not in _formulas.FORMULAS, key
        assert _C._autograd_formula_saves(f"aten::{key}") is not None, key


def test_grads3_computes_only_the_needed_gradients():
    x, w = rand(1, 2, 4, 4), rand(3, 2, 3, 3)
    b = f64(rng.uniform(-1, 1, 3))  # does not require grad: output_mask [True, True, False]
    y = ops.convolution(x, w, b, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    gx, gw = B.autograd.grad(y.sum(), [x, w])
    assert list(gx.shape) == [1, 2, 4, 4] and list(gw.shape) == [3, 2, 3, 3]
    x2 = f64(x.detach().numpy())
    (gw_only,) = B.autograd.grad(ops.convolution(x2, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1).sum(), [w])
    np.testing.assert_allclose(gw_only.numpy(), gw.numpy(), rtol=1e-12)


def test_native_dropout_gradient_is_mask_times_scale():
    x = rand(50)
    y, mask = ops.native_dropout(x, 0.25, True)
    assert y.grad_fn.name() == "NativeDropoutBackward0" and not mask.requires_grad
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), mask.numpy().astype(np.float64) / 0.75)
    x2 = rand(5)
    y2, _ = ops.native_dropout(x2, 0.25, False)  # eval: scale 1
    y2.sum().backward()
    np.testing.assert_array_equal(x2.grad.numpy(), np.ones(5))


def test_batch_norm_eval_reads_its_running_stats_and_training_does_not():
    x, w, b = rand(4, 3, 2), rand(3), rand(3)
    rm, rv = f64([0.1, -0.2, 0.3]), f64([1.0, 2.0, 0.5])
    y = ops.native_batch_norm(x, w, b, rm, rv, False, 0.1, 1e-5)[0]
    assert rm._version == 0  # eval writes nothing (PyTorch's: version 0)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.broadcast_to((w.detach().numpy() / np.sqrt(
        rv.numpy() + 1e-5))[None, :, None], (4, 3, 2)), rtol=1e-12)
    y = ops.native_batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5)[0]  # training: updates rm, rv in place
    rm.add_(1.0)
    y.sum().backward()  # reads the batch statistics only


def test_softmax_backward_data_operators_match_the_formula_and_refuse_bad_input():
    g, y = f64(rng.uniform(-1, 1, (2, 3))), ops._softmax(f64(rng.uniform(-1, 1, (2, 3))), 1, False)
    gn, yn = g.numpy(), y.numpy()
    np.testing.assert_allclose(ops._softmax_backward_data(g, y, 1, B.float64).numpy(),
                               (gn - (gn * yn).sum(1, keepdims=True)) * yn, rtol=1e-12)
    out = ops._log_softmax_backward_data(g, y, 0, B.float32)
    assert out.dtype == B.float32
    np.testing.assert_allclose(out.numpy(), gn - np.exp(yn) * gn.sum(0, keepdims=True), rtol=1e-6)
    with pytest.raises(RuntimeError, match="_softmax: conversion is supported for Half type only"):
        ops._softmax(g, 1, True)
    with pytest.raises(IndexError):
        ops._softmax_backward_data(g, y, 2, B.float64)


@pytest.mark.parametrize("fn, name", [
    (lambda x: ops.floor_divide(x, x), "floor_divide"),
    (lambda x: ops.floor_divide.Scalar(x, 2.0), "floor_divide.Scalar"),
    (lambda x: ops.remainder.Scalar_Tensor(2.0, x), "remainder.Scalar_Tensor"),
])
def test_operators_pytorch_does_not_differentiate_raise_on_backward(fn, name):
    # derivatives.yaml has no formula for them: torch records a NotImplemented node that raises on backward.
    y = fn(rand(3, low=0.5, high=2.0))
    assert y.requires_grad
    with pytest.raises(RuntimeError, match=f"the derivative for 'aten::{name}' is not implemented"):
        y.sum().backward()


def test_to_copy_sends_the_gradient_back_to_the_input_dtype():
    x = rand(3)
    y = ops._to_copy(x, dtype=B.float32)
    assert y.grad_fn.name() == "ToCopyBackward0"
    y.sum().backward()
    assert x.grad.dtype == B.float64
    np.testing.assert_array_equal(x.grad.numpy(), np.ones(3))


# ---- inference tensors entering autograd (torch 2.13's behaviour) ---------------------------------
INFERENCE_MSG = "Inference tensors cannot be saved for backward"


def _inference_ones(*shape):
    with B.inference_mode():
        return B.ones(list(shape), dtype=B.float64)


@pytest.mark.parametrize("fn", [
    lambda x, i: x * i,
    lambda x, i: i * x,
    lambda x, i: x.view(1, 3).mm(i.view(3, 1)),
    lambda x, i: ops.clamp.Tensor(x, i, None),
    lambda x, i: (x * 1).mul_(i),
])
def test_an_inference_tensor_saved_for_backward_raises_pytorchs_error(fn):
    i, x = _inference_ones(3), rand(3)
    with pytest.raises(RuntimeError, match=INFERENCE_MSG) as err:
        fn(x, i)
    assert "make a clone to get a normal tensor and use it in autograd" in str(err.value)


def test_an_inference_tensor_not_saved_is_fine_and_a_clone_works():
    i, x = _inference_ones(3), rand(3)
    y = x + i  # AddBackward0 saves nothing
    assert y.grad_fn.name() == "AddBackward0"
    assert not (i * 2).requires_grad
    z = x * i.clone()  # the workaround the message names
    z.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones(3))


# ---- Tensor[] and Tensor?[] arguments (Note [Tensor lists in the formula table]) ------------------
LIST_CASES = {
    "cat": (lambda a, b: B.cat([a, b], 1), lambda: (rand(2, 3), rand(2, 2)), "CatBackward0"),
    "cat_dim0_three": (lambda a, b, c: B.cat([a, b, c]), lambda: (rand(1, 2), rand(3, 2), rand(2, 2)), "CatBackward0"),
    "cat_negative_dim": (lambda a, b: B.cat([a, b], -1), lambda: (rand(2, 1), rand(2, 3)), "CatBackward0"),
    "stack": (lambda a, b: B.stack([a, b], 1), lambda: (rand(2, 3), rand(2, 3)), "StackBackward0"),
    "stack_last": (lambda a, b: B.stack([a, b], -1), lambda: (rand(3), rand(3)), "StackBackward0"),
    "index.Tensor": (lambda a: a[B.tensor([0, 2, 0])], lambda: (rand(3, 2),), "IndexBackward0"),
    "index.Tensor_two": (lambda a: a[B.tensor([0, 1]), B.tensor([1, 1])], lambda: (rand(2, 3),), "IndexBackward0"),
    "index.Tensor_bool": (lambda a: a[B.tensor([True, False, True])], lambda: (rand(3, 2),), "IndexBackward0"),
    "index_put": (lambda a, v: ops.index_put(a, [B.tensor([0, 2])], v), lambda: (rand(3, 2), rand(2, 2)),
                  "IndexPutBackward0"),
    "index_put_accumulate_broadcast": (lambda a, v: ops.index_put(a, [B.tensor([0, 0])], v, True),
                                       lambda: (rand(3, 2), rand(2)), "IndexPutBackward0"),
}


@pytest.mark.parametrize("name", sorted(LIST_CASES))
def test_tensor_list_formulas(name):
    fn, make, node = LIST_CASES[name]
    inputs = make()
    assert fn(*inputs).grad_fn.name() == node
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


def test_cat_gives_gradients_only_to_the_elements_that_require_grad():
    a, c = rand(2, 2), rand(1, 2)
    b = f64(np.ones((3, 2)))
    y = B.cat([a, b, c])
    assert len(y.grad_fn.next_functions) >= 2
    (y * f64(np.arange(12.0).reshape(6, 2))).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.arange(4.0).reshape(2, 2))
    np.testing.assert_array_equal(c.grad.numpy(), np.arange(10.0, 12.0).reshape(1, 2))
    assert b.grad is None


def test_cat_skips_legacy_empty_inputs():
    a, e = rand(2, 2), rand(0)
    B.cat([a, e]).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.ones((2, 2)))


def test_saved_indices_are_version_checked_and_freed():
    a = rand(3)
    i = B.tensor([0, 2])
    y = a[i]
    i.add_(0)  # a write into a saved index tensor
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    y = a[B.tensor([1])].sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_index_put_in_place_runs_the_cpp_formula():
    a, v = rand(3, 2), rand(2)
    b = a * 1
    b[B.tensor([1])] = v  # index_put_: the Python in-place path, the C++ formula
    assert b.grad_fn.name() == "IndexPutBackward0"
    b.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [[1, 1], [0, 0], [1, 1]])
    np.testing.assert_array_equal(v.grad.numpy(), [1, 1])


def test_saved_outputs_are_plain_aliases_sharing_the_version_counter():
    # detached_alias (Note [Saved variables]): exp saves its result; a write into the result is caught.
    x = rand(3)
    y = x.exp()
    y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    x2 = rand(3)
    (g,) = B.autograd.grad(x2.exp().sum(), x2, create_graph=True)  # the saved result re-enters the graph
    assert g.grad_fn.name() == "MulBackward0"
    np.testing.assert_allclose(g.detach().numpy(), np.exp(x2.detach().numpy()))


# ---- the in-place view operators (aten::t_, transpose_, squeeze_, unsqueeze_, as_strided_) ---------
INPLACE_VIEWS = {
    "t_": (lambda a: (a * 1).t_(), [3, 2], "TBackward1"),
    "transpose_": (lambda a: (a * 1).transpose_(0, 1), [3, 2], "TransposeBackward1"),
    "swapdims_": (lambda a: (a * 1).swapdims_(1, 0), [3, 2], "TransposeBackward1"),
    "squeeze_": (lambda a: (a.unsqueeze(0) * 1).squeeze_(), [2, 3], "SqueezeBackward3"),
    "squeeze_.dim": (lambda a: (a.unsqueeze(0) * 1).squeeze_(0), [2, 3], "SqueezeBackward4"),
    "squeeze_.dims": (lambda a: (a.unsqueeze(0) * 1).squeeze_((0,)), [2, 3], "SqueezeBackward5"),
    "unsqueeze_": (lambda a: (a * 1).unsqueeze_(1), [2, 1, 3], "UnsqueezeBackward1"),
    "as_strided_": (lambda a: (a * 1).as_strided_([2], [1]), [2], "AsStridedBackward1"),
}


@pytest.mark.parametrize("name", sorted(INPLACE_VIEWS))
def test_in_place_view_operators_have_pytorchs_nodes(name):
    fn, shape, node = INPLACE_VIEWS[name]
    a = rand(2, 3)
    y = fn(a)
    assert list(y.shape) == shape and y.grad_fn.name() == node
    assert gradcheck(fn, (a,))
    assert gradgradcheck(fn, (a,))


def test_in_place_view_operator_is_in_place_and_refuses_bad_dims():
    b = rand(2, 3) * 1
    v0 = b._version
    assert b.t_() is b and b._version == v0 + 1
    with pytest.raises(IndexError, match="Dimension out of range"):
        (rand(2, 3) * 1).transpose_(0, 5)
    x = rand(2, 3)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        x.t_()


def test_fill_in_place_has_pytorchs_node_name():
    y = (rand(3) * 1).fill_(2.0)
    assert y.grad_fn.name() == "FillBackward2"
