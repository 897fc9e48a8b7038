"""Node prehooks, post-accumulate-grad hooks and the order of every hook at a node and at a leaf, as
PyTorch's engine runs them (Note [Autograd engine]); backward(inputs=...) running its captured nodes."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import backend_sdk as torch


def leaf(*values: float) -> torch.Tensor:
    return torch.tensor(list(values), requires_grad=True)


def node_kinds():
    """A C++ formula node (mul) and a Python one (clone), so both kinds get the same hooks."""
    return [pytest.param(lambda t: t * 1.0, id="cpp-node"), pytest.param(lambda t: t.clone(), id="python-node")]


@pytest.mark.parametrize("make", node_kinds())
def test_node_prehook_runs_after_the_tensor_hooks_whatever_the_registration_order(make):
    log: list[str] = []
    a = leaf(1.0)
    b = make(a)
    b.grad_fn.register_prehook(lambda gs: log.append("pre") or tuple(g * 2 for g in gs))
    b.register_hook(lambda g: log.append("tensor") or g * 3)
    b.sum().backward()
    assert log == ["tensor", "pre"]
    assert a.grad.tolist() == [6.0]  # 1 * 3 (tensor hook) * 2 (prehook)


@pytest.mark.parametrize("make", node_kinds())
def test_node_prehook_that_returns_the_wrong_number_of_values_is_refused(make):
    b = make(leaf(1.0))
    b.grad_fn.register_prehook(lambda gs: (gs[0], gs[0]))
    with pytest.raises(RuntimeError, match=r"has returned an incorrect number of values \(got 2, but expected 1\)"):
        b.sum().backward()


@pytest.mark.parametrize("make", node_kinds())
def test_removed_node_prehook_does_not_run(make):
    b = make(leaf(1.0))
    handle = b.grad_fn.register_prehook(lambda gs: tuple(g * 10 for g in gs))
    handle.remove()
    a = b.grad_fn.next_functions[0][0].variable
    b.sum().backward()
    assert a.grad.tolist() == [1.0]


def test_accumulate_grad_hooks_in_pytorchs_order():
    # tensor hook -> AccumulateGrad prehook -> accumulation -> post-accumulate hook -> AccumulateGrad hook
    t = leaf(0.0, 0.0)
    acc = t.view_as(t).grad_fn.next_functions[0][0]
    log: list[str] = []
    t.register_hook(lambda g: log.append("tensor") or g - 2.0)
    acc.register_prehook(lambda gs: log.append("pre") or (gs[0] / 5.0,))

    def post_accumulate(x):
        log.append("post-acc")
        x.grad.add_(0.5)

    t.register_post_accumulate_grad_hook(post_accumulate)
    seen: list = []
    acc.register_hook(lambda grad_inputs, grad_outputs: seen.append((grad_inputs, grad_outputs)))
    t.sum().backward()
    assert log == ["tensor", "pre", "post-acc"]
    np.testing.assert_allclose(t.grad.numpy(), [0.3, 0.3], rtol=1e-6)
    (grad_inputs, grad_outputs), = seen
    assert grad_inputs == () and len(grad_outputs) == 1
    # nothing else held the prehook's result, so it became .grad itself: the hook sees the +0.5
    assert grad_outputs[0].data_ptr() == t.grad.data_ptr()


def test_a_gradient_a_hook_kept_is_copied_into_grad():
    t = leaf(1.0, 2.0)
    kept: list = []
    t.register_hook(lambda g: kept.append(g * 1.0) or kept[-1])
    t.sum().backward()
    assert t.grad.data_ptr() != kept[0].data_ptr()
    assert t.grad.tolist() == [1.0, 1.0]


def test_post_accumulate_grad_hooks_run_in_order_after_grad_is_set():
    t = leaf(1.0, 1.0)

    def step(x):
        x.data.sub_(x.grad)

    def scale(x):
        x.data.mul_(4.0)

    t.register_post_accumulate_grad_hook(step)
    t.register_post_accumulate_grad_hook(scale)
    (t * 3.0).sum().backward()
    assert t.tolist() == [-8.0, -8.0]  # (1 - 3) * 4


def test_post_accumulate_grad_hook_errors():
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on non-leaf tensors"):
        (leaf(1.0) * 2).register_post_accumulate_grad_hook(lambda x: None)
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        torch.ones(2).register_post_accumulate_grad_hook(lambda x: None)
    t = leaf(1.0)
    t.register_post_accumulate_grad_hook(lambda x: x.grad)
    with pytest.raises(RuntimeError, match="Tensor post accumulate grad hooks should return None."):
        t.sum().backward()


def test_post_accumulate_grad_hook_removed_and_not_run_by_autograd_grad():
    t = leaf(1.0)
    calls: list = []
    handle = t.register_post_accumulate_grad_hook(lambda x: calls.append(1))
    torch.autograd.grad((t * 2).sum(), t)
    assert calls == [] and t.grad is None  # autograd.grad accumulates nothing
    t.sum().backward()
    assert calls == [1]
    handle.remove()
    t.sum().backward()
    assert calls == [1]


def test_backward_with_inputs_runs_the_leafs_accumulate_grad_and_its_hooks():
    a, b = leaf(1.0), leaf(2.0)
    acc = a.view_as(a).grad_fn.next_functions[0][0]
    log: list[str] = []
    acc.register_prehook(lambda gs: log.append("pre") or None)
    a.register_post_accumulate_grad_hook(lambda x: log.append("post-acc"))
    (a * b).sum().backward(inputs=[a])
    assert log == ["pre", "post-acc"]
    assert a.grad.tolist() == [2.0] and b.grad is None


def test_backward_with_a_non_leaf_input_runs_its_grad_fn_but_nothing_past_it():
    log: list[str] = []
    a = leaf(1.0)
    b = a.clone()
    b.register_hook(lambda g: log.append("tensor") or g * 3)
    b.grad_fn.register_prehook(lambda gs: log.append("pre") or tuple(g * 2 for g in gs))
    acc = b.grad_fn.next_functions[0][0]
    acc.register_prehook(lambda gs: log.append("acc-pre") or None)
    b.sum().backward(inputs=(b,))
    assert log == ["tensor", "pre"]  # the grad_fn runs (its prehooks), a's accumulator does not
    assert b.retains_grad  # as PyTorch, backward(inputs=...) retains a non-leaf input's grad
    assert b.grad.tolist() == [3.0]  # after the tensor hook, before the node's prehooks
    assert a.grad is None


def test_autograd_grad_runs_no_hook_off_the_path_to_its_inputs():
    a = leaf(1.0)
    b = a * 2
    c = b * 2
    counts = {"tensor": 0, "pre": 0, "post": 0}
    a.register_hook(lambda g: counts.__setitem__("tensor", counts["tensor"] + 1))
    b.grad_fn.register_prehook(lambda gs: counts.__setitem__("pre", counts["pre"] + 1))
    b.grad_fn.register_hook(lambda gi, go: counts.__setitem__("post", counts["post"] + 1))
    torch.autograd.grad(c, inputs=(b,), retain_graph=True)
    assert counts == {"tensor": 0, "pre": 0, "post": 0}
    torch.autograd.grad(c, inputs=(a,), retain_graph=True)
    assert counts == {"tensor": 1, "pre": 1, "post": 1}


def test_backward_with_create_graph_warns_of_the_reference_cycle_but_grad_does_not():
    b = leaf(1.0, 2.0)
    c = b * b
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        c.backward(torch.ones_like(c), create_graph=True)
    assert any("Using backward() with create_graph=True will create a reference cycle" in str(w.message)
               for w in caught)
    b.grad = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.autograd.grad(c, b, torch.ones_like(c), create_graph=True)
    assert not any("reference cycle" in str(w.message) for w in caught)
