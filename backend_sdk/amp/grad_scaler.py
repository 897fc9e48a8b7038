"""``amp.GradScaler``: loss scaling for float16 training (torch.amp.GradScaler's API and semantics).

Note [GradScaler]
~~~~~~~~~~~~~~~~~
``scale(loss)`` multiplies by the scale (a float32 0-dim tensor on the loss's device, made on first
use); ``unscale_(optimizer)`` divides the optimizer's gradients by it in place and records, per
device, whether any gradient had an inf or NaN (aten::_amp_foreach_non_finite_check_and_unscale_,
Note [GradScaler operators]); ``step`` unscales if needed and skips ``optimizer.step()`` when an
inf/NaN was found (the one host read of a step); ``update`` backs the scale off after a skipped
step and grows it after ``growth_interval`` clean ones (aten::_amp_update_scale_, on the device).
Per-optimizer stages (READY -> UNSCALED -> STEPPED) refuse the orders PyTorch refuses, in its words.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from enum import Enum
from typing import Any, Dict, Iterable, List, Optional, Union

from .. import _C
from .._tensor import Tensor

__all__ = ["OptState", "GradScaler"]


class OptState(Enum):
    """The stage of one optimizer in the current iteration."""

    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state() -> Dict[str, Any]:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


def _ops() -> Any:
    from .._ops import ops

    return ops.aten


class _MultiDeviceReplicator:
    """Lazily serves copies of a tensor (the scale) per device."""

    def __init__(self, master: Tensor) -> None:
        self.master = master
        self._per_device: Dict[Any, Tensor] = {}

    def get(self, device: Any) -> Tensor:
        key = str(device)
        value = self._per_device.get(key)
        if value is None:
            value = self.master.to(device=device, non_blocking=True, copy=True)
            self._per_device[key] = value
        return value


class GradScaler:
    """Scales the loss so float16 gradients do not underflow, and skips steps whose gradients overflowed.

    ``device`` is the device type the scale lives on ("accel", "cpu"); the defaults are PyTorch's.
    """

    def __init__(self, device: str = "accel", init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        if not isinstance(device, str):
            raise ValueError(f"Expected `device` of type `str`, got: `{type(device)}`")
        self._device = device
        self._enabled = enabled
        if device == "cuda":
            if enabled:
                warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.")
            self._enabled = False
        elif enabled:
            _C.device(device)  # an unknown device type raises the device parser's error
        if self._enabled:
            assert growth_factor > 1.0, "The growth factor must be > 1.0."
            assert backoff_factor < 1.0, "The backoff factor must be < 1.0."
            self._init_scale = float(init_scale)
            self._scale: Optional[Tensor] = None
            self._growth_factor = float(growth_factor)
            self._backoff_factor = float(backoff_factor)
            self._growth_interval = int(growth_interval)
            self._init_growth_tracker = 0
            self._growth_tracker: Optional[Tensor] = None
            self._per_optimizer_states: Dict[int, Dict[str, Any]] = defaultdict(_refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname: str) -> tuple:
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        assert self._scale is not None, f"Attempted {funcname} but _scale is None.  " + fix
        assert self._growth_tracker is not None, f"Attempted {funcname} but _growth_tracker is None.  " + fix
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev: Any) -> None:
        import backend_sdk

        assert self._growth_tracker is None, "_growth_tracker initialized before _scale"
        self._scale = backend_sdk.full((), self._init_scale, dtype=_C.float32, device=dev)
        self._growth_tracker = backend_sdk.full((), self._init_growth_tracker, dtype=_C.int32, device=dev)

    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a tensor or an iterable of tensors) multiplied by the scale; unchanged when disabled."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            assert self._scale is not None
            return outputs * self._scale.to(device=outputs.device, non_blocking=True)
        stash: List[_MultiDeviceReplicator] = []

        def apply_scale(val: Any) -> Any:
            if isinstance(val, Tensor):
                if not stash:
                    if self._scale is None:
                        self._lazy_init_scale_growth_tracker(val.device)
                    assert self._scale is not None
                    stash.append(_MultiDeviceReplicator(self._scale))
                return val * stash[0].get(val.device)
            if isinstance(val, Iterable):
                iterable = map(apply_scale, val)
                if isinstance(val, (list, tuple)):
                    return type(val)(iterable)
                return iterable
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer: Any, inv_scale: Tensor, found_inf: Tensor,
                        allow_fp16: bool) -> Dict[str, Tensor]:
        per_device_inv_scale = _MultiDeviceReplicator(inv_scale)
        per_device_found_inf = _MultiDeviceReplicator(found_inf)
        per_device_grads: Dict[str, List[Tensor]] = defaultdict(list)
        devices: Dict[str, Any] = {}
        import backend_sdk

        with backend_sdk.no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if param.grad is None:
                        continue
                    if (not allow_fp16) and param.grad.dtype == _C.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    key = str(param.grad.device)
                    devices[key] = param.grad.device
                    per_device_grads[key].append(param.grad)
            for key, grads in per_device_grads.items():
                _ops()._amp_foreach_non_finite_check_and_unscale_(
                    grads, per_device_found_inf.get(devices[key]), per_device_inv_scale.get(devices[key]))
        return per_device_found_inf._per_device

    def unscale_(self, optimizer: Any) -> None:
        """Divides ``optimizer``'s gradients by the scale in place (once per iteration, before ``step``)."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        elif optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        import backend_sdk

        assert self._scale is not None
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = backend_sdk.full((), 0.0, dtype=_C.float32, device=self._scale.device)
        optimizer_state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        optimizer_state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer: Any, optimizer_state: Dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        retval = None
        if not sum(v.item() for v in optimizer_state["found_inf_per_device"].values()):
            retval = optimizer.step(*args, **kwargs)
        return retval

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """Unscales (if ``unscale_`` was not called) and runs ``optimizer.step()`` unless a gradient was inf/NaN."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if optimizer_state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        assert len(optimizer_state["found_inf_per_device"]) > 0, "No inf checks were recorded for this optimizer."
        retval = self._maybe_opt_step(optimizer, optimizer_state, *args, **kwargs)
        optimizer_state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale: Optional[Union[float, Tensor]] = None) -> None:
        """Updates the scale for the next iteration (or sets it to ``new_scale``); ends the iteration."""
        if not self._enabled:
            return
        _scale, _growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                _scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element backend_sdk.FloatTensor with "
                          "requires_grad=False.")
                assert isinstance(new_scale, Tensor), reason
                assert new_scale.device.type == self._device, reason
                assert new_scale.numel() == 1, reason
                assert new_scale.requires_grad is False, reason
                _scale.copy_(new_scale.reshape(_scale.shape))
        else:
            found_infs = [found_inf.to(device=_scale.device, non_blocking=True)
                          for state in self._per_optimizer_states.values()
                          for found_inf in state["found_inf_per_device"].values()]
            assert len(found_infs) > 0, "No inf checks were recorded prior to update."
            found_inf_combined = found_infs[0]
            for extra in found_infs[1:]:
                found_inf_combined = found_inf_combined + extra
            _ops()._amp_update_scale_(_scale, _growth_tracker, found_inf_combined, self._growth_factor,
                                      self._backoff_factor, self._growth_interval)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _get_scale_async(self) -> Optional[Tensor]:
        return self._scale

    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled); reads the device."""
        if self._enabled:
            return self._init_scale if self._scale is None else float(self._scale.item())
        return 1.0

    def get_growth_factor(self) -> float:
        """The scale growth factor."""
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        """Sets the scale growth factor."""
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        """The scale backoff factor."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        """Sets the scale backoff factor."""
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        """The number of clean steps after which the scale grows."""
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        """Sets the growth interval."""
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if self._enabled:
            return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker.item())
        return 0

    def is_enabled(self) -> bool:
        """Whether this scaler is enabled."""
        return self._enabled

    def state_dict(self) -> Dict[str, Any]:
        """scale, growth_factor, backoff_factor, growth_interval and _growth_tracker ({} when disabled)."""
        if self._enabled:
            return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                    "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                    "_growth_tracker": self._get_growth_tracker()}
        return {}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Loads a state_dict() of an enabled scaler."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self) -> Dict[str, Any]:
        state = self.__dict__.copy()
        if self._enabled:
            assert len(self._per_optimizer_states) == 0, (
                "A GradScaler instance may only be pickled at the beginning of an iteration, "
                "or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
