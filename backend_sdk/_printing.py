"""PyTorch-style ``repr`` of tensors: ``tensor([1., 2.], device='accel:0')``."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ._tensor import Tensor

_THRESHOLD = 1000  # summarise tensors with more elements than this
_EDGE_ITEMS = 3


def _float_formatter(values: np.ndarray):
    finite = values[np.isfinite(values)]
    if finite.size and np.all(finite == np.round(finite)) and np.max(np.abs(finite)) < 1e8:
        return lambda v: _special(v) or f"{v:.0f}."
    if finite.size:
        nonzero = np.abs(finite[finite != 0])
        if nonzero.size and (nonzero.max() >= 1e8 or nonzero.min() < 1e-4 or nonzero.max() / nonzero.min() > 1e3):
            return lambda v: _special(v) or f"{v:.4e}"
    return lambda v: _special(v) or f"{v:.4f}"


def _special(v: float) -> str:
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    return ""


def _formatter(values: np.ndarray):
    if values.dtype == np.bool_:
        return lambda v: "True" if v else "False"
    if values.dtype.kind in "iu":
        return lambda v: str(int(v))
    return _float_formatter(values.astype(np.float64))


def _summarised(values: np.ndarray) -> np.ndarray:
    """The elements that are printed (edges only for large tensors), for width and format."""
    if values.size <= _THRESHOLD or values.ndim == 0:
        return values.reshape(-1)
    parts = []
    for axis_slice in (slice(0, _EDGE_ITEMS), slice(-_EDGE_ITEMS, None)):
        parts.append(values[(axis_slice,)].reshape(-1))
    return np.concatenate(parts)


def _format_array(values: np.ndarray, fmt, width: int, indent: int, summarise: bool) -> str:
    if values.ndim == 0:
        return fmt(values.item()).rjust(width)
    if values.ndim == 1:
        items = [fmt(v).rjust(width) for v in (values.tolist() if values.dtype.kind != "f" else values)]
        if summarise and len(items) > 2 * _EDGE_ITEMS:
            items = items[:_EDGE_ITEMS] + [" ..."] + items[-_EDGE_ITEMS:]
        return "[" + ", ".join(items) + "]"
    rows = [_format_array(values[i], fmt, width, indent + 1, summarise) for i in range(values.shape[0])]
    if summarise and len(rows) > 2 * _EDGE_ITEMS:
        rows = rows[:_EDGE_ITEMS] + ["..."] + rows[-_EDGE_ITEMS:]
    separator = "," + "\n" * (values.ndim - 1) + " " * (indent + 1)
    return "[" + separator.join(rows) + "]"


def tensor_repr(t: "Tensor") -> str:
    from . import _C

    suffixes = []
    device = t.device
    if device.type != "cpu":
        suffixes.append(f"device='{device}'")
    default_float = _C._get_default_dtype()
    implied = t.dtype in (default_float, _C.int64, _C.bool)
    if t.is_meta:
        body = "..."
        suffixes.append(f"size={tuple(t.shape)}")
    elif not t.is_cpu:
        return "tensor(" + ", ".join([f"<{t.numel()} elements in device memory>"] + suffixes) + ")"
    elif t.numel() == 0:
        body = "[]"
        if t.dim() != 1:
            suffixes.append(f"size={tuple(t.shape)}")
    else:
        values = t.numpy()
        if values.dtype.kind == "V" or str(values.dtype) == "bfloat16":
            values = values.astype(np.float32)
        summarise = values.size > _THRESHOLD
        shown = _summarised(values)
        fmt = _formatter(shown)
        width = max(len(fmt(v)) for v in shown)
        body = _format_array(values, fmt, width, len("tensor("), summarise)
    if not implied:
        suffixes.append(f"dtype=backend_sdk.{t.dtype.name}")
    return "tensor(" + ", ".join([body] + suffixes) + ")"
