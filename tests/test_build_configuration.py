"""The build respects CMAKE_BUILD_TYPE and does not relink the world (issue 13), read from a configured
(not built) tree's build.ninja: the project adds no optimisation flag of its own (pip's default stays
Release through pyproject's cmake.build-type and the CMakeLists default), a Debug build compiles without
optimisation, and a module linked against libbackend_sdk depends on it order-only
(CMAKE_LINK_DEPENDS_NO_SHARED), so editing one library source relinks the library and not _C."""
from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(
    shutil.which("cmake") is None or shutil.which("ninja") is None or importlib.util.find_spec("pybind11") is None,
    reason="cmake, ninja and pybind11 are needed to configure a build tree")


def _configure(build: Path, *options: str) -> str:
    pybind11_dir = subprocess.run([sys.executable, "-m", "pybind11", "--cmakedir"], capture_output=True, text=True,
                                  check=True).stdout.strip()
    proc = subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build), "-G", "Ninja", "-DSDK_INPLACE=OFF",
                           f"-Dpybind11_DIR={pybind11_dir}", f"-DPython_EXECUTABLE={sys.executable}", *options],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return (build / "build.ninja").read_text()


def _compile_flags(ninja: str) -> list[str]:
    """The FLAGS of every C++ object of the project (not CMake's compiler checks)."""
    flags = []
    for block in re.findall(r"^build [^\n]*\.o: CXX_COMPILER[^\n]*\n((?:  [^\n]*\n)+)", ninja, flags=re.M):
        flags += [line.split("=", 1)[1] for line in block.splitlines() if line.strip().startswith("FLAGS =")]
    assert len(flags) > 50, "no compile commands found in build.ninja"
    return flags


@pytest.fixture(scope="module")
def debug_tree(tmp_path_factory: pytest.TempPathFactory) -> str:
    return _configure(tmp_path_factory.mktemp("debug"), "-DCMAKE_BUILD_TYPE=Debug")


def test_debug_build_compiles_without_optimisation(debug_tree):
    for flags in _compile_flags(debug_tree):
        assert not re.search(r"(^|\s)-O[1-3s](\s|$)", flags), flags
        assert "-g" in flags.split()


def test_release_flags_are_cmakes_not_the_projects(tmp_path):
    """With Release's flags replaced, no source still gets -O3: the project forces none of its own."""
    ninja = _configure(tmp_path, "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG")
    for flags in _compile_flags(ninja):
        assert "-O3" not in flags.split() and "-O2" not in flags.split(), flags
        assert "-O1" in flags.split()


def test_modules_depend_on_the_library_order_only(debug_tree):
    links = [line for line in debug_tree.splitlines()
             if line.startswith("build ") and re.search(r"_C\.[^ :]*\.so: CXX_MODULE_LIBRARY_LINKER", line)]
    assert len(links) == 1, links
    explicit, _, order_only = links[0].partition("||")
    assert "libbackend_sdk.so" not in explicit, "editing a library source would relink _C"
    assert "libbackend_sdk.so" in order_only
