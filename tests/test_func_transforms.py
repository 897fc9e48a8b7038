"""backend_sdk.func's grad / grad_and_value nested with each other, with vmap and with plain autograd
(Note [Nested grad] in backend_sdk/_functorch/eager_transforms.py): PyTorch 2.13's torch.func semantics, each
checked against the closed-form derivative."""
from __future__ import annotations

import numpy as np
import pytest

import backend_sdk as sdk
from backend_sdk.func import grad, grad_and_value, vmap
from backend_sdk.testing import assert_close


def t(values, device: str, **kw) -> sdk.Tensor:
    return sdk.tensor(values, dtype=sdk.float32, device=device, **kw)


def test_grad_of_grad_is_the_second_derivative(device):
    x = t(2.0, device)
    assert_close(grad(grad(lambda a: a ** 3))(x), t(12.0, device))           # 6x
    assert_close(grad(grad(grad(lambda a: a ** 4)))(x), t(48.0, device))     # 24x
    xs = t([0.0, 1.0, 2.0], device)
    assert_close(vmap(grad(grad(lambda a: a.sin())))(xs), -xs.sin())
    # grad_and_value nested: (f'', f') of f = x^3
    g2, g1 = grad_and_value(lambda a: grad(lambda b: b ** 3)(a))(x)
    assert_close(g2, t(12.0, device)) and assert_close(g1, t(12.0, device))
    # the inner value differentiated by the outer grad
    assert_close(grad(lambda a: grad_and_value(lambda b: b ** 3)(a)[1])(x), t(12.0, device))
    # has_aux inside
    assert_close(grad(lambda a: grad(lambda b: (b ** 3, b), has_aux=True)(a)[0])(x), t(12.0, device))
    # Hessian-vector style: grad of a dot with the inner gradient
    v = t([1.0, -1.0], device)
    w = t([0.5, 2.0], device)
    hvp = grad(lambda a: (grad(lambda b: (b ** 3).sum())(a) * v).sum())(w)
    assert_close(hvp, 6 * w * v)
    assert not x.requires_grad and not w.requires_grad


def test_no_perturbation_confusion(device):
    """The inner grad differentiates w.r.t. its own argument only (PyTorch: 1, not 2)."""
    x = t(2.0, device)
    assert_close(grad(lambda a: grad(lambda b: a * b)(a))(x), t(1.0, device))


def test_grad_composes_with_plain_autograd(device):
    """An argument that requires grad outside: the result is differentiable by backward(), as in PyTorch."""
    x = t(2.0, device, requires_grad=True)
    g = grad(lambda a: a ** 3)(x)
    assert g.requires_grad
    assert_close(g.detach(), t(12.0, device))
    g.backward()
    assert_close(x.grad, t(12.0, device))
    # a closed-over weight that requires grad keeps the result connected to it
    w = t([1.0, 2.0], device, requires_grad=True)
    gx = grad(lambda a: (a * w * a).sum())(t([3.0, 4.0], device))
    assert gx.requires_grad
    gx.sum().backward()
    assert_close(w.grad, t([6.0, 8.0], device))  # d/dw sum(2 a w) = 2a
    # without anything that requires grad, nothing is kept
    assert not grad(lambda a: (a * a).sum())(t([3.0, 4.0], device)).requires_grad
    with sdk.no_grad():  # grad mode off at the call: the result is not differentiable
        assert not grad(lambda a: a ** 3)(x).requires_grad


def test_grad_of_vmap_and_vmap_of_grad_of_grad(device):
    x = t([1.0, 2.0], device)
    assert_close(grad(lambda a: vmap(lambda e: e ** 2)(a).sum())(x), 2 * x)
    rng = np.random.default_rng(0)
    w = sdk.from_numpy(rng.standard_normal((3,)).astype(np.float32)).to(device)
    xs = sdk.from_numpy(rng.standard_normal((4, 3)).astype(np.float32)).to(device)

    def loss(w_, x_):
        return ((w_ * x_).sum()) ** 3

    # per-sample Hessian diagonal-ish: d/dw of (d/dw loss . 1) = 6 (w.x) x (x . 1)
    hv = vmap(grad(lambda w_, x_: grad(loss)(w_, x_).sum()), in_dims=(None, 0))(w, xs)
    dots = (xs * w).sum(1, keepdim=True)
    assert_close(hv, 6 * dots * xs * xs.sum(1, keepdim=True), rtol=1e-4, atol=1e-4)


def test_grad_of_per_sample_grads(device):
    """grad over vmap(grad): the inner per-sample gradients of a shared weight stay connected to the outer leaf
    (grad's expansion of the weight along the vmap level is recorded)."""
    w = t([0.5, -1.0, 2.0], device)
    x = t([[1.0, 2.0, 3.0], [0.5, 0.1, -1.0], [2.0, 0.0, 1.0]], device)

    def f(w_, a):
        return (w_ * a).sum() ** 3

    outer = grad(lambda w_: vmap(grad(f), in_dims=(None, 0))(w_, x).sum())(w)
    ref = sum(6 * (w * x[i]).sum() * x[i] * x[i].sum() for i in range(3))
    assert_close(outer, ref)


def test_unused_argument_and_constant_output(device):
    x = t([1.0, 2.0], device)
    assert_close(grad(lambda a, b: (b * 2).sum())(x, t(1.0, device)), sdk.zeros(2, device=device))
    assert_close(grad(lambda a: sdk.tensor(3.0, device=device))(t(2.0, device)), t(0.0, device))
    assert_close(grad(grad(lambda a: a * 2))(t(2.0, device)), t(0.0, device))  # the inner result is constant


def test_errors_are_pytorchs():
    x = sdk.ones(2)
    with pytest.raises(RuntimeError, match=r"Expected f\(\*args\) to return a scalar Tensor, got tensor with 1 dims"):
        grad(lambda a: a * 2)(x)
    with pytest.raises(RuntimeError, match=r"Expected f\(\*args\) to return a scalar Tensor"):
        grad(grad(lambda a: a * 2))(x)  # the inner gradient of a scalar function of a vector is a vector
    with pytest.raises(RuntimeError, match="argnums must be int or Tuple"):
        grad(lambda a: a.sum(), argnums=[0])(x)
    with pytest.raises(RuntimeError, match="Got argnum=3, but only 1 positional inputs"):
        grad(lambda a: a.sum(), argnums=3)(x)
    with pytest.raises(RuntimeError, match="output of function f should be a tuple"):
        grad(lambda a: a.sum(), has_aux=True)(x)
