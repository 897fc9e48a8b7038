"""The top-level autocast state functions (torch's names): ``backend_sdk.get_autocast_dtype(device_type)`` etc.

Thin typed wrappers over ``backend_sdk._C`` (csrc/python/PyAutocast.cpp); the state is per thread
(Note [Autocast regions], backend_sdk/amp/autocast_mode.py). ``"cuda"``, which code written for
PyTorch names, is a device type this SDK does not have: it reads as disabled, float16.
"""

from __future__ import annotations

from typing import Optional

from . import _C

__all__ = ["is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype",
           "is_autocast_cache_enabled", "set_autocast_cache_enabled", "clear_autocast_cache",
           "autocast_increment_nesting", "autocast_decrement_nesting"]


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    """Whether autocast is enabled for ``device_type`` on this thread."""
    if device_type == "cuda":
        return False
    return bool(_C.is_autocast_enabled(device_type))


def set_autocast_enabled(device_type: str, enabled: bool) -> None:
    """Enables or disables autocast for ``device_type`` on this thread (the autocast region does this)."""
    _C.set_autocast_enabled(device_type, bool(enabled))


def get_autocast_dtype(device_type: str) -> Optional[_C.dtype]:
    """The lower-precision dtype of ``device_type``'s autocast (cpu: bfloat16, other backends: float16)."""
    if device_type == "cuda":
        return _C.float16
    return _C.get_autocast_dtype(device_type)


def set_autocast_dtype(device_type: str, dtype: _C.dtype) -> None:
    """Sets the lower-precision dtype of ``device_type``'s autocast on this thread."""
    _C.set_autocast_dtype(device_type, dtype)


def is_autocast_cache_enabled() -> bool:
    """Whether autocast caches weight casts (Note [Autocast cache])."""
    return bool(_C.is_autocast_cache_enabled())


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Enables or disables the autocast weight-cast cache on this thread."""
    _C.set_autocast_cache_enabled(bool(enabled))


def clear_autocast_cache() -> None:
    """Drops every cached weight cast (done when the outermost autocast region exits)."""
    _C.clear_autocast_cache()


def autocast_increment_nesting() -> int:
    """Enters one autocast nesting level; returns the new depth."""
    return int(_C.autocast_increment_nesting())


def autocast_decrement_nesting() -> int:
    """Leaves one autocast nesting level; returns the new depth (0: outermost region left)."""
    return int(_C.autocast_decrement_nesting())
