"""Derivative formulas of the nn operators (issue 20), registered into ``_formulas.FORMULAS``.

Each formula is PyTorch 2.13's tools/autograd/derivatives.yaml entry for the overload, written
against the SDK's backward operators (csrc/backend_sdk/ops/{Convolution,Normalization,Pooling,
Sorting,NNOps,UnaryExtras}.cpp, whose header comments give the same formulas):

- convolution: input, weight, bias = convolution_backward(grad, input, weight, bias sizes, ...,
  output_mask) where output_mask says which of the three inputs need a gradient;
- native_layer_norm / native_batch_norm: only output 0 is differentiable; the saved statistics
  (outputs 1 and 2) feed the backward operator, whose gradients for them are ignored (as PyTorch);
- max_pool2d_with_indices / avg_pool2d / _adaptive_avg_pool2d: their *_backward operators;
- sort / sort.stable / topk: the values' gradient is scattered to the indices (output 1, integral,
  is not differentiable);
- native_dropout: grad * mask * scale, the scale 1/(1-p) in training (0 for p == 1), 1 in eval;
- log2, log10, erfinv: elementwise.

Formulas that run with grad mode on (create_graph=True) compose differentiable operators where the
backward operator has no formula itself (dropout), as PyTorch's infinitely_differentiable variants.
"""

from __future__ import annotations

import math
from typing import Any

from ._formulas import _ops, formula

__all__: list[str] = []


def _create_graph() -> bool:
    from .. import _C

    return bool(_C._is_grad_enabled())


def _mask(c: Any, *names: str) -> list[bool]:
    """The output_mask of a backward operator: which of the named inputs need a gradient.

    Note [Backward operators under create_graph]
    ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    With grad mode on (create_graph=True) the backward operator is itself recorded, and the
    recording cannot return the undefined tensors that a partial mask (or a missing weight or
    bias) gives. So then every gradient is computed, a missing weight is replaced by ones and a
    missing bias by zeros (the same input gradient), and the unneeded gradients are dropped: the
    first-order gradient is right, and a second backward reaches the backward operator's own
    (missing) formula and raises its clear "derivative ... is not implemented" error.
    """
    if _create_graph():
        return [True] * len(names)
    return [n in c.needs for n in names]


def _or_fill(t: Any, shape: list[int], like: Any, value: float) -> Any:
    """t, or (under create_graph, Note [Backward operators under create_graph]) a filled stand-in."""
    if t is not None or not _create_graph():
        return t
    from .. import full

    return full(shape, value, dtype=like.dtype, device=like.device)


def _grads(c: Any, result: Any, names: tuple[str, ...]) -> dict[str, Any]:
    return {n: g for n, g in zip(names, result) if g is not None and n in c.needs}


# ---- convolution ------------------------------------------------------------------
@formula("convolution", saves=("input", "weight"))
def _convolution(c):
    bias, weight = c["bias"], c["weight"]
    bias_sizes = list(bias.shape) if bias is not None else None
    if bias_sizes is None and _create_graph():  # Note [Backward operators under create_graph]
        bias_sizes = [weight.shape[1] * c["groups"] if c["transposed"] else weight.shape[0]]
    names = ("input", "weight", "bias")
    out = _ops().convolution_backward.default(
        c.g.contiguous(), c["input"], weight, bias_sizes, c["stride"], c["padding"], c["dilation"],
        c["transposed"], c["output_padding"], c["groups"], _mask(c, *names))
    return _grads(c, out, names)


# ---- normalization ------------------------------------------------------------------
@formula("native_layer_norm", saves=("input", "weight", "bias", "result"))
def _native_layer_norm(c):
    _, mean, rstd = c.result
    names = ("input", "weight", "bias")
    x, shape = c["input"], list(c["normalized_shape"])
    out = _ops().native_layer_norm_backward.default(
        c.grads[0].contiguous(), x, shape, mean, rstd, _or_fill(c["weight"], shape, x, 1.0),
        _or_fill(c["bias"], shape, x, 0.0), _mask(c, *names))
    return _grads(c, out, names)


@formula("native_batch_norm", saves=("input", "weight", "running_mean", "running_var", "result"))
def _native_batch_norm(c):
    _, save_mean, save_invstd = c.result
    training = bool(c["training"])
    # Training uses the batch statistics (outputs 1 and 2) only; the running buffers, updated in
    # place by every later forward, are read (and version-checked) in eval mode only.
    rm = None if training else c["running_mean"]
    rv = None if training else c["running_var"]
    names = ("input", "weight", "bias")
    x = c["input"]
    weight = _or_fill(c["weight"], [x.shape[1]], x, 1.0)
    out = _ops().native_batch_norm_backward.default(
        c.grads[0].contiguous(), x, weight, rm, rv, save_mean if training else None,
        save_invstd if training else None, training, c["eps"], _mask(c, *names))
    return _grads(c, out, names)


# ---- pooling ------------------------------------------------------------------
@formula("max_pool2d_with_indices", saves=("self", "result"))
def _max_pool2d_with_indices(c):
    _, indices = c.result
    return {"self": _ops().max_pool2d_with_indices_backward.default(
        c.grads[0], c["self"], c["kernel_size"], c["stride"], c["padding"], c["dilation"], c["ceil_mode"], indices)}


@formula("avg_pool2d", saves=("self",))
def _avg_pool2d(c):
    return {"self": _ops().avg_pool2d_backward.default(
        c.g, c["self"], c["kernel_size"], c["stride"], c["padding"], c["ceil_mode"], c["count_include_pad"],
        c["divisor_override"])}


@formula("_adaptive_avg_pool2d", saves=("self",))
def _adaptive_avg_pool2d(c):
    return {"self": _ops()._adaptive_avg_pool2d_backward.default(c.g, c["self"])}


# ---- sorting ------------------------------------------------------------------
# ---- dropout ------------------------------------------------------------------
@formula("native_dropout", saves=("result",))
def _native_dropout(c):
    from .. import _C

    p, train = c["p"], c["train"]
    scale = (0.0 if p == 1 else 1.0 / (1.0 - p)) if train is None or train else 1.0
    _, mask = c.result
    g = c.grads[0]
    if _C._is_grad_enabled():
        # create_graph: native_dropout_backward has no formula; compose differentiable operators.
        return {"input": g * mask.to(dtype=g.dtype) * scale}
    return {"input": _ops().native_dropout_backward.default(g, mask, scale)}


# ---- elementwise ------------------------------------------------------------------
_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_HALF_SQRT_PI = 0.5 * math.sqrt(math.pi)


@formula("log2", saves=("self",))
def _log2(c):
    return {"self": c.g / (c["self"] * _LN2)}


@formula("log10", saves=("self",))
def _log10(c):
    return {"self": c.g / (c["self"] * _LN10)}


@formula("erfinv", saves=("self",))
def _erfinv(c):
    return {"self": c.g * _HALF_SQRT_PI * c["self"].erfinv().pow(2).exp()}
