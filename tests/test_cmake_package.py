"""The backend_sdk CMake package: an outside project finds the SDK and builds a backend (issue 7).

Runs against whichever SDK the tests import: the installed wheel (CI) or a development checkout
built with SDK_INPLACE=ON (``PYTHONPATH=.``), the two layouts backend_sdkConfig.cmake supports.
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

ROOT = Path(__file__).resolve().parents[1]
CMAKE = shutil.which("cmake")
pytestmark = pytest.mark.skipif(CMAKE is None, reason="cmake is not installed")

CONSUMER_CMAKE = """
cmake_minimum_required(VERSION 3.18)
project(consumer LANGUAGES CXX)
find_package(backend_sdk 0.1 CONFIG REQUIRED)
backend_sdk_add_backend(consumer_backend SOURCES Kernels.cpp DEVICE_SIM)
"""

CONSUMER_SOURCE = """
#include "device_sim.h"
#include <backend_sdk/dispatch/Library.h>
#include <backend_sdk/ops/Functions.h>

namespace {
sdk::Tensor triple(const sdk::Tensor& x) { return sdk::ops::mul(x, sdk::Scalar(3)); }
}  // namespace

// Links device_sim: the symbol must resolve when the library is loaded.
extern "C" void* consumer_sim_symbol() { return reinterpret_cast<void*>(&device_sim_translate); }

SDK_LIBRARY(consumer, m) { m.def("triple(Tensor x) -> Tensor"); }
SDK_LIBRARY_IMPL(consumer, CPU, m) { m.impl("triple", &triple); }
"""


def cmake_build(source: Path, build: Path, *defines: str) -> subprocess.CompletedProcess:
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    r = subprocess.run([CMAKE, "-S", str(source), "-B", str(build), *generator, "-DCMAKE_BUILD_TYPE=Release",
                        *defines], capture_output=True, text=True, timeout=600)
    if r.returncode == 0:
        r = subprocess.run([CMAKE, "--build", str(build)], capture_output=True, text=True, timeout=600)
    return r


def load_in_subprocess(code: str, cwd: Path) -> subprocess.CompletedProcess:
    """Runs ``code`` with the SDK this process imported, from ``cwd`` (not the checkout, whose
    backend_sdk/ folder would shadow an installed SDK)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(backend_sdk.__file__).parents[1]), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=300)


def test_prefix_path_points_at_the_package():
    config = Path(backend_sdk.cmake_prefix_path) / "backend_sdk" / "backend_sdkConfig.cmake"
    assert config.is_file()
    assert backend_sdk.utils.cmake_prefix_path == backend_sdk.cmake_prefix_path
    version = (config.parent / "backend_sdkConfigVersion.cmake").read_text()
    assert re.search(r'set\(PACKAGE_VERSION "([^"]+)"\)', version).group(1) == backend_sdk.__version__


def test_consumer_project_builds_links_and_loads(tmp_path):
    src = tmp_path / "consumer"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(CONSUMER_CMAKE)
    (src / "Kernels.cpp").write_text(CONSUMER_SOURCE)
    r = cmake_build(src, tmp_path / "build", f"-DCMAKE_PREFIX_PATH={backend_sdk.cmake_prefix_path}")
    assert r.returncode == 0, r.stdout + r.stderr
    lib = tmp_path / "build" / "libconsumer_backend.so"
    assert lib.is_file()
    if shutil.which("readelf"):
        dynamic = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True).stdout
        assert "libbackend_sdk.so" in dynamic and "libdevice_sim.so" in dynamic
        assert "$ORIGIN/../backend_sdk/lib" in dynamic
        assert backend_sdk.utils.library_paths()[0] in dynamic  # the SDK it was built against
    # Loading registers the operator (in a fresh process: namespaces are process-global).
    r = load_in_subprocess(f"""
        import ctypes, backend_sdk
        ctypes.CDLL({str(lib)!r})
        assert backend_sdk._C._take_static_registration_errors() == []
        print(backend_sdk.ops.consumer.triple(backend_sdk.tensor([1.0, 2.0])).tolist())
    """, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[3.0, 6.0]"
    # The install rule puts the library in <prefix>/<name>/ (site-packages/<name>/ in a wheel).
    r = subprocess.run([CMAKE, "--install", str(tmp_path / "build"), "--prefix", str(tmp_path / "inst")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "inst" / "consumer_backend" / "libconsumer_backend.so").is_file()


def test_found_through_package_root_as_scikit_build_core_does(tmp_path):
    """scikit-build-core's cmake.root entry point sets backend_sdk_ROOT to the package directory."""
    src = ROOT / "samples" / "custom_ops"
    package_dir = Path(backend_sdk.__file__).parent
    r = cmake_build(src, tmp_path / "build", f"-Dbackend_sdk_ROOT={package_dir}")
    assert r.returncode == 0, r.stdout + r.stderr
    lib = tmp_path / "build" / "libmuladd.so"
    r = load_in_subprocess(f"""
        import ctypes, backend_sdk
        ctypes.CDLL({str(lib)!r})
        x = backend_sdk.tensor([1.0, 2.0])
        print(backend_sdk.ops.samples_cpp.muladd(x, x, x).tolist())
    """, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[2.0, 6.0]"


def test_bad_uses_fail_clearly(tmp_path):
    src = tmp_path / "bad"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(textwrap.dedent("""
        cmake_minimum_required(VERSION 3.18)
        project(bad LANGUAGES CXX)
        find_package(backend_sdk CONFIG REQUIRED)
        backend_sdk_add_backend(nothing)
    """))
    r = cmake_build(src, tmp_path / "build", f"-DCMAKE_PREFIX_PATH={backend_sdk.cmake_prefix_path}")
    assert r.returncode != 0 and "backend_sdk_add_backend(nothing): no SOURCES given" in r.stdout + r.stderr
    # A version the package does not satisfy.
    (src / "CMakeLists.txt").write_text(CONSUMER_CMAKE.replace("backend_sdk 0.1", "backend_sdk 7.0"))
    r = cmake_build(src, tmp_path / "build2", f"-DCMAKE_PREFIX_PATH={backend_sdk.cmake_prefix_path}")
    assert r.returncode != 0 and "backend_sdk" in r.stdout + r.stderr and "7.0" in r.stdout + r.stderr
