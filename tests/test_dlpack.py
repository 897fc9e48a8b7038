"""backend_sdk.utils.dlpack (torch.utils.dlpack): CPU and accelerator tensors, numpy both ways
(Note [DLPack device tensors])."""
from __future__ import annotations

import numpy as np
import pytest

import accel  # noqa: F401
import backend_sdk as sdk
from backend_sdk.utils import dlpack


def test_module_names_as_pytorch():
    assert dlpack.__all__ == ["DLDeviceType", "from_dlpack", "to_dlpack"]
    assert dlpack.DLDeviceType.kDLCPU == 1 and dlpack.DLDeviceType.kDLExtDev == 12
    assert sdk.utils.dlpack is dlpack


def test_cpu_round_trip_shares_memory():
    x = sdk.tensor(np.arange(12, dtype=np.float32).reshape(3, 4)).t()
    y = dlpack.from_dlpack(dlpack.to_dlpack(x))
    assert y.shape == x.shape and y.stride() == x.stride() and y.data_ptr() == x.data_ptr()
    y.mul_(2)
    assert x.tolist() == y.tolist() and x[1, 0].item() == 2.0
    assert x.__dlpack_device__() == (dlpack.DLDeviceType.kDLCPU, 0)


def test_numpy_interop_both_ways():
    a = np.arange(6, dtype=np.int32)
    t = dlpack.from_dlpack(a)
    t[0] = 42
    assert a[0] == 42 and t.dtype == sdk.int32
    n = np.from_dlpack(sdk.ones(2, 3, dtype=sdk.float64))
    assert n.shape == (2, 3) and n.dtype == np.float64 and n.sum() == 6.0


def test_a_capsule_is_consumed_once():
    cap = dlpack.to_dlpack(sdk.ones(2))
    dlpack.from_dlpack(cap)
    with pytest.raises(ValueError, match="already consumed"):
        dlpack.from_dlpack(cap)


def test_accelerator_tensors_are_kdlextdev_with_their_index():
    x = sdk.arange(4.0, device="accel:1")
    assert x.__dlpack_device__() == (dlpack.DLDeviceType.kDLExtDev, 1)
    y = dlpack.from_dlpack(x)  # through __dlpack__: same device memory
    assert y.device == sdk.device("accel:1") and y.data_ptr() == x.data_ptr()
    y.add_(1)
    assert x.cpu().tolist() == [1.0, 2.0, 3.0, 4.0]
    z = dlpack.from_dlpack(dlpack.to_dlpack(x))
    assert z.device == x.device and z.cpu().tolist() == x.cpu().tolist()
    with pytest.raises((TypeError, RuntimeError)):
        np.from_dlpack(x)  # numpy cannot read device memory


def test_meta_tensors_are_refused_as_pytorch():
    m = sdk.empty(2, device="meta")
    with pytest.raises(ValueError, match="Unknown device type meta for Dlpack"):
        m.__dlpack_device__()
    with pytest.raises(ValueError, match="Unknown device type meta for Dlpack"):
        dlpack.to_dlpack(m)
