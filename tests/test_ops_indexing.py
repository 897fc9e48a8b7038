"""Indexing operators and Python indexing against numpy: aten::index / index_put_ (advanced indexing through
Tensor.__getitem__ / __setitem__), index_select, gather, scatter*, masked_select, nonzero, take, flip,
where(condition), on every test device (cpu, accel, pyaccel: instantiate_device_type_tests); Meta against CPU
metadata; bad inputs by type and message."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import backend_sdk
from backend_sdk import ops
from backend_sdk.testing import instantiate_device_type_tests, skipIf

# accel reports out-of-bounds indices as a device fault at the next synchronize (as CUDA's device-side
# asserts), not as IndexError at the call, so the error-text tests stay cpu/pyaccel. (CPU index tensors --
# Python lists and numpy arrays become CPU tensors -- are moved to self's device as PyTorch's: Note [CPU
# index tensors], samples/accel_sim/csrc/AccelKernels.cpp.)
_ACCEL_ASYNC_BOUNDS = skipIf(True, "accel reports bad indices asynchronously", device_type="accel")

DTYPES = [np.float32, np.float64, np.int64, np.int32, np.uint8, np.bool_, np.float16]


def make_values(shape, dtype, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return np.asarray(rng.random(shape) < 0.5)
    return np.asarray(rng.integers(0, 100, size=shape)).astype(dtype)


def as_layout(arr: np.ndarray, layout: str, device: str = "cpu") -> backend_sdk.Tensor:
    """A tensor with arr's values in a given memory layout: contiguous, permuted or sliced with steps."""
    if layout == "contiguous" or arr.ndim == 0:
        return backend_sdk.tensor(arr, device=device)
    if layout == "permuted":
        order = list(reversed(range(arr.ndim)))
        t = backend_sdk.tensor(np.ascontiguousarray(arr.transpose(order)), device=device).permute(*order)
        assert arr.ndim < 2 or not t.is_contiguous() or min(arr.shape) <= 1
        return t
    big = np.zeros(tuple(2 * s + 1 for s in arr.shape), dtype=arr.dtype)
    big[tuple(slice(1, None, 2) for _ in arr.shape)] = arr
    return backend_sdk.tensor(big, device=device)[tuple(slice(1, None, 2) for _ in arr.shape)]


# ---------------------------------------------------------------------------
# hypothesis: index tuples mixing slices, None, Ellipsis, integer arrays, masks
# ---------------------------------------------------------------------------


@st.composite
def index_cases(draw, for_setitem=False):
    ndim = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim)))
    dtype = draw(st.sampled_from(DTYPES))
    layout = draw(st.sampled_from(["contiguous", "permuted", "sliced"]))
    bshape = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    adv_kind = draw(st.sampled_from(["ints", "mask"]))
    form = draw(st.sampled_from(["tensor", "list", "ndarray"]))
    items, d, used_ellipsis, used_mask = [], 0, False, False
    while True:
        kind = draw(st.sampled_from(["stop", "slice", "adv", "none", "ellipsis", "adv"]))
        if kind == "stop":
            break
        if kind == "none":
            items.append(None)
            continue
        if kind == "ellipsis":
            used_ellipsis = True
            continue
        if d >= ndim:
            continue
        size = shape[d]
        if kind == "slice":
            start = draw(st.one_of(st.none(), st.integers(-5, 5)))
            stop = draw(st.one_of(st.none(), st.integers(-5, 5)))
            step = draw(st.one_of(st.none(), st.integers(1, 3)))
            items.append(slice(start, stop, step))
            d += 1
        elif adv_kind == "ints":
            if size == 0:
                items.append(slice(None))
                d += 1
                continue
            # some dims of the broadcast shape may be 1 in this index
            own = tuple(draw(st.sampled_from([s, 1])) for s in bshape)
            own = own[draw(st.integers(0, len(own))):] or (1,)  # 0-d integer indices: see the dedicated tests
            values = np.asarray(draw(st.lists(st.integers(-size, size - 1), min_size=int(np.prod(own, dtype=int)),
                                              max_size=int(np.prod(own, dtype=int)))), dtype=np.int64).reshape(own)
            items.append(("int", values))
            d += 1
        else:
            if used_mask:
                items.append(slice(None))
                d += 1
                continue
            k = draw(st.integers(1, ndim - d))
            mask = np.asarray(draw(st.lists(st.booleans(), min_size=int(np.prod(shape[d:d + k], dtype=int)),
                                            max_size=int(np.prod(shape[d:d + k], dtype=int)))), dtype=bool).reshape(shape[d:d + k])
            items.append(("mask", mask))
            used_mask = True
            d += k
    if used_ellipsis:
        # Where an ellipsis is valid whatever the items: at the end, or anywhere when the items use every dim.
        # (numpy also counts an empty ellipsis between two advanced indices as separating them; PyTorch
        # looks at dims only: see test_empty_ellipsis_between_advanced_indices_keeps_them_adjacent.)
        adv_pos = [i for i, item in enumerate(items) if isinstance(item, tuple)]
        allowed = [p for p in range(len(items) + 1) if not adv_pos or p <= adv_pos[0] or p > adv_pos[-1]]
        pos = draw(st.sampled_from(allowed)) if d == ndim else len(items)
        items.insert(pos, Ellipsis)
    return shape, dtype, layout, form, items


def to_index(items, form, for_numpy):
    out = []
    for item in items:
        if isinstance(item, tuple):
            values = item[1]
            if for_numpy:
                out.append(values)
            elif form == "tensor" or values.ndim == 0 or values.size == 0:  # [] would be a long index
                out.append(backend_sdk.tensor(values))
            elif form == "list":
                out.append(values.tolist())
            else:
                out.append(values)
        else:
            out.append(item)
    return tuple(out)


def has_advanced(items) -> bool:
    return any(isinstance(i, tuple) for i in items)


# ---------------------------------------------------------------------------
# indexing semantics in detail
# ---------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# index_select, gather, scatter, masked_select, nonzero, take, flip, where
# ---------------------------------------------------------------------------


def ref_gather(arr, dim, idx):
    out = np.empty(idx.shape, dtype=arr.dtype)
    for pos in np.ndindex(*idx.shape):
        src = list(pos)
        src[dim] = idx[pos]
        out[pos] = arr[tuple(src)]
    return out


def ref_scatter(arr, dim, idx, src, reduce=None):
    out = arr.copy()
    for pos in np.ndindex(*idx.shape):
        dst = list(pos)
        dst[dim] = idx[pos]
        v = src[pos] if isinstance(src, np.ndarray) else src
        if reduce == "add":
            out[tuple(dst)] += v
        elif reduce == "multiply":
            out[tuple(dst)] *= v
        else:
            out[tuple(dst)] = v
    return out


# ---------------------------------------------------------------------------
# Meta
# ---------------------------------------------------------------------------


def meta_like(t: backend_sdk.Tensor) -> backend_sdk.Tensor:
    return backend_sdk.empty_strided(list(t.shape), list(t.stride()), dtype=t.dtype, device="meta")


# ---------------------------------------------------------------------------
# bad inputs
# ---------------------------------------------------------------------------


def re_escape(s: str) -> str:
    import re

    return re.escape(s)


class TestIndexingDeviceType:
    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example])
    @given(index_cases())
    def test_getitem_matches_numpy(self, device, case):
        shape, dtype, layout, form, items = case
        arr = make_values(shape, dtype)
        t = as_layout(arr, layout, device=device)
        # A 0-d integer array acts as an int in PyTorch (a select) and as an advanced index in numpy:
        # both give the same values.
        expected = arr[to_index(items, form, True)]
        got = t[to_index(items, form, False)]
        assert tuple(got.shape) == expected.shape
        assert got.dtype == backend_sdk.tensor(arr, device=device).dtype
        np.testing.assert_array_equal(got.cpu().numpy(), expected)
        if not has_advanced(items):  # basic indexing stays a view
            assert got.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example])
    @given(index_cases(), st.booleans())
    def test_setitem_matches_numpy(self, device, case, scalar_value):
        shape, dtype, layout, form, items = case
        arr = make_values(shape, dtype)
        t = as_layout(arr, layout, device=device)
        np_index = to_index(items, form, True)
        target_shape = arr[np_index].shape
        # With repeated positions the winner of an overwrite is unspecified (PyTorch): use one value then.
        positions = np.arange(arr.size).reshape(arr.shape)[np_index] if arr.size else np.zeros(0)
        unique = len(np.unique(positions)) == np.size(positions)
        if scalar_value or not unique:
            value = make_values((), dtype, seed=5).item()
            np_value = value
        else:
            np_value = make_values(target_shape, dtype, seed=7)
            value = backend_sdk.tensor(np_value, device=device)
        expected = arr.copy()
        expected[np_index] = np_value
        t[to_index(items, form, False)] = value
        np.testing.assert_array_equal(t.cpu().numpy(), expected)

    def test_adjacent_and_separated_advanced_indices_place_dims_like_pytorch(self, device):
        arr = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5)
        t = backend_sdk.tensor(arr, device=device)
        i, j = np.array([[0, 1]]), np.array([2, 0])
        for index in [(slice(None), i, j), (i, slice(None), j), (i, j), (slice(None), slice(None), i, j),
                      (Ellipsis, i), (i, Ellipsis, j), (None, slice(None), i, None, j)]:
            ours = t[tuple(backend_sdk.tensor(x, device=device) if isinstance(x, np.ndarray) else x for x in index)]
            assert tuple(ours.shape) == arr[index].shape, index
            np.testing.assert_array_equal(ours.cpu().numpy(), arr[index])

    def test_empty_ellipsis_between_advanced_indices_keeps_them_adjacent(self, device):
        # PyTorch decides adjacency by the indexed dims; numpy would treat the ellipsis as a separator.
        t = backend_sdk.arange(24, device=device).reshape(2, 3, 4)
        got = t[:, [[0, 1]], ..., [[2, 3]]]
        assert tuple(got.shape) == (2, 1, 2)
        np.testing.assert_array_equal(got.cpu().numpy(), np.arange(24).reshape(2, 3, 4)[:, [[0, 1]], [[2, 3]]])

    def test_int_with_advanced_index_is_applied_first_as_in_pytorch(self, device):
        # PyTorch selects the int first (x[0] then [:, idx]); numpy would move the broadcast dims first.
        arr = np.arange(24).reshape(2, 3, 4)
        t = backend_sdk.tensor(arr, device=device)
        got = t[0, :, [0, 1]]
        assert tuple(got.shape) == (3, 2)
        np.testing.assert_array_equal(got.cpu().numpy(), arr[0][:, [0, 1]])

    def test_zero_dim_integer_tensor_index_is_a_view(self, device):
        t = backend_sdk.arange(6, device=device).reshape(2, 3)
        row = t[backend_sdk.tensor(1, device=device)]
        assert row.tolist() == [3, 4, 5]
        row[0] = 30
        assert t[1, 0].item() == 30

    def test_bool_scalars_and_zero_dim_masks(self, device):
        arr = np.arange(6).reshape(2, 3)
        t = backend_sdk.tensor(arr, device=device)
        for index in [True, False, (Ellipsis, True), (0, False)]:
            np.testing.assert_array_equal(t[index].cpu().numpy(), arr[index])
        assert tuple(t[backend_sdk.tensor(True, device=device)].shape) == (1, 2, 3)
        assert tuple(t[backend_sdk.tensor(False, device=device)].shape) == (0, 2, 3)

    def test_multi_dim_mask_followed_by_int_and_slice(self, device):
        arr = np.arange(2 * 3 * 4).reshape(2, 3, 4)
        mask = arr[:, :, 0] % 4 == 0
        t = backend_sdk.tensor(arr, device=device)
        np.testing.assert_array_equal(t[backend_sdk.tensor(mask, device=device), 1].cpu().numpy(), arr[mask, 1])
        np.testing.assert_array_equal(t[backend_sdk.tensor(mask, device=device), 1:3].cpu().numpy(), arr[mask, 1:3])

    def test_short_lists_of_sequences_are_tuples_as_in_pytorch(self, device):
        arr = np.arange(12).reshape(3, 4)
        t = backend_sdk.tensor(arr, device=device)
        np.testing.assert_array_equal(t[[[0, 1], [1, 0]]].cpu().numpy(), arr[[0, 1], [1, 0]])
        np.testing.assert_array_equal(t[[0, None]].cpu().numpy(), arr[0, None])
        np.testing.assert_array_equal(t[[slice(1, 3), 2]].cpu().numpy(), arr[1:3, 2])
        np.testing.assert_array_equal(t[[2, 0]].cpu().numpy(), arr[[2, 0]])  # plain ints: one index
        t[[[0, 2], [3, 3]]] = -1
        assert t[0, 3].item() == -1 and t[2, 3].item() == -1 and (t == -1).sum().item() == 2
        t[False] = backend_sdk.ones(7, device=device)  # nothing written, the value is not checked (PyTorch)

    def test_empty_list_index_selects_nothing(self, device):
        t = backend_sdk.arange(4.0, device=device)
        assert t[[]].shape == (0,) and t[[]].dtype == backend_sdk.float32

    def test_mask_assignment_and_augmented_assignment(self, device):
        t = backend_sdk.tensor([[1.0, -2.0], [-3.0, 4.0]], device=device)
        t[t < 0] = 0
        assert t.tolist() == [[1.0, 0.0], [0.0, 4.0]]
        t[t > 0] = backend_sdk.tensor([10.0, 40.0], device=device)
        assert t.tolist() == [[10.0, 0.0], [0.0, 40.0]]
        idx = backend_sdk.tensor([1, 0], device=device)
        t[idx] += 1  # a gathered copy, incremented, written back with index_put_
        assert t.tolist() == [[11.0, 1.0], [1.0, 41.0]]
        t[:, [1]] = backend_sdk.tensor([[7.0], [8.0]], device=device)  # broadcast value of the result's shape
        assert t.tolist() == [[11.0, 7.0], [1.0, 8.0]]
        t[[0]] = 5  # scalar broadcast over a row
        assert t.tolist() == [[5.0, 5.0], [1.0, 8.0]]

    def test_setitem_casts_values_and_strips_leading_ones(self, device):
        t = backend_sdk.zeros(2, 3, dtype=backend_sdk.int64, device=device)
        t[[0, 1], 1] = backend_sdk.tensor([1.7, -2.2], device=device)  # float values cast to the tensor's dtype
        assert t[:, 1].tolist() == [1, -2]
        t[[1]] = backend_sdk.tensor([[[9, 9, 9]]], device=device)  # leading size-1 dims are dropped
        assert t.tolist() == [[0, 1, 0], [9, 9, 9]]
        t[0] = [4, 5, 6]
        assert t[0].tolist() == [4, 5, 6]
        b = backend_sdk.zeros(3, dtype=backend_sdk.bool, device=device)
        b[np.array([0, 2])] = True
        assert b.tolist() == [True, False, True]

    def test_index_put_accumulate_sums_duplicates_deterministically(self, device):
        arr = np.zeros((4, 3), dtype=np.float32)
        idx = np.array([0, 2, 0, 0, 3])
        vals = np.arange(15, dtype=np.float32).reshape(5, 3)
        expected = arr.copy()
        np.add.at(expected, idx, vals)
        t = backend_sdk.tensor(arr, device=device)
        out = ops.aten.index_put_.default(t, [backend_sdk.tensor(idx, device=device)], backend_sdk.tensor(vals, device=device), True)
        assert out is t
        np.testing.assert_array_equal(t.cpu().numpy(), expected)
        # functional form leaves self alone
        t2 = backend_sdk.tensor(arr, device=device)
        r = backend_sdk.index_put(t2, [backend_sdk.tensor(idx, device=device)], backend_sdk.tensor(vals, device=device), accumulate=True)
        np.testing.assert_array_equal(r.cpu().numpy(), expected)
        assert t2.cpu().numpy().sum() == 0
        # _index_put_impl_ and integer dtypes
        ti = backend_sdk.zeros(3, dtype=backend_sdk.int32, device=device)
        ops.aten._index_put_impl_.default(ti, [backend_sdk.tensor([1, 1, 2], device=device)], backend_sdk.tensor([5, 6, 7],
                                          dtype=backend_sdk.int32, device=device), True)
        assert ti.tolist() == [0, 11, 7]

    @pytest.mark.parametrize("dtype", [backend_sdk.float16, backend_sdk.bfloat16, backend_sdk.bool, backend_sdk.uint8])
    def test_accumulation_in_narrow_dtypes(self, device, dtype):
        t = backend_sdk.zeros(3, dtype=dtype, device=device)
        ones = backend_sdk.ones(4, dtype=dtype, device=device)
        ops.aten.index_put_.default(t, [backend_sdk.tensor([0, 2, 2, 2], device=device)], ones, True)
        expected = [True, False, True] if dtype == backend_sdk.bool else [1.0, 0.0, 3.0]
        assert t.tolist() == expected
        s = backend_sdk.scatter_add(backend_sdk.zeros(3, dtype=dtype, device=device), 0, backend_sdk.tensor([1, 1, 0, 1], device=device), ones)
        assert s.tolist() == ([True, True, False] if dtype == backend_sdk.bool else [1.0, 3.0, 0.0])

    def test_index_accepts_none_entries_and_int32_indices(self, device):
        arr = np.arange(12).reshape(3, 4)
        t = backend_sdk.tensor(arr, device=device)
        idx = backend_sdk.tensor([3, 0], dtype=backend_sdk.int32, device=device)
        got = ops.aten.index.Tensor(t, [None, idx])
        np.testing.assert_array_equal(got.cpu().numpy(), arr[:, [3, 0]])
        out = backend_sdk.empty(0, dtype=backend_sdk.int64, device=device)
        ops.aten.index.Tensor_out(t, [None, idx], out=out)
        np.testing.assert_array_equal(out.cpu().numpy(), arr[:, [3, 0]])
        # uint8 masks count as masks
        m = backend_sdk.tensor([1, 0, 1], dtype=backend_sdk.uint8, device=device)
        np.testing.assert_array_equal(ops.aten.index.Tensor(t, [m]).cpu().numpy(), arr[[0, 2]])

    @pytest.mark.parametrize("layout", ["contiguous", "permuted", "sliced"])
    @pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_, np.float16])
    def test_index_select_matches_numpy(self, device, layout, dtype):
        arr = make_values((3, 4, 5), dtype)
        t = as_layout(arr, layout, device=device)
        for dim in range(3):
            idx = np.array([0, arr.shape[dim] - 1, 1, 1])
            for idx_dtype in (backend_sdk.int64, backend_sdk.int32):
                got = backend_sdk.index_select(t, dim, backend_sdk.tensor(idx, dtype=idx_dtype, device=device))
                np.testing.assert_array_equal(got.cpu().numpy(), np.take(arr, idx, axis=dim))
            out = backend_sdk.empty(0, dtype=t.dtype, device=device)
            r = ops.aten.index_select.out(t, dim, backend_sdk.tensor(idx, device=device), out=out)
            assert r is out
            np.testing.assert_array_equal(out.cpu().numpy(), np.take(arr, idx, axis=dim))
        assert t.index_select(-1, backend_sdk.tensor([], dtype=backend_sdk.int64, device=device)).shape == (3, 4, 0)

    @settings(max_examples=100, deadline=None)
    @given(st.integers(1, 3), st.integers(0, 10_000), st.sampled_from(["contiguous", "permuted", "sliced"]),
           st.sampled_from([np.float32, np.int64, np.float64]))
    def test_gather_scatter_match_reference(self, device, ndim, seed, layout, dtype):
        rng = np.random.default_rng(seed)
        shape = tuple(int(s) for s in rng.integers(1, 4, size=ndim))
        dim = int(rng.integers(0, ndim))
        idx_shape = tuple(int(rng.integers(0 if d != dim else 1, shape[d] + 1)) if d != dim else int(rng.integers(1, 5))
                          for d in range(ndim))
        idx = rng.integers(0, shape[dim], size=idx_shape).astype(np.int64)
        arr = make_values(shape, dtype, seed)
        t = as_layout(arr, layout, device=device)
        ti = as_layout(idx, layout, device=device)
        np.testing.assert_array_equal(backend_sdk.gather(t, dim, ti).cpu().numpy(), ref_gather(arr, dim, idx))
        src = make_values(idx_shape, dtype, seed + 1)
        ts = as_layout(src, layout, device=device)
        # scatter_add / reduce: deterministic sums and products with duplicates
        np.testing.assert_array_equal(backend_sdk.scatter_add(t, dim, ti, ts).cpu().numpy(), ref_scatter(arr, dim, idx, src, "add"))
        np.testing.assert_allclose(t.scatter(dim, ti, ts, reduce="multiply").cpu().numpy(),
                                   ref_scatter(arr, dim, idx, src, "multiply"), rtol=1e-6)
        np.testing.assert_array_equal(t.scatter(dim, ti, 2.0 if dtype != np.int64 else 2, reduce="add").cpu().numpy(),
                                      ref_scatter(arr, dim, idx, 2, "add"))
        # plain scatter: compare only where positions are written once (the winner of a duplicate is unspecified)
        flat_positions = [tuple(list(p[:dim]) + [idx[p]] + list(p[dim + 1:])) for p in np.ndindex(*idx.shape)]
        if len(set(flat_positions)) == len(flat_positions):
            np.testing.assert_array_equal(backend_sdk.scatter(t, dim, ti, ts).cpu().numpy(), ref_scatter(arr, dim, idx, src))
        np.testing.assert_array_equal(backend_sdk.scatter(t, dim, ti, 7).cpu().numpy(), ref_scatter(arr, dim, idx, 7))
        # in-place forms return self
        c = t.clone()
        assert c.scatter_add_(dim, ti, ts) is c
        np.testing.assert_array_equal(c.cpu().numpy(), ref_scatter(arr, dim, idx, src, "add"))

    def test_gather_and_scatter_out_variants(self, device):
        arr = np.arange(12, dtype=np.float32).reshape(3, 4)
        t = backend_sdk.tensor(arr, device=device)
        idx = backend_sdk.tensor([[0, 1], [2, 3], [1, 1]], device=device)
        out = backend_sdk.empty(0, device=device)
        assert ops.aten.gather.out(t, 1, idx, out=out) is out
        np.testing.assert_array_equal(out.cpu().numpy(), np.take_along_axis(arr, idx.cpu().numpy(), 1))
        out2 = backend_sdk.empty(3, 4, device=device)
        ops.aten.scatter_add.out(t, 1, idx, backend_sdk.ones(3, 2, device=device), out=out2)
        expected = arr.copy()
        for r in range(3):
            for c in range(2):
                expected[r, idx.cpu().numpy()[r, c]] += 1
        np.testing.assert_array_equal(out2.cpu().numpy(), expected)
        ops.aten.scatter.value_out(t, 1, idx, -1.0, out=out2)
        e2 = arr.copy()
        np.put_along_axis(e2, idx.cpu().numpy(), -1.0, 1)
        np.testing.assert_array_equal(out2.cpu().numpy(), e2)

    def test_out_variants_write_into_non_contiguous_outs(self, device):
        arr = np.arange(12, dtype=np.float32).reshape(3, 4)
        t = backend_sdk.tensor(arr, device=device)
        out = backend_sdk.zeros(4, 3, device=device).t()  # (3, 4), transposed strides
        ops.aten.flip.out(t, [0], out=out)
        np.testing.assert_array_equal(out.cpu().numpy(), np.flip(arr, 0))
        ops.aten.gather.out(t, 1, backend_sdk.tensor([[3, 2, 1, 0]] * 3, device=device), out=out)
        np.testing.assert_array_equal(out.cpu().numpy(), arr[:, ::-1])
        ops.aten.index_select.out(t, 1, backend_sdk.tensor([0, 0, 1, 1], device=device), out=out)
        np.testing.assert_array_equal(out.cpu().numpy(), arr[:, [0, 0, 1, 1]])
        ops.aten.take.out(t, backend_sdk.tensor([[0] * 4] * 3, device=device), out=out)
        assert out.cpu().numpy().sum() == 0
        ops.aten.index.Tensor_out(t, [None, backend_sdk.tensor([3, 2, 1, 0], device=device)], out=out)
        np.testing.assert_array_equal(out.cpu().numpy(), arr[:, ::-1])
        assert out.stride() == (1, 3)

    def test_full_mask_index_on_non_contiguous_tensors(self, device):
        arr = np.arange(24, dtype=np.float32).reshape(4, 6)
        t = backend_sdk.tensor(np.ascontiguousarray(arr.T), device=device).t()  # (4, 6) transposed
        mask = (arr % 3 == 0).T.copy()
        tm = backend_sdk.tensor(mask, device=device).t()  # a transposed mask too
        np.testing.assert_array_equal(t[tm].cpu().numpy(), arr[mask.T])
        np.testing.assert_array_equal(backend_sdk.masked_select(t, tm).cpu().numpy(), arr[mask.T])

    def test_gather_on_zero_dim_tensors(self, device):
        t = backend_sdk.tensor(5.0, device=device)
        assert backend_sdk.gather(t, 0, backend_sdk.tensor(0, device=device)).item() == 5.0
        assert t.scatter(0, backend_sdk.tensor(0, device=device), 3.0).item() == 3.0

    @pytest.mark.parametrize("layout", ["contiguous", "permuted", "sliced"])
    def test_masked_select_nonzero_take_flip_match_numpy(self, device, layout):
        arr = make_values((3, 4, 2), np.float32, seed=3)
        t = as_layout(arr, layout, device=device)
        mask = arr > 50
        np.testing.assert_array_equal(backend_sdk.masked_select(t, as_layout(mask, layout, device=device)).cpu().numpy(), arr[mask])
        row_mask = np.array([True, False])  # broadcast against the last dim
        np.testing.assert_array_equal(t.masked_select(backend_sdk.tensor(row_mask, device=device)).cpu().numpy(),
                                      arr[np.broadcast_to(row_mask, arr.shape)])
        np.testing.assert_array_equal(backend_sdk.nonzero(t > 50).cpu().numpy(), np.argwhere(mask))
        for ours, theirs in zip((t > 50).nonzero(as_tuple=True), np.nonzero(mask)):
            np.testing.assert_array_equal(ours.cpu().numpy(), theirs)
        for ours, theirs in zip(backend_sdk.nonzero(t > 50, as_tuple=True), np.nonzero(mask)):
            np.testing.assert_array_equal(ours.cpu().numpy(), theirs)
        for ours, theirs in zip(backend_sdk.where(t > 50), np.nonzero(mask)):
            np.testing.assert_array_equal(ours.cpu().numpy(), theirs)
        idx = np.array([[0, -1], [5, 23]])
        np.testing.assert_array_equal(backend_sdk.take(t, backend_sdk.tensor(idx, device=device)).cpu().numpy(), np.take(arr, idx))
        for dims in [(0,), (1,), (2,), (0, 2), (-1, 0, 1), ()]:
            np.testing.assert_array_equal(backend_sdk.flip(t, dims).cpu().numpy(), np.flip(arr, dims) if dims else arr)
        out = backend_sdk.empty(0, device=device)
        assert ops.aten.flip.out(t, [1], out=out) is out
        np.testing.assert_array_equal(out.cpu().numpy(), np.flip(arr, 1))

    def test_nonzero_edge_cases(self, device):
        assert tuple(backend_sdk.nonzero(backend_sdk.tensor(3, device=device)).shape) == (1, 0)
        assert tuple(backend_sdk.nonzero(backend_sdk.tensor(0, device=device)).shape) == (0, 0)
        assert tuple(backend_sdk.nonzero(backend_sdk.zeros(2, 0, device=device)).shape) == (0, 2)
        assert [x.tolist() for x in backend_sdk.tensor(3, device=device).nonzero(as_tuple=True)] == [[0]]
        nan = backend_sdk.tensor([0.0, float("nan"), -0.0], device=device)
        assert backend_sdk.nonzero(nan).tolist() == [[1]]
        out = backend_sdk.empty(0, dtype=backend_sdk.int64, device=device)
        assert ops.aten.nonzero.out(backend_sdk.tensor([0, 2, 3], device=device), out=out) is out
        assert out.tolist() == [[1], [2]]
        masked_out = backend_sdk.empty(0, device=device)
        ops.aten.masked_select.out(backend_sdk.tensor([1.0, 2.0], device=device), backend_sdk.tensor([False, True], device=device), out=masked_out)
        assert masked_out.tolist() == [2.0]

    @_ACCEL_ASYNC_BOUNDS
    def test_index_errors_match_pytorch(self, device):
        t = backend_sdk.arange(3.0, device=device)
        with pytest.raises(IndexError, match=r"^index 5 is out of bounds for dimension 0 with size 3"):
            t[backend_sdk.tensor([5], device=device)]
        with pytest.raises(IndexError, match=r"^index -4 is out of bounds for dimension 0 with size 3"):
            t[[-4]]
        with pytest.raises(IndexError, match=r"^index 5 is out of bounds for dimension 0 with size 3"):
            t[5]
        with pytest.raises(IndexError, match=r"tensors used as indices must be long, int, byte or bool tensors"):
            t[backend_sdk.tensor([0.0], device=device)]
        with pytest.raises(IndexError, match=r"tensors used as indices must be long, int, byte or bool tensors"):
            ops.aten.index.Tensor(t, [backend_sdk.tensor([1], dtype=backend_sdk.int16, device=device)])
        with pytest.raises(IndexError, match=r"tensors used as indices must be long, int, byte or bool tensors"):
            t[np.array([0.5])]
        m = backend_sdk.arange(8.0, device=device).reshape(4, 2)
        with pytest.raises(IndexError, match=re_escape(
                "The shape of the mask [3] at index 0 does not match the shape of the indexed tensor [4, 2] at index 0")):
            m[backend_sdk.tensor([True, False, True], device=device)]
        with pytest.raises(IndexError, match=r"too many indices for tensor of dimension 2"):
            m[0, 0, 0]
        with pytest.raises(IndexError, match=r"too many indices for tensor of dimension 2"):
            m[backend_sdk.ones(4, 2, 1, dtype=backend_sdk.bool, device=device)]
        with pytest.raises(IndexError, match=re_escape(
                "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]")):
            m[[0, 1], [0, 1, 1]]
        with pytest.raises(ValueError, match=re_escape(
                "shape mismatch: value tensor of shape [3] cannot be broadcast to indexing result of shape [2, 2]")):
            m[[0, 1]] = backend_sdk.ones(3, device=device)
        with pytest.raises(TypeError, match="Index put requires the source and destination dtypes match, got Float for "
                                            "the destination and Double for the source."):
            ops.aten.index_put_.default(m, [backend_sdk.tensor([0], device=device)], backend_sdk.ones(2, dtype=backend_sdk.float64, device=device))
        with pytest.raises(TypeError, match="only integers, slices"):
            m["a"]
        with pytest.raises(IndexError, match="an index can only have a single ellipsis"):
            m[..., ...]

    @_ACCEL_ASYNC_BOUNDS
    def test_gather_scatter_errors(self, device):
        t = backend_sdk.zeros(2, 3, device=device)
        with pytest.raises(TypeError, match=r"gather\(\): Expected dtype int64 for index"):
            backend_sdk.gather(t, 0, backend_sdk.zeros(2, 3, dtype=backend_sdk.int32, device=device))
        with pytest.raises(ValueError, match=r"gather\(\): Index tensor must have the same number of dimensions as input tensor"):
            backend_sdk.gather(t, 0, backend_sdk.zeros(2, dtype=backend_sdk.int64, device=device))
        with pytest.raises(ValueError, match=re_escape("gather(): Size does not match at dimension 1 expected index [1, 4] "
                                                       "to be no larger than self [2, 3] apart from dimension 0")):
            backend_sdk.gather(t, 0, backend_sdk.zeros(1, 4, dtype=backend_sdk.int64, device=device))
        with pytest.raises(IndexError, match=r"gather\(\): index 2 is out of bounds for dimension 0 with size 2"):
            backend_sdk.gather(t, 0, backend_sdk.tensor([[2]], device=device))
        with pytest.raises(IndexError, match=r"Dimension out of range"):
            backend_sdk.gather(t, 2, backend_sdk.tensor([[0]], device=device))
        with pytest.raises(IndexError, match=r"scatter\(\): index -1 is out of bounds for dimension 1 with size 3"):
            backend_sdk.scatter(t, 1, backend_sdk.tensor([[-1]], device=device), 1.0)
        with pytest.raises(TypeError, match=r"scatter\(\): Expected self.dtype to be equal to src.dtype"):
            backend_sdk.scatter(t, 1, backend_sdk.tensor([[0]], device=device), backend_sdk.ones(1, 1, dtype=backend_sdk.float64, device=device))
        with pytest.raises(ValueError, match=re_escape("scatter_add(): Expected index [1, 4] to be no larger than self "
                                                       "[2, 3] apart from dimension 0 and to be no larger size than src [1, 4]")):
            backend_sdk.scatter_add(t, 0, backend_sdk.zeros(1, 4, dtype=backend_sdk.int64, device=device), backend_sdk.ones(1, 4, device=device))
        with pytest.raises(ValueError, match=r"scatter\(\): reduce argument must be either add or multiply."):
            t.scatter(0, backend_sdk.tensor([[0]], device=device), backend_sdk.ones(1, 1, device=device), reduce="max")
        with pytest.raises(TypeError, match=r"scatter_\(\): Expected dtype int64 for index"):
            t.scatter_(0, backend_sdk.tensor([[0.0]], device=device), 1.0)

    @_ACCEL_ASYNC_BOUNDS
    def test_other_op_errors(self, device):
        t = backend_sdk.zeros(2, 3, device=device)
        with pytest.raises(ValueError, match=r"index_select\(\): Index is supposed to be a vector"):
            backend_sdk.index_select(t, 0, backend_sdk.zeros(1, 1, dtype=backend_sdk.int64, device=device))
        with pytest.raises(TypeError, match=r"index_select\(\): Expected dtype int32 or int64 for index"):
            backend_sdk.index_select(t, 0, backend_sdk.zeros(1, device=device))
        with pytest.raises(IndexError, match=r"index_select\(\): index 3 is out of bounds for dimension 1 with size 3"):
            backend_sdk.index_select(t, 1, backend_sdk.tensor([3], device=device))
        with pytest.raises(IndexError, match=r"index_select\(\): index -1 is out of bounds for dimension 0 with size 2"):
            backend_sdk.index_select(t, 0, backend_sdk.tensor([-1], device=device))  # no negative indices (PyTorch)
        with pytest.raises(TypeError, match="masked_select: expected BoolTensor for mask"):
            backend_sdk.masked_select(t, backend_sdk.zeros(2, 3, dtype=backend_sdk.uint8, device=device))
        with pytest.raises(ValueError, match=re_escape("The size of tensor a (3) must match the size of tensor b (2) at "
                                                       "non-singleton dimension 1")):
            backend_sdk.masked_select(t, backend_sdk.zeros(2, 2, dtype=backend_sdk.bool, device=device))
        with pytest.raises(IndexError, match=re_escape("out of range: tried to access index 6 on a tensor of 6 elements.")):
            backend_sdk.take(t, backend_sdk.tensor([6], device=device))
        with pytest.raises(TypeError, match=r"take\(\): Expected a long tensor for index, but got Int"):
            backend_sdk.take(t, backend_sdk.tensor([0], dtype=backend_sdk.int32, device=device))
        with pytest.raises(ValueError, match="flip: dim 0 appears multiple times in the list of dims"):
            backend_sdk.flip(t, [0, -2])
        with pytest.warns(UserWarning, match="An output with one or more elements was resized"):  # resized, as PyTorch
            r = ops.aten.index_select.out(t, 0, backend_sdk.tensor([0], device=device), out=backend_sdk.zeros(5, device=device))
        assert tuple(r.shape) == tuple(ops.aten.index_select(t, 0, backend_sdk.tensor([0], device=device)).shape)
        with pytest.raises(TypeError, match="gather.out: Expected out tensor to have dtype float32, but got int64"):
            ops.aten.gather.out(t, 0, backend_sdk.tensor([[0]], device=device), out=backend_sdk.zeros(1, 1, dtype=backend_sdk.int64, device=device))


instantiate_device_type_tests(TestIndexingDeviceType, globals())


def test_optional_tensor_list_binds_for_python_kernels(ns):
    """`Tensor?[]` arguments reach a Python kernel as a list of tensors and Nones."""
    seen = []
    with backend_sdk.library.Library(ns, "DEF") as lib:
        lib.define("pick(Tensor self, Tensor?[] indices) -> Tensor")

        def pick(self, indices):
            seen.append([None if i is None else i.tolist() for i in indices])
            return ops.aten.index.Tensor(self, indices)

        lib.impl("pick", pick, "CPU")
        t = backend_sdk.arange(6).reshape(2, 3)
        r = getattr(ops, ns).pick(t, [None, backend_sdk.tensor([2])])
    assert seen == [[None, [2]]]
    assert r.tolist() == [[2], [5]]


def test_optional_tensor_list_boxes_from_cpp_calls():
    """A C++ caller (the index_put composite) reaching a boxed kernel passes Tensor?[] as tensors and Nones."""
    from backend_sdk.library import Library

    seen = []

    def spy(self, indices, values, accumulate=False):
        seen.append([None if i is None else i.tolist() for i in indices])
        return self

    lib = Library("aten", "IMPL", "AutogradCPU")  # in front of the CPU kernel for CPU tensors
    try:
        lib.impl("index_put_", spy)
        backend_sdk.index_put(backend_sdk.zeros(2, 3), [None, backend_sdk.tensor([1])], backend_sdk.tensor(1.0))
    finally:
        lib._destroy()
    assert seen == [[None, [1]]]
    r = backend_sdk.index_put(backend_sdk.zeros(2, 3), [None, backend_sdk.tensor([1])], backend_sdk.tensor(1.0))
    assert r.tolist() == [[0.0, 1.0, 0.0], [0.0, 1.0, 0.0]]


def test_meta_kernels_match_cpu_metadata():
    x = backend_sdk.arange(60.0).reshape(3, 4, 5)
    i = backend_sdk.tensor([[0, 2]])
    j = backend_sdk.tensor([1, 2])
    cases = [
        lambda a, idx: ops.aten.index.Tensor(a, [None, idx[0], idx[1]]),
        lambda a, idx: ops.aten.index.Tensor(a, [idx[0], None, idx[1]]),
        lambda a, idx: backend_sdk.index_select(a, 1, idx[1]),
        lambda a, idx: backend_sdk.gather(a, 2, idx[2]),
        lambda a, idx: backend_sdk.scatter(a, 2, idx[2], 1.0),
        lambda a, idx: backend_sdk.scatter_add(a, 2, idx[2], a),
        lambda a, idx: backend_sdk.take(a, idx[0]),
        lambda a, idx: backend_sdk.flip(a, [0, 2]),
        lambda a, idx: ops.aten.index_put.default(a, [idx[1]], backend_sdk.tensor(1.0).to(a.device)),
    ]
    g = backend_sdk.zeros(3, 4, 2, dtype=backend_sdk.int64)
    for fn in cases:
        cpu = fn(x, (i, j, g))
        meta = fn(meta_like(x), (meta_like(i), meta_like(j), meta_like(g)))
        assert meta.is_meta
        assert (meta.shape, meta.dtype, meta.stride()) == (cpu.shape, cpu.dtype, cpu.stride())
    m = meta_like(x)
    assert ops.aten.index_put_.default(m, [meta_like(j)], meta_like(backend_sdk.ones(5)), False) is m


def test_meta_refuses_data_dependent_shapes():
    m = backend_sdk.empty(3, 4, device="meta")
    mask = backend_sdk.empty(3, dtype=backend_sdk.bool, device="meta")
    row_mask = backend_sdk.empty(4, dtype=backend_sdk.bool, device="meta")
    for fn in [lambda: backend_sdk.nonzero(m), lambda: backend_sdk.masked_select(m, row_mask),
               lambda: ops.aten.index.Tensor(m, [mask])]:
        with pytest.raises(NotImplementedError, match="data-dependent output shape"):
            fn()


def test_meta_checks_bounds_shapes_but_not_values():
    m = backend_sdk.empty(3, 4, device="meta")
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        ops.aten.index.Tensor(m, [None, None, backend_sdk.empty(1, dtype=backend_sdk.int64, device="meta")])
    with pytest.raises(ValueError, match="Index tensor must have the same number of dimensions"):
        backend_sdk.gather(m, 0, backend_sdk.empty(3, dtype=backend_sdk.int64, device="meta"))
