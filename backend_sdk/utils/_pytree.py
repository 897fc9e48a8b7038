"""Nested containers as trees of leaves, as ``torch.utils._pytree``.

A *pytree* is a leaf or a container of pytrees. The containers known here are tuple,
list, dict, ``collections.OrderedDict``, ``collections.defaultdict``, ``collections.deque``,
namedtuples, ``None`` (a node with no children, as in PyTorch) and every type added with
``register_pytree_node``. ``tree_flatten`` turns a tree into its leaves (left to right,
dict values in insertion order) and a ``TreeSpec`` describing the structure;
``tree_unflatten`` rebuilds it. Everything else (tensors, numbers, strings) is a leaf.

``__torch_dispatch__`` handlers use ``tree_map`` / ``tree_map_only`` to unwrap and rewrap the
tensors in an operator's ``args`` and ``kwargs`` (see backend_sdk/utils/_python_dispatch.py).
"""
from __future__ import annotations

import collections
import dataclasses
from typing import Any, Callable, Iterable, NamedTuple

__all__ = [
    "LeafSpec",
    "PyTree",
    "TreeSpec",
    "register_pytree_node",
    "tree_all",
    "tree_any",
    "tree_flatten",
    "tree_leaves",
    "tree_map",
    "tree_map_",
    "tree_map_only",
    "tree_structure",
    "tree_unflatten",
]

PyTree = Any
Context = Any
FlattenFunc = Callable[[PyTree], "tuple[list[Any], Context]"]
UnflattenFunc = Callable[[Iterable[Any], Context], PyTree]


class _NodeDef(NamedTuple):
    flatten: FlattenFunc
    unflatten: UnflattenFunc


SUPPORTED_NODES: dict[type, _NodeDef] = {}


def register_pytree_node(
    cls: type,
    flatten_fn: FlattenFunc,
    unflatten_fn: UnflattenFunc,
    *,
    serialized_type_name: str | None = None,
    to_dumpable_context: Any = None,
    from_dumpable_context: Any = None,
    flatten_with_keys_fn: Any = None,
) -> None:
    """Makes ``cls`` a container: ``flatten_fn(node) -> (children, context)`` and
    ``unflatten_fn(children, context) -> node``. Registering a type twice is a ValueError, as PyTorch's.

    The serialization and key-path arguments are accepted for PyTorch compatibility and unused.
    """
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    SUPPORTED_NODES[cls] = _NodeDef(flatten_fn, unflatten_fn)


def _is_namedtuple_type(cls: type) -> bool:
    return issubclass(cls, tuple) and hasattr(cls, "_fields") and isinstance(getattr(cls, "_fields"), tuple)


def _node_type(node: Any) -> type | None:
    """The registered container type node is flattened as, or None for a leaf."""
    cls = type(node)
    if cls in SUPPORTED_NODES:
        return cls
    if _is_namedtuple_type(cls):
        return _NamedTupleMarker
    return None


class _NamedTupleMarker:
    """Stands for every namedtuple type (the context is the concrete type)."""


def _dict_flatten(d: dict) -> tuple[list[Any], Any]:
    return list(d.values()), list(d.keys())


def _ordered_dict_flatten(d: collections.OrderedDict) -> tuple[list[Any], Any]:
    return list(d.values()), list(d.keys())


def _defaultdict_flatten(d: collections.defaultdict) -> tuple[list[Any], Any]:
    return list(d.values()), (d.default_factory, list(d.keys()))


def _deque_flatten(d: collections.deque) -> tuple[list[Any], Any]:
    return list(d), d.maxlen


register_pytree_node(tuple, lambda t: (list(t), None), lambda xs, _: tuple(xs))
register_pytree_node(list, lambda t: (list(t), None), lambda xs, _: list(xs))
register_pytree_node(dict, _dict_flatten, lambda xs, keys: dict(zip(keys, xs)))
register_pytree_node(collections.OrderedDict, _ordered_dict_flatten,
                     lambda xs, keys: collections.OrderedDict(zip(keys, xs)))
register_pytree_node(collections.defaultdict, _defaultdict_flatten,
                     lambda xs, ctx: collections.defaultdict(ctx[0], zip(ctx[1], xs)))
register_pytree_node(collections.deque, _deque_flatten, lambda xs, maxlen: collections.deque(xs, maxlen=maxlen))
register_pytree_node(type(None), lambda _: ([], None), lambda _xs, _ctx: None)
# Rebuilt with _make: namedtuples have it, and so do the structseq-like backend_sdk.return_types (built from one sequence).
SUPPORTED_NODES[_NamedTupleMarker] = _NodeDef(lambda t: (list(t), type(t)), lambda xs, cls: cls._make(xs))


@dataclasses.dataclass(eq=True, repr=False)
class TreeSpec:
    """The structure of a pytree: the container type, its context (dict keys, namedtuple type...)
    and one spec per child. A leaf's spec is ``LeafSpec()``."""

    type: Any
    context: Context
    children_specs: list["TreeSpec"]

    def __post_init__(self) -> None:
        self.num_nodes = 1 + sum(c.num_nodes for c in self.children_specs)
        self.num_leaves = sum(c.num_leaves for c in self.children_specs)
        self.num_children = len(self.children_specs)

    def is_leaf(self) -> bool:
        """True for the spec of a single leaf."""
        return False

    def __repr__(self) -> str:
        name = self.context.__name__ if self.type is _NamedTupleMarker else getattr(self.type, "__name__", self.type)
        children = ", ".join(repr(c) for c in self.children_specs)
        return f"TreeSpec({name}, {self.context!r}, [{children}])"

    def unflatten(self, leaves: Iterable[Any]) -> PyTree:
        """The tree of this structure holding ``leaves`` (as ``tree_unflatten(leaves, self)``)."""
        leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(
                f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec refers to a pytree "
                f"that holds {self.num_leaves} items ({self})."
            )
        it = iter(leaves)
        return self._build(it)

    def _build(self, it: Any) -> PyTree:
        if self.is_leaf():
            return next(it)
        children = [c._build(it) for c in self.children_specs]
        return SUPPORTED_NODES[self.type].unflatten(children, self.context)


class LeafSpec(TreeSpec):
    """The spec of one leaf."""

    def __init__(self) -> None:
        super().__init__(None, None, [])
        self.num_nodes = 1
        self.num_leaves = 1
        self.num_children = 0

    def is_leaf(self) -> bool:
        return True

    def __repr__(self) -> str:
        return "*"


def _flatten(tree: PyTree, leaves: list[Any], is_leaf: Callable[[PyTree], bool] | None) -> TreeSpec:
    node_type = None if (is_leaf is not None and is_leaf(tree)) else _node_type(tree)
    if node_type is None:
        leaves.append(tree)
        return LeafSpec()
    children, context = SUPPORTED_NODES[node_type].flatten(tree)
    return TreeSpec(node_type, context, [_flatten(c, leaves, is_leaf) for c in children])


def tree_flatten(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> tuple[list[Any], TreeSpec]:
    """The leaves of ``tree`` (left to right) and its ``TreeSpec``. ``is_leaf(node)`` returning True
    stops the descent at that node."""
    leaves: list[Any] = []
    spec = _flatten(tree, leaves, is_leaf)
    return leaves, spec


def tree_unflatten(leaves: Iterable[Any], treespec: TreeSpec) -> PyTree:
    """The tree of structure ``treespec`` holding ``leaves``; ValueError if their number differs."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(
            f"tree_unflatten(leaves, treespec): Expected `treespec` to be instance of TreeSpec but got item of "
            f"type {type(treespec)}."
        )
    return treespec.unflatten(leaves)


def tree_leaves(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> list[Any]:
    """The leaves of ``tree``, left to right."""
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> TreeSpec:
    """The ``TreeSpec`` of ``tree``."""
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func: Callable[..., Any], tree: PyTree, *rests: PyTree,
             is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """A tree of the same structure with ``func(leaf, *corresponding leaves of rests)`` at each leaf.
    ``rests`` must have ``tree``'s structure (ValueError otherwise)."""
    leaves, spec = tree_flatten(tree, is_leaf)
    flat_rests = []
    for r in rests:
        r_leaves, r_spec = tree_flatten(r, is_leaf)
        if r_spec != spec:
            raise ValueError(f"tree_map: expected every tree to have the structure {spec}, got {r_spec}")
        flat_rests.append(r_leaves)
    return spec.unflatten(func(*xs) for xs in zip(leaves, *flat_rests))


def tree_map_(func: Callable[..., Any], tree: PyTree, *rests: PyTree,
              is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """Calls ``func`` on every leaf for its side effects; returns ``tree``."""
    tree_map(func, tree, *rests, is_leaf=is_leaf)
    return tree


def _type_filter(type_or_types: type | tuple[type, ...], func: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def wrapped(x: Any) -> Any:
        return func(x) if isinstance(x, type_or_types) else x

    return wrapped


def tree_map_only(type_or_types: type | tuple[type, ...], func: Callable[[Any], Any], tree: PyTree,
                  is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """As ``tree_map``, applying ``func`` only to leaves that are instances of ``type_or_types``."""
    return tree_map(_type_filter(type_or_types, func), tree, is_leaf=is_leaf)


def tree_any(pred: Callable[[Any], bool], tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    """True if ``pred`` holds for some leaf."""
    return any(map(pred, tree_leaves(tree, is_leaf)))


def tree_all(pred: Callable[[Any], bool], tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    """True if ``pred`` holds for every leaf."""
    return all(map(pred, tree_leaves(tree, is_leaf)))
