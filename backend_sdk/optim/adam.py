"""``Adam`` (and, with decoupled_weight_decay=True, AdamW's update)."""
from __future__ import annotations

import math
from typing import Any, Callable, List, Optional, Tuple

from .. import _C
from .._factories import tensor, zeros, zeros_like
from .._ops import ops
from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad
from .optimizer import (Optimizer, _check_foreach_fused, _check_fused_params, _foreach_new,
                        _group_tensors_by_device_and_dtype, _resolve_impl, _use_grad_for_differentiable)

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
        _check_foreach_fused(foreach, fused, differentiable)
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

    def _init_group(self, group: dict) -> Tuple[List[Tensor], ...]:
        params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps = [], [], [], [], [], []
        for p in group["params"]:
            if p.grad is None:
                continue
            if group["fused"]:
                _check_fused_params([p])
            state = self.state[p]
            if len(state) == 0:
                # step is a float32 CPU scalar, as PyTorch's non-capturable one (no device sync per step);
                # fused keeps it on the parameter's device, as PyTorch's.
                state["step"] = (zeros((), dtype=_C.float32, device=p.device) if group["fused"]
                                 else tensor(0.0, dtype=_C.float32))
                state["exp_avg"] = zeros_like(p)
                state["exp_avg_sq"] = zeros_like(p)
                if group["amsgrad"]:
                    state["max_exp_avg_sq"] = zeros_like(p)
            params.append(p)
            grads.append(p.grad)
            exp_avgs.append(state["exp_avg"])
            exp_avg_sqs.append(state["exp_avg_sq"])
            if group["amsgrad"]:
                max_sqs.append(state["max_exp_avg_sq"])
            steps.append(state["step"])
        return params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps

    @_use_grad_for_differentiable
    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One update of every parameter that has a gradient; closure re-evaluates the loss."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            lists = self._init_group(group)
            if not lists[0]:
                continue
            fused, foreach = _resolve_impl(group, lists[0])
            impl = _fused_adam if fused else _multi_tensor_adam if foreach else _single_tensor_adam
            beta1, beta2 = group["betas"]
            impl(*lists, amsgrad=group["amsgrad"], beta1=beta1, beta2=beta2, lr=group["lr"],
                 weight_decay=group["weight_decay"], eps=group["eps"], maximize=group["maximize"],
                 decoupled=group["decoupled_weight_decay"])
        return loss


def _single_tensor_adam(params: List[Tensor], grads: List[Tensor], exp_avgs: List[Tensor], exp_avg_sqs: List[Tensor],
                        max_sqs: List[Tensor], steps: List[Tensor], *, amsgrad: bool, beta1: float, beta2: float,
                        lr: float, weight_decay: float, eps: float, maximize: bool, decoupled: bool) -> None:
    """PyTorch's per-parameter update (its operators, in its order)."""
    for i, p in enumerate(params):
        grad = grads[i] if not maximize else -grads[i]
        exp_avg, exp_avg_sq, step_t = exp_avgs[i], exp_avg_sqs[i], steps[i]
        step_t.add_(1)
        if weight_decay != 0:
            if decoupled:
                p.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(p, alpha=weight_decay)
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        step = float(step_t.item())
        step_size = lr / (1 - beta1**step)
        bias_correction2_sqrt = math.sqrt(1 - beta2**step)
        if amsgrad:
            ops.aten.maximum.out(max_sqs[i], exp_avg_sq, out=max_sqs[i])
            denom = (max_sqs[i].sqrt() / bias_correction2_sqrt).add_(eps)
        else:
            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        p.addcdiv_(exp_avg, denom, value=-step_size)


def _multi_tensor_adam(params: List[Tensor], grads: List[Tensor], exp_avgs: List[Tensor], exp_avg_sqs: List[Tensor],
                       max_sqs: List[Tensor], steps: List[Tensor], *, amsgrad: bool, beta1: float, beta2: float,
                       lr: float, weight_decay: float, eps: float, maximize: bool, decoupled: bool) -> None:
    """PyTorch's foreach update: the per-parameter operators applied to each device/dtype group at once."""
    A = ops.aten
    grouped = _group_tensors_by_device_and_dtype([params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps])
    for (dev_params, dev_grads, dev_avgs, dev_sqs, dev_max, dev_steps), _ in grouped.values():
        A._foreach_add_(dev_steps, 1)
        if maximize:
            dev_grads = _foreach_new(dev_grads, A._foreach_neg_)
        if weight_decay != 0:
            if decoupled:
                A._foreach_mul_(dev_params, 1 - lr * weight_decay)
            else:
                if not maximize:
                    dev_grads = _foreach_new(dev_grads)
                A._foreach_add_(dev_grads, dev_params, alpha=weight_decay)
        A._foreach_lerp_(dev_avgs, dev_grads, 1 - beta1)
        A._foreach_mul_(dev_sqs, beta2)
        A._foreach_addcmul_(dev_sqs, dev_grads, dev_grads, 1 - beta2)
        values = [float(s.item()) for s in dev_steps]
        step_size = [-(lr / (1 - beta1**s)) for s in values]
        bias_correction2_sqrt = [math.sqrt(1 - beta2**s) for s in values]
        if amsgrad:
            A._foreach_maximum_(dev_max, dev_sqs)
            denom = _foreach_new(dev_max, A._foreach_sqrt_)
        else:
            denom = _foreach_new(dev_sqs, A._foreach_sqrt_)
        A._foreach_div_(denom, bias_correction2_sqrt)
        A._foreach_add_(denom, eps)
        A._foreach_addcdiv_(dev_params, dev_avgs, denom, step_size)


def _fused_adam(params: List[Tensor], grads: List[Tensor], exp_avgs: List[Tensor], exp_avg_sqs: List[Tensor],
                max_sqs: List[Tensor], steps: List[Tensor], *, amsgrad: bool, beta1: float, beta2: float, lr: float,
                weight_decay: float, eps: float, maximize: bool, decoupled: bool) -> None:
    """One fused operator per device/dtype group (steps on the device, incremented first, as PyTorch's)."""
    A = ops.aten
    fn = A._fused_adamw_ if decoupled else A._fused_adam_
    grouped = _group_tensors_by_device_and_dtype([params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps])
    for (dev_params, dev_grads, dev_avgs, dev_sqs, dev_max, dev_steps), _ in grouped.values():
        A._foreach_add_(dev_steps, 1)
        fn(dev_params, dev_grads, dev_avgs, dev_sqs, dev_max if amsgrad else [], dev_steps, lr=lr, beta1=beta1,
           beta2=beta2, weight_decay=weight_decay, eps=eps, amsgrad=amsgrad, maximize=maximize)
