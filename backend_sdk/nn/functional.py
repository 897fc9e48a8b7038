"""``backend_sdk.nn.functional``: ``torch.nn.functional``'s signatures over the SDK's operators.

Where an aten operator exists (``linear``, ``relu``, ``gelu``, ``silu``, ``softmax``,
``log_softmax``, ``cross_entropy_loss``, ``nll_loss_nd``, ``mse_loss``) the function calls
it; the others are composites of existing operators, so autograd works through the
operators' own derivative formulas and every backend that implements those operators
runs them (``one_hot`` = ``scatter`` into zeros, the losses from ``abs``/``where``/``log1p``...).
Convolution, pooling, normalization, embedding, attention, padding and interpolation call
their aten operators (``aten::convolution``, ``aten::max_pool2d_with_indices``,
``aten::native_layer_norm``, ``aten::scaled_dot_product_attention``, ...; docs/architecture.md
"nn operators").

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
    "conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "embedding", "layer_norm", "rms_norm",
    "group_norm", "batch_norm", "scaled_dot_product_attention", "pad", "interpolate",
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

    ``aten::dropout``: the mask is ``aten::bernoulli.p`` drawn from the default generator of input's
    device, so ``manual_seed`` reproduces it on every backend (Note [Philox random numbers]).
    """
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    result = ops.aten.dropout(input, p, training)
    if result is input:
        return input
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


# ---- convolution, pooling, normalization, embedding, attention, padding, resampling ---------------
# Each is PyTorch's functional signature over the aten operator of the same name (Note [nn composites],
# csrc/backend_sdk/ops/NNOps.cpp): conv1d/conv2d/conv_transpose1d/conv_transpose2d -> aten::convolution, max_pool2d ->
# max_pool2d_with_indices, layer_norm -> native_layer_norm, batch_norm -> native_batch_norm.


def _pair(v: Any, n: int = 2) -> List[int]:
    if isinstance(v, (list, tuple)):
        return [int(x) for x in v]
    return [int(v)] * n


def _conv_padding(padding: Any, weight: Tensor, dilation: Any, stride: Any, spatial: int, name: str) -> List[int]:
    """Integer padding for padding='valid' / 'same' (stride 1 only, as PyTorch; 'same' needs an odd effective
    kernel here: PyTorch pads one more at the end otherwise)."""
    if not isinstance(padding, str):
        return _pair(padding, spatial)
    if padding == "valid":
        return [0] * spatial
    if padding != "same":
        raise ValueError(f"Invalid padding string '{padding}', should be one of ['valid', 'same']")
    if any(s != 1 for s in _pair(stride, spatial)):
        raise ValueError("padding='same' is not supported for strided convolutions")
    out = []
    for k, d in zip(list(weight.shape)[2:], _pair(dilation, spatial)):
        total = d * (k - 1)
        if total % 2:
            raise NotImplementedError(f"{name}: padding='same' with an even effective kernel size is not supported yet")
        out.append(total // 2)
    return out


def conv1d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Tensor:
    """1-D convolution over (N, C, L) or unbatched (C, L) input (``aten::conv1d`` -> ``aten::convolution``)."""
    pad = _conv_padding(padding, weight, dilation, stride, 1, "conv1d")
    return ops.aten.conv1d(input, weight, bias, _pair(stride, 1), pad, _pair(dilation, 1), groups)


def conv2d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Tensor:
    """2-D convolution over (N, C, H, W) or unbatched (C, H, W) input (``aten::conv2d`` -> ``aten::convolution``)."""
    pad = _conv_padding(padding, weight, dilation, stride, 2, "conv2d")
    return ops.aten.conv2d(input, weight, bias, _pair(stride), pad, _pair(dilation), groups)


def _transpose_padding(padding: Any, n: int) -> List[int]:
    """A transposed convolution's padding: integers only (no 'same' / 'valid'), as PyTorch's."""
    if isinstance(padding, str):
        raise TypeError(f"conv_transpose{n}d(): argument 'padding' must be tuple of ints, not str")
    return _pair(padding, n)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """1-D transposed convolution over (N, C_in, L) or unbatched (C_in, L) input; weight (C_in, C_out / groups, k)
    (``aten::conv_transpose1d`` -> ``aten::convolution`` with transposed=True)."""
    return ops.aten.conv_transpose1d(input, weight, bias, _pair(stride, 1), _transpose_padding(padding, 1),
                                     _pair(output_padding, 1), groups, _pair(dilation, 1))


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Tensor:
    """2-D transposed convolution over (N, C_in, H, W) or unbatched (C_in, H, W) input; weight
    (C_in, C_out / groups, kH, kW) (``aten::conv_transpose2d.input`` -> ``aten::convolution``, transposed=True)."""
    return ops.aten.conv_transpose2d(input, weight, bias, _pair(stride), _transpose_padding(padding, 2),
                                     _pair(output_padding),
                                     groups, _pair(dilation))


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """2-D max pooling; with return_indices, also the flat (h * W + w) index of each maximum."""
    stride = [] if stride is None else _pair(stride)
    out, idx = ops.aten.max_pool2d_with_indices(input, _pair(kernel_size), stride, _pair(padding), _pair(dilation),
                                                ceil_mode)
    return (out, idx) if return_indices else out


def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: Optional[int] = None) -> Tensor:
    """2-D average pooling (``aten::avg_pool2d``)."""
    stride = [] if stride is None else _pair(stride)
    return ops.aten.avg_pool2d(input, _pair(kernel_size), stride, _pair(padding), ceil_mode, count_include_pad,
                               divisor_override)


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """Average pooling to output_size (an int, or a pair whose None entries keep the input's size)."""
    size = list(output_size) if isinstance(output_size, (list, tuple)) else [output_size, output_size]
    size = [int(input.shape[-2 + i]) if s is None else int(s) for i, s in enumerate(size)]
    return ops.aten.adaptive_avg_pool2d(input, size)


def embedding(input: Tensor, weight: Tensor, padding_idx: Optional[int] = None, max_norm: Optional[float] = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of weight selected by the integer input; the padding_idx row gets no gradient."""
    if padding_idx is not None:
        if padding_idx > 0:
            if padding_idx >= weight.size(0):
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if padding_idx < -weight.size(0):
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = weight.size(0) + padding_idx
    else:
        padding_idx = -1
    if max_norm is not None:
        raise NotImplementedError("embedding: max_norm is not supported by the SDK yet")
    return ops.aten.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)


def layer_norm(input: Tensor, normalized_shape: Sequence[int], weight: Optional[Tensor] = None,
               bias: Optional[Tensor] = None, eps: float = 1e-5) -> Tensor:
    """Normalizes over the trailing normalized_shape dims (``aten::layer_norm`` -> ``native_layer_norm``)."""
    shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    return ops.aten.layer_norm(input, shape, weight, bias, eps)


def rms_norm(input: Tensor, normalized_shape: Sequence[int], weight: Optional[Tensor] = None,
             eps: Optional[float] = None) -> Tensor:
    """x / sqrt(mean(x^2) + eps) over the trailing dims, times weight (eps defaults to the dtype's epsilon)."""
    shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    return ops.aten.rms_norm(input, shape, weight, eps)


def group_norm(input: Tensor, num_groups: int, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
               eps: float = 1e-5) -> Tensor:
    """Normalizes each group of channels of each sample."""
    return ops.aten.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input: Tensor, running_mean: Optional[Tensor], running_var: Optional[Tensor],
               weight: Optional[Tensor] = None, bias: Optional[Tensor] = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Batch normalization over the channel dim (1); updates the running statistics in place while training."""
    return ops.aten.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, False)


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Optional[Tensor] = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: Optional[float] = None,
                                 enable_gqa: bool = False) -> Tensor:
    """softmax(q k^T * scale + mask) v, with a causal mask, a bool or additive attn_mask, and dropout."""
    return ops.aten.scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale=scale,
                                                 enable_gqa=enable_gqa)


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: Optional[float] = None) -> Tensor:
    """Pads the last len(pad) // 2 dims: constant (any dims), reflect, replicate, circular (last 1 or 2 dims)."""
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    return ops.aten.pad(input, list(pad), mode, value)


def interpolate(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                align_corners: Optional[bool] = None, recompute_scale_factor: Optional[bool] = None,
                antialias: bool = False) -> Tensor:
    """Resizes the spatial dims of 4-D input: mode 'nearest' or 'bilinear'."""
    if mode not in ("nearest", "bilinear"):
        raise NotImplementedError(f"interpolate: mode '{mode}' is not supported by the SDK yet (nearest, bilinear)")
    if align_corners is not None and mode == "nearest":
        raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                         "bicubic | trilinear")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported by the SDK yet")
    if input.dim() != 4:
        raise NotImplementedError(f"Input Error: Only 4D input Tensors are supported here (got {input.dim()}D) "
                                  f"for the modes: nearest | bilinear")
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined")
    scales: List[Optional[float]] = [None, None]
    if size is not None:
        out = _pair(size)
        if len(out) != 2:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input with "
                             f"spatial dimensions of {list(input.shape[2:])} and output size of {out}.")
    else:
        factors = [float(f) for f in (scale_factor if isinstance(scale_factor, (list, tuple)) else [scale_factor] * 2)]
        out = [int(math.floor(float(input.shape[2 + i]) * factors[i])) for i in range(2)]
        if not recompute_scale_factor:
            scales = factors
    if mode == "nearest":
        return ops.aten.upsample_nearest2d(input, out, scales[0], scales[1])
    return ops.aten.upsample_bilinear2d(input, out, bool(align_corners), scales[0], scales[1])
