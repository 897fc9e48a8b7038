"""Reductions against numpy on every test device (cpu, accel, pyaccel: instantiate_device_type_tests) and on
Meta: sum, mean, prod, amax/amin, max/min, argmax/argmin, all/any, var/std."""
from __future__ import annotations

import numpy as np
import pytest

import backend_sdk
from backend_sdk.testing import instantiate_device_type_tests

rng = np.random.default_rng(1)


def layouts(device="cpu"):
    """(numpy array, tensor) pairs: contiguous, transposed, sliced with steps, expanded."""
    base = rng.standard_normal((6, 8, 10)).astype(np.float32)
    arr = base[:3, :4, :5].copy()
    yield arr, backend_sdk.tensor(arr, device=device)
    yield base.transpose(2, 0, 1)[:5, :3, :4], backend_sdk.tensor(base, device=device).permute(2, 0, 1)[:5, :3, :4]
    yield base[::2, ::2, ::3], backend_sdk.tensor(base, device=device)[::2, ::2, ::3]
    row = base[0, 0, :5]
    yield np.broadcast_to(row, (3, 4, 5)), backend_sdk.tensor(row, device=device).expand(3, 4, 5)


class TestReduceDeviceType:
    @pytest.mark.parametrize("dims", [None, 0, 1, 2, -1, (0, 2), (1, 2), (0, 1, 2)])
    @pytest.mark.parametrize("keepdim", [False, True])
    def test_sum_mean_amax_amin_match_numpy(self, device, dims, keepdim):
        for arr, t in layouts(device):
            kw = {} if dims is None else {"dim": dims}
            np_axis = dims
            for ours, theirs in [
                (backend_sdk.sum(t, **kw, keepdim=keepdim) if dims is not None else backend_sdk.sum(t), np.sum),
                (backend_sdk.mean(t, **kw, keepdim=keepdim) if dims is not None else backend_sdk.mean(t), np.mean),
                (backend_sdk.amax(t, dim=dims if dims is not None else [], keepdim=keepdim), np.amax),
                (backend_sdk.amin(t, dim=dims if dims is not None else [], keepdim=keepdim), np.amin),
            ]:
                expected = theirs(arr.astype(np.float64), axis=np_axis, keepdims=keepdim if dims is not None or theirs in (np.amax, np.amin) else False)
                assert ours.shape == np.shape(expected)
                np.testing.assert_allclose(ours.cpu().numpy(), expected, rtol=1e-5, atol=1e-5)


    def test_result_dtypes_follow_pytorch(self, device):
        i32 = backend_sdk.tensor([1, 2, 3], dtype=backend_sdk.int32, device=device)
        assert i32.sum().dtype == backend_sdk.int64 and i32.sum().item() == 6
        assert backend_sdk.tensor([True, True], device=device).sum().item() == 2
        assert i32.prod().dtype == backend_sdk.int64 and i32.prod().item() == 6
        assert i32.amax().dtype == backend_sdk.int32
        assert i32.sum(dtype=backend_sdk.float64).dtype == backend_sdk.float64
        assert backend_sdk.tensor([1.0, 2.0], device=device).all().dtype == backend_sdk.bool
        assert backend_sdk.tensor([1, 0], dtype=backend_sdk.uint8, device=device).any().dtype == backend_sdk.uint8
        with pytest.raises(TypeError, match="could not infer output dtype"):
            i32.mean()
        with pytest.raises(TypeError, match="floating point"):
            i32.var()


    def test_max_min_with_indices_and_arg_reductions(self, device):
        arr = np.array([[3.0, 7.0, 7.0], [9.0, -1.0, 4.0]], dtype=np.float32)
        t = backend_sdk.tensor(arr, device=device)
        values, indices = t.max(dim=1)
        assert values.tolist() == [7.0, 9.0] and indices.tolist() == [1, 0]  # first maximum wins
        values, indices = t.min(dim=0, keepdim=True)
        assert values.tolist() == [[3.0, -1.0, 4.0]] and indices.tolist() == [[0, 1, 1]]
        assert t.max().item() == 9.0 and t.min().item() == -1.0
        assert t.argmax().item() == 3 and t.argmin().item() == 4  # flattened index
        assert t.argmax(dim=0).tolist() == [1, 0, 0]
        assert t.t().argmax().item() == int(np.argmax(arr.T))
        nan = backend_sdk.tensor([1.0, float("nan"), 3.0], device=device)
        assert np.isnan(nan.max().item()) and nan.argmax().item() == 1


    def test_prod_all_any(self, device):
        arr = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int64)
        t = backend_sdk.tensor(arr, device=device)
        assert t.prod().item() == 720 and t.prod(1).tolist() == [6, 120]
        b = backend_sdk.tensor([[True, False], [True, True]], device=device)
        assert b.all(dim=1).tolist() == [False, True] and b.any(dim=0).tolist() == [True, True]
        assert backend_sdk.tensor([], dtype=backend_sdk.bool, device=device).all().item() is True


    @pytest.mark.parametrize("correction", [0, 1, 2])
    def test_var_std_match_numpy(self, device, correction):
        for arr, t in layouts(device):
            np.testing.assert_allclose(t.var(dim=1, correction=correction).cpu().numpy(), np.var(arr, axis=1, ddof=correction), rtol=1e-4)
            np.testing.assert_allclose(t.std(correction=correction).item(), np.std(arr, ddof=correction), rtol=1e-4)


    def test_empty_reductions(self, device):
        e = backend_sdk.empty(0, 3, device=device)
        assert e.sum().item() == 0.0 and e.sum(0).tolist() == [0.0, 0.0, 0.0]
        assert np.isnan(e.mean().item())
        assert e.prod().item() == 1.0
        with pytest.raises(ValueError, match="Expected reduction dim to be specified for input.numel\\(\\) == 0"):
            e.amax()
        with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
            e.max(dim=0)
        assert e.amax(dim=1).shape == (0,)


    def test_reduction_errors(self, device):
        t = backend_sdk.ones(2, 3, device=device)
        with pytest.raises(ValueError, match="dim 0 appears multiple times in the list of dims"):
            t.sum(dim=(0, 0))
        with pytest.raises(IndexError, match="Dimension out of range"):
            t.sum(dim=2)
        out = backend_sdk.empty(3, device=device)
        backend_sdk.sum(t, 0, out=out)
        assert out.tolist() == [2.0, 2.0, 2.0]
        with pytest.warns(UserWarning, match="An output with one or more elements was resized"):  # resized, as PyTorch
            r = backend_sdk.sum(t, 0, out=backend_sdk.empty(5, device=device))
        assert r.tolist() == [2.0, 2.0, 2.0]


instantiate_device_type_tests(TestReduceDeviceType, globals())


def test_meta_reductions_match_cpu_metadata():
    for fn in [lambda x: x.sum(dim=1, keepdim=True), lambda x: x.mean(dim=(0, 2)), lambda x: x.amax(dim=-1),
               lambda x: x.max(dim=0)[1], lambda x: x.var(dim=1), lambda x: x.any(dim=2), lambda x: x.argmax()]:
        cpu, meta = fn(backend_sdk.ones(2, 3, 4)), fn(backend_sdk.empty(2, 3, 4, device="meta"))
        assert meta.is_meta and (meta.shape, meta.dtype, meta.stride()) == (cpu.shape, cpu.dtype, cpu.stride())
