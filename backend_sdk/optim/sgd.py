"""``SGD``: stochastic gradient descent with momentum, dampening, Nesterov, weight decay and maximize."""
from __future__ import annotations

from typing import Any, Callable, List, Optional

from .._factories import empty_like
from .._ops import ops
from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad
from .optimizer import (Optimizer, _check_foreach_fused, _check_fused_params, _foreach_new,
                        _group_tensors_by_device_and_dtype, _resolve_impl, _use_grad_for_differentiable)

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
        _check_foreach_fused(foreach, fused, differentiable)
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
            params: List[Tensor] = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            grads = [p.grad for p in params]
            bufs: List[Optional[Tensor]] = [self.state[p].get("momentum_buffer") for p in params]
            fused, foreach = _resolve_impl(group, params)
            if fused:
                _check_fused_params(params)
            impl = _fused_sgd if fused else _multi_tensor_sgd if foreach else _single_tensor_sgd
            impl(params, grads, bufs, lr=group["lr"], momentum=group["momentum"], dampening=group["dampening"],
                 weight_decay=group["weight_decay"], nesterov=group["nesterov"], maximize=group["maximize"])
            if group["momentum"] != 0:
                for p, buf in zip(params, bufs):
                    self.state[p]["momentum_buffer"] = buf
        return loss


def _single_tensor_sgd(params: List[Tensor], grads: List[Tensor], bufs: List[Optional[Tensor]], *, lr: float,
                       momentum: float, dampening: float, weight_decay: float, nesterov: bool, maximize: bool) -> None:
    for i, p in enumerate(params):
        grad = grads[i] if not maximize else -grads[i]
        if weight_decay != 0:
            grad = grad.add(p, alpha=weight_decay)
        if momentum != 0:
            buf = bufs[i]
            if buf is None:
                buf = grad.clone().detach()
                bufs[i] = buf
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - dampening)
            grad = grad.add(buf, alpha=momentum) if nesterov else buf
        p.add_(grad, alpha=-lr)


def _multi_tensor_sgd(params: List[Tensor], grads: List[Tensor], bufs: List[Optional[Tensor]], *, lr: float,
                      momentum: float, dampening: float, weight_decay: float, nesterov: bool, maximize: bool) -> None:
    """PyTorch's foreach SGD on each device/dtype group; gradients are never written (fresh copies where the
    update needs a modified gradient)."""
    A = ops.aten
    grouped = _group_tensors_by_device_and_dtype([params, grads, bufs])
    for (dev_params, dev_grads, dev_bufs), indices in grouped.values():
        if maximize:
            dev_grads = _foreach_new(dev_grads, A._foreach_neg_)
        if weight_decay != 0:
            if not maximize:
                dev_grads = _foreach_new(dev_grads)
            A._foreach_add_(dev_grads, dev_params, alpha=weight_decay)
        if momentum != 0:
            if all(b is not None for b in dev_bufs):
                A._foreach_mul_(dev_bufs, momentum)
                A._foreach_add_(dev_bufs, dev_grads, alpha=1 - dampening)
            else:
                for j, b in enumerate(dev_bufs):
                    if b is None:
                        dev_bufs[j] = dev_grads[j].clone().detach()
                    else:
                        b.mul_(momentum).add_(dev_grads[j], alpha=1 - dampening)
            for j, i in enumerate(indices):
                bufs[i] = dev_bufs[j]
            if nesterov:
                if not (maximize or weight_decay != 0):  # still the .grad tensors: leave them unchanged
                    dev_grads = _foreach_new(dev_grads)
                A._foreach_add_(dev_grads, dev_bufs, alpha=momentum)
            else:
                dev_grads = dev_bufs
        A._foreach_add_(dev_params, dev_grads, alpha=-lr)


def _fused_sgd(params: List[Tensor], grads: List[Tensor], bufs: List[Optional[Tensor]], *, lr: float, momentum: float,
               dampening: float, weight_decay: float, nesterov: bool, maximize: bool) -> None:
    """One _fused_sgd_ per device/dtype group; the first step creates the momentum buffers (is_first_step)."""
    grouped = _group_tensors_by_device_and_dtype([params, grads, bufs])
    for (dev_params, dev_grads, dev_bufs), indices in grouped.values():
        first = momentum != 0 and any(b is None for b in dev_bufs)
        if first:
            dev_bufs = [empty_like(g) for g in dev_grads]
            for j, i in enumerate(indices):
                bufs[i] = dev_bufs[j]
        ops.aten._fused_sgd_(dev_params, dev_grads, dev_bufs if momentum != 0 else [], weight_decay=weight_decay,
                             momentum=momentum, lr=lr, dampening=dampening, nesterov=nesterov, maximize=maximize,
                             is_first_step=first)
