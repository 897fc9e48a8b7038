"""Gradient clipping (``torch.nn.utils.clip_grad``): one norm per gradient, then the norm of the norms."""
from __future__ import annotations

import math
import warnings
from typing import Iterable, Optional, Union

from ... import _C
from ..._ops import ops
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]

_TensorOrTensors = Union[Tensor, Iterable[Tensor]]


def _as_list(tensors: _TensorOrTensors) -> list:
    if isinstance(tensors, _C.TensorBase):
        return [tensors]
    return list(tensors)


def get_total_norm(tensors: _TensorOrTensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: Optional[bool] = None) -> Tensor:
    """The norm of the norms of tensors (as if concatenated), on the first tensor's device."""
    from ..._factories import tensor as make_tensor

    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return make_tensor(0.0)
    first_device = tensors[0].device
    with no_grad():
        norms = [ops.aten.linalg_vector_norm(g, norm_type).to(first_device) for g in tensors]
        total_norm = ops.aten.linalg_vector_norm(ops.aten.stack(norms), norm_type)
    if error_if_nonfinite and not math.isfinite(float(total_norm.item())):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it "
                           "cannot be clipped. To disable this error and scale the gradients by the non-finite norm "
                           "anyway, set `error_if_nonfinite=False`")
    return total_norm


def clip_grads_with_norm_(parameters: _TensorOrTensors, max_norm: float, total_norm: Tensor,
                          foreach: Optional[bool] = None) -> None:
    """Scales the gradients by min(1, max_norm / (total_norm + 1e-6)), in place."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if len(grads) == 0:
        return
    with no_grad():
        clip_coef = float(max_norm) / (total_norm + 1e-6)
        clip_coef_clamped = clip_coef.clamp(max=1.0)
        for g in grads:
            g.mul_(clip_coef_clamped.to(g.device))


def clip_grad_norm_(parameters: _TensorOrTensors, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: Optional[bool] = None) -> Tensor:
    """Rescales the gradients of parameters so their total norm is at most max_norm; returns the total
    norm before clipping. error_if_nonfinite=True raises RuntimeError for a nan/inf norm."""
    parameters = _as_list(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters: _TensorOrTensors, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: Optional[bool] = None) -> Tensor:
    """Deprecated alias of clip_grad_norm_ (warns, as PyTorch's)."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters: _TensorOrTensors, clip_value: float, foreach: Optional[bool] = None) -> None:
    """Clamps every gradient to [-clip_value, clip_value], in place."""
    clip_value = float(clip_value)
    with no_grad():
        for p in _as_list(parameters):
            if p.grad is not None:
                p.grad.clamp_(min=-clip_value, max=clip_value)
