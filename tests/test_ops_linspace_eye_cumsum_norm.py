"""linspace, eye, cumsum/cumprod and vector norms against numpy, on CPU and Meta."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import backend_sdk

rng = np.random.default_rng(5)


def t(a):
    return backend_sdk.tensor(a)


# ---------------------------------------------------------------------------
# linspace
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("start,end,steps", [(0, 1, 5), (-3.5, 2.25, 11), (10, -10, 7), (1, 1, 4), (0, 1, 1),
                                             (2, 9, 0), (0, 1e6, 1001)])
def test_linspace_matches_numpy(start, end, steps):
    out = backend_sdk.linspace(start, end, steps, dtype=backend_sdk.float64)
    np.testing.assert_allclose(out.numpy(), np.linspace(start, end, steps), rtol=1e-12, atol=1e-9)
    if steps > 1:
        assert out.numpy()[-1] == end and out.numpy()[0] == start


def test_linspace_dtypes_out_and_meta():
    f = backend_sdk.linspace(0, 1, 3)
    assert f.dtype == backend_sdk.float32 and f.tolist() == [0.0, 0.5, 1.0]
    i = backend_sdk.linspace(0, 10, 5, dtype=backend_sdk.int64)
    assert i.tolist() == [0, 2, 5, 7, 10]  # truncation of 2.5 and 7.5, as PyTorch
    out = backend_sdk.empty(0)
    assert backend_sdk.linspace(1, 2, 3, out=out) is out and out.tolist() == [1.0, 1.5, 2.0]
    m = backend_sdk.linspace(0, 1, 7, device="meta")
    assert m.is_meta and m.shape == (7,)
    big = backend_sdk.linspace(-1, 1, 200_001, dtype=backend_sdk.float64).numpy()  # parallel path
    np.testing.assert_allclose(big, np.linspace(-1, 1, 200_001), atol=1e-15)
    with pytest.raises(ValueError, match="linspace: number of steps must be non-negative"):
        backend_sdk.linspace(0, 1, -1)


# ---------------------------------------------------------------------------
# eye
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("n,m", [(0, 0), (1, 1), (3, 3), (2, 5), (5, 2), (4, 0)])
def test_eye_matches_numpy(n, m):
    np.testing.assert_array_equal(backend_sdk.eye(n, m).numpy(), np.eye(n, m, dtype=np.float32))
    np.testing.assert_array_equal(backend_sdk.eye(n, dtype=backend_sdk.int32).numpy(), np.eye(n, dtype=np.int32))


def test_eye_out_meta_errors():
    out = backend_sdk.empty(0, dtype=backend_sdk.bool)
    assert backend_sdk.eye(2, 3, out=out) is out and out.tolist() == [[True, False, False], [False, True, False]]
    backend_sdk.eye(2, out=out)
    assert out.shape == (2, 2)
    assert backend_sdk.eye(3, 4, device="meta").shape == (3, 4)
    with pytest.raises(ValueError, match="n must be greater or equal to 0, got -1"):
        backend_sdk.eye(-1)
    with pytest.raises(ValueError, match="m must be greater or equal to 0, got -2"):
        backend_sdk.eye(2, -2)


# ---------------------------------------------------------------------------
# cumsum / cumprod
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("shape,dim", [((5,), 0), ((3, 4), 0), ((3, 4), 1), ((3, 4), -1), ((2, 3, 4), 1), ((), 0)])
def test_cumsum_cumprod_match_numpy(shape, dim):
    a = rng.standard_normal(shape).astype(np.float32)
    axis = 0 if a.ndim == 0 else dim
    ref = np.cumsum(a.astype(np.float64), axis=axis) if a.ndim else a
    np.testing.assert_allclose(backend_sdk.cumsum(t(a), dim).numpy(), ref, rtol=1e-5, atol=1e-6)
    refp = np.cumprod(a.astype(np.float64), axis=axis) if a.ndim else a
    np.testing.assert_allclose(backend_sdk.cumprod(t(a), dim).numpy(), refp, rtol=1e-5, atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=4), st.data())
def test_cumsum_any_shape_and_strides(shape, data):
    a = rng.integers(-50, 50, size=shape).astype(np.int32)
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = t(a)
    if len(shape) >= 2:
        x = x.t() if len(shape) == 2 else x
        a = a.T if len(shape) == 2 else a
    out = backend_sdk.cumsum(x, dim)
    assert out.dtype == backend_sdk.int64  # integral inputs accumulate in int64
    np.testing.assert_array_equal(out.numpy(), np.cumsum(a.astype(np.int64), axis=dim))


def test_cumsum_dtypes_inplace_out_meta_errors():
    b = t([True, True, False, True])
    assert backend_sdk.cumsum(b, 0).tolist() == [1, 2, 2, 3]
    assert backend_sdk.cumsum(t([1, 2, 3]), 0, dtype=backend_sdk.float64).dtype == backend_sdk.float64
    x = t([1.0, 2.0, 3.0])
    assert x.cumsum_(0) is x and x.tolist() == [1.0, 3.0, 6.0]
    x.cumprod_(0)
    assert x.tolist() == [1.0, 3.0, 18.0]
    out = backend_sdk.empty(0, dtype=backend_sdk.float64)
    assert backend_sdk.cumsum(t([1, 2]), 0, out=out) is out and out.tolist() == [1.0, 3.0]
    big = rng.standard_normal((400, 300))
    np.testing.assert_allclose(backend_sdk.cumsum(t(big), 0).numpy(), np.cumsum(big, 0), rtol=1e-10, atol=1e-10)
    m = backend_sdk.cumsum(backend_sdk.empty(2, 3, device="meta", dtype=backend_sdk.int8), 1)
    assert m.is_meta and m.dtype == backend_sdk.int64 and m.shape == (2, 3)
    with pytest.raises(IndexError, match="Dimension out of range"):
        backend_sdk.cumsum(t([1.0]), 2)
    with pytest.raises(TypeError, match="Expected out tensor to have dtype float32, but got int64"):
        backend_sdk.cumsum(t([1.0]), 0, dtype=backend_sdk.float32, out=backend_sdk.empty(1, dtype=backend_sdk.int64))
    with pytest.raises(TypeError, match="provided dtype must match the dtype of self"):
        t([1.0]).cumsum_(0, dtype=backend_sdk.float64)


# ---------------------------------------------------------------------------
# norms
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("p", [2, 1, float("inf"), float("-inf"), 0, 3, 0.5, -1])
@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1), -1])
def test_vector_norm_matches_numpy(p, dim):
    a = rng.standard_normal((4, 5))
    a[0, 0] = 0.0
    axis = dim if dim is not None else None
    flat = a if axis is not None else a.reshape(-1)
    with np.errstate(divide="ignore"):  # p < 0 with a zero element: numpy warns, the answer is 0
        ref = np.linalg.norm(flat, ord=p, axis=axis if axis is not None else 0) if not isinstance(axis, tuple) else \
            np.linalg.norm(a.reshape(-1), ord=p)
    got = backend_sdk.linalg_vector_norm(t(a), p, None if dim is None else ([dim] if isinstance(dim, int) else list(dim)))
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12)
    got2 = backend_sdk.norm(t(a), p, dim)
    np.testing.assert_allclose(got2.numpy(), ref, rtol=1e-12)


def test_norm_overloads_fro_keepdim_dtype_out():
    a = rng.standard_normal((3, 4)).astype(np.float32)
    fro = np.sqrt((a.astype(np.float64) ** 2).sum())
    np.testing.assert_allclose(backend_sdk.norm(t(a)).numpy(), fro, rtol=1e-6)
    np.testing.assert_allclose(t(a).norm("fro").numpy(), fro, rtol=1e-6)
    np.testing.assert_allclose(t(a).norm().numpy(), fro, rtol=1e-6)
    np.testing.assert_allclose(backend_sdk.ops.aten.norm.Scalar(t(a), 1).numpy(), np.abs(a).sum(), rtol=1e-6)
    k = backend_sdk.norm(t(a), 2, 1, keepdim=True)
    assert k.shape == (3, 1)
    np.testing.assert_allclose(k.numpy()[:, 0], np.linalg.norm(a, axis=1), rtol=1e-6)
    d = backend_sdk.norm(t(a), 2, dtype=backend_sdk.float64)
    assert d.dtype == backend_sdk.float64
    out = backend_sdk.empty(0)
    assert backend_sdk.norm(t(a), 2, [0], out=out) is out and out.shape == (4,)
    v = backend_sdk.linalg_vector_norm(t(a), dim=[1], keepdim=True, dtype=backend_sdk.float64)
    assert v.shape == (3, 1) and v.dtype == backend_sdk.float64
    nonc = t(rng.standard_normal((6, 6))).t()  # strided input
    np.testing.assert_allclose(backend_sdk.linalg_vector_norm(nonc, 3, [0]).numpy(),
                               np.linalg.norm(nonc.numpy(), ord=3, axis=0), rtol=1e-12)
    m = backend_sdk.linalg_vector_norm(backend_sdk.empty(2, 3, device="meta"), 2, [1], True)
    assert m.is_meta and m.shape == (2, 1)
    assert backend_sdk.norm(backend_sdk.empty(0)).tolist() == 0.0


def test_norm_errors():
    with pytest.raises(TypeError, match="norm\\(\\): input dtype should be either floating point or complex. Got int64"):
        backend_sdk.norm(t([1, 2]))
    with pytest.raises(TypeError, match="linalg.vector_norm: Expected a floating point or complex tensor as input"):
        backend_sdk.linalg_vector_norm(t([1, 2]))
    with pytest.raises(ValueError, match="cannot compute the inf norm on an empty tensor"):
        backend_sdk.linalg_vector_norm(backend_sdk.empty(0), float("inf"))
    with pytest.raises(ValueError, match="dim 0 appears multiple times"):
        backend_sdk.linalg_vector_norm(backend_sdk.ones(2, 2), 2, [0, -2])
    with pytest.raises(ValueError, match="p='nuc' is not supported"):
        backend_sdk.norm(backend_sdk.ones(2, 2), "nuc")
    with pytest.raises(IndexError, match="Dimension out of range"):
        backend_sdk.norm(backend_sdk.ones(2), 2, 3)


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
def test_meta_results_match_cpu_metadata(build):
    cpu, meta = build("cpu"), build("meta")
    assert meta.is_meta and meta.shape == cpu.shape and meta.dtype == cpu.dtype and meta.stride() == cpu.stride()


@pytest.mark.parametrize("p", [2, 1, float("inf"), float("-inf"), 0, 3])
def test_norm_of_a_long_row_and_nan(p):
    a = rng.standard_normal(300_001).astype(np.float32)  # one long row: the chunked parallel path
    a[7] = 0.0
    with np.errstate(divide="ignore"):
        ref = np.linalg.norm(a.astype(np.float64), ord=p)
    np.testing.assert_allclose(backend_sdk.linalg_vector_norm(t(a), p).numpy(), ref, rtol=1e-5)
    half = t(a[:1000].astype(np.float16))
    np.testing.assert_allclose(backend_sdk.linalg_vector_norm(half, p, dtype=backend_sdk.float32).numpy(),
                               np.linalg.norm(a[:1000].astype(np.float16).astype(np.float64), ord=p), rtol=1e-3)
    assert np.isnan(backend_sdk.linalg_vector_norm(t([1.0, float("nan"), 2.0]), p).item()) or p == 0
