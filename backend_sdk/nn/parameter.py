"""``nn.Parameter`` and ``nn.Buffer``, as ``torch.nn.parameter``.

A Parameter is a Tensor subclass: ``Parameter(data)`` detaches ``data`` (a new
tensor sharing its storage) and turns the new wrapper into a Parameter. The SDK
keeps one Python wrapper per tensor (Note [Python object back-pointer]), so the
class sticks for as long as the Parameter object lives, which a Module's
``_parameters`` dict guarantees. Operations on a Parameter return plain Tensors,
as in PyTorch.
"""
from __future__ import annotations

from typing import Any

from .. import _C
from .._tensor import Tensor

__all__ = ["Parameter", "Buffer", "is_lazy"]


def _empty() -> Tensor:
    from .._factories import empty

    return empty(0)


class _ParameterMeta(type(Tensor)):  # type: ignore[misc]
    """isinstance(t, Parameter) is also True for a ``__torch_dispatch__`` subclass instance made a parameter."""

    def __instancecheck__(cls, instance: Any) -> bool:
        if cls is Parameter and getattr(instance, "_is_param", False) and isinstance(instance, _C.TensorBase):
            return True
        return super().__instancecheck__(instance)


class Parameter(Tensor, metaclass=_ParameterMeta):
    """A tensor that is a module parameter: assigning it to a Module attribute registers it.

    ``Parameter(data=None, requires_grad=True)``: shares ``data``'s storage; requires grad by default.
    A ``__torch_dispatch__`` subclass instance keeps its class (its handler runs its operators) and is
    marked ``_is_param`` instead, as in PyTorch.
    """

    __module__ = "backend_sdk.nn"

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> "Parameter":
        if data is None:
            data = _empty()
        if not isinstance(data, _C.TensorBase):
            raise TypeError(f"Parameter(): expected a Tensor as data, but got {type(data).__name__}")
        if _C._has_python_key(data):  # Note [Python dispatch] (backend_sdk/_python_dispatch_impl.py)
            p = data.detach().requires_grad_(requires_grad)
            p._is_param = True
            return p  # type: ignore[return-value]
        t = data.detach()
        t.__class__ = cls
        t.requires_grad_(requires_grad)
        return t  # type: ignore[return-value]

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, proto: int) -> Any:
        from .._tensor_pickle import reduce_parameter

        return reduce_parameter(self)

    def __deepcopy__(self, memo: dict) -> "Parameter":
        if id(self) in memo:
            return memo[id(self)]
        result = Parameter(self.detach().clone(), self.requires_grad)
        memo[id(self)] = result
        return result


class _BufferMeta(type(Tensor)):  # type: ignore[misc]
    """isinstance(t, Buffer) is True for tensors marked as buffers by Buffer(...)."""

    def __instancecheck__(cls, instance: Any) -> bool:
        if cls is Buffer:
            return isinstance(instance, _C.TensorBase) and getattr(instance, "_is_buffer", False)
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """A tensor that is a module buffer: assigning it to a Module attribute registers it.

    ``Buffer(data=None, *, persistent=True)`` returns a detached plain Tensor marked as a buffer
    (non-persistent buffers are left out of ``state_dict``), as ``torch.nn.Buffer``.
    """

    __module__ = "backend_sdk.nn"

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True) -> Tensor:  # type: ignore[misc]
        if data is None:
            data = _empty()
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t


def is_lazy(param: Any) -> bool:
    """Always False: the SDK has no uninitialized (lazy) parameters."""
    return False
