"""The C++ autograd core: nodes recorded from the formula table (csrc/backend_sdk/autograd/derivatives.def),
saved variables, the graph state in the C++ AutogradMeta, and C++ and Python nodes in one graph.

PyTorch's behaviour is the reference (names, next_functions, messages); the gradients are checked
against finite differences (gradcheck) and, for double backward, gradgradcheck.
"""
from __future__ import annotations

import gc

import pytest

import backend_sdk as B
from backend_sdk import _C
from backend_sdk.autograd import AccumulateGrad, Node
from backend_sdk.testing import gradcheck, gradgradcheck


def leaf(*shape, lo=0.5, hi=1.5, seed=0):
    g = B.Generator(device="cpu")
    g.manual_seed(seed)
    return (B.rand(*shape, generator=g, dtype=B.float64) * (hi - lo) + lo).requires_grad_()


# ---- every formula of the table, against finite differences ----
UNARY = {
    "neg": lambda x: -x,
    "exp": lambda x: x.exp(),
    "log": lambda x: x.log(),
    "sqrt": lambda x: x.sqrt(),
    "sin": lambda x: x.sin(),
    "cos": lambda x: x.cos(),
    "tanh": lambda x: x.tanh(),
    "sigmoid": lambda x: x.sigmoid(),
    "pow2": lambda x: x.pow(2),
    "pow3.5": lambda x: x.pow(3.5),
    "pow0": lambda x: x.pow(0),
    "mul_scalar": lambda x: B.ops.aten.mul.Scalar(x, 3.0),
    "add_scalar": lambda x: B.ops.aten.add.Scalar(x, 3.0, 2),
    "sub_scalar": lambda x: B.ops.aten.sub.Scalar(x, 3.0),
    "rsub_scalar": lambda x: B.ops.aten.rsub.Scalar(x, 3.0, 2),
    "div_scalar": lambda x: B.ops.aten.div.Scalar(x, 4.0),
    "sum": lambda x: x.sum(),
    "sum_dim": lambda x: x.sum(1),
    "sum_dims_keepdim": lambda x: x.sum([0, -1], keepdim=True),
    "sum_neg_dim": lambda x: x.sum(-2),
    "mean": lambda x: x.mean(),
    "mean_dim": lambda x: x.mean(0),
    "mean_dim_keepdim": lambda x: x.mean([1], keepdim=True),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_formulas_match_finite_differences(name):
    x = leaf(3, 4)
    assert gradcheck(UNARY[name], (x,))


def test_relu_formula_away_from_zero():
    x = (leaf(3, 4) - 1.0).detach()
    x = B.where(x.abs() < 0.05, B.full_like(x, 0.3), x).requires_grad_()
    assert gradcheck(lambda t: t.relu(), (x,))
    y = x.relu()
    y.sum().backward()
    assert x.grad.tolist() == (x > 0).to(B.float64).tolist()


BINARY = {
    "mul": lambda a, b: a * b,
    "add_alpha": lambda a, b: B.add(a, b, alpha=2.5),
    "sub_alpha": lambda a, b: B.sub(a, b, alpha=-1.5),
    "div": lambda a, b: a / b,
}


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 1), (1, 4)), ((4,), (2, 3, 4))])
def test_binary_formulas_with_broadcasting(name, shapes):
    a, b = leaf(*shapes[0], seed=1), leaf(*shapes[1], seed=2)
    assert gradcheck(BINARY[name], (a, b))


def test_matrix_formulas():
    a, b, c = leaf(3, 5, seed=1), leaf(5, 2, seed=2), leaf(2, seed=3)
    assert gradcheck(lambda x, y: B.mm(x, y), (a, b))
    assert gradcheck(lambda s, x, y: B.addmm(s, x, y), (c, a, b))
    assert gradcheck(lambda s, x, y: B.addmm(s, x, y, beta=0.5, alpha=-2.0), (c, a, b))


@pytest.mark.parametrize("fn", [
    lambda a, b: (a * b).tanh(),
    lambda a, b: (a / b).exp().sum(1),
    lambda a, b: B.mm(a, b.t()).sigmoid(),
    lambda a, b: (a.pow(3) - b.log()).mean(),
])
def test_double_backward_through_cpp_formulas(fn):
    a, b = leaf(3, 3, seed=4), leaf(3, 3, seed=5)
    assert gradgradcheck(fn, (a, b))


def test_only_needed_inputs_get_gradients():
    a = leaf(3)
    b = leaf(3, seed=1).detach()
    (a * b).sum().backward()
    assert b.grad is None and a.grad.tolist() == b.tolist()


# ---- the graph as PyTorch shows it ----
def test_node_names_are_pytorchs():
    x, w = leaf(2, 3), leaf(3, 4)
    assert (x * x).grad_fn.name() == "MulBackward0"
    assert (x * 2).grad_fn.name() == "MulBackward0"  # a Python number is a wrapped tensor, as in PyTorch
    assert B.ops.aten.mul.Scalar(x, 2).grad_fn.name() == "MulBackward1"
    assert x.sum().grad_fn.name() == "SumBackward0"
    assert x.sum(1).grad_fn.name() == "SumBackward1"
    assert x.mean(0).grad_fn.name() == "MeanBackward1"
    assert B.mm(x, w).grad_fn.name() == "MmBackward0"
    assert B.addmm(leaf(4), x, w).grad_fn.name() == "AddmmBackward0"
    assert (x - 1).grad_fn.name() == "SubBackward0"
    assert x.relu().grad_fn.name() == "ReluBackward0"


def test_next_functions_and_accumulate_grad():
    x = leaf(3)
    y = x * 2.0
    (fn0, nr0), (fn1, nr1) = y.grad_fn.next_functions
    assert isinstance(fn0, AccumulateGrad) and nr0 == 0 and fn1 is None and nr1 == 0
    assert fn0.variable is x
    assert fn0.name() == "backend_sdk::autograd::AccumulateGrad"
    # One AccumulateGrad per leaf while a graph holds it.
    z = x.exp()
    assert z.grad_fn.next_functions[0][0] == fn0
    assert isinstance(y.grad_fn, Node) and isinstance(fn0, Node)
    assert y.grad_fn == y.grad_fn and hash(y.grad_fn) == hash(y.grad_fn)
    assert y.grad_fn.next_functions[0][0] != z.grad_fn


def test_outputs_and_leaves():
    x = leaf(3)
    y = x.exp()
    assert not y.is_leaf and y.requires_grad and y.output_nr == 0 and x.is_leaf and x.grad_fn is None
    y.detach_()
    assert y.grad_fn is None and not y.requires_grad


def test_calling_a_cpp_node_directly():
    x = leaf(3)
    y = x * x
    g = B.ones(3, dtype=B.float64)
    gx, gx2 = y.grad_fn.apply([g])
    assert gx.tolist() == x.detach().tolist() and gx2.tolist() == x.detach().tolist()
    assert y.grad_fn(g)[0].tolist() == x.detach().tolist()


# ---- saved variables ----
def test_saved_output_modified_in_place_raises_pytorchs_message():
    x = leaf(2)
    y = x.exp()
    z = y * 1  # y is saved by ExpBackward0 (its result)
    y.add_(1)
    with pytest.raises(RuntimeError, match=(
            r"one of the variables needed for gradient computation has been modified by an inplace operation: "
            r"\[backend_sdk.DoubleTensor \[2\]\], which is output 0 of \w+Backward0, is at version 1; "
            r"expected version 0 instead")):
        (z.sum() + y.sum()).backward()


def test_saved_input_modified_in_place_names_the_input():
    x = leaf(3)
    a = x * 1
    b = a * a
    a.mul_(2)
    with pytest.raises(RuntimeError, match=r"\[backend_sdk.DoubleTensor \[3\]\], which is output 0 of \w+, "
                                           r"is at version 1; expected version 0"):
        b.sum().backward()


def test_retain_graph_and_freed_saved_tensors():
    x = leaf(3)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == (4 * x.detach()).tolist()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_graph_without_saved_tensors_runs_twice():
    x = leaf(3)
    y = (x + 1).sum()
    y.backward()
    y.backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


# ---- C++ and Python nodes in one graph ----
class Square(B.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def test_mixed_python_and_cpp_nodes():
    x = leaf(2, 3)
    y = x.t()  # a view: recorded in Python
    z = Square.apply(y * 3.0)  # C++ MulBackward0 into a Function node
    w = (z.exp() * 0.5).sum()  # C++ again
    w.backward()
    expected = (9 * x.detach() * x.detach()).exp() * 0.5 * 18 * x.detach()
    assert B.testing.assert_close(x.grad, expected) is None
    assert z.grad_fn.name() == "SquareBackward"
    assert z.grad_fn.next_functions[0][0].name() == "MulBackward0"
    assert z.grad_fn.next_functions[0][0].next_functions[0][0].name() == "TBackward0"  # as PyTorch names t()


def test_autograd_grad_through_cpp_nodes():
    x, y = leaf(3), leaf(3, seed=1)
    out = (x * y).exp().sum()
    gx, gy = B.autograd.grad(out, (x, y), create_graph=True)
    e = (x * y).exp().detach()
    B.testing.assert_close(gx, e * y.detach())
    (ggx,) = B.autograd.grad(gx.sum(), x)
    B.testing.assert_close(ggx, e * y.detach() * y.detach())
    assert x.grad is None


def test_hooks_on_cpp_nodes():
    x = leaf(3)
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append(g.tolist()) or g * 10)
    y.retain_grad()
    calls = []
    y.grad_fn.register_hook(lambda gi, go: calls.append(len(gi)))
    y.sum().backward()
    assert seen == [[1.0, 1.0, 1.0]]
    assert y.grad.tolist() == [10.0, 10.0, 10.0]
    assert calls == [2]
    assert x.grad.tolist() == [20.0, 20.0, 20.0]


def test_grad_accumulates_in_cpp_recorded_graph():
    x = leaf(3)
    (x * 3).sum().backward()
    (x * 3).sum().backward()
    assert x.grad.tolist() == [6.0, 6.0, 6.0]


def test_graph_is_freed_with_its_outputs():
    import weakref

    x = leaf(1000)
    y = x.exp() * 2
    acc_ref = weakref.ref(y.grad_fn.next_functions[0][0].next_functions[0][0])
    del y
    gc.collect()
    assert acc_ref() is None  # the graph (and the leaf's AccumulateGrad) died with its last output


def test_no_grad_records_nothing_and_integer_outputs_are_not_tracked():
    x = leaf(3)
    with B.no_grad():
        assert (x * 2).grad_fn is None
    assert (x > 1).grad_fn is None


def test_meta_tensors_record_with_cpp_formulas():
    x = B.empty(2, 3, device="meta").requires_grad_()
    y = (x * 2).sum(1)
    assert y.grad_fn.name() == "SumBackward1"
    y.sum().backward()
    assert tuple(x.grad.shape) == (2, 3) and x.grad.device.type == "meta"


# ---- the C++ engine ----
def test_grad_accumulates_in_place():
    x = leaf(3)
    (x * 2).sum().backward()
    g = x.grad
    (x * 3).sum().backward()
    assert g is x.grad and g.tolist() == [5.0, 5.0, 5.0]


def test_first_gradient_follows_the_leaf_layout():
    base = leaf(3, 4)
    x = base.detach().t().requires_grad_()  # a non-contiguous leaf (strides (1, 4))
    (x * 2).sum().backward()
    assert tuple(x.grad.stride()) == tuple(x.stride())
    assert x.grad.tolist() == [[2.0] * 3] * 4


def test_create_graph_keeps_grad_history():
    x = leaf(3)
    (x * x).sum().backward(create_graph=True)
    assert x.grad.requires_grad and x.grad.grad_fn is not None
    x.grad.sum().backward()


def test_ready_nodes_run_highest_sequence_number_first():
    x = leaf(3)
    order = []
    a = x * 2
    b = x * 3
    a.grad_fn.register_hook(lambda gi, go: order.append("a"))
    b.grad_fn.register_hook(lambda gi, go: order.append("b"))
    (a + b).sum().backward()
    assert order == ["b", "a"]  # b was recorded later: PyTorch's ready queue runs it first


class WrongShape(B.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, g):
        return B.ones(5, dtype=g.dtype)


def test_gradient_of_the_wrong_shape_is_refused():
    x = leaf(3)
    with pytest.raises(RuntimeError, match=r"returned an invalid gradient at index 0 - got \[5\] but expected shape "
                                           r"compatible with \[3\]"):
        WrongShape.apply(x * 1).sum().backward()


def test_autograd_grad_of_an_intermediate_only_runs_what_it_needs():
    x = leaf(3)
    mid = x * 2
    out = (mid.exp()).sum()
    ran = []
    mid.grad_fn.register_hook(lambda gi, go: ran.append("mid"))
    (g,) = B.autograd.grad(out, mid)
    B.testing.assert_close(g, mid.detach().exp())
    assert ran == [] and x.grad is None


def test_errors_in_python_hooks_propagate_through_the_engine():
    x = leaf(3)
    y = x * 2

    def bad(g):
        raise ValueError("hook failed")

    y.register_hook(bad)
    with pytest.raises(ValueError, match="hook failed"):
        y.sum().backward()


def test_leaf_hooks_run_before_accumulation():
    x = leaf(3)
    x.register_hook(lambda g: g * 100)
    (x * 1).sum().backward()
    assert x.grad.tolist() == [100.0, 100.0, 100.0]


# ---- robustness ----
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import textwrap  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ACCEL = os.path.join(ROOT, "samples", "accel_sim", "accel", "libaccel_sim.so")


def _run(script: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([ROOT, os.path.join(ROOT, "samples", "accel_sim"), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


def test_a_very_long_chain_is_run_and_freed_without_recursion():
    # Note [Iterative graph destruction]: 200000 nodes destroyed recursively would overflow the stack.
    r = _run("""
        import backend_sdk as B
        x = B.ones(1, requires_grad=True)
        y = x
        for _ in range(200000):
            y = y * 1.0
        y.sum().backward()
        assert x.grad.tolist() == [1.0]
        y = x
        for _ in range(200000):
            y = y + 0.0
        del y
        print("OK")
    """)
    assert r.returncode == 0 and r.stdout.strip().endswith("OK"), r.stdout + r.stderr


@pytest.mark.skipif(not os.path.exists(ACCEL), reason="the accel sample backend is not built")
def test_backward_runs_on_the_stream_of_the_forward():
    r = _run("""
        import backend_sdk as B
        import accel
        s = accel.Stream()
        x = B.ones(4, device="accel", requires_grad=True)
        with accel.stream(s):
            y = x * 2
        seen = []
        y.register_hook(lambda g: seen.append(accel.current_stream() == s))
        z = y.sum()  # recorded on the default stream
        assert accel.current_stream() != s
        z.backward()
        assert seen == [True], seen
        assert accel.current_stream() != s  # the engine restores the current stream
        assert x.grad.cpu().tolist() == [2.0] * 4
        print("OK")
    """)
    assert r.returncode == 0 and r.stdout.strip().endswith("OK"), r.stdout + r.stderr


def test_grad_never_aliases_a_tensor_the_caller_holds():
    x = leaf(3)
    g = B.ones(3, dtype=B.float64)
    x.backward(g)
    assert x.grad is not g
    g.add_(1)
    assert x.grad.tolist() == [1.0, 1.0, 1.0]
    y = leaf(3)
    (y + 0).backward(g)  # AddBackward0 passes the caller's gradient through unchanged
    g.add_(1)
    assert y.grad.tolist() == [2.0, 2.0, 2.0]


def test_python_formula_nodes_that_saved_nothing_run_twice_and_freed_saves_refuse() -> None:
    # PyTorch: a graph whose nodes saved nothing backpropagates twice; reading a freed saved tensor is
    # the second-backward error. clone (a Python formula) saves nothing; log1p saves its input.
    x = B.ones(2, 3, requires_grad=True)
    y = x.clone().sum()
    y.backward()
    y.backward()
    assert x.grad.tolist() == [[2.0] * 3] * 2
    z = x.log1p().sum()
    z.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        z.backward()
