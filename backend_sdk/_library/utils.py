"""Helpers of torch._library.utils that code written against torch.library reaches for."""
from __future__ import annotations

from typing import Any

from .._tags import Tag

__all__ = ["get_layout_constraint_tag", "is_builtin", "tags_by_priority"]

#: The layout-constraint tags, strongest first (PyTorch's order).
tags_by_priority = [Tag.needs_exact_strides, Tag.needs_contiguous_strides, Tag.needs_fixed_stride_order,
                    Tag.flexible_layout]

#: What an operator outside aten gets when it has no layout tag (PyTorch's
#: torch._functorch.config.custom_op_default_layout_constraint default).
CUSTOM_OP_DEFAULT_LAYOUT_CONSTRAINT = Tag.needs_exact_strides


def is_builtin(op: Any) -> bool:
    """True for an aten operator."""
    return str(getattr(op, "__name__", "")).startswith("aten::")


def get_layout_constraint_tag(fn: Any, *, with_default: bool = True) -> Tag | None:
    """The layout constraint an operator declares through its tags (the strongest one), as PyTorch's.

    Without one: ``Tag.flexible_layout`` for aten operators and ``Tag.needs_exact_strides`` for the others
    when ``with_default``, else None.
    """
    tags = fn.tags
    for tag in tags_by_priority:
        if tag in tags:
            return tag
    if not with_default:
        return None
    return Tag.flexible_layout if is_builtin(fn) else CUSTOM_OP_DEFAULT_LAYOUT_CONSTRAINT
