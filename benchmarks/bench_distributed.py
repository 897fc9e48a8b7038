"""backend_sdk.distributed between 2 MPI processes on this machine.

    python benchmarks/bench_distributed.py [--quick]

Targets (issue 21): ``all_reduce`` of 64 MiB float32 on cpu at most 1.1x the time of mpi4py's
``Allreduce`` of the same numpy arrays; a 2-rank DDP step at most 1.2x a single-rank step at the same
per-rank batch (the bucket all-reduces overlap backward). Also listed: all_reduce of accel tensors
through host staging (no device collectives yet), bfloat16 (reduced through float32) and a small
(4 KiB) all_reduce's latency. The model is an MLP stack with nanoGPT-small's widths (n_embd 384, 4x
hidden, 4 blocks; the SDK has no embedding or layer norm yet). Everything is measured in this run, the
same ranks, the same arrays, round-robin; nothing is asserted. The script re-launches itself with mpiexec.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def _median_seconds(fn, repeat: int, barrier) -> float:
    times = []
    for _ in range(repeat):
        barrier()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _interleaved(cases: list, repeat: int, barrier) -> list[tuple[str, float]]:
    """Median seconds of each (name, fn), measured round-robin so that load changes hit all alike."""
    times: dict[str, list[float]] = {name: [] for name, _ in cases}
    for _ in range(repeat):
        for name, fn in cases:
            barrier()
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return [(name, statistics.median(times[name])) for name, _ in cases]


def rank_side(quick: bool) -> None:
    from mpi4py import MPI  # noqa: F401  (mpi4py's own numbers, same processes)

    import accel  # noqa: F401
    import backend_sdk as sdk
    import backend_sdk.distributed as dist
    from backend_sdk import nn
    from backend_sdk.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("mpi")
    comm = dist.GroupMember.WORLD._comm  # the world communicator the mpi backend uses
    rank = dist.get_rank()
    repeat = 5 if quick else 15
    rows: list[tuple[str, float]] = []
    barrier = comm.Barrier

    n = 64 * 1024 * 1024 // 4
    a = np.full(n, rank + 1, dtype=np.float32)
    same = sdk.from_numpy(np.full(n, rank + 1, dtype=np.float32))  # numpy's memory, as the mpi4py row
    # The SDK's own 64 MiB allocation (2 MiB-aligned, Note [Huge pages for large blocks]): mpi4py on that
    # memory is listed too, to tell the memory's cost from the path's.
    t = sdk.full((n,), float(rank + 1))
    view = t.numpy()
    h = sdk.full((n,), float(rank + 1), dtype=sdk.bfloat16)
    small_np = np.ones(1024, dtype=np.float32)
    small = sdk.ones(1024)
    rows += _interleaved([
        ("mpi4py Allreduce(IN_PLACE) 64 MiB f32 numpy", lambda: comm.Allreduce(MPI.IN_PLACE, a)),
        ("dist.all_reduce 64 MiB f32 cpu", lambda: dist.all_reduce(same)),
        ("dist.all_reduce 64 MiB f32 cpu, SDK-allocated", lambda: dist.all_reduce(t)),
        ("mpi4py Allreduce on that SDK allocation", lambda: comm.Allreduce(MPI.IN_PLACE, view)),
        ("dist.all_reduce 32 MiB bf16 cpu (f32 reduce)", lambda: dist.all_reduce(h)),
    ], repeat, barrier)
    rows += [(name, seconds / 100) for name, seconds in _interleaved([
        ("mpi4py Allreduce 4 KiB (x100)", lambda: [comm.Allreduce(MPI.IN_PLACE, small_np) for _ in range(100)]),
        ("dist.all_reduce 4 KiB (x100)", lambda: [dist.all_reduce(small) for _ in range(100)]),
    ], repeat, barrier)]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = sdk.full((n,), float(rank + 1), device="accel")
        rows.append(("dist.all_reduce 64 MiB f32 accel (host staging)",
                     _median_seconds(lambda: dist.all_reduce(d), max(3, repeat // 3), barrier)))

    # DDP step vs single-rank step, same per-rank batch; both ranks compute in both cases
    def mlp() -> nn.Module:
        sdk.manual_seed(0)
        layers: list[nn.Module] = []
        for _ in range(4):
            layers += [nn.Linear(384, 1536), nn.GELU(), nn.Linear(1536, 384)]
        return nn.Sequential(*layers, nn.Linear(384, 65))

    x = sdk.randn(64 * 4, 384)  # batch 4 x block 64 tokens
    y = sdk.randn(64 * 4, 65)

    def step(model: nn.Module, opt) -> None:
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()

    single = mlp()
    opt_single = sdk.optim.SGD(single.parameters(), lr=1e-3)
    step(single, opt_single)
    ddp = DDP(mlp())
    opt_ddp = sdk.optim.SGD(ddp.parameters(), lr=1e-3)
    step(ddp, opt_ddp)
    rows += _interleaved([
        ("single-rank step (nanoGPT-shaped MLP, 4.8M params)", lambda: step(single, opt_single)),
        ("2-rank DDP step (same per-rank batch)", lambda: step(ddp, opt_ddp)),
    ], max(3, repeat // 2), barrier)

    if rank == 0:
        table = dict(rows)
        print(f"{'2 processes, median of ' + str(repeat):<52} {'ms':>9}")
        for name, seconds in rows:
            print(f"{name:<52} {seconds * 1e3:>9.3f}")
        print()
        ratio = table["dist.all_reduce 64 MiB f32 cpu"] / table["mpi4py Allreduce(IN_PLACE) 64 MiB f32 numpy"]
        print(f"all_reduce 64 MiB cpu / mpi4py Allreduce:     {ratio:6.2f}x  (target <= 1.1x; same numpy arrays)")
        own = table["dist.all_reduce 64 MiB f32 cpu, SDK-allocated"] / table["mpi4py Allreduce on that SDK allocation"]
        print(f"  on SDK-allocated memory, dist / mpi4py:     {own:6.2f}x")
        staging = table["dist.all_reduce 64 MiB f32 accel (host staging)"] / table["dist.all_reduce 64 MiB f32 cpu"]
        print(f"all_reduce 64 MiB accel (staging) / cpu:      {staging:6.2f}x  (simccl target <= 1.5x; not built)")
        latency = table["dist.all_reduce 4 KiB (x100)"] / table["mpi4py Allreduce 4 KiB (x100)"]
        print(f"all_reduce 4 KiB / mpi4py:                    {latency:6.2f}x  (latency: inline path + signature Allgather)")
        ddp_ratio = table["2-rank DDP step (same per-rank batch)"] / \
            table["single-rank step (nanoGPT-shaped MLP, 4.8M params)"]
        print(f"2-rank DDP step / single-rank step:           {ddp_ratio:6.2f}x  (target <= 1.2x)")
        print("load average:", os.getloadavg())
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rank-side", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rank_side:
        rank_side(args.quick)
        return
    sys.path.insert(0, REPO)
    from backend_sdk.distributed.run import mpiexec_command

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([REPO, os.path.join(REPO, "samples", "accel_sim"), env.get("PYTHONPATH", "")])
    cmd = mpiexec_command(2, [os.path.abspath(__file__), "--rank-side"] + (["--quick"] if args.quick else []))
    print("load average before:", os.getloadavg())
    sys.exit(subprocess.run(cmd, env=env).returncode)


if __name__ == "__main__":
    main()
