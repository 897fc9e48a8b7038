"""``backend_sdk.ops``: every registered operator, as ``ops.<namespace>.<name>[.<overload>]``.

Like ``torch.ops``: ``ops.aten.add`` is an overload packet that picks the overload
matching its arguments; ``ops.aten.add.Tensor`` is one overload.
"""
from __future__ import annotations

import types
from typing import Any

from . import _C

__all__ = ["ops", "OpNamespace"]


class OpNamespace(types.ModuleType):
    """The operators of one namespace; attributes are created on first access."""

    def __init__(self, name: str) -> None:
        super().__init__(f"backend_sdk.ops.{name}")
        self.name = name

    def __getattr__(self, op_name: str) -> Any:
        if op_name.startswith("__"):
            raise AttributeError(op_name)
        packet = _C._get_op_packet(f"{self.name}::{op_name}")
        if packet is None:
            raise AttributeError(
                f"'{self.name}::{op_name}' is not a registered operator "
                f"(no schema was defined for it with def() / library.define)"
            )
        # Packets are cheap to rebuild; caching would keep a stale one after a
        # Library closes, so only cache operators of the built-in namespace.
        if self.name == "aten":
            setattr(self, op_name, packet)
        return packet


def _dlopen_in_group(path: str) -> tuple[Any, int, list[str]]:
    """The one kernel-library loader (Note [Extension library groups]): dlopens ``path`` while a fresh static
    library group is open, so the SDK_LIBRARY blocks it runs belong to that group, and returns ``(handle, group,
    registration errors)``. On OSError the group is undone and the OSError propagates. Callers word the errors:
    :meth:`_Ops.load_library` (PyTorch's), ``cpp_extension.load`` (its own types)."""
    import ctypes

    _C._take_static_registration_errors()  # only this library's errors below
    _C._begin_static_library_group()
    try:
        handle = ctypes.CDLL(path)
    except OSError:
        _C._reset_static_library_group(_C._end_static_library_group())
        raise
    group = _C._end_static_library_group()
    return handle, group, _C._take_static_registration_errors()


class _Ops(types.ModuleType):
    """Namespace of namespaces: ``ops.aten``, ``ops.myops``."""

    def __init__(self) -> None:
        super().__init__("backend_sdk.ops")
        self._namespaces: dict[str, OpNamespace] = {}
        #: Paths of the libraries loaded by :meth:`load_library` (``torch.ops.loaded_libraries``).
        self.loaded_libraries: set[str] = set()
        self._handles: list[Any] = []

    def __getattr__(self, name: str) -> OpNamespace:
        if name.startswith("__"):
            raise AttributeError(name)
        ns = self._namespaces.get(name)
        if ns is None:
            ns = self._namespaces[name] = OpNamespace(name)
            setattr(self, name, ns)  # later lookups skip __getattr__
        return ns

    def __delattr__(self, name: str) -> None:
        """``delattr(ops, ns)`` forgets the namespace object; the next lookup builds a fresh one."""
        self._namespaces.pop(name, None)
        super().__delattr__(name)


    def load_library(self, path: str) -> None:
        """Loads a shared library of kernels and operators (``torch.ops.load_library``).

        Its ``SDK_LIBRARY*`` blocks run as it is loaded; if any of them fails
        (a duplicate kernel, a bad schema), the blocks it registered are undone
        and RuntimeError lists every failure. OSError if the library cannot be
        loaded. Loading a path again does nothing. Loaded paths are in
        ``ops.loaded_libraries``.
        """
        import os

        path = os.path.realpath(os.fspath(path))
        if path in self.loaded_libraries:
            return
        try:
            handle, group, errors = _dlopen_in_group(path)
        except OSError as e:
            raise OSError(f"Could not load this library: {path}") from e  # PyTorch's words
        if errors:
            # The library stays mapped (its code may be referenced); its registrations are undone
            # (Note [Extension library groups]).
            _C._reset_static_library_group(group)
            raise RuntimeError(f"ops.load_library: registering the operators of {path} failed:\n"
                               + "\n".join(errors))
        self._handles.append(handle)
        self.loaded_libraries.add(path)


ops = _Ops()
