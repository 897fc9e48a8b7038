"""Autograd-facing Tensor API facts of PyTorch 2.13: tensor hooks of outputs no gradient reached, calling a
node, attribute deletion and ``.data`` assignment, ``_backward_hooks``, the in-place view operators,
var_mean / std_mean, and re-running a released autograd.Function node."""
from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

import backend_sdk as torch


def test_a_tensor_hook_sees_none_when_its_output_got_no_gradient():
    x = torch.randn(4, requires_grad=True)
    parts = x.unbind()
    seen: list = []
    parts[0].register_hook(lambda g: seen.append(g))
    parts[0].backward()
    parts[2].backward()  # the same UnbindBackward node runs; output 0 gets no gradient this time
    assert seen[0].item() == 1.0 and seen[1] is None
    assert x.grad.tolist() == [1.0, 0.0, 1.0, 0.0]
    parts[1].register_hook(lambda g: torch.ones(()))
    with pytest.raises(RuntimeError, match="can't replace a None gradient with a non-None value"):
        parts[3].backward()


@pytest.mark.parametrize("make", [lambda t: t ** 2, lambda t: t.clone()], ids=["cpp-node", "python-node"])
def test_calling_a_node_checks_the_number_of_gradients(make):
    y = make(torch.ones(1, requires_grad=True))
    with pytest.raises(TypeError, match="expected 1 arguments, got 2 instead"):
        y.grad_fn(torch.ones(1), torch.ones(1))
    with pytest.raises(TypeError, match="expected 1 arguments, got 0 instead"):
        y.grad_fn()
    assert y.grad_fn(torch.ones(1)).shape == (1,)


def test_attribute_deletion_is_refused_with_pytorchs_messages():
    x = torch.randn(3, requires_grad=True)
    x.sum().backward()
    del x.grad
    assert x.grad is None
    cases = {"data": "Deleting tensor data is not allowed. Delete tensor instead!",
             "requires_grad": "requires_grad must be a bool",
             "_grad_fn": "Deletion of _grad_fn not allowed. Detach tensor instead!",
             "_backward_hooks": "Deletion of _backwards_hooks not allowed!"}
    for name, message in cases.items():
        with pytest.raises(RuntimeError, match=message):
            delattr(x, name)


def test_assigning_data_shares_the_new_tensors_memory_and_keeps_the_autograd_state():
    x = torch.randn(5, requires_grad=True)
    new = torch.zeros(2, 2)
    x.data = new
    assert x.shape == (2, 2) and x.requires_grad and x.is_leaf
    assert x.data_ptr() == new.data_ptr()
    (x * 3).sum().backward()
    assert x.grad.tolist() == [[3.0, 3.0], [3.0, 3.0]]
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got NoneType"):
        x.data = None
    with pytest.raises(RuntimeError, match="incompatible tensor type"):
        x.data = torch.zeros(2, dtype=torch.float64)


def test_backward_hooks_reads_and_assigns_the_tensor_hooks():
    x = torch.ones(2, requires_grad=True)
    assert x._backward_hooks is None and x._grad_fn is None
    hook = lambda g: g * 2  # noqa: E731
    x.register_hook(hook)
    assert list(x._backward_hooks.values()) == [hook]
    x._backward_hooks = OrderedDict(double=hook, triple=lambda g: g * 3)
    x.sum().backward()
    assert x.grad.tolist() == [6.0, 6.0]
    plain = torch.ones(2)
    plain._backward_hooks = OrderedDict()  # a tensor outside autograd keeps the dict, runs nothing
    plain._backward_hooks["never"] = lambda g: 1 / 0
    assert "never" in plain._backward_hooks


@pytest.mark.parametrize("name,args,view", [
    ("transpose_", (0, 2), lambda t: t.transpose(0, 2)),
    ("swapdims_", (1, 2), lambda t: t.transpose(1, 2)),
    ("swapaxes_", (0, 1), lambda t: t.transpose(0, 1)),
    ("unsqueeze_", (1,), lambda t: t.unsqueeze(1)),
    ("squeeze_", (), lambda t: t.squeeze()),
])
def test_inplace_view_operators_change_self_and_count_a_write(name, args, view):
    a = np.arange(6, dtype=np.float32).reshape(1, 2, 3) if name != "unsqueeze_" else np.arange(6, dtype=np.float32)
    x = torch.from_numpy(a.copy())
    expected = view(torch.from_numpy(a.copy()))
    out = getattr(x, name)(*args)
    assert out is x and x._version == 1
    assert tuple(x.shape) == tuple(expected.shape) and x.stride() == expected.stride()
    np.testing.assert_array_equal(x.numpy(), expected.numpy())


def test_t_inplace_and_its_gradient():
    a = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    w = torch.tensor([[1.0, 10.0], [100.0, 1000.0], [1e4, 1e5]])
    b = a * 1.0
    b.t_()
    assert b.shape == (3, 2) and b._version == 1
    (b * w).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), w.t().numpy())  # each element's weight, transposed back


def test_inplace_view_operator_errors():
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation."):
        torch.ones(2, 3, requires_grad=True).transpose_(0, 1)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-1, 0\], but got 3\)"):
        torch.ones(2).transpose_(0, 3)
    with torch.inference_mode():
        inf = torch.ones(2, 3)
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
        inf.transpose_(0, 1)


def test_var_mean_and_std_mean_match_numpy_and_differentiate():
    a = np.array([[1.0, 2.0, 4.0], [3.0, 5.0, 9.0]])
    x = torch.tensor(a, requires_grad=True)
    var, mean = torch.var_mean(x)
    np.testing.assert_allclose([var.item(), mean.item()], [a.var(ddof=1), a.mean()])
    var, mean = torch.var_mean(x, 1, correction=0, keepdim=True)
    np.testing.assert_allclose(var.detach().numpy(), a.var(1, keepdims=True))
    np.testing.assert_allclose(mean.detach().numpy(), a.mean(1, keepdims=True))
    std, mean = torch.std_mean(x, 0, unbiased=False)
    np.testing.assert_allclose(std.detach().numpy(), a.std(0))
    (std.sum() + mean.sum()).backward()
    expected = (a - a.mean(0)) / (a.shape[0] * a.std(0)) + 1 / a.shape[0]
    np.testing.assert_allclose(x.grad.numpy(), expected)
    with pytest.raises(RuntimeError, match="var_mean only support floating point and complex dtypes"):
        torch.var_mean(torch.ones(2, dtype=torch.int64))


class _Clone(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return g.clone()


class _Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def test_a_released_function_node_runs_again_unless_it_reads_saved_tensors():
    x = torch.ones(2, requires_grad=True)
    edge = torch.autograd.graph.get_gradient_edge(_Clone.apply(x))
    torch.autograd.backward(edge, (torch.ones(2),))
    torch.autograd.backward(edge, (torch.ones(2),))  # nothing saved: the second run works, as PyTorch's
    assert x.grad.tolist() == [2.0, 2.0]
    y = _Square.apply(x)
    y.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.sum().backward()
