"""Samples and the scaffold's templates use only the SDK's public API (DESIGN.md, "samples use only what an
outside vendor can use"; issue 17, "Glue the SDK provides"): no private modules or names
(``backend_sdk._runtime``, ``_C._...``), no internal headers (``detail/``, ``runtime/CurrentDevice.h``)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TREES = [ROOT / "samples", ROOT / "backend_sdk" / "_scaffold" / "templates"]
TEXT_SUFFIXES = {".py", ".pyi", ".cpp", ".h", ".hpp", ".cc", ".txt", ".md", ".toml", ".cmake", ".in", ".cfg"}

# Private names of the SDK as they appear in any file (code, comments, docs).
PRIVATE = [
    (re.compile(r"\bbackend_sdk(?:\.[A-Za-z]\w*)*\._[A-Za-z]\w*"), "a private backend_sdk module or name"),
    (re.compile(r"(?<![\w.])_C\b|\._C\b"), "backend_sdk._C, the bindings module"),
    (re.compile(r"\b_runtime\b"), "backend_sdk._runtime"),
    (re.compile(r"backend_sdk/[\w/]*detail/|\bsdk::(?:\w+::)*detail::"), "an internal (detail/) header or name"),
    (re.compile(r"runtime/CurrentDevice\.h"),
     "runtime/CurrentDevice.h (sdk::runtime::current_device is in DeviceGuard.h)"),
]


def _files() -> list[Path]:
    out = []
    for tree in TREES:
        for p in sorted(tree.rglob("*")):
            if p.is_file() and (p.suffix in TEXT_SUFFIXES or p.name == "CMakeLists.txt") and not any(
                    part in ("__pycache__", "build") or part.startswith(("build-", ".")) for part in p.parts):
                out.append(p)
    return out


def private_uses(path: Path, root: Path = ROOT) -> list[str]:
    """'path:line: text (what)' for each private SDK name in the file."""
    text = path.read_text()
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        for pattern, what in PRIVATE:
            if pattern.search(line):
                found.append(f"{path.relative_to(root)}:{n}: {line.strip()} ({what})")
    if path.suffix in (".py", ".pyi"):
        for node in ast.walk(ast.parse(text.replace("__NAME__", "name_"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "backend_sdk":
                names = [a.name for a in node.names if a.name.startswith("_")]
                if names or any(part.startswith("_") for part in node.module.split(".")):
                    found.append(f"{path.relative_to(root)}:{node.lineno}: from {node.module} import "
                                 f"{', '.join(a.name for a in node.names)} (a private import)")
    return found


def test_the_trees_are_scanned():
    names = {p.name for p in _files()}
    assert {"SimKernels.cpp", "AccelKernels.cpp", "Kernels.cpp", "Device.cpp", "__init__.pyi",
            "test___NAME__.py"} <= names


def test_samples_and_templates_use_no_private_names():
    found = [use for p in _files() for use in private_uses(p)]
    assert not found, "private SDK names in samples or scaffold templates:\n" + "\n".join(found)


@pytest.mark.parametrize("line", [
    "from backend_sdk import _runtime",
    "x = backend_sdk._C._get_privateuse_backend_name(2)",
    "g = _sdk._C._default_generator(d)",
    "#include <backend_sdk/runtime/CurrentDevice.h>",
    "#include <backend_sdk/ops/detail/Geometry.h>",
    "sdk::detail::kernel_checks_enabled();",
    "from backend_sdk.distributed._ccl_backend import register_device_backends",
])
def test_the_check_catches_private_names(tmp_path, line):
    f = tmp_path / ("probe.cpp" if "::" in line or line.startswith("#") else "probe.py")
    f.write_text(line + "\n")
    assert private_uses(f, tmp_path)


def test_the_check_allows_public_names(tmp_path):
    f = tmp_path / "probe.py"
    f.write_text("import backend_sdk as _sdk\nfrom backend_sdk import library as _library\n"
                 "_sdk.utils.register_backend('x')\n_module = _sdk.accel\n")
    assert private_uses(f, tmp_path) == []
