"""``backend_sdk.utils.dlpack``: ``torch.utils.dlpack`` (``to_dlpack``, ``from_dlpack``, ``DLDeviceType``).

CPU tensors are exported as kDLCPU; accelerator tensors as kDLExtDev with their
device index, as PyTorch exports a PrivateUse1 tensor, and a kDLExtDev capsule
or object imports onto the current accelerator (Note [DLPack device tensors]
in csrc/python/PyInterop.cpp). numpy interop works both ways:
``np.from_dlpack(cpu_tensor)`` and ``from_dlpack(np_array)`` share memory.
"""
from __future__ import annotations

import enum
from typing import Any

from .. import _C

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]


class DLDeviceType(enum.IntEnum):
    """DLPack's device types (the numbers of dlpack.h)."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


def to_dlpack(tensor: Any) -> Any:
    """A DLPack capsule ('dltensor') sharing ``tensor``'s memory; it can be consumed once."""
    from .._tensor import Tensor

    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_dlpack: expected a Tensor, got {type(tensor).__name__}")
    if tensor.device.type == "meta":
        raise ValueError("Unknown device type meta for Dlpack")
    return _C._to_dlpack(tensor)


def from_dlpack(ext_tensor: Any) -> Any:
    """A tensor sharing the memory of an object with ``__dlpack__`` or of a DLPack capsule (which it consumes)."""
    from .._factories import from_dlpack as _from_dlpack

    return _from_dlpack(ext_tensor)
