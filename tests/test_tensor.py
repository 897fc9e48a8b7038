"""Tensors: metadata, views sharing storage, indexing, factories, numpy/DLPack interop, repr."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import backend_sdk
from backend_sdk import _C

from conftest import arange_tensor


def same_storage(a, b) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


# ---- metadata -----------------------------------------------------------------------------
def test_metadata_of_a_fresh_tensor(device):
    t = backend_sdk.empty(2, 3, 4, device=device)
    assert t.shape == (2, 3, 4) and isinstance(t.shape, backend_sdk.Size)
    assert t.size() == (2, 3, 4) and t.size(1) == 3 and t.size(-1) == 4
    assert t.stride() == (12, 4, 1) and t.stride(0) == 12
    assert t.dim() == 3 and t.ndim == 3 and t.numel() == 24
    assert t.storage_offset() == 0 and t.is_contiguous()
    assert t.dtype == backend_sdk.float32 and t.device.type == device
    assert t.untyped_storage().nbytes() == 96
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-3, 2\], but got 3\)"):
        t.size(3)


def test_negative_and_overflowing_sizes_are_value_errors(device):
    with pytest.raises(ValueError, match="negative dimension -1"):
        backend_sdk.empty(2, -1, device=device)
    # An overflowing element count is PyTorch's RuntimeError (tests/test_robustness_sizes.py).
    with pytest.raises(RuntimeError, match="numel: integer multiplication overflow"):
        backend_sdk.empty(2**40, 2**40, device=device)
    with pytest.raises(TypeError):
        backend_sdk.empty(2, "3", device=device)


# ---- views ---------------------------------------------------------------------------------
def test_views_share_storage_and_see_writes(device):
    base = arange_tensor(2, 3, 4, device=device)
    views = [
        base.view(6, 4), base.view(-1), base.reshape(4, 6), base.transpose(0, 2), base.permute(2, 0, 1),
        base.as_strided((2, 2), (1, 2), 3), base.select(1, 2), base.narrow(2, 1, 2), base[1], base[:, 1:3],
        base[..., ::2], base[None], base.unsqueeze(0), base.unsqueeze(0).squeeze(0), base[0, 0].expand(5, 4),
        base.contiguous(),
    ]
    for v in views:
        assert same_storage(v, base)
    base.fill_(7.0)
    for v in views:
        assert np.all(v.cpu().numpy() == 7.0)


def test_view_geometry_matches_numpy(device):
    base = arange_tensor(2, 3, 4, device=device)
    ref = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    cases = [
        (base.transpose(0, 2), ref.transpose(2, 1, 0)),
        (base.permute(1, 2, 0), ref.transpose(1, 2, 0)),
        (base[1, :, ::3], ref[1, :, ::3]),
        (base[..., 1], ref[..., 1]),
        (base[:, None, -1], ref[:, None, -1]),
        (base.select(2, -1), ref[:, :, -1]),
        (base[0].t(), ref[0].T),
        (base[1:, 1:2, 1:3].squeeze(), ref[1:, 1:2, 1:3].squeeze()),
        (base[0, 0].expand(3, 4), np.broadcast_to(ref[0, 0], (3, 4))),
        (base[:, 0, :1].expand(2, 5), np.broadcast_to(ref[:, 0, :1], (2, 5))),
    ]
    for view, expected in cases:
        assert view.shape == expected.shape
        np.testing.assert_array_equal(view.cpu().numpy(), expected)
        # strides of size-1 dimensions are arbitrary (PyTorch and numpy differ there)
        ours = [s for s, n in zip(view.stride(), view.shape) if n != 1]
        theirs = [s // 4 for s, n in zip(expected.strides, expected.shape) if n != 1]
        assert ours == theirs


def test_view_errors(device):
    base = arange_tensor(2, 3, device=device)
    with pytest.raises(ValueError, match=r"shape '\[4, 2\]' is invalid for input of size 6"):
        base.view(4, 2)
    with pytest.raises(ValueError, match="view size is not compatible with input tensor's size and stride"):
        base.t().view(6)
    assert base.t().reshape(6).tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]  # reshape copies instead
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 2"):
        base[3]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        base[0, 0, 0]
    with pytest.raises(ValueError, match=r"expanded size of the tensor \(4\) must match the existing size \(3\)"):
        base.expand(2, 4)
    with pytest.raises(IndexError, match="Dimension out of range"):
        base.transpose(0, 2)
    with pytest.raises(ValueError, match="out of bounds for storage"):
        base.as_strided((3, 3), (3, 1), 0)
    with pytest.raises(TypeError, match="invalid index of type str"):
        base["a"]


def test_contiguous_copies_only_when_needed(device):
    base = arange_tensor(3, 4, device=device)
    assert base.contiguous() is base
    t = base.t()
    c = t.contiguous()
    assert c.is_contiguous() and not same_storage(c, base)
    np.testing.assert_array_equal(c.cpu().numpy(), base.cpu().numpy().T)


def test_setitem_writes_through_views(device):
    base = arange_tensor(3, 4, device=device)
    base[1] = 0.0
    base[:, 0] = backend_sdk.tensor([9.0, 9.0, 9.0]).to(device)
    expected = np.arange(12, dtype=np.float32).reshape(3, 4)
    expected[1] = 0
    expected[:, 0] = 9
    np.testing.assert_array_equal(base.cpu().numpy(), expected)


def test_version_counter_counts_in_place_writes(device):
    t = arange_tensor(3, device=device)
    v = t[1:]
    start = t._version
    t.add_(1)
    v.fill_(2.0)
    assert t._version == start + 2 and v._version == t._version


# ---- factories ---------------------------------------------------------------------------------
def test_factories(device):
    assert backend_sdk.zeros(2, 2, device=device).tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert backend_sdk.ones((3,), dtype=backend_sdk.int32, device=device).tolist() == [1, 1, 1]
    full = backend_sdk.full((2,), 7, device=device)
    assert full.dtype == backend_sdk.int64 and full.tolist() == [7, 7]
    assert backend_sdk.full((1,), True, device=device).dtype == backend_sdk.bool
    r = backend_sdk.arange(5, device=device)
    assert r.tolist() == [0, 1, 2, 3, 4] and r.dtype == backend_sdk.int64 and r.device.type == device
    assert backend_sdk.arange(0.0, 1.0, 0.25, device=device).tolist() == [0.0, 0.25, 0.5, 0.75]
    like = backend_sdk.zeros_like(full, dtype=backend_sdk.float64)
    assert like.shape == (2,) and like.dtype == backend_sdk.float64 and like.device == full.device
    strided = backend_sdk.empty_strided((2, 3), (1, 2), device=device)
    assert strided.stride() == (1, 2) and not strided.is_contiguous()


def test_tensor_infers_dtypes_like_pytorch(device):
    assert backend_sdk.tensor([1, 2], device=device).dtype == backend_sdk.int64
    assert backend_sdk.tensor([1.5], device=device).dtype == backend_sdk.float32
    assert backend_sdk.tensor([True], device=device).dtype == backend_sdk.bool
    assert backend_sdk.tensor(np.zeros(2, dtype=np.float64), device=device).dtype == backend_sdk.float64
    three = backend_sdk.tensor(3, device=device)
    assert three.dim() == 0 and three.item() == 3 and three.device.type == device
    with pytest.raises(TypeError):
        backend_sdk.tensor(["a"], device=device)
    with pytest.raises(ValueError, match="step must be nonzero"):
        backend_sdk.arange(0, 5, 0, device=device)


def test_meta_tensors_have_metadata_and_no_data():
    m = backend_sdk.empty(4, 5, device="meta")
    assert m.is_meta and m.shape == (4, 5) and m.stride() == (5, 1) and m.data_ptr() == 0
    assert "device='meta'" in repr(m) and "size=(4, 5)" in repr(m)
    with pytest.raises(TypeError, match="can't convert meta device type tensor to numpy"):
        m.numpy()


# ---- numpy and DLPack ---------------------------------------------------------------------------
# CPU only: these check zero-copy sharing of host memory with numpy, which a device tensor cannot do.
@pytest.mark.parametrize("np_dtype", [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16,
                                      ml_dtypes.bfloat16, np.float32, np.float64])
def test_numpy_round_trip_shares_memory(np_dtype):
    array = (np.arange(12) % 5).astype(np_dtype).reshape(3, 4)
    t = backend_sdk.from_numpy(array)
    assert t.dtype.name == np.dtype(np_dtype).name
    back = t.numpy()
    assert np.shares_memory(back, array)
    np.testing.assert_array_equal(back, array)
    assert np.shares_memory(np.asarray(t), array)


def test_from_numpy_keeps_strides_and_the_array_alive():
    array = np.arange(20, dtype=np.float64).reshape(4, 5)[::2, 1:4]
    t = backend_sdk.from_numpy(array)
    assert t.shape == (2, 3) and t.stride() == (10, 1)
    del array
    assert t.tolist() == [[1.0, 2.0, 3.0], [11.0, 12.0, 13.0]]


def test_from_numpy_bad_inputs():
    with pytest.raises(TypeError, match="expected np.ndarray"):
        backend_sdk.from_numpy([1, 2])
    with pytest.raises(TypeError, match="can't convert np.ndarray of type numpy.complex64"):
        backend_sdk.from_numpy(np.zeros(2, dtype=np.complex64))
    with pytest.raises(ValueError, match="negative"):
        backend_sdk.from_numpy(np.arange(4.0)[::-1])


def test_dlpack_round_trip_with_numpy():
    array = np.arange(6, dtype=np.int32).reshape(2, 3)
    t = backend_sdk.from_dlpack(array)
    assert np.shares_memory(t.numpy(), array)
    back = np.from_dlpack(t)
    assert np.shares_memory(back, array)
    t2 = backend_sdk.from_dlpack(t.__dlpack__())
    assert t2.data_ptr() == t.data_ptr()
    capsule = t.__dlpack__()
    backend_sdk.from_dlpack(capsule)
    with pytest.raises(ValueError, match="already consumed"):
        backend_sdk.from_dlpack(capsule)


# ---- scalars and printing ------------------------------------------------------------------------
def test_item_tolist_and_python_conversions(device):
    t = backend_sdk.tensor([[1.5, 2.0]], device=device)
    assert t[0, 0].item() == 1.5 and isinstance(t[0, 1].item(), float) and t.tolist() == [[1.5, 2.0]]
    assert backend_sdk.tensor([3], device=device).item() == 3
    assert backend_sdk.tensor([True], device=device).item() is True
    assert float(t[0, 0]) == 1.5 and int(backend_sdk.tensor(4, device=device)) == 4
    with pytest.raises(ValueError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        t.item()
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(t)
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(backend_sdk.tensor(1.0, device=device))


@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda d: backend_sdk.tensor([1.0, 2.0], device=d), "tensor([1., 2.]{})"),
        (lambda d: backend_sdk.tensor([1.5, -2.25], device=d), "tensor([ 1.5000, -2.2500]{})"),
        (lambda d: backend_sdk.tensor([[1, 2], [3, 40]], device=d), "tensor([[ 1,  2],\n        [ 3, 40]]{})"),
        (lambda d: backend_sdk.tensor([True, False], device=d), "tensor([ True, False]{})"),
        (lambda d: backend_sdk.tensor([1, 2], dtype=backend_sdk.int32, device=d),
         "tensor([1, 2]{}, dtype=backend_sdk.int32)"),
        (lambda d: backend_sdk.tensor(2.5, device=d), "tensor(2.5000{})"),
        (lambda d: backend_sdk.zeros(0, device=d), "tensor([]{})"),
        (lambda d: backend_sdk.tensor([1.0], dtype=backend_sdk.float64, device=d),
         "tensor([1.]{}, dtype=backend_sdk.float64)"),
    ],
)
def test_repr_like_pytorch(device, make, expected):
    x = make(device)
    # PyTorch names a tensor's device unless it is the CPU, before its dtype.
    assert repr(x) == expected.format("" if device == "cpu" else f", device='{x.device}'")


def test_repr_summarises_large_tensors(device):
    text = repr(backend_sdk.arange(5000, device=device))
    assert text.startswith("tensor([   0,    1,    2,  ..., 4997, 4998, 4999]")


def test_tensor_cannot_be_constructed_directly():
    with pytest.raises(TypeError, match="cannot be constructed directly"):
        backend_sdk.Tensor()


def test_wrapping_is_idempotent():
    t = arange_tensor(3)
    assert t.add_(1) is t
    assert t.view(3)._is_same(t.view(3)) is False
