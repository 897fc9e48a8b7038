"""linspace, eye, cumsum/cumprod and vector norms against numpy on every test device (cpu, accel, pyaccel:
instantiate_device_type_tests), and Meta against each device."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import backend_sdk
from backend_sdk.testing import instantiate_device_type_tests

rng = np.random.default_rng(5)


def t(a, device: str = "cpu"):
    return backend_sdk.tensor(a).to(device)


def host(x: backend_sdk.Tensor) -> np.ndarray:
    return x.cpu().numpy()


class TestLinspaceEyeCumsumNormDeviceType:
    # ---------------------------------------------------------------------------
    # linspace
    # ---------------------------------------------------------------------------
    @pytest.mark.parametrize("start,end,steps", [(0, 1, 5), (-3.5, 2.25, 11), (10, -10, 7), (1, 1, 4), (0, 1, 1),
                                                 (2, 9, 0), (0, 1e6, 1001)])
    def test_linspace_matches_numpy(self, device, start, end, steps):
        out = backend_sdk.linspace(start, end, steps, dtype=backend_sdk.float64, device=device)
        np.testing.assert_allclose(out.cpu().numpy(), np.linspace(start, end, steps), rtol=1e-12, atol=1e-9)
        if steps > 1:
            assert out.cpu().numpy()[-1] == end and out.cpu().numpy()[0] == start

    def test_linspace_dtypes_out_and_meta(self, device):
        f = backend_sdk.linspace(0, 1, 3, device=device)
        assert f.dtype == backend_sdk.float32 and f.tolist() == [0.0, 0.5, 1.0]
        i = backend_sdk.linspace(0, 10, 5, dtype=backend_sdk.int64, device=device)
        assert i.tolist() == [0, 2, 5, 7, 10]  # truncation of 2.5 and 7.5, as PyTorch
        out = backend_sdk.empty(0, device=device)
        assert backend_sdk.linspace(1, 2, 3, out=out) is out and out.tolist() == [1.0, 1.5, 2.0]
        m = backend_sdk.linspace(0, 1, 7, device="meta")
        assert m.is_meta and m.shape == (7,)
        big = host(backend_sdk.linspace(-1, 1, 200_001, dtype=backend_sdk.float64, device=device))  # parallel path
        np.testing.assert_allclose(big, np.linspace(-1, 1, 200_001), atol=1e-15)
        with pytest.raises(ValueError, match="linspace: number of steps must be non-negative"):
            backend_sdk.linspace(0, 1, -1, device=device)

    # ---------------------------------------------------------------------------
    # eye
    # ---------------------------------------------------------------------------
    @pytest.mark.parametrize("n,m", [(0, 0), (1, 1), (3, 3), (2, 5), (5, 2), (4, 0)])
    def test_eye_matches_numpy(self, device, n, m):
        np.testing.assert_array_equal(host(backend_sdk.eye(n, m, device=device)), np.eye(n, m, dtype=np.float32))
        np.testing.assert_array_equal(host(backend_sdk.eye(n, dtype=backend_sdk.int32, device=device)),
                                      np.eye(n, dtype=np.int32))

    def test_eye_out_meta_errors(self, device):
        out = backend_sdk.empty(0, dtype=backend_sdk.bool, device=device)
        assert backend_sdk.eye(2, 3, out=out) is out and out.tolist() == [[True, False, False], [False, True, False]]
        backend_sdk.eye(2, out=out)
        assert out.shape == (2, 2)
        assert backend_sdk.eye(3, 4, device="meta").shape == (3, 4)
        with pytest.raises(ValueError, match="n must be greater or equal to 0, got -1"):
            backend_sdk.eye(-1, device=device)
        with pytest.raises(ValueError, match="m must be greater or equal to 0, got -2"):
            backend_sdk.eye(2, -2, device=device)

    # ---------------------------------------------------------------------------
    # cumsum / cumprod
    # ---------------------------------------------------------------------------
    @pytest.mark.parametrize("shape,dim", [((5,), 0), ((3, 4), 0), ((3, 4), 1), ((3, 4), -1), ((2, 3, 4), 1), ((), 0)])
    def test_cumsum_cumprod_match_numpy(self, device, shape, dim):
        a = rng.standard_normal(shape).astype(np.float32)
        axis = 0 if a.ndim == 0 else dim
        ref = np.cumsum(a.astype(np.float64), axis=axis) if a.ndim else a
        np.testing.assert_allclose(backend_sdk.cumsum(t(a, device), dim).cpu().numpy(), ref, rtol=1e-5, atol=1e-6)
        refp = np.cumprod(a.astype(np.float64), axis=axis) if a.ndim else a
        np.testing.assert_allclose(backend_sdk.cumprod(t(a, device), dim).cpu().numpy(), refp, rtol=1e-5, atol=1e-6)

    @settings(max_examples=40, deadline=None)
    @given(st.lists(st.integers(1, 5), min_size=1, max_size=4), st.data())
    def test_cumsum_any_shape_and_strides(self, device, shape, data):
        a = rng.integers(-50, 50, size=shape).astype(np.int32)
        dim = data.draw(st.integers(-len(shape), len(shape) - 1))
        x = t(a, device)
        if len(shape) >= 2:
            x = x.t() if len(shape) == 2 else x
            a = a.T if len(shape) == 2 else a
        out = backend_sdk.cumsum(x, dim)
        assert out.dtype == backend_sdk.int64  # integral inputs accumulate in int64
        np.testing.assert_array_equal(out.cpu().numpy(), np.cumsum(a.astype(np.int64), axis=dim))

    def test_cumsum_dtypes_inplace_out_meta_errors(self, device):
        b = t([True, True, False, True], device)
        assert backend_sdk.cumsum(b, 0).tolist() == [1, 2, 2, 3]
        assert backend_sdk.cumsum(t([1, 2, 3], device), 0, dtype=backend_sdk.float64).dtype == backend_sdk.float64
        x = t([1.0, 2.0, 3.0], device)
        assert x.cumsum_(0) is x and x.tolist() == [1.0, 3.0, 6.0]
        x.cumprod_(0)
        assert x.tolist() == [1.0, 3.0, 18.0]
        out = backend_sdk.empty(0, dtype=backend_sdk.float64, device=device)
        assert backend_sdk.cumsum(t([1, 2], device), 0, out=out) is out and out.tolist() == [1.0, 3.0]
        big = rng.standard_normal((400, 300))
        np.testing.assert_allclose(host(backend_sdk.cumsum(t(big, device), 0)), np.cumsum(big, 0), rtol=1e-10, atol=1e-10)
        m = backend_sdk.cumsum(backend_sdk.empty(2, 3, device="meta", dtype=backend_sdk.int8), 1)
        assert m.is_meta and m.dtype == backend_sdk.int64 and m.shape == (2, 3)
        with pytest.raises(IndexError, match="Dimension out of range"):
            backend_sdk.cumsum(t([1.0], device), 2)
        with pytest.raises(TypeError, match="Expected out tensor to have dtype float32, but got int64"):
            backend_sdk.cumsum(t([1.0], device), 0, dtype=backend_sdk.float32,
                               out=backend_sdk.empty(1, dtype=backend_sdk.int64, device=device))
        with pytest.raises(TypeError, match="provided dtype must match the dtype of self"):
            t([1.0], device).cumsum_(0, dtype=backend_sdk.float64)

    # ---------------------------------------------------------------------------
    # norms
    # ---------------------------------------------------------------------------
    @pytest.mark.parametrize("p", [2, 1, float("inf"), float("-inf"), 0, 3, 0.5, -1])
    @pytest.mark.parametrize("dim", [None, 0, 1, (0, 1), -1])
    def test_vector_norm_matches_numpy(self, device, p, dim):
        a = rng.standard_normal((4, 5))
        a[0, 0] = 0.0
        axis = dim if dim is not None else None
        flat = a if axis is not None else a.reshape(-1)
        with np.errstate(divide="ignore"):  # p < 0 with a zero element: numpy warns, the answer is 0
            ref = np.linalg.norm(flat, ord=p, axis=axis if axis is not None else 0) if not isinstance(axis, tuple) else \
                np.linalg.norm(a.reshape(-1), ord=p)
        dims = None if dim is None else ([dim] if isinstance(dim, int) else list(dim))
        got = backend_sdk.linalg_vector_norm(t(a, device), p, dims)
        np.testing.assert_allclose(got.cpu().numpy(), ref, rtol=1e-12)
        got2 = backend_sdk.norm(t(a, device), p, dim)
        np.testing.assert_allclose(got2.cpu().numpy(), ref, rtol=1e-12)

    def test_norm_overloads_fro_keepdim_dtype_out(self, device):
        a = rng.standard_normal((3, 4)).astype(np.float32)
        fro = np.sqrt((a.astype(np.float64) ** 2).sum())
        np.testing.assert_allclose(backend_sdk.norm(t(a, device)).cpu().numpy(), fro, rtol=1e-6)
        np.testing.assert_allclose(t(a, device).norm("fro").cpu().numpy(), fro, rtol=1e-6)
        np.testing.assert_allclose(t(a, device).norm().cpu().numpy(), fro, rtol=1e-6)
        np.testing.assert_allclose(host(backend_sdk.ops.aten.norm.Scalar(t(a, device), 1)), np.abs(a).sum(), rtol=1e-6)
        k = backend_sdk.norm(t(a, device), 2, 1, keepdim=True)
        assert k.shape == (3, 1)
        np.testing.assert_allclose(k.cpu().numpy()[:, 0], np.linalg.norm(a, axis=1), rtol=1e-6)
        d = backend_sdk.norm(t(a, device), 2, dtype=backend_sdk.float64)
        assert d.dtype == backend_sdk.float64
        out = backend_sdk.empty(0, device=device)
        assert backend_sdk.norm(t(a, device), 2, [0], out=out) is out and out.shape == (4,)
        v = backend_sdk.linalg_vector_norm(t(a, device), dim=[1], keepdim=True, dtype=backend_sdk.float64)
        assert v.shape == (3, 1) and v.dtype == backend_sdk.float64
        nonc = t(rng.standard_normal((6, 6)), device).t()  # strided input
        np.testing.assert_allclose(backend_sdk.linalg_vector_norm(nonc, 3, [0]).cpu().numpy(),
                                   np.linalg.norm(nonc.cpu().numpy(), ord=3, axis=0), rtol=1e-12)
        m = backend_sdk.linalg_vector_norm(backend_sdk.empty(2, 3, device="meta"), 2, [1], True)
        assert m.is_meta and m.shape == (2, 1)
        assert backend_sdk.norm(backend_sdk.empty(0, device=device)).tolist() == 0.0

    def test_norm_errors(self, device):
        with pytest.raises(TypeError, match="norm\\(\\): input dtype should be either floating point or complex. Got int64"):
            backend_sdk.norm(t([1, 2], device))
        with pytest.raises(TypeError, match="linalg.vector_norm: Expected a floating point or complex tensor as input"):
            backend_sdk.linalg_vector_norm(t([1, 2], device))
        with pytest.raises(ValueError, match="cannot compute the inf norm on an empty tensor"):
            backend_sdk.linalg_vector_norm(backend_sdk.empty(0, device=device), float("inf"))
        with pytest.raises(ValueError, match="dim 0 appears multiple times"):
            backend_sdk.linalg_vector_norm(backend_sdk.ones(2, 2, device=device), 2, [0, -2])
        with pytest.raises(ValueError, match="p='nuc' is not supported"):
            backend_sdk.norm(backend_sdk.ones(2, 2, device=device), "nuc")
        with pytest.raises(IndexError, match="Dimension out of range"):
            backend_sdk.norm(backend_sdk.ones(2, device=device), 2, 3)

    @pytest.mark.parametrize("build", [
        lambda d: backend_sdk.linspace(0, 1, 5, device=d),
        lambda d: backend_sdk.linspace(0, 1, 5, dtype=backend_sdk.int32, device=d),
        lambda d: backend_sdk.eye(3, 2, dtype=backend_sdk.float64, device=d),
        lambda d: backend_sdk.cumsum(backend_sdk.empty(2, 3, dtype=backend_sdk.uint8, device=d), 0),
        lambda d: backend_sdk.cumprod(backend_sdk.empty(2, 3, device=d), -1, dtype=backend_sdk.float64),
        lambda d: backend_sdk.linalg_vector_norm(backend_sdk.empty(2, 3, 4, device=d), 1, [0, 2]),
        lambda d: backend_sdk.norm(backend_sdk.empty(2, 3, device=d), 2, 1, keepdim=True, dtype=backend_sdk.float64),
        lambda d: backend_sdk.rand_like(backend_sdk.empty(4, 1, device=d), dtype=backend_sdk.float16),
        lambda d: backend_sdk.randint(0, 3, (2, 2), dtype=backend_sdk.int16, device=d),
        lambda d: backend_sdk.bernoulli(backend_sdk.zeros(3, device=d)),
        lambda d: backend_sdk.nll_loss(backend_sdk.zeros(3, 4, device=d), backend_sdk.zeros(3, dtype=backend_sdk.int64, device=d), reduction=0),
        lambda d: backend_sdk.cross_entropy_loss(backend_sdk.zeros(3, 4, 2, device=d),
                                                 backend_sdk.zeros(3, 2, dtype=backend_sdk.int64, device=d), reduction=0),
    ])
    def test_meta_results_match_the_device_metadata(self, device, build):
        real, meta = build(device), build("meta")
        assert meta.is_meta and real.device.type == self.device_type
        assert meta.shape == real.shape and meta.dtype == real.dtype and meta.stride() == real.stride()

    @pytest.mark.parametrize("p", [2, 1, float("inf"), float("-inf"), 0, 3])
    def test_norm_of_a_long_row_and_nan(self, device, p):
        a = rng.standard_normal(300_001).astype(np.float32)  # one long row: the chunked parallel path
        a[7] = 0.0
        with np.errstate(divide="ignore"):
            ref = np.linalg.norm(a.astype(np.float64), ord=p)
        np.testing.assert_allclose(backend_sdk.linalg_vector_norm(t(a, device), p).cpu().numpy(), ref, rtol=1e-5)
        half = t(a[:1000].astype(np.float16), device)
        np.testing.assert_allclose(backend_sdk.linalg_vector_norm(half, p, dtype=backend_sdk.float32).cpu().numpy(),
                                   np.linalg.norm(a[:1000].astype(np.float16).astype(np.float64), ord=p), rtol=1e-3)
        assert np.isnan(backend_sdk.linalg_vector_norm(t([1.0, float("nan"), 2.0], device), p).item()) or p == 0


instantiate_device_type_tests(TestLinspaceEyeCumsumNormDeviceType, globals())
