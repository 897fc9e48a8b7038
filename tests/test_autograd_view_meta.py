"""Views made under no_grad or in inference mode, as PyTorch tracks them (Note [View creation meta]):
their base, their requires_grad, and the in-place writes PyTorch refuses."""
from __future__ import annotations

import pytest

import backend_sdk as torch

NO_GRAD_VIEW = "A view was created in no_grad mode and is being modified inplace with grad mode enabled"
INFERENCE_VIEW = "A view was created in inference mode and is being modified inplace in normal mode"


@pytest.mark.parametrize("make_base", [lambda: torch.ones(3, requires_grad=True),
                                       lambda: torch.ones(3, requires_grad=True) * 1.0], ids=["leaf", "non-leaf"])
def test_a_no_grad_view_requires_grad_through_its_base_and_refuses_inplace(make_base):
    base = make_base()
    with torch.no_grad():
        v = base[1:]
    assert v._is_view() and v._base is base
    assert v.requires_grad and v.is_leaf and v.grad_fn is None
    out = v * v  # recorded, but with no edge for v (PyTorch's (None, 0))
    assert out.requires_grad and out.grad_fn.next_functions == ((None, 0), (None, 0))
    with pytest.raises(RuntimeError, match=NO_GRAD_VIEW):
        v.add_(1)
    with torch.no_grad():
        v.add_(1)  # both inside no_grad: allowed, not tracked
        w = v[:1]  # a view of a no_grad view is a no_grad view of the same root
    assert w._base is base
    with pytest.raises(RuntimeError, match=NO_GRAD_VIEW):
        w.mul_(2)


def test_a_no_grad_view_of_a_tensor_outside_autograd_can_be_written():
    base = torch.ones(3)
    with torch.no_grad():
        v = base[1:]
    v.add_(1)  # nothing requires grad: no check, as PyTorch
    assert base.tolist() == [1.0, 2.0, 2.0]


def test_a_view_taken_before_its_base_required_grad_is_a_view_of_a_leaf():
    a = torch.ones(2, 3)
    b = a[:]
    a.requires_grad_()
    assert b.requires_grad
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used in an in-place"):
        b.add_(5)


def test_an_inference_mode_view_of_a_normal_tensor_refuses_inplace_outside():
    s = torch.ones(2, 3, requires_grad=True) * 1.0
    with torch.inference_mode():
        v = s.view(-1)
        assert not torch.is_inference(v)
    assert v._is_view() and v.requires_grad and v.is_leaf
    with pytest.raises(RuntimeError, match=INFERENCE_VIEW):
        v.add_(2)
    plain = torch.ones(2, 3)
    with torch.inference_mode():
        pv = plain.view(-1)
    pv.add_(2)  # its base requires no grad: allowed
    assert plain.sum().item() == 18.0


def test_views_of_inference_tensors_and_detached_tensors_are_not_tracked():
    with torch.inference_mode():
        c = torch.ones(2, 3)
    out = c.view(-1)
    assert torch.is_inference(out) and not out._is_view() and out._base is None
    x = torch.ones(3, requires_grad=True)
    d = x.detach()
    assert not d._is_view() and not d.requires_grad and d._base is None
    assert d[1:]._is_view() and d[1:]._base is d and not d[1:].requires_grad


def test_recorded_views_keep_a_default_creation_meta():
    x = torch.ones(2, 3, requires_grad=True) * 1.0
    v = x[0]  # recorded in grad mode
    assert v.grad_fn is not None and torch._C._view_creation_meta(v) == 0
    v.mul_(3)  # the ordinary view + in-place path (CopySlices)
    x.sum().backward()
