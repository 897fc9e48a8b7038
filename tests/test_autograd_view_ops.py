"""The view operators as aten operators (Note [View operators], csrc/backend_sdk/ops/Views.cpp):
PyTorch's node names, gradcheck and gradgradcheck of each one on every device, PyTorch's error
types and texts, what __torch_dispatch__ handlers and vmap see, and in-place writes through them."""
from __future__ import annotations

import pytest

import backend_sdk as B
from backend_sdk import _C
from backend_sdk.testing import gradcheck, gradgradcheck
from backend_sdk.utils._python_dispatch import TorchDispatchMode

# (label, f(x) on a [3, 4] input, PyTorch 2.13's grad_fn name of the result)
VIEWS = [
    ("view", lambda a: a.view(12), "ViewBackward0"),
    ("view_as", lambda a: a.view_as(B.empty(2, 6)), "ViewBackward0"),
    ("reshape", lambda a: a.reshape(2, 6), "ViewBackward0"),
    ("expand", lambda a: a[:1].expand(3, 4), "ExpandBackward0"),
    ("expand_lead", lambda a: a.expand(2, 3, 4), "ExpandBackward0"),
    ("t", lambda a: a.t(), "TBackward0"),
    ("transpose", lambda a: a.transpose(0, 1), "TransposeBackward0"),
    ("mT", lambda a: a.mT, "TransposeBackward0"),
    ("swapdims", lambda a: a.swapdims(0, 1), "TransposeBackward0"),
    ("permute", lambda a: a.permute(1, 0), "PermuteBackward0"),
    ("T", lambda a: a.T, "PermuteBackward0"),
    ("select", lambda a: a.select(1, -1), "SelectBackward0"),
    ("getitem_int", lambda a: a[1], "SelectBackward0"),
    ("getitem_slice", lambda a: a[1:3], "SliceBackward0"),
    ("getitem_step", lambda a: a[:, ::2], "SliceBackward0"),
    ("getitem_mixed", lambda a: a[0, 1:], "SliceBackward0"),
    ("narrow", lambda a: a.narrow(1, 1, 2), "SliceBackward0"),
    ("unsqueeze", lambda a: a.unsqueeze(-1), "UnsqueezeBackward0"),
    ("getitem_none", lambda a: a[None], "UnsqueezeBackward0"),
    ("squeeze", lambda a: a[:1].squeeze(), "SqueezeBackward0"),
    ("squeeze_dim", lambda a: a[:1].squeeze(0), "SqueezeBackward1"),
    ("squeeze_dims", lambda a: a[:1].squeeze((0, 1)), "SqueezeBackward2"),
    ("alias", lambda a: B.ops.aten.alias(a), "AliasBackward0"),
    ("getitem_ellipsis", lambda a: a[...], "AliasBackward0"),
    ("diagonal", lambda a: a.diagonal(1), "DiagonalBackward0"),
    ("diagonal_neg", lambda a: a.diagonal(-1, 1, 0), "DiagonalBackward0"),
    ("unfold", lambda a: a.unfold(1, 2, 1), "UnfoldBackward0"),
    ("unfold_disjoint", lambda a: a.unfold(1, 2, 2), "UnfoldBackward0"),
    ("unbind", lambda a: a.unbind(1)[2], "UnbindBackward0"),
    ("split", lambda a: a.split(2, 1)[1], "SplitBackward0"),
    ("split_with_sizes", lambda a: B.ops.aten.split_with_sizes(a, [1, 3], 1)[1], "SplitWithSizesBackward0"),
]


def _input(device: str) -> B.Tensor:
    B.manual_seed(0)
    return B.randn(3, 4, dtype=B.float64).to(device).requires_grad_()


@pytest.mark.parametrize("label,f,node", VIEWS, ids=[v[0] for v in VIEWS])
def test_view_records_pytorchs_node_and_is_a_view(device, label, f, node):
    a = _input(device)
    v = f(a)
    assert v.grad_fn is not None and v.grad_fn.name() == node
    assert v._is_view() and v._base is a
    assert v.untyped_storage().data_ptr() == a.untyped_storage().data_ptr()


@pytest.mark.parametrize("label,f,node", VIEWS, ids=[v[0] for v in VIEWS])
def test_view_gradcheck_and_gradgradcheck(device, label, f, node):
    a = _input(device)
    assert gradcheck(lambda x: f(x) * 1.0, (a,))
    assert gradgradcheck(lambda x: f(x) * 1.0, (a,))


def test_backward_values_of_the_fast_backwards(device):
    a = _input(device)
    w = B.arange(4.0, dtype=B.float64).to(device)
    (a.select(0, 1) * w).sum().backward()
    expected = B.zeros(3, 4, dtype=B.float64)
    expected[1] = B.arange(4.0, dtype=B.float64)
    assert a.grad.cpu().tolist() == expected.tolist()
    a.grad = None
    a.unfold(1, 3, 1).sum().backward()  # overlapping windows: columns 1, 2 are in two windows each
    assert a.grad.cpu().tolist() == [[1.0, 2.0, 2.0, 1.0]] * 3
    a.grad = None
    a[:1].expand(5, 4).sum().backward()  # expand's backward sums over the expanded dim
    assert a.grad.cpu().tolist() == [[5.0] * 4, [0.0] * 4, [0.0] * 4]


def test_detach_is_an_alias_that_is_not_a_view(device):
    a = _input(device)
    d = a.detach()
    assert d.grad_fn is None and not d.requires_grad and not d._is_view()
    assert d.data_ptr() == a.data_ptr()
    d2 = B.ops.aten.detach(a)  # the operator itself records nothing either
    assert d2.grad_fn is None and not d2.requires_grad


@pytest.mark.parametrize("f,exc,text", [
    (lambda x: x.select(0, 5), IndexError, "select(): index 5 out of range for tensor of size [3, 4] at dimension 0"),
    (lambda x: B.tensor(1.0).select(0, 0), IndexError, "select() cannot be applied to a 0-dim tensor."),
    (lambda x: x[5], IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda x: x[:, 4], IndexError, "index 4 is out of bounds for dimension 1 with size 4"),
    (lambda x: x.select(3, 0), IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 3)"),
    (lambda x: B.ops.aten.slice.Tensor(x, 0, None, None, 0), RuntimeError, "slice step must be positive"),
    (lambda x: x[::-1], ValueError, "step must be greater than zero"),
    (lambda x: x.narrow(0, 2, 5), RuntimeError, "start (2) + length (5) exceeds dimension size (3)."),
    (lambda x: x.narrow(0, 5, 1), IndexError, "start out of range (expected to be in range of [-3, 3], but got 5)"),
    (lambda x: x.narrow(0, 1, -1), RuntimeError, "narrow(): length must be non-negative."),
    (lambda x: x.unfold(0, 5, 1), RuntimeError, "maximum size for tensor at dimension 0 is 3 but size is 5"),
    (lambda x: x.unfold(0, 2, 0), RuntimeError, "step is 0 but must be > 0"),
    (lambda x: x.transpose(0, 2), IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda x: x.unsqueeze(4), IndexError, "Dimension out of range (expected to be in range of [-3, 2], but got 4)"),
    (lambda x: x.squeeze(3), IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 3)"),
    (lambda x: x.permute(0), RuntimeError, "input.dim() = 2 is not equal to len(dims) = 1"),
    (lambda x: x.permute(0, 0), RuntimeError, "permute(): duplicate dims are not allowed."),
    (lambda x: x.expand(5, 4), RuntimeError,
     "The expanded size of the tensor (5) must match the existing size (3) at non-singleton dimension 0"),
    (lambda x: x.expand(-1, 3, 4), RuntimeError,
     "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension 0"),
    (lambda x: B.randn(2, 2, 2).t(), RuntimeError, "t() expects a tensor with <= 2 dimensions, but self is 3D"),
    (lambda x: x.diagonal(0, 0, 0), RuntimeError, "diagonal dimensions cannot be identical 0, 0"),
])
def test_errors_are_pytorchs(device, f, exc, text):
    x = B.randn(3, 4).to(device)
    with pytest.raises(exc) as info:
        f(x)
    assert text in str(info.value)


class _Names(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(func.name())
        return func(*args, **(kwargs or {}))


def test_dispatch_handlers_see_the_view_operators(device):
    x = B.randn(3, 4).to(device)
    with _Names() as mode:
        x.t(), x.transpose(0, 1), x[0], x[1:], x.detach(), x.unsqueeze(0), x.permute(1, 0), x.narrow(0, 0, 1)
        x.expand(2, 3, 4), x[None, :1].squeeze(0), x.diagonal(), x.unfold(0, 2, 1), x[...]
    assert mode.names == ["aten::t", "aten::transpose.int", "aten::select.int", "aten::slice.Tensor",
                          "aten::detach", "aten::unsqueeze", "aten::permute", "aten::slice.Tensor",
                          "aten::expand", "aten::unsqueeze", "aten::slice.Tensor", "aten::squeeze.dim",
                          "aten::diagonal", "aten::unfold", "aten::alias"]
    assert "aten::as_strided" not in mode.names


def test_views_on_meta_tensors():
    x = B.empty(3, 4, device="meta")
    assert x.transpose(0, 1).shape == (4, 3) and x.transpose(0, 1).stride() == (1, 4)
    assert x[1].shape == (4,) and x[1].storage_offset() == 4
    assert x.unfold(1, 2, 1).shape == (3, 3, 2) and x.unfold(1, 2, 1).stride() == (4, 1, 1)
    assert x.diagonal().shape == (3,) and x.diagonal().stride() == (5,)


@pytest.mark.parametrize("f", [
    lambda v: v.transpose(0, 1), lambda v: v.t(), lambda v: v.permute(1, 0), lambda v: v.select(1, 2),
    lambda v: v[1:], lambda v: v.narrow(1, 1, 2), lambda v: v.unsqueeze(-1), lambda v: v[:1].squeeze(),
    lambda v: v[:1].squeeze(0), lambda v: v[:, :1].expand(3, 5), lambda v: v.expand(2, 3, 4),
    lambda v: v.diagonal(), lambda v: v.unfold(1, 2, 1), lambda v: B.ops.aten.alias(v), lambda v: v.detach(),
])
def test_vmap_of_each_view_operator_matches_the_loop(f):
    x = B.randn(5, 3, 4)
    with _no_fallback_warning():
        out = B.func.vmap(f)(x)
    expected = B.stack([f(x[i]) for i in range(5)])
    assert out.shape == expected.shape
    assert out.tolist() == expected.tolist()


class _no_fallback_warning:
    def __enter__(self):
        import warnings

        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.filterwarnings("error", message="There is a performance drop")
        return self

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)


def test_inplace_write_into_a_view_rebases_the_base(device):
    x = _input(device)
    b = x * 1.0
    v = b[1:]
    v.mul_(2)
    assert b.grad_fn.name() == "backend_sdk::autograd::CopySlices"
    b.sum().backward()
    assert x.grad.cpu().tolist() == [[1.0] * 4, [2.0] * 4, [2.0] * 4]
    # a view of a leaf that requires grad refuses the write (PyTorch's message)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used in an "
                                           "in-place operation"):
        x.transpose(0, 1).add_(1)


def test_inplace_view_operators_keep_working(device):
    x = B.randn(3, 4).to(device)
    y = x.clone()
    assert y.transpose_(0, 1).shape == (4, 3) and y._version == 1
    assert y.t_().shape == (3, 4)
    assert y.unsqueeze_(0).shape == (1, 3, 4) and y.squeeze_().shape == (3, 4)
    assert y.cpu().tolist() == x.cpu().tolist()


def test_view_operators_have_pytorchs_schemas():
    for name, schema in [
        ("aten::transpose.int", "transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)"),
        ("aten::select.int", "select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)"),
        ("aten::slice.Tensor", "slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, "
                               "SymInt step=1) -> Tensor(a)"),
        ("aten::expand", "expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)"),
        ("aten::squeeze.dims", "squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)"),
        ("aten::unfold", "unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)"),
        ("aten::narrow", "narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)"),
    ]:
        op = _C._get_op_overload(name)
        assert str(op._schema).endswith(schema), (name, str(op._schema))


def test_split_with_a_list_of_sizes_is_split_with_sizes(device):
    a = _input(device)
    parts = a.split([1, 3], 1)
    assert [tuple(p.shape) for p in parts] == [(3, 1), (3, 3)]
    assert parts[1].grad_fn.name() == "SplitWithSizesBackward0"
    assert a.chunk(2)[0].grad_fn.name() == "SplitBackward0"  # chunk is split in PyTorch


@pytest.mark.parametrize("make,name", [
    (lambda b: b.unbind(0)[1], "Output 1 of Unbind"),
    (lambda b: b.split(2)[1], "Output 1 of Split"),
    (lambda b: b.chunk(2)[0], "Output 0 of Split"),
])
def test_inplace_write_into_a_multi_output_view_is_refused(device, make, name):
    a = _input(device)
    v = make(a.clone())
    with pytest.raises(RuntimeError, match=f"^{name} is a view and is being modified inplace. This view is the "
                                           "output of a function that returns multiple views."):
        v.mul_(2)
    with pytest.raises(RuntimeError, match="Output 0 of Unbind is a view and is being modified inplace"):
        a.unbind(0)[0].mul_(2)  # before the leaf-view check, as PyTorch's
    with B.no_grad():
        make(a.clone()).mul_(2)  # not recorded: allowed


def test_double_backward_through_copyslices(device):
    x = _input(device)

    def f(t):
        b = t * 1.0
        b[1:].tanh_()
        return b

    b = f(x)
    assert b.grad_fn.name() == "backend_sdk::autograd::CopySlices"
    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))


def test_an_inference_tensor_that_requires_grad_records_nothing_outside_inference_mode():
    # PyTorch's test_inference_mode_inf_tensor_in_normal_mode_view_op (test/test_autograd.py)
    for requires_grad in (True, False):
        with B.inference_mode():
            c = B.ones(1, 2, 3, requires_grad=requires_grad)
        assert c.requires_grad == requires_grad
        out = c.view(-1)
        assert B.is_inference(out) and not out.requires_grad and not out._is_view() and out.is_leaf
        out = c.transpose(0, 1) * 2
        assert not out.requires_grad and out.grad_fn is None
