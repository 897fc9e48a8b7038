"""Regression tests for the kernel bugs the OpInfo tests found (each also covered by the OpInfo
sweep; these pin the exact behaviour and error texts), on every test device (the ``device`` fixture: cpu,
accel, pyaccel) and on Meta."""
from __future__ import annotations

import numpy as np
import pytest

import backend_sdk
from backend_sdk import _C


class _On:
    """``backend_sdk`` with its factories placed on one device (for the parametrized calls below)."""

    def __init__(self, device: str) -> None:
        self.device = device

    def __getattr__(self, name: str):
        fn = getattr(backend_sdk, name)
        if name in ("zeros", "ones", "tensor", "empty"):
            return lambda *a, **k: fn(*a, **{"device": self.device, **k})
        return fn


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.float32])
@pytest.mark.parametrize("view", ["sliced", "transposed"])
def test_sum_with_accumulation_dtype_of_non_contiguous_input(device, dtype, view) -> None:
    """sum/prod/mean reduce a converted contiguous copy: the plan must be made for the copy's strides."""
    a = (np.arange(24) % 7 - 3).astype(dtype).reshape(3, 8)
    x = backend_sdk.from_numpy(a).to(device)
    xv, av = (x[:, ::2], a[:, ::2]) if view == "sliced" else (x.t(), a.T)
    assert backend_sdk.sum(xv).item() == int(av.astype(np.int64).sum())
    np.testing.assert_array_equal(backend_sdk.sum(xv, [1]).cpu().numpy(), av.astype(np.int64).sum(1))
    np.testing.assert_allclose(backend_sdk.sum(xv, [0], dtype=backend_sdk.float64).cpu().numpy(),
                               av.astype(np.float64).sum(0))
    np.testing.assert_allclose(backend_sdk.prod(xv, 1, dtype=backend_sdk.float64).cpu().numpy(),
                               av.astype(np.float64).prod(1))
    if dtype == np.float32:
        np.testing.assert_allclose(backend_sdk.mean(xv, [1], dtype=backend_sdk.float64).cpu().numpy(), av.mean(1))


def test_matmul_empty_batch_broadcasts_to_zero(device) -> None:
    r = backend_sdk.matmul(backend_sdk.ones(0, 3, 4, device=device), backend_sdk.ones(4, 2, device=device))
    assert tuple(r.shape) == (0, 3, 2)
    r = backend_sdk.matmul(backend_sdk.ones(0, 3, 4, device=device), backend_sdk.ones(1, 4, 2, device=device))
    assert tuple(r.shape) == (0, 3, 2)
    m = backend_sdk.matmul(backend_sdk.empty(0, 3, 4, device="meta"), backend_sdk.empty(4, 2, device="meta"))
    assert tuple(m.shape) == (0, 3, 2)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_extremum_of_bool_is_a_type_error(device, name) -> None:
    x = backend_sdk.tensor([True, False], device=device)
    with pytest.raises(TypeError, match=rf"{name}: \"{name}_\w+\" not implemented for 'Bool'"):
        getattr(backend_sdk, name)(x)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "int64"])
def test_logsumexp_of_integral_input_is_default_float(device, dtype) -> None:
    a = np.array([[1, 0, 1], [0, 1, 1]]).astype(dtype)
    r = backend_sdk.logsumexp(backend_sdk.from_numpy(a).to(device), [1])
    assert r.dtype == backend_sdk.get_default_dtype()
    np.testing.assert_allclose(r.cpu().numpy(), np.log(np.exp(a.astype(np.float64)).sum(1)), rtol=1e-6)


@pytest.mark.parametrize("op", ["mm", "bmm", "addmm", "addmm_"])
def test_out_and_inplace_matrix_products_have_meta_kernels(op) -> None:
    q = {"mm": "aten::mm.out", "bmm": "aten::bmm.out", "addmm": "aten::addmm.out", "addmm_": "aten::addmm_"}[op]
    assert "missing" not in [line for line in _C._dispatch_dump_table(q).splitlines() if line.startswith("Meta:")][0]
    meta = lambda *s: backend_sdk.empty(*s, device="meta")  # noqa: E731
    if op == "mm":
        out = meta(0)
        assert backend_sdk.mm(meta(2, 3), meta(3, 4), out=out) is out and tuple(out.shape) == (2, 4)
        with pytest.raises(ValueError, match="mm"):
            backend_sdk.mm(meta(2, 3), meta(4, 4), out=meta(2, 4))
    elif op == "bmm":
        out = meta(5, 2, 4)
        assert backend_sdk.bmm(meta(5, 2, 3), meta(5, 3, 4), out=out) is out
    elif op == "addmm":
        out = meta(2, 4)
        assert backend_sdk.addmm(meta(4), meta(2, 3), meta(3, 4), out=out) is out
    else:
        s = meta(2, 4)
        assert s.addmm_(meta(2, 3), meta(3, 4)) is s
        with pytest.raises(ValueError, match="addmm_"):
            meta(4).addmm_(meta(2, 3), meta(3, 4))


def test_normal_with_tensor_std_on_meta(device) -> None:
    mean, std = backend_sdk.empty(3, 4, device="meta"), backend_sdk.empty(4, device="meta")
    r = backend_sdk.normal(mean, std)
    assert r.device.type == "meta" and tuple(r.shape) == (3, 4)
    with pytest.raises(ValueError, match="normal expects all elements of std >= 0.0"):
        backend_sdk.normal(backend_sdk.zeros(3, device=device), -backend_sdk.ones(3, device=device))


def test_masked_fill_with_a_0d_tensor_value(device) -> None:
    x = backend_sdk.from_numpy(np.arange(6, dtype=np.int64).reshape(2, 3)).to(device)
    m = backend_sdk.tensor([True, False, True], device=device)
    r = backend_sdk.masked_fill(x, m, backend_sdk.tensor(2.7, device=device))  # value cast to self's dtype
    assert r.dtype == backend_sdk.int64
    np.testing.assert_array_equal(r.cpu().numpy(), [[2, 1, 2], [2, 4, 2]])
    assert x.masked_fill_(m, backend_sdk.tensor(-1, device=device)) is x
    np.testing.assert_array_equal(x.cpu().numpy(), [[-1, 1, -1], [-1, 4, -1]])
    with pytest.raises(ValueError, match=r"masked_fill_ only supports a 0-dimensional value tensor, but got tensor "
                                         r"with 1 dimension\(s\)\."):
        backend_sdk.masked_fill(x, m, backend_sdk.ones(3, device=device))
    with pytest.raises(TypeError, match="masked_fill_ only supports boolean masks"):
        backend_sdk.masked_fill(x, backend_sdk.tensor([1, 0, 1], device=device), backend_sdk.tensor(1, device=device))


# ---- index_add / index_copy / index_fill (composites over index_put; values are in the OpInfo sweep) ----
def test_index_add_autograd_goes_through_index_put(device) -> None:
    x = backend_sdk.zeros(3, 4, requires_grad=True, device=device)
    s = backend_sdk.ones(2, 4, requires_grad=True, device=device)
    y = backend_sdk.index_add(x, 0, backend_sdk.tensor([0, 2], device=device), s, alpha=3)
    (y * y).sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [[6] * 4, [0] * 4, [6] * 4])
    np.testing.assert_array_equal(s.grad.cpu().numpy(), np.full((2, 4), 18.0))


@pytest.mark.parametrize("call, kind, message", [
    (lambda b: b.index_add(b.zeros(3, 4), 0, b.tensor([[0]]), b.ones(1, 4)), ValueError,
     r"index_add\(\): Index is supposed to be a vector"),
    (lambda b: b.index_fill(b.zeros(3, 4), 1, b.tensor([0.0]), 1), TypeError,
     r"index_fill\(\): Expected dtype int32/int64 for index"),
    (lambda b: b.index_add(b.zeros(3, 4), 0, b.tensor([0]), b.ones(2, 4)), ValueError,
     r"index_add\(\): Number of indices \(1\) should be equal to source.size\(dim\) \(2\)"),
    (lambda b: b.index_copy(b.zeros(3, 4), 0, b.tensor([0]), b.ones(1, 4, dtype=b.float64)), TypeError,
     r"index_copy\(\): self \(float32\) and source \(float64\) must have the same scalar type"),
    (lambda b: b.index_copy(b.zeros(3, 4), 0, b.tensor([0]), b.ones(4)), ValueError,
     r"index_copy\(\): When source and destination are not scalars, their dimensionality must match"),
    (lambda b: b.zeros(3, 4).index_fill_(0, b.tensor([0]), b.ones(2)), ValueError,
     r"index_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension\(s\)\."),
    (lambda b: b.index_copy(b.zeros(3, 4), 0, b.tensor([0, 5]), b.ones(2, 4)), IndexError, r"5.*size 3"),
])
def test_index_func_bad_input(device, call, kind, message) -> None:
    if kind is IndexError and device == "accel":
        # accel_sim checks indices in its kernel and reports a bad one at the next synchronize (as CUDA's
        # device-side assert), so the error's type differs there; its text is the same.
        with pytest.raises(backend_sdk.AcceleratorError, match=message):
            call(_On(device))
            backend_sdk.accel.synchronize()
        return
    with pytest.raises(kind, match=message):
        call(_On(device))


# ---- scatter_reduce.two (values across dtypes are in the OpInfo sweep) ----
def test_scatter_reduce_pytorch_docs_example(device) -> None:
    src = backend_sdk.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], device=device)
    index = backend_sdk.tensor([0, 1, 0, 1, 2, 1], device=device)
    x = backend_sdk.tensor([1.0, 2.0, 3.0, 4.0], device=device)
    np.testing.assert_array_equal(x.scatter_reduce(0, index, src, reduce="sum").cpu().numpy(), [5, 14, 8, 4])
    np.testing.assert_array_equal(x.scatter_reduce(0, index, src, reduce="amax", include_self=False).cpu().numpy(),
                                  [3, 6, 5, 4])
    np.testing.assert_allclose(x.scatter_reduce(0, index, src, reduce="mean").cpu().numpy(), [5 / 3, 3.5, 4, 4],
                               rtol=1e-6)
    y = backend_sdk.tensor([1, 2, 3, 4], device=device)
    assert y.scatter_reduce_(0, index, backend_sdk.tensor([1, 2, 3, 4, 5, 6], device=device), "mean") is y
    np.testing.assert_array_equal(y.cpu().numpy(), [1, 3, 4, 4])  # integral mean floors: 5//3, 14//4, 8//2
    with pytest.raises(ValueError, match="scatter_reduce\\(\\): reduce argument must be either sum, prod, mean, amax "
                                         "or amin, got max"):
        x.scatter_reduce(0, index, src, reduce="max")
    with pytest.raises(TypeError, match="Expected self.dtype to be equal to src.dtype"):
        x.scatter_reduce(0, index, src.to(backend_sdk.float64), reduce="sum")


def test_inplace_on_an_empty_tensor_with_zero_strides(device) -> None:
    """numpy gives an empty (0, 3) array strides (0, 0); PyTorch treats numel-0 tensors as contiguous,
    so in-place ops on them have no internal overlap."""
    x = backend_sdk.from_numpy(np.zeros((0, 3), np.float32)).to(device)
    assert x.add_(1) is x and tuple(x.shape) == (0, 3)
    with pytest.raises(ValueError, match="more than one element of the written-to tensor"):
        backend_sdk.zeros(1, 3, device=device).expand(2, 3).add_(1)


def test_masked_scatter(device) -> None:
    x = backend_sdk.from_numpy(np.zeros((2, 3), np.float32)).to(device)
    mask = backend_sdk.tensor([True, False, True], device=device)
    src = backend_sdk.from_numpy(np.arange(1, 7, dtype=np.float32)).to(device)
    np.testing.assert_array_equal(x.masked_scatter(mask, src).cpu().numpy(), [[1, 0, 2], [3, 0, 4]])
    assert x.masked_scatter_(mask, src) is x
    np.testing.assert_array_equal(x.cpu().numpy(), [[1, 0, 2], [3, 0, 4]])
    column = backend_sdk.tensor([[True], [False]], device=device)
    r = backend_sdk.zeros(3, device=device).masked_scatter(column, src)  # self broadcast
    np.testing.assert_array_equal(r.cpu().numpy(), [[1, 2, 3], [0, 0, 0]])
    with pytest.raises(ValueError, match=r"masked_scatter_: Number of elements of source < number of ones in mask"):
        backend_sdk.zeros(2, 3, device=device).masked_scatter_(mask, backend_sdk.ones(3, device=device))
    with pytest.raises(TypeError, match="masked_scatter_ only supports boolean masks"):
        backend_sdk.zeros(2, 3, device=device).masked_scatter_(backend_sdk.tensor([1, 0, 1], device=device), src)
    with pytest.raises(TypeError, match="expected self and source to have same dtypes but got float32 and float64"):
        backend_sdk.zeros(2, 3, device=device).masked_scatter_(mask, src.to(backend_sdk.float64))
    with pytest.raises(ValueError, match="does not broadcast to self's shape"):
        backend_sdk.zeros(3, device=device).masked_scatter_(backend_sdk.tensor([[True], [False]], device=device), src)
    m = backend_sdk.empty(2, 3, device="meta").masked_scatter(mask.to("meta"), src.to("meta"))
    assert m.device.type == "meta" and tuple(m.shape) == (2, 3)


def test_nll_loss2d_checks_shapes(device) -> None:
    x = backend_sdk.zeros(2, 4, 3, 5, device=device)
    t = backend_sdk.zeros(2, 3, 5, dtype=backend_sdk.int64, device=device)
    assert backend_sdk.nll_loss2d(x, t).dim() == 0
    with pytest.raises(ValueError, match=r"only batches of spatial inputs supported \(4D tensors\)"):
        backend_sdk.nll_loss2d(backend_sdk.zeros(2, 4, device=device), t)
    with pytest.raises(ValueError, match=r"only batches of spatial targets supported \(3D tensors\)"):
        backend_sdk.nll_loss2d(x, backend_sdk.zeros(2, 3, dtype=backend_sdk.int64, device=device))
