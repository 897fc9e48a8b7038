"""Tensor factories: empty, zeros, ones, full, arange, tensor, from_numpy, *_like, from_dlpack."""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from . import _C
from ._ops import ops
from ._tensor import Tensor, _contiguous_strides, _int_list

__all__ = [
    "empty", "empty_strided", "zeros", "ones", "full", "arange", "tensor", "from_numpy", "from_dlpack",
    "empty_like", "zeros_like", "ones_like", "full_like",
]

DeviceLike = Any  # str | backend_sdk.device | int | None


def _numpy_dtype_table() -> dict:
    import ml_dtypes

    return {
        np.dtype(np.bool_): _C.bool, np.dtype(np.uint8): _C.uint8, np.dtype(np.int8): _C.int8,
        np.dtype(np.int16): _C.int16, np.dtype(np.int32): _C.int32, np.dtype(np.int64): _C.int64,
        np.dtype(np.float16): _C.float16, np.dtype(ml_dtypes.bfloat16): _C.bfloat16,
        np.dtype(np.float32): _C.float32, np.dtype(np.float64): _C.float64,
    }


_NUMPY_TO_DTYPE: dict | None = None


def dtype_from_numpy(dtype: np.dtype) -> Any:
    """The backend_sdk dtype of a numpy dtype; TypeError if there is none."""
    global _NUMPY_TO_DTYPE
    if _NUMPY_TO_DTYPE is None:
        _NUMPY_TO_DTYPE = _numpy_dtype_table()
    native = dtype.newbyteorder("=") if dtype.byteorder not in ("=", "|") else dtype
    result = _NUMPY_TO_DTYPE.get(native)
    if result is None or (dtype.byteorder == ">" and dtype.itemsize > 1):
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{dtype}. The only supported types are: float64, float32, "
            "float16, bfloat16, int64, int32, int16, int8, uint8, and bool."
        )
    return result


def _sizes(size: tuple, what: str) -> list[int]:
    return _int_list(size, what)


# Resolved once: factories are called constantly.
_empty_op = ops.aten.empty.memory_format
_empty_strided_op = ops.aten.empty_strided.default


def _maybe_requires_grad(t: Tensor, requires_grad: bool) -> Tensor:
    return t.requires_grad_() if requires_grad else t


def empty(*size: Any, dtype: Any = None, device: DeviceLike = None, requires_grad: bool = False) -> Tensor:
    """An uninitialised tensor (aten::empty.memory_format)."""
    return _maybe_requires_grad(_empty_op(_sizes(size, "empty"), dtype=dtype, device=device), requires_grad)


def empty_strided(size: Sequence[int], stride: Sequence[int], *, dtype: Any = None, device: DeviceLike = None) -> Tensor:
    """An uninitialised tensor with the given strides (aten::empty_strided)."""
    return _empty_strided_op(list(size), list(stride), dtype=dtype, device=device)


def full(size: Sequence[int], fill_value: bool | int | float, *, dtype: Any = None, device: DeviceLike = None,
         requires_grad: bool = False) -> Tensor:
    """A tensor filled with fill_value; dtype inferred from it like PyTorch (bool, int64 or the default float)."""
    if dtype is None:
        dtype = _C.bool if isinstance(fill_value, bool) else _C.int64 if isinstance(fill_value, int) else _C._get_default_dtype()
    return _maybe_requires_grad(empty(_sizes((size,), "full"), dtype=dtype, device=device).fill_(fill_value), requires_grad)


def zeros(*size: Any, dtype: Any = None, device: DeviceLike = None, requires_grad: bool = False) -> Tensor:
    """A tensor of zeros."""
    return _maybe_requires_grad(empty(_sizes(size, "zeros"), dtype=dtype, device=device).fill_(0), requires_grad)


def ones(*size: Any, dtype: Any = None, device: DeviceLike = None, requires_grad: bool = False) -> Tensor:
    """A tensor of ones."""
    return _maybe_requires_grad(empty(_sizes(size, "ones"), dtype=dtype, device=device).fill_(1), requires_grad)


def empty_like(t: Tensor, *, dtype: Any = None, device: DeviceLike = None) -> Tensor:
    """An uninitialised tensor with t's shape (and dtype/device unless given)."""
    return empty(list(t.shape), dtype=dtype or t.dtype, device=device if device is not None else t.device)


def zeros_like(t: Tensor, *, dtype: Any = None, device: DeviceLike = None) -> Tensor:
    return empty_like(t, dtype=dtype, device=device).fill_(0)


def ones_like(t: Tensor, *, dtype: Any = None, device: DeviceLike = None) -> Tensor:
    return empty_like(t, dtype=dtype, device=device).fill_(1)


def full_like(t: Tensor, fill_value: bool | int | float, *, dtype: Any = None, device: DeviceLike = None) -> Tensor:
    return empty_like(t, dtype=dtype, device=device).fill_(fill_value)


def from_numpy(array: np.ndarray) -> Tensor:
    """A CPU tensor sharing memory with a numpy array (no copy)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    dtype = dtype_from_numpy(array.dtype)
    data = array.__array_interface__["data"][0] if array.size else 0
    return _C._tensor_from_buffer(array, data, list(array.shape), list(array.strides), dtype)


def from_dlpack(obj: Any) -> Tensor:
    """A tensor sharing memory with any object implementing __dlpack__ (or a DLPack capsule)."""
    if hasattr(obj, "__dlpack__"):
        device = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else (1, 0)
        if device[0] != 1:
            raise TypeError(f"from_dlpack: only CPU (kDLCPU) tensors are supported, got DLPack device {device}")
        capsule = obj.__dlpack__()
    else:
        capsule = obj
    return _C._from_dlpack_capsule(capsule)


def _infer_numpy(data: Any) -> np.ndarray:
    """numpy array for data, with PyTorch's inference: bool, int64, default float."""
    array = np.asarray(data)
    if array.dtype == object:
        raise TypeError(f"tensor(): could not infer dtype of {type(data).__name__}: nested sequences of numbers expected")
    if array.dtype.kind in "US":
        raise TypeError("tensor(): new(): invalid data type 'str'")
    if not isinstance(data, np.ndarray):
        if array.dtype.kind == "f":
            array = array.astype(np.float32 if _C._get_default_dtype() == _C.float32 else np.float64)
        elif array.dtype.kind in "iu":
            array = array.astype(np.int64)
    return array


def tensor(data: Any, *, dtype: Any = None, device: DeviceLike = None, requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of data (numbers, nested lists, numpy arrays or tensors)."""
    if requires_grad:
        return tensor(data, dtype=dtype, device=device).requires_grad_()
    if isinstance(data, Tensor):
        source = data.detach()
    else:
        array = _infer_numpy(data)
        if array.dtype.kind == "c":
            raise TypeError("tensor(): complex numbers are not supported")
        source = from_numpy(array if array.flags.c_contiguous else array.copy(order="C"))
    out = empty_strided(list(source.shape), _contiguous_strides(source.shape), dtype=dtype or source.dtype,
                        device=device if device is not None else "cpu")
    if out.is_meta:
        return out
    return out.copy_(source)


_INT64_MAX = 2**63 - 1


def _check_arange_length(start: int | float, end: int | float, step: int | float, all_int: bool) -> None:
    """PyTorch's arange length check: the number of values must be finite and fit in int64
    (RuntimeError "invalid size, possible overflow?"), checked before anything is allocated
    (Note [Size arithmetic overflow], csrc/core/SafeSize.h)."""
    if all_int:
        length = -((start - end) // step)  # exact ceil((end - start) / step) on Python ints
        # Every value (start + i * step) must itself be an int64.
        fits = length <= _INT64_MAX and all(-_INT64_MAX - 1 <= v <= _INT64_MAX for v in (start, end, step))
    else:
        try:
            length_f = math.ceil((float(end) - float(start)) / float(step))
        except (OverflowError, ValueError):  # inf or nan
            length_f = None
        fits = length_f is not None and 0 <= length_f <= _INT64_MAX
    if not fits:
        raise RuntimeError(f"arange(): invalid size, possible overflow? (start={start}, end={end}, step={step})")


def arange(start: int | float, end: int | float | None = None, step: int | float = 1, *, dtype: Any = None,
           device: DeviceLike = None, requires_grad: bool = False) -> Tensor:
    """Values from start to end (exclusive) by step; int64 for ints, the default float dtype otherwise."""
    if end is None:
        start, end = 0, start
    for name, v in (("start", start), ("end", end), ("step", step)):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError(f"arange(): argument '{name}' must be a number, not {type(v).__name__}")
    if step == 0:
        raise ValueError("arange(): step must be nonzero")
    if (end - start) * step < 0:
        raise ValueError(f"arange(): upper bound and larger bound inconsistent with step sign")
    all_int = all(isinstance(v, int) for v in (start, end, step))
    _check_arange_length(start, end, step, all_int)
    np_dtype = np.int64 if all_int else np.float64
    values = np.arange(start, end, step, dtype=np_dtype)
    if dtype is None:
        dtype = _C.int64 if all_int else _C._get_default_dtype()
    return tensor(values, dtype=dtype, device=device, requires_grad=requires_grad)
