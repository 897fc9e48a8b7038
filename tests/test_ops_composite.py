"""Composite operators (cat, stack, softmax, log_softmax, logsumexp) against numpy, on every test device
(cpu, accel, pyaccel: instantiate_device_type_tests) and on Meta."""
from __future__ import annotations

import numpy as np
import pytest

import backend_sdk
from backend_sdk.testing import instantiate_device_type_tests

rng = np.random.default_rng(2)


def t(a, device="cpu"):
    return backend_sdk.tensor(a, device=device)


class TestCompositeDeviceType:
    @pytest.mark.parametrize("dim", [0, 1, -1])
    def test_cat_and_stack_match_numpy(self, device, dim):
        a, b = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((2, 3)).astype(np.float32)
        np.testing.assert_array_equal(backend_sdk.cat([t(a, device=device), t(b, device=device)], dim).cpu().numpy(), np.concatenate([a, b], dim))
        np.testing.assert_array_equal(backend_sdk.stack([t(a, device=device), t(b, device=device)], dim).cpu().numpy(), np.stack([a, b], dim))

    def test_cat_promotes_skips_legacy_empty_and_accepts_views(self, device):
        ints = backend_sdk.tensor([[1, 2]], device=device)
        floats = backend_sdk.tensor([[0.5, 1.5]], device=device)
        out = backend_sdk.cat([ints, floats, backend_sdk.empty(0, device=device)])
        assert out.dtype == backend_sdk.float32 and out.tolist() == [[1.0, 2.0], [0.5, 1.5]]
        base = backend_sdk.arange(12, device=device).view(3, 4)
        assert backend_sdk.cat([base.t()[:2], base.t()[2:]], 0).tolist() == base.t().tolist()
        meta = backend_sdk.cat([backend_sdk.empty(2, 3, device="meta"), backend_sdk.empty(4, 3, device="meta")])
        assert meta.is_meta and meta.shape == (6, 3)

    def test_cat_and_stack_errors(self, device):
        with pytest.raises(ValueError, match="expected a non-empty list of Tensors"):
            backend_sdk.cat([])
        with pytest.raises(ValueError, match="Sizes of tensors must match except in dimension 0"):
            backend_sdk.cat([backend_sdk.ones(2, 3, device=device), backend_sdk.ones(2, 4, device=device)])
        with pytest.raises(ValueError, match="zero-dimensional tensor"):
            backend_sdk.cat([backend_sdk.tensor(1.0, device=device)])
        with pytest.raises(ValueError, match="stack expects each tensor to be equal size"):
            backend_sdk.stack([backend_sdk.ones(2, device=device), backend_sdk.ones(3, device=device)])
        with pytest.raises(ValueError, match="same device"):
            backend_sdk.cat([backend_sdk.ones(2, device=device), backend_sdk.empty(2, device="meta")])

    @pytest.mark.parametrize("dim", [0, 1, -1])
    def test_softmax_log_softmax_logsumexp(self, device, dim):
        x = (rng.standard_normal((3, 5)) * 30).astype(np.float32)  # large values: the max shift matters
        np.testing.assert_allclose(backend_sdk.softmax(t(x, device=device), dim).cpu().numpy(), np_softmax(x, dim), rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(backend_sdk.log_softmax(t(x, device=device), dim).cpu().numpy(), np.log(np_softmax(x.astype(np.float64), dim)),
                                   rtol=1e-4, atol=1e-4)
        expected = np.log(np.exp(x.astype(np.float64) - x.max()).sum(axis=dim)) + x.max()
        np.testing.assert_allclose(backend_sdk.logsumexp(t(x, device=device), dim).cpu().numpy(), expected, rtol=1e-5)
        assert backend_sdk.logsumexp(t(x, device=device), [dim], keepdim=True).dim() == 2

    def test_logsumexp_of_infinities_and_softmax_dtypes(self, device):
        x = backend_sdk.tensor([[-np.inf, -np.inf], [np.inf, 1.0]], device=device)
        assert backend_sdk.logsumexp(x, 1).tolist() == [-np.inf, np.inf]
        ints = backend_sdk.tensor([1, 2, 3], device=device)
        with pytest.raises(TypeError, match="expected a floating point input"):
            backend_sdk.softmax(ints, 0)
        assert backend_sdk.softmax(ints, 0, dtype=backend_sdk.float64).dtype == backend_sdk.float64

    def test_split_chunk_unbind_are_views_like_numpy(self, device):
        base = backend_sdk.arange(10, device=device).view(2, 5)
        parts = base.split(2, 1)
        assert [p.shape for p in parts] == [(2, 2), (2, 2), (2, 1)]
        assert all(p.untyped_storage().data_ptr() == base.untyped_storage().data_ptr() for p in parts)
        assert [p.tolist() for p in base.chunk(2, 1)] == [x.tolist() for x in np.array_split(np.arange(10).reshape(2, 5), [3], 1)]
        assert [p.tolist() for p in backend_sdk.split_with_sizes(base, [1, 4], 1)] == [[[0], [5]], [[1, 2, 3, 4], [6, 7, 8, 9]]]
        assert [r.tolist() for r in base.unbind(0)] == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
        with pytest.raises(ValueError, match="split_sizes to sum exactly to 5"):
            backend_sdk.split_with_sizes(base, [1, 1], 1)
        with pytest.raises(ValueError, match="chunk expects `chunks` to be greater than 0"):
            base.chunk(0)

    def test_repeat_masked_fill_mse_loss(self, device):
        a = np.arange(6).reshape(2, 3)
        assert backend_sdk.tensor(a, device=device).repeat(2, 1, 2).tolist() == np.tile(a, (2, 1, 2)).tolist()
        assert backend_sdk.tensor(a, device=device).t().repeat(1, 2).tolist() == np.tile(a.T, (1, 2)).tolist()
        x = backend_sdk.tensor([[1.0, 2.0], [3.0, 4.0]], device=device)
        mask = backend_sdk.tensor([True, False], device=device)
        assert x.masked_fill(mask, -1.0).tolist() == [[-1.0, 2.0], [-1.0, 4.0]]
        assert x.masked_fill_(mask, 0.0) is x and x.tolist() == [[0.0, 2.0], [0.0, 4.0]]
        with pytest.raises(TypeError, match="only supports boolean masks"):
            x.masked_fill(backend_sdk.tensor([1, 0], device=device), 0.0)
        p, q = rng.standard_normal(5).astype(np.float32), rng.standard_normal(5).astype(np.float32)
        assert abs(backend_sdk.mse_loss(t(p, device=device), t(q, device=device)).item() - float(np.mean((p - q) ** 2))) < 1e-5
        assert abs(backend_sdk.mse_loss(t(p, device=device), t(q, device=device), reduction=2).item() - float(np.sum((p - q) ** 2))) < 1e-4
        assert backend_sdk.mse_loss(t(p, device=device), t(q, device=device), reduction=0).shape == (5,)
        with pytest.raises(ValueError, match="reduction must be"):
            backend_sdk.mse_loss(t(p, device=device), t(q, device=device), reduction=5)


instantiate_device_type_tests(TestCompositeDeviceType, globals())


def np_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
