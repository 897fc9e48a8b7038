"""``python -m backend_sdk new NAME --stable``: a backend whose kernel library is built only on the
ABI-stable surface (issue 13). The project is generated, built with CMake as pip would build it,
checked with ``nm`` to take nothing from libbackend_sdk but the C shim, and its own tests (with the
conformance suite) and opcheck on cpu and on its device run against it. The build itself refuses an
SDK header outside the stable surface and an SDK C++ symbol.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import backend_sdk
from backend_sdk import __main__ as cli
from backend_sdk._scaffold import create_project
from backend_sdk.utils._stable_extension import sdk_cxx_symbols_used

CMAKE = shutil.which("cmake")
CXX = shutil.which(os.environ.get("CXX", "c++"))
NM = shutil.which("nm")
SDK_ROOT = Path(backend_sdk.__file__).resolve().parents[1]  # the checkout, or site-packages
GENERATOR = ["-G", "Ninja"] if shutil.which("ninja") else []

needs_toolchain = pytest.mark.skipif(CMAKE is None or CXX is None or NM is None,
                                     reason="cmake, nm or a C++ compiler is missing")


def _build(root: Path, build: Path) -> subprocess.CompletedProcess:
    r = subprocess.run([CMAKE, "-S", str(root), "-B", str(build), *GENERATOR, "-DCMAKE_BUILD_TYPE=Release"],
                       capture_output=True, text=True, timeout=900)
    if r.returncode == 0:
        r = subprocess.run([CMAKE, "--build", str(build)], capture_output=True, text=True, timeout=900)
    return r


def _env(site: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(SDK_ROOT), env.get("PYTHONPATH", "")])
    return env


def test_stable_project_files(tmp_path, capsys):
    assert cli.main(["new", "tcst_files", "--stable", "--dir", str(tmp_path)]) == 0
    assert "Wrote the stable-ABI backend project" in capsys.readouterr().out
    root = tmp_path / "tcst_files"
    cmake = (root / "CMakeLists.txt").read_text()
    assert "backend_sdk_add_backend(tcst_files_backend SOURCES csrc/Device.cpp csrc/Kernels.cpp DEVICE_SIM STABLE" in cmake
    kernels = (root / "csrc" / "Kernels.cpp").read_text()
    includes = [line.split()[1] for line in kernels.splitlines() if line.startswith("#include")]
    sdk_includes = [i for i in includes if "backend_sdk/" in i]
    assert sdk_includes and all(i.startswith("<backend_sdk/stable/") for i in sdk_includes), includes
    assert "STABLE_SDK_LIBRARY_IMPL(aten, PrivateUse1, m)" in kernels and "m.fallback_cpu()" in kernels
    assert "__NAME__" not in kernels and '"tcst_files:"' in kernels
    # The device contract and the package are the C++ flavour's: only the kernels and the build differ.
    cpp = create_project("tcst_cpp", tmp_path)
    assert (root / "csrc" / "Device.cpp").read_text() == (cpp / "csrc" / "Device.cpp").read_text().replace(
        "tcst_cpp", "tcst_files")
    readme = (root / "README.md").read_text()
    assert "backend_sdk_add_backend(... STABLE)" in readme and "new tcst_files --stable" in readme


def test_python_only_and_stable_exclude_each_other(tmp_path):
    with pytest.raises(ValueError, match="--python-only and --stable exclude each other"):
        create_project("tcst_both", tmp_path, python_only=True, stable=True)
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def stable_backend(tmp_path_factory) -> tuple[Path, Path]:
    """(project, site): the generated project, built and installed into a prefix standing for
    site-packages, as `pip install ./tcst_run` lays it out."""
    if CMAKE is None or CXX is None or NM is None:
        pytest.skip("cmake, nm or a C++ compiler is missing")
    tmp = tmp_path_factory.mktemp("stable_scaffold")
    root = create_project("tcst_run", tmp, stable=True)
    r = _build(root, tmp / "build")
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    site = tmp / "site"
    r = subprocess.run([CMAKE, "--install", str(tmp / "build"), "--prefix", str(site)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    shutil.copy(root / "tcst_run" / "__init__.py", site / "tcst_run" / "__init__.py")
    return root, site


def test_library_references_only_the_c_shim(stable_backend):
    _, site = stable_backend
    library = site / "tcst_run" / "libtcst_run_backend.so"
    assert sdk_cxx_symbols_used(str(library)) == []
    undefined = subprocess.run([NM, "-D", "--undefined-only", str(library)], capture_output=True, text=True,
                               check=True).stdout.split()
    assert "sdk_stable_library_create" in undefined and "sdk_stable_library_impl_device_kernels" in undefined
    assert not [s for s in undefined if s.startswith("_ZN3sdk") or s.startswith("_ZNK3sdk")]  # no SDK C++ at all
    needed = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True).stdout
    assert "libbackend_sdk.so" in needed and "libdevice_sim.so" in needed


def test_generated_tests_and_conformance_pass(stable_backend):
    root, site = stable_backend
    from backend_sdk.testing import conformance
    plugin = [] if conformance._entry_point_present() else ["-p", "backend_sdk.testing.conformance.plugin"]
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin, str(root / "tests")],
                       capture_output=True, text=True, env=_env(site), cwd=root.parent, timeout=1200)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    assert " passed" in r.stdout and "failed" not in r.stdout


def test_opcheck_on_cpu_and_the_device(stable_backend):
    _, site = stable_backend
    code = textwrap.dedent("""
        import warnings
        warnings.simplefilter("ignore")
        import backend_sdk as sdk
        import tcst_run
        from backend_sdk.library import opcheck
        aten = sdk.ops.aten
        for dev in ["cpu", "tcst_run", "tcst_run:1"]:
            a = sdk.randn(4, 5, device=dev, requires_grad=True)
            b = sdk.randn(4, 5, device=dev)
            results = [opcheck(aten.add.Tensor, (a, b), {"alpha": 2}), opcheck(aten.mul.Tensor, (a, b)),
                       opcheck(aten.relu.default, (a,)), opcheck(aten.sum.default, (a,)),
                       opcheck(aten.add.Tensor, (a.t(), b.t())),        # strided: the CPU path
                       opcheck(aten.mul.Tensor, (a.double(), b)),       # mixed dtypes: the CPU path
                       opcheck(aten.relu.default, (a[:, ::2],))]
            assert all(set(r.values()) == {"SUCCESS"} for r in results), results
            print("OPCHECK", dev, len(results))
        # The native kernels ran on the device (the simulator names its kernels).
        x = sdk.ones(8, device="tcst_run")
        assert (x + x).relu().sum().item() == 16.0
        print("VALUES OK")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(site), cwd=site,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr[-4000:]
    for dev in ["cpu", "tcst_run", "tcst_run:1"]:
        assert f"OPCHECK {dev} 7" in r.stdout
    assert "VALUES OK" in r.stdout


@needs_toolchain
def test_build_refuses_headers_and_symbols_outside_the_stable_surface(tmp_path):
    root = create_project("tcst_bad", tmp_path, stable=True)
    kernels = root / "csrc" / "Kernels.cpp"
    original = kernels.read_text()

    # An SDK C++ header is not on a STABLE library's include path, though it exists in the SDK.
    kernels.write_text("#include <backend_sdk/dispatch/Library.h>\n" + original)
    r = _build(root, tmp_path / "build_header")
    assert r.returncode != 0
    assert "backend_sdk/dispatch/Library.h" in r.stdout + r.stderr
    assert "No such file" in r.stdout + r.stderr

    # A C++ function of libbackend_sdk (declared by hand) links, and the post-link check refuses it.
    kernels.write_text(original + textwrap.dedent("""
        namespace sdk { const char* sdk_version(); }
        extern "C" const char* tcst_bad_sdk_version() { return sdk::sdk_version(); }
    """))
    r = _build(root, tmp_path / "build_symbol")
    assert r.returncode != 0
    out = " ".join((r.stdout + r.stderr).split())  # CMake wraps the message
    assert "is built with STABLE but uses 1 symbol(s) of libbackend_sdk that are not part of the stable C shim" in out
    assert "_ZN3sdk11sdk_versionEv" in out
