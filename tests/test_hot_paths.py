"""Semantics of the paths made fast in issue 18: the Python indexing/view/factory fast paths give the
same views and errors as the general paths, and the vectorised reductions (amax/amin runs, column sums,
norms) give numpy's values, NaN propagation included, at every run length around the vector widths.
CPU only: the fast paths are the CPU's (tests/test_indexing_fast_path.py runs the indexing slot on every
test device)."""
from __future__ import annotations

import numpy as np
import pytest

import backend_sdk
from backend_sdk._tensor import _apply_slicing

LENGTHS = [1, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 1000, 4099]


# ---- Python indexing fast paths --------------------------------------------------------------------
def _general(t: backend_sdk.Tensor, index: object) -> backend_sdk.Tensor:
    view, indices = _apply_slicing(t, index)
    assert not indices
    return view


@pytest.mark.parametrize("index", [0, 2, -1, -4, slice(1, 3), slice(None), slice(None, None, 2), slice(-3, None),
                                   slice(5, 1), slice(1, 100), slice(None, None, 3), slice(np.int64(1), np.int64(3))])
def test_int_and_slice_fast_paths_match_general_path(index: object) -> None:
    base = backend_sdk.arange(24.0).reshape(4, 6)
    x = base
    got, want = x[index], _general(x, index)
    assert tuple(got.shape) == tuple(want.shape)
    assert got.stride() == want.stride()
    assert got.storage_offset() == want.storage_offset()
    assert got.data_ptr() == want.data_ptr() or got.numel() == 0
    np.testing.assert_array_equal(got.numpy(), base.numpy()[index])
    if got.numel():  # a view: writes reach the base
        got.add_(100)
        assert base.numpy()[index].min() >= 100


def test_fast_paths_on_a_view_with_offset() -> None:
    base = backend_sdk.arange(30.0).reshape(5, 6)
    x = base[1:, 2:]
    np.testing.assert_array_equal(x[1].numpy(), base.numpy()[2, 2:])
    np.testing.assert_array_equal(x[1:3].numpy(), base.numpy()[2:4, 2:])
    assert x[1].storage_offset() == 2 * 6 + 2


def test_fast_path_errors_match_pytorch() -> None:
    x = backend_sdk.ones(4, 4)
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 0 with size 4"):
        x[4]
    with pytest.raises(IndexError, match="index -5 is out of bounds for dimension 0 with size 4"):
        x[-5]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::0]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    scalar = backend_sdk.tensor(3.0)
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 0"):
        scalar[0]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 0"):
        scalar[0:1]
    assert x[True].shape == (1, 4, 4)  # bool is not the int fast path


def test_transpose_select_slice_dims() -> None:
    x = backend_sdk.arange(24.0).reshape(2, 3, 4)
    a = x.numpy()
    np.testing.assert_array_equal(x.transpose(0, 2).numpy(), a.swapaxes(0, 2))
    np.testing.assert_array_equal(x.transpose(-1, -3).numpy(), a.swapaxes(-1, -3))
    np.testing.assert_array_equal(x.transpose(np.int64(1), 2).numpy(), a.swapaxes(1, 2))
    np.testing.assert_array_equal(x.select(-1, -1).numpy(), a[..., -1])
    np.testing.assert_array_equal(x._slice(-2, 1, None, 1).numpy(), a[:, 1:])
    with pytest.raises(IndexError, match=r"^Dimension out of range \(expected to be in range of \[-3, 2\]"):
        x.transpose(0, 3)  # PyTorch's text (no operator prefix)
    with pytest.raises(IndexError, match=r"^Dimension out of range \(expected to be in range of \[-3, 2\], but got 3\)"):
        x.select(3, 0)
    s = backend_sdk.tensor(1.0)
    assert s.transpose(0, -1).shape == ()
    with pytest.raises(IndexError, match="select\\(\\) cannot be applied to a 0-dim tensor"):
        s.select(0, 0)


# ---- factories and item -----------------------------------------------------------------------------
@pytest.mark.parametrize("args", [(3,), ((3,),), ([3],), (2, 3), ((2, 3),), (backend_sdk.Size([2, 3]),),
                                  (np.int64(3),), ((np.int64(2), 3),), ()])
def test_zeros_ones_sizes(args: tuple) -> None:
    want = np.zeros(np.array(args[0] if len(args) == 1 and not np.isscalar(args[0]) else args, dtype=np.int64)
                    .tolist() if args else ())
    for fn, value in ((backend_sdk.zeros, 0), (backend_sdk.ones, 1)):
        t = fn(*args)
        assert tuple(t.shape) == want.shape
        assert t.dtype == backend_sdk.float32
        np.testing.assert_array_equal(t.numpy(), want + value)


def test_factory_keywords_and_errors() -> None:
    t = backend_sdk.zeros(2, dtype=backend_sdk.int64, requires_grad=False)
    assert t.dtype == backend_sdk.int64 and not t.requires_grad
    assert backend_sdk.ones(2, requires_grad=True).requires_grad
    with pytest.raises(TypeError, match="zeros\\(\\): expected a sequence of ints, but got float"):
        backend_sdk.zeros(2.5)
    with pytest.raises(TypeError, match="ones\\(\\): expected a sequence of ints, but got bool"):
        backend_sdk.ones(True)
    x = backend_sdk.arange(6.0).reshape(2, 3).t()
    for fn, value in ((backend_sdk.zeros_like, 0), (backend_sdk.ones_like, 1)):
        y = fn(x)
        assert tuple(y.shape) == (3, 2) and y.dtype == x.dtype and y.device == x.device
        np.testing.assert_array_equal(y.numpy(), np.full((3, 2), value, dtype=np.float32))
        assert fn(x, dtype=backend_sdk.int32).dtype == backend_sdk.int32


@pytest.mark.parametrize("dtype, value", [(backend_sdk.float32, 1.5), (backend_sdk.float64, -2.25),
                                          (backend_sdk.int64, 7), (backend_sdk.bool, True),
                                          (backend_sdk.float16, 0.5), (backend_sdk.bfloat16, 2.0)])
def test_item(dtype: object, value: object) -> None:
    got = backend_sdk.tensor([value], dtype=dtype).item()
    assert got == value and type(got) is type(value)
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        backend_sdk.zeros(2).item()


# ---- vectorised reductions ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", LENGTHS)
def test_amax_amin_runs(n: int, dtype: type) -> None:
    rng = np.random.default_rng(n)
    a = (rng.standard_normal((5, n)) * 100).astype(dtype)
    a[1, :] = -np.inf
    a[2, n // 2] = np.inf
    t = backend_sdk.from_numpy(a)
    np.testing.assert_array_equal(t.amax(1).numpy(), a.max(1))
    np.testing.assert_array_equal(t.amin(1).numpy(), a.min(1))
    np.testing.assert_array_equal(t.amax(1, keepdim=True).numpy(), a.max(1, keepdims=True))
    for pos in sorted({0, n // 3, n - 1}):  # NaN first, inside a vector block, in the tail
        b = a.copy()
        b[3, pos] = np.nan
        tb = backend_sdk.from_numpy(b)
        for got in (tb.amax(1).numpy(), tb.amin(1).numpy(), backend_sdk.max(tb[3]).numpy()):
            assert np.isnan(got if got.ndim == 0 else got[3]), f"NaN at {pos} of {n} lost"
        np.testing.assert_array_equal(tb.amax(1).numpy()[[0, 1, 2, 4]], b.max(1)[[0, 1, 2, 4]])


def test_amax_all_nan_and_signed_inputs() -> None:
    t = backend_sdk.full([3, 40], float("nan"))
    assert np.isnan(t.amax(1).numpy()).all()
    i = backend_sdk.from_numpy(np.arange(-50, 50, dtype=np.int32).reshape(2, 50))
    np.testing.assert_array_equal(i.amax(1).numpy(), [-1, 49])
    h = backend_sdk.from_numpy(np.linspace(-3, 3, 70, dtype=np.float16).reshape(2, 35))
    np.testing.assert_array_equal(h.amin(1).numpy(), h.numpy().min(1))


@pytest.mark.parametrize("cols", LENGTHS)
def test_sum_dim0_columns(cols: int) -> None:
    rng = np.random.default_rng(cols)
    a = rng.standard_normal((37, cols)).astype(np.float32)
    t = backend_sdk.from_numpy(a)
    # Rows accumulate in order in double, rounded once: exactly numpy's float64 column sum, rounded.
    np.testing.assert_array_equal(t.sum(0).numpy(), a.astype(np.float64).sum(0).astype(np.float32))
    np.testing.assert_array_equal(t.mean(0).numpy(), (a.astype(np.float64).sum(0) / 37).astype(np.float32))
    b = a.copy()
    b[5, cols - 1] = np.nan
    b[6, 0] = np.inf
    got = backend_sdk.from_numpy(b).sum(0).numpy()
    assert np.isnan(got[cols - 1]) and (cols == 1 or got[0] == np.inf)


def test_sum_dim0_large_matches_float64() -> None:
    a = np.random.default_rng(9).random((4096, 513), dtype=np.float32)
    np.testing.assert_array_equal(backend_sdk.from_numpy(a).sum(0).numpy(), a.astype(np.float64).sum(0).astype(np.float32))


@pytest.mark.parametrize("n", LENGTHS + [1 << 20])
def test_norms(n: int) -> None:
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n).astype(np.float32)
    t = backend_sdk.from_numpy(a)
    a64 = a.astype(np.float64)
    np.testing.assert_allclose(float(backend_sdk.norm(t)), np.sqrt((a64 * a64).sum()), rtol=1e-7)
    np.testing.assert_allclose(float(backend_sdk.norm(t, 1)), np.abs(a64).sum(), rtol=1e-7)
    assert float(backend_sdk.norm(t, float("inf"))) == np.abs(a).max()
    assert float(backend_sdk.norm(t, float("-inf"))) == np.abs(a).min()
    assert float(backend_sdk.norm(t, 0)) == np.count_nonzero(a)
    np.testing.assert_allclose(float(backend_sdk.norm(t, 3)), (np.abs(a64) ** 3).sum() ** (1 / 3), rtol=1e-6)
    b = a.copy()
    b[n // 2] = np.nan
    tb = backend_sdk.from_numpy(b)
    for p in (2, 1, float("inf"), float("-inf")):
        assert np.isnan(float(backend_sdk.norm(tb, p))), f"norm {p} lost a NaN"


def test_norm_dims_and_half() -> None:
    a = np.random.default_rng(1).standard_normal((6, 33)).astype(np.float32)
    t = backend_sdk.from_numpy(a)
    np.testing.assert_allclose(backend_sdk.norm(t, dim=1).numpy(), np.linalg.norm(a.astype(np.float64), axis=1),
                               rtol=1e-6)
    np.testing.assert_allclose(backend_sdk.norm(t, dim=0).numpy(), np.linalg.norm(a.astype(np.float64), axis=0),
                               rtol=1e-6)
    h = t.to(backend_sdk.float16)
    np.testing.assert_allclose(float(backend_sdk.norm(h)), np.linalg.norm(h.numpy().astype(np.float64)), rtol=1e-3)
