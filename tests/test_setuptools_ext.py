"""setuptools and scikit-build-core builds against the SDK (issue 13, "setuptools and the JIT"):
``CppExtension``, ``BuildExtension`` (ninja, or the compiler per source in parallel),
``include_paths``/``library_paths(device_type)``, and the samples samples/setuptools_ext (setup.py)
and samples/skbuild_ext (scikit-build-core + find_package(backend_sdk)), built and run here."""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import backend_sdk
from backend_sdk import utils
from backend_sdk.utils import cpp_extension

SDK_ROOT = Path(backend_sdk.__file__).resolve().parents[1]
SAMPLES = Path(__file__).resolve().parents[1] / "samples"
needs_compiler = pytest.mark.skipif(shutil.which(os.environ.get("CXX", "c++")) is None, reason="no C++ compiler")
needs_setuptools = pytest.mark.skipif(importlib.util.find_spec("setuptools") is None, reason="setuptools is not installed")
needs_ninja = pytest.mark.skipif(shutil.which("ninja") is None, reason="ninja is not installed")


def sdk_env(*extra_paths: Path, **env: str) -> dict[str, str]:
    """The environment of a build or run subprocess: the SDK this process imported comes first."""
    environ = dict(os.environ, **env)
    environ["PYTHONPATH"] = os.pathsep.join([*(str(p) for p in extra_paths), str(SDK_ROOT),
                                             environ.get("PYTHONPATH", "")])
    return environ


def run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def runpath(library: Path) -> str:
    if shutil.which("readelf") is None:
        pytest.skip("readelf is not installed")
    out = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True).stdout
    return " ".join(line for line in out.splitlines() if "RUNPATH" in line or "RPATH" in line)


# ---- include_paths / library_paths / CppExtension / BuildExtension options (no compiler) ---------------

def test_include_and_library_paths_follow_pytorchs_signatures():
    assert cpp_extension.include_paths() == cpp_extension.include_paths("cpu") == utils.include_paths()
    assert cpp_extension.library_paths() == cpp_extension.library_paths(device_type="cpu") == utils.library_paths()
    assert any(Path(p, "backend_sdk", "dispatch", "Library.h").is_file() for p in cpp_extension.include_paths())
    assert any(Path(p, "libbackend_sdk.so").is_file() for p in cpp_extension.library_paths())
    # A device type with no paths of its own gets the cpu paths, as in PyTorch.
    for other in ("cuda", "meta", "no_such_backend"):
        assert cpp_extension.include_paths(other) == cpp_extension.include_paths()
        assert cpp_extension.library_paths(other) == cpp_extension.library_paths()
    with pytest.raises(TypeError, match="device_type must be a str"):
        cpp_extension.include_paths(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="device_type must be a str"):
        cpp_extension.library_paths(None)  # type: ignore[arg-type]


def test_a_renamed_backend_adds_its_device_modules_paths():
    accel = pytest.importorskip("accel", reason="the accel sample backend is not built")
    import device_sim

    assert cpp_extension.include_paths("accel") == cpp_extension.include_paths() + [device_sim.include_dir()]
    assert cpp_extension.library_paths("accel") == (cpp_extension.library_paths()
                                                   + [os.path.dirname(device_sim.library_path())])
    assert Path(cpp_extension.include_paths("accel")[-1], "device_sim.h").is_file()
    assert backend_sdk.accel.include_paths is accel.include_paths


@needs_setuptools
def test_cpp_extension_is_a_setuptools_extension_against_the_sdk():
    import setuptools

    ext = cpp_extension.CppExtension("pkg.my_ext", ["a.cpp", "b.cpp"], include_dirs=["inc"], libraries=["m"],
                                     extra_compile_args=["-g"])
    assert isinstance(ext, setuptools.Extension)
    assert ext.name == "pkg.my_ext" and ext.sources == ["a.cpp", "b.cpp"] and ext.language == "c++"
    assert ext.include_dirs[0] == "inc" and set(cpp_extension.include_paths()) <= set(ext.include_dirs)
    assert ext.libraries == ["m", "backend_sdk"] and ext.extra_compile_args == ["-g"]
    assert ext.library_dirs == cpp_extension.library_paths() == ext.runtime_library_dirs  # -L and the RPATH


@needs_setuptools
def test_build_extension_options():
    from setuptools import Distribution

    BuildExtension = cpp_extension.BuildExtension
    plain = BuildExtension(Distribution())
    assert plain.no_python_abi_suffix is False and plain.use_ninja is (shutil.which("ninja") is not None)
    assert plain.get_ext_filename("pkg.foo").endswith(f"foo{__import__('sysconfig').get_config_var('EXT_SUFFIX')}")
    custom = BuildExtension.with_options(use_ninja=False, no_python_abi_suffix=True)
    assert issubclass(custom, BuildExtension) and custom is not BuildExtension
    cmd = custom(Distribution())
    assert cmd.use_ninja is False and cmd.no_python_abi_suffix is True
    assert cmd.get_ext_filename("pkg.foo") == os.path.join("pkg", "foo.so")


# ---- samples/setuptools_ext: setup.py with CppExtension + BuildExtension (ninja) -----------------------

@needs_compiler
@needs_setuptools
@needs_ninja
def test_setuptools_sample_builds_with_ninja_and_runs(tmp_path):
    pytest.importorskip("pybind11", reason="the sample binds a Python function with pybind11")
    project = tmp_path / "setuptools_ext"
    shutil.copytree(SAMPLES / "setuptools_ext", project)
    r = run([sys.executable, "setup.py", "build_ext", "--inplace"], project, sdk_env())
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout + r.stderr
    # ninja ran, and printed the compile command: C++17, the module name, the SDK's headers.
    assert "ninja -v -f" in out
    compile_line = next(line for line in out.splitlines() if " -c csrc/setuptools_ext.cpp" in line)
    assert "-std=c++17" in compile_line and "-DSDK_EXTENSION_NAME=setuptools_ext" in compile_line
    assert f"-I{cpp_extension.include_paths()[0]}" in compile_line
    assert "-O2" in compile_line  # extra_compile_args={"cxx": [...]} reaches the compiler
    built = list(project.glob("setuptools_ext*.so"))
    assert len(built) == 1 and built[0].name.startswith("setuptools_ext.cpython-")
    assert cpp_extension.library_paths()[0] in runpath(built[0])

    check = textwrap.dedent("""
        import backend_sdk, setuptools_ext
        x = backend_sdk.tensor([1.0, 2.0, 3.0])
        y = backend_sdk.tensor([10.0, 20.0, 30.0])
        print(backend_sdk.ops.setuptools_ext.scaled_add(x, y, 0.5).tolist(), setuptools_ext.kernel_calls())
        try:
            backend_sdk.ops.setuptools_ext.scaled_add(x, backend_sdk.ones(2), 1.0)
        except ValueError as e:
            print("ValueError:", e)
    """)
    r = run([sys.executable, "-c", check], tmp_path, sdk_env(project))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "[6.0, 12.0, 18.0] 1"
    assert lines[1].startswith("ValueError: setuptools_ext::scaled_add: x and y must have the same shape")

    # ninja's depfiles: a second build with nothing changed recompiles nothing.
    r = run([sys.executable, "setup.py", "build_ext", "--inplace"], project, sdk_env())
    assert r.returncode == 0 and "ninja: no work to do" in r.stdout, r.stdout + r.stderr


# ---- BuildExtension without ninja: the compiler per source, in parallel; no ABI suffix; errors ---------

_KERNEL_SETUP = """
from setuptools import setup
from backend_sdk.utils.cpp_extension import BuildExtension, CppExtension
setup(name="kern_ext", ext_modules=[CppExtension("kern_ext", ["ops.cpp", "helper.cpp"])],
      cmdclass={"build_ext": BuildExtension.with_options(use_ninja=__USE_NINJA__, no_python_abi_suffix=True)})
"""

_OPS = """
#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/tensor/Tensor.h>
sdk::Tensor triple(const sdk::Tensor& x);
SDK_LIBRARY(kern_ext, m) { m.def("triple(Tensor x) -> Tensor"); }
SDK_LIBRARY_IMPL(kern_ext, CPU, m) { m.impl("triple", &triple); }
"""

_HELPER = """
#include <backend_sdk/ops/Functions.h>
sdk::Tensor triple(const sdk::Tensor& x) { return sdk::ops::mul(x, sdk::Scalar(3)); }
"""

# A compiler wrapper that logs when each compile starts and ends (to see them overlap).
_WRAPPER = """#!/bin/sh
case " $* " in *" -c "*) echo "begin $$" >> "$CC_LOG"; "$REAL_CC" "$@"; rc=$?; echo "end $$" >> "$CC_LOG"; exit $rc;; esac
exec "$REAL_CC" "$@"
"""


@needs_compiler
@needs_setuptools
def test_build_extension_without_ninja_compiles_sources_in_parallel(tmp_path):
    project = tmp_path / "kern"
    project.mkdir()
    (project / "setup.py").write_text(_KERNEL_SETUP.replace("__USE_NINJA__", "False"))
    (project / "ops.cpp").write_text(_OPS)
    (project / "helper.cpp").write_text(_HELPER)
    wrapper = tmp_path / "cc-wrapper"
    wrapper.write_text(_WRAPPER)
    wrapper.chmod(0o755)
    real = shutil.which("gcc") or shutil.which("cc")
    log = tmp_path / "cc.log"
    env = sdk_env(CC=str(wrapper), CXX=str(wrapper), REAL_CC=str(real), CC_LOG=str(log), MAX_JOBS="2")
    r = run([sys.executable, "setup.py", "build_ext", "--inplace"], project, env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ninja" not in r.stdout
    events = log.read_text().split()[::2]
    assert sorted(events) == ["begin", "begin", "end", "end"]
    assert events[:2] == ["begin", "begin"], "the two sources were compiled one after the other"
    library = project / "kern_ext.so"  # no_python_abi_suffix=True
    assert library.is_file() and not list(project.glob("kern_ext.cpython*"))

    # A kernel library: loaded as a plain shared library (no Python module), it registers its operator.
    check = textwrap.dedent(f"""
        import ctypes, backend_sdk
        ctypes.CDLL({str(library)!r})
        print(backend_sdk.ops.kern_ext.triple(backend_sdk.tensor([1, 2])).tolist())
    """)
    r = run([sys.executable, "-c", check], tmp_path, sdk_env())
    assert r.returncode == 0 and r.stdout.strip() == "[3, 6]", r.stderr


@needs_compiler
@needs_setuptools
@pytest.mark.parametrize("use_ninja", [True, False])
def test_build_extension_compile_error_shows_the_compilers_message(tmp_path, use_ninja):
    if use_ninja and shutil.which("ninja") is None:
        pytest.skip("ninja is not installed")
    project = tmp_path / "broken"
    project.mkdir()
    (project / "setup.py").write_text(_KERNEL_SETUP.replace("__USE_NINJA__", str(use_ninja)))
    (project / "ops.cpp").write_text("int f() { return undefined_name_xyz; }\n")
    (project / "helper.cpp").write_text("int g() { return 1; }\n")
    r = run([sys.executable, "setup.py", "build_ext", "--inplace"], project, sdk_env())
    assert r.returncode != 0
    out = r.stdout + r.stderr
    assert "ops.cpp:1" in out and "undefined_name_xyz" in out and "error" in out
    if use_ninja:
        assert "Error compiling objects for extension" in out
    assert not list(project.glob("*.so"))


# ---- samples/skbuild_ext: scikit-build-core + find_package(backend_sdk) -----------------------------------

@needs_compiler
@needs_ninja
def test_skbuild_sample_builds_with_pip_and_runs(tmp_path):
    pytest.importorskip("scikit_build_core", reason="scikit-build-core is not installed")
    pytest.importorskip("pybind11", reason="the sample is a pybind11 module")
    if shutil.which("cmake") is None:
        pytest.skip("cmake is not installed")
    project = tmp_path / "skbuild_ext"
    shutil.copytree(SAMPLES / "skbuild_ext", project)
    target = tmp_path / "site"
    config_dir = Path(backend_sdk.cmake_prefix_path) / "backend_sdk"  # this SDK, not another installed one
    r = run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
             "--target", str(target), str(project), "-C", f"cmake.define.backend_sdk_DIR={config_dir}"],
            tmp_path, sdk_env(PIP_DISABLE_PIP_VERSION_CHECK="1"), timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    built = list(target.glob("skbuild_ext*.so"))
    assert len(built) == 1 and cpp_extension.library_paths()[0] in runpath(built[0])
    check = textwrap.dedent("""
        import backend_sdk, skbuild_ext
        x = backend_sdk.tensor([1.0, -2.0])
        y = backend_sdk.tensor([0.5, 0.25])
        print(backend_sdk.ops.skbuild_ext.axpby(x, y, 2.0, 4.0).tolist(), skbuild_ext.defined_namespace())
    """)
    r = run([sys.executable, "-c", check], tmp_path, sdk_env(target))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[4.0, -3.0] skbuild_ext"
