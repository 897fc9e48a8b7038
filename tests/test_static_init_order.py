"""Static-initialisation order of libbackend_sdk's registrations (issue 13).

SDK_LIBRARY blocks run from static initialisers, and which translation unit initialises first is
decided by the link order. ``record_static_registration_error`` used to write through std::cerr,
which GCC 12 constructs only in the initialisers of files that include <iostream>: an error
reported from a block that ran first crashed the process (it happened when the autograd objects
were linked ahead of the operators'), and the dispatch table offsets were computed by a dynamic
initialiser, so a fallback registered before it ran landed in slot 0 of every key.

These tests relink libbackend_sdk from this checkout's own object files (so they run wherever the
SDK was built with ninja: build-dev/, or pip's reused build/<tag>/) in orders the normal build never
uses, load it in a subprocess through LD_LIBRARY_PATH and check that the SDK still works and that an
error reported before every SDK initialiser is raised, not a crash.
See dispatch/Library.cpp, Note [Init-order-safe registration errors].
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import backend_sdk

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(backend_sdk.__file__).resolve().parent
NINJA = shutil.which("ninja")
CXX = shutil.which("c++") or shutil.which("g++")

pytestmark = pytest.mark.skipif(NINJA is None or CXX is None or not sys.platform.startswith("linux"),
                                reason="needs ninja, a C++ compiler and Linux")


def _build_dirs() -> list[Path]:
    """Ninja build directories of this checkout that can build libbackend_sdk."""
    candidates = [ROOT / "build-dev", *sorted((ROOT / "build").glob("*"))]
    return [d for d in candidates if (d / "build.ninja").is_file()
            and (d / "CMakeFiles" / "backend_sdk.dir").is_dir()]


def _link_command(build: Path) -> tuple[list[str], list[str], str]:
    """(objects, everything after them, the compiler) of libbackend_sdk's link step in ``build``."""
    r = subprocess.run([NINJA, "-C", str(build), "-t", "commands", "backend_sdk"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    link = next(line for line in reversed(r.stdout.splitlines()) if "-soname,libbackend_sdk" in line)
    link = link.strip().removeprefix(": &&").removesuffix("&& :").strip()
    words = shlex.split(link)
    objects = [w for w in words if w.endswith(".o")]
    rest = words[words.index(objects[-1]) + 1:]
    missing = [o for o in objects if not (build / o).is_file()]
    if missing:
        pytest.skip(f"{build} has not built libbackend_sdk's objects ({missing[0]} is missing)")
    return objects, rest, words[0]


@pytest.fixture(scope="module")
def build() -> Path:
    dirs = _build_dirs()
    if not dirs:
        pytest.skip("no ninja build directory of libbackend_sdk in this checkout (build-dev/ or build/<tag>/)")
    return dirs[0]


def _relink(build: Path, out: Path, first: list[Path], reverse: bool) -> Path:
    objects, rest, compiler = _link_command(build)
    if reverse:
        objects = objects[::-1]
    out.mkdir(parents=True, exist_ok=True)
    lib = out / "libbackend_sdk.so"
    cmd = [compiler, "-fPIC", "-shared", "-Wl,-soname,libbackend_sdk.so", "-o", str(lib),
           *map(str, first), *objects, *rest]
    r = subprocess.run(cmd, cwd=build, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return lib


def _import_with(lib: Path, code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    # LD_LIBRARY_PATH wins over _C's RUNPATH ($ORIGIN/lib): _C loads the relinked library.
    env["LD_LIBRARY_PATH"] = os.pathsep.join([str(lib.parent), env.get("LD_LIBRARY_PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE.parent), env.get("PYTHONPATH", "")])
    # The libbackend_sdk the process mapped, printed at its end (after the import loaded it).
    code = textwrap.dedent(code) + textwrap.dedent(_WHICH_LIBRARY)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=lib.parent,
                          timeout=300)


_WHICH_LIBRARY = """
    import re
    maps = open("/proc/self/maps").read()
    print("LOADED", sorted(set(re.findall(r"\\S*/libbackend_sdk\\.so", maps))))
"""


def _loaded(stdout: str) -> list[str]:
    match = re.search(r"LOADED (\[.*\])", stdout)
    assert match, stdout
    return eval(match.group(1))  # a list literal this test printed


def test_every_initialiser_in_reverse_link_order(build, tmp_path):
    # The autograd layer first (its Autograd fallbacks replace the dispatcher's fallthroughs), the
    # core layer last: the opposite of CMakeLists.txt's order.
    lib = _relink(build, tmp_path / "reversed", [], reverse=True)
    r = _import_with(lib, """
        import backend_sdk as sdk
        a = sdk.tensor([1.0, 2.0, 3.0], requires_grad=True)
        (a * a).sum().backward()
        print("GRAD", a.grad.tolist(), sdk.ones(2, 3).sum().item())
    """)
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    assert _loaded(r.stdout) == [str(lib)]
    assert "GRAD [2.0, 4.0, 6.0] 6.0" in r.stdout
    assert "registration error" not in r.stderr


_EARLY_BLOCK = r"""
#include <backend_sdk/dispatch/Library.h>

// Linked ahead of every object of libbackend_sdk, so this block runs before any of the SDK's own
// static initialisers: it defines an operator, registers a kernel for it, and fails on a bad schema.
namespace {
sdk::Tensor early_identity(const sdk::Tensor& x) { return x; }
}  // namespace

SDK_LIBRARY(early_init_order, m) {
  m.def("identity(Tensor x) -> Tensor");
  m.impl("identity", sdk::DispatchKey::CPU, &early_identity);
  m.def("broken(Tensor x -> Tensor");
}
"""


def test_registration_error_before_the_registry_exists_is_reported_not_a_crash(build, tmp_path):
    source = tmp_path / "early.cpp"
    source.write_text(_EARLY_BLOCK)
    obj = tmp_path / "early.o"
    includes = [f"-I{ROOT / 'csrc'}", f"-I{build / 'generated'}"]
    r = subprocess.run([CXX, "-std=c++17", "-fPIC", "-O0", *includes, "-c", str(source), "-o", str(obj)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    lib = _relink(build, tmp_path / "early", [obj], reverse=True)
    r = _import_with(lib, """
        try:
            import backend_sdk
        except ImportError as e:
            print("IMPORT-ERROR", str(e).replace("\\n", " | "))
    """)
    # Before the fix: SIGSEGV (-11) in std::ostream's sentry, from the error path.
    assert r.returncode == 0, f"rc={r.returncode}\n{r.stdout}\n{r.stderr[-3000:]}"
    assert _loaded(r.stdout) == [str(lib)]
    # The error is printed when it happens and raised by the import that loaded it, naming the
    # block and the parse error; the block's earlier registrations ran.
    assert "[backend_sdk] registration error while running the SDK_LIBRARY block for namespace " \
           "'early_init_order'" in r.stderr
    line = next(l for l in r.stdout.splitlines() if l.startswith("IMPORT-ERROR"))
    assert "registering the built-in operators failed" in line
    assert "early_init_order" in line and "broken(Tensor x -> Tensor" in line
    assert line.count("while running the SDK_LIBRARY block") == 1  # only the early block failed
