"""``backend_sdk.Tensor``: the Python tensor class.

Its data, shape and arithmetic slots live in C (``_C.TensorBase``); this class
adds the Python-level API. Every computation goes through the dispatcher: view
methods call the view operators (``aten::transpose.int``, ``aten::select.int``, ...), copies with
``aten::copy_``, so a backend that implements those operators gets them all.
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np

from . import _C, _formats
from ._ops import ops
from ._size import Size
from ._storage import TypedStorage, UntypedStorage, _warn_typed_storage_removal

__all__ = ["Tensor"]


def _int_list(args: tuple, what: str) -> list[int]:
    """Accepts f(2, 3) and f((2, 3)) / f([2, 3]) as PyTorch does."""
    if len(args) == 1 and type(args[0]) is not int and isinstance(args[0], (list, tuple, Size)):
        args = tuple(args[0])
    for a in args:  # the common case (all ints) without per-item checks; a loop is cheaper than all()
        if type(a) is not int:
            break
    else:
        return list(args)
    out = []
    for a in args:
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
            raise TypeError(f"{what}(): expected a sequence of ints, but got {type(a).__name__}")
        out.append(int(a))
    return out


# Note [Python hot paths]
# ~~~~~~~~~~~~~~~~~~~~~~~
# x[0], x[1:3], transpose, item() and the small factories are called in tight Python loops, where
# each attribute lookup and Python call layer shows (issue 18 measured x[0] at 3x torch's time).
# Their overloads are resolved once here (an ops.aten.<name>.<overload> chain and a packet's
# overload selection cost more than the call they lead to), int and slice indices skip
# _apply_slicing's general walk straight to the view operators (select.int, slice.Tensor, whose C++
# kernels compute the geometry and wrap the dims). The views and errors are the general path's
# (tests/test_hot_paths.py compares them).
_as_strided = ops.aten.as_strided.default
# The view operators (Note [View operators], csrc/backend_sdk/ops/Views.cpp): one C++ kernel each.
_alias = ops.aten.alias.default
_transpose = ops.aten.transpose.int
_permute = ops.aten.permute.default
_select = ops.aten.select.int
_slice = ops.aten.slice.Tensor
_narrow = ops.aten.narrow.default
_unsqueeze = ops.aten.unsqueeze.default
_squeeze = ops.aten.squeeze.default
_squeeze_dim = ops.aten.squeeze.dim
_squeeze_dims = ops.aten.squeeze.dims
_expand = ops.aten.expand.default
_local_scalar_dense = ops.aten._local_scalar_dense.default

#: Tensor.type()'s legacy names, by dtype name.
_LEGACY_TYPE_NAMES = {
    "bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long",
    "float16": "Half", "bfloat16": "BFloat16", "float32": "Float", "float64": "Double",
}


class _ArrayHolder:
    """Keeps a tensor alive while numpy uses its memory through __array_interface__."""

    __slots__ = ("__array_interface__", "_tensor")

    def __init__(self, tensor: "Tensor") -> None:
        if _C._batched_level(tensor):  # its memory is one element's view only (Note [Batched tensors])
            raise RuntimeError("vmap: numpy() of a batched tensor is not supported inside vmap (it stands for a batch "
                               "of tensors): Cannot access data pointer of Tensor that doesn't have storage")
        self._tensor = tensor
        self.__array_interface__ = _C._array_interface(tensor)


class Tensor(_C.TensorBase):
    """A multi-dimensional array on a device, with PyTorch's tensor API."""

    __module__ = "backend_sdk"

    # ---- conversion --------------------------------------------------------
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """A numpy array sharing this CPU tensor's memory (no copy); ``force=True`` first detaches and copies to CPU."""
        if force:
            return self.detach().cpu().resolve_conj().numpy() if hasattr(self, "resolve_conj") else \
                self.detach().cpu().numpy()
        array = np.asarray(_ArrayHolder(self))
        if self.dtype == _C.bfloat16:
            import ml_dtypes

            array = array.view(ml_dtypes.bfloat16)
        return array

    @staticmethod
    def _make_wrapper_subclass(cls: type, size: Any, **kwargs: Any) -> Any:
        """A data-less instance of ``cls`` with the Python dispatch key, as torch.Tensor's (keyword arguments
        strides, storage_offset, dtype, layout, device, requires_grad...; Note [Python dispatch])."""
        from ._python_dispatch_impl import _make_wrapper_subclass

        return _make_wrapper_subclass(cls, size, **kwargs)

    # ---- pickle and copy.deepcopy (Note [Tensor pickling], backend_sdk/_tensor_pickle.py) ----------------
    def __reduce_ex__(self, proto: int) -> Any:
        """Pickling as PyTorch's: a rebuild function and its arguments (Note [Tensor pickling])."""
        from ._tensor_pickle import reduce_ex

        return reduce_ex(self, proto)

    def __deepcopy__(self, memo: dict) -> "Tensor":
        """A copy with its own storage (views of one storage stay views of one copy), as PyTorch's."""
        from ._tensor_pickle import deepcopy

        return deepcopy(self, memo)

    # ---- new_* factories and *_as views, as torch.Tensor's -------------------------------------------------
    def _new_kwargs(self, dtype: Any, device: Any) -> dict:
        return {"dtype": self.dtype if dtype is None else dtype, "device": self.device if device is None else device}

    def new_empty(self, *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
                  layout: Any = None, pin_memory: bool = False) -> "Tensor":
        """An uninitialised tensor of ``size`` with this tensor's dtype and device unless given (``aten::new_empty``,
        which a ``__torch_dispatch__`` subclass sees)."""
        return _new_factory(_new_empty_op, self, size, "new_empty", dtype, device, layout, pin_memory, requires_grad)

    def new_zeros(self, *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
                  layout: Any = None, pin_memory: bool = False) -> "Tensor":
        """Zeros of ``size`` with this tensor's dtype and device unless given (``aten::new_zeros``)."""
        return _new_factory(_new_zeros_op, self, size, "new_zeros", dtype, device, layout, pin_memory, requires_grad)

    def new_ones(self, *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
                 layout: Any = None, pin_memory: bool = False) -> "Tensor":
        """Ones of ``size`` with this tensor's dtype and device unless given (``aten::new_ones``)."""
        return _new_factory(_new_ones_op, self, size, "new_ones", dtype, device, layout, pin_memory, requires_grad)

    def new_full(self, size: Any, fill_value: Any, *, dtype: Any = None, device: Any = None,
                 requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> "Tensor":
        """``fill_value`` everywhere, of ``size``, with this tensor's dtype and device unless given
        (``aten::new_full``)."""
        return _new_factory(_new_full_op, self, (size,), "new_full", dtype, device, layout, pin_memory,
                            requires_grad, fill_value)

    def view_as(self, other: "Tensor") -> "Tensor":
        """``self.view(other.size())``."""
        return self.view(list(other.shape))

    def reshape_as(self, other: "Tensor") -> "Tensor":
        """``self.reshape(other.size())``."""
        return self.reshape(list(other.shape))

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        array = self.numpy()
        if dtype is not None and np.dtype(dtype) != array.dtype:
            return array.astype(dtype)
        return array.copy() if copy else array

    def __dlpack__(self, stream: Any = None, max_version: Any = None, dl_device: Any = None, copy: Any = None):
        """A DLPack capsule sharing this CPU tensor's memory."""
        if copy:
            return _C._to_dlpack(self.clone())
        return _C._to_dlpack(self)

    def __dlpack_device__(self) -> tuple[int, int]:
        """(kDLCPU, 0) for a CPU tensor, (kDLExtDev, index) for an accelerator's (Note [DLPack device
        tensors]); ValueError for a meta tensor, as PyTorch's."""
        from .utils.dlpack import DLDeviceType

        if self.is_cpu:
            return (DLDeviceType.kDLCPU, 0)
        if self.device.type == "meta":
            raise ValueError(f"Unknown device type {self.device.type} for Dlpack")
        return (DLDeviceType.kDLExtDev, self.device.index)

    def item(self) -> bool | int | float:
        """The value of a one-element tensor as a Python number."""
        return _local_scalar_dense(self)

    def tolist(self) -> Any:
        """The elements as (nested) Python lists of numbers."""
        if self.dim() == 0:
            return self.item()
        array = self.cpu().numpy() if not self.is_cpu else self.numpy()
        if array.dtype.kind == "V" or str(array.dtype) in ("bfloat16", "float16"):
            array = array.astype(np.float64)
        return array.tolist()

    def untyped_storage(self) -> UntypedStorage:
        """The storage this tensor views."""
        return UntypedStorage(self)

    # ---- storage, pinned memory, memory formats (Note [Storage objects], Note [Memory formats]) -------------
    def storage(self) -> TypedStorage:
        """The storage as a typed view in this tensor's dtype (PyTorch's deprecated ``Tensor.storage()``)."""
        _warn_typed_storage_removal()
        return TypedStorage(wrap_storage=UntypedStorage(self), dtype=self.dtype)

    def set_(self, source: Any = None, storage_offset: int = 0, size: Any = None, stride: Any = None) -> "Tensor":
        """Makes this tensor view ``source`` (a storage, with ``storage_offset`` in elements, ``size`` and
        ``stride``; or a tensor, with its geometry; None: an empty storage), as ``torch.Tensor.set_``."""
        from ._factories import empty

        if source is None:
            return self.set_(UntypedStorage(empty(0, dtype=_C.uint8, device=self.device)), 0, [0], [1])
        if isinstance(source, Tensor):
            return self.set_(source.untyped_storage(), source.storage_offset(), list(source.shape),
                             list(source.stride()))
        if isinstance(source, TypedStorage):
            source = source.untyped()
        if not isinstance(source, UntypedStorage):
            raise TypeError(f"set_(): argument 'source' must be a Storage or a Tensor, not {type(source).__name__}")
        sizes = [source.nbytes() // self.itemsize] if size is None else _int_list(size, "set_")
        strides = _contiguous_strides(sizes) if stride is None else _int_list(stride, "set_")
        _C._set_storage(self, source._tensor, int(storage_offset), sizes, strides)
        return self

    def is_pinned(self, device: Any = None) -> bool:
        """True if this tensor's memory is pinned host memory of the current accelerator (``device`` is
        accepted for PyTorch compatibility and deprecated there)."""
        if not self.is_cpu:
            return False
        from .accelerator._utils import _accelerator_type

        backend = _accelerator_type()
        return backend is not None and _C._runtime.is_pinned(self, backend)

    def pin_memory(self, device: Any = None) -> "Tensor":
        """A copy of this CPU tensor in pinned host memory of the current accelerator, with the same strides
        (self if it is already pinned); RuntimeError for a tensor that is not on the CPU."""
        if not self.is_cpu:
            raise RuntimeError(f"cannot pin '{self.device.type}' tensor of dtype {self.dtype}: only dense CPU "
                               "tensors can be pinned")
        from .accelerator._utils import _require_accelerator

        _require_accelerator()  # PyTorch's "Cannot access accelerator device when none is available."
        if self.is_pinned():
            return self
        from ._factories import empty_like

        return empty_like(self, pin_memory=True).copy_(self)

    def record_stream(self, stream: Any) -> None:
        """Marks this device tensor's memory as used by ``stream``: the allocator reuses it only after the work
        queued on ``stream`` so far is done (``torch.Tensor.record_stream``)."""
        if not isinstance(stream, _C._runtime.Stream):
            raise TypeError(f"record_stream(): argument 'stream' must be a Stream, not {type(stream).__name__}")
        if stream.device.type != self.device.type:
            raise RuntimeError(f"record_stream: {stream} is not a stream of the tensor's device {self.device}")
        _C._runtime.record_stream(self, stream)

    def type(self, dtype: Any = None, non_blocking: bool = False) -> Any:
        """With no argument, the legacy type name (``"backend_sdk.FloatTensor"``, ``"backend_sdk.accel.FloatTensor"``
        on a renamed backend); with a dtype or such a name, this tensor converted to that dtype."""
        if dtype is None:
            prefix = "backend_sdk." if self.is_cpu else f"backend_sdk.{self.device.type}."
            return prefix + _LEGACY_TYPE_NAMES.get(str(self.dtype).rsplit(".", 1)[-1], "Undefined") + "Tensor"
        if isinstance(dtype, str):
            name = dtype.rsplit(".", 1)[-1]
            wanted = next((k for k, v in _LEGACY_TYPE_NAMES.items() if v + "Tensor" == name), None)
            if wanted is None or not dtype.startswith("backend_sdk."):
                raise ValueError(f"invalid type: '{dtype}'")
            dtype = getattr(_C, wanted)
        return self.to(dtype, non_blocking=non_blocking)

    @property
    def layout(self) -> _formats.layout:
        """``backend_sdk.strided``: the SDK's only layout."""
        return _formats.strided

    def is_contiguous(self, memory_format: _formats.memory_format = _formats.contiguous_format) -> bool:
        """True if the strides are those of ``memory_format`` (row-major by default; size-1 dims ignored)."""
        if memory_format is _formats.contiguous_format or memory_format is _formats.preserve_format:
            return _C.TensorBase.is_contiguous(self)
        if memory_format is _formats.channels_last or memory_format is _formats.channels_last_3d:
            rank = 4 if memory_format is _formats.channels_last else 5
            return self.dim() == rank and _formats._is_contiguous_as(list(self.shape), list(self.stride()),
                                                                      memory_format)
        raise TypeError(f"is_contiguous(): memory_format must be a backend_sdk.memory_format, not "
                        f"{type(memory_format).__name__}")

    def __repr__(self) -> str:
        from ._printing import tensor_repr

        if _C._has_python_key(self):  # a wrapper subclass without a __repr__: no data of its own to print
            return (f"{type(self).__name__}(size={tuple(self.shape)}, dtype={self.dtype}, "
                    f"device='{self.device}'{', requires_grad=True' if self.requires_grad else ''})")
        return tensor_repr(self)

    __str__ = __repr__

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise RuntimeError(f"Boolean value of Tensor with {self.numel()} values is ambiguous")
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self.dtype.is_floating_point or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __len__(self) -> int:
        if self.dim() == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    def __hash__(self) -> int:
        return id(self)

    # ---- copies ------------------------------------------------------------
    def to(self, *args: Any, **kwargs: Any) -> "Tensor":
        """PyTorch's ``to``: ``to(dtype)``, ``to(device, dtype=None)``, ``to(other)``, each with
        ``non_blocking=False, copy=False``; returns self when nothing changes and copy is False
        (``aten::to.*``, which copy through ``aten::_to_copy``)."""
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        non_blocking = bool(kwargs.pop("non_blocking", False))
        copy = bool(kwargs.pop("copy", False))
        memory_format = kwargs.pop("memory_format", None)
        if kwargs:
            raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
        rest = list(args)
        if rest and isinstance(rest[0], Tensor):
            other = rest.pop(0)
            dtype, device = other.dtype, other.device
        elif rest and isinstance(rest[0], (str, _C.device)):
            device = rest.pop(0)
            if rest and isinstance(rest[0], _C.dtype):
                dtype = rest.pop(0)
        elif rest and isinstance(rest[0], _C.dtype):
            dtype = rest.pop(0)
        # Trailing positional non_blocking / copy, as PyTorch's signatures allow.
        if rest and isinstance(rest[0], bool):
            non_blocking = rest.pop(0)
        if rest and isinstance(rest[0], bool):
            copy = rest.pop(0)
        if rest:
            raise TypeError(f"to(): expected a dtype, a device or a tensor, got {type(rest[0]).__name__}")
        if device is not None and not isinstance(device, _C.device):
            device = _C.device(device)
        return ops.aten.to.dtype_layout(self, dtype=dtype, device=device, non_blocking=non_blocking, copy=copy,
                                        memory_format=memory_format)

    def cpu(self) -> "Tensor":
        """This tensor in host memory (self if it already is)."""
        return self.to(device="cpu")

    def contiguous(self, memory_format: Any = None) -> "Tensor":
        """Self if already laid out in ``memory_format`` (row-major by default), else a copy that is."""
        fmt = _formats.contiguous_format if memory_format is None else _formats._format_of(memory_format,
                                                                                             "contiguous")
        if fmt is _formats.preserve_format:
            return self
        if self.is_contiguous(fmt):
            return self
        return ops.aten._to_copy.default(self, memory_format=fmt)

    def type_as(self, other: "Tensor") -> "Tensor":
        return self.to(other.dtype)

    # ---- views (shared storage) -----------------------------------------------
    def reshape(self, *shape: Any) -> "Tensor":
        """A view with the new shape when the strides allow it, else a copy."""
        sizes = _int_list(shape, "reshape")
        try:
            return self.view(sizes)
        except ValueError as e:
            if "view size is not compatible" not in str(e):
                raise
            return ops.aten._to_copy.default(self, memory_format=0).view(sizes)  # contiguous_format

    def transpose(self, dim0: int, dim1: int) -> "Tensor":
        """A view with dimensions dim0 and dim1 swapped (``aten::transpose.int``)."""
        return _transpose(self, dim0, dim1)

    @property
    def T(self) -> "Tensor":
        return _permute(self, list(range(self.dim() - 1, -1, -1)))

    def permute(self, *dims: Any) -> "Tensor":
        """A view with the dimensions reordered (``aten::permute``)."""
        return _permute(self, _int_list(dims, "permute"))

    def select(self, dim: int, index: int) -> "Tensor":
        """The slice at `index` along `dim`, with that dimension removed (``aten::select.int``)."""
        return _select(self, dim, index)

    def _slice(self, dim: int, start: int | None, stop: int | None, step: int) -> "Tensor":
        """Basic slicing's view (``aten::slice.Tensor``); a step below one is Python's ValueError, as PyTorch's."""
        if step <= 0:
            raise ValueError("step must be greater than zero")
        return _slice(self, dim, start, stop, step)

    def narrow(self, dim: int, start: int, length: int) -> "Tensor":
        """A view of `length` elements of `dim` starting at `start` (``aten::narrow``: a slice)."""
        return _narrow(self, dim, start, length)

    def unsqueeze(self, dim: int) -> "Tensor":
        """A view with a size-1 dimension inserted at `dim` (``aten::unsqueeze``)."""
        return _unsqueeze(self, dim)

    def squeeze(self, dim: int | Sequence[int] | None = None) -> "Tensor":
        """A view without the given (or all) size-1 dimensions (``aten::squeeze``, ``.dim``, ``.dims``)."""
        if dim is None:
            return _squeeze(self)
        if isinstance(dim, (list, tuple, Size)):
            return _squeeze_dims(self, list(dim))
        return _squeeze_dim(self, dim)

    def expand(self, *sizes: Any) -> "Tensor":
        """A view repeating size-1 dimensions (stride 0) to the given sizes; -1 keeps a size (``aten::expand``)."""
        return _expand(self, _int_list(sizes, "expand"))

    def expand_as(self, other: "Tensor") -> "Tensor":
        return self.expand(other.shape)

    # ---- indexing ----------------------------------------------------------------
    # x[index] is TensorBase's C slot (Note [Indexing fast path], csrc/python/PyIndexing.cpp): exact ints
    # and int slices on plain tensors go straight to aten::select.int / aten::slice.Tensor, every other
    # index (and every subclass-like tensor) to _getitem below.

    def __setitem__(self, index: Any, value: Any) -> None:
        """``x[index] = value``: copy_/fill_ into the view for basic indices, ``aten::index_put_`` otherwise.
        value (a tensor, a number or nested lists) broadcasts to the indexed shape and is cast to self's dtype."""
        if index is False:  # PyTorch: nothing to write (the value is not even checked)
            return
        target, indices = _apply_slicing(self, index)
        if not indices:
            if isinstance(value, Tensor):
                target.copy_(_strip_leading_ones(value, target.dim()))
            elif isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
                target.fill_(value.item() if isinstance(value, np.generic) else value)
            else:
                target.copy_(_strip_leading_ones(_factories().tensor(value, dtype=self.dtype), target.dim()))
            return
        if isinstance(value, Tensor):
            values = value
            if values.dtype != self.dtype or values.device != self.device:
                values = values.to(dtype=self.dtype, device=self.device)
        elif isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
            values = _factories().full((), value.item() if isinstance(value, np.generic) else value,
                                       dtype=self.dtype, device=self.device)
        else:
            values = _factories().tensor(value, dtype=self.dtype, device=self.device)
        ops.aten.index_put_.default(target, indices, _strip_leading_ones(values, None))

    def nonzero(self, *, as_tuple: bool = False) -> "Tensor | tuple[Tensor, ...]":
        """Indices of the non-zero elements: a [n, ndim] int64 tensor, or with as_tuple=True one
        1-D tensor per dimension (``aten::nonzero_numpy``)."""
        if as_tuple:
            return tuple(ops.aten.nonzero_numpy.default(self))
        return ops.aten.nonzero.default(self)

    # Note: `+`, `*`, `+=`, `*=` (both operand orders) are C slots of
    # _C.TensorBase. Defining __radd__ & co. here would make Python replace the
    # C slot with a generic one that looks both methods up per call (~2x slower).


def _getitem(self: Tensor, index: Any) -> Tensor:
    """PyTorch's indexing, the general path of ``x[index]``: ints, slices, None and Ellipsis give views;
    integer/bool tensors, lists and numpy arrays index through ``aten::index`` (a copy)."""
    # Note [Python hot paths]: x[i] and x[a:b:c] on a tensor with dims are the most common indices;
    # they skip _apply_slicing's general walk (same views, same errors: select's and _slice's). Plain
    # tensors rarely get here with them (the C slot takes them), subclass-like ones always do.
    kind = type(index)
    if kind is int and self.dim():
        return _select_index(self, 0, index)
    if kind is slice and self.dim():
        start, stop, step = index.start, index.stop, index.step
        return self._slice(0, None if start is None else int(start), None if stop is None else int(stop),
                           1 if step is None else int(step))
    result, indices = _apply_slicing(self, index)
    if indices:
        return ops.aten.index.Tensor(result, indices)
    if result is self:
        result = _alias(self)  # x[...] and x[()] are views: aten::alias, as PyTorch's
    return result


_C._set_getitem_fallback(_getitem)


def _select_index(t: Tensor, dim: int, index: int) -> Tensor:
    """``t[index]`` along dim: ``aten::select.int`` with indexing's IndexError text, as PyTorch's applySelect."""
    try:
        return _select(t, dim, index)
    except IndexError:
        size = t.shape[dim]
        if -size <= index < size:
            raise
        raise IndexError(f"index {index} is out of bounds for dimension {dim} with size {size}") from None


def _factories():
    from . import _factories as f

    return f


def _contiguous_strides(shape: Sequence[int]) -> list[int]:
    strides, acc = [], 1
    for s in reversed(list(shape)):
        strides.append(acc)
        acc *= max(s, 1)
    return strides[::-1]


_BOOL_DTYPES = (_C.bool, _C.uint8)


def _is_scalar_number(item: Any) -> bool:
    return isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_))


def _as_index_tensor(item: Any, device: Any) -> Tensor:
    """A list / tuple / numpy array used as an index, as a tensor (empty sequences become int64)."""
    if isinstance(item, np.ndarray) and item.dtype.kind not in "biu":
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    t = _factories().tensor(item)
    if t.numel() == 0 and t.dtype.is_floating_point:
        t = t.to(_C.int64)
    if t.dtype.is_floating_point:
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return t


def _bool_index(value: bool, device: Any) -> Tensor:
    """The index a bool scalar stands for on the size-1 dim it inserts: [0] for True, [] for False."""
    return _factories().zeros(1 if value else 0, dtype=_C.int64, device=device)


def _strip_leading_ones(value: Tensor, ndim: int | None) -> Tensor:
    """PyTorch's setitem drops leading size-1 dims of the value (beyond ndim when given)."""
    dims = value.dim()
    lead = 0
    while lead < dims and value.shape[lead] == 1 and (ndim is None or dims - lead > ndim):
        lead += 1
    if lead == 0:
        return value
    return _squeeze_dims(value, list(range(lead)))


def _sequence_as_tuple(index: Any) -> bool:
    """PyTorch's (and old numpy's) treatSequenceAsTuple: a short list holding a tensor, a sequence, a slice,
    None or Ellipsis is a tuple of indices (``x[[[0, 1], [1, 0]]]`` is ``x[[0, 1], [1, 0]]``), any other list
    is one integer/bool index."""
    if isinstance(index, tuple):
        return True
    if not isinstance(index, list) or len(index) >= 32:
        return False
    return any(isinstance(i, (Tensor, list, tuple, np.ndarray, slice, str)) or i is None or i is Ellipsis
               for i in index)


def _apply_slicing(t: Tensor, index: Any) -> tuple[Tensor, list[Tensor | None]]:
    """Applies the basic parts of an index (ints, slices, None, Ellipsis) as views and collects the
    advanced parts (tensors, lists, arrays, bools) as aten::index indices, PyTorch's applySlicing.

    Returns the view and the index list (empty when there are no advanced parts); entry i of the list
    indexes dim i of the view, a k-dim mask covering k dims.
    """
    items = tuple(index) if _sequence_as_tuple(index) else (index,)
    converted: list[Any] = []
    consumed = 0
    ellipses = 0
    for item in items:
        if item is None or item is Ellipsis or isinstance(item, slice):
            if item is Ellipsis:
                ellipses += 1
            else:
                consumed += item is not None
            converted.append(item)
        elif isinstance(item, (bool, np.bool_)):
            converted.append(bool(item))
        elif _is_scalar_number(item):
            converted.append(int(item))
            consumed += 1
        elif isinstance(item, Tensor):
            if item.dtype in _BOOL_DTYPES:
                consumed += item.dim()
            elif item.dtype.is_floating_point:
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            else:
                consumed += 1
            converted.append(item)
        elif isinstance(item, (list, tuple, np.ndarray)):
            tensor = _as_index_tensor(item, t.device)
            consumed += tensor.dim() if tensor.dtype in _BOOL_DTYPES else 1
            converted.append(tensor)
        else:
            raise TypeError(
                f"invalid index of type {type(item).__name__}: only integers, slices (`:`), ellipsis (`...`), None "
                f"and long or byte Variables are valid indices"
            )
    if ellipses > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > t.dim():
        raise IndexError(f"too many indices for tensor of dimension {t.dim()}")
    result, dim = t, 0
    indices: list[Tensor | None] = []
    covered = 0  # dims of `result` the index list accounts for

    def record(tensor: Tensor, ndims: int) -> None:
        nonlocal covered
        while covered < dim:
            indices.append(None)
            covered += 1
        indices.append(tensor)
        covered += ndims

    for item in converted:
        if item is Ellipsis:
            dim += t.dim() - consumed
        elif item is None:
            result = result.unsqueeze(dim)
            dim += 1
        elif isinstance(item, slice):
            step = 1 if item.step is None else int(item.step)
            start = None if item.start is None else int(item.start)
            stop = None if item.stop is None else int(item.stop)
            result = result._slice(dim, start, stop, step)
            dim += 1
        elif isinstance(item, bool):
            result = result.unsqueeze(dim)
            record(_bool_index(item, t.device), 1)
            dim += 1
        elif isinstance(item, int):
            result = _select_index(result, dim, item)
        elif item.dim() == 0 and item.dtype not in _BOOL_DTYPES:
            result = _select_index(result, dim, int(item.item()))  # a 0-d integer tensor acts as an int
        elif item.dim() == 0:
            result = result.unsqueeze(dim)
            record(_bool_index(bool(item.item()), t.device), 1)
            dim += 1
        else:
            ndims = item.dim() if item.dtype in _BOOL_DTYPES else 1
            record(item, ndims)
            dim += ndims
    return result, indices

# copyreg for torch.device and the tensor rebuild functions (Note [Tensor pickling]).
from . import _tensor_pickle as _tensor_pickle  # noqa: E402,F401


# Tensor.new_* call the aten::new_* operators (csrc/backend_sdk/ops/NewFactories.cpp), so a subclass's
# __torch_dispatch__ and the profiler see aten::new_zeros as in PyTorch; the overloads are looked up once.
_new_empty_op = ops.aten.new_empty.default
_new_zeros_op = ops.aten.new_zeros.default
_new_ones_op = ops.aten.new_ones.default
_new_full_op = ops.aten.new_full.default


def _new_factory(op: Any, self: Any, size: tuple, what: str, dtype: Any, device: Any, layout: Any,
                 pin_memory: bool, requires_grad: bool, *fill: Any) -> Any:
    from ._factories import _sizes

    if device is not None and not isinstance(device, _C.device):
        device = _C.device(device)
    out = op(self, _sizes(size, what), *fill, dtype=dtype, layout=layout, device=device,
             pin_memory=pin_memory or None)
    if type(out) is Tensor:
        _C._reset_version(out)  # made here, not written in place by anyone (as the factories' _new)
    return out.requires_grad_() if requires_grad else out
