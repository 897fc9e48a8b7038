"""Indexing from C++: a vendor kernel taking `Tensor?[]` as sdk::OptionalTensorList, and the sdk::ops entry
points of the indexing and conversion operators, in a separately compiled shared library."""
from __future__ import annotations

import _ctypes
import ctypes
import textwrap

import numpy as np
import pytest

import backend_sdk
from backend_sdk import _C

from test_cpp_registration import CXX, build

pytestmark = pytest.mark.skipif(CXX is None, reason="needs a C++ compiler")

SOURCE = textwrap.dedent(
    """
    #include <backend_sdk/dispatch/Library.h>
    #include <backend_sdk/ops/Functions.h>

    namespace {
    using sdk::Tensor;
    // Counts the absent entries, then indexes through the C++ API.
    Tensor pick(const Tensor& self, sdk::OptionalTensorList indices) {
      int64_t absent = 0;
      for (const auto& i : indices) absent += !i.has_value();
      Tensor r = sdk::ops::index(self, indices);
      return sdk::ops::add(r, sdk::Scalar(absent));
    }
    Tensor put(const Tensor& self, const Tensor& idx, const Tensor& values) {
      std::vector<std::optional<Tensor>> indices{std::optional<Tensor>(), idx};
      Tensor copy = sdk::ops::index_put(self, indices, values, /*accumulate=*/true);
      return sdk::ops::index_put_(copy, {std::optional<Tensor>(idx.dim() ? sdk::ops::flip(idx, {0}) : idx)}, values,
                                  false);
    }
    // gather, scatter (src and value), scatter_add, index_select, take, masked_select, nonzero, to, _to_copy
    std::vector<Tensor> many(const Tensor& x, const Tensor& idx2d, const Tensor& idx1d, const Tensor& mask) {
      return {sdk::ops::gather(x, 1, idx2d),
              sdk::ops::scatter(x, 1, idx2d, sdk::ops::gather(x, 1, idx2d)),
              sdk::ops::scatter(x, 1, idx2d, sdk::Scalar(-1.0)),
              sdk::ops::scatter_add(x, 1, idx2d, sdk::ops::gather(x, 1, idx2d)),
              sdk::ops::index_select(x, 0, idx1d),
              sdk::ops::take(x, idx2d),
              sdk::ops::masked_select(x, mask),
              sdk::ops::nonzero(mask),
              sdk::ops::to(x, sdk::ScalarType::Int64),
              sdk::ops::_to_copy(x, sdk::ScalarType::Float64)};
    }
    }

    SDK_LIBRARY(cppidx, m) {
      m.def("pick(Tensor self, Tensor?[] indices) -> Tensor");
      m.def("put(Tensor self, Tensor idx, Tensor values) -> Tensor");
      m.def("many(Tensor x, Tensor idx2d, Tensor idx1d, Tensor mask) -> Tensor[]");
    }
    SDK_LIBRARY_IMPL(cppidx, CPU, m) {
      m.impl("pick", &pick);
      m.impl("put", &put);
      m.impl("many", &many);
    }
    """
)


def test_cpp_kernels_use_optional_tensor_lists_and_the_indexing_api(tmp_path):
    handle = ctypes.CDLL(str(build(tmp_path, SOURCE, "cppidx")), mode=ctypes.RTLD_LOCAL)
    try:
        assert _C._take_static_registration_errors() == []
        cpp = backend_sdk.ops.cppidx
        arr = np.arange(12, dtype=np.float32).reshape(3, 4)
        x = backend_sdk.tensor(arr)
        np.testing.assert_array_equal(cpp.pick(x, [None, backend_sdk.tensor([3, 0])]).numpy(), arr[:, [3, 0]] + 1)
        np.testing.assert_array_equal(cpp.pick(x, [backend_sdk.tensor([2])]).numpy(), arr[[2]])
        idx = backend_sdk.tensor([1, 1])
        expected = arr.copy()
        np.add.at(expected, (slice(None), [1, 1]), np.ones((3, 2), dtype=np.float32))
        expected[[1, 1]] = 1.0
        np.testing.assert_array_equal(cpp.put(x, idx, backend_sdk.tensor(1.0)).numpy(), expected)
        idx2d = np.array([[0, 3], [1, 1], [2, 0]])
        mask = arr % 5 == 0
        r = cpp.many(x, backend_sdk.tensor(idx2d), backend_sdk.tensor([2, 0]), backend_sdk.tensor(mask))
        gathered = np.take_along_axis(arr, idx2d, 1)
        np.testing.assert_array_equal(r[0].numpy(), gathered)
        np.testing.assert_array_equal(r[1].numpy(), arr)  # scattering the gathered values back
        scattered = arr.copy()
        np.put_along_axis(scattered, idx2d, -1.0, 1)
        np.testing.assert_array_equal(r[2].numpy(), scattered)
        added = arr.copy()
        for row in range(3):
            for col in range(2):
                added[row, idx2d[row, col]] += gathered[row, col]
        np.testing.assert_array_equal(r[3].numpy(), added)
        np.testing.assert_array_equal(r[4].numpy(), arr[[2, 0]])
        np.testing.assert_array_equal(r[5].numpy(), np.take(arr, idx2d))
        np.testing.assert_array_equal(r[6].numpy(), arr[mask])
        np.testing.assert_array_equal(r[7].numpy(), np.argwhere(mask))
        assert r[8].dtype == backend_sdk.int64 and r[8].tolist() == arr.astype(np.int64).tolist()
        assert r[9].dtype == backend_sdk.float64 and r[9].tolist() == arr.tolist()
    finally:
        _ctypes.dlclose(handle._handle)
    assert "cppidx::pick" not in _C._registered_operators()
