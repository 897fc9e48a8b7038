"""Operator tags (``backend_sdk.Tag``, ``OpOverload.tags``), as ``torch.Tag``.

Note [Operator tags]
~~~~~~~~~~~~~~~~~~~~
``Tag`` has the members of PyTorch 2.13's ``aten/src/ATen/native/tags.yaml``.
The tags of an operator live here, keyed by the overload's qualified name
("aten::add.Tensor", "ns::op" for a default overload): the aten operators'
come from ``_aten_tags.ATEN_TAGS`` (generated once by tools/gen_aten_tags.py
from PyTorch's native_functions.yaml facts), the others from
``Library.define(..., tags=)`` / ``library.define`` / ``custom_op``.
``OpOverload.tags`` (a C getter) asks ``tags_of`` through
``_C._set_tags_provider``. A definition's tags are dropped when the Library
that defined it is destroyed, so a later definition under the same name
starts with its own.
"""
from __future__ import annotations

import enum
import threading
from typing import Any, Iterable

__all__ = ["Tag"]


class Tag(enum.Enum):
    """A property of an operator that tools may rely on (``backend_sdk.Tag.pointwise``), as ``torch.Tag``."""

    core = 0
    cudagraph_unsafe = 1
    data_dependent_output = 2
    dynamic_output_shape = 3
    flexible_layout = 4
    generated = 5
    inplace = 6
    inplace_view = 7
    maybe_aliasing_or_mutating = 8
    needs_contiguous_strides = 9
    needs_exact_strides = 10
    needs_fixed_stride_order = 11
    nondeterministic_bitwise = 12
    nondeterministic_seeded = 13
    out = 14
    pointwise = 15
    pt2_compliant_tag = 16
    reduction = 17
    view_copy = 18

    def __repr__(self) -> str:
        return f"<Tag.{self.name}: {self.value}>"

    def __str__(self) -> str:
        return f"Tag.{self.name}"


_lock = threading.Lock()
_tags: dict[str, tuple[Tag, ...]] = {}


def _key(name: str) -> str:
    return name[: -len(".default")] if name.endswith(".default") else name


def normalize_tags(tags: Any, what: str) -> tuple[Tag, ...]:
    """One Tag or an iterable of Tags -> a tuple without duplicates; TypeError naming ``what`` otherwise."""
    if tags is None:
        return ()
    if isinstance(tags, Tag):
        return (tags,)
    if isinstance(tags, (str, bytes)) or not isinstance(tags, Iterable):
        raise TypeError(f"{what}: tags must be a backend_sdk.Tag or a sequence of them, got {type(tags).__name__}")
    out: list[Tag] = []
    for t in tags:
        if not isinstance(t, Tag):
            raise TypeError(
                f"{what}: tags must be backend_sdk.Tag values (e.g. backend_sdk.Tag.pointwise), got "
                f"{type(t).__name__} {t!r}"
            )
        if t not in out:
            out.append(t)
    return tuple(out)


def set_tags(name: str, tags: Iterable[Tag]) -> None:
    with _lock:
        _tags[_key(name)] = tuple(tags)


def drop_tags(name: str) -> None:
    with _lock:
        _tags.pop(_key(name), None)


def tags_of(name: str) -> list[Tag]:
    """The tags of the overload ``name`` (a new list each call, as PyTorch's)."""
    key = _key(name)
    found = _tags.get(key)
    if found is None and key.startswith("aten::"):
        from ._aten_tags import ATEN_TAGS

        found = tuple(Tag[t] for t in ATEN_TAGS.get(key[len("aten::"):], ()))
    return list(found or ())


def _install() -> None:
    from . import _C

    _C._set_tags_provider(tags_of)
