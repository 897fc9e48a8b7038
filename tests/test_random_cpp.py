"""A vendor's kernel compiled against the public headers reproduces the CPU's random numbers:
core/Philox.h element by element (as a device kernel would, one element per thread), and the
C++ API of csrc/backend_sdk/ops/Random.h."""
from __future__ import annotations

import _ctypes
import ctypes
import textwrap

import numpy as np
import pytest

import backend_sdk

from test_cpp_registration import CXX, build

pytestmark = pytest.mark.skipif(CXX is None, reason="needs a C++ compiler")

SOURCE = textwrap.dedent(
    """
    #include <backend_sdk/core/Philox.h>
    #include <backend_sdk/dispatch/Library.h>
    #include <backend_sdk/ops/Random.h>

    namespace {
    // A "device kernel": each element on its own, in any order, from (seed, offset, i) alone.
    sdk::Tensor vendor_uniform_(const sdk::Tensor& self, const std::optional<sdk::Generator>& gen) {
      int64_t n = self.numel();
      auto [seed, offset] = sdk::ops::philox_reserve(gen, self.device(), sdk::ops::philox_uniform_counters(self.dtype(), n),
                                                     "vendor_uniform_");
      float* p = self.data_ptr<float>();
      for (int64_t i = n - 1; i >= 0; --i) {
        p[i] = static_cast<float>(sdk::philox::uniform_float_at(seed, offset, static_cast<uint64_t>(i), 24));
      }
      return self;
    }
    sdk::Tensor vendor_randn(int64_t n, int64_t seed) {
      sdk::Generator g = sdk::make_generator(sdk::Device(sdk::DeviceType::CPU));
      g->set_current_seed(static_cast<uint64_t>(seed));
      return sdk::ops::randn({n}, g, sdk::ScalarType::Float64);
    }
    }

    SDK_LIBRARY(rngext, m) {
      m.def("vendor_uniform_(Tensor(a!) self, *, Generator? generator=None) -> Tensor(a!)");
      m.def("vendor_randn(int n, int seed) -> Tensor");
    }
    SDK_LIBRARY_IMPL(rngext, CPU, m) { m.impl("vendor_uniform_", &vendor_uniform_); }
    SDK_LIBRARY_IMPL(rngext, CompositeExplicitAutograd, m) { m.impl("vendor_randn", &vendor_randn); }
    """
)


def test_vendor_kernel_reproduces_cpu_numbers(tmp_path):
    handle = ctypes.CDLL(str(build(tmp_path, SOURCE, "rngext")), mode=ctypes.RTLD_LOCAL)
    try:
        g1 = backend_sdk.Generator().manual_seed(31)
        g2 = backend_sdk.Generator().manual_seed(31)
        vendor = backend_sdk.ops.rngext.vendor_uniform_(backend_sdk.empty(1003), generator=g1)
        np.testing.assert_array_equal(vendor.numpy(), backend_sdk.rand(1003, generator=g2).numpy())
        assert g1.get_offset() == g2.get_offset() == (1003 + 3) // 4
        z = backend_sdk.ops.rngext.vendor_randn(64, 5)
        np.testing.assert_array_equal(
            z.numpy(), backend_sdk.randn(64, generator=backend_sdk.Generator().manual_seed(5),
                                         dtype=backend_sdk.float64).numpy())
    finally:
        _ctypes.dlclose(handle._handle)
