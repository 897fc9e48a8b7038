"""vmap and grad (``torch._functorch``): batched tensors at the FuncTorchBatched key, batching rules, randomness.

See Note [Batched tensors] (vmap.py), the rules (_rules.py), the random kernels (_random.py) and
Note [grad under vmap] (eager_transforms.py).
"""
from __future__ import annotations

from . import _random, _rules
from .eager_transforms import grad, grad_and_value
from .vmap import VmapInfo, is_batchedtensor

# `backend_sdk._functorch.vmap` stays the module (as torch._functorch.vmap); the function is backend_sdk.vmap.
__all__ = ["VmapInfo", "grad", "grad_and_value", "is_batchedtensor"]

_fallback_lib = None


def _install() -> None:
    global _fallback_lib
    if _fallback_lib is None:
        from ..library import Library

        _fallback_lib = Library("_", "IMPL", "FuncTorchBatched")
        _fallback_lib.fallback(_rules.batched_fallback)
        _random.install()


_install()
