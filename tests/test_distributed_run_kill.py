"""The launcher ends the job once a rank failed, even if another rank never ends (Note [Launcher])."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from distributed_launch import REPO, require_mpi


def _run(case: str, kill_timeout: float, timeout: float = 60) -> tuple[int, str, float]:
    require_mpi()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([REPO, os.path.join(REPO, "tests"), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "backend_sdk.distributed.run", "--nproc-per-node", "2", "--kill-timeout",
           str(kill_timeout), __file__, case]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=REPO,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, _ = proc.communicate()
        pytest.fail(f"the launcher did not end the job within {timeout} s:\n{out}")
    return proc.returncode, out, time.monotonic() - start


@pytest.mark.parametrize("case", ["raise", "die"])
def test_a_rank_looping_outside_distributed_code_is_killed_after_another_failed(case):
    code, out, seconds = _run(case, kill_timeout=2)
    assert code == 1, out
    why = "exited with status 1" if case == "raise" else \
        "died without an exit status (killed by a signal or os._exit)"
    assert f"backend_sdk.distributed.run: rank 1 {why} and the other ranks did not end within 2 s " \
           "(--kill-timeout): killing the job" in out, out
    assert "rank 0 looping" in out
    assert seconds < 30, seconds


def test_a_job_that_succeeds_is_not_killed():
    code, out, _ = _run("ok", kill_timeout=0.5)
    assert code == 0, out
    assert "rank 0 done" in out and "rank 1 done" in out and "killing" not in out


# ---- rank side ------------------------------------------------------------------------------------------
def _main(case: str) -> None:
    import backend_sdk.distributed as dist

    dist.init_process_group("mpi")
    r = dist.get_rank()
    dist.barrier()
    if case == "ok":
        if r == 0:
            time.sleep(1.5)  # finishes well after rank 1: a rank that ended well is no failure
        dist.destroy_process_group()
        print(f"rank {r} done", flush=True)
        return
    if r == 1:
        if case == "raise":
            raise ValueError("boom on rank 1")
        os._exit(7)
    print("rank 0 looping", flush=True)
    while True:  # never calls into distributed code again: only the launcher can end it
        time.sleep(0.05)


if __name__ == "__main__":
    _main(sys.argv[1])
