"""pyaccel: a sample backend written only in Python (no compiler).

``import pyaccel`` renames PrivateUse2 to "pyaccel", attaches a
:class:`~backend_sdk.utils.python_device.PythonDevice` (two devices whose memory
is numpy byte arrays), registers

* the SDK's contract-backed kernels (empty, empty_strided, resize_, item,
  copy_ between pyaccel and cpu and between pyaccel devices),
* a handful of operators computed with numpy on the device memory
  (``add``, ``mul``, ``neg``, ``relu``, ``sum``, ``mm``, ``fill_``, with their
  in-place and out= forms where listed in ``KERNELS``), and random fills that
  draw from pyaccel's own generator,
* the SDK's CPU fallback for every other operator (slow but correct),

and generates the device module, so that::

    import backend_sdk, pyaccel
    x = backend_sdk.ones(3, device="pyaccel")
    (x + x).relu().sum().item()
    pyaccel.memory_allocated()

This module *is* the device module (``backend_sdk.pyaccel`` is the same API).
The conformance suite checks it: ``python -m backend_sdk conformance pyaccel``.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

import backend_sdk as _sdk
from backend_sdk import library as _library, utils as _utils
from backend_sdk.utils import python_device as _pd

BACKEND_NAME = "pyaccel"

if _sdk._C._get_privateuse_backend_name(2) != BACKEND_NAME:
    _utils.rename_privateuse2_backend(BACKEND_NAME)


class PyAccelDevice(_pd.PythonDevice):
    """The device: two devices of 256 MiB each, memory in numpy arrays, synchronous streams."""

    name = "pyaccel_numpy"


DEVICE = PyAccelDevice(device_count=2, total_memory=256 << 20)
_pd.attach_python_device(BACKEND_NAME, DEVICE)
_pd.register_contract_kernels(BACKEND_NAME)
_pd.register_cpu_fallback(BACKEND_NAME)

_as_numpy = _pd.tensor_as_numpy
_aten = _sdk.ops.aten


def _meta(value: Any) -> Any:
    """A meta twin of a pyaccel tensor argument (argument checks and result metadata come from the SDK's Meta
    kernels). CPU tensors stay: they are 0-d CPU scalars (Python numbers), which the Meta kernels treat as
    scalars in type promotion."""
    if isinstance(value, _sdk.Tensor) and value.device.type == BACKEND_NAME:
        return _sdk.empty_strided(tuple(value.shape), value.stride(), dtype=value.dtype, device="meta")
    return value


def _check_devices(overload: Any, args: tuple, kwargs: dict) -> None:
    """Every tensor argument on one device (0-d CPU tensors, Python numbers, are scalars), as PyTorch requires:
    "Expected all tensors to be on the same device, but found at least two devices, pyaccel:0 and cpu!"."""
    first = None
    for t in list(args) + list(kwargs.values()):
        if not isinstance(t, _sdk.Tensor) or (t.device.type == "cpu" and t.dim() == 0):
            continue
        if first is None:
            first = t.device
        elif t.device != first:
            raise ValueError(f"Expected all tensors to be on the same device, but found at least two devices, "
                             f"{first} and {t.device}! (when checking arguments for {overload.__name__})")


def _meta_call(overload: Any, args: tuple, kwargs: dict) -> Any:
    _check_devices(overload, args, kwargs)
    return overload(*[_meta(a) for a in args], **{k: _meta(v) for k, v in kwargs.items()})


def _host(value: Any, dtype: Any) -> Any:
    """The numpy view of a tensor argument, converted to the result dtype (the SDK's type promotion)."""
    if isinstance(value, _sdk.Tensor):
        array = _as_numpy(value) if value.device.type == BACKEND_NAME else value.numpy()
        return array.astype(_pd.numpy_dtype(dtype), copy=False)
    return value


def _functional(overload: Any, compute: Callable[..., np.ndarray]) -> Callable[..., Any]:
    """A kernel for a functional overload: meta run for checks and result metadata, numpy for the values."""
    def kernel(*args: Any, **kwargs: Any) -> Any:
        result = _meta_call(overload, args, kwargs)
        device_arg = next(a for a in args if isinstance(a, _sdk.Tensor) and a.device.type == BACKEND_NAME)
        out = _sdk.empty(tuple(result.shape), dtype=result.dtype, device=device_arg.device)
        if out.numel():
            values = compute(*[_host(a, result.dtype) for a in args], **kwargs)
            _as_numpy(out)[...] = values
        return out
    return kernel


def _inplace(functional: Callable[..., Any], overload: Any) -> Callable[..., Any]:
    """self.op_(...): the in-place overload's Meta kernel checks the call (broadcast shape, result type
    castable to self's dtype, overlap), then self.copy_(op(self, ...)) writes the result with copy_, which
    converts to self's dtype and bumps the version counter."""
    def kernel(self: Any, *args: Any, **kwargs: Any) -> Any:
        _meta_call(overload, (self,) + args, kwargs)
        return self.copy_(functional(self, *args, **kwargs))
    return kernel


def _out(functional: Callable[..., Any], overload: Any) -> Callable[..., Any]:
    """op.out(..., out=out): the out= overload's Meta kernel checks the call (and out's dtype), then out is
    resized to the result's shape and written with copy_."""
    def kernel(*args: Any, out: Any, **kwargs: Any) -> Any:
        try:
            _meta_call(overload, args, dict(kwargs, out=out))
        except NotImplementedError:  # no Meta kernel for this out= overload: copy_ below still checks shapes
            pass
        result = functional(*args, **kwargs)
        if tuple(out.shape) != tuple(result.shape):
            out.resize_(tuple(result.shape))
        return out.copy_(result)
    return kernel


def _add(a: Any, b: Any, alpha: Any = 1) -> np.ndarray:
    return a + b if alpha == 1 else a + alpha * b


def _random(overload: Any) -> Callable[..., Any]:
    """A random fill that draws from pyaccel's generator (not the CPU's): the numbers are computed on the host
    by the CPU kernel from a CPU generator holding the device generator's state, and the state advanced
    accordingly. Philox numbers depend only on (seed, offset, element index), so pyaccel gives the CPU's
    numbers for the same seed."""
    def kernel(self: Any, *args: Any, generator: Any = None, **kwargs: Any) -> Any:
        device_generator = generator if generator is not None else _sdk._C._default_generator(self.device)
        host_generator = _sdk.Generator("cpu")
        host_generator.set_state(device_generator.get_state())
        values = _sdk.empty(tuple(self.shape), dtype=self.dtype)
        args = tuple(a.cpu() if isinstance(a, _sdk.Tensor) else a for a in args)
        overload(values, *args, generator=host_generator, **kwargs)
        device_generator.set_state(host_generator.get_state())
        return self.copy_(values)
    return kernel


def _fill_(self: Any, value: Any) -> Any:
    _aten.fill_.Scalar(_meta(self), value)  # argument checks
    return self.copy_(_sdk.tensor(value, dtype=self.dtype))


_add_k = _functional(_aten.add.Tensor, _add)
_mul_k = _functional(_aten.mul.Tensor, lambda a, b: a * b)
_neg_k = _functional(_aten.neg.default, lambda a: -a)
_relu_k = _functional(_aten.relu.default, lambda a: np.maximum(a, 0))
_mm_k = _functional(_aten.mm.default, lambda a, b: a @ b)
_sum_k = _functional(_aten.sum.default, lambda a, dtype=None: a.sum())

#: Conformance checks known to fail, with the reason (the suite marks them xfail(strict=True)). None today.
CONFORMANCE_XFAIL: dict[str, str] = {}

#: The operators pyaccel implements natively (overload -> kernel).
KERNELS: dict[str, Callable[..., Any]] = {
    "add.Tensor": _add_k, "add_.Tensor": _inplace(_add_k, _aten.add_.Tensor), "add.out": _out(_add_k, _aten.add.out),
    "mul.Tensor": _mul_k, "mul_.Tensor": _inplace(_mul_k, _aten.mul_.Tensor), "mul.out": _out(_mul_k, _aten.mul.out),
    "neg": _neg_k, "neg_": _inplace(_neg_k, _aten.neg_.default), "neg.out": _out(_neg_k, _aten.neg.out),
    "relu": _relu_k, "relu_": _inplace(_relu_k, _aten.relu_.default),
    "mm": _mm_k, "mm.out": _out(_mm_k, _aten.mm.out),
    "sum": _sum_k,
    "fill_.Scalar": _fill_,
    "uniform_": _random(_aten.uniform_.default), "normal_": _random(_aten.normal_.default),
    "bernoulli_.float": _random(_aten.bernoulli_.float), "exponential_": _random(_aten.exponential_.default),
    "random_": _random(_aten.random_.default), "random_.from": _random(getattr(_aten.random_, "from")),
    "random_.to": _random(_aten.random_.to),
}

_lib = _library.Library("aten", "IMPL", BACKEND_NAME)
for _name, _kernel in KERNELS.items():
    _lib.impl(_name, _kernel)

_utils.generate_methods_for_privateuse2_backend()
_module = _utils.generate_device_module(BACKEND_NAME)

globals().update({name: getattr(_module, name) for name in _module.__all__})
__all__ = list(_module.__all__) + ["BACKEND_NAME", "CONFORMANCE_XFAIL", "DEVICE", "KERNELS", "PyAccelDevice"]


def conformance_inject_fault(device_index: int = 0) -> None:
    """Conformance-suite hook: the next synchronising call on ``device_index`` fails with a kernel fault."""
    DEVICE.inject_fault(device_index)
