"""The installed C++ surface: public headers under <backend_sdk/...>, internal ones not installed.

See docs/architecture.md, "Source layout and installed headers": headers in a layer's
``detail/`` folder are internal; a public header must compile from an include directory that
holds only the public headers (as the wheel's ``backend_sdk/include/`` does).
"""
from __future__ import annotations

import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import backend_sdk.utils

SOURCE = Path(__file__).resolve().parent.parent / "csrc" / "backend_sdk"
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def _public_headers() -> list[Path]:
    return sorted(p for p in SOURCE.rglob("*.h") if "detail" not in p.relative_to(SOURCE).parts)


def _includes(path: Path) -> list[tuple[str, str]]:
    return INCLUDE.findall(path.read_text())


def test_source_tree_has_the_prefix_layout():
    assert (SOURCE / "dispatch" / "Library.h").is_file()
    assert (SOURCE / "extension.h").is_file()
    # Allocator and Storage are core types (c10/core), not the tensor layer's.
    assert (SOURCE / "core" / "Allocator.h").is_file() and (SOURCE / "core" / "Storage.h").is_file()
    assert not (SOURCE / "tensor" / "Allocator.h").exists()


def test_public_headers_never_include_internal_ones():
    offenders = [f"{h.relative_to(SOURCE)} includes {name}" for h in _public_headers()
                 for _, name in _includes(h) if "/detail/" in name]
    assert offenders == []


def test_sdk_headers_are_included_with_the_prefix():
    # A quoted "dispatch/Library.h" would resolve in a checkout (csrc/ on the path) but not for
    # a vendor; every SDK header is reached as <backend_sdk/...>.
    layers = ("core/", "dispatch/", "ops/", "runtime/", "tensor/")
    sources = [p for p in SOURCE.parent.rglob("*") if p.suffix in (".h", ".cpp")]
    offenders = [f"{p.relative_to(SOURCE.parent)}: {name}" for p in sources
                 for quote, name in _includes(p) if name.startswith(layers)]
    assert offenders == []


def test_the_runtime_does_not_include_the_tensor_layer():
    # DESIGN.md's direction: runtime sits above tensor; its allocators use core/Allocator.h.
    offenders = [f"{p.name}: {name}" for p in (SOURCE / "runtime").rglob("*") if p.is_file()
                 for _, name in _includes(p) if name.startswith("backend_sdk/tensor/")]
    assert offenders == []


def test_the_wheel_installs_exactly_the_public_headers():
    installed = Path(backend_sdk.utils.__file__).resolve().parent.parent / "include"
    if not installed.is_dir():
        pytest.skip("a development checkout: no installed include directory")
    got = sorted(str(p.relative_to(installed)) for p in installed.rglob("*.h"))
    want = sorted(str(Path("backend_sdk") / p.relative_to(SOURCE)) for p in _public_headers())
    assert got == want


@pytest.fixture(scope="module")
def public_include_dir(tmp_path_factory) -> Path:
    """An include directory holding only the public headers, as the wheel's is."""
    root = tmp_path_factory.mktemp("include")
    for header in _public_headers():
        target = root / "backend_sdk" / header.relative_to(SOURCE)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(header, target)
    return root


def test_each_public_header_compiles_on_its_own(public_include_dir):
    compiler = shutil.which("c++") or shutil.which("g++")
    if compiler is None:
        pytest.skip("no C++ compiler")
    headers = [h.relative_to(SOURCE) for h in _public_headers()]

    def compile_one(rel: Path) -> str | None:
        source = f"#include <backend_sdk/{rel.as_posix()}>\n#include <backend_sdk/{rel.as_posix()}>\n"
        proc = subprocess.run([compiler, "-std=c++17", "-fsyntax-only", "-x", "c++", "-",
                               f"-I{public_include_dir}"], input=source, capture_output=True, text=True)
        return None if proc.returncode == 0 else f"{rel}:\n{proc.stderr[:600]}"

    with ThreadPoolExecutor(max_workers=2) as pool:
        failures = [f for f in pool.map(compile_one, headers) if f]
    assert failures == [], "\n".join(failures)
