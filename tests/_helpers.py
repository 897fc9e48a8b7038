"""Helpers the SDK's test files share (fixtures are in tests/conftest.py): a thread runner that reports
its workers' errors and hangs, a subprocess runner with the repository on PYTHONPATH, and the host/device
copies of the runtime tests on the simulator's backend."""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

__all__ = ["ROOT", "SIM_BACKEND", "run_threads", "subprocess_env", "run_python", "h2d", "d2h", "to_numpy",
           "kernel_checker_ops", "run_module"]

ROOT = Path(__file__).resolve().parents[1]

# The unrenamed slot the runtime tests attach device_sim to (the ``sim`` fixture, tests/conftest.py).
SIM_BACKEND = "privateusethree"


def run_threads(workers: Sequence[Callable[[], None]], budget: float = 60.0) -> None:
    """Runs each worker in a thread of its own and re-raises the first error any of them hit.

    An exception in a plain ``threading.Thread`` is printed and lost; here it fails the test. A worker
    still running ``budget + 60`` s after the start is a hang: the test fails instead of blocking the
    suite (the threads are daemons, so the process can still exit)."""
    errors: list[BaseException] = []

    def guarded(fn: Callable[[], None]) -> None:
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 - re-raised by the calling thread
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(w,), daemon=True) for w in workers]
    for t in threads:
        t.start()
    deadline = time.monotonic() + budget + 60
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    hung = [t.name for t in threads if t.is_alive()]
    assert not hung, f"threads still running {budget + 60:.0f} s after the start (a hang): {hung}"
    if errors:
        raise errors[0]


def subprocess_env(*extra_paths: Any) -> dict[str, str]:
    """os.environ with ``extra_paths``, the repository and samples/accel_sim first on PYTHONPATH (a child
    process imports the SDK and the accel sample as this one does, whatever its working directory), and
    without PYTEST_ADDOPTS (the options of this run are not a child pytest's)."""
    paths = [str(p) for p in extra_paths] + [str(ROOT), str(ROOT / "samples" / "accel_sim")] + sys.path
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in paths if p))
    env.pop("PYTEST_ADDOPTS", None)
    return env


def run_module(args: Sequence[str], *extra_paths: Any, cwd: Any = ROOT,
               timeout: float = 600) -> subprocess.CompletedProcess:
    """``python *args`` (``-m backend_sdk conformance ...``, ``-m pytest ...``) in ``cwd`` with
    :func:`subprocess_env`; the caller checks the exit status (some tests expect a failure)."""
    return subprocess.run([sys.executable, *args], cwd=str(cwd), env=subprocess_env(*extra_paths),
                          capture_output=True, text=True, timeout=timeout)


def run_python(code: str, *extra_paths: Any, timeout: float = 120, check: bool = False) -> subprocess.CompletedProcess:
    """Runs ``code`` (dedented) in a fresh interpreter in the repository root; with ``check``, a non-zero
    exit fails the test with the child's output."""
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=str(ROOT), env=subprocess_env(*extra_paths),
                       capture_output=True, text=True, timeout=timeout)
    if check:
        assert r.returncode == 0, r.stdout + r.stderr
    return r


def h2d(buf: Any, array: Any, s: Any = None) -> None:
    """Copies the numpy ``array`` into the device buffer ``buf`` on the simulator's backend (stream ``s``)."""
    from backend_sdk import _runtime as rt

    rt.memcpy(SIM_BACKEND, buf.ptr, array.ctypes.data, array.nbytes, "h2d", s)


def d2h(array: Any, buf: Any, s: Any = None) -> None:
    """Copies the device buffer ``buf`` into the numpy ``array`` on the simulator's backend (stream ``s``)."""
    from backend_sdk import _runtime as rt

    rt.memcpy(SIM_BACKEND, array.ctypes.data, buf.ptr, array.nbytes, "d2h", s)


def to_numpy(t: Any) -> Any:
    """A tensor's values as a numpy array, from any device and through autograd."""
    return t.detach().cpu().numpy()


@contextlib.contextmanager
def kernel_checker_ops(namespace: str, views: bool = False) -> Iterator[Any]:
    """``namespace::scale`` (functional) and ``namespace::scale_`` (in-place) defined with Meta kernels (and
    ``namespace::flip``, a view: the transpose, with ``views``), the kernel checker on, and the IMPL
    Library for accel kernels registered while it is on; everything is undone on exit."""
    import backend_sdk as sdk
    from backend_sdk.library import Library
    from backend_sdk.testing import check_kernels, kernel_checks_enabled

    before = kernel_checks_enabled()
    defs = Library(namespace, "DEF")
    defs.define("scale(Tensor x) -> Tensor")
    defs.define("scale_(Tensor(a!) x) -> Tensor(a!)")
    defs.impl("scale", lambda x: sdk.empty(tuple(x.shape), dtype=x.dtype, device="meta"), "Meta")
    defs.impl("scale_", lambda x: x, "Meta")
    if views:
        defs.define("flip(Tensor(a) x) -> Tensor(a)")
        defs.impl("flip", lambda x: x.t(), "Meta")
    check_kernels(True)
    impls = Library(namespace, "IMPL", "accel")
    try:
        yield impls
    finally:
        impls._destroy()
        defs._destroy()
        check_kernels(before)
