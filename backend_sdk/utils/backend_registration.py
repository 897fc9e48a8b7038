"""``backend_sdk.utils.backend_registration``: registering a renamed backend (``torch.utils.backend_registration``).

The same functions as ``backend_sdk.utils`` (which re-exports them, as
``torch.utils`` does), under PyTorch's module path, plus
``_get_custom_mod_func`` (a function of the registered device module).
"""
from __future__ import annotations

from typing import Any, Callable

from .. import _C
from . import (
    _privateuse_of, generate_methods_for_privateuse1_backend, rename_privateuse1_backend,
)

__all__ = ["rename_privateuse1_backend", "generate_methods_for_privateuse1_backend"]


def _get_custom_mod_func(func_name: str) -> Callable[..., Any]:
    """The function ``func_name`` of the device module registered for PrivateUse1 (``backend_sdk.<name>``).

    RuntimeError naming the backend and what the module must provide when the
    module or the function is missing (PyTorch's message).
    """
    import backend_sdk

    name = _C._get_privateuse1_backend_name()
    module = getattr(backend_sdk, name, None) if name != "privateuseone" else None
    function = getattr(module, func_name, None) if module is not None else None
    if function is None:
        raise RuntimeError(
            f"Try to call backend_sdk.{name}.{func_name}. The backend must register a custom backend module with "
            f"`backend_sdk._register_device_module('{name}', BackendModule)` (backend_sdk.utils."
            f"generate_device_module('{name}') does it), and BackendModule needs to have the function "
            f"'{func_name}'.")
    return function


del _privateuse_of
