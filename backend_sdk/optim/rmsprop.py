"""``RMSprop``."""
from __future__ import annotations

from typing import Any, Callable, Optional

from .. import _C
from .._factories import tensor, zeros_like
from ..autograd.grad_mode import enable_grad
from .optimizer import Optimizer, _check_no_foreach_fused, _use_grad_for_differentiable

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
        _check_no_foreach_fused(foreach, None, "RMSprop")
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
            lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
            weight_decay, momentum, centered = group["weight_decay"], group["momentum"], group["centered"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad if not group["maximize"] else -p.grad
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = tensor(0.0, dtype=_C.float32)
                    state["square_avg"] = zeros_like(p)
                    if momentum > 0:
                        state["momentum_buffer"] = zeros_like(p)
                    if centered:
                        state["grad_avg"] = zeros_like(p)
                state["step"].add_(1)
                square_avg = state["square_avg"]
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                square_avg.mul_(alpha).add_(grad * grad, alpha=1 - alpha)
                if centered:
                    grad_avg = state["grad_avg"]
                    grad_avg.mul_(alpha).add_(grad, alpha=1 - alpha)
                    avg = (square_avg - grad_avg * grad_avg).sqrt_()
                else:
                    avg = square_avg.sqrt()
                avg = avg.add_(eps)
                if momentum > 0:
                    buf = state["momentum_buffer"]
                    buf.mul_(momentum).add_(grad / avg)
                    p.add_(buf, alpha=-lr)
                else:
                    p.add_(grad / avg, alpha=-lr)
        return loss
