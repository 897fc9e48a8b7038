"""Typed C++ kernels that decline a call (Note [Declining kernels], dispatch/Decline.h): the call
runs through the backend's fallback with the same arguments, the fallback's warning names the
backend, operator and reason once per (operator, reason), and declines are counted."""
from __future__ import annotations

import textwrap
import warnings

import pytest

import backend_sdk as sdk
from backend_sdk import _C

from _kernel_lib import build_kernel_library, needs_cxx

pytestmark = needs_cxx

SOURCE = textwrap.dedent(
    """
    #include <backend_sdk/dispatch/Decline.h>
    #include <backend_sdk/ops/Functions.h>

    namespace {
    int64_t g_native_calls = 0;

    // Serves float32 on the device; declines the rest, before writing anything.
    sdk::Tensor scale_accel(const sdk::Tensor& x, double f) {
      SDK_DECLINE_IF(x.dtype() != sdk::ScalarType::Float32, "dtype ", sdk::scalar_type_name(x.dtype()), " unsupported");
      SDK_DECLINE_IF(x.dim() > 2, "more than 2 dims");
      ++g_native_calls;
      return sdk::ops::mul(x, sdk::Scalar(f));
    }
    sdk::Tensor scale_cpu(const sdk::Tensor& x, double f) { return sdk::ops::mul(x, sdk::Scalar(f)); }
    sdk::Tensor scale_meta(const sdk::Tensor& x, double) {
      sdk::decline("meta never serves it");
    }
    int64_t native_calls() { return g_native_calls; }
    }  // namespace

    SDK_LIBRARY(dcl, m) {
      m.def("scale(Tensor x, float f) -> Tensor");
      m.def("native_calls() -> int");
      m.impl("native_calls", &native_calls);
    }
    SDK_LIBRARY_IMPL(dcl, CPU, m) { m.impl("scale", &scale_cpu); }
    SDK_LIBRARY_IMPL(dcl, PrivateUse1, m) { m.impl("scale", sdk::declinable(&scale_accel)); }
    SDK_LIBRARY_IMPL(dcl, Meta, m) { m.impl("scale", sdk::declinable(&scale_meta)); }
    """
)


@pytest.fixture(scope="module")
def dcl(tmp_path_factory, accel):
    path = build_kernel_library(tmp_path_factory.mktemp("decline"), SOURCE, "decline_ops")
    sdk.ops.load_library(str(path))
    return sdk.ops.dcl


@pytest.fixture(scope="module")
def accel():
    import accel  # noqa: F401 - the accel sample backend (PrivateUse1 renamed to "accel")

    return "accel"


def _scale_warnings(record: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in record if "dcl::scale" in str(w.message)]


def test_native_call_is_not_declined(dcl):
    _C._reset_kernel_declines()
    before = dcl.native_calls()
    x = sdk.arange(6, dtype=sdk.float32).reshape(2, 3).to("accel")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        y = dcl.scale(x, 2.0)
    assert y.device.type == "accel" and y.cpu().tolist() == [[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]]
    assert dcl.native_calls() == before + 1
    assert _scale_warnings(record) == []
    assert _C._kernel_declines() == []


def test_declined_call_runs_on_the_fallback_and_warns_once_per_reason(dcl):
    _C._reset_kernel_declines()
    before = dcl.native_calls()
    x = sdk.arange(4, dtype=sdk.float64).to("accel")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        y1 = dcl.scale(x, 3.0)
        y2 = dcl.scale(x, 0.5)  # same reason: no second warning
        z = dcl.scale(sdk.ones(1, 1, 1, 2).to("accel"), 2.0)  # another reason: its own warning
    assert dcl.native_calls() == before  # the kernel declined before doing anything
    assert y1.device.type == "accel" and y1.dtype == sdk.float64 and y1.cpu().tolist() == [0.0, 3.0, 6.0, 9.0]
    assert y2.cpu().tolist() == [0.0, 0.5, 1.0, 1.5]
    assert z.device.type == "accel" and z.cpu().flatten().tolist() == [2.0, 2.0]
    texts = _scale_warnings(record)
    assert texts == [
        "accel's kernel for dcl::scale declined this call (dtype float64 unsupported); running on the CPU. "
        "This may have performance implications.",
        "accel's kernel for dcl::scale declined this call (more than 2 dims); running on the CPU. "
        "This may have performance implications.",
    ]
    counts = {(op, reason): n for op, reason, n in _C._kernel_declines()}
    assert sum(n for (op, _), n in counts.items() if op == "dcl::scale") == 3
    assert counts[("dcl::scale", "more than 2 dims")] == 1


def test_decline_without_a_fallback_is_not_implemented(dcl):
    x = sdk.empty(3, device="meta")
    with pytest.raises(NotImplementedError, match=r"meta's kernel for dcl::scale declined this call "
                       r"\(meta never serves it\), and the meta backend has no fallback"):
        dcl.scale(x, 2.0)


def test_conformance_report_counts_declines(dcl):
    from backend_sdk.testing.conformance._report import _registration_lines

    _C._reset_kernel_declines()
    dcl.scale(sdk.arange(3, dtype=sdk.int64).to("accel"), 2.0)
    text = "\n".join(_registration_lines())
    assert "declined calls (run by the fallback): 1: dcl::scale (dtype int64 unsupported): 1" in text
