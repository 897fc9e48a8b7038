"""``backend_sdk.utils.register_backend``: a backend's whole registration in one call."""
from __future__ import annotations

import os
import threading
import types
from typing import Any

__all__ = ["register_backend"]

_lock = threading.Lock()
#: name -> (privateuse slot, kernel library path, device) of each backend this function registered.
_registered: dict[str, tuple[int, str | None, Any]] = {}


def _path(value: Any, what: str) -> str:
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"register_backend(): {what} must be a path (str or os.PathLike), got {type(value).__name__}")
    path = os.path.realpath(os.fspath(value))
    if not os.path.exists(path):
        raise FileNotFoundError(f"register_backend(): the {what} {path} does not exist")
    return path


def register_backend(name: str, library: str | os.PathLike | None = None, device: Any = None, *,
                     slot: int = 1) -> types.ModuleType:
    """Registers backend ``name`` and returns its device module (``backend_sdk.<name>``).

    In one call: renames PrivateUse<slot> (1, 2 or 3) to ``name``; loads the kernel ``library`` (a shared library of ``SDK_LIBRARY_IMPL`` blocks:
    RuntimeError listing every registration that failed, such as a kernel for an operator aten
    does not define); attaches ``device``, either the path of a device library (its
    ``sdk_device_entry``; it may be ``library`` itself) or a
    :class:`~backend_sdk.utils.python_device.PythonDevice` (which also gets the SDK's contract-backed
    kernels and CPU fallback); adds the tensor methods (``Tensor.is_<name>``, ``Tensor.<name>()``);
    and generates the device module. Calling it again with the same arguments returns the same
    module; with other arguments it is a ValueError.
    """
    from .. import _runtime
    from . import _generate_methods, generate_device_module, rename_privateuse_backend
    from . import python_device

    if not isinstance(name, str) or not name:
        raise TypeError(f"register_backend(): name must be a non-empty str, got {name!r}")
    if slot not in (1, 2, 3):
        raise ValueError(f"register_backend('{name}'): slot must be 1, 2 or 3 (PrivateUse1..3), got {slot!r}")
    library_path = None if library is None else _path(library, "kernel library")
    if device is None:
        raise ValueError(f"register_backend('{name}'): a device is required: the path of a device library or a "
                         "backend_sdk.utils.python_device.PythonDevice")
    python_device_given = isinstance(device, python_device.PythonDevice)
    device_key: Any = device if python_device_given else _path(device, "device library")
    with _lock:
        previous = _registered.get(name)
        if previous is not None:
            if previous != (slot, library_path, device_key):
                raise ValueError(f"register_backend('{name}'): already registered with other arguments "
                                 f"(slot, library, device) = {previous}")
            import backend_sdk

            return getattr(backend_sdk, name)
        rename_privateuse_backend(slot, name)
        import backend_sdk

        # A device library other than the kernel library is attached first: the kernels may link it
        # (libaccel_sim.so needs libdevice_sim.so loaded). One library that is both is loaded as the
        # kernel library first, so that its registration errors are raised (Note [Closed namespaces]).
        if python_device_given:
            python_device.attach_python_device(name, device)
            python_device.register_contract_kernels(name)
            python_device.register_cpu_fallback(name)
        elif device_key != library_path:
            _runtime.attach_device_library(name, device_key)
        if library_path is not None:
            backend_sdk.ops.load_library(library_path)
        if not python_device_given and device_key == library_path:
            _runtime.attach_device_library(name, device_key)
        _generate_methods(slot, True, True, True)
        module = generate_device_module(name)
        _registered[name] = (slot, library_path, device_key)
        return module
