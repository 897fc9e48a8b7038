"""``backend_sdk.nn.init``: PyTorch's parameter initialisers.

Every initialiser fills in place under no_grad and draws from ``generator`` (default: the
default generator of the tensor's device), through the random primitives ``uniform_`` and
``normal_``, so ``manual_seed`` reproduces the same values on every backend
(Note [Philox random numbers]). Two need more than those primitives: ``trunc_normal_``
resamples the draws that fall outside [a, b] (PyTorch inverts the CDF with ``erfinv``, an
operator the SDK does not have; same distribution, other values) and ``orthogonal_``
takes the QR decomposition of its normal draws with numpy on the host (no ``linalg_qr``
operator yet).
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Optional

import numpy as np

from .. import _C
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad

__all__ = [
    "calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_", "dirac_",
    "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "sparse_",
]


def calculate_gain(nonlinearity: str, param: Optional[float] = None) -> float:
    """The recommended gain for a nonlinearity (linear/conv/sigmoid 1, tanh 5/3, relu sqrt(2),
    leaky_relu sqrt(2 / (1 + slope^2)), selu 3/4)."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Optional[_C.Generator] = None) -> Tensor:
    """Fills tensor with values drawn from U(a, b)."""
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Optional[_C.Generator] = None) -> Tensor:
    """Fills tensor with values drawn from N(mean, std^2)."""
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator: Optional[_C.Generator] = None) -> Tensor:
    """Fills tensor with N(mean, std^2) draws truncated to [a, b] (out-of-range draws are redrawn)."""
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values may "
                      "be incorrect.", stacklevel=2)
    with no_grad():
        tensor.normal_(mean, std, generator=generator)
        for _ in range(1000):
            outside = (tensor < a).logical_or(tensor > b)
            if not bool(outside.any().item()):
                break
            fresh = _C_empty_like(tensor).normal_(mean, std, generator=generator)
            tensor.copy_(_where(outside, fresh, tensor))
        return tensor.clamp_(min=a, max=b)


def _C_empty_like(t: Tensor) -> Tensor:
    from .._factories import empty_like

    return empty_like(t)


def _where(cond: Tensor, a: Tensor, b: Tensor) -> Tensor:
    from .._ops import ops

    return ops.aten.where.self(cond, a, b)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fills tensor with val."""
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    """Fills tensor with 1."""
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fills tensor with 0."""
    return constant_(tensor, 0.0)


def eye_(tensor: Tensor) -> Tensor:
    """Fills a 2-D tensor with the identity matrix."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    from .._ops import ops

    with no_grad():
        return tensor.copy_(ops.aten.eye.m(tensor.shape[0], tensor.shape[1], dtype=tensor.dtype))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fills a 3-, 4- or 5-D tensor with the Dirac delta (convolution filters that keep their input)."""
    dimensions = tensor.dim()
    if dimensions not in [3, 4, 5]:
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.size()
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_chans_per_grp = sizes[0] // groups
    min_dim = min(out_chans_per_grp, sizes[1])
    with no_grad():
        tensor.fill_(0)
        for g in range(groups):
            for d in range(min_dim):
                centre = tuple(s // 2 for s in sizes[2:])
                tensor[(g * out_chans_per_grp + d, d) + centre] = 1
    return tensor


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    dimensions = tensor.dim()
    if dimensions < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    num_input_fmaps = tensor.size(1)
    num_output_fmaps = tensor.size(0)
    receptive_field_size = 1
    if tensor.dim() > 2:
        for s in tensor.shape[2:]:
            receptive_field_size *= s
    return num_input_fmaps * receptive_field_size, num_output_fmaps * receptive_field_size


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Optional[_C.Generator] = None) -> Tensor:
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Optional[_C.Generator] = None) -> Tensor:
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator: Optional[_C.Generator] = None) -> Tensor:
    """U(-bound, bound) with bound = gain * sqrt(3 / fan_mode) (He et al.)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator: Optional[_C.Generator] = None) -> Tensor:
    """N(0, std^2) with std = gain / sqrt(fan_mode)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    return normal_(tensor, 0, std, generator)


def orthogonal_(tensor: Tensor, gain: float = 1, generator: Optional[_C.Generator] = None) -> Tensor:
    """A (semi-)orthogonal matrix (QR of normal draws, signs fixed by R's diagonal), times gain;
    dims after the first are flattened."""
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    from .._factories import empty, from_numpy

    rows = tensor.size(0)
    cols = tensor.numel() // rows
    flattened = empty(rows, cols, dtype=_C.float64).normal_(0, 1, generator=generator)
    a = flattened.numpy()
    if rows < cols:
        a = a.T
    q, r = np.linalg.qr(a)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    with no_grad():
        result = from_numpy(np.ascontiguousarray(q * gain)).to(dtype=tensor.dtype)
        tensor.copy_(result.view(list(tensor.shape)))
    return tensor


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator: Optional[_C.Generator] = None) -> Tensor:
    """A 2-D tensor with N(0, std^2) values and ceil(sparsity * rows) zeros in each column."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    from ..utils.data.sampler import _randperm

    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    with no_grad():
        tensor.normal_(0, std, generator=generator)
        for col_idx in range(cols):
            row_indices = _randperm(rows, generator).tolist()
            for r in row_indices[:num_zeros]:
                tensor[r, col_idx] = 0
    return tensor
