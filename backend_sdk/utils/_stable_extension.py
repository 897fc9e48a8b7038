"""Building extensions against the ABI-stable surface only (``cpp_extension.load(..., stable=True)``).

A stable extension sees only ``<backend_sdk/stable/...>`` and ``<backend_sdk/headeronly/...>``: its include
path is a directory holding links to just those two folders of the SDK's headers, so including any other
SDK header fails at compile time. It links libbackend_sdk for the C shim (``sdk_stable_*``), and after
linking, every undefined dynamic symbol of the library that libbackend_sdk defines must be a shim
function (checked with ``nm`` when it is installed): a C++ symbol of the SDK would tie the binary to the
SDK's C++ ABI. See docs/architecture.md, "The ABI-stable surface".
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile

__all__ = ["stable_include_paths", "stable_cflags", "check_stable_symbols", "sdk_cxx_symbols_used"]

#: Hidden visibility: a stable extension's inline copies of header-only code never interpose the SDK's.
_STABLE_CFLAGS = ["-fvisibility=hidden", "-fvisibility-inlines-hidden"]


def _sdk_include_dir() -> str:
    from . import include_paths

    for d in include_paths():
        if os.path.isfile(os.path.join(d, "backend_sdk", "stable", "c", "shim.h")):
            return d
    raise RuntimeError("the SDK's headers have no backend_sdk/stable/c/shim.h: this SDK has no stable surface")


def stable_include_paths(root: str | None = None) -> list[str]:
    """The include directory of stable builds: ``<root>/_stable_include/<hash>/backend_sdk/{stable,headeronly}``
    as links into the SDK's headers (created once, atomically; ``root`` defaults to the JIT build root)."""
    from .cpp_extension import get_default_build_root

    sdk_dir = _sdk_include_dir()
    tag = hashlib.sha256(sdk_dir.encode()).hexdigest()[:16]
    base = os.path.join(root or get_default_build_root(), "_stable_include")
    final = os.path.join(base, tag)
    if not os.path.isdir(os.path.join(final, "backend_sdk", "stable")):
        os.makedirs(base, exist_ok=True)
        tmp = tempfile.mkdtemp(dir=base, prefix=".tmp.")
        os.makedirs(os.path.join(tmp, "backend_sdk"))
        for sub in ("stable", "headeronly"):
            os.symlink(os.path.join(sdk_dir, "backend_sdk", sub), os.path.join(tmp, "backend_sdk", sub))
        try:
            os.rename(tmp, final)
        except OSError:  # another process made it first
            shutil.rmtree(tmp, ignore_errors=True)
    return [final]


def stable_cflags() -> list[str]:
    """Compiler flags a stable build adds."""
    return list(_STABLE_CFLAGS)


def _dynamic_symbols(path: str, undefined: bool) -> set[str] | None:
    nm = shutil.which("nm")
    if nm is None:
        return None
    flag = "--undefined-only" if undefined else "--defined-only"
    out = subprocess.run([nm, "-D", flag, path], capture_output=True, text=True)
    if out.returncode != 0:
        return None
    names = set()
    for line in out.stdout.splitlines():
        parts = line.split()
        if parts:
            names.add(parts[-1].split("@")[0])
    return names


def sdk_cxx_symbols_used(library: str) -> list[str] | None:
    """The symbols ``library`` takes from libbackend_sdk that are not C shim functions (sorted, mangled);
    None when ``nm`` is not available."""
    from . import library_paths

    sdk = os.path.join(library_paths()[0], "libbackend_sdk.so")
    undefined = _dynamic_symbols(library, undefined=True)
    defined = _dynamic_symbols(sdk, undefined=False)
    if undefined is None or defined is None:
        return None
    return sorted(s for s in undefined & defined if not s.startswith("sdk_stable_"))


def check_stable_symbols(name: str, library: str) -> None:
    """RuntimeError naming the symbols when a stable build uses libbackend_sdk's C++ ABI."""
    bad = sdk_cxx_symbols_used(library)
    if bad:
        raise RuntimeError(
            f"Error building extension '{name}': it was built with stable=True but uses symbols of "
            f"libbackend_sdk that are not part of the stable C shim: {', '.join(bad[:10])}"
            + (" ..." if len(bad) > 10 else "")
            + ". Use only <backend_sdk/stable/...> and the header-only APIs (headeronly/header_only_apis.txt).")
