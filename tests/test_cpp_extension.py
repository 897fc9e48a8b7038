"""backend_sdk.utils.cpp_extension: JIT builds of vendor C++ against the SDK (issue 7, "JIT extensions")."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import backend_sdk
from backend_sdk.utils import cpp_extension

# Subprocesses import the SDK this process imported (the installed wheel in CI, else the checkout),
# from a neutral directory: the checkout's backend_sdk/ folder must not shadow an installed SDK.
SDK_ROOT = Path(backend_sdk.__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which(os.environ.get("CXX", "c++")) is None, reason="no C++ compiler")


def op_source(ns: str, factor: float = 2.0) -> str:
    """An extension defining ns::scale(Tensor x) -> Tensor (x * factor) with a CPU kernel."""
    return textwrap.dedent(f"""
        #include <backend_sdk/dispatch/Library.h>
        #include <backend_sdk/ops/Functions.h>

        namespace {{
        sdk::Tensor scale(const sdk::Tensor& x) {{ return sdk::ops::mul(x, sdk::Scalar({factor})); }}
        }}  // namespace

        SDK_LIBRARY({ns}, m) {{ m.def("scale(Tensor x) -> Tensor"); }}
        SDK_LIBRARY_IMPL({ns}, CPU, m) {{ m.impl("scale", &scale); }}
    """)


@pytest.fixture
def ext_root(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "extensions"
    monkeypatch.setenv("BACKEND_SDK_EXTENSIONS_DIR", str(root))
    return root


def run_python(code: str, env_root: Path, **env: str) -> subprocess.CompletedProcess:
    environ = dict(os.environ, BACKEND_SDK_EXTENSIONS_DIR=str(env_root), **env)
    environ["PYTHONPATH"] = os.pathsep.join([str(SDK_ROOT), environ.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=environ, cwd=env_root.parent, timeout=600)


def test_load_builds_registers_and_caches(tmp_path, ext_root):
    src = tmp_path / "scale_ext.cpp"
    src.write_text(op_source("jit_scale"))
    path = cpp_extension.load("jit_scale_ext", [str(src)], is_python_module=False)
    tag = f"py{sys.version_info.major}{sys.version_info.minor}"
    assert Path(path).parent == ext_root / tag / "jit_scale_ext"
    assert Path(path).name.startswith("jit_scale_ext_") and path.endswith(".so")
    x = backend_sdk.tensor([1.0, -2.0, 3.0])
    assert backend_sdk.ops.jit_scale.scale(x).tolist() == [2.0, -4.0, 6.0]
    # Loading again in this process is a no-op returning the same library.
    assert cpp_extension.load("jit_scale_ext", str(src), is_python_module=False) == path
    mtime = os.stat(path).st_mtime_ns

    # A fresh process finds the cached library: no build, same file.
    check = f"""
        import backend_sdk
        from backend_sdk.utils import cpp_extension
        p = cpp_extension.load("jit_scale_ext", [{str(src)!r}], verbose=True, is_python_module=False)
        print(p)
        print(backend_sdk.ops.jit_scale.scale(backend_sdk.tensor([1.5])).tolist())
    """
    r = run_python(check, ext_root)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [path, "[3.0]"]
    assert "is up to date" in r.stderr and "Building" not in r.stderr
    assert os.stat(path).st_mtime_ns == mtime

    # A changed source builds a new library (the old one is removed); a fresh process uses it.
    src.write_text(op_source("jit_scale", factor=3.0))
    r = run_python(check, ext_root)
    assert r.returncode == 0, r.stderr
    new_path, value = r.stdout.split()
    assert new_path != path and value == "[4.5]" and "Building extension module jit_scale_ext" in r.stderr
    assert not os.path.exists(path)
    # So do changed flags.
    r = run_python(check.replace("verbose=True", "verbose=True, extra_cflags=['-DUNUSED=1']"), ext_root)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0] not in (path, new_path) and "Building" in r.stderr


def test_load_inline_and_build_directory(tmp_path):
    build = tmp_path / "my build"  # a space in the path: ninja and the shell must both quote it
    path = cpp_extension.load_inline("jit_inline_ext", """
        namespace {
        sdk::Tensor plus_one(const sdk::Tensor& x) { return sdk::ops::add(x, sdk::Scalar(1)); }
        }
        SDK_LIBRARY(jit_inline, m) { m.def("plus_one(Tensor x) -> Tensor"); }
        SDK_LIBRARY_IMPL(jit_inline, CompositeExplicitAutograd, m) { m.impl("plus_one", &plus_one); }
    """, build_directory=str(build), is_python_module=False)
    assert Path(path).parent == build and (build / "main.cpp").exists()
    assert backend_sdk.ops.jit_inline.plus_one(backend_sdk.tensor([1, 2])).tolist() == [2, 3]


def test_direct_compiler_path_with_several_sources(tmp_path, ext_root, monkeypatch):
    """Without ninja every source compiles in its own compiler process, in parallel."""
    monkeypatch.setenv("BACKEND_SDK_JIT_NO_NINJA", "1")
    (tmp_path / "helper.h").write_text("#pragma once\n#include <backend_sdk/tensor/Tensor.h>\n"
                                       "sdk::Tensor cube(const sdk::Tensor& x);\n")
    (tmp_path / "helper.cpp").write_text('#include "helper.h"\n#include <backend_sdk/ops/Functions.h>\n'
                                         "sdk::Tensor cube(const sdk::Tensor& x) "
                                         "{ return sdk::ops::mul(sdk::ops::mul(x, x), x); }\n")
    (tmp_path / "ops.cpp").write_text('#include "helper.h"\n#include <backend_sdk/dispatch/Library.h>\n'
                                      'SDK_LIBRARY(jit_multi, m) { m.def("cube(Tensor x) -> Tensor"); }\n'
                                      'SDK_LIBRARY_IMPL(jit_multi, CPU, m) { m.impl("cube", &cube); }\n')
    path = cpp_extension.load("jit_multi_ext", [str(tmp_path / "ops.cpp"), str(tmp_path / "helper.cpp")],
                              is_python_module=False)
    assert not (Path(path).parent / "build.ninja").exists()
    assert backend_sdk.ops.jit_multi.cube(backend_sdk.tensor([2.0])).tolist() == [8.0]
    # The headers next to the sources are part of the key: editing one rebuilds.
    (tmp_path / "helper.h").write_text((tmp_path / "helper.h").read_text() + "// edited\n")
    rebuilt = cpp_extension.load("jit_multi_ext", [str(tmp_path / "ops.cpp"), str(tmp_path / "helper.cpp")],
                                 is_python_module=False, is_standalone=True)
    assert rebuilt != path and os.path.exists(rebuilt)


def test_compiler_error_is_raised_with_the_compilers_lines(tmp_path, ext_root):
    src = tmp_path / "broken.cpp"
    src.write_text('#include <backend_sdk/dispatch/Library.h>\nint f() { return undefined_name_xyz; }\n')
    with pytest.raises(RuntimeError) as info:
        cpp_extension.load("jit_broken_ext", [str(src)], is_python_module=False)
    message = str(info.value)
    assert message.startswith("Error building extension 'jit_broken_ext':\n")
    assert "broken.cpp:2" in message and "undefined_name_xyz" in message and "error:" in message
    build = ext_root / f"py{sys.version_info.major}{sys.version_info.minor}" / "jit_broken_ext"
    assert not list(build.glob("*.so")) and not list(build.glob(".*.tmp"))  # nothing looks finished
    # A link error is reported the same way.
    src.write_text('int g(); int f() { return g(); }\n')
    with pytest.raises(RuntimeError, match=r"(?s)Error building extension 'jit_broken_ext':\n.*undefined reference"):
        cpp_extension.load("jit_broken_ext", [str(src)], extra_ldflags=["-Wl,--no-undefined"],
                           is_python_module=False)


def test_bad_arguments(tmp_path, ext_root):
    with pytest.raises(FileNotFoundError, match=r"Extension 'jit_missing': source file '.*nowhere\.cpp' does not exist"):
        cpp_extension.load("jit_missing", [str(tmp_path / "nowhere.cpp")])
    with pytest.raises(ValueError, match="the extension name must be a valid identifier"):
        cpp_extension.load("not-valid", [str(tmp_path / "x.cpp")])
    with pytest.raises(ValueError, match="Extension 'jit_empty': sources is empty"):
        cpp_extension.load("jit_empty", [])
    (tmp_path / "kernel.cu").write_text("")
    with pytest.raises(ValueError, match=r"source file '.*kernel\.cu' is not C\+\+"):
        cpp_extension.load("jit_cuda", [str(tmp_path / "kernel.cu")])
    with pytest.raises(ValueError, match="functions= binds Python functions and needs is_python_module=True"):
        cpp_extension.load_inline("jit_fn", "int f() { return 1; }", functions=["f"], is_python_module=False)
    assert not ext_root.exists()  # nothing was created for the bad calls


@pytest.mark.filterwarnings("ignore:Overriding a previously registered kernel")
def test_duplicate_registration_surfaces_from_load(tmp_path, ext_root):
    first = tmp_path / "first.cpp"
    first.write_text(op_source("jit_dup"))
    cpp_extension.load("jit_dup_first", [str(first)], is_python_module=False)
    second = tmp_path / "second.cpp"
    second.write_text(op_source("jit_dup").replace("SDK_LIBRARY(jit_dup, m) {",
                                                   'SDK_LIBRARY_FRAGMENT(jit_dup_other, m) { m.def("g(Tensor x) -> Tensor"); }\n'
                                                   "SDK_LIBRARY(jit_dup, m) {"))
    with pytest.raises(ValueError) as info:
        cpp_extension.load("jit_dup_second", [str(second)], is_python_module=False)
    message = str(info.value)
    assert message.startswith("Error loading extension 'jit_dup_second'")
    assert "Only a single SDK_LIBRARY can be used to register the namespace jit_dup" in message
    # The failed library was unloaded: its other registrations are gone, the first library still works.
    assert "jit_dup_other::g" not in backend_sdk._C._registered_operators()
    assert backend_sdk.ops.jit_dup.scale(backend_sdk.tensor([1.0])).tolist() == [2.0]


def test_concurrent_builds_are_serialised(tmp_path, ext_root):
    src = tmp_path / "race.cpp"
    src.write_text(op_source("jit_race"))
    code = f"""
        import backend_sdk
        from backend_sdk.utils import cpp_extension
        p = cpp_extension.load("jit_race_ext", [{str(src)!r}], verbose=True, is_python_module=False)
        print(p, backend_sdk.ops.jit_race.scale(backend_sdk.tensor([2.0])).tolist())
    """
    environ = dict(os.environ, BACKEND_SDK_EXTENSIONS_DIR=str(ext_root))
    environ["PYTHONPATH"] = os.pathsep.join([str(SDK_ROOT), environ.get("PYTHONPATH", "")])
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=environ, cwd=tmp_path) for _ in range(3)]
    results = [p.communicate(timeout=600) + (p.returncode,) for p in procs]
    assert all(code == 0 for _, _, code in results), [err for _, err, _ in results]
    outputs = {out.strip() for out, _, _ in results}
    assert len(outputs) == 1 and outputs.pop().endswith("[4.0]")
    assert sum("Building extension module jit_race_ext" in err for _, err, _ in results) == 1
    build = ext_root / f"py{sys.version_info.major}{sys.version_info.minor}" / "jit_race_ext"
    assert len(list(build.glob("jit_race_ext_*.so"))) == 1


def test_default_build_directory(monkeypatch, tmp_path):
    monkeypatch.delenv("BACKEND_SDK_EXTENSIONS_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    tag = f"py{sys.version_info.major}{sys.version_info.minor}{sys.abiflags}"
    assert cpp_extension._get_build_directory("abc", False) == str(
        tmp_path / ".cache" / "backend_sdk_extensions" / tag / "abc")
    monkeypatch.setenv("BACKEND_SDK_EXTENSIONS_DIR", str(tmp_path / "elsewhere"))
    assert cpp_extension._get_build_directory("abc", False) == str(tmp_path / "elsewhere" / tag / "abc")


def test_python_module(tmp_path, ext_root):
    pytest.importorskip("pybind11", reason="is_python_module=True needs pybind11")
    module = cpp_extension.load_inline("jit_pymod", """
        int64_t numel_plus(const sdk::Tensor& x, int64_t k) { return x.numel() + k; }
        int answer() { return 42; }
    """, functions={"answer": "The answer."}, is_python_module=True)
    assert module.answer() == 42 and module.answer.__doc__.strip().endswith("The answer.")
    assert module.__name__ == "jit_pymod"
