"""Tensor factories: empty, zeros, ones, full, arange, tensor, from_numpy, frombuffer, *_like, from_dlpack."""
from __future__ import annotations

import math
import warnings
from typing import Any, Sequence

import numpy as np

from . import _C, _formats
from ._ops import ops
from ._tensor import Tensor, _contiguous_strides, _int_list

__all__ = [
    "empty", "empty_strided", "zeros", "ones", "full", "arange", "tensor", "from_numpy", "from_dlpack", "frombuffer",
    "empty_like", "zeros_like", "ones_like", "full_like", "randn", "rand", "randint", "normal", "allclose",
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
    """The sizes of f(2, 3) / f((2, 3)) / f([2, 3]) as a list of ints (the one-int case first: zeros(3))."""
    if len(size) == 1 and type(size[0]) is int:
        return [size[0]]
    return _int_list(size, what)


# Resolved once: factories are called constantly (Note [Python hot paths], _tensor.py).
_empty_op = ops.aten.empty.memory_format
_empty_strided_op = ops.aten.empty_strided.default
_fill_op = ops.aten.fill_.Scalar
_new_filled = _C._new_filled
_new_filled_like = _C._new_filled_like


def _new(t: Tensor) -> Tensor:
    """t, a tensor this factory has just allocated and filled, at version 0: the fill is part of making
    it, not an in-place write anyone could have seen (PyTorch's factories hand out version 0 too)."""
    _C._reset_version(t)
    return t


def _maybe_requires_grad(t: Tensor, requires_grad: bool) -> Tensor:
    _new(t)
    return t.requires_grad_() if requires_grad else t


# Note [Factory keyword arguments]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Every factory takes PyTorch's keywords for it: dtype, layout (only
# ``strided``), device, requires_grad, pin_memory, memory_format (``empty``;
# ``*_like`` default to preserve_format and keep the source's strides as
# PyTorch's empty_like) and out=. pin_memory=True allocates from the pinned
# host allocator of the current accelerator (Note [Pinned host allocator]);
# it needs a CPU result (PyTorch's "Only dense CPU tensors can be pinned") and
# an accelerator (PyTorch's CPU-only message otherwise). out= resizes and
# fills the given tensor and returns it (a dtype that differs from out's is
# PyTorch's RuntimeError).
_NO_PINNED_ALLOCATOR = ("pin_memory=True requires a CUDA or other accelerator backend; no pinned memory allocator "
                        "is available on this system.")


def _check_layout(layout: Any, what: str) -> None:
    if layout is not None and layout is not _formats.strided:
        raise RuntimeError(f"{what}: only the strided layout is supported, got layout {layout!r}")


def _pinned(sizes: list[int], strides: list[int] | None, dtype: Any, device: DeviceLike, what: str) -> Tensor:
    from .accelerator._utils import _accelerator_type

    if device is not None and _C.device(device).type != "cpu":
        raise RuntimeError(f"{what}: Only dense CPU tensors can be pinned (device={_C.device(device)})")
    backend = _accelerator_type()
    if backend is None:
        raise RuntimeError(_NO_PINNED_ALLOCATOR)
    from . import _runtime

    if strides is None or strides == _contiguous_strides(sizes):
        return _runtime.pinned_empty(sizes, dtype, backend=backend)
    span = 1 + sum((n - 1) * st for n, st in zip(sizes, strides)) if all(sizes) else 0
    return _runtime.pinned_empty([span], dtype, backend=backend).as_strided(sizes, strides)


def _into_out(out: Tensor, sizes: list[int], dtype: Any, what: str) -> Tensor:
    if not isinstance(out, Tensor):
        raise TypeError(f"{what}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if dtype is not None and dtype != out.dtype:
        raise RuntimeError(f"{what}: dtype {dtype} does not match the dtype of out= ({out.dtype})")
    return out.resize_(sizes)


def _empty_sizes(sizes: list[int], *, out: Any = None, dtype: Any = None, layout: Any = None,
                 device: DeviceLike = None, requires_grad: bool = False, pin_memory: bool = False,
                 memory_format: Any = None, what: str = "empty") -> Tensor:
    _check_layout(layout, what)
    if out is not None:
        return _into_out(out, sizes, dtype, what)
    fmt = _formats.contiguous_format if memory_format is None else _formats._format_of(memory_format, what)
    if pin_memory:
        strides = _formats.memory_format_strides(sizes, fmt, what)
        return _maybe_requires_grad(_pinned(sizes, strides, dtype, device, what), requires_grad)
    return _maybe_requires_grad(_empty_op(sizes, dtype=dtype, device=device, memory_format=fmt), requires_grad)


def empty(*size: Any, out: Any = None, dtype: Any = None, layout: Any = None, device: DeviceLike = None,
          requires_grad: bool = False, pin_memory: bool = False, memory_format: Any = None) -> Tensor:
    """An uninitialised tensor (aten::empty.memory_format); keywords as PyTorch's
    (Note [Factory keyword arguments])."""
    return _empty_sizes(_sizes(size, "empty"), out=out, dtype=dtype, layout=layout, device=device,
                        requires_grad=requires_grad, pin_memory=pin_memory, memory_format=memory_format)


def empty_strided(size: Sequence[int], stride: Sequence[int], *, dtype: Any = None, layout: Any = None,
                  device: DeviceLike = None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor with the given strides (aten::empty_strided)."""
    _check_layout(layout, "empty_strided")
    if pin_memory:
        t = _pinned(list(size), list(stride), dtype, device, "empty_strided")
    else:
        t = _empty_strided_op(list(size), list(stride), dtype=dtype, device=device)
    return _maybe_requires_grad(t, requires_grad)


def _filled(sizes: list[int], value: Any, what: str, *, out: Any, dtype: Any, layout: Any, device: DeviceLike,
            requires_grad: bool, pin_memory: bool) -> Tensor:
    t = _empty_sizes(sizes, out=out, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory, what=what)
    t.fill_(value)
    if out is not None:  # out= is the caller's tensor: the fill is an in-place write that bumps its version
        return t.requires_grad_() if requires_grad else t
    return _maybe_requires_grad(t, requires_grad)


def full(size: Sequence[int], fill_value: bool | int | float, *, out: Any = None, dtype: Any = None,
         layout: Any = None, device: DeviceLike = None, requires_grad: bool = False,
         pin_memory: bool = False) -> Tensor:
    """A tensor filled with fill_value; dtype inferred from it like PyTorch (bool, int64 or the default float)."""
    if dtype is None and out is None:
        dtype = _C.bool if isinstance(fill_value, bool) else _C.int64 if isinstance(fill_value, int) else _C._get_default_dtype()
    return _filled(_sizes((size,), "full"), fill_value, "full", out=out, dtype=dtype, layout=layout, device=device,
                   requires_grad=requires_grad, pin_memory=pin_memory)


def _zeros(*size: Any, out: Any = None, dtype: Any = None, layout: Any = None, device: DeviceLike = None,
           requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A tensor of zeros: the Python path of ``zeros``, for the calls its C function passes on."""
    if out is None and layout is None and not pin_memory:  # the hot path (Note [Factory fast path], PyFactories.cpp)
        t = _new_filled(size, 0, dtype, device)
        if t is None:
            t = _new(_fill_op(_empty_op(_sizes(size, "zeros"), dtype=dtype, device=device), 0))
        return t.requires_grad_() if requires_grad else t
    return _filled(_sizes(size, "zeros"), 0, "zeros", out=out, dtype=dtype, layout=layout, device=device,
                   requires_grad=requires_grad, pin_memory=pin_memory)


def _ones(*size: Any, out: Any = None, dtype: Any = None, layout: Any = None, device: DeviceLike = None,
          requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A tensor of ones: the Python path of ``ones``, for the calls its C function passes on."""
    if out is None and layout is None and not pin_memory:  # the hot path (Note [Factory fast path], PyFactories.cpp)
        t = _new_filled(size, 1, dtype, device)
        if t is None:
            t = _new(_fill_op(_empty_op(_sizes(size, "ones"), dtype=dtype, device=device), 1))
        return t.requires_grad_() if requires_grad else t
    return _filled(_sizes(size, "ones"), 1, "ones", out=out, dtype=dtype, layout=layout, device=device,
                   requires_grad=requires_grad, pin_memory=pin_memory)


# zeros(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False) and ones(...)
# are C functions that make plain calls (int sizes; dtype, device, requires_grad=False) themselves and pass
# every other call, unchanged, to _zeros / _ones (Note [Factory fast path], csrc/python/PyFactories.cpp).
# The Python functions keep the public names in their own errors ("zeros() got an unexpected keyword ...").
_zeros.__qualname__ = _zeros.__name__ = "zeros"
_ones.__qualname__ = _ones.__name__ = "ones"
zeros = _C._filled_factory("zeros", _zeros)
ones = _C._filled_factory("ones", _ones)


def empty_like(t: Tensor, *, dtype: Any = None, layout: Any = None, device: DeviceLike = None,
               requires_grad: bool = False, pin_memory: bool = False, memory_format: Any = None) -> Tensor:
    """An uninitialised tensor with t's shape, dtype and device unless given, and t's strides under
    ``memory_format=preserve_format`` (the default) as PyTorch's empty_like."""
    _check_layout(layout, "empty_like")
    batched = _C._unwrap_batched(t)
    if batched is not None:  # inside vmap: batched like t (Note [Batched tensors], backend_sdk/_functorch/vmap.py)
        return _C._make_batched(empty_like(batched[0], dtype=dtype, device=device, requires_grad=requires_grad,
                                           memory_format=memory_format), batched[1], batched[2])
    fmt = _formats.preserve_format if memory_format is None else _formats._format_of(memory_format, "empty_like")
    strides = _formats.like_strides(t, fmt, "empty_like")
    return empty_strided(list(t.shape), strides, dtype=dtype or t.dtype,
                         device=device if device is not None else t.device, requires_grad=requires_grad,
                         pin_memory=pin_memory)


def _filled_like(t: Tensor, value: Any, requires_grad: bool, **kwargs: Any) -> Tensor:
    batched = _C._unwrap_batched(t)
    if batched is not None:  # inside vmap: batched like t (Note [Batched tensors], backend_sdk/_functorch/vmap.py)
        return _C._make_batched(_filled_like(batched[0], value, requires_grad, **kwargs), batched[1], batched[2])
    if not requires_grad and kwargs["layout"] is None and not kwargs["pin_memory"] and kwargs["memory_format"] is None \
            and t.is_contiguous():  # the hot path (Note [Python hot paths]): preserve_format of a contiguous source
        device = kwargs["device"]
        return _new(_fill_op(_empty_op(list(t.shape), dtype=kwargs["dtype"] or t.dtype,
                                       device=device if device is not None else t.device), value))
    return _maybe_requires_grad(empty_like(t, **kwargs).fill_(value), requires_grad)


def zeros_like(t: Tensor, *, dtype: Any = None, layout: Any = None, device: DeviceLike = None,
               requires_grad: bool = False, pin_memory: bool = False, memory_format: Any = None) -> Tensor:
    """Zeros shaped (and strided, Note [Factory keyword arguments]) like ``t``."""
    if layout is None and not requires_grad and not pin_memory and memory_format is None:
        fast = _new_filled_like(t, 0, dtype, device)  # Note [Factory fast path], PyFactories.cpp
        if fast is not None:
            return fast
    return _filled_like(t, 0, requires_grad, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory,
                        memory_format=memory_format)


def ones_like(t: Tensor, *, dtype: Any = None, layout: Any = None, device: DeviceLike = None,
              requires_grad: bool = False, pin_memory: bool = False, memory_format: Any = None) -> Tensor:
    """Ones shaped (and strided) like ``t``."""
    if layout is None and not requires_grad and not pin_memory and memory_format is None:
        fast = _new_filled_like(t, 1, dtype, device)  # Note [Factory fast path], PyFactories.cpp
        if fast is not None:
            return fast
    return _filled_like(t, 1, requires_grad, dtype=dtype, layout=layout, device=device, pin_memory=pin_memory,
                        memory_format=memory_format)


def full_like(t: Tensor, fill_value: bool | int | float, *, dtype: Any = None, layout: Any = None,
              device: DeviceLike = None, requires_grad: bool = False, pin_memory: bool = False,
              memory_format: Any = None) -> Tensor:
    """``fill_value`` everywhere, shaped (and strided) like ``t``."""
    if layout is None and not requires_grad and not pin_memory and memory_format is None:
        fast = _new_filled_like(t, fill_value, dtype, device)  # Note [Factory fast path], PyFactories.cpp
        if fast is not None:
            return fast
    return _filled_like(t, fill_value, requires_grad, dtype=dtype, layout=layout, device=device,
                        pin_memory=pin_memory, memory_format=memory_format)


# Note [Read-only memory]
# ~~~~~~~~~~~~~~~~~~~~~~~
# Tensors have no read-only flag (neither have PyTorch's): a tensor over a non-writeable numpy array,
# a read-only buffer (bytes) or a read-only DLPack 1.x tensor can be written through, which is undefined
# behaviour for the owner (an immutable bytes object changes). As PyTorch does, the zero-copy
# constructors accept such memory and warn once per process (TORCH_WARN_ONCE) with PyTorch's text,
# "PyTorch" included, so that the warnings filters written for PyTorch match ours. PyTorch's
# from_dlpack ignores DLPack's read-only flag; ours warns as from_numpy does (a deliberate extra check,
# docs/architecture.md). Copying constructors (tensor()) neither warn nor share the memory.
_NUMPY_NOT_WRITEABLE = (
    "The given NumPy array is not writable, and PyTorch does not support non-writable tensors. This means "
    "writing to this tensor will result in undefined behavior. You may want to copy the array to protect its "
    "data or make it writable before converting it to a tensor. This type of warning will be suppressed for "
    "the rest of this program."
)
_BUFFER_NOT_WRITEABLE = (
    "The given buffer is not writable, and PyTorch does not support non-writable tensors. This means you can "
    "write to the underlying (supposedly non-writable) buffer using the tensor. You may want to copy the buffer "
    "to protect its data or make it writable before converting it to a tensor. This type of warning will be "
    "suppressed for the rest of this program."
)
_DLPACK_READ_ONLY = (
    "The given DLPack tensor is read-only, and PyTorch does not support non-writable tensors. This means "
    "writing to this tensor will result in undefined behavior. You may want to copy the tensor to protect its "
    "data or make it writable before converting it to a tensor. This type of warning will be suppressed for "
    "the rest of this program."
)
#: The once-per-process warnings already given (tests clear it).
_warned_once: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned_once:
        _warned_once.add(message)
        warnings.warn(message, UserWarning, stacklevel=3)


def _tensor_from_numpy(array: np.ndarray) -> Tensor:
    dtype = dtype_from_numpy(array.dtype)
    data = array.__array_interface__["data"][0] if array.size else 0
    return _C._tensor_from_buffer(array, data, list(array.shape), list(array.strides), dtype)


def from_numpy(array: np.ndarray) -> Tensor:
    """A CPU tensor sharing memory with a numpy array (no copy).

    A non-writeable array is accepted with PyTorch's UserWarning (once per process): writing to the
    tensor writes to memory the array's owner considers immutable (Note [Read-only memory]).
    """
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    tensor = _tensor_from_numpy(array)
    if not array.flags.writeable:
        _warn_once(_NUMPY_NOT_WRITEABLE)
    return tensor


def frombuffer(buffer: Any, *, dtype: Any, count: int = -1, offset: int = 0, requires_grad: bool = False) -> Tensor:
    """A 1-dimensional CPU tensor over an object implementing the buffer protocol (no copy), as
    ``torch.frombuffer``: ``count`` elements of ``dtype`` (all that fit when -1) starting ``offset``
    bytes into the buffer. The tensor keeps the buffer alive. A read-only buffer (``bytes``) is accepted
    with PyTorch's UserWarning, once per process (Note [Read-only memory]).
    """
    for name, v in (("count", count), ("offset", offset)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"frombuffer(): argument '{name}' must be int, not {type(v).__name__}")
    try:
        view = memoryview(buffer)
    except TypeError:
        raise RuntimeError("could not retrieve buffer from object") from None
    if not view.c_contiguous:  # PyTorch asks for a simple (contiguous) buffer
        raise RuntimeError("could not retrieve buffer from object")
    if not isinstance(dtype, _C.dtype):
        raise TypeError(f"frombuffer(): argument 'dtype' must be backend_sdk.dtype, not {type(dtype).__name__}")
    elsize = dtype.itemsize
    length = view.nbytes
    if not (length > 0 and count != 0):
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not (0 <= offset < length):
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
                         f"({length} bytes) minus 1")
    if not (count > 0 or (length - offset) % elsize == 0):
        raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be a "
                         f"multiple of element size ({elsize})")
    actual = (length - offset) // elsize if count < 0 else count
    if offset + actual * elsize > length:
        raise ValueError(f"requested buffer length ({actual} * {elsize} bytes) after offset ({offset} bytes) "
                         f"must not be greater than actual buffer length ({length} bytes)")
    # numpy gives the address of read-only buffers too; the array keeps the view (and the buffer) alive.
    raw = np.frombuffer(view.cast("B") if view.format != "B" or view.ndim != 1 else view, dtype=np.uint8)
    address = raw.__array_interface__["data"][0] + offset
    tensor = _C._tensor_from_buffer(raw, address, [actual], [elsize], dtype)
    if view.readonly:
        _warn_once(_BUFFER_NOT_WRITEABLE)
    return tensor.requires_grad_() if requires_grad else tensor


def from_dlpack(obj: Any) -> Tensor:
    """A tensor sharing memory with any object implementing __dlpack__ (or a DLPack capsule).

    As PyTorch, asks the producer for a DLPack 1.0 capsule (``max_version=(1, 0)``) and falls back to an
    unversioned one for producers that do not take the argument. A capsule flagged read-only is accepted
    with a UserWarning, once per process (Note [Read-only memory]).
    """
    from .accelerator._utils import _accelerator_type

    accelerator = _accelerator_type()
    ext = _C.device(accelerator) if accelerator is not None else None
    if hasattr(obj, "__dlpack__"):
        device = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else (1, 0)
        if device[0] not in (1, 12) or (device[0] == 12 and ext is None):
            raise TypeError(f"from_dlpack: only CPU (kDLCPU) and accelerator (kDLExtDev) tensors are supported, "
                            f"got DLPack device {tuple(int(d) for d in device)}")
        try:
            capsule = obj.__dlpack__(max_version=(1, 0))
        except TypeError:
            capsule = obj.__dlpack__()
    else:
        capsule = obj
    read_only = _C._dlpack_capsule_read_only(capsule)
    tensor = _C._from_dlpack_capsule(capsule, ext)
    if read_only:
        _warn_once(_DLPACK_READ_ONLY)
    return tensor


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


def tensor(data: Any, *, dtype: Any = None, device: DeviceLike = None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """A new tensor holding a copy of data (numbers, nested lists, numpy arrays or tensors); ``pin_memory=True``
    puts it in pinned host memory (Note [Factory keyword arguments])."""
    if requires_grad:
        return tensor(data, dtype=dtype, device=device, pin_memory=pin_memory).requires_grad_()
    if isinstance(data, Tensor):
        source = data.detach()
    else:
        array = _infer_numpy(data)
        if array.dtype.kind == "c":
            raise TypeError("tensor(): complex numbers are not supported")
        # A copy: a read-only source is fine (no warning, as PyTorch's tensor()).
        source = _tensor_from_numpy(array if array.flags.c_contiguous else array.copy(order="C"))
    out = empty_strided(list(source.shape), _contiguous_strides(source.shape), dtype=dtype or source.dtype,
                        device=device if device is not None else "cpu", pin_memory=pin_memory)
    if out.is_meta:
        return out
    return _new(out.copy_(source))


_INT64_MAX = 2**63 - 1


def _check_arange_length(start: int | float, end: int | float, step: int | float, all_int: bool) -> None:
    """PyTorch's arange length check: the number of values must be finite and fit in int64
    (RuntimeError "invalid size, possible overflow?"), checked before anything is allocated
    (Note [Size arithmetic overflow], csrc/backend_sdk/core/detail/SafeSize.h)."""
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


def arange(start: int | float, end: int | float | None = None, step: int | float = 1, *, out: Any = None,
           dtype: Any = None, layout: Any = None, device: DeviceLike = None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """Values from start to end (exclusive) by step; int64 for ints, the default float dtype otherwise
    (keywords as PyTorch's, Note [Factory keyword arguments])."""
    _check_layout(layout, "arange")
    if out is not None:
        values = arange(start, end, step, dtype=dtype if dtype is not None else out.dtype, device=out.device)
        return _into_out(out, list(values.shape), dtype, "arange").copy_(values)
    if pin_memory:
        return arange(start, end, step, dtype=dtype, device=device).pin_memory().requires_grad_(requires_grad)
    if end is None:
        start, end = 0, start
    for name, v in (("start", start), ("end", end), ("step", step)):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError(f"arange(): argument '{name}' must be a number, not {type(v).__name__}")
    if step == 0:
        raise _C.ValueRuntimeError("arange(): step must be nonzero")
    if (end - start) * step < 0:
        raise _C.ValueRuntimeError(f"arange(): upper bound and larger bound inconsistent with step sign")
    all_int = all(isinstance(v, int) for v in (start, end, step))
    _check_arange_length(start, end, step, all_int)
    np_dtype = np.int64 if all_int else np.float64
    if dtype is None:
        dtype = _C.int64 if all_int else _C._get_default_dtype()
    # The result is allocated on its device before any host array: a size the device cannot hold is
    # its OutOfMemoryError naming the device and the bytes, never numpy's MemoryError for a host
    # staging array; large results are filled through bounded host chunks.
    if all_int:
        count = max(0, -((start - end) // step))
    else:
        count = max(0, math.ceil((end - start) / step))
    if count * np.dtype(np_dtype).itemsize <= _ARANGE_CHUNK_BYTES:
        return tensor(np.arange(start, end, step, dtype=np_dtype), dtype=dtype, device=device,
                      requires_grad=requires_grad)
    out = empty(count, dtype=dtype, device=device)
    if not out.is_meta:
        chunk = _ARANGE_CHUNK_BYTES // np.dtype(np_dtype).itemsize
        for lo in range(0, count, chunk):
            hi = min(count, lo + chunk)
            values = np.arange(lo, hi, dtype=np_dtype) * np_dtype(step) + np_dtype(start)
            out[lo:hi].copy_(_tensor_from_numpy(values))
    return _maybe_requires_grad(out, requires_grad)


#: arange fills results larger than this through host chunks of this size.
_ARANGE_CHUNK_BYTES = 64 << 20


def _random_factory(name: str) -> Any:
    def factory(*size: Any, generator: Any = None, out: Any = None, dtype: Any = None, layout: Any = None,
                device: DeviceLike = None, requires_grad: bool = False, pin_memory: bool = False,
                **kwargs: Any) -> Tensor:
        from ._ops import ops

        _check_layout(layout, name)
        packet = getattr(ops.aten, name)
        kw = dict(kwargs)
        if generator is not None:
            kw["generator"] = generator
        if dtype is not None or out is not None:
            kw["dtype"] = dtype if dtype is not None else out.dtype
        if device is not None or out is not None:
            kw["device"] = device if device is not None else out.device
        sizes = _sizes(size, name)
        t = packet(sizes, **kw)
        if out is not None:
            return _into_out(out, sizes, dtype, name).copy_(t)
        if pin_memory:
            t = _pinned(sizes, None, t.dtype, t.device, name).copy_(t)
        return _maybe_requires_grad(t, requires_grad)

    factory.__name__ = factory.__qualname__ = name
    factory.__doc__ = (f"``{name}(*size, generator=None, out=None, dtype=None, layout=strided, device=None, "
                       f"requires_grad=False, pin_memory=False)``, as ``torch.{name}`` (aten::{name}, then "
                       "``requires_grad_`` when asked).")
    return factory


randn = _random_factory("randn")
rand = _random_factory("rand")


def _operator_with_requires_grad(name: str) -> Any:
    """``torch.<name>``'s Python signature over aten::<name>'s overloads: PyTorch's factory overloads also take
    ``requires_grad=`` (Note [Factory keyword arguments]), which the schemas do not have."""
    def factory(*args: Any, requires_grad: bool = False, **kwargs: Any) -> Tensor:
        from ._ops import ops

        return _maybe_requires_grad(getattr(ops.aten, name)(*args, **kwargs), requires_grad)

    factory.__name__ = factory.__qualname__ = name
    factory.__doc__ = (f"``torch.{name}``: aten::{name} (any of its overloads, with their keywords), then "
                       "``requires_grad_`` when ``requires_grad=True`` (floating results only, as PyTorch).")
    return factory


randint = _operator_with_requires_grad("randint")
normal = _operator_with_requires_grad("normal")


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """``|input - other| <= atol + rtol * |other|`` everywhere, as ``torch.allclose``."""
    a = np.asarray(input.detach().cpu().numpy() if isinstance(input, Tensor) else input)
    b = np.asarray(other.detach().cpu().numpy() if isinstance(other, Tensor) else other)
    return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))
