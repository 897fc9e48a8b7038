"""``backend_sdk.nn.functional``: ``torch.nn.functional``'s signatures over the SDK's operators.

Where an aten operator exists (``linear``, ``relu``, ``gelu``, ``silu``, ``softmax``,
``log_softmax``, ``cross_entropy_loss``, ``nll_loss_nd``, ``mse_loss``) the function calls
it; the others are composites of existing operators, so autograd works through the
operators' own derivative formulas and every backend that implements those operators
runs them (``dropout`` = ``bernoulli`` mask times the input, ``one_hot`` = ``scatter``
into zeros, the losses from ``abs``/``where``/``log1p``...). Operators the SDK does not
have yet (convolution, pooling, norms, embedding, pad, interpolate, attention) are not
faked here: their functional names are absent.

The legacy ``size_average``/``reduce`` arguments map to ``reduction`` as in PyTorch.
"""
from __future__ import annotations

import math
import warnings
from typing import Any, List, Optional, Sequence

from .. import _C
from .._ops import ops
from .._tensor import Tensor

__all__ = [
    "linear", "bilinear", "relu", "relu_", "gelu", "silu", "sigmoid", "tanh", "leaky_relu", "leaky_relu_",
    "softmax", "log_softmax", "dropout", "one_hot", "normalize", "cosine_similarity", "pairwise_distance",
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
    "binary_cross_entropy_with_logits", "binary_cross_entropy",
]

_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _legacy_reduction(size_average: Optional[bool], reduce: Optional[bool]) -> str:
    """PyTorch's _Reduction.legacy_get_string: the reduction the deprecated arguments ask for."""
    warnings.warn("size_average and reduce args will be deprecated, please use reduction='sum' instead.",
                  stacklevel=3)
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _reduction_string(reduction: str, size_average: Optional[bool] = None, reduce: Optional[bool] = None) -> str:
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduction_enum(reduction: str, size_average: Optional[bool] = None, reduce: Optional[bool] = None) -> int:
    return _REDUCTIONS[_reduction_string(reduction, size_average, reduce)]


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _warn_size_mismatch(input: Tensor, target: Tensor) -> None:
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
                      "This will likely lead to incorrect results due to broadcasting. Please ensure they have the "
                      "same size.", stacklevel=3)


# ---- linear -------------------------------------------------------------------------------------


def linear(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """y = input @ weight.T + bias (``aten::linear``); input (*, in), weight (out, in), bias (out)."""
    return ops.aten.linear(input, weight, bias)


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """y_k = input1 @ weight[k] @ input2 + bias[k]: input1 (*, in1), input2 (*, in2), weight (out, in1, in2).

    A composite of matmul, mul and sum (PyTorch's ``aten::bilinear`` is composite too)."""
    if input1.dim() != input2.dim():
        raise ValueError(f"bilinear(): input dimensions do not match: got {input1.dim()} and {input2.dim()}")
    if tuple(input1.shape[:-1]) != tuple(input2.shape[:-1]):
        raise ValueError(f"bilinear(): input batch dimensions do not match: got {list(input1.shape[:-1])} and "
                         f"{list(input2.shape[:-1])}")
    if weight.dim() != 3:
        raise ValueError(f"bilinear(): weight must be three-dimensional, got {weight.dim()} dimensions")
    out_f, in1, in2 = weight.shape
    if input1.shape[-1] != in1:
        raise ValueError(f"bilinear(): input1 size does not match weight size: got {input1.shape[-1]} but expected "
                         f"{in1}")
    if input2.shape[-1] != in2:
        raise ValueError(f"bilinear(): input2 size does not match weight size: got {input2.shape[-1]} but expected "
                         f"{in2}")
    batch = list(input1.shape[:-1])
    x1 = input1.reshape(-1, in1)
    x2 = input2.reshape(-1, in2)
    # (N, in1) @ (in1, out*in2) -> (N, out, in2), then contract in2 with x2.
    w = weight.permute(1, 0, 2).reshape(in1, out_f * in2)
    t = ops.aten.matmul(x1, w).view(x1.shape[0], out_f, in2)
    y = (t * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        y = y + bias
    return y.view(batch + [out_f])


# ---- activations ----------------------------------------------------------------------------------


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(input, 0) (``aten::relu`` / ``aten::relu_``)."""
    return ops.aten.relu_(input) if inplace else ops.aten.relu(input)


def relu_(input: Tensor) -> Tensor:
    """In-place relu."""
    return ops.aten.relu_(input)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit; approximate='tanh' for the tanh approximation (``aten::gelu``)."""
    return ops.aten.gelu(input, approximate=approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x) (``aten::silu``)."""
    return ops.aten.silu_(input) if inplace else ops.aten.silu(input)


def sigmoid(input: Tensor) -> Tensor:
    """1 / (1 + exp(-x))."""
    return ops.aten.sigmoid(input)


def tanh(input: Tensor) -> Tensor:
    """Hyperbolic tangent."""
    return ops.aten.tanh(input)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x where x > 0, else negative_slope * x (a composite of ``where``; PyTorch has ``aten::leaky_relu``)."""
    result = ops.aten.where(input > 0, input, input * negative_slope)
    if inplace:
        return input.copy_(result)
    return result


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """In-place leaky_relu."""
    return leaky_relu(input, negative_slope, inplace=True)


def _get_softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: Optional[int] = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """exp(x) / sum(exp(x)) along dim (``aten::softmax.int``); dtype casts the input first."""
    if dim is None:
        dim = _get_softmax_dim("softmax", input.dim(), _stacklevel)
    return ops.aten.softmax.int(input, dim, dtype)


def log_softmax(input: Tensor, dim: Optional[int] = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """log(softmax(x)) along dim, computed stably (``aten::log_softmax.int``)."""
    if dim is None:
        dim = _get_softmax_dim("log_softmax", input.dim(), _stacklevel)
    return ops.aten.log_softmax.int(input, dim, dtype)


# ---- dropout --------------------------------------------------------------------------------------


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zeroes elements with probability p and scales the rest by 1/(1-p) while training.

    The mask is ``aten::bernoulli.p`` drawn from the default generator of input's device, so
    ``manual_seed`` reproduces it on every backend (Note [Philox random numbers]).
    """
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        result = input * 0
    else:
        from ..autograd.grad_mode import no_grad

        with no_grad():
            mask = ops.aten.bernoulli.p(input, 1.0 - p)
        result = input * mask * (1.0 / (1.0 - p))
    if inplace:
        return input.copy_(result)
    return result


# ---- misc -----------------------------------------------------------------------------------------


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding: shape (*, num_classes), 1 at each index (a ``scatter`` into zeros).
    num_classes=-1 uses max(tensor) + 1."""
    from .._factories import zeros

    if tensor.dtype != _C.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if tensor.numel() == 0:
        if num_classes <= 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        return zeros(list(tensor.shape) + [num_classes], dtype=_C.int64, device=tensor.device)
    if int(tensor.min().item()) < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = int(tensor.max().item()) + 1
    elif int(tensor.max().item()) >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = zeros(list(tensor.shape) + [num_classes], dtype=_C.int64, device=tensor.device)
    return out.scatter_(-1, tensor.unsqueeze(-1), 1)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Optional[Tensor] = None) -> Tensor:
    """input / max(||input||_p along dim, eps)."""
    denom = ops.aten.linalg_vector_norm(input, p, [dim], True).clamp(min=eps).expand_as(input)
    if out is None:
        return input / denom
    return ops.aten.div.out(input, denom, out=out)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps)) along dim; x1 and x2 broadcast.
    As PyTorch's, each input is divided by its clamped norm before the product."""
    n1 = ops.aten.linalg_vector_norm(x1, 2, [dim], True).clamp(min=eps)
    n2 = ops.aten.linalg_vector_norm(x2, 2, [dim], True).clamp(min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """||x1 - x2 + eps||_p along the last dimension."""
    return ops.aten.linalg_vector_norm(x1 - x2 + eps, p, [-1], keepdim)


# ---- losses ---------------------------------------------------------------------------------------


def cross_entropy(input: Tensor, target: Tensor, weight: Optional[Tensor] = None, size_average: Optional[bool] = None,
                  ignore_index: int = -100, reduce: Optional[bool] = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """The cross entropy between input logits and target (``aten::cross_entropy_loss``).

    input: (C), (N, C) or (N, C, d1, ...) unnormalised logits.
    target: class indices (int64, shape of input without the class dim; values in [0, C)
    or ignore_index) or class probabilities (floating, input's shape).
    weight: optional (C,) rescaling weight per class. reduction: 'none' | 'mean' | 'sum'.
    label_smoothing: in [0, 1]; mixes the target with the uniform distribution.
    """
    return ops.aten.cross_entropy_loss(input, target, weight, _reduction_enum(reduction, size_average, reduce),
                                       ignore_index, label_smoothing)


def nll_loss(input: Tensor, target: Tensor, weight: Optional[Tensor] = None, size_average: Optional[bool] = None,
             ignore_index: int = -100, reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    """The negative log likelihood loss of log-probabilities ``input`` for class indices ``target``.

    input: (C), (N, C) or (N, C, d1, ...); target: int64 class indices of shape (), (N) or (N, d1, ...).
    Targets equal to ignore_index contribute nothing (and no weight to the mean).
    """
    return ops.aten.nll_loss_nd(input, target, weight, _reduction_enum(reduction, size_average, reduce), ignore_index)


def mse_loss(input: Tensor, target: Tensor, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
             reduction: str = "mean", weight: Optional[Tensor] = None) -> Tensor:
    """The mean squared error between input and target (``aten::mse_loss``; with weight, a composite)."""
    _warn_size_mismatch(input, target)
    if weight is not None:
        reduction = _reduction_string(reduction, size_average, reduce)
        return _reduce(weight * (input - target) ** 2, reduction)
    return ops.aten.mse_loss(input, target, _reduction_enum(reduction, size_average, reduce))


def l1_loss(input: Tensor, target: Tensor, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
            reduction: str = "mean", weight: Optional[Tensor] = None) -> Tensor:
    """The mean absolute error |input - target|, reduced."""
    _warn_size_mismatch(input, target)
    reduction = _reduction_string(reduction, size_average, reduce)
    loss = (input - target).abs()
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target); beta=0 is l1_loss."""
    _warn_size_mismatch(input, target)
    reduction = _reduction_string(reduction, size_average, reduce)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    d = (input - target).abs()
    if beta == 0.0:
        return _reduce(d, reduction)
    loss = ops.aten.where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta)
    return _reduce(loss, reduction)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Optional[Tensor] = None) -> Tensor:
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta)."""
    _warn_size_mismatch(input, target)
    reduction = _reduction_string(reduction)
    d = (input - target).abs()
    loss = ops.aten.where(d < delta, d * d * 0.5, (d - 0.5 * delta) * delta)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Optional[Tensor] = None,
                                     size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                                     reduction: str = "mean", pos_weight: Optional[Tensor] = None) -> Tensor:
    """Sigmoid plus binary cross entropy in one numerically stable expression:
    (1 - t) x + w_p (log1p(exp(-|x|)) + max(-x, 0)), w_p = 1 + (pos_weight - 1) t."""
    reduction = _reduction_string(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    softplus_neg = ops.aten.log1p(ops.aten.exp(-input.abs())) + (-input).clamp(min=0)
    if pos_weight is not None:
        log_weight = (pos_weight - 1) * target + 1
        loss = (1 - target) * input + log_weight * softplus_neg
    else:
        loss = (1 - target) * input + softplus_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Optional[Tensor] = None,
                         size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                         reduction: str = "mean") -> Tensor:
    """-(t log(x) + (1 - t) log(1 - x)) for probabilities x, with each log clamped at -100 as PyTorch's."""
    reduction = _reduction_string(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size "
                         f"({input.shape}) is deprecated. Please ensure they have the same size.")
    log_x = ops.aten.log(input).clamp(min=-100)
    log_1mx = ops.aten.log(1 - input).clamp(min=-100)
    loss = -(target * log_x + (1 - target) * log_1mx)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)
