"""Storages: ``UntypedStorage`` (the bytes behind a tensor) and ``TypedStorage`` (``Tensor.storage()``).

Note [Storage objects]
~~~~~~~~~~~~~~~~~~~~~~
A storage object is a face of one StorageImpl, held through a uint8 tensor
over all its bytes (``_C._storage_bytes``), so every operation is a tensor
operation on that byte view: ``cpu()``/``to()`` copy the bytes, ``copy_``
writes them in place, ``resize_`` grows the StorageImpl that every tensor
viewing it sees (as PyTorch's; a smaller size keeps the bytes, while
PyTorch's reallocates), ``pin_memory()`` copies into pinned host memory of
the current accelerator. ``TypedStorage`` is PyTorch's deprecated typed view
(``Tensor.storage()`` warns once, with PyTorch's text): the same bytes counted
in elements of a dtype. Two storage objects of one tensor are distinct Python
objects over the same memory (compare ``data_ptr()``), as in PyTorch.
"""
from __future__ import annotations

import warnings
from typing import Any

from . import _C

__all__ = ["UntypedStorage", "TypedStorage"]


def _bytes_of(tensor: Any) -> Any:
    return _C._storage_bytes(tensor)


class UntypedStorage:
    """The bytes behind a tensor and its views (``Tensor.untyped_storage()``; ``torch.UntypedStorage``).

    ``UntypedStorage(nbytes, *, device=None)`` allocates a new one.
    """

    __module__ = "backend_sdk"

    def __init__(self, nbytes: Any = 0, *, device: Any = None) -> None:
        from ._tensor import Tensor

        if isinstance(nbytes, Tensor):  # the storage a tensor views (internal)
            self._tensor = _bytes_of(nbytes)
            return
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 0:
            raise TypeError(f"UntypedStorage(): nbytes must be a non-negative int, got {nbytes!r}")
        from ._factories import empty

        self._tensor = empty(nbytes, dtype=_C.uint8, device=device)

    @classmethod
    def _wrap_bytes(cls, byte_tensor: Any) -> "UntypedStorage":
        s = cls.__new__(cls)
        s._tensor = _bytes_of(byte_tensor)
        return s

    def nbytes(self) -> int:
        """Size of the buffer in bytes."""
        return _C._storage_nbytes(self._tensor)

    def size(self) -> int:
        """Same as nbytes(): the storage is a byte array."""
        return self.nbytes()

    def __len__(self) -> int:
        return self.nbytes()

    def element_size(self) -> int:
        """1: an untyped storage counts bytes."""
        return 1

    def data_ptr(self) -> int:
        """Address of the buffer's first byte."""
        return _C._storage_data_ptr(self._tensor)

    @property
    def device(self) -> _C.device:
        """The device the buffer lives on."""
        return self._tensor.device

    @property
    def is_cpu(self) -> bool:
        return self.device.type == "cpu"

    def get_device(self) -> int:
        """The device index (-1 for CPU)."""
        return -1 if self.is_cpu else self.device.index

    def _bytes(self) -> Any:
        return _bytes_of(self._tensor)

    def resize_(self, size: int) -> "UntypedStorage":
        """Grows the storage to ``size`` bytes, keeping its bytes, for every tensor viewing it (Note [Storage
        objects])."""
        self._bytes().resize_([int(size)])
        return self

    def cpu(self) -> "UntypedStorage":
        """This storage if it is on the CPU, else a copy of its bytes in host memory."""
        return self if self.is_cpu else UntypedStorage._wrap_bytes(self._bytes().cpu())

    def to(self, *, device: Any, non_blocking: bool = False) -> "UntypedStorage":
        """A copy of the bytes on ``device`` (self if it is already there)."""
        d = _C.device(device)
        if d.type == self.device.type and (d.index is None or d.index == self.device.index):
            return self
        return UntypedStorage._wrap_bytes(self._bytes().to(d, non_blocking=non_blocking))

    def clone(self) -> "UntypedStorage":
        """A copy of the bytes on the same device."""
        return UntypedStorage._wrap_bytes(self._bytes().clone())

    def copy_(self, src: "UntypedStorage", non_blocking: bool = False) -> "UntypedStorage":
        """Writes ``src``'s bytes into this storage (same size; any devices)."""
        if not isinstance(src, (UntypedStorage, TypedStorage)):
            raise TypeError(f"copy_(): argument 'src' must be a storage, not {type(src).__name__}")
        src_u = src.untyped() if isinstance(src, TypedStorage) else src
        if src_u.nbytes() != self.nbytes():
            raise RuntimeError(f"copy_: size mismatch, storage of {self.nbytes()} bytes, source of "
                               f"{src_u.nbytes()} bytes")
        self._bytes().copy_(src_u._bytes(), non_blocking=non_blocking)
        return self

    def fill_(self, value: int) -> "UntypedStorage":
        """Sets every byte to ``value``."""
        self._bytes().fill_(int(value))
        return self

    def tolist(self) -> list[int]:
        """The bytes as a list of ints."""
        return self._bytes().tolist()

    def __getitem__(self, i: Any) -> Any:
        """A byte as an int; a slice (step 1) is a new storage over those bytes (shared, as PyTorch's)."""
        if isinstance(i, slice):
            start, stop, step = i.indices(self.nbytes())
            if step != 1:
                raise RuntimeError("slices of storages must have step 1")
            return UntypedStorage._wrap_bytes(_C._storage_slice(self._tensor, start, max(start, stop)))
        return int(self._bytes()[i].item())

    def is_pinned(self, device: Any = None) -> bool:
        """True if the bytes are in pinned host memory of the current accelerator."""
        return self._bytes().is_pinned()

    def pin_memory(self, device: Any = None) -> "UntypedStorage":
        """A copy in pinned host memory of the current accelerator (self if already pinned)."""
        if self.is_pinned():
            return self
        return UntypedStorage._wrap_bytes(self._bytes().pin_memory())

    def untyped(self) -> "UntypedStorage":
        return self

    def __repr__(self) -> str:
        return f"UntypedStorage(nbytes={self.nbytes()}, device='{self.device}')"


_TYPED_STORAGE_WARNED = False


def _warn_typed_storage_removal() -> None:
    global _TYPED_STORAGE_WARNED
    if not _TYPED_STORAGE_WARNED:
        _TYPED_STORAGE_WARNED = True
        warnings.warn("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the "
                      "only storage class. This should only matter to you if you are using storages directly.  To "
                      "access UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()",
                      UserWarning, stacklevel=3)


class TypedStorage:
    """A storage counted in elements of a dtype (``Tensor.storage()``; PyTorch's deprecated ``TypedStorage``)."""

    __module__ = "backend_sdk"
    is_sparse = False

    def __init__(self, *, wrap_storage: UntypedStorage, dtype: Any) -> None:
        if not isinstance(wrap_storage, UntypedStorage):
            raise TypeError(f"TypedStorage(): wrap_storage must be an UntypedStorage, not "
                            f"{type(wrap_storage).__name__}")
        self._untyped_storage = wrap_storage
        self.dtype = dtype

    def untyped(self) -> UntypedStorage:
        """The bytes this storage counts in elements."""
        return self._untyped_storage

    @property
    def device(self) -> _C.device:
        return self._untyped_storage.device

    @property
    def is_cpu(self) -> bool:
        return self._untyped_storage.is_cpu

    def element_size(self) -> int:
        return self.dtype.itemsize

    def nbytes(self) -> int:
        return self._untyped_storage.nbytes()

    def size(self) -> int:
        """The number of elements of ``dtype`` the bytes hold."""
        return self.nbytes() // self.element_size()

    def __len__(self) -> int:
        return self.size()

    def data_ptr(self) -> int:
        return self._untyped_storage.data_ptr()

    def get_device(self) -> int:
        return self._untyped_storage.get_device()

    def tolist(self) -> list[Any]:
        """The elements as a list of Python numbers."""
        from ._factories import empty

        raw = self._untyped_storage.cpu()._bytes().numpy()
        element = empty(0, dtype=self.dtype).numpy().dtype
        return raw[: self.size() * self.element_size()].view(element).tolist()

    def __getitem__(self, i: int) -> Any:
        values = self.tolist()
        return values[i]

    def cpu(self) -> "TypedStorage":
        return TypedStorage(wrap_storage=self._untyped_storage.cpu(), dtype=self.dtype)

    def to(self, *, device: Any, non_blocking: bool = False) -> "TypedStorage":
        return TypedStorage(wrap_storage=self._untyped_storage.to(device=device, non_blocking=non_blocking),
                            dtype=self.dtype)

    def copy_(self, src: Any, non_blocking: bool = False) -> "TypedStorage":
        self._untyped_storage.copy_(src, non_blocking)
        return self

    def resize_(self, size: int) -> "TypedStorage":
        self._untyped_storage.resize_(int(size) * self.element_size())
        return self

    def is_pinned(self, device: Any = None) -> bool:
        return self._untyped_storage.is_pinned()

    def pin_memory(self, device: Any = None) -> "TypedStorage":
        return TypedStorage(wrap_storage=self._untyped_storage.pin_memory(), dtype=self.dtype)

    def __repr__(self) -> str:
        return f"TypedStorage(dtype={self.dtype}, device='{self.device}') of size {self.size()}"
