"""``python -m backend_sdk new NAME``: the vendor project scaffold (issue 7, "The scaffold")."""
from __future__ import annotations

import importlib.util
import os
import py_compile
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import backend_sdk
from backend_sdk import __main__ as cli
from backend_sdk._scaffold import create_project

CMAKE = shutil.which("cmake")
CXX = shutil.which(os.environ.get("CXX", "c++"))
SDK_ROOT = Path(backend_sdk.__file__).resolve().parents[1]  # the checkout, or site-packages


def tree(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name, message", [
    ("9lives", "is not valid: use a lowercase Python identifier"),
    ("my-npu", "is not valid"),
    ("Npu", "is not valid"),
    ("", "is not valid"),
    ("class", "is a Python keyword"),
    ("cpu", "collides with the built-in device name 'cpu'"),
    ("meta", "collides with the built-in device name 'meta'"),
    ("cuda", "collides with the built-in device name 'cuda'"),
    ("privateuseone", "collides with the built-in device name"),
    ("json", "collides with the Python standard library module 'json'"),
    ("numpy", "collides with the installed module 'numpy'"),
    ("backend_sdk", "collides with the installed module 'backend_sdk'"),
])
def test_bad_names_write_nothing(tmp_path, name, message):
    with pytest.raises(ValueError, match=message):
        create_project(name, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_existing_target_is_not_touched(tmp_path):
    existing = tmp_path / "tcnpu_exists"
    existing.mkdir()
    (existing / "mine.txt").write_text("the user's")
    with pytest.raises(FileExistsError, match=r"tcnpu_exists already exists.*nothing was written"):
        create_project("tcnpu_exists", tmp_path)
    assert tree(existing) == {"mine.txt": b"the user's"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tcnpu_exists"]  # no staging folder left
    (tmp_path / "tcnpu_file").write_text("x")  # a file in the way, too
    with pytest.raises(FileExistsError):
        create_project("tcnpu_file", tmp_path)
    assert (tmp_path / "tcnpu_file").read_text() == "x"


def test_cli(tmp_path, capsys):
    assert cli.main(["new", "tcnpu_cli", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"Wrote the backend project {tmp_path / 'tcnpu_cli'}" in out and "tcnpu_cli/csrc/Kernels.cpp" in out
    before = tree(tmp_path)
    assert cli.main(["new", "tcnpu_cli", "--dir", str(tmp_path)]) == 1
    assert "already exists" in capsys.readouterr().err
    assert cli.main(["new", "cpu", "--dir", str(tmp_path)]) == 1
    assert "collides with the built-in device name 'cpu'" in capsys.readouterr().err
    assert tree(tmp_path) == before
    assert cli.main(["new", "tcnpu_py", "--python-only", "--dir", str(tmp_path)]) == 0
    assert (tmp_path / "tcnpu_py" / "tcnpu_py" / "__init__.py").exists()
    with pytest.raises(SystemExit):  # the other commands are still there
        cli.main(["demo", "--help"])


@pytest.mark.parametrize("python_only", [False, True])
def test_generated_files(tmp_path, python_only):
    root = create_project("tcnpu_files", tmp_path, python_only=python_only)
    files = tree(root)
    for path, content in files.items():
        text = content.decode()
        assert "__NAME__" not in text and "__SDK_" not in text and "__LAYOUT__" not in text, path
        if path.endswith(".py"):
            py_compile.compile(str(root / path), doraise=True)
    assert "tests/test_tcnpu_files.py" in files and "tests/conftest.py" in files and "README.md" in files
    project = tomllib.loads(files["pyproject.toml"].decode())
    assert project["project"]["name"] == "tcnpu_files"
    assert "--backend tcnpu_files" in project["tool"]["pytest"]["ini_options"]["addopts"]
    assert not any(r.startswith("backend_sdk") for r in project["build-system"]["requires"])  # pip can get them
    if python_only:
        assert set(files) == {"README.md", "pyproject.toml", "tcnpu_files/__init__.py", "tests/conftest.py",
                              "tests/test_tcnpu_files.py", ".gitignore"}
        assert "REAL DRIVER CALL GOES HERE" in files["tcnpu_files/__init__.py"].decode()
        return
    assert {"CMakeLists.txt", "csrc/Device.cpp", "csrc/Kernels.cpp", "tcnpu_files/__init__.py"} <= set(files)
    assert project["build-system"]["build-backend"] == "scikit_build_core.build"
    cmake = files["CMakeLists.txt"].decode()
    assert "find_package(backend_sdk CONFIG REQUIRED" in cmake and "backend_sdk_add_backend(tcnpu_files_backend" in cmake
    baked = Path(backend_sdk.cmake_prefix_path).resolve() / "backend_sdk"
    assert f'HINTS "{baked}"' in cmake and (baked / "backend_sdkConfig.cmake").is_file()
    assert "BACKEND_SDK_CMAKE_DIR" in cmake and "BACKEND_SDK_CMAKE_DIR" in files["README.md"].decode()
    assert files["csrc/Device.cpp"].decode().count("REAL DRIVER CALL GOES HERE") >= 20
    assert "REAL DRIVER CALL GOES HERE" in files["csrc/Kernels.cpp"].decode()
    # The walkthrough from a first kernel to conformance, and build outputs kept out of git.
    readme = files["README.md"].decode()
    assert "From your first kernel to conformance" in readme and "sdk::declinable(&neg)" in readme
    assert "python -m backend_sdk conformance tcnpu_files" in readme
    assert "build/" in files[".gitignore"].decode().splitlines()


def add_first_kernel_as_the_readme_says(root: Path) -> None:
    """Step 1 of the README's walkthrough: the kernel and the m.impl line it shows, added to csrc/Kernels.cpp
    (each one line: the C++ scaffold's target is at most 5 lines beyond a kernel's arithmetic)."""
    readme = (root / "README.md").read_text()
    kernel = next(ln.strip() for ln in readme.splitlines() if ln.strip().startswith("Tensor neg("))
    impl = next(ln.strip() for ln in readme.splitlines() if ln.strip().startswith('m.impl("neg"'))
    src = root / "csrc" / "Kernels.cpp"
    text = src.read_text().replace("}  // namespace\n", kernel + "\n\n}  // namespace\n", 1)
    src.write_text(text.replace('  m.impl("add.Tensor"', "  " + impl + "\n" + '  m.impl("add.Tensor"', 1))


def run_generated_tests(project: Path, site: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(SDK_ROOT), env.get("PYTHONPATH", "")])
    # The conformance suite runs with the project's tests: through the installed entry point, or (in a
    # development checkout, where it is not installed) the plugin named with -p.
    from backend_sdk.testing import conformance
    plugin = [] if conformance._entry_point_present() else ["-p", "backend_sdk.testing.conformance.plugin"]
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin,
                           str(project / "tests")],
                          capture_output=True, text=True, env=env, cwd=project.parent, timeout=900)


@pytest.mark.skipif(CMAKE is None or CXX is None, reason="cmake or a C++ compiler is missing")
def test_generated_project_builds_and_its_tests_pass(tmp_path):
    """What `pip install ./NAME && pytest NAME/tests` does, without pip: CMake configure, build and
    install into a prefix that stands for site-packages (.ci/run does the real pip install)."""
    root = create_project("tcnpu_build", tmp_path)
    add_first_kernel_as_the_readme_says(root)
    build, site = tmp_path / "build", tmp_path / "site"
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    for cmd in ([CMAKE, "-S", str(root), "-B", str(build), *generator, "-DCMAKE_BUILD_TYPE=Release"],
                [CMAKE, "--build", str(build)], [CMAKE, "--install", str(build), "--prefix", str(site)]):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, r.stdout + r.stderr
    assert (site / "tcnpu_build" / "libtcnpu_build_backend.so").is_file()
    shutil.copy(root / "tcnpu_build" / "__init__.py", site / "tcnpu_build" / "__init__.py")
    r = run_generated_tests(root, site)
    assert r.returncode == 0, r.stdout + r.stderr
    assert " passed" in r.stdout and "failed" not in r.stdout
    # The README's first kernel runs on the device: no CPU-fallback warning, the CPU's values.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(SDK_ROOT), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-W", "error", "-c",
                        "import backend_sdk, tcnpu_build\n"
                        "x = backend_sdk.tensor([1.0, -2.0, 3.0], device='tcnpu_build')\n"
                        "assert x.neg().cpu().tolist() == [-1.0, 2.0, -3.0]\n"],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr

    # BACKEND_SDK_CMAKE_DIR overrides the remembered SDK location.
    env = dict(os.environ, BACKEND_SDK_CMAKE_DIR=str(tmp_path / "no_sdk_here"))
    r = subprocess.run([CMAKE, "-S", str(root), "-B", str(tmp_path / "build2"), *generator], capture_output=True,
                       text=True, env=env, timeout=600)
    assert r.returncode != 0 and "backend_sdk" in r.stderr


@pytest.mark.skipif(importlib.util.find_spec("backend_sdk.utils.python_device") is None,
                    reason="backend_sdk.utils.python_device (the Python device face) is not in this SDK yet")
def test_python_only_project_tests_pass(tmp_path):
    root = create_project("tcnpu_py_run", tmp_path, python_only=True)
    r = run_generated_tests(root, root)
    assert r.returncode == 0, r.stdout + r.stderr
