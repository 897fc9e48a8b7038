"""Compiling a small C++ kernel library against the SDK for the kernel-registration tests
(test_closed_namespaces.py, test_kernel_decline.py): one g++ call, -O0 (the tests check registration
and dispatch, not speed)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from backend_sdk.utils import include_paths, library_paths

__all__ = ["CXX", "needs_cxx", "build_kernel_library"]

CXX = shutil.which("g++") or shutil.which("c++")
needs_cxx = pytest.mark.skipif(CXX is None, reason="needs a C++ compiler")


def build_kernel_library(tmp_path: Path, source: str, name: str, defines: list[str] | None = None) -> Path:
    """Compiles ``source`` into ``tmp_path/lib<name>.so`` linked to libbackend_sdk; fails the test with
    the compiler's output when it does not compile."""
    assert CXX is not None
    src = tmp_path / f"{name}.cpp"
    src.write_text(source)
    out = tmp_path / f"lib{name}.so"
    cmd = [CXX, "-std=c++17", "-O0", "-shared", "-fPIC", str(src), "-o", str(out), *(defines or [])]
    cmd += [f"-I{p}" for p in include_paths()] + [f"-L{p}" for p in library_paths()]
    cmd += ["-lbackend_sdk"] + [f"-Wl,-rpath,{p}" for p in library_paths()]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return out
