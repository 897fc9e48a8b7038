"""The conformance suite's pytest plugin (entry point ``pytest11: backend_sdk_conformance``).

Without ``--backend`` it does nothing: it is loaded in every pytest run of anyone who installed
the SDK. With ``--backend NAME`` it imports the vendor package ``NAME`` and adds the check
modules of the selected areas (``--conformance-area``, repeatable; default every area) to the
session, next to the paths given on the command line. The checks use the fixtures below:

* ``conformance_backend`` (session): a :class:`Backend` (name, device count, device module,
  fault injector),
* ``conformance_device``: each device of the backend ("NAME:0", "NAME:1", ...) in turn.
"""
from __future__ import annotations

import dataclasses
import importlib
import os
import types
from typing import Any, Callable

import pytest

from . import AREAS, area_files

def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("backend_sdk conformance")
    group.addoption("--backend", action="store", default=None, metavar="NAME",
                    help="run backend_sdk's conformance suite on the backend NAME (imports the package NAME)")
    group.addoption("--conformance-area", action="append", default=None, metavar="AREA", choices=list(AREAS),
                    help=f"conformance areas to run (repeatable; default all): {', '.join(AREAS)}")
    group.addoption("--conformance-dtypes", action="store", default="default", choices=["default", "all"],
                    help="operators/autograd areas: check a representative subset of dtypes (default) or all")
    group.addoption("--conformance-op", action="append", default=None, metavar="NAME",
                    help="operators/autograd areas: check only these operators (repeatable)")
    group.addoption("--conformance-xfail", action="append", default=None, metavar="ID",
                    help="a check known to fail, by test parameter ('sum-functional', 'accel:0') or name "
                         "('test_fork_child_gets_a_clear_error[accel:0]'): marked xfail(strict=True) (repeatable)")


@dataclasses.dataclass
class Backend:
    """The backend under test."""

    name: str
    package: types.ModuleType
    device_count: int
    module: types.ModuleType  # the generated device module, backend_sdk.<name>

    @property
    def devices(self) -> list[str]:
        """"NAME:0", "NAME:1", ..."""
        return [f"{self.name}:{i}" for i in range(self.device_count)]

    def fault_injector(self) -> Callable[[int], None] | None:
        """A function that makes the next kernel/synchronising call on a device fail asynchronously, or None."""
        hook = getattr(self.package, "conformance_inject_fault", None)
        if callable(hook):
            return hook
        from ... import _runtime

        try:
            import device_sim
        except ImportError:
            return None
        source = _runtime._rt.device_source(self.name)
        if source and os.path.realpath(source) == os.path.realpath(device_sim.library_path()):
            return lambda index: device_sim.inject("kernel_fault", index)
        return None


_backend: Backend | None = None


def _load_backend(name: str) -> Backend:
    global _backend
    if _backend is not None and _backend.name == name:
        return _backend
    import backend_sdk
    from backend_sdk import _runtime

    from backend_sdk.testing import check_kernels

    check_kernels(True)  # Note [Kernel checker]: before the backend's kernels register
    try:
        package = importlib.import_module(name)
    except ImportError as e:
        raise pytest.UsageError(f"--backend {name}: cannot import the backend's package '{name}': {e}") from e
    except Exception as e:  # a registration the SDK refused (a misspelled kernel name), a device error, ...
        raise pytest.UsageError(f"--backend {name}: importing the backend's package '{name}' failed: "
                                f"{type(e).__name__}: {e}") from e
    module = getattr(backend_sdk, name, None)
    if not isinstance(module, types.ModuleType):
        raise pytest.UsageError(f"--backend {name}: importing '{name}' did not register the device module "
                                f"backend_sdk.{name} (call backend_sdk.utils.generate_device_module('{name}'))")
    if not _runtime.has_device(name):
        raise pytest.UsageError(f"--backend {name}: no device is attached to backend '{name}'")
    _backend = Backend(name, package, _runtime.device_count(name), module)
    return _backend


def pytest_configure(config: Any) -> None:
    name = config.getoption("backend", None)
    if not name:
        return
    _load_backend(name)
    config.addinivalue_line("markers", "conformance(area): a backend_sdk conformance check")
    present = {os.path.realpath(str(a).split("::")[0]) for a in config.args}
    for path in area_files(config.getoption("conformance_area")):
        if os.path.realpath(path) not in present:
            config.args.append(path)


def expected_failures(config: Any) -> dict[str, str]:
    """Checks known to fail: the vendor package's ``CONFORMANCE_XFAIL`` ({id: reason}) and ``--conformance-xfail``."""
    name = config.getoption("backend", None)
    expected: dict[str, str] = {}
    if name:
        expected.update(getattr(_load_backend(name).package, "CONFORMANCE_XFAIL", None) or {})
    for pattern in config.getoption("conformance_xfail", None) or ():
        expected.setdefault(pattern, "known failure (--conformance-xfail)")
    return expected


def pytest_collection_modifyitems(config: Any, items: list) -> None:
    if not config.getoption("backend", None):
        return
    expected = expected_failures(config)
    if not expected:
        return
    ours = {os.path.realpath(p) for p in area_files()}
    for item in items:
        if os.path.realpath(str(getattr(item, "path", ""))) not in ours:
            continue
        param = item.callspec.id if hasattr(item, "callspec") else ""
        for pattern, reason in expected.items():
            if pattern in (item.name, param, item.originalname):
                item.add_marker(pytest.mark.xfail(strict=True, reason=reason))
                break


def pytest_generate_tests(metafunc: Any) -> None:
    if "conformance_device" in metafunc.fixturenames:
        name = metafunc.config.getoption("backend", None)
        devices = _load_backend(name).devices if name else []
        metafunc.parametrize("conformance_device", devices or [None], ids=devices or ["no-backend"])


@pytest.fixture(scope="session")
def conformance_backend(request: Any) -> Backend:
    """The backend under test (skips when the run has no --backend)."""
    name = request.config.getoption("backend", None)
    if not name:
        pytest.skip("no --backend given: the conformance suite has nothing to check")
    return _load_backend(name)


@pytest.fixture
def conformance_device(request: Any, conformance_backend: Backend) -> str:
    """One device of the backend under test ("NAME:i")."""
    if request.param is None:
        pytest.skip(f"backend '{conformance_backend.name}' has no devices")
    return request.param
