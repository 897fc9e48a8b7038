"""PyTorch-style ``repr`` of tensors: ``tensor([1., 2.], device='accel:0')``."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ._tensor import Tensor

_THRESHOLD = 1000  # summarise tensors with more elements than this
_EDGE_ITEMS = 3
_LINE_WIDTH = 80


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


def _edges(values: np.ndarray) -> np.ndarray:
    """``values`` with only the first and last _EDGE_ITEMS entries kept along every dimension."""
    for axis in range(values.ndim):
        if values.shape[axis] > 2 * _EDGE_ITEMS:
            head = np.take(values, range(_EDGE_ITEMS), axis=axis)
            tail = np.take(values, range(values.shape[axis] - _EDGE_ITEMS, values.shape[axis]), axis=axis)
            values = np.concatenate([head, tail], axis=axis)
    return values


def _format_array(values: np.ndarray, fmt, width: int, indent: int, summarise: bool) -> str:
    """Nested brackets as PyTorch prints them; with summarise, only edge rows are formatted."""
    if values.ndim == 0:
        return fmt(values.item()).rjust(width)
    n = values.shape[0]
    cut = summarise and n > 2 * _EDGE_ITEMS
    shown = list(range(_EDGE_ITEMS)) + [-1] + list(range(n - _EDGE_ITEMS, n)) if cut else list(range(n))
    if values.ndim == 1:
        items = [" ..." if i < 0 else fmt(values[i].item()).rjust(width) for i in shown]
        per_line = max(1, (_LINE_WIDTH - indent) // (width + 2))  # PyTorch wraps rows at 80 columns
        lines = [", ".join(items[k:k + per_line]) for k in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    rows = ["..." if i < 0 else _format_array(values[i], fmt, width, indent + 1, summarise) for i in shown]
    separator = "," + "\n" * (values.ndim - 1) + " " * (indent + 1)
    return "[" + separator.join(rows) + "]"


def tensor_repr(t: "Tensor") -> str:
    from . import _C

    batched = _C._unwrap_batched(t)
    if batched is not None:  # inside vmap (Note [Batched tensors]): PyTorch's BatchedTensor repr
        value = "\n".join("    " + line for line in tensor_repr(batched[0]).splitlines())
        return f"BatchedTensor(lvl={batched[2]}, bdim={batched[1]}, value=\n{value}\n)"
    suffixes = []
    device = t.device
    if device.type != "cpu":
        suffixes.append(f"device='{device}'")
    default_float = _C._get_default_dtype()
    implied = t.dtype in (default_float, _C.int64, _C.bool)
    if t.is_meta:
        body = "..."
        suffixes.append(f"size={tuple(t.shape)}")
    elif t.numel() == 0:
        body = "[]"
        if t.dim() != 1:
            suffixes.append(f"size={tuple(t.shape)}")
    else:
        values = (t if t.is_cpu else t.cpu()).numpy()  # a device tensor is copied to the host first
        if values.dtype.kind == "V" or str(values.dtype) == "bfloat16":
            values = values.astype(np.float32)
        summarise = values.size > _THRESHOLD
        shown = (_edges(values) if summarise else values).reshape(-1)
        fmt = _formatter(shown)
        width = max(len(fmt(v)) for v in shown.tolist())
        body = _format_array(values, fmt, width, len("tensor("), summarise)
    if not implied:
        suffixes.append(f"dtype=backend_sdk.{t.dtype.name}")
    return "tensor(" + ", ".join([body] + suffixes) + ")"
