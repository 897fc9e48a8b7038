"""cpp_extension.load/load_inline as PyTorch's (issue 13, "setuptools and the JIT"): a Python module by
default, kernel libraries with is_python_module=False, reloading a name with changed inputs
(NAME_v1, ...; the new version's registrations replace the old one's: Note [JIT extension versions]),
verbose command lines, and PyTorch's errors."""
from __future__ import annotations

import inspect
import os
import shutil
import textwrap
from pathlib import Path

import pytest

import backend_sdk
from backend_sdk.utils import cpp_extension

pytestmark = pytest.mark.skipif(shutil.which(os.environ.get("CXX", "c++")) is None, reason="no C++ compiler")


@pytest.fixture(autouse=True)
def ext_root(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "extensions"
    monkeypatch.setenv("BACKEND_SDK_EXTENSIONS_DIR", str(root))
    return root


def kernel_source(ns: str, factor: int, extra: str = "") -> str:
    """A kernel library: ns::scale(Tensor x) -> Tensor (x * factor), CPU kernel."""
    return textwrap.dedent(f"""
        #include <backend_sdk/dispatch/Library.h>
        #include <backend_sdk/ops/Functions.h>
        namespace {{
        sdk::Tensor scale(const sdk::Tensor& x) {{ return sdk::ops::mul(x, sdk::Scalar({factor})); }}
        }}
        SDK_LIBRARY({ns}, m) {{ m.def("scale(Tensor x) -> Tensor"); }}
        SDK_LIBRARY_IMPL({ns}, CPU, m) {{ m.impl("scale", &scale); }}
        {extra}
    """)


def scale(ns: str, values: list[float]) -> list[float]:
    return getattr(backend_sdk.ops, ns).scale(backend_sdk.tensor(values)).tolist()


def test_signatures_and_defaults_are_pytorchs():
    load = inspect.signature(cpp_extension.load)
    # PyTorch's parameters, in PyTorch's order, then ours, keyword-only: stable= (the ABI-stable surface).
    ours = [p for p in load.parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY]
    assert [p.name for p in ours] == ["stable"] and ours[0].default is False
    assert [p for p in load.parameters if p != "stable"] == ["name", "sources", "extra_cflags", "extra_cuda_cflags", "extra_sycl_cflags",
                                     "extra_ldflags", "extra_include_paths", "build_directory", "verbose",
                                     "with_cuda", "with_sycl", "is_python_module", "is_standalone",
                                     "keep_intermediates"]
    assert load.parameters["is_python_module"].default is True and load.parameters["is_standalone"].default is False
    inline = inspect.signature(cpp_extension.load_inline)
    assert list(inline.parameters)[:5] == ["name", "cpp_sources", "cuda_sources", "sycl_sources", "functions"]
    assert inline.parameters["is_python_module"].default is True
    assert inline.parameters["with_pytorch_error_handling"].default is True
    assert "is_standalone" not in inline.parameters and "no_implicit_headers" in inline.parameters


def test_bad_arguments_raise_pytorchs_errors(tmp_path, ext_root):
    src = tmp_path / "x.cpp"
    src.write_text("int f() { return 1; }\n")
    with pytest.raises(ValueError, match="^`is_python_module` and `is_standalone` are mutually exclusive.$"):
        cpp_extension.load("jit_excl", [str(src)], is_standalone=True)
    with pytest.raises(ValueError, match="with_cuda=True, but backend_sdk builds C\\+\\+ only"):
        cpp_extension.load("jit_cuda_flag", [str(src)], with_cuda=True)
    with pytest.raises(ValueError, match="cuda_sources/sycl_sources given"):
        cpp_extension.load_inline("jit_cuda_src", "int f();", cuda_sources="__global__ void k() {}")
    with pytest.raises(ValueError, match="Expected 'functions' to be a list or dict"):
        cpp_extension.load_inline("jit_fn_type", "int f() { return 1; }", functions=("f",))  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError, match="Extension 'jit_nothing': source file '.*missing.cpp' does not exist"):
        cpp_extension.load("jit_nothing", [str(tmp_path / "missing.cpp")])
    assert not ext_root.exists()


def test_python_module_by_default_and_kernel_libraries_with_is_python_module_false(tmp_path):
    pytest.importorskip("pybind11")
    module = cpp_extension.load_inline("jit_default_mod", kernel_source("jit_default_ns", 2) + textwrap.dedent("""
        int64_t twice(int64_t k) { SDK_CHECK_INDEX(k >= 0, "twice: k must be >= 0, got ", k); return 2 * k; }
    """), functions=["twice"])
    assert module.__name__ == "jit_default_mod" and module.twice(21) == 42
    # with_pytorch_error_handling=True (default): an SDK error leaves a bound function as its Python type.
    with pytest.raises(IndexError, match="twice: k must be >= 0, got -1"):
        module.twice(-1)
    assert scale("jit_default_ns", [1.0, 2.0]) == [2.0, 4.0]  # its SDK_LIBRARY blocks ran on import
    # The same inputs again: the same module object, nothing rebuilt.
    assert cpp_extension.load_inline("jit_default_mod", kernel_source("jit_default_ns", 2) + textwrap.dedent("""
        int64_t twice(int64_t k) { SDK_CHECK_INDEX(k >= 0, "twice: k must be >= 0, got ", k); return 2 * k; }
    """), functions=["twice"]) is module

    # A library without a Python module, loaded with the default: ImportError saying what to do, and
    # nothing of it stays registered.
    src = tmp_path / "kernels.cpp"
    src.write_text(kernel_source("jit_kernels_only", 5))
    with pytest.raises(ImportError, match=r"defines no Python module named 'jit_kernels_ext' "
                                          r"\(PyInit_jit_kernels_ext\).*is_python_module=False"):
        cpp_extension.load("jit_kernels_ext", [str(src)])
    assert "jit_kernels_only::scale" not in backend_sdk._C._registered_operators()
    # As a plain library (PyTorch's torch.ops.load_library): its path, and its kernels registered.
    path = cpp_extension.load("jit_kernels_ext", [str(src)], is_python_module=False)
    assert isinstance(path, str) and path.endswith(".so") and os.path.isfile(path)
    assert scale("jit_kernels_only", [1.0]) == [5.0]
    # Built without loading: is_standalone (PyTorch's executable; here the library, not loaded).
    standalone = cpp_extension.load("jit_standalone_ext", [str(src)], is_python_module=False, is_standalone=True)
    assert os.path.isfile(standalone)


def test_reloading_a_python_module_builds_a_new_version(capfd):
    """PyTorch's test_reload_jit_extension, plus the module's operator: its kernel follows the module."""
    pytest.importorskip("pybind11")

    def compile(value: int) -> object:
        return cpp_extension.load_inline("jit_reloaded", textwrap.dedent(f"""
            int f() {{ return {value}; }}
            namespace {{
            sdk::Tensor g(const sdk::Tensor& x) {{ return sdk::ops::add(x, sdk::Scalar({value})); }}
            }}
            SDK_LIBRARY(jit_reloaded_ns, m) {{ m.def("g(Tensor x) -> Tensor"); }}
            SDK_LIBRARY_IMPL(jit_reloaded_ns, CPU, m) {{ m.impl("g", &g); }}
        """), functions="f", verbose=True)

    first = compile(123)
    assert first.f() == 123 and first.__name__ == "jit_reloaded"
    assert backend_sdk.ops.jit_reloaded_ns.g(backend_sdk.tensor([0])).tolist() == [123]
    capfd.readouterr()
    second = compile(456)
    err = capfd.readouterr().err
    assert "Bumping to version 1 and re-building as jit_reloaded_v1" in err
    assert second.f() == 456 and second.__name__ == "jit_reloaded_v1"
    # No duplicate-registration error: version 1's registrations replaced version 0's.
    assert backend_sdk.ops.jit_reloaded_ns.g(backend_sdk.tensor([0])).tolist() == [456]
    assert compile(456) is second
    assert first.f() == 123  # the old module's code stays loaded


def test_reloading_a_kernel_library_replaces_its_registrations(tmp_path, capfd):
    src = tmp_path / "reload.cpp"
    only_in_v0 = 'SDK_LIBRARY(jit_reload_extra, m) { m.def("h(Tensor x) -> Tensor"); }'

    def load() -> str:
        return cpp_extension.load("jit_reload_ext", [str(src)], is_python_module=False, verbose=True)

    src.write_text(kernel_source("jit_reload", 2, only_in_v0))
    v0 = load()
    assert scale("jit_reload", [1.0]) == [2.0] and "jit_reload_extra::h" in backend_sdk._C._registered_operators()
    op = backend_sdk.ops.jit_reload.scale
    capfd.readouterr()

    src.write_text(kernel_source("jit_reload", 3))
    v1 = load()
    err = capfd.readouterr().err
    assert v1 != v0 and "re-building as jit_reload_ext_v1" in err
    assert "-DSDK_EXTENSION_NAME=jit_reload_ext_v1" in err  # the compile line names the version
    assert scale("jit_reload", [1.0]) == [3.0]
    # An operator handle fetched before the reload names the old definition (Note [Schema lifetime]).
    with pytest.raises(RuntimeError, match="the operator was redefined since .* Look the operator up again"):
        op(backend_sdk.tensor([1.0]))
    assert "jit_reload_extra::h" not in backend_sdk._C._registered_operators()  # v0's own blocks are gone
    assert load() == v1  # unchanged inputs: the loaded version

    # A version that does not compile leaves the loaded one in place.
    src.write_text(kernel_source("jit_reload", 4).replace("sdk::Scalar(4)", "undefined_thing"))
    with pytest.raises(RuntimeError, match="(?s)Error building extension 'jit_reload_ext':.*undefined_thing"):
        load()
    assert scale("jit_reload", [1.0]) == [3.0]

    # A version whose registrations fail leaves neither registered; the next load builds the next version.
    src.write_text(kernel_source("jit_reload", 5, 'SDK_LIBRARY_FRAGMENT(jit_reload, m2) { m2.def("k(Tensor x -> "); }'))
    with pytest.raises(ValueError, match="(?s)Error loading extension 'jit_reload_ext_v2'.*registering its "
                                         "operators failed"):
        load()
    assert "jit_reload::scale" not in backend_sdk._C._registered_operators()
    src.write_text(kernel_source("jit_reload", 2, only_in_v0))  # v0's sources again: a new version, as PyTorch
    v3 = load()
    assert "re-building as jit_reload_ext_v3" in capfd.readouterr().err and v3 != v0
    assert scale("jit_reload", [1.0]) == [2.0] and "jit_reload_extra::h" in backend_sdk._C._registered_operators()


@pytest.mark.parametrize("ninja", [True, False])
def test_verbose_prints_the_compile_and_link_commands(tmp_path, capfd, monkeypatch, ninja):
    if ninja and shutil.which("ninja") is None:
        pytest.skip("ninja is not installed")
    if not ninja:
        monkeypatch.setenv("BACKEND_SDK_JIT_NO_NINJA", "1")
    src = tmp_path / "verbose.cpp"
    ns = f"jit_verbose_{int(ninja)}"
    src.write_text(kernel_source(ns, 7))
    path = cpp_extension.load(f"{ns}_ext", [str(src)], is_python_module=False, verbose=True)
    err = capfd.readouterr().err
    lines = err.splitlines()
    compile_line = next(line for line in lines if f"-c {src}" in line)
    assert "-std=c++17" in compile_line and f"-I{cpp_extension.include_paths()[0]}" in compile_line
    assert f"-DSDK_EXTENSION_NAME={ns}_ext" in compile_line
    link_line = next(line for line in lines if " -shared " in line)
    assert "-lbackend_sdk" in link_line and f"-Wl,-rpath,{cpp_extension.library_paths()[0]}" in link_line
    assert f"Building extension module {ns}_ext" in err and f"Loading extension module {ns}_ext..." in err
    assert scale(ns, [1.0]) == [7.0] and os.path.isfile(path)
