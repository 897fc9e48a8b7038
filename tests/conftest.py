"""Shared fixtures: tests are device-generic where they can be (``device``, ``backend_device``, or
backend_sdk.testing.instantiate_device_type_tests). Shared helpers that are not fixtures (the thread
runner, subprocess runners, the simulator's copies) are in tests/_helpers.py."""
from __future__ import annotations

import importlib
import itertools
import os
import pathlib
import sys

import numpy as np
import pytest

import backend_sdk
import accel  # noqa: F401  (the sample backend: renames PrivateUse1 to "accel" and attaches device_sim)
from backend_sdk.testing import available_device_types

from _helpers import SIM_BACKEND

# Note [Extra test backends]: PrivateUse2/3 stay free in the ordinary test process (tests attach or
# rename their own there), so the Python-only sample backend pyaccel (PrivateUse2) joins the
# device-generic tests only in a process that asks for it: BACKEND_SDK_TEST_BACKENDS=pyaccel (a comma
# list of modules to import; samples/python_backend is put on sys.path). tests/test_device_generic.py
# runs the device-generic operator tests that way, restricted to their pyaccel instances (-k PYACCEL), and
# checks there that every converted file's per-device tests are collected once for each backend. Tests
# that hard-code PrivateUse2 (test_core_types, test_device_contract_v2) are not for such a process.
for _module in [m.strip() for m in os.environ.get("BACKEND_SDK_TEST_BACKENDS", "").split(",") if m.strip()]:
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "samples" / "python_backend"))
    importlib.import_module(_module)


def _devices() -> list[str]:
    # cpu and every renamed backend with an attached device (PrivateUse1 is "accel" in the test
    # process). Meta is tested separately: it has no data.
    return available_device_types()


@pytest.fixture(params=_devices())
def device(request) -> str:
    """Each test using it runs on cpu and on every registered backend."""
    return request.param


@pytest.fixture(params=_devices()[1:])
def backend_device(request) -> str:
    """Each test using it runs on every registered backend but cpu: for checks of a backend against the CPU."""
    return request.param


_counter = itertools.count()


@pytest.fixture
def ns() -> str:
    """A fresh operator namespace per test (namespaces are process-global)."""
    return f"test_ns_{next(_counter)}"


def arange_tensor(*shape: int, dtype=np.float32, device: str = "cpu") -> backend_sdk.Tensor:
    """0, 1, 2... in ``shape`` on ``device`` (a contiguous tensor; from numpy on the CPU)."""
    return backend_sdk.from_numpy(np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)).to(device)




@pytest.fixture(scope="module")
def sim():
    """device_sim attached to PrivateUse3 (unrenamed: the runtime tests drive the contract through
    ``backend_sdk._runtime`` there); a module opts in with ``pytestmark = pytest.mark.usefixtures("sim")``.
    Returns the simulator's ctypes library."""
    import device_sim
    from backend_sdk import _runtime

    _runtime.attach_device_library(SIM_BACKEND, device_sim.library_path())
    return device_sim.lib()
