"""Closed namespaces refuse kernels for names they do not define (Note [Closed namespaces],
csrc/backend_sdk/dispatch/detail/KernelRegistry.h): from Python's Library.impl at once, from C++
SDK_LIBRARY_IMPL blocks when the library loads; open namespaces keep "allowed until first call"."""
from __future__ import annotations

import _ctypes
import ctypes
import textwrap
from pathlib import Path

import pytest

import backend_sdk
from backend_sdk import _C
from backend_sdk.library import Library

from _kernel_lib import build_kernel_library, needs_cxx


def _noop(*args: object) -> None:
    return None


@pytest.mark.parametrize("name, suggestion", [
    ("gelu_fast", "Did you mean aten::gelu"),
    ("sub.tensor", "Did you mean aten::sub.Tensor"),
    # the overloads of the name, among the nearest names (aten::_softmax exists too)
    ("softmax", "aten::softmax.int?"),
])
def test_python_impl_of_undefined_aten_operator_is_refused(name, suggestion):
    lib = Library("aten", "IMPL", "CPU")
    try:
        with pytest.raises(ValueError, match=r"the operator aten::" + name.replace(".", r"\.")
                           + r" does not exist; the namespace 'aten' is closed") as info:
            lib.impl(name, _noop)
        assert suggestion in str(info.value)
        assert isinstance(info.value, RuntimeError)  # PyTorch code catching RuntimeError still does
        # Nothing was registered: the kernel does not linger under the misspelled name.
        assert all(op != f"aten::{name}" for op, _, _ in _C._kernels_for_undefined_operators())
    finally:
        lib._destroy()


def test_python_impl_of_existing_overload_still_works():
    lib = Library("aten", "IMPL", "CPU")
    calls = []

    def neg_kernel(x):
        calls.append(x)
        return backend_sdk.zeros(x.shape)

    lib.impl("neg", neg_kernel)
    try:
        assert backend_sdk.neg(backend_sdk.ones(2)).tolist() == [0.0, 0.0]
        assert len(calls) == 1
    finally:
        lib._destroy()
    assert backend_sdk.neg(backend_sdk.ones(2)).tolist() == [-1.0, -1.0]


def test_python_def_library_closes_its_namespace():
    lib = Library("closedns_py", "DEF")
    lib.define("twice(Tensor x) -> Tensor")
    try:
        lib.impl("twice", lambda x: x + x, "CPU")
        with pytest.raises(ValueError, match="closedns_py::twise does not exist.*Did you mean closedns_py::twice"):
            lib.impl("twise", lambda x: x, "CPU")
    finally:
        lib._destroy()
    # Once the DEF library is gone the namespace is open again: allowed until the first call.
    impl = Library("closedns_py", "IMPL", "CPU")
    try:
        impl.impl("later", _noop)
        assert ("closedns_py::later", "CPU") in [(op, key) for op, key, _ in _C._kernels_for_undefined_operators()]
    finally:
        impl._destroy()
    assert all(op != "closedns_py::later" for op, _, _ in _C._kernels_for_undefined_operators())


def test_open_namespace_allows_until_first_call_and_is_listed():
    lib = Library("openns_py", "IMPL", "CPU")
    try:
        lib.impl("not_yet", _noop)
        listed = [(op, key) for op, key, where in _C._kernels_for_undefined_operators()]
        assert ("openns_py::not_yet", "CPU") in listed
        with pytest.raises(AttributeError):
            backend_sdk.ops.openns_py.not_yet
    finally:
        lib._destroy()


def test_conformance_report_lists_kernels_of_undefined_operators():
    from backend_sdk.testing.conformance._report import _registration_lines

    lib = Library("openns_report", "IMPL", "CPU")
    try:
        lib.impl("gelu_fast", _noop)
        text = "\n".join(_registration_lines())
        assert "never defined" in text and "openns_report::gelu_fast for CPU" in text
    finally:
        lib._destroy()


# ---- C++: checked when the library loads ----

SOURCE = textwrap.dedent(
    """
    #include <backend_sdk/dispatch/Library.h>

    namespace {
    sdk::Tensor same(const sdk::Tensor& x) { return x; }
    sdk::Tensor same2(const sdk::Tensor& x, const sdk::Tensor&, const sdk::Scalar&) { return x; }
    }

    // Runs before the SDK_LIBRARY block below (textual order within one file): the deferred check
    // sees the operator defined by the time the load ends.
    SDK_LIBRARY_IMPL(cns_own, CPU, m) { m.impl("first", &same); }
    SDK_LIBRARY(cns_own, m) { m.def("first(Tensor x) -> Tensor"); }

    #ifdef MISSPELLED
    SDK_LIBRARY_IMPL(aten, CPU, m) { m.impl("gelu_fast", &same); }
    SDK_LIBRARY_IMPL(aten, Meta, m) { m.impl("sub.tensor", &same2); }
    SDK_LIBRARY_IMPL(cns_own, Meta, m) { m.impl("frist", &same); }
    #endif
    SDK_LIBRARY_IMPL(cns_open, CPU, m) { m.impl("anything", &same); }
    """
)


def _build(tmp_path: Path, name: str, defines: list[str], suffix: str = "") -> Path:
    source = SOURCE.replace("cns_own", f"cns_own{suffix}").replace("cns_open", f"cns_open{suffix}")
    return build_kernel_library(tmp_path, source, name, defines)


@needs_cxx
def test_cpp_misspelled_registrations_fail_when_the_library_loads(tmp_path):
    good = _build(tmp_path, "cns_good", [])
    bad = _build(tmp_path, "cns_bad", ["-DMISSPELLED"])
    # ops.load_library runs the checks when the load ends and undoes the library's blocks.
    with pytest.raises(RuntimeError) as info:
        backend_sdk.ops.load_library(str(bad))
    text = str(info.value)
    assert "aten::gelu_fast does not exist" in text and "Did you mean aten::gelu" in text
    assert "aten::sub.tensor does not exist" in text and "Did you mean aten::sub.Tensor" in text
    assert "cns_own::frist does not exist" in text and "Did you mean cns_own::first" in text
    assert "cns_open" not in text  # an open namespace: allowed until the first call
    assert "cns_own::first" not in _C._registered_operators()  # undone with the library's blocks
    # The same library without the misspellings loads: the IMPL block that ran before its DEF block
    # is accepted, and the open namespace's kernel is listed for the report.
    backend_sdk.ops.load_library(str(good))
    assert "cns_own::first" in _C._registered_operators()
    assert ("cns_open::anything", "CPU") in [(op, k) for op, k, _ in _C._kernels_for_undefined_operators()]


@needs_cxx
def test_cpp_library_loaded_without_a_group_reports_at_take(tmp_path):
    bad = _build(tmp_path, "cns_bad_plain", ["-DMISSPELLED"], suffix="2")
    _C._take_static_registration_errors()
    handle = ctypes.CDLL(str(bad), mode=ctypes.RTLD_LOCAL)
    try:
        errors = _C._take_static_registration_errors()
        assert len(errors) == 3, errors
        assert any("aten::gelu_fast does not exist" in e for e in errors)
        assert any("cns_own2::frist does not exist" in e and "cns_own2::first" in e for e in errors)
    finally:
        _ctypes.dlclose(handle._handle)
