"""Layouts and memory formats as objects (``backend_sdk.strided``, ``backend_sdk.channels_last``, ...).

They are PyTorch's ``torch.layout`` / ``torch.memory_format`` values: singletons
with PyTorch's reprs (spelled ``backend_sdk.``), usable wherever an operator
schema takes a ``Layout`` or ``MemoryFormat`` (they convert to PyTorch's enum
number through ``__index__``; Note [Memory formats] in
csrc/backend_sdk/ops/detail/MemoryFormat.h gives the numbers and what each
format means for strides).
"""
from __future__ import annotations

from typing import Any, Sequence

__all__ = [
    "layout", "memory_format", "strided", "contiguous_format", "preserve_format", "channels_last",
    "channels_last_3d", "suggest_memory_format", "memory_format_strides",
]


class _EnumValue:
    __slots__ = ("_name", "_value")

    def __init__(self, name: str, value: int) -> None:
        self._name = name
        self._value = value

    def __index__(self) -> int:
        return self._value

    def __repr__(self) -> str:
        return f"backend_sdk.{self._name}"

    def __reduce__(self) -> str:
        return self._name  # pickles as the module-level singleton

    def __copy__(self) -> "_EnumValue":
        return self

    def __deepcopy__(self, memo: Any) -> "_EnumValue":
        return self


class layout(_EnumValue):
    """A tensor layout (``torch.layout``); the SDK has one, :data:`strided`."""

    __module__ = "backend_sdk"
    __slots__ = ()


class memory_format(_EnumValue):
    """A memory format (``torch.memory_format``): the order in which a tensor's strides lay out its dims."""

    __module__ = "backend_sdk"
    __slots__ = ()


strided = layout("strided", 0)
contiguous_format = memory_format("contiguous_format", 0)
preserve_format = memory_format("preserve_format", 1)
channels_last = memory_format("channels_last", 2)
channels_last_3d = memory_format("channels_last_3d", 3)

_FORMATS = (contiguous_format, preserve_format, channels_last, channels_last_3d)


def _format_of(value: Any, what: str) -> memory_format:
    if isinstance(value, memory_format):
        return value
    raise TypeError(f"{what}: memory_format must be a backend_sdk.memory_format, not {type(value).__name__}")


def memory_format_strides(sizes: Sequence[int], fmt: memory_format, what: str) -> list[int]:
    """Strides of a fresh tensor of ``sizes`` in ``fmt`` (Note [Memory formats]); RuntimeError with PyTorch's
    text for a rank the format does not fit, or for preserve_format."""
    n = len(sizes)
    if fmt is contiguous_format:
        strides, acc = [0] * n, 1
        for d in range(n - 1, -1, -1):
            strides[d] = acc
            acc *= max(sizes[d], 1)
        return strides
    if fmt is preserve_format:
        raise RuntimeError(f"{what}: unsupported memory format Preserve")
    rank = 4 if fmt is channels_last else 5
    if n != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt._name} format")
    strides, acc = [0] * n, 1
    for d in [1] + list(range(n - 1, 1, -1)) + [0]:
        strides[d] = acc
        acc *= max(sizes[d], 1)
    return strides


def _is_contiguous_as(sizes: Sequence[int], strides: Sequence[int], fmt: memory_format) -> bool:
    expected = memory_format_strides(sizes, fmt, "is_contiguous")
    return all(s == e or size == 1 for size, s, e in zip(sizes, strides, expected))


def suggest_memory_format(tensor: Any) -> memory_format:
    """The memory format a tensor's strides follow: channels_last(_3d) for a tensor laid out so (and not also
    plainly contiguous), else contiguous_format (PyTorch's ``suggest_memory_format``)."""
    sizes, strides = list(tensor.shape), list(tensor.stride())
    if not tensor.is_contiguous():
        if len(sizes) == 4 and _is_contiguous_as(sizes, strides, channels_last):
            return channels_last
        if len(sizes) == 5 and _is_contiguous_as(sizes, strides, channels_last_3d):
            return channels_last_3d
    return contiguous_format


def _non_overlapping_and_dense(sizes: Sequence[int], strides: Sequence[int]) -> bool:
    dims = sorted((d for d in range(len(sizes)) if sizes[d] > 1), key=lambda d: strides[d])
    expected = 1
    for d in dims:
        if strides[d] != expected:
            return False
        expected *= sizes[d]
    return True


def like_strides(tensor: Any, fmt: memory_format, what: str) -> list[int]:
    """Strides of a ``*_like`` result of ``tensor`` in ``fmt``: preserve_format keeps a non-overlapping and
    dense tensor's strides, else takes its suggested format (PyTorch's empty_like)."""
    sizes = list(tensor.shape)
    if fmt is preserve_format:
        strides = list(tensor.stride())
        if tensor.numel() > 0 and _non_overlapping_and_dense(sizes, strides):
            return strides
        fmt = suggest_memory_format(tensor)
    return memory_format_strides(sizes, fmt, what)
