"""Shared fixtures: tests are device-generic where they can be."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import backend_sdk
import accel  # noqa: F401  (the sample backend: renames PrivateUse1 to "accel" and attaches device_sim)


def _devices() -> list[str]:
    # cpu and every renamed backend with an attached device (PrivateUse1 is
    # "accel" in the test process; PrivateUse2/3 stay free for tests that
    # attach or register their own). Meta is tested separately: it has no data.
    from backend_sdk import _C, _runtime

    backends = [_C._get_privateuse_backend_name(which) for which in (1, 2, 3)]
    return ["cpu"] + [name for name in backends if _runtime.has_device(name)]


@pytest.fixture(params=_devices())
def device(request) -> str:
    """Each test using it runs on cpu and on every registered backend."""
    return request.param


_counter = itertools.count()


@pytest.fixture
def ns() -> str:
    """A fresh operator namespace per test (namespaces are process-global)."""
    return f"test_ns_{next(_counter)}"


def arange_tensor(*shape: int, dtype=np.float32) -> backend_sdk.Tensor:
    return backend_sdk.from_numpy(np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape))
