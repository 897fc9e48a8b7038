"""C++ registration macros in a separately compiled shared library, loaded and unloaded at run time."""
from __future__ import annotations

import _ctypes
import ctypes
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

import backend_sdk
from backend_sdk import _C
from backend_sdk.utils import include_paths, library_paths

CXX = shutil.which("g++") or shutil.which("c++")
pytestmark = pytest.mark.skipif(CXX is None, reason="needs a C++ compiler")

SOURCE = textwrap.dedent(
    """
    #include <backend_sdk/dispatch/Library.h>
    #include <backend_sdk/ops/Functions.h>

    namespace {
    sdk::Tensor twice(const sdk::Tensor& x) { return sdk::ops::add(x, x); }
    sdk::Tensor twice_meta(const sdk::Tensor& x) { return sdk::ops::empty(x.sizes(), x.dtype(), x.device()); }
    int64_t count_dims(const sdk::Tensor& x, int64_t extra) { return x.dim() + extra; }
    }

    SDK_LIBRARY(cppext, m) {
      m.def("twice(Tensor x) -> Tensor");
      m.def("count_dims(Tensor x, int extra=0) -> int");
    }
    SDK_LIBRARY_IMPL(cppext, CPU, m) {
      m.impl("twice", &twice);
      m.impl("count_dims", &count_dims);
    }
    SDK_LIBRARY_IMPL(cppext, Meta, m) { m.impl("twice", &twice_meta); }
    """
)

# A second SDK_LIBRARY block for the namespace, in another shared library.
DUPLICATE = textwrap.dedent(
    """
    #include <backend_sdk/dispatch/Library.h>
    SDK_LIBRARY(cppext, m) { m.def("never(Tensor x) -> Tensor"); }
    """
)


def build(tmp_path: Path, source: str, name: str) -> Path:
    src = tmp_path / f"{name}.cpp"
    src.write_text(source)
    out = tmp_path / f"lib{name}.so"
    cmd = [CXX, "-std=c++17", "-O1", "-shared", "-fPIC", str(src), "-o", str(out)]
    cmd += [f"-I{p}" for p in include_paths()] + [f"-L{p}" for p in library_paths()]
    cmd += ["-lbackend_sdk"] + [f"-Wl,-rpath,{p}" for p in library_paths()]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return out


def test_static_registration_and_unloading(tmp_path):
    lib_path = build(tmp_path, SOURCE, "cppext")
    duplicate_path = build(tmp_path, DUPLICATE, "cppext_dup")
    handle = ctypes.CDLL(str(lib_path), mode=ctypes.RTLD_LOCAL)
    try:
        assert _C._take_static_registration_errors() == []
        # The error is reported, not fatal: loading does not abort the process.
        duplicate = ctypes.CDLL(str(duplicate_path), mode=ctypes.RTLD_LOCAL)
        errors = _C._take_static_registration_errors()
        assert len(errors) == 1 and "Only a single SDK_LIBRARY can be used to register the namespace cppext" in errors[0]
        _ctypes.dlclose(duplicate._handle)
        x = backend_sdk.tensor([1.0, 2.0])
        assert backend_sdk.ops.cppext.twice(x).tolist() == [2.0, 4.0]
        assert backend_sdk.ops.cppext.count_dims(x, 3) == 4
        m = backend_sdk.ops.cppext.twice(backend_sdk.empty(2, 5, device="meta"))
        assert m.is_meta and m.shape == (2, 5)
        with pytest.raises(TypeError, match="must be int"):
            backend_sdk.ops.cppext.count_dims(x, 1.5)
    finally:
        _ctypes.dlclose(handle._handle)
    # Unloading ran the static destructors, which deregistered everything.
    assert "cppext::twice" not in _C._registered_operators()
    with pytest.raises(AttributeError):
        backend_sdk.ops.cppext.twice


def test_kernel_signature_must_match_schema(tmp_path):
    source = textwrap.dedent(
        """
        #include <backend_sdk/dispatch/Library.h>
        namespace { sdk::Tensor one_arg(const sdk::Tensor& x) { return x; } }
        SDK_LIBRARY(cppbad, m) { m.def("two_args(Tensor x, Tensor y) -> Tensor"); }
        SDK_LIBRARY_IMPL(cppbad, CPU, m) { m.impl("two_args", &one_arg); }
        """
    )
    handle = ctypes.CDLL(str(build(tmp_path, source, "cppbad")), mode=ctypes.RTLD_LOCAL)
    try:
        errors = _C._take_static_registration_errors()
        assert len(errors) == 1 and "takes 1 arguments but the schema" in errors[0]
    finally:
        _ctypes.dlclose(handle._handle)
