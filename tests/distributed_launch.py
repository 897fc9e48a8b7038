"""Runs a test file's rank-side case under ``backend_sdk.distributed.run`` (tests/test_distributed_*.py)."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def require_mpi() -> None:
    """Skips (with the reason) only if mpi4py or mpiexec is genuinely missing: the test extra installs both."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        pytest.skip("mpi4py is not installed (pip install \".[test]\" installs the distributed extra)")
    from backend_sdk.distributed.run import find_mpiexec

    try:
        find_mpiexec()
    except RuntimeError as e:
        pytest.skip(str(e))


def launch(script: str, nproc: int, *args: str, timeout: float = 60, env: dict | None = None,
           expect_ok: bool = True, launcher: bool = False) -> tuple[int, str, float]:
    """Runs ``script args`` on ``nproc`` ranks; returns (exit status, output, seconds). Never hangs past timeout.

    ``launcher=True`` goes through ``python -m backend_sdk.distributed.run``; otherwise the same mpiexec
    command line is started directly (saving the launcher's own interpreter start and SDK import).
    """
    require_mpi()
    from backend_sdk.distributed.run import mpiexec_command

    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.pathsep.join([REPO, os.path.join(REPO, "samples", "accel_sim"),
                                              os.path.join(REPO, "tests"), full_env.get("PYTHONPATH", "")])
    full_env.update(env or {})
    start = time.monotonic()
    cmd = [sys.executable, "-m", "backend_sdk.distributed.run", "--nproc-per-node", str(nproc), script, *args] \
        if launcher else mpiexec_command(nproc, [script, *args])
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=full_env, cwd=REPO, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, _ = proc.communicate()
        pytest.fail(f"{script} {args} on {nproc} ranks hung for {timeout} s:\n{out}")
    seconds = time.monotonic() - start
    if expect_ok and proc.returncode != 0:
        pytest.fail(f"{script} {args} on {nproc} ranks failed ({proc.returncode}):\n{out}")
    if expect_ok:
        for r in range(nproc):
            assert f"RANK {r} OK" in out, out
    return proc.returncode, out, seconds


__all__ = ["launch", "require_mpi"]
