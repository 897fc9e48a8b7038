"""``backend_sdk.nn.functional``: losses with ``torch.nn.functional``'s signatures.

Thin wrappers over the aten operators (``cross_entropy_loss``, ``nll_loss_nd``,
``mse_loss``); the legacy ``size_average``/``reduce`` arguments map to
``reduction`` as in PyTorch.
"""
from __future__ import annotations

import warnings
from typing import Optional

from .._ops import ops
from .._tensor import Tensor

__all__ = ["cross_entropy", "nll_loss", "mse_loss"]

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


def _reduction_enum(reduction: str, size_average: Optional[bool] = None, reduce: Optional[bool] = None) -> int:
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return _REDUCTIONS[reduction]


def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Optional[Tensor] = None,
    size_average: Optional[bool] = None,
    ignore_index: int = -100,
    reduce: Optional[bool] = None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    """The cross entropy between input logits and target.

    input: (C), (N, C) or (N, C, d1, ...) unnormalised logits.
    target: class indices (int64, shape of input without the class dim; values in [0, C)
    or ignore_index) or class probabilities (floating, input's shape).
    weight: optional (C,) rescaling weight per class. reduction: 'none' | 'mean' | 'sum'.
    label_smoothing: in [0, 1]; mixes the target with the uniform distribution.
    """
    return ops.aten.cross_entropy_loss(input, target, weight, _reduction_enum(reduction, size_average, reduce),
                                       ignore_index, label_smoothing)


def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Optional[Tensor] = None,
    size_average: Optional[bool] = None,
    ignore_index: int = -100,
    reduce: Optional[bool] = None,
    reduction: str = "mean",
) -> Tensor:
    """The negative log likelihood loss of log-probabilities ``input`` for class indices ``target``.

    input: (C), (N, C) or (N, C, d1, ...); target: int64 class indices of shape (), (N) or (N, d1, ...).
    Targets equal to ignore_index contribute nothing (and no weight to the mean).
    """
    return ops.aten.nll_loss_nd(input, target, weight, _reduction_enum(reduction, size_average, reduce), ignore_index)


def mse_loss(
    input: Tensor,
    target: Tensor,
    size_average: Optional[bool] = None,
    reduce: Optional[bool] = None,
    reduction: str = "mean",
) -> Tensor:
    """The mean squared error between input and target (element-wise squared difference, reduced)."""
    return ops.aten.mse_loss(input, target, _reduction_enum(reduction, size_average, reduce))
