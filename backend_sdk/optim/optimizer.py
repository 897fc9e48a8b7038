"""``Optimizer``: the base class of the optimizers, with ``torch.optim.Optimizer``'s API.

Parameter groups (``add_param_group`` fills each group with the defaults), per-parameter
``state``, ``state_dict`` (state keyed by the parameter's position across groups, groups
with ``params`` as those positions) / ``load_state_dict`` (state tensors cast to their
parameter's device, and dtype for floating parameters, except ``step``),
``zero_grad(set_to_none=True)`` and the step / state-dict hooks.

Note [Optimizer step cost]
Updates run under no_grad in one of PyTorch's three implementations, chosen as torch.optim
chooses them (``_default_to_fused_or_foreach``): per parameter (the default on the CPU), the
multi-tensor ``_foreach_*`` operators (the default on a device backend: every parameter of a
device and dtype in one call), or ``fused=True`` (``_fused_adam_`` / ``_fused_adamw_`` /
``_fused_sgd_``: one pass over each parameter). On accel an operator is one kernel launch and
an in-place ``_foreach_*`` operator one launch for its whole list (Note [Foreach kernels],
csrc/backend_sdk/ops/Foreach.cpp), so an Adam/AdamW step costs about 9 launches per parameter
per-parameter, about 7 per device group with foreach, and 1 (+1 for the step counts) fused; SGD
with momentum 3 per parameter against 3 per group. Functional ``_foreach_*`` results (PyTorch's
``_foreach_sqrt(exp_avg_sqs)``, ``_foreach_neg(grads)``) are made as fresh tensors filled by an
in-place ``_foreach_copy_`` and the in-place operator (``_foreach_new``), the same values in two
launches instead of one per tensor. ``step`` counters are CPU float32 scalars as torch's
non-capturable ones (on the device for fused), so a step does not synchronise with the device.
"""
from __future__ import annotations

import functools
import warnings
from collections import OrderedDict, defaultdict
from copy import deepcopy
from itertools import chain
from typing import Any, Callable, DefaultDict, Dict, Iterable, List, Optional, Tuple, Union

from .. import _C
from .._ops import ops
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..nn.modules.module import RemovableHandle

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]


class _RequiredParameter:
    """Singleton class representing a required parameter for an Optimizer."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()

_global_optimizer_pre_hooks: Dict[int, Callable] = OrderedDict()
_global_optimizer_post_hooks: Dict[int, Callable] = OrderedDict()


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """``hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)`` before every optimizer's step."""
    handle = RemovableHandle(_global_optimizer_pre_hooks)
    _global_optimizer_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """``hook(optimizer, args, kwargs) -> None`` after every optimizer's step."""
    handle = RemovableHandle(_global_optimizer_post_hooks)
    _global_optimizer_post_hooks[handle.id] = hook
    return handle


def _typename(obj: Any) -> str:
    if isinstance(obj, _C.TensorBase):
        return type(obj).__module__ + "." + type(obj).__name__
    module = type(obj).__module__
    return type(obj).__qualname__ if module == "builtins" else f"{module}.{type(obj).__qualname__}"


def _get_foreach_kernels_supported_devices() -> List[str]:
    """Device types whose parameters default to the multi-tensor path (PyTorch's list, with the renamed backend)."""
    return ["cuda", "xpu", _C._get_privateuse1_backend_name()]


def _get_fused_kernels_supported_devices() -> List[str]:
    """Device types the fused optimizer operators accept (PyTorch's list, with the renamed backend)."""
    return ["mps", "cuda", "xpu", "hpu", "cpu", _C._get_privateuse1_backend_name()]


def _default_to_fused_or_foreach(params: List[Any], differentiable: bool,
                                 use_fused: bool = False) -> Tuple[bool, bool]:
    """PyTorch's default: fused only when asked for and every parameter is a floating tensor of a fused-capable
    device; otherwise foreach when every parameter is on a foreach-capable device (not the CPU)."""
    if differentiable:
        return False, False
    from ..nn.parameter import Parameter

    supported = (Tensor, Parameter)  # PyTorch's _foreach_supported_types: subclasses take the per-parameter path
    fused_devices = _get_fused_kernels_supported_devices()
    foreach_devices = _get_foreach_kernels_supported_devices()
    fused = use_fused and all(
        p is None or (type(p) in supported and p.device.type in fused_devices and p.is_floating_point())
        for p in params)
    foreach = not fused and all(p is None or (type(p) in supported and p.device.type in foreach_devices)
                                for p in params)
    return fused, foreach


def _check_foreach_fused(foreach: Optional[bool], fused: Optional[bool], differentiable: bool) -> None:
    """The constructor checks PyTorch's Adam/AdamW/SGD make (same messages)."""
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


def _check_fused_params(params: List[Tensor]) -> None:
    devices = _get_fused_kernels_supported_devices()
    if not all(p.device.type in devices and p.is_floating_point() for p in params):
        raise RuntimeError(f"`fused=True` requires all the params to be floating point Tensors of supported devices: "
                           f"{devices}.")


def _resolve_impl(group: Dict[str, Any], params: List[Tensor]) -> Tuple[bool, bool]:
    """(fused, foreach) for one step of a group: the group's choice, or PyTorch's default."""
    foreach, fused = group.get("foreach"), group.get("fused")
    if foreach is None and fused is None:
        _, foreach = _default_to_fused_or_foreach(params, group.get("differentiable", False), use_fused=False)
        fused = False
    return bool(fused), bool(foreach)


def _group_tensors_by_device_and_dtype(
        tensorlists: List[List[Any]]) -> Dict[Tuple[Any, Any], Tuple[List[List[Any]], List[int]]]:
    """Splits parallel lists by the first list's (device, dtype): {key: (lists, indices)}, in first-seen order."""
    out: Dict[Tuple[Any, Any], Tuple[List[List[Any]], List[int]]] = {}
    for i, t in enumerate(tensorlists[0]):
        key = (t.device, t.dtype)
        if key not in out:
            out[key] = ([[] for _ in tensorlists], [])
        lists, idx = out[key]
        for j, tl in enumerate(tensorlists):
            lists[j].append(tl[i] if tl else None)
        idx.append(i)
    return out


def _foreach_new(tensors: List[Tensor], inplace_op: Optional[Callable] = None) -> List[Tensor]:
    """Fresh copies of ``tensors`` (one _foreach_copy_), then ``inplace_op`` on them: the values of PyTorch's
    functional _foreach_ calls in two launches on a device (Note [Optimizer step cost])."""
    from .._factories import empty_like

    out = [empty_like(t) for t in tensors]
    ops.aten._foreach_copy_(out, tensors)
    if inplace_op is not None:
        inplace_op(out)
    return out


def _use_grad_for_differentiable(func: Callable) -> Callable:
    """Runs step under no_grad unless the optimizer was built with differentiable=True."""

    @functools.wraps(func)
    def _use_grad(self: "Optimizer", *args: Any, **kwargs: Any) -> Any:
        if self.defaults.get("differentiable", False):
            return func(self, *args, **kwargs)
        with no_grad():
            return func(self, *args, **kwargs)

    return _use_grad


class Optimizer:
    """Base class of optimizers: ``Optimizer(params, defaults)``; params is an iterable of tensors,
    of (name, tensor) pairs, or of dicts defining parameter groups."""

    __module__ = "backend_sdk.optim"

    def __init__(self, params: Any, defaults: Dict[str, Any]) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks: Dict[int, Callable] = OrderedDict()
        self._optimizer_step_post_hooks: Dict[int, Callable] = OrderedDict()
        self._optimizer_state_dict_pre_hooks: Dict[int, Callable] = OrderedDict()
        self._optimizer_state_dict_post_hooks: Dict[int, Callable] = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: Dict[int, Callable] = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: Dict[int, Callable] = OrderedDict()
        if isinstance(params, _C.TensorBase):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, but "
                            "got " + _typename(params))
        self.state: DefaultDict[Tensor, Any] = defaultdict(dict)
        self.param_groups: List[Dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)
        self._step_count = 0

    def __getstate__(self) -> Dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
                     "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            self.__dict__.setdefault(name, OrderedDict())

    def __repr__(self) -> str:
        format_string = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            format_string += "\n"
            format_string += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    format_string += f"    {key}: {group[key]}\n"
        format_string += ")"
        return format_string

    # ---- groups -------------------------------------------------------------------------------

    def add_param_group(self, param_group: Dict[str, Any]) -> None:
        """Adds a group of parameters (a dict with "params" and optional per-group settings)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, _C.TensorBase):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of "
                            "tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)
        extracted, names = [], []
        for p in param_group["params"]:
            if isinstance(p, tuple) and len(p) == 2:  # named parameters
                names.append(p[0])
                extracted.append(p[1])
            else:
                extracted.append(p)
        if names:
            if len(names) != len(extracted):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names
        param_group["params"] = extracted
        for param in param_group["params"]:
            if not isinstance(param, _C.TensorBase):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(param))
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will cause "
                          "an error; see github.com/pytorch/pytorch/issues/40967 for more information", stacklevel=3)
        param_set: set = set()
        for group in self.param_groups:
            param_set.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                current = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {current} to the optimizer")
        if not param_set.isdisjoint(id(p) for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # ---- gradients ------------------------------------------------------------------------------

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Resets the gradients of every parameter: to None (the default), or to zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    if set_to_none:
                        p.grad = None
                    else:
                        if p.grad.grad_fn is not None:
                            p.grad.detach_()
                        else:
                            p.grad.requires_grad_(False)
                        p.grad.fill_(0)

    def step(self, closure: Optional[Callable[[], float]] = None) -> Optional[float]:
        """One optimization step (subclasses implement it; called through the step hooks)."""
        raise NotImplementedError

    def _run_step(self, step_fn: Callable, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
        for pre_hook in chain(_global_optimizer_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
            result = pre_hook(self, args, kwargs)
            if result is not None:
                if isinstance(result, tuple) and len(result) == 2:
                    args, kwargs = result
                else:
                    raise RuntimeError(f"{step_fn} must return None or a tuple of (new_args, new_kwargs), but got "
                                       f"{result}.")
        out = step_fn(self, *args, **kwargs)
        self._step_count += 1
        for post_hook in chain(self._optimizer_step_post_hooks.values(), _global_optimizer_post_hooks.values()):
            post_hook(self, args, kwargs)
        return out

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_hooked", False):
            @functools.wraps(step)
            def wrapper(self: "Optimizer", *args: Any, **kw: Any) -> Any:
                return Optimizer._run_step(self, step, args, kw)

            wrapper._hooked = True  # type: ignore[attr-defined]
            cls.step = wrapper  # type: ignore[assignment]

    # ---- hooks -------------------------------------------------------------------------------------

    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)`` before step."""
        handle = RemovableHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(optimizer, args, kwargs) -> None`` after step."""
        handle = RemovableHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[handle.id] = hook
        return handle

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer) -> None`` before state_dict."""
        handle = RemovableHandle(self._optimizer_state_dict_pre_hooks)
        self._optimizer_state_dict_pre_hooks[handle.id] = hook
        if prepend:
            self._optimizer_state_dict_pre_hooks.move_to_end(handle.id, last=False)  # type: ignore[attr-defined]
        return handle

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict) -> None or new state_dict`` after state_dict."""
        handle = RemovableHandle(self._optimizer_state_dict_post_hooks)
        self._optimizer_state_dict_post_hooks[handle.id] = hook
        if prepend:
            self._optimizer_state_dict_post_hooks.move_to_end(handle.id, last=False)  # type: ignore[attr-defined]
        return handle

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer, state_dict) -> None or new state_dict`` before load_state_dict."""
        handle = RemovableHandle(self._optimizer_load_state_dict_pre_hooks)
        self._optimizer_load_state_dict_pre_hooks[handle.id] = hook
        if prepend:
            self._optimizer_load_state_dict_pre_hooks.move_to_end(handle.id, last=False)  # type: ignore[attr-defined]
        return handle

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(optimizer) -> None`` after load_state_dict."""
        handle = RemovableHandle(self._optimizer_load_state_dict_post_hooks)
        self._optimizer_load_state_dict_post_hooks[handle.id] = hook
        if prepend:
            self._optimizer_load_state_dict_post_hooks.move_to_end(handle.id, last=False)  # type: ignore[attr-defined]
        return handle

    # ---- state dict ------------------------------------------------------------------------------

    def state_dict(self) -> Dict[str, Any]:
        """{"state": {position: per-parameter state}, "param_groups": [group settings with "params" as
        positions]}; tensors in it are the optimizer's own (not copies), as PyTorch's."""
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        param_mappings: Dict[int, int] = {}
        start_index = 0

        def pack_group(group: Dict[str, Any]) -> Dict[str, Any]:
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update({id(p): i for i, p in enumerate(group["params"], start_index)
                                   if id(p) not in param_mappings})
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(param_mappings[id(k)] if isinstance(k, _C.TensorBase) else k): v
                        for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    @staticmethod
    def _process_value_according_to_param_policy(param: Tensor, value: Any, key: Any = None) -> Any:
        if key == "step":
            return value
        if param.dtype.is_floating_point:
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(device=param.device)

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Loads what state_dict() returned (from this or an identically structured optimizer)."""
        state_dict = state_dict.copy()
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            hook_result = pre_hook(self, state_dict)
            if hook_result is not None:
                state_dict = hook_result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        param_lens = (len(g["params"]) for g in groups)
        saved_lens = (len(g["params"]) for g in saved_groups)
        if any(p_len != s_len for p_len, s_len in zip(param_lens, saved_lens)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def _cast(param: Tensor, value: Any, key: Any = None) -> Any:
            if isinstance(value, _C.TensorBase):
                return Optimizer._process_value_according_to_param_policy(param, value, key)
            if isinstance(value, dict):
                return {k: _cast(param, v, key=k) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(_cast(param, v, key=key) for v in value)
            return value

        state: DefaultDict[Any, Dict[Any, Any]] = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = _cast(param, v)
            else:
                state[k] = v

        def update_group(group: Dict[str, Any], new_group: Dict[str, Any]) -> Dict[str, Any]:
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        self.__setstate__({"state": state,
                           "param_groups": [update_group(g, ng) for g, ng in zip(groups, saved_groups)]})
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)
