"""backend_sdk.distributed between 2 MPI processes on this machine.

    python benchmarks/bench_distributed.py [--quick]

Targets (issue 21): ``all_reduce`` of 64 MiB float32 on cpu at most 1.1x the time of mpi4py's
``Allreduce`` of the same numpy arrays; on accel through simccl (the device's "sdk.collectives",
Note [Device collectives backend]) at most 1.5x the cpu path; a 2-rank DDP step at most 1.2x a
single-rank step at the same per-rank batch (the bucket all-reduces overlap backward). Also listed:
all_reduce of accel tensors through host staging (the "mpi" backend's fallback for a device without
the extension), bfloat16 (reduced through float32) and a small (4 KiB) all_reduce's latency. The DDP
model is nanoGPT-shaped: token and position embeddings, 4 pre-norm blocks of LayerNorm, causal
MultiheadAttention (6 heads) and a 4x GELU MLP at n_embd 384, a final LayerNorm and the vocabulary
head (65), trained with cross_entropy on batch 4 x block 64; the MLP stack of the same widths is
listed too. Everything is measured in this run, the same ranks, the same arrays, round-robin; nothing
is asserted. The script re-launches itself with mpiexec.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from typing import Any

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


class _Rows(list):
    """The table's rows; rank 0 also prints each as it is measured (a loaded machine may stop a long run)."""

    def __init__(self, show: bool) -> None:
        super().__init__()
        self.show = show

    def append(self, row: tuple[str, float]) -> None:
        super().append(row)
        if self.show:
            print(f"  {row[0]:<52} {row[1] * 1e3:>9.3f} ms  (load {os.getloadavg()[0]:.1f})", flush=True)

    def __iadd__(self, more: Any) -> "_Rows":
        for row in more:
            self.append(row)
        return self


def _single_vs_ddp(make: Any, loss: Any, labels: tuple[str, str], repeat: int, barrier: Any) -> list:
    """Median step times of ``make()`` alone and of ``DDP(make())`` (SGD; both ranks compute in both cases)."""
    import backend_sdk as sdk
    from backend_sdk.nn.parallel import DistributedDataParallel as DDP

    models = [make(), DDP(make())]
    opts = [sdk.optim.SGD(m.parameters(), lr=1e-3) for m in models]

    def step(i: int) -> None:
        opts[i].zero_grad()
        loss(models[i]).backward()
        opts[i].step()

    step(0)
    step(1)
    return _interleaved([(labels[0], lambda: step(0)), (labels[1], lambda: step(1))], repeat, barrier)


def rank_side(quick: bool, collectives_only: bool = False) -> None:
    from mpi4py import MPI  # noqa: F401  (mpi4py's own numbers, same processes)

    import accel  # noqa: F401
    import backend_sdk as sdk
    import backend_sdk.distributed as dist
    from backend_sdk import nn

    dist.init_process_group("mpi")
    comm = dist.GroupMember.WORLD._comm  # the world communicator the mpi backend uses
    rank = dist.get_rank()
    repeat = 5 if quick else 15
    rows = _Rows(rank == 0)
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
    ccl = dist.new_group(backend="cpu:mpi,accel:simccl")  # the device's collectives
    dist.all_reduce(d, group=ccl)  # makes the communicator
    rows += _interleaved([
        ("dist.all_reduce 64 MiB f32 cpu (again, beside simccl)", lambda: dist.all_reduce(same)),
        ("dist.all_reduce 64 MiB f32 accel (simccl)", lambda: dist.all_reduce(d, group=ccl)),
    ], repeat, barrier)

    if collectives_only:
        _report(rank, rows, repeat, None)
        dist.destroy_process_group()
        return
    # DDP step vs single-rank step, same per-rank batch; both ranks compute in both cases
    def mlp() -> nn.Module:
        sdk.manual_seed(0)
        layers: list[nn.Module] = []
        for _ in range(4):
            layers += [nn.Linear(384, 1536), nn.GELU(), nn.Linear(1536, 384)]
        return nn.Sequential(*layers, nn.Linear(384, 65))

    x = sdk.randn(64 * 4, 384)  # batch 4 x block 64 tokens
    y = sdk.randn(64 * 4, 65)

    rows += _single_vs_ddp(mlp, lambda model: ((model(x) - y) ** 2).mean(),
                           ("single-rank step (nanoGPT-shaped MLP, 4.8M params)",
                            "2-rank DDP step (same per-rank batch)"), max(3, repeat // 2), barrier)

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(384), nn.LayerNorm(384)
            self.attn = nn.MultiheadAttention(384, 6, batch_first=True)
            self.mlp = nn.Sequential(nn.Linear(384, 1536), nn.GELU(), nn.Linear(1536, 384))

        def forward(self, h: Any) -> Any:
            a = self.ln1(h)
            h = h + self.attn(a, a, a, attn_mask=causal, need_weights=False)[0]
            return h + self.mlp(self.ln2(h))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            sdk.manual_seed(0)
            self.tok, self.pos = nn.Embedding(65, 384), nn.Embedding(64, 384)
            self.blocks = nn.Sequential(*[Block() for _ in range(4)])
            self.ln, self.head = nn.LayerNorm(384), nn.Linear(384, 65)

        def forward(self, idx: Any) -> Any:
            h = self.tok(idx) + self.pos(positions)
            return self.head(self.ln(self.blocks(h)))

    causal = sdk.triu(sdk.ones(64, 64, dtype=sdk.bool), diagonal=1)
    positions = sdk.arange(64)
    idx = sdk.randint(0, 65, (4, 64))
    targets = sdk.randint(0, 65, (4 * 64,))

    rows += _single_vs_ddp(GPT, lambda model: nn.functional.cross_entropy(model(idx).reshape(-1, 65), targets),
                           ("single-rank step (nanoGPT: emb, LN, MHA, MLP)",
                            "2-rank DDP step, nanoGPT (same per-rank batch)"), max(3, repeat // 2), barrier)
    params = sum(p.numel() for p in GPT().parameters())

    _report(rank, rows, repeat, params)
    dist.destroy_process_group()


def _report(rank: int, rows: list, repeat: int, params: int | None) -> None:
    """Rank 0 prints the table and the ratios (params None: the collectives only)."""
    if rank != 0:
        return
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
    print(f"all_reduce 64 MiB accel (staging) / cpu:      {staging:6.2f}x  (the fallback without the extension)")
    simccl = table["dist.all_reduce 64 MiB f32 accel (simccl)"] / \
        table["dist.all_reduce 64 MiB f32 cpu (again, beside simccl)"]
    print(f"all_reduce 64 MiB accel (simccl) / cpu:       {simccl:6.2f}x  (target <= 1.5x)")
    latency = table["dist.all_reduce 4 KiB (x100)"] / table["mpi4py Allreduce 4 KiB (x100)"]
    print(f"all_reduce 4 KiB / mpi4py:                    {latency:6.2f}x  (latency: inline path + signature Allgather)")
    if params is None:
        print("load average:", os.getloadavg())
        return
    ddp_ratio = table["2-rank DDP step (same per-rank batch)"] / \
        table["single-rank step (nanoGPT-shaped MLP, 4.8M params)"]
    print(f"2-rank DDP step / single-rank step, MLP:      {ddp_ratio:6.2f}x")
    gpt_ratio = table["2-rank DDP step, nanoGPT (same per-rank batch)"] / \
        table["single-rank step (nanoGPT: emb, LN, MHA, MLP)"]
    print(f"2-rank DDP step / single-rank step, nanoGPT:  {gpt_ratio:6.2f}x  (target <= 1.2x; {params} params)")
    print("load average:", os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--collectives-only", action="store_true", help="skip the DDP rows (minutes on a loaded machine)")
    parser.add_argument("--rank-side", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rank_side:
        rank_side(args.quick, args.collectives_only)
        return
    sys.path.insert(0, REPO)
    from backend_sdk.distributed.run import mpiexec_command

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([REPO, os.path.join(REPO, "samples", "accel_sim"), env.get("PYTHONPATH", "")])
    cmd = mpiexec_command(2, [os.path.abspath(__file__), "--rank-side"] + (["--quick"] if args.quick else []) +
                          (["--collectives-only"] if args.collectives_only else []))
    print("load average before:", os.getloadavg())
    sys.exit(subprocess.run(cmd, env=env).returncode)


if __name__ == "__main__":
    main()
