"""Type aliases for annotations, as ``torch.types`` (``Number`` is what ``infer_schema`` reads as ``Scalar``)."""
from __future__ import annotations

from typing import Sequence, Union

from . import _C
from ._size import Size

__all__ = ["Device", "Number", "_device", "_dtype", "_size"]

Number = Union[int, float, bool]
"""A Python number: ``infer_schema`` maps it to the schema type ``Scalar``."""

_dtype = _C.dtype
_device = _C.device
_size = Union[Size, Sequence[int]]
Device = Union[_C.device, str, int, None]
"""Anything ``backend_sdk.device(...)`` accepts, or None."""
