"""Issue 14: double backward of the nn formulas. The backward operators the nn formulas call have formulas
of their own in csrc/backend_sdk/autograd/derivatives.def (Note [Convolution double backward], Note
[Normalization double backward], the pooling / embedding / dropout backwards), with PyTorch's node names;
the statistics outputs are not differentiable (Note [Differentiable outputs]). Checked against finite
differences (gradcheck of the backward operator is the double backward of its forward); the values were
compared with PyTorch 2.13's double backward side by side (layer_norm, batch_norm, conv2d: within 1e-14
relative)."""
from __future__ import annotations

import numpy as np
import pytest

import backend_sdk as B
from backend_sdk.testing import gradcheck, gradgradcheck

ops = B.ops.aten
rng = np.random.default_rng(2014)


def rand(*shape, low=-1.0, high=1.0):
    return B.tensor(rng.uniform(low, high, size=shape), dtype=B.float64).requires_grad_()


# ---- the backward operators, differentiated with respect to all their differentiable inputs ----
@pytest.mark.parametrize("transposed, groups", [(False, 1), (True, 2), (False, 2)])
def test_convolution_backward_is_differentiable_in_all_outputs(transposed, groups):
    x = rand(2, 4, 5, 4)
    w = rand(2 * groups, 4 // groups, 3, 2) if not transposed else rand(4, 3, 3, 2)
    with B.no_grad():
        y = ops.convolution(x, w, None, [1, 2], [1, 0], [1, 1], transposed, [0, 0], groups)
    go = rand(*y.shape)

    def f(go, x, w):
        return ops.convolution_backward(go, x, w, [y.shape[1]], [1, 2], [1, 0], [1, 1], transposed, [0, 0], groups,
                                        [True, True, True])

    assert f(go, x, w)[0].grad_fn.name() == "ConvolutionBackwardBackward0"
    assert gradcheck(f, (go, x, w))


def _layer_norm_backward(go, x, w, b):
    # mean / rstd are functions of x (computed from it here), as the formula assumes
    _, mean, rstd = ops.native_layer_norm(x, [3, 4], w, b, 1e-5)
    return ops.native_layer_norm_backward(go, x, [3, 4], mean, rstd, w, b, [True, True, True])


def test_native_layer_norm_backward_formula():
    go, x, w, b = rand(2, 3, 4), rand(2, 3, 4), rand(3, 4), rand(3, 4)
    outs = _layer_norm_backward(go, x, w, b)
    assert [o.grad_fn.name() for o in outs] == ["NativeLayerNormBackwardBackward0"] * 3
    assert gradcheck(_layer_norm_backward, (go, x, w, b))
    assert gradcheck(lambda go, x: _layer_norm_backward(go, x, None, None)[0], (go, x))  # no affine


@pytest.mark.parametrize("train", [True, False])
def test_native_batch_norm_backward_formula(train):
    go, x, w = rand(4, 3, 2), rand(4, 3, 2), rand(3)
    rm, rv = B.tensor(rng.uniform(-1, 1, 3), dtype=B.float64), B.tensor(rng.uniform(0.5, 2, 3), dtype=B.float64)

    def f(go, x, w):
        _, mean, invstd = ops.native_batch_norm(x, w, None, None if train else rm, None if train else rv, train,
                                                0.1, 1e-5)
        return ops.native_batch_norm_backward(go, x, w, None if train else rm, None if train else rv,
                                              mean if train else None, invstd if train else None, train, 1e-5,
                                              [True, True, True])

    assert f(go, x, w)[0].grad_fn.name() == "NativeBatchNormBackwardBackward0"
    assert gradcheck(f, (go, x, w))


def test_statistics_outputs_do_not_require_grad_as_in_pytorch():
    x, w = rand(2, 3, 4), rand(4)
    out, mean, rstd = ops.native_layer_norm(x, [4], w, None, 1e-5)
    assert out.requires_grad and not mean.requires_grad and not rstd.requires_grad
    out, mean, invstd = ops.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5)
    assert out.requires_grad and not mean.requires_grad and not invstd.requires_grad
    loss, total = ops.nll_loss_forward(rand(3, 4), B.tensor([0, 1, 2]), None, 1, -100)
    assert loss.requires_grad and not total.requires_grad


def test_statistics_that_require_grad_raise_only_when_their_gradient_is_asked_for():
    """derivatives.yaml's not_implemented for mean/rstd is evaluated only for a needed gradient (PyTorch's
    task_should_compute_output): grad with respect to x and w alone works, and equals the gradient of the same
    graph whose statistics do not require grad; asking for mean's or rstd's gradient raises PyTorch's error."""
    go, x, w = rand(3, 5), rand(3, 5), rand(5)
    weights = B.tensor(rng.uniform(-1, 1, size=(3, 5)))
    with B.no_grad():
        _, mean, rstd = ops.native_layer_norm(x, [5], w, None, 1e-5)

    def loss_of(m, r):
        return (ops.native_layer_norm_backward(go, x, [5], m, r, w, None, [True, True, False])[0] * weights).sum()

    loss = loss_of(mean.clone().requires_grad_(), rstd.clone().requires_grad_())
    assert loss.grad_fn.next_functions[0][0].next_functions[0][0].name() == "NativeLayerNormBackwardBackward0"
    got = B.autograd.grad(loss, [x, w], retain_graph=True)
    want = B.autograd.grad(loss_of(mean, rstd), [x, w])
    for g, r in zip(got, want):
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-12, atol=1e-14)
    assert float(got[0].abs().sum()) > 0
    for inputs, name in ((lambda m, r: [m], "mean"), (lambda m, r: [x, r], "rstd")):
        m, r = mean.clone().requires_grad_(), rstd.clone().requires_grad_()
        with pytest.raises(NotImplementedError,
                           match=rf"^the derivative for 'native_layer_norm_backward {name}' is not implemented\.$"):
            B.autograd.grad(loss_of(m, r), inputs(m, r))
    with pytest.raises(NotImplementedError, match="native_layer_norm_backward mean"):
        loss.backward()  # every input's gradient is needed


def test_batch_norm_statistics_raise_only_when_asked_for():
    go, x, w = rand(3, 2, 4), rand(3, 2, 4), rand(2)
    with B.no_grad():
        _, save_mean, save_invstd = ops.native_batch_norm(x, w, None, None, None, True, 0.1, 1e-5)
    sm, si = save_mean.clone().requires_grad_(), save_invstd.clone().requires_grad_()
    gi = ops.native_batch_norm_backward(go, x, w, None, None, sm, si, True, 1e-5, [True, True, True])[0]
    loss = (gi * B.tensor(rng.uniform(-1, 1, size=(3, 2, 4)))).sum()
    (gx,) = B.autograd.grad(loss, [x], retain_graph=True)
    assert gx.shape == (3, 2, 4) and float(gx.abs().sum()) > 0
    with pytest.raises(NotImplementedError, match=r"'native_batch_norm_backward save_invstd' is not implemented"):
        B.autograd.grad(loss, [si])


def test_running_statistics_that_require_grad_are_refused():
    x = rand(4, 3)
    rm, rv = rand(3), rand(3, low=0.5, high=2.0)
    with pytest.raises(RuntimeError, match="The function 'native_batch_norm' is not differentiable with respect to "
                                           "argument 'running_mean'. This input cannot have requires_grad True."):
        ops.native_batch_norm(x, None, None, rm, rv, False, 0.1, 1e-5)


def test_pooling_backwards_are_differentiable():
    x = rand(1, 2, 5, 4)
    y, idx = ops.max_pool2d_with_indices(x.detach(), [2, 2], [2, 2], [0, 0], [1, 1], False)
    go = rand(*y.shape)
    f = lambda go, x: ops.max_pool2d_with_indices_backward(go, x, [2, 2], [2, 2], [0, 0], [1, 1], False, idx)
    assert f(go, x).grad_fn.name() == "MaxPool2DWithIndicesBackwardBackward0"
    assert gradcheck(f, (go, x))
    ya = ops.avg_pool2d(x.detach(), [3, 2], [1, 2], [1, 0], True, False, None)
    ga = rand(*ya.shape)
    fa = lambda go, x: ops.avg_pool2d_backward(go, x, [3, 2], [1, 2], [1, 0], True, False, None)
    assert fa(ga, x).grad_fn.name() == "AvgPool2DBackwardBackward0"
    assert gradcheck(fa, (ga, x))
    gd = rand(1, 2, 3, 2)
    fd = lambda go, x: ops._adaptive_avg_pool2d_backward(go, x)
    assert fd(gd, x).grad_fn.name() == "AdaptiveAvgPool2DBackwardBackward0"
    assert gradcheck(fd, (gd, x))


@pytest.mark.parametrize("padding_idx, freq", [(-1, False), (2, False), (-1, True), (1, True)])
def test_embedding_dense_backward_is_differentiable(padding_idx, freq):
    idx = B.tensor([[0, 2, 2], [1, 2, 4]])
    go = rand(2, 3, 4)
    f = lambda go: ops.embedding_dense_backward(go, idx, 6, padding_idx, freq)
    assert f(go).grad_fn.name() == "EmbeddingDenseBackwardBackward0"
    assert gradcheck(f, (go,))  # with freq, PyTorch's double backward omits the 1/count scale; ours has it


def test_native_dropout_backward_is_differentiable():
    mask = B.tensor(rng.uniform(size=(3, 4)) > 0.5)
    go = rand(3, 4)
    f = lambda go: ops.native_dropout_backward(go, mask, 2.0)
    assert f(go).grad_fn.name() == "NativeDropoutBackwardBackward0"
    assert gradcheck(f, (go,))


# ---- through the nn functions: second order of a training loss, and third order where it exists ----
def test_gradient_penalty_through_a_small_network():
    F = B.nn.functional
    x = rand(2, 2, 6, 6)
    w1, w2 = rand(3, 2, 3, 3), rand(6)

    def net(x, w1, w2):
        h = F.layer_norm(F.gelu(F.conv2d(x, w1, padding=1)), [6], w2)
        h = F.max_pool2d(F.batch_norm(h, None, None, training=True), 2)
        return (F.avg_pool2d(h, 3) ** 2).sum()

    assert gradgradcheck(net, (x, w1, w2))


def test_third_order_of_convolution():
    x, w = rand(1, 1, 4, 3), rand(2, 1, 2, 2)
    f = lambda x, w: ops.convolution(x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    (gx,) = B.autograd.grad((f(x, w) ** 3).sum(), x, create_graph=True)
    assert gradgradcheck(lambda x, w: B.autograd.grad((f(x, w) ** 3).sum(), x, create_graph=True)[0], (x, w))
    assert gx.requires_grad


def test_group_norm_records_its_own_node_and_second_order_sees_the_statistics():
    """native_group_norm has a formula (NativeGroupNormBackward0, as PyTorch's); under create_graph the statistics
    are recomputed from the input by recorded operators, so gradgradcheck holds (saved, untracked statistics would
    drop their dependence on the input and give a wrong second order)."""
    x, w, b = rand(2, 4, 3), rand(4), rand(4)
    y = B.nn.functional.group_norm(x, 2, w, b)
    assert y.grad_fn.name() == "NativeGroupNormBackward0"
    assert gradgradcheck(lambda x_, w_: B.nn.functional.group_norm(x_, 2, w_, b), (x, w))
    empty = rand(0, 4, 3)
    (g,) = B.autograd.grad(B.nn.functional.group_norm(empty, 2, w).sum(), [empty], create_graph=True)
    assert g.shape == (0, 4, 3)
