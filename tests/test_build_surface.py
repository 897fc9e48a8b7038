"""The build's public surface (issue 13): exported symbols, the one SDK version, the load-time
version check of kernel libraries, and vendor code built against the *installed* CMake package.

See CMakeLists.txt, Note [Exported symbols], Note [SDK version], Note [CMake package version], and
dispatch/Library.cpp, Note [Kernel library version check].
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import backend_sdk
import backend_sdk.utils

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(backend_sdk.__file__).resolve().parent
LIBRARY = PACKAGE / "lib" / "libbackend_sdk.so"
CMAKE = shutil.which("cmake")
CXX = shutil.which("c++") or shutil.which("g++")
NM = shutil.which("nm")


def _pyproject_version() -> str:
    text = (ROOT / "pyproject.toml").read_text()
    return re.search(r'^version\s*=\s*"([^"]+)"', text, re.M).group(1)


def _exported_symbols() -> list[str]:
    out = subprocess.run([NM, "-DC", "--defined-only", str(LIBRARY)], capture_output=True, text=True, check=True)
    return [line.split(" ", 2)[2] for line in out.stdout.splitlines() if line.count(" ") >= 2]


def _in_subprocess(code: str, cwd: Path) -> subprocess.CompletedProcess:
    """Runs ``code`` with the SDK this process imported, from ``cwd`` (not the checkout, whose
    backend_sdk/ folder would shadow an installed SDK)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE.parent), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=300)


# ---------------------------------------------------------------------------------------------------
# Symbols (Note [Exported symbols])

# Before hidden visibility libbackend_sdk exported 3423 symbols; with it, 581; 801 after the C++
# autograd engine, declining kernels, the kernel checker and graph capture became public; 527 once
# cmake/backend_sdk.map kept the standard library's instantiations over SDK types (and the
# type_info objects of kernel signatures) local. The bound leaves room for the API to grow; a
# regression to default visibility exports thousands, one of the version script ~800.
MAX_EXPORTED_SYMBOLS = 700
# On top of that bound: the generated operator API (one exported function per aten overload,
# csrc/backend_sdk/ops/Operators.h, issue 17) and the C++ Tensor methods that call it (Note [C++
# Tensor methods]), as ATen exports at::add and Tensor::add.
_OPERATORS_H = ROOT / "csrc" / "backend_sdk" / "ops" / "Operators.h"
GENERATED_API_SYMBOLS = (_OPERATORS_H.read_text().count("\nSDK_API ") if _OPERATORS_H.exists() else 600) + 50

# Internal names that default visibility exported (3423 symbols before): the kernel adapters the
# SDK's own operator registrations instantiate (vendor code instantiates its own), the standard
# library's shared_ptr control blocks of SDK types, CPU loop helpers.
INTERNAL_NAMES = [
    "sdk::detail::FunctionKernel<", "vtable for sdk::detail::FunctionKernel<", "sdk::detail::CrashTracked<",
    "std::_Sp_counted_ptr<", "vtable for std::_Sp_counted_ptr<", "bool sdk::ops::cpu::load_constant",
    # cmake/backend_sdk.map: the standard library's code instantiated over SDK types, the type_info
    # of kernel signatures, and SDK_API functions only libbackend_sdk calls.
    "void std::vector<", "std::vector<", "std::_Hashtable<", "std::_Rb_tree<", "typeinfo for std::",
    "vtable for std::_Sp_counted_ptr_inplace<", "typeinfo for sdk::Tensor (", "typeinfo for bool (",
    "sdk::detail::label_external_kernel",
]

# The detail-namespace symbols libbackend_sdk exports on purpose: what the SDK_LIBRARY* macros and
# the inline code of public headers reference in vendor code (the registrar, the thread-local key
# sets, the dispatch table offsets, crash labelling, SDK_CHECK's thrower), and the casting reports
# of ops/detail/Casting.h that _C uses, and the library groups of dispatch/detail/LibraryGroups.h
# that _C's extension loader uses (Note [Extension library groups]), and the schema defaults
# (dispatch/detail/SchemaDefaults.h) _C's argument parser uses. Anything else under a detail
# namespace is internal.
EXPORTED_DETAIL = {
    "sdk::detail::StaticLibrary::StaticLibrary", "sdk::detail::kTableOffsets",
    "sdk::detail::raw_local_dispatch_key_set",
    "sdk::detail::t_running_kernel", "sdk::detail::throw_error", "sdk::detail::treat_as_sdk_library",
    "sdk::ops::detail::report_cannot_cast", "sdk::ops::detail::report_scalar_overflow",
    "sdk::detail::begin_static_library_group", "sdk::detail::end_static_library_group",
    "sdk::detail::reset_static_library_group", "sdk::detail::default_ivalue",
    # Note [Closed namespaces] (the bindings register through it) and Note [Declining kernels] (declinable()).
    "sdk::detail::register_kernel", "sdk::detail::kernels_for_undefined_operators", "sdk::detail::run_declined",
    # Note [Kernel checker]: the bindings' switch.
    "sdk::detail::set_kernel_checks", "sdk::detail::kernel_checks_enabled", "sdk::detail::kernel_checks_run",
    # core/detail/CpuAllocationObserver.h: the profiler binding's profile_memory hook on the CPU allocator.
    "sdk::detail::set_cpu_allocation_observer",
}


@pytest.mark.skipif(NM is None, reason="nm is not installed")
def test_hidden_visibility_exports_a_small_surface():
    symbols = _exported_symbols()
    assert 100 < len(symbols) <= MAX_EXPORTED_SYMBOLS + GENERATED_API_SYMBOLS, f"{len(symbols)} exported symbols"
    leaked = [s for s in symbols for name in INTERNAL_NAMES if s.startswith(name)]
    assert leaked == []
    # Every exported symbol of an SDK detail namespace is on the list of intended ones (the standard
    # library's own std::__detail instantiations are not ours).
    names = {s.split("(")[0] for s in symbols if s.startswith("sdk::")}
    unexpected = sorted(n for n in names if "detail::" in n and n not in EXPORTED_DETAIL)
    assert unexpected == []


@pytest.mark.skipif(NM is None, reason="nm is not installed")
def test_vendor_facing_api_is_exported():
    symbols = set(s.split("(")[0].replace("[abi:cxx11]", "") for s in _exported_symbols())
    for name in ["sdk::Library::def", "sdk::Library::impl", "sdk::detail::StaticLibrary::StaticLibrary",
                 "sdk::Dispatcher::singleton", "sdk::take_static_registration_errors", "sdk::sdk_version",
                 "sdk::ops::empty", "sdk::ops::mul", "sdk::TensorImpl::TensorImpl"]:
        assert name in symbols, name


# ---------------------------------------------------------------------------------------------------
# One version (Note [SDK version])

def _header_version(include: Path) -> tuple[int, int, int, str]:
    text = (include / "backend_sdk" / "version.h").read_text()
    get = lambda key: re.search(rf"#define BACKEND_SDK_VERSION_{key} (\d+)", text).group(1)  # noqa: E731
    string = re.search(r'#define BACKEND_SDK_VERSION "([^"]+)"', text).group(1)
    return int(get("MAJOR")), int(get("MINOR")), int(get("PATCH")), string


def test_one_version_everywhere():
    version = _pyproject_version()
    assert backend_sdk.__version__ == version
    assert backend_sdk._C.__version__ == version
    major, minor, patch, string = _header_version(Path(backend_sdk.utils.include_paths()[0]))
    assert string == version and f"{major}.{minor}.{patch}" == version
    config_version = (Path(backend_sdk.cmake_prefix_path) / "backend_sdk" / "backend_sdkConfigVersion.cmake")
    assert re.search(r'set\(PACKAGE_VERSION "([^"]+)"\)', config_version.read_text()).group(1) == version
    # Generated by CMake's write_basic_package_version_file with the documented rule (SameMinorVersion).
    assert "only if the requested major and minor versions are the same" in config_version.read_text()


def test_version_is_written_once():
    # The version literal appears in pyproject.toml only (not in CMakeLists.txt, Python or headers).
    version = _pyproject_version()
    offenders = []
    for path in [ROOT / "CMakeLists.txt", *(ROOT / "backend_sdk").rglob("*.py"), *(ROOT / "cmake").glob("*")]:
        if f'"{version}"' in path.read_text() or f"VERSION {version}" in path.read_text():
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


# ---------------------------------------------------------------------------------------------------
# A kernel library built against another SDK version (Note [Kernel library version check])

KERNEL_SOURCE = """
#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/Functions.h>

namespace {
sdk::Tensor twice(const sdk::Tensor& x) { return sdk::ops::mul(x, sdk::Scalar(2)); }
}  // namespace

SDK_LIBRARY(NSNAME, m) { m.def("twice(Tensor x) -> Tensor"); }
SDK_LIBRARY_IMPL(NSNAME, CPU, m) { m.impl("twice", &twice); }
"""


def _build_with_forged_version(tmp_path: Path, name: str, major: int, minor: int, patch: int) -> Path:
    """A kernel library compiled with a <backend_sdk/version.h> that says MAJOR.MINOR.PATCH (an
    include directory put before the SDK's)."""
    forged = tmp_path / f"forged_{name}" / "backend_sdk"
    forged.mkdir(parents=True)
    (forged / "version.h").write_text(textwrap.dedent(f"""
        #pragma once
        #define BACKEND_SDK_VERSION_MAJOR {major}
        #define BACKEND_SDK_VERSION_MINOR {minor}
        #define BACKEND_SDK_VERSION_PATCH {patch}
        #define BACKEND_SDK_VERSION "{major}.{minor}.{patch}"
        #define BACKEND_SDK_VERSION_NUMBER \\
          (BACKEND_SDK_VERSION_MAJOR * 10000 + BACKEND_SDK_VERSION_MINOR * 100 + BACKEND_SDK_VERSION_PATCH)
    """))
    source = tmp_path / f"{name}.cpp"
    source.write_text(KERNEL_SOURCE.replace("NSNAME", name))
    lib = tmp_path / f"lib{name}.so"
    cmd = [CXX, "-std=c++17", "-O1", "-shared", "-fPIC", f"-I{forged.parent}",
           *[f"-I{p}" for p in backend_sdk.utils.include_paths()], str(source), "-o", str(lib),
           *[f"-L{p}" for p in backend_sdk.utils.library_paths()], "-lbackend_sdk", "-Wl,--no-undefined"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return lib


@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
def test_library_built_against_another_minor_version_is_refused_with_a_clear_error(tmp_path):
    major, minor, patch = (int(p) for p in _pyproject_version().split(".")[:3])
    other = _build_with_forged_version(tmp_path, "vcheck_other", major, minor + 1, 0)
    same = _build_with_forged_version(tmp_path, "vcheck_patch", major, minor, patch + 7)
    r = _in_subprocess(f"""
        import ctypes, backend_sdk
        ctypes.CDLL({str(other)!r})
        errors = backend_sdk._C._take_static_registration_errors()
        print(len(errors))
        print(errors[0])
        print(hasattr(backend_sdk.ops, "vcheck_other") and hasattr(backend_sdk.ops.vcheck_other, "twice"))
        ctypes.CDLL({str(same)!r})
        assert backend_sdk._C._take_static_registration_errors() == []
        print(backend_sdk.ops.vcheck_patch.twice(backend_sdk.tensor([1.0, 4.0])).tolist())
    """, tmp_path)
    assert r.returncode == 0, r.stderr
    count, message, registered, result = r.stdout.strip().splitlines()
    assert count == "2"  # both blocks of the library are refused
    assert str(other) in message  # the library
    assert f"built against backend_sdk {major}.{minor + 1}.0" in message  # its version
    assert f"running backend_sdk is {_pyproject_version()}" in message  # the SDK's
    assert "same MAJOR.MINOR version" in message  # the rule
    assert registered == "False"
    # A patch difference is accepted: patch releases keep the ABI.
    assert result == "[2.0, 8.0]"


# ---------------------------------------------------------------------------------------------------
# Samples against the installed CMake package

def _checkout_build_dir() -> Path | None:
    """The build directory of this checkout's in-place SDK (from its exported targets), if any."""
    targets = Path(backend_sdk.cmake_prefix_path) / "backend_sdk" / "backend_sdkCheckoutTargets.cmake"
    if not targets.is_file():
        return None
    match = re.search(r'INTERFACE_INCLUDE_DIRECTORIES "([^";]+)/generated[;"]', targets.read_text())
    return Path(match.group(1)) if match else None


@pytest.fixture(scope="module")
def installed_prefix(tmp_path_factory) -> Path:
    """A prefix holding the SDK as `cmake --install` lays it out (the wheel's site-packages layout)."""
    if CMAKE is None:
        pytest.skip("cmake is not installed")
    if (PACKAGE / "share" / "cmake" / "backend_sdk" / "backend_sdkTargets.cmake").is_file():
        return PACKAGE.parent  # an installed wheel: site-packages is the install prefix
    build = _checkout_build_dir()
    if build is None or not (build / "cmake_install.cmake").is_file():
        pytest.skip("a checkout without an SDK_INPLACE build directory")
    prefix = tmp_path_factory.mktemp("prefix")
    r = subprocess.run([CMAKE, "--install", str(build), "--prefix", str(prefix)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return prefix


def _configure_and_build(source: Path, build: Path, prefix: Path) -> subprocess.CompletedProcess:
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    # --no-undefined: every SDK symbol the sample uses must be exported (Note [Exported symbols]).
    r = subprocess.run([CMAKE, "-S", str(source), "-B", str(build), *generator, "-DCMAKE_BUILD_TYPE=Release",
                        f"-DCMAKE_PREFIX_PATH={prefix / 'backend_sdk' / 'share' / 'cmake'}",
                        "-DCMAKE_SHARED_LINKER_FLAGS=-Wl,--no-undefined"],
                       capture_output=True, text=True, timeout=600)
    if r.returncode == 0:
        r = subprocess.run([CMAKE, "--build", str(build)], capture_output=True, text=True, timeout=900)
    return r


def test_installed_package_is_generated_with_exported_targets(installed_prefix):
    cmake_dir = installed_prefix / "backend_sdk" / "share" / "cmake" / "backend_sdk"
    targets = (cmake_dir / "backend_sdkTargets.cmake").read_text()
    assert "Generated by CMake" in targets
    assert "backend_sdk::backend_sdk" in targets and "backend_sdk::device_sim" in targets
    assert (cmake_dir / "backend_sdkFunctions.cmake").is_file()
    include = installed_prefix / "backend_sdk" / "include"
    assert _header_version(include)[3] == backend_sdk.__version__
    assert not list(include.rglob("detail"))


def test_samples_build_against_the_installed_package(installed_prefix, tmp_path):
    for sample, lib in [("accel_sim", "libaccel_sim.so"), ("custom_ops", "libmuladd.so")]:
        src = tmp_path / sample
        shutil.copytree(ROOT / "samples" / sample, src, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
        r = _configure_and_build(src, tmp_path / f"build_{sample}", installed_prefix)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        built = tmp_path / f"build_{sample}" / lib
        assert built.is_file()
        if shutil.which("readelf"):
            dynamic = subprocess.run(["readelf", "-d", str(built)], capture_output=True, text=True).stdout
            assert str(installed_prefix / "backend_sdk" / "lib") in dynamic  # the SDK it was built against


def test_internal_header_is_not_reachable_from_the_installed_package(installed_prefix, tmp_path):
    src = tmp_path / "internal"
    shutil.copytree(ROOT / "samples" / "custom_ops", src)
    kernel = src / "csrc" / "muladd.cpp"
    kernel.write_text("#include <backend_sdk/ops/detail/CpuLoops.h>\n" + kernel.read_text())
    assert (ROOT / "csrc" / "backend_sdk" / "ops" / "detail" / "CpuLoops.h").is_file()  # it exists in the checkout
    r = _configure_and_build(src, tmp_path / "build", installed_prefix)
    assert r.returncode != 0
    assert "backend_sdk/ops/detail/CpuLoops.h" in r.stdout + r.stderr
    assert re.search(r"No such file|not found", r.stdout + r.stderr)
