"""Tensor methods and functions that are Python conveniences over operators, with PyTorch's names.

The dtype shorthands (``float()``, ``long()``, ...) are ``to(dtype)``, so they return self when
the dtype already matches, as PyTorch's do; ``mT``/``mH`` are ``transpose(-2, -1)`` views
(``mH`` is the same for real dtypes: the SDK has no complex dtypes); ``nelement`` and
``ndimension`` are PyTorch's aliases of ``numel`` and ``dim``.
"""
from __future__ import annotations

from typing import Any

from . import _C
from ._ops import ops
from ._tensor import Tensor

__all__ = ["is_tensor", "numel", "install"]

_SHORTHANDS = {
    "float": _C.float32, "double": _C.float64, "half": _C.float16, "bfloat16": _C.bfloat16,
    "int": _C.int32, "long": _C.int64, "short": _C.int16, "char": _C.int8, "byte": _C.uint8, "bool": _C.bool,
}

# PyTorch's legacy tensor type names (Tensor.type()).
_TYPE_NAMES = {
    _C.float32: "FloatTensor", _C.float64: "DoubleTensor", _C.float16: "HalfTensor", _C.bfloat16: "BFloat16Tensor",
    _C.int32: "IntTensor", _C.int64: "LongTensor", _C.int16: "ShortTensor", _C.int8: "CharTensor",
    _C.uint8: "ByteTensor", _C.bool: "BoolTensor",
}


def _shorthand(name: str, dtype: Any):
    def method(self: Tensor, memory_format: Any = None) -> Tensor:
        return self.to(dtype)

    method.__name__ = name
    method.__doc__ = f"``self.{name}()`` is ``self.to({dtype!r})`` (self when the dtype already matches)."
    return method


def _type(self: Tensor, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
    """Without dtype: the legacy type name ("backend_sdk.FloatTensor", "backend_sdk.accel.FloatTensor");
    with a dtype or a type name: the tensor cast to it."""
    if dtype is None:
        prefix = "backend_sdk." if self.device.type == "cpu" else f"backend_sdk.{self.device.type}."
        return prefix + _TYPE_NAMES[self.dtype]
    if isinstance(dtype, str):
        short = dtype.rsplit(".", 1)[-1]
        for dt, name in _TYPE_NAMES.items():
            if name == short:
                return self.to(dt, non_blocking=non_blocking)
        raise ValueError(f"invalid type: '{dtype}'")
    return self.to(dtype, non_blocking=non_blocking)


def _get_device(self: Tensor) -> int:
    """-1 for a cpu tensor, else the device index (PyTorch's Tensor.get_device)."""
    return -1 if self.device.type == "cpu" else int(self.device.index or 0)


def _new_tensor(self: Tensor, data: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A new tensor from data with self's dtype and device unless given (always a copy)."""
    from ._factories import tensor

    if isinstance(data, Tensor):
        out = data.detach().to(dtype=dtype or data.dtype, device=device or self.device, copy=True)
    else:
        out = tensor(data, dtype=dtype or self.dtype, device=device or self.device)
    return out.requires_grad_(requires_grad) if requires_grad else out


def is_tensor(obj: Any) -> bool:
    """True when obj is a backend_sdk Tensor (PyTorch's torch.is_tensor)."""
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> int:
    """The number of elements of input."""
    return input.numel()


def install() -> None:
    """Attaches the methods to Tensor (called once by backend_sdk/__init__)."""
    for name, dtype in _SHORTHANDS.items():
        setattr(Tensor, name, _shorthand(name, dtype))
    Tensor.type = _type
    Tensor.get_device = _get_device
    Tensor.new_tensor = _new_tensor
    Tensor.nelement = lambda self: self.numel()
    Tensor.ndimension = lambda self: self.dim()
    Tensor.mT = property(lambda self: _batch_transpose(self, "mT"), doc="transpose(-2, -1) (a view)")
    Tensor.mH = property(lambda self: _batch_transpose(self, "mH"), doc="the conjugate transpose: mT for real dtypes")
    Tensor.H = property(lambda self: self.transpose(0, 1) if self.dim() == 2 else _matrix_only(self),
                        doc="the conjugate transpose of a matrix")
    Tensor.is_cuda = property(lambda self: False, doc="False: the SDK has no CUDA device")
    Tensor.swapdims = Tensor.swapaxes = _swapdims
    Tensor.split = _split
    for name, view in _INPLACE_VIEWS.items():
        setattr(Tensor, name, _inplace_view(name, view))


def _split(self: Tensor, split_size: Any, dim: int = 0) -> list:
    """Views of equal chunks of ``split_size`` along dim (``aten::split.Tensor``), or of the given sizes
    (a list: ``aten::split_with_sizes``), as PyTorch's Tensor.split."""
    if isinstance(split_size, (list, tuple)):
        return ops.aten.split_with_sizes.default(self, [int(s) for s in split_size], dim)
    return ops.aten.split.Tensor(self, split_size, dim)


def _swapdims(self: Tensor, dim0: int, dim1: int) -> Tensor:
    """transpose(dim0, dim1): PyTorch's alias."""
    return self.transpose(dim0, dim1)


# The in-place view operators: self takes the geometry of the view (aten::t_, transpose_, squeeze_,
# unsqueeze_: in-place operators, recorded with PyTorch's node names, TBackward1, ...).
def _squeeze_(self: Tensor, dim: Any = None) -> Tensor:
    """In place: self becomes its squeeze view (``aten::squeeze_``, ``.dim`` or ``.dims``)."""
    if dim is None:
        return ops.aten.squeeze_.default(self)
    if isinstance(dim, (list, tuple)):
        return ops.aten.squeeze_.dims(self, [int(d) for d in dim])
    return ops.aten.squeeze_.dim(self, dim)


_INPLACE_VIEWS: dict[str, Any] = {
    "transpose_": lambda self, dim0, dim1: ops.aten.transpose_.default(self, dim0, dim1),
    "swapdims_": lambda self, dim0, dim1: ops.aten.transpose_.default(self, dim0, dim1),
    "swapaxes_": lambda self, dim0, dim1: ops.aten.transpose_.default(self, dim0, dim1),
    "t_": lambda self: ops.aten.t_.default(self),
    "squeeze_": _squeeze_,
    "unsqueeze_": lambda self, dim: ops.aten.unsqueeze_.default(self, dim),
}


def _inplace_view(name: str, view: Any) -> Any:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return view(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In place: self becomes its {name[:-1]} view (same storage, new sizes and strides)."
    return method


def _matrix_only(self: Tensor) -> Tensor:
    raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.dim()}-D tensor.")


def _batch_transpose(self: Tensor, name: str) -> Tensor:
    if self.dim() < 2:
        raise RuntimeError(f"tensor.{name} is only supported on matrices or batches of matrices. Got {self.dim()}-D tensor.")
    return self.transpose(-2, -1)
