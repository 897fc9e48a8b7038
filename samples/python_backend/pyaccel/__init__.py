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

_utils.rename_privateuse2_backend(BACKEND_NAME)  # a no-op when already renamed to it


class PyAccelDevice(_pd.PythonDevice):
    """The device: two devices of 256 MiB each, memory in numpy arrays, synchronous streams."""

    name = "pyaccel_numpy"


DEVICE = PyAccelDevice(device_count=2, total_memory=256 << 20)
_pd.attach_python_device(BACKEND_NAME, DEVICE)
_pd.register_contract_kernels(BACKEND_NAME)
_pd.register_cpu_fallback(BACKEND_NAME)

_aten = _sdk.ops.aten


def _add(a: Any, b: Any, alpha: Any = 1) -> np.ndarray:
    return a + b if alpha == 1 else a + alpha * b


def _random(overload: Any) -> Callable[..., Any]:
    """A random fill that draws from pyaccel's generator (not the CPU's): the numbers are computed on the host
    by the CPU kernel from a CPU generator holding the device generator's state, and the state advanced
    accordingly. Philox numbers depend only on (seed, offset, element index), so pyaccel gives the CPU's
    numbers for the same seed."""
    def kernel(self: Any, *args: Any, generator: Any = None, **kwargs: Any) -> Any:
        host_generator = _sdk.Generator("cpu")  # the device's default generator: the device module's rng state
        host_generator.set_state(generator.get_state() if generator is not None else _module.get_rng_state(self.device))
        values = _sdk.empty(tuple(self.shape), dtype=self.dtype)
        args = tuple(a.cpu() if isinstance(a, _sdk.Tensor) else a for a in args)
        overload(values, *args, generator=host_generator, **kwargs)
        if generator is not None:
            generator.set_state(host_generator.get_state())
        else:
            _module.set_rng_state(host_generator.get_state(), self.device)
        return self.copy_(values)
    return kernel


def _fill_(self: Any, value: Any) -> Any:
    _aten.fill_.Scalar(_pd.meta_twin(self), value)  # argument checks
    return self.copy_(_sdk.tensor(value, dtype=self.dtype))


_add_k = _pd.numpy_kernel(_aten.add.Tensor, _add)
_mul_k = _pd.numpy_kernel(_aten.mul.Tensor, lambda a, b: a * b)
_neg_k = _pd.numpy_kernel(_aten.neg.default, lambda a: -a)
_relu_k = _pd.numpy_kernel(_aten.relu.default, lambda a: np.maximum(a, 0))


def _matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # numpy multiplies bool matrices; PyTorch's mm kernels have no bool version (TypeError at the call).
    if a.dtype == np.bool_:
        raise TypeError("mm: not implemented for 'Bool' on pyaccel")
    return a @ b


_mm_k = _pd.numpy_kernel(_aten.mm.default, _matmul)
_sum_k = _pd.numpy_kernel(_aten.sum.default, lambda a, dtype=None: a.sum())

#: Conformance checks known to fail, with the reason (the suite marks them xfail(strict=True)). None today.
CONFORMANCE_XFAIL: dict[str, str] = {}

#: The operators pyaccel implements natively (overload -> kernel).
KERNELS: dict[str, Callable[..., Any]] = {
    "add.Tensor": _add_k, "add_.Tensor": _pd.inplace_kernel(_add_k, _aten.add_.Tensor), "add.out": _pd.out_kernel(_add_k, _aten.add.out),
    "mul.Tensor": _mul_k, "mul_.Tensor": _pd.inplace_kernel(_mul_k, _aten.mul_.Tensor), "mul.out": _pd.out_kernel(_mul_k, _aten.mul.out),
    "neg": _neg_k, "neg_": _pd.inplace_kernel(_neg_k, _aten.neg_.default), "neg.out": _pd.out_kernel(_neg_k, _aten.neg.out),
    "relu": _relu_k, "relu_": _pd.inplace_kernel(_relu_k, _aten.relu_.default),
    "mm": _mm_k, "mm.out": _pd.out_kernel(_mm_k, _aten.mm.out),
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
