"""``backend_sdk.utils``: backend renaming and other helpers for vendors."""
from __future__ import annotations

from .. import _C

__all__ = [
    "rename_privateuse1_backend", "rename_privateuse2_backend", "rename_privateuse3_backend",
    "get_privateuse1_backend_name", "include_paths", "library_paths",
]

import os as _os
from pathlib import Path as _Path

_PACKAGE_DIR = _Path(__file__).resolve().parent.parent


def include_paths() -> list[str]:
    """Directories to put on the include path to compile code against the SDK's C++ headers."""
    installed = _PACKAGE_DIR / "include"
    if installed.is_dir():
        return [str(installed)]
    source = _PACKAGE_DIR.parent / "csrc"  # a development checkout
    return [str(source)]


def library_paths() -> list[str]:
    """Directories holding libbackend_sdk.so, to link vendor code against."""
    return [str(_PACKAGE_DIR / "lib")]


def rename_privateuse1_backend(backend_name: str) -> None:
    """Renames PrivateUse1 to ``backend_name`` (e.g. "accel"), once per process.

    Afterwards "accel:0" parses as a device, "accel" is accepted wherever a
    dispatch key or device type is, and messages print the new name. Renaming
    again to the same name is a no-op; to another name, or to a built-in name
    (cpu, cuda, meta, ...), is an error.
    """
    _C._rename_privateuse_backend(1, backend_name)


def rename_privateuse2_backend(backend_name: str) -> None:
    """As rename_privateuse1_backend, for PrivateUse2."""
    _C._rename_privateuse_backend(2, backend_name)


def rename_privateuse3_backend(backend_name: str) -> None:
    """As rename_privateuse1_backend, for PrivateUse3."""
    _C._rename_privateuse_backend(3, backend_name)


def get_privateuse1_backend_name() -> str:
    """The current name of PrivateUse1 ("privateuseone" until renamed)."""
    return _C._get_privateuse_backend_name(1)
