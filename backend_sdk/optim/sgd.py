"""``SGD``: stochastic gradient descent with momentum, dampening, Nesterov, weight decay and maximize."""
from __future__ import annotations

from typing import Any, Callable, List, Optional

from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad
from .optimizer import Optimizer, _check_no_foreach_fused, _use_grad_for_differentiable

__all__ = ["SGD"]


class SGD(Optimizer):
    """p -= lr * g, with g = grad (+ weight_decay * p), through the momentum buffer when momentum > 0:
    buf = momentum * buf + (1 - dampening) * g (the first step sets buf = g), g = buf or, with nesterov,
    g + momentum * buf. PyTorch's defaults and checks."""

    def __init__(self, params: Any, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: Optional[bool] = None, differentiable: bool = False, fused: Optional[bool] = None) -> None:
        if lr is not None and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _check_no_foreach_fused(foreach, fused, "SGD")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
                        maximize=maximize, foreach=foreach, differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def __setstate__(self, state: Any) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", False)

    @_use_grad_for_differentiable
    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One SGD update of every parameter that has a gradient; closure re-evaluates the loss."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
            weight_decay, nesterov, maximize = group["weight_decay"], group["nesterov"], group["maximize"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad if not maximize else -p.grad
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                if momentum != 0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = grad.clone().detach()
                    else:
                        buf.mul_(momentum).add_(grad, alpha=1 - dampening)
                    state["momentum_buffer"] = buf
                    grad = grad.add(buf, alpha=momentum) if nesterov else buf
                p.add_(grad, alpha=-lr)
        return loss
