"""The pytrees vmap reads ``in_dims``/``out_dims`` and inputs/outputs as (PyTorch's torch.utils._pytree subset).

Containers are tuples, lists, dicts (in key order) and namedtuples; everything else is a leaf.
A spec prints like PyTorch's ``TreeSpec`` closely enough for the error messages that quote it.
"""
from __future__ import annotations

from typing import Any

__all__ = ["TreeSpec", "LeafSpec", "tree_flatten", "tree_unflatten", "broadcast_to_and_flatten"]


class TreeSpec:
    """The structure of a pytree: the container type, its context (dict keys) and its children's specs."""

    __slots__ = ("type", "context", "children")

    def __init__(self, type_: Any, context: Any, children: list["TreeSpec"]) -> None:
        self.type, self.context, self.children = type_, context, children

    @property
    def num_leaves(self) -> int:
        return sum(c.num_leaves for c in self.children)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TreeSpec) and self.type is other.type and self.context == other.context
                and self.children == other.children)

    def __repr__(self) -> str:
        name = getattr(self.type, "__name__", str(self.type))
        return f"TreeSpec({name}, {self.context}, [{', '.join(map(repr, self.children))}])"


class LeafSpec(TreeSpec):
    """The spec of a leaf."""

    def __init__(self) -> None:
        super().__init__(None, None, [])

    @property
    def num_leaves(self) -> int:
        return 1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LeafSpec)

    def __repr__(self) -> str:
        return "*"


def _is_namedtuple(obj: Any) -> bool:
    return isinstance(obj, tuple) and hasattr(type(obj), "_fields")


def _children(obj: Any) -> tuple[Any, Any, list] | None:
    if _is_namedtuple(obj):
        return type(obj), None, list(obj)
    if isinstance(obj, (tuple, list)):
        return type(obj), None, list(obj)
    if isinstance(obj, dict):
        keys = list(obj.keys())
        return dict, keys, [obj[k] for k in keys]
    return None


def tree_flatten(tree: Any) -> tuple[list, TreeSpec]:
    """(leaves, spec) of a pytree."""
    leaves: list = []

    def go(obj: Any) -> TreeSpec:
        node = _children(obj)
        if node is None:
            leaves.append(obj)
            return LeafSpec()
        type_, context, kids = node
        return TreeSpec(type_, context, [go(k) for k in kids])

    spec = go(tree)
    return leaves, spec


def tree_unflatten(leaves: list, spec: TreeSpec) -> Any:
    """The pytree of ``spec`` with ``leaves`` in order."""
    it = iter(leaves)

    def go(s: TreeSpec) -> Any:
        if isinstance(s, LeafSpec):
            return next(it)
        kids = [go(c) for c in s.children]
        if s.type is dict:
            return dict(zip(s.context, kids))
        if s.type is list:
            return kids
        if s.type is tuple:
            return tuple(kids)
        return s.type._make(kids)  # namedtuple or a torch.return_types-style result

    return go(spec)


def broadcast_to_and_flatten(prefix: Any, spec: TreeSpec) -> list | None:
    """``prefix`` (a tree that is a prefix of ``spec``'s structure) broadcast to one value per leaf, or None if
    it does not fit (PyTorch's ``_broadcast_to_and_flatten``)."""
    out: list = []

    def go(p: Any, s: TreeSpec) -> bool:
        node = _children(p)
        if node is None:  # a leaf of the prefix covers the whole subtree
            out.extend([p] * s.num_leaves)
            return True
        if isinstance(s, LeafSpec):
            return False
        type_, context, kids = node
        same_kind = (type_ is s.type or (issubclass(type_, tuple) and issubclass(s.type, tuple)
                                         and not _is_namedtuple(p) and s.type is tuple))
        if not same_kind or context != s.context or len(kids) != len(s.children):
            return False
        return all(go(k, c) for k, c in zip(kids, s.children))

    return out if go(prefix, spec) else None
