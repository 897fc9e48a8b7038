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


class _Ops(types.ModuleType):
    """Namespace of namespaces: ``ops.aten``, ``ops.myops``."""

    def __init__(self) -> None:
        super().__init__("backend_sdk.ops")
        self._namespaces: dict[str, OpNamespace] = {}

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


ops = _Ops()
