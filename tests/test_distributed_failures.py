"""A rank that raises, dies or stalls: the other ranks get a DistBackendError naming it, in bounded time."""
from __future__ import annotations

import os
import sys
import time

import pytest

from distributed_launch import launch


@pytest.mark.parametrize("nproc", [2, 4])
def test_a_rank_that_raises_is_named_by_the_others(nproc):
    code, out, seconds = launch(__file__, nproc, "raise", expect_ok=False, launcher=nproc == 2, timeout=45)
    assert code != 0, out
    assert "ValueError: boom on rank 1" in out
    for r in range(nproc):
        if r != 1:
            assert f"[Rank {r}] all_reduce failed: rank 1 raised an exception: ValueError: boom on rank 1" in out, out
    assert "RANK" not in out.replace("[Rank", "")  # nobody got past the failed collective
    assert seconds < 40


def test_a_rank_that_dies_is_named_after_its_heartbeats_stop():
    code, out, seconds = launch(__file__, 2, "die", expect_ok=False, timeout=45,
                                env={"BACKEND_SDK_DIST_HEARTBEAT_TIMEOUT": "3"})
    assert code != 0, out
    assert "[Rank 0] all_reduce failed: rank 1 stopped responding (no heartbeat for" in out, out
    assert "its process died or hangs" in out
    assert seconds < 40


def test_a_stalled_collective_times_out_with_the_group_timeout():
    code, out, seconds = launch(__file__, 2, "stall", expect_ok=False, timeout=45)
    assert code != 0, out
    assert "[Rank 0] Watchdog caught collective operation timeout: all_reduce ran for more than 2 seconds" in out, out
    assert "Last heartbeat from rank 1:" in out
    # the stalled rank's late collective is told why it cannot complete, and the job ends
    assert "rank 1 told: [Rank 1] all_reduce failed: rank 0 exited after an error: [Rank 0] Watchdog" in out, out
    assert "rank 1 done" in out
    assert seconds < 40


# ---- rank side ------------------------------------------------------------------------------------------
def _main(case: str) -> None:
    import datetime

    import backend_sdk as sdk
    import backend_sdk.distributed as dist

    dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=2 if case == "stall" else 30))
    r = dist.get_rank()
    dist.barrier()
    if r == 1:
        if case == "raise":
            raise ValueError("boom on rank 1")
        if case == "die":
            os._exit(7)
        if case == "stall":
            time.sleep(5)
            try:
                dist.all_reduce(sdk.ones(3))
            except dist.DistBackendError as e:
                print("rank 1 told:", e, flush=True)
            print("rank 1 done", flush=True)
            return
    dist.all_reduce(sdk.ones(3))
    print(f"RANK {r} passed", flush=True)


if __name__ == "__main__":
    _main(sys.argv[1])
