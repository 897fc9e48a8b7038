"""``default_collate`` / ``default_convert`` (``torch.utils.data._utils.collate``)."""
from __future__ import annotations

import collections.abc
import re
from typing import Any, Callable, Sequence

import numpy as np

from ... import _C

__all__ = ["default_collate", "default_convert"]

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
)
_np_str_obj_array_pattern = re.compile(r"[SaUO]")


def _factories() -> Any:
    from ... import _factories

    return _factories


def default_convert(data: Any) -> Any:
    """numpy arrays and numbers become tensors, recursively through mappings and sequences (no batching)."""
    f = _factories()
    if isinstance(data, _C.TensorBase):
        return data
    if isinstance(data, np.ndarray) and _np_str_obj_array_pattern.search(data.dtype.str) is None:
        return f.from_numpy(np.ascontiguousarray(data))
    if isinstance(data, np.generic) and not isinstance(data, (np.str_, np.bytes_)):
        return f.tensor(data.item())
    if isinstance(data, collections.abc.Mapping):
        try:
            return type(data)({key: default_convert(data[key]) for key in data})  # type: ignore[call-arg]
        except TypeError:
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            return type(data)([default_convert(d) for d in data])  # type: ignore[call-arg]
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def default_collate(batch: Sequence[Any]) -> Any:
    """Stacks a list of samples into a batch, as PyTorch's: tensors -> stack on a new dim 0, numpy
    arrays -> tensors stacked, floats -> float64 tensor, ints -> int64 tensor, strings stay a list,
    mappings/namedtuples/sequences are collated element-wise (tuples give lists)."""
    f = _factories()
    elem = batch[0]
    elem_type = type(elem)
    if isinstance(elem, _C.TensorBase):
        from ..._ops import ops

        return ops.aten.stack(list(batch), 0)
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_", "bytes_"):
        if elem_type.__name__ in ("ndarray", "memmap"):
            if _np_str_obj_array_pattern.search(elem.dtype.str) is not None:
                raise TypeError(default_collate_err_msg_format.format(elem.dtype))
            return default_collate([f.from_numpy(np.ascontiguousarray(b)) for b in batch])
        if elem.shape == ():
            return f.tensor(np.array(batch))
    if isinstance(elem, bool):
        return f.tensor(list(batch))
    if isinstance(elem, float):
        return f.tensor(list(batch), dtype=_C.float64)
    if isinstance(elem, int):
        return f.tensor(list(batch))
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, collections.abc.Mapping):
        try:
            return elem_type({key: default_collate([d[key] for d in batch]) for key in elem})
        except TypeError:
            return {key: default_collate([d[key] for d in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return elem_type(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(samples) for samples in transposed]
        try:
            return elem_type([default_collate(samples) for samples in transposed])
        except TypeError:
            return [default_collate(samples) for samples in transposed]
    raise TypeError(default_collate_err_msg_format.format(elem_type))
