"""``RMSprop``."""
from __future__ import annotations

from typing import Any, Callable, List, Optional

from .. import _C
from .._factories import tensor, zeros_like
from .._ops import ops
from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad
from .optimizer import (Optimizer, _foreach_new, _group_tensors_by_device_and_dtype, _resolve_impl,
                        _use_grad_for_differentiable)

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """v = alpha v + (1 - alpha) g^2; avg = sqrt(v) (centered: sqrt(v - mean(g)^2)) + eps;
    p -= lr g / avg, or through a momentum buffer b = momentum b + g / avg, p -= lr b."""

    def __init__(self, params: Any, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False, capturable: bool = False,
                 foreach: Optional[bool] = None, maximize: bool = False, differentiable: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        if capturable:
            raise RuntimeError("RMSprop: capturable=True is not supported by backend_sdk yet")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered, weight_decay=weight_decay,
                        capturable=capturable, foreach=foreach, maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    @_use_grad_for_differentiable
    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One update of every parameter that has a gradient; closure re-evaluates the loss."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            momentum, centered = group["momentum"], group["centered"]
            params, grads, square_avgs, grad_avgs, bufs, steps = [], [], [], [], [], []
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = tensor(0.0, dtype=_C.float32)
                    state["square_avg"] = zeros_like(p)
                    if momentum > 0:
                        state["momentum_buffer"] = zeros_like(p)
                    if centered:
                        state["grad_avg"] = zeros_like(p)
                params.append(p)
                grads.append(p.grad)
                square_avgs.append(state["square_avg"])
                steps.append(state["step"])
                if momentum > 0:
                    bufs.append(state["momentum_buffer"])
                if centered:
                    grad_avgs.append(state["grad_avg"])
            if not params:
                continue
            _, foreach = _resolve_impl(dict(group, fused=None), params)
            impl = _multi_tensor_rmsprop if foreach else _single_tensor_rmsprop
            impl(params, grads, square_avgs, grad_avgs, bufs, steps, lr=group["lr"], alpha=group["alpha"],
                 eps=group["eps"], weight_decay=group["weight_decay"], momentum=momentum, centered=centered,
                 maximize=group["maximize"])
        return loss


def _single_tensor_rmsprop(params: List[Tensor], grads: List[Tensor], square_avgs: List[Tensor],
                           grad_avgs: List[Tensor], bufs: List[Tensor], steps: List[Tensor], *, lr: float, alpha: float,
                           eps: float, weight_decay: float, momentum: float, centered: bool, maximize: bool) -> None:
    """PyTorch's per-parameter update (its operators, in its order)."""
    for i, p in enumerate(params):
        grad = grads[i] if not maximize else -grads[i]
        steps[i].add_(1)
        if weight_decay != 0:
            grad = grad.add(p, alpha=weight_decay)
        square_avg = square_avgs[i]
        square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
        if centered:
            grad_avg = grad_avgs[i]
            grad_avg.lerp_(grad, 1 - alpha)
            avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
        else:
            avg = square_avg.sqrt()
        avg = avg.add_(eps)
        if momentum > 0:
            buf = bufs[i]
            buf.mul_(momentum).addcdiv_(grad, avg)
            p.add_(buf, alpha=-lr)
        else:
            p.addcdiv_(grad, avg, value=-lr)


def _multi_tensor_rmsprop(params: List[Tensor], grads: List[Tensor], square_avgs: List[Tensor],
                          grad_avgs: List[Tensor], bufs: List[Tensor], steps: List[Tensor], *, lr: float, alpha: float,
                          eps: float, weight_decay: float, momentum: float, centered: bool, maximize: bool) -> None:
    """PyTorch's foreach update on each device/dtype group."""
    A = ops.aten
    grouped = _group_tensors_by_device_and_dtype([params, grads, square_avgs, grad_avgs, bufs, steps])
    for (dev_params, dev_grads, dev_sq, dev_gavg, dev_bufs, dev_steps), _ in grouped.values():
        A._foreach_add_(dev_steps, 1)
        if maximize:
            dev_grads = _foreach_new(dev_grads, A._foreach_neg_)
        if weight_decay != 0:
            if not maximize:
                dev_grads = _foreach_new(dev_grads)
            A._foreach_add_(dev_grads, dev_params, alpha=weight_decay)
        A._foreach_mul_(dev_sq, alpha)
        A._foreach_addcmul_(dev_sq, dev_grads, dev_grads, 1 - alpha)
        if centered:
            A._foreach_lerp_(dev_gavg, dev_grads, 1 - alpha)
            avg = _foreach_new(dev_sq)
            A._foreach_addcmul_(avg, dev_gavg, dev_gavg, -1)
            A._foreach_sqrt_(avg)
        else:
            avg = _foreach_new(dev_sq, A._foreach_sqrt_)
        A._foreach_add_(avg, eps)
        if momentum > 0:
            A._foreach_mul_(dev_bufs, momentum)
            A._foreach_addcdiv_(dev_bufs, dev_grads, avg)
            A._foreach_add_(dev_params, dev_bufs, alpha=-lr)
        else:
            A._foreach_addcdiv_(dev_params, dev_grads, avg, -lr)
