"""``Adam`` (and, with decoupled_weight_decay=True, AdamW's update)."""
from __future__ import annotations

import math
from typing import Any, Callable, Optional, Tuple

from .. import _C
from .._factories import tensor, zeros_like
from .._ops import ops
from ..autograd.grad_mode import enable_grad
from .optimizer import Optimizer, _check_no_foreach_fused, _use_grad_for_differentiable

__all__ = ["Adam"]


def _check_adam_args(lr: float, betas: Tuple[float, float], eps: float, weight_decay: float) -> None:
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


class Adam(Optimizer):
    """Adam: m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2, p -= lr / (1 - b1^t) * m /
    (sqrt(v) / sqrt(1 - b2^t) + eps); amsgrad keeps the running max of v. weight_decay adds
    weight_decay * p to g, or with decoupled_weight_decay=True (AdamW) scales p by 1 - lr * weight_decay."""

    def __init__(self, params: Any, lr: float = 1e-3, betas: Tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach: Optional[bool] = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False,
                 fused: Optional[bool] = None, decoupled_weight_decay: bool = False) -> None:
        _check_adam_args(lr, betas, eps, weight_decay)
        _check_no_foreach_fused(foreach, fused, type(self).__name__)
        if capturable:
            raise RuntimeError(f"{type(self).__name__}: capturable=True is not supported by backend_sdk yet")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def __setstate__(self, state: Any) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            for key, default in (("amsgrad", False), ("maximize", False), ("foreach", None), ("capturable", False),
                                 ("differentiable", False), ("fused", None), ("decoupled_weight_decay", False)):
                group.setdefault(key, default)

    @_use_grad_for_differentiable
    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One update of every parameter that has a gradient; closure re-evaluates the loss."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
            amsgrad, maximize, decoupled = group["amsgrad"], group["maximize"], group["decoupled_weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad if not maximize else -p.grad
                state = self.state[p]
                if len(state) == 0:
                    # step is a float32 CPU scalar, as PyTorch's (not capturable): no device sync per step.
                    state["step"] = tensor(0.0, dtype=_C.float32)
                    state["exp_avg"] = zeros_like(p)
                    state["exp_avg_sq"] = zeros_like(p)
                    if amsgrad:
                        state["max_exp_avg_sq"] = zeros_like(p)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                step_t = state["step"]
                step_t.add_(1)
                if weight_decay != 0:
                    if decoupled:
                        p.mul_(1 - lr * weight_decay)
                    else:
                        grad = grad.add(p, alpha=weight_decay)
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).add_(grad * grad, alpha=1 - beta2)
                step = float(step_t.item())
                bias_correction1 = 1 - beta1**step
                bias_correction2 = 1 - beta2**step
                step_size = lr / bias_correction1
                bias_correction2_sqrt = math.sqrt(bias_correction2)
                if amsgrad:
                    max_sq = state["max_exp_avg_sq"]
                    ops.aten.maximum.out(max_sq, exp_avg_sq, out=max_sq)
                    denom = (max_sq.sqrt() / bias_correction2_sqrt).add_(eps)
                else:
                    denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
                p.add_(exp_avg / denom, alpha=-step_size)
        return loss
