"""accel: the sample backend on the simulated device.

``import accel`` renames PrivateUse1 to "accel", attaches the simulated device
(device_sim) through the device runtime contract, loads the backend's kernels
(libaccel_sim.so, registered under PrivateUse1) and generates the device
module, so that::

    import backend_sdk, accel
    x = backend_sdk.ones(3, device="accel")
    s = accel.Stream()
    accel.memory_allocated()

This module *is* the device module (``backend_sdk.accel`` is the same API).
"""
from __future__ import annotations

import os as _os

import device_sim as _device_sim
from backend_sdk import utils as _utils

BACKEND_NAME = "accel"

# Renames PrivateUse1, registers the kernels (RuntimeError listing the SDK_LIBRARY blocks that failed),
# attaches the simulated device and generates the tensor methods and the device module.
_module = _utils.register_backend(BACKEND_NAME, library=_os.path.join(_os.path.dirname(__file__), "libaccel_sim.so"),
                                  device=_device_sim.library_path())


def include_paths() -> list[str]:
    """The headers kernels for accel compile against besides the SDK's (``device_sim.h``); read by
    ``backend_sdk.utils.cpp_extension.include_paths("accel")``."""
    return [_device_sim.include_dir()]


def library_paths() -> list[str]:
    """The directory of ``libdevice_sim.so``; read by ``cpp_extension.library_paths("accel")``."""
    return [_os.path.dirname(_device_sim.library_path())]


# The device module (backend_sdk.accel) carries them: cpp_extension looks them up there.
_module.include_paths = include_paths  # type: ignore[attr-defined]
_module.library_paths = library_paths  # type: ignore[attr-defined]

globals().update({name: getattr(_module, name) for name in _module.__all__})
__all__ = list(_module.__all__) + ["BACKEND_NAME"]
