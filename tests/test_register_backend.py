"""backend_sdk.utils.register_backend: rename + kernels + device + tensor methods + device module in one call
(the accel sample and the C++ scaffold use it; here a Python device on PrivateUse3, in a subprocess: one
backend per slot and process)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from backend_sdk.utils import register_backend

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent(
    """
    import backend_sdk as sdk
    from backend_sdk.utils import python_device, register_backend

    dev = python_device.PythonDevice(device_count=1, total_memory=64 << 20)
    module = register_backend("regdev", device=dev, slot=3)
    assert module is sdk.regdev and register_backend("regdev", device=dev, slot=3) is module
    x = sdk.ones(3, device="regdev")
    assert x.is_regdev and (x + x).cpu().tolist() == [2.0, 2.0, 2.0]   # contract kernels + CPU fallback
    assert sdk.ones(2).regdev().device.type == "regdev"
    assert module.device_count() == 1
    try:
        register_backend("regdev", device=python_device.PythonDevice(), slot=3)
    except ValueError as e:
        assert "already registered with other arguments" in str(e)
    else:
        raise AssertionError("re-registration with another device was accepted")
    print("ok")
    """
)


def test_register_python_device_backend():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr


@pytest.mark.parametrize("kwargs, error, message", [
    ({"device": None}, ValueError, "a device is required"),
    ({"device": "/no/such/libdevice.so"}, FileNotFoundError, "the device library /no/such/libdevice.so does not exist"),
    ({"device": 3}, TypeError, "device library must be a path"),
    ({"device": "/", "slot": 4}, ValueError, "slot must be 1, 2 or 3"),
    ({"device": "/", "library": "/no/such/lib.so"}, FileNotFoundError, "kernel library /no/such/lib.so does not exist"),
])
def test_bad_arguments_are_refused_before_anything_registers(kwargs, error, message):
    with pytest.raises(error, match=message):
        register_backend("regbad", **kwargs)
