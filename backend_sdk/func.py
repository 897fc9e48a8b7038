"""``backend_sdk.func``: composable function transforms, as ``torch.func`` (vmap, grad, grad_and_value).

See docs/vmap.md.
"""
from __future__ import annotations

from ._functorch import grad, grad_and_value
from ._functorch.vmap import vmap

__all__ = ["grad", "grad_and_value", "vmap"]
