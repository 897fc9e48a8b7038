"""``parameters_to_vector`` / ``vector_to_parameters`` (``torch.nn.utils.convert_parameters``)."""
from __future__ import annotations

from typing import Iterable

from ... import _C
from ..._ops import ops
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _typename(obj: object) -> str:
    return type(obj).__module__ + "." + type(obj).__qualname__


def _check_param_device(param: Tensor, old_param_device: object) -> object:
    if old_param_device is None:
        return param.device
    if param.device != old_param_device:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")
    return old_param_device


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """The parameters flattened and concatenated into one 1-D tensor (differentiable)."""
    param_device = None
    vec = []
    for param in parameters:
        param_device = _check_param_device(param, param_device)
        vec.append(param.reshape(-1))
    return ops.aten.cat(vec)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copies consecutive slices of the 1-D vec into the parameters.

    PyTorch rebinds ``param.data`` to a view of vec; the SDK cannot rebind a tensor's storage from
    Python, so it copies the values into each parameter under no_grad (same values; later writes to
    vec do not show in the parameters)."""
    if not isinstance(vec, _C.TensorBase):
        raise TypeError(f"expected torch.Tensor, but got: {_typename(vec)}")
    param_device = None
    pointer = 0
    params = list(parameters)
    total = sum(p.numel() for p in params)
    if vec.dim() != 1 or vec.numel() != total:
        raise RuntimeError(f"vector_to_parameters: expected a 1-D vector of {total} elements (the parameters' total), "
                           f"got shape {list(vec.shape)}")
    with no_grad():
        for param in params:
            param_device = _check_param_device(param, param_device)
            num_param = param.numel()
            param.copy_(vec[pointer:pointer + num_param].view(list(param.shape)))
            pointer += num_param
