"""The PEP 517 build backend of backend_sdk: scikit-build-core, keeping the build directory.

Note [Build directory reuse]
scikit-build-core records the environment of the last build in ``build/<tag>/.skbuild-info.json``
and, when the next build runs with a scikit-build-core from another path, deletes ``CMakeCache.txt``
and ``CMakeFiles/`` (all object files). Every isolated ``pip install`` runs in a new temporary
environment, so the README's second command (``pip install ".[test]"``) would recompile everything
the first one just compiled. The record exists because a cache can point into the old environment;
ours does not depend on it: CMAKE_MAKE_PROGRAM is passed again on each build, and pybind11 is
copied to a stable place in the build directory (cmake/StablePybind11.cmake). So before delegating,
this backend points the record at the running scikit-build-core when only that path changed (same
source directory, same scikit-build-core version); any other difference still clears the cache.
"""
from __future__ import annotations

import json
from pathlib import Path

from scikit_build_core import __version__ as _skbuild_version
from scikit_build_core import build as _build
from scikit_build_core.build import *  # noqa: F401,F403 (the PEP 517 hooks we do not wrap)
from scikit_build_core.build import __all__ as _hooks

__all__ = list(_hooks)

_SOURCE = Path(__file__).resolve().parents[2]


def _keep_build_directories() -> None:
    """Rewrites the skbuild_path of build/*/.skbuild-info.json (Note [Build directory reuse])."""
    import scikit_build_core.cmake as _cmake

    current = str(_cmake.DIR)
    for record in (_SOURCE / "build").glob("*/.skbuild-info.json"):
        try:
            info = json.loads(record.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # unreadable: scikit-build-core clears the cache itself
        if not isinstance(info, dict) or info.get("skbuild_path") == current:
            continue
        if info.get("source_dir") != str(_SOURCE) or info.get("skbuild_version") != _skbuild_version:
            continue
        info["skbuild_path"] = current
        record.write_text(json.dumps(info, indent=2), encoding="utf-8")


def build_wheel(wheel_directory: str, config_settings: dict | None = None,
                metadata_directory: str | None = None) -> str:
    """PEP 517 build_wheel: scikit-build-core's, reusing the build directory."""
    _keep_build_directories()
    return _build.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(wheel_directory: str, config_settings: dict | None = None,
                   metadata_directory: str | None = None) -> str:
    """PEP 660 build_editable: scikit-build-core's, reusing the build directory."""
    _keep_build_directories()
    return _build.build_editable(wheel_directory, config_settings, metadata_directory)
