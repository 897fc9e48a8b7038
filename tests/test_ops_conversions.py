"""aten::to (dtype, device, other, dtype_layout), aten::_to_copy, flatten.using_ints and t: PyTorch's aliasing,
copy and layout rules; type conversion on copy_ against numpy; on every test device (cpu, accel, pyaccel:
instantiate_device_type_tests)."""
from __future__ import annotations

import numpy as np
import pytest

import backend_sdk
from backend_sdk import ops
from backend_sdk.testing import instantiate_device_type_tests


def same_storage(a: backend_sdk.Tensor, b: backend_sdk.Tensor) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def host(x: backend_sdk.Tensor) -> np.ndarray:
    return x.cpu().numpy()


class TestConversionsDeviceType:
    def test_to_returns_self_when_nothing_changes_and_copies_otherwise(self, device):
        x = backend_sdk.arange(6.0, device=device).reshape(2, 3)
        assert x.to(backend_sdk.float32) is x
        assert x.to(device) is x and x.to(backend_sdk.device(device)) is x and x.to(x) is x
        assert x.to(self.device_type) is x  # a device type without an index means the current device
        assert x.to(device=device, dtype=backend_sdk.float32) is x
        c = x.to(backend_sdk.float32, copy=True)
        assert c is not x and not same_storage(c, x) and c.tolist() == x.tolist()
        y = x.to(backend_sdk.int64)
        assert y.dtype == backend_sdk.int64 and y.device == x.device and y.tolist() == [[0, 1, 2], [3, 4, 5]]
        other = backend_sdk.zeros(1, dtype=backend_sdk.int32, device=device)
        assert x.to(other).dtype == backend_sdk.int32  # to(other)
        assert x.to(backend_sdk.float64, True).dtype == backend_sdk.float64  # positional non_blocking
        assert x.to(device, backend_sdk.int16, non_blocking=True).dtype == backend_sdk.int16
        # the aten overloads directly
        assert ops.aten.to.dtype(x, backend_sdk.float32) is x
        assert ops.aten.to.dtype(x, backend_sdk.float64).dtype == backend_sdk.float64
        assert ops.aten.to.device(x, backend_sdk.device(device), backend_sdk.float32) is x
        flags = backend_sdk.zeros(1, dtype=backend_sdk.bool, device=device)
        assert ops.aten.to.other(x, flags).dtype == backend_sdk.bool
        assert ops.aten.to.dtype_layout(x, copy=True) is not x

    def test_to_meta_and_to_copy_keep_dense_strides(self, device):
        x = backend_sdk.arange(6.0, device=device).reshape(2, 3)
        m = x.to("meta")
        assert m.is_meta and m.shape == x.shape and m.stride() == x.stride()
        t = x.t()
        assert t.clone().stride() == (1, 3)  # preserve_format keeps a transposed layout (PyTorch)
        assert t.to(backend_sdk.float64).stride() == (1, 3)
        assert t.contiguous().stride() == (2, 1) and t.contiguous().tolist() == t.tolist()
        assert ops.aten._to_copy.default(t, memory_format=0).is_contiguous()  # contiguous_format
        gappy = backend_sdk.arange(12.0, device=device).reshape(3, 4)[:, ::2]  # not dense: copies are contiguous
        assert gappy.clone().is_contiguous() and gappy.clone().tolist() == gappy.tolist()
        with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
            ops.aten._to_copy.default(x, memory_format=2)  # channels_last needs rank 4 (PyTorch's RuntimeError)

    @pytest.mark.parametrize("src", [np.float64, np.float32, np.int64, np.int32, np.bool_, np.uint8])
    @pytest.mark.parametrize("dst", [np.float64, np.float32, np.float16, np.int64, np.int16, np.bool_])
    def test_to_and_copy_convert_like_numpy(self, device, src, dst):
        floating = np.dtype(src).kind == "f"
        values = np.array([0, 1, 2.7, -3.2, 100.0, 0.5]) if floating else np.array([0, 1, 2, 3, 100, 7])
        arr = values.astype(src)
        if np.dtype(dst).kind in "iu" and np.dtype(src).kind == "f":
            expected = np.trunc(arr).astype(dst)  # C casts truncate toward zero
        else:
            expected = arr.astype(dst)
        t = backend_sdk.tensor(arr).to(device)
        dtype = backend_sdk.tensor(np.zeros(1, dtype=dst)).dtype
        np.testing.assert_array_equal(host(t.to(dtype)), expected)
        target = backend_sdk.empty(6, dtype=dtype, device=device)
        target.copy_(t)
        np.testing.assert_array_equal(host(target), expected)

    def test_flatten_views_when_possible_and_copies_otherwise(self, device):
        base = backend_sdk.arange(24.0, device=device).reshape(2, 3, 4)
        arr = np.arange(24.0).reshape(2, 3, 4)
        for start, end in [(0, -1), (1, 2), (0, 1), (-2, -1), (1, 1)]:
            f = base.flatten(start, end)
            e = end % 3
            s = start % 3
            shape = arr.shape[:s] + (int(np.prod(arr.shape[s:e + 1])),) + arr.shape[e + 1:]
            np.testing.assert_array_equal(host(f), arr.reshape(shape))
            assert same_storage(f, base)
        assert base.flatten(1, 1) is base  # nothing merges: self (PyTorch)
        p = base.permute(2, 0, 1)  # (4, 2, 3), dims 1-2 still one block
        assert same_storage(p.flatten(1), base)
        q = p.flatten(0, 1)  # dims 0-1 are not one block: a copy
        assert not same_storage(q, base)
        np.testing.assert_array_equal(host(q), arr.transpose(2, 0, 1).reshape(8, 3))
        assert backend_sdk.flatten(backend_sdk.tensor(3.0).to(device)).shape == (1,)
        assert backend_sdk.flatten(base).shape == (24,)
        with pytest.raises(ValueError, match="flatten\\(\\) has invalid args: start_dim cannot come after end_dim"):
            base.flatten(2, 0)
        with pytest.raises(IndexError, match="Dimension out of range"):
            base.flatten(0, 3)

    def test_t_is_a_view_for_up_to_two_dims(self, device):
        m = backend_sdk.arange(6.0, device=device).reshape(2, 3)
        t = backend_sdk.t(m)
        assert t.shape == (3, 2) and t.stride() == (1, 3) and same_storage(t, m)
        assert m.t().tolist() == np.arange(6.0).reshape(2, 3).T.tolist()
        v = backend_sdk.arange(3.0, device=device)
        assert v.t().shape == (3,) and same_storage(v.t(), v)
        assert backend_sdk.tensor(1.0).to(device).t().shape == ()
        with pytest.raises(ValueError, match="t\\(\\) expects a tensor with <= 2 dimensions, but self is 3D"):
            backend_sdk.zeros(1, 2, 3, device=device).t()


instantiate_device_type_tests(TestConversionsDeviceType, globals())


def test_t_on_meta_is_a_view():
    meta = backend_sdk.empty(2, 3, device="meta").t()
    assert meta.is_meta and meta.shape == (3, 2) and meta.stride() == (1, 3)
