"""Differential tests of the kernels made fast in the second round of issue 18: every fast path gives
exactly the values of its definition or of the generic path it stands in for.

- rand/randn: the vectorised Philox (Note [Philox in batches]) and Box-Muller (Note [Vectorised
  Box-Muller]) against an independent numpy Philox4x32-10 and Python's scalar libm (math.log/cos/sin,
  the functions Note [Philox random numbers] defines the numbers with), bit for bit.
- sum(dim=0): the row-blocked column sums (Note [Column sums in row blocks]) against float64 sums of
  the rows in order, rounded once, bit for bit.
- flip and x[rows]: exact copies against numpy.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import backend_sdk as sdk

# ---- an independent Philox4x32-10 (Salmon et al., SC'11) in numpy -----------------------------------
_M0, _M1, _W0, _W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85


def _philox(seed: int, counters: np.ndarray) -> np.ndarray:
    """Blocks (n, 4) of uint32 words for 64-bit counters with key = seed."""
    c = np.asarray(counters, dtype=np.uint64)
    mask = np.uint64(0xFFFFFFFF)
    x0, x1 = c & mask, c >> np.uint64(32)
    x2 = np.zeros_like(c)
    x3 = np.zeros_like(c)
    k0, k1 = seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF
    for _ in range(10):
        p0, p1 = x0 * np.uint64(_M0), x2 * np.uint64(_M1)
        x0, x1, x2, x3 = ((p1 >> np.uint64(32)) ^ x1 ^ np.uint64(k0), p1 & mask,
                          (p0 >> np.uint64(32)) ^ x3 ^ np.uint64(k1), p0 & mask)
        k0, k1 = (k0 + _W0) & 0xFFFFFFFF, (k1 + _W1) & 0xFFFFFFFF
    return np.stack([x0, x1, x2, x3], 1).astype(np.uint32)


def _uniform_f32(seed: int, offset: int, n: int, lo: float = 0.0, hi: float = 1.0) -> np.ndarray:
    words = _philox(seed, np.uint64(offset) + np.arange((n + 3) // 4, dtype=np.uint64)).reshape(-1)[:n]
    u = (words >> np.uint32(8)).astype(np.float64) * 2.0**-24
    return (lo + u * (hi - lo)).astype(np.float32)


def _normal_f64(seed: int, offset: int, n: int, mean: float = 0.0, std: float = 1.0) -> list[float]:
    blocks = _philox(seed, np.uint64(offset) + np.arange((n + 1) // 2, dtype=np.uint64)).astype(np.uint64)
    u1 = ((blocks[:, 0] << np.uint64(32) | blocks[:, 1]) >> np.uint64(11)).astype(np.float64) * 2.0**-53
    u2 = ((blocks[:, 2] << np.uint64(32) | blocks[:, 3]) >> np.uint64(11)).astype(np.float64) * 2.0**-53
    out: list[float] = []
    for a, b in zip(u1.tolist(), u2.tolist()):
        r = math.sqrt(-2.0 * math.log(1.0 - a))
        t = 6.283185307179586476925286766559 * b
        out += [mean + std * (r * math.cos(t)), mean + std * (r * math.sin(t))]
    return out[:n]


def _gen(seed: int, offset: int = 0) -> sdk.Generator:
    g = sdk.Generator()
    g.manual_seed(seed)
    g.set_offset(offset)
    return g


SIZES = [0, 1, 3, 7, 8, 9, 31, 32, 33, 255, 256, 257, 1023, 4099, 70001]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("seed", [0, 7, 2**63 + 12345])
def test_rand_float32_is_the_philox_definition(n: int, seed: int) -> None:
    got = sdk.rand(n, generator=_gen(seed)).numpy()
    np.testing.assert_array_equal(got, _uniform_f32(seed, 0, n))


@pytest.mark.parametrize("offset", [1, 2**32 - 3, 2**32 - 8, 2**33 - 1, 2**64 - 100])
def test_rand_counters_carry_into_the_high_word(offset: int) -> None:
    # Eight counters per vector: the low 32 bits of counter + lane may wrap inside one vector.
    got = sdk.rand(300, generator=_gen(99, offset)).numpy()
    np.testing.assert_array_equal(got, _uniform_f32(99, offset, 300))


def test_uniform_range_and_non_contiguous_fill_in_logical_order() -> None:
    t = sdk.empty(40, 30).t()  # (30, 40), column-major storage
    t.uniform_(-2.5, 3.0, generator=_gen(3))
    want = _uniform_f32(3, 0, 1200, -2.5, 3.0).reshape(30, 40)
    np.testing.assert_array_equal(t.numpy(), want)


def test_rand_threads_and_chunks_do_not_change_values() -> None:
    n = 3 * 32768 + 5  # several parallel chunks, none aligned to a block of 4
    np.testing.assert_array_equal(sdk.rand(n, generator=_gen(11)).numpy(), _uniform_f32(11, 0, n))


def test_rand_other_dtypes_unchanged() -> None:
    # float64 takes 53-bit words (two per block), float16 the top 11 bits: the scalar path, checked here
    # through the same reference words.
    g = _gen(4)
    got = sdk.rand(101, generator=g, dtype=sdk.float64).numpy()
    b = _philox(4, np.arange(51)).astype(np.uint64).reshape(-1, 2)
    want = (((b[:, 0] << np.uint64(32)) | b[:, 1]) >> np.uint64(11)).astype(np.float64)[:101] * 2.0**-53
    np.testing.assert_array_equal(got, want)
    got16 = sdk.rand(101, generator=_gen(4), dtype=sdk.float16).numpy()
    w = _philox(4, np.arange(26)).reshape(-1)[:101]
    np.testing.assert_array_equal(got16, ((w >> np.uint32(21)).astype(np.float64) * 2.0**-11).astype(np.float16))


@pytest.mark.parametrize("n", [1, 2, 3, 17, 257, 5001])
@pytest.mark.parametrize("mean,std", [(0.0, 1.0), (3.0, 0.5), (-1e3, 1e-3), (0.0, 1e30), (1e8, 1.0)])
def test_randn_float32_is_the_scalar_box_muller(n: int, mean: float, std: float) -> None:
    t = sdk.empty(n).normal_(mean, std, generator=_gen(n))
    want = np.array(_normal_f64(n, 0, n, mean, std)).astype(np.float32)
    np.testing.assert_array_equal(t.numpy(), want)


def test_randn_large_float32_exact() -> None:
    # ~2^-15 of float32 values fall within the vector path's margin and take the scalar recomputation:
    # 200k values exercise both branches.
    n = 200_001
    got = sdk.randn(n, generator=_gen(2024, 5)).numpy()
    want = np.array(_normal_f64(2024, 5, n)).astype(np.float32)
    np.testing.assert_array_equal(got, want)


def test_randn_16_bit_dtypes_and_float64() -> None:
    n = 4097
    ref = np.array(_normal_f64(8, 0, n, 0.25, 2.0))
    h = sdk.empty(n, dtype=sdk.float16).normal_(0.25, 2.0, generator=_gen(8))
    np.testing.assert_array_equal(h.numpy(), ref.astype(np.float32).astype(np.float16))
    bf = sdk.empty(n, dtype=sdk.bfloat16).normal_(0.25, 2.0, generator=_gen(8))
    want_bf = sdk.from_numpy(ref.astype(np.float32)).to(sdk.bfloat16)
    np.testing.assert_array_equal(bf.float().numpy(), want_bf.float().numpy())
    d = sdk.empty(n, dtype=sdk.float64).normal_(0.25, 2.0, generator=_gen(8))
    np.testing.assert_array_equal(d.numpy(), ref)


def test_randn_non_contiguous_in_logical_order() -> None:
    t = sdk.empty(50, 20).t()
    t.normal_(generator=_gen(1))
    np.testing.assert_array_equal(t.numpy(), np.array(_normal_f64(1, 0, 1000)).astype(np.float32).reshape(20, 50))


def test_random_ints_bernoulli_exponential_unchanged_by_batches() -> None:
    # The batched block cache feeds every distribution; integers are exact words mod the range.
    got = sdk.empty(1001, dtype=sdk.int64).random_(0, 1000, generator=_gen(6)).numpy()
    w = _philox(6, np.arange(251)).reshape(-1)[:1001].astype(np.int64)
    np.testing.assert_array_equal(got, w % 1000)
    b = sdk.empty(777).bernoulli_(0.3, generator=_gen(6)).numpy()
    blocks = _philox(6, np.arange(389)).astype(np.uint64).reshape(-1, 2)
    u = ((((blocks[:, 0] << np.uint64(32)) | blocks[:, 1]) >> np.uint64(11)).astype(np.float64) * 2.0**-53)[:777]
    np.testing.assert_array_equal(b, (u < 0.3).astype(np.float32))


# ---- sum(dim=0): row-blocked column sums ------------------------------------------------------------
def _ordered_column_sum(a: np.ndarray) -> np.ndarray:
    """Rows added in order in float64 (numpy adds axis 0 of a C-contiguous array row by row), rounded once."""
    acc = np.zeros(a.shape[1:], dtype=np.float64)
    for row in a.astype(np.float64):
        acc = acc + row
    return acc


@pytest.mark.parametrize("rows", [1, 2, 7, 8, 9, 16, 17, 100])
@pytest.mark.parametrize("cols", [1, 5, 8, 13, 64, 1001])
def test_sum_dim0_is_the_ordered_float64_sum(rows: int, cols: int) -> None:
    rng = np.random.default_rng(rows * 1000 + cols)
    a = (rng.standard_normal((rows, cols)) * 10.0 ** rng.integers(-3, 6, (rows, cols))).astype(np.float32)
    want = _ordered_column_sum(a)
    np.testing.assert_array_equal(sdk.from_numpy(a).sum(0).numpy(), want.astype(np.float32))
    np.testing.assert_array_equal(sdk.from_numpy(a).mean(0).numpy(), (want / rows).astype(np.float32))


def test_sum_dim0_big_matrix_threads_split_columns() -> None:
    a = np.random.default_rng(1).random((700, 4099), dtype=np.float32)
    np.testing.assert_array_equal(sdk.from_numpy(a).sum(0).numpy(), _ordered_column_sum(a).astype(np.float32))


def test_sum_leading_dims_of_3d_and_column_slices() -> None:
    a = np.random.default_rng(2).random((5, 6, 37), dtype=np.float32)
    t = sdk.from_numpy(a)
    want = _ordered_column_sum(a.reshape(30, 37)).astype(np.float32)
    np.testing.assert_array_equal(t.sum((0, 1)).numpy(), want)
    np.testing.assert_array_equal(t.sum(0).numpy(), _ordered_column_sum(a).astype(np.float32))
    m = np.random.default_rng(3).random((19, 50), dtype=np.float32)
    view = sdk.from_numpy(m)[:, 3:40]  # kept dim contiguous, row stride 50
    np.testing.assert_array_equal(view.sum(0).numpy(), _ordered_column_sum(m[:, 3:40]).astype(np.float32))
    np.testing.assert_array_equal(view.sum(0, keepdim=True).numpy(),
                                  _ordered_column_sum(m[:, 3:40]).astype(np.float32)[None])


def test_sum_dim0_nan_inf_and_empty() -> None:
    a = np.ones((20, 9), dtype=np.float32)
    a[3, 1], a[12, 2], a[0, 4], a[19, 4] = np.nan, np.inf, np.inf, -np.inf
    got = sdk.from_numpy(a).sum(0).numpy()
    with np.errstate(invalid="ignore"):
        want = a.astype(np.float64).sum(0).astype(np.float32)
    np.testing.assert_array_equal(got, want)
    assert sdk.zeros(0, 5).sum(0).numpy().tolist() == [0.0] * 5
    assert tuple(sdk.zeros(4, 0).sum(0).shape) == (0,)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_sum_dim0_other_dtypes_unchanged(dtype: str) -> None:
    a = np.random.default_rng(4).random((33, 17)).astype(np.float32)
    t = sdk.from_numpy(a).to(getattr(sdk, dtype))
    vals = t.double().numpy()
    want = _ordered_column_sum(vals)
    got = t.sum(0)
    assert got.dtype == getattr(sdk, dtype)
    np.testing.assert_array_equal(got.double().numpy(), sdk.from_numpy(want).to(getattr(sdk, dtype)).double().numpy())


# ---- flip and x[rows]: copies ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int8", "int64", "bool"])
@pytest.mark.parametrize("dims", [(0,), (1,), (0, 1), (-1,), (0, 2), (1, 2), (0, 1, 2)])
def test_flip_matches_numpy(dtype: str, dims: tuple[int, ...]) -> None:
    a = (np.arange(3 * 5 * 37) % 11).reshape(3, 5, 37).astype(dtype)
    np.testing.assert_array_equal(sdk.flip(sdk.from_numpy(a), list(dims)).numpy(), np.flip(a, dims))


def test_flip_non_contiguous_and_empty_inputs() -> None:
    a = np.random.default_rng(5).random((40, 64), dtype=np.float32)
    t = sdk.from_numpy(a)
    np.testing.assert_array_equal(sdk.flip(t.t(), [1]).numpy(), np.flip(a.T, 1))  # last dim strided
    np.testing.assert_array_equal(sdk.flip(t[:, ::3], [0, 1]).numpy(), np.flip(a[:, ::3], (0, 1)))
    np.testing.assert_array_equal(sdk.flip(t[::2, 1:], [1]).numpy(), np.flip(a[::2, 1:], 1))
    assert tuple(sdk.flip(sdk.zeros(0, 5), [1]).shape) == (0, 5)
    np.testing.assert_array_equal(sdk.flip(sdk.from_numpy(np.arange(7.0)), [0]).numpy(), np.arange(7.0)[::-1])


@pytest.mark.parametrize("n", [1, 7, 8, 9, 33, 2048])
def test_flip_last_dim_every_length(n: int) -> None:
    a = np.random.default_rng(n).random((3, n), dtype=np.float32)
    np.testing.assert_array_equal(sdk.flip(sdk.from_numpy(a), [-1]).numpy(), a[:, ::-1])
    np.testing.assert_array_equal(sdk.flip(sdk.from_numpy(a), [0, 1]).numpy(), a[::-1, ::-1])


def test_index_rows_and_index_select_match_numpy() -> None:
    a = np.random.default_rng(6).random((64, 33), dtype=np.float32)
    idx = np.random.default_rng(7).integers(-64, 64, 100)
    t, ti = sdk.from_numpy(a), sdk.from_numpy(idx)
    np.testing.assert_array_equal(t[ti].numpy(), a[idx])
    pos = np.where(idx < 0, idx + 64, idx)
    np.testing.assert_array_equal(sdk.index_select(t, 0, sdk.from_numpy(pos)).numpy(), a[pos])
    np.testing.assert_array_equal(t.t()[ti[:20] % 33].numpy(), a.T[idx[:20] % 33])  # strided rows
    with pytest.raises(IndexError, match="out of bounds"):
        t[sdk.tensor([64])]


# ---- factories: the C++ fast path (Note [Factory fast path]) ----------------------------------------
@pytest.mark.parametrize("args", [(3,), (2, 3), ((2, 3),), ([2, 3],), (), ((),), (0,), (4, 0, 2)])
@pytest.mark.parametrize("fn,value", [(sdk.zeros, 0.0), (sdk.ones, 1.0)])
def test_zeros_ones_fast_path_shapes(args: tuple, fn, value: float) -> None:
    t = fn(*args)
    shape = tuple(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, list)) else args
    want = np.full(shape, value, dtype=np.float32)
    assert tuple(t.shape) == want.shape and t.dtype == sdk.float32
    np.testing.assert_array_equal(t.numpy(), want)
    assert t._version == 0 and t.is_contiguous() and not t.requires_grad


def test_fast_path_factories_take_dtype_device_and_requires_grad() -> None:
    t = sdk.zeros(2, 2, dtype=sdk.int64, device="cpu")
    assert t.dtype == sdk.int64 and t.device.type == "cpu" and t.numpy().tolist() == [[0, 0], [0, 0]]
    g = sdk.ones(3, requires_grad=True)
    assert g.requires_grad and g.is_leaf
    assert sdk.ones(2, dtype=sdk.bool).numpy().tolist() == [True, True]


def test_factories_fall_back_for_other_call_shapes_with_the_same_errors() -> None:
    assert tuple(sdk.zeros(np.int64(2), 3).shape) == (2, 3)  # np.int64: the Python path
    assert tuple(sdk.zeros(sdk.Size([2, 3])).shape) == (2, 3)
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        sdk.zeros(-1)
    with pytest.raises(TypeError):
        sdk.zeros(2.5)
    with pytest.raises((RuntimeError, ValueError)):
        sdk.zeros(2, device="nodevice")
    with pytest.raises(TypeError):
        sdk.ones(True)  # bool is not a size (PyTorch: TypeError)


def test_like_fast_path_and_fallbacks() -> None:
    x = sdk.arange(6.0).reshape(2, 3)
    o = sdk.ones_like(x)
    assert o.stride() == (3, 1) and o.numpy().tolist() == [[1.0] * 3] * 2 and o._version == 0
    z = sdk.zeros_like(x, dtype=sdk.float64)
    assert z.dtype == sdk.float64 and z.numpy().sum() == 0
    f = sdk.full_like(x, 2.5)
    assert f.numpy().tolist() == [[2.5] * 3] * 2
    assert sdk.full_like(x, True).dtype == sdk.float32  # bool fill: the Python path, x's dtype
    xt = x.t()  # non-contiguous: preserve_format keeps the transposed strides (the Python path)
    assert sdk.ones_like(xt).stride() == xt.stride()
    assert sdk.zeros_like(x, requires_grad=True).requires_grad
    assert sdk.ones_like(sdk.ones(0, 3)).shape == (0, 3)
