"""The ABI-stable surface (docs/architecture.md, "The ABI-stable surface"): the C shim, the header-only
APIs, the stable C++ wrappers, and samples/stable_ops built only against them."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import backend_sdk
from backend_sdk.utils import cpp_extension, include_paths, library_paths
from backend_sdk.utils._stable_extension import sdk_cxx_symbols_used, stable_include_paths

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "stable_ops"
HEADERONLY = Path(include_paths()[0]) / "backend_sdk" / "headeronly"
CXX = shutil.which("g++") or shutil.which("c++")
CC = shutil.which("gcc") or shutil.which("cc")
NM = shutil.which("nm")

pytestmark = pytest.mark.skipif(CXX is None, reason="needs a C++ compiler")

sys.path.insert(0, str(SAMPLE))
import check as stable_check  # noqa: E402


@pytest.fixture(scope="module")
def stable_lib(tmp_path_factory) -> str:
    build = tmp_path_factory.mktemp("stable_ops")
    return cpp_extension.load("stable_ops_sample", [str(SAMPLE / "csrc" / "stable_ops.cpp")], stable=True,
                              is_python_module=False, build_directory=str(build))


def _load_stable(name: str, src: Path, tmp_path: Path) -> str:
    """A kernel library (no Python module) built with stable=True."""
    return cpp_extension.load(name, [str(src)], stable=True, is_python_module=False,
                              build_directory=str(tmp_path / "b"))


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)


# ---- header-only APIs ----

def _listed_apis() -> list[str]:
    lines = (HEADERONLY / "header_only_apis.txt").read_text().splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]


def test_every_header_only_api_is_exercised_by_the_test_program() -> None:
    program = (ROOT / "tests" / "data" / "stable" / "headeronly_apis.cpp").read_text()
    apis = _listed_apis()
    assert len(apis) >= 25
    missing = [a for a in apis if not re.search(r"(?<!\w)" + re.escape(a) + r"(?!\w)", program)]
    assert missing == [], f"listed in header_only_apis.txt but not used by headeronly_apis.cpp: {missing}"


def test_header_only_apis_compile_and_link_without_libbackend_sdk(tmp_path) -> None:
    exe = tmp_path / "headeronly_apis"
    # Only the stable include tree (stable/ + headeronly/) and no SDK library on the command line.
    cmd = [CXX, "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", *[f"-I{p}" for p in stable_include_paths()],
           str(ROOT / "tests" / "data" / "stable" / "headeronly_apis.cpp"), "-o", str(exe)]
    r = _run(cmd)
    assert r.returncode == 0, r.stderr
    r = _run([str(exe)])
    assert r.returncode == 0 and r.stdout.strip() == "headeronly ok", r.stdout + r.stderr
    if NM:
        needed = _run(["readelf", "-d", str(exe)]).stdout if shutil.which("readelf") else ""
        assert "libbackend_sdk" not in needed


def test_sdk_core_types_are_the_header_only_types() -> None:
    # One definition: core's headers include the header-only ones instead of defining copies.
    core = Path(include_paths()[0]) / "backend_sdk" / "core"
    for header, included in [("Half.h", "headeronly/Half.h"), ("Exception.h", "headeronly/Exception.h"),
                             ("ScalarType.h", "headeronly/ScalarType.h"), ("DeviceType.h", "headeronly/DeviceType.h"),
                             ("DimVector.h", "headeronly/ArrayRef.h")]:
        text = (core / header).read_text()
        assert f"#include <backend_sdk/{included}>" in text, header
    assert "enum class ScalarType" not in (core / "ScalarType.h").read_text()
    assert "class ArrayRef" not in (core / "DimVector.h").read_text()


# ---- the C shim, from C ----

C_PROGRAM = r"""
#include <backend_sdk/stable/c/shim.h>
#include <stdio.h>
#include <string.h>

#define EXPECT(c) do { if (!(c)) { printf("FAILED %d: %s [%s]\n", __LINE__, #c, sdk_stable_last_error_message()); return 1; } } while (0)

static sdk_stable_ivalue tensor_value(sdk_stable_tensor t) {
  sdk_stable_ivalue v; v.payload = (uint64_t)(uintptr_t)t; v.tag = SDK_STABLE_TAG_TENSOR; v.reserved = 0; return v;
}

int main(void) {
  EXPECT(sdk_stable_abi_version() >= 1);
  int64_t sizes[2] = {2, 3};
  sdk_stable_tensor a = NULL, b = NULL;
  EXPECT(sdk_stable_empty_strided(sizes, NULL, 2, SDK_STABLE_DTYPE_FLOAT32, SDK_STABLE_DEVICE_CPU, -1, &a) == SDK_STABLE_OK);
  EXPECT(sdk_stable_empty_strided(sizes, NULL, 2, SDK_STABLE_DTYPE_FLOAT32, SDK_STABLE_DEVICE_CPU, -1, &b) == SDK_STABLE_OK);
  float* pa; float* pb;
  EXPECT(sdk_stable_tensor_data_ptr(a, (void**)&pa) == SDK_STABLE_OK);
  EXPECT(sdk_stable_tensor_data_ptr(b, (void**)&pb) == SDK_STABLE_OK);
  for (int i = 0; i < 6; ++i) { pa[i] = (float)i; pb[i] = 10.0f; }
  int64_t dim, numel, offset; const int64_t* st; int32_t dtype, dtype_idx, dev_type;
  EXPECT(sdk_stable_tensor_dim(a, &dim) == 0 && dim == 2);
  EXPECT(sdk_stable_tensor_numel(a, &numel) == 0 && numel == 6);
  EXPECT(sdk_stable_tensor_storage_offset(a, &offset) == 0 && offset == 0);
  EXPECT(sdk_stable_tensor_strides(a, &st) == 0 && st[0] == 3 && st[1] == 1);
  EXPECT(sdk_stable_tensor_dtype(a, &dtype) == 0 && dtype == SDK_STABLE_DTYPE_FLOAT32);
  EXPECT(sdk_stable_tensor_device(a, &dev_type, &dtype_idx) == 0 && dev_type == SDK_STABLE_DEVICE_CPU);

  /* aten::add.Tensor(a, b, alpha=2): alpha given; then without it (the default 1 filled in). */
  sdk_stable_ivalue stack[4];
  int64_t n = -1;
  stack[0] = tensor_value(a); stack[1] = tensor_value(b);
  stack[2].tag = SDK_STABLE_TAG_INT; stack[2].payload = 2; stack[2].reserved = 0;
  EXPECT(sdk_stable_call_op("aten::add", "Tensor", stack, 3, 4, &n) == SDK_STABLE_OK && n == 1);
  EXPECT(stack[0].tag == SDK_STABLE_TAG_TENSOR);
  sdk_stable_tensor c = (sdk_stable_tensor)(uintptr_t)stack[0].payload;
  float* pc;
  EXPECT(sdk_stable_tensor_data_ptr(c, (void**)&pc) == 0 && pc[5] == 25.0f && pc[0] == 20.0f);
  stack[0] = tensor_value(a); stack[1] = tensor_value(b);
  EXPECT(sdk_stable_call_op("aten::add", "Tensor", stack, 2, 4, &n) == SDK_STABLE_OK && n == 1);
  sdk_stable_tensor d = (sdk_stable_tensor)(uintptr_t)stack[0].payload;
  float* pd;
  EXPECT(sdk_stable_tensor_data_ptr(d, (void**)&pd) == 0 && pd[5] == 15.0f);

  /* errors: statuses and messages, never a crash */
  EXPECT(sdk_stable_call_op("aten::no_such_op", "", stack, 0, 4, &n) == SDK_STABLE_ERROR_VALUE);
  EXPECT(strstr(sdk_stable_last_error_message(), "unknown operator 'aten::no_such_op'") != NULL);
  stack[0] = tensor_value(a);
  stack[1].tag = SDK_STABLE_TAG_DOUBLE; stack[1].payload = 0;
  EXPECT(sdk_stable_call_op("aten::add", "Tensor", stack, 2, 4, &n) == SDK_STABLE_ERROR_TYPE);
  EXPECT(strstr(sdk_stable_last_error_message(), "aten::add.Tensor: argument 'other' expected a value of type Tensor but got a stable value tagged float") != NULL);
  int64_t bad_sizes[1] = {4};
  sdk_stable_tensor e = NULL;
  EXPECT(sdk_stable_tensor_free(NULL) == SDK_STABLE_OK);
  EXPECT(sdk_stable_empty_strided(bad_sizes, NULL, 1, 99, SDK_STABLE_DEVICE_CPU, -1, &e) == SDK_STABLE_ERROR_TYPE && e == NULL);
  EXPECT(strstr(sdk_stable_last_error_message(), "invalid dtype 99") != NULL);
  bad_sizes[0] = -1;
  EXPECT(sdk_stable_empty_strided(bad_sizes, NULL, 1, SDK_STABLE_DTYPE_FLOAT32, SDK_STABLE_DEVICE_CPU, -1, &e) != SDK_STABLE_OK);
  EXPECT(sdk_stable_tensor_dim(NULL, &dim) == SDK_STABLE_ERROR_VALUE);
  EXPECT(sdk_stable_call_op("aten::add", "Tensor", stack, 2, 0, &n) == SDK_STABLE_ERROR_VALUE);

  sdk_stable_tensor a2 = NULL;
  EXPECT(sdk_stable_tensor_new_reference(a, &a2) == 0);
  EXPECT(sdk_stable_tensor_free(a) == 0);
  EXPECT(sdk_stable_tensor_numel(a2, &numel) == 0 && numel == 6); /* the second reference keeps it alive */
  sdk_stable_tensor_free(a2); sdk_stable_tensor_free(b); sdk_stable_tensor_free(c); sdk_stable_tensor_free(d);
  printf("shim ok\n");
  return 0;
}
"""


@pytest.mark.skipif(CC is None, reason="needs a C compiler")
def test_c_shim_from_a_c_program(tmp_path) -> None:
    src = tmp_path / "shim_test.c"
    src.write_text(C_PROGRAM)
    exe = tmp_path / "shim_test"
    lib = library_paths()[0]
    cmd = [CC, "-std=c99", "-Wall", "-Werror", *[f"-I{p}" for p in stable_include_paths()], str(src), "-o", str(exe),
           f"-L{lib}", f"-Wl,-rpath,{lib}", "-lbackend_sdk"]
    r = _run(cmd)
    assert r.returncode == 0, r.stderr
    r = _run([str(exe)])
    assert r.returncode == 0 and r.stdout.strip() == "shim ok", r.stdout + r.stderr


# ---- the sample library ----

@pytest.mark.skipif(NM is None, reason="needs nm")
def test_stable_library_references_only_the_c_shim(stable_lib) -> None:
    r = _run([NM, "-D", "--undefined-only", "-C", stable_lib])
    assert r.returncode == 0, r.stderr
    undefined = [ln.split()[-1] for ln in r.stdout.splitlines() if ln.strip()]
    shim = [s for s in undefined if s.startswith("sdk_stable_")]
    assert {"sdk_stable_call_op", "sdk_stable_library_impl", "sdk_stable_tensor_free"} <= set(shim)
    others = [s for s in undefined if not s.startswith("sdk_stable_")]
    # Everything else comes from libc, libstdc++ and libgcc (versioned), or is a weak runtime hook.
    weak = {"_ITM_deregisterTMCloneTable", "_ITM_registerTMCloneTable", "__gmon_start__", "__cxa_finalize@GLIBC_2.2.5"}
    bad = [s for s in others if s not in weak and not re.search(r"@(GLIBC|GLIBCXX|CXXABI|GCC)_", s)]
    assert bad == [], bad
    assert not any("sdk::" in s for s in undefined)
    assert sdk_cxx_symbols_used(stable_lib) == []


def test_stable_library_values_errors_and_opcheck(stable_lib, device) -> None:
    stable_check.check(device)


def test_stable_boxed_kernel_and_kernel_errors(stable_lib) -> None:
    ops = backend_sdk.ops.stable_ops
    assert ops.numel_plus(backend_sdk.empty(4, 5), -3) == 17
    with pytest.raises(TypeError, match="expected a floating-point dtype, got int64"):
        ops.scaled_add(backend_sdk.tensor([1, 2]), backend_sdk.tensor([1, 2]), 1.0)
    m = ops.scaled_add(backend_sdk.empty(2, 3, device="meta"), backend_sdk.empty(2, 3, device="meta"), 1.0)
    assert m.is_meta and tuple(m.shape) == (2, 3)


def test_stable_build_sees_only_the_stable_headers(tmp_path) -> None:
    src = tmp_path / "internal.cpp"
    src.write_text("#include <backend_sdk/dispatch/Library.h>\n")
    with pytest.raises(RuntimeError, match=r"Error building extension 'stable_internal'[\s\S]*dispatch/Library.h"):
        _load_stable("stable_internal", src, tmp_path)


@pytest.mark.skipif(NM is None, reason="needs nm")
def test_stable_build_refuses_a_cxx_symbol_of_the_sdk(tmp_path) -> None:
    # Device::str is declared in a header-only header but defined in libbackend_sdk (not header-only).
    src = tmp_path / "uses_cxx.cpp"
    src.write_text("#include <backend_sdk/headeronly/DeviceType.h>\n"
                   "extern \"C\" __attribute__((visibility(\"default\"))) const char* name_of_cpu() {\n"
                   "  static std::string s = sdk::Device(sdk::DeviceType::CPU).str(); return s.c_str(); }\n")
    with pytest.raises(RuntimeError, match=r"stable=True but uses symbols of libbackend_sdk.*Device"):
        _load_stable("stable_uses_cxx", src, tmp_path)
    assert not list((tmp_path / "b").glob("stable_uses_cxx_*.so"))


def test_stable_registration_errors_raise_at_load(tmp_path) -> None:
    src = tmp_path / "bad.cpp"
    src.write_text("#include <backend_sdk/stable/library.h>\n"
                   "STABLE_SDK_LIBRARY(stable_bad, m) { m.def(\"ok(Tensor x) -> Tensor\"); m.def(\"broken(Tensor x -> \"); }\n")
    with pytest.raises(ValueError, match=r"while running the STABLE_SDK_LIBRARY block for namespace 'stable_bad'"):
        _load_stable("stable_bad", src, tmp_path)
    # nothing of it stays registered: the library was unloaded and its Library freed
    assert not hasattr(backend_sdk.ops, "stable_bad") or not hasattr(backend_sdk.ops.stable_bad, "ok")


def test_unboxed_adapter_signature_mismatch_is_an_error(tmp_path) -> None:
    src = tmp_path / "mismatch.cpp"
    src.write_text("#include <backend_sdk/stable/library.h>\n"
                   "using sdk::stable::Tensor;\n"
                   "static Tensor two(Tensor a, Tensor b) { return a; }\n"
                   "STABLE_SDK_LIBRARY(stable_mismatch, m) { m.def(\"one(Tensor x) -> Tensor\"); }\n"
                   "STABLE_SDK_LIBRARY_IMPL(stable_mismatch, CPU, m) { m.impl(\"one\", &two); }\n")
    _load_stable("stable_mismatch", src, tmp_path)
    with pytest.raises(RuntimeError, match="its C\\+\\+ signature takes 2 arguments and returns 1 values, the "
                                           "operator's schema has 1 arguments and 1 returns"):
        backend_sdk.ops.stable_mismatch.one(backend_sdk.ones(2))


def test_kernel_returning_its_argument_handle_is_refused(tmp_path) -> None:
    # Returning a borrowed handle would make the SDK free it twice: it is an error, not a crash.
    src = tmp_path / "reuse.cpp"
    src.write_text("#include <backend_sdk/stable/library.h>\n"
                   "static sdk_stable_status same(void*, sdk_stable_ivalue* stack, int64_t, int64_t) {\n"
                   "  return SDK_STABLE_OK; }  // stack[0] still holds the argument's handle\n"
                   "STABLE_SDK_LIBRARY(stable_reuse, m) { m.def(\"same(Tensor x) -> Tensor\"); }\n"
                   "STABLE_SDK_LIBRARY_IMPL(stable_reuse, CPU, m) { m.impl(\"same\", &same); }\n")
    _load_stable("stable_reuse", src, tmp_path)
    x = backend_sdk.ones(3)
    with pytest.raises(RuntimeError, match="stable_reuse::same: a stable kernel returned one of its argument handles"):
        backend_sdk.ops.stable_reuse.same(x)
    assert x.tolist() == [1.0, 1.0, 1.0]  # x's handle was not freed twice


def test_stable_extension_reloaded_with_changed_sources_replaces_its_kernels(tmp_path) -> None:
    # Note [Extension library groups]: the stable shim's libraries join the load's group, so the
    # new version's STABLE_SDK_LIBRARY does not collide with the old one's.
    src = tmp_path / "reload.cpp"
    text = ("#include <backend_sdk/stable/library.h>\n#include <backend_sdk/stable/ops.h>\n"
            "static sdk::stable::Tensor f(sdk::stable::Tensor x) { return sdk::stable::mul(x, FACTOR); }\n"
            "STABLE_SDK_LIBRARY(stable_reload, m) { m.def(\"f(Tensor x) -> Tensor\"); }\n"
            "STABLE_SDK_LIBRARY_IMPL(stable_reload, CPU, m) { m.impl(\"f\", &f); }\n")
    src.write_text(text.replace("FACTOR", "2.0"))
    _load_stable("stable_reload", src, tmp_path)
    assert backend_sdk.ops.stable_reload.f(backend_sdk.ones(2)).tolist() == [2.0, 2.0]
    src.write_text(text.replace("FACTOR", "3.0"))
    _load_stable("stable_reload", src, tmp_path)
    assert backend_sdk.ops.stable_reload.f(backend_sdk.ones(2)).tolist() == [3.0, 3.0]
