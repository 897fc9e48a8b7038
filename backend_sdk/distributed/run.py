"""``python -m backend_sdk.distributed.run``: torchrun's command line, started with ``mpiexec``.

Note [Launcher]
===============
``run --nproc-per-node N script.py args`` starts ``mpiexec -n N python -m
backend_sdk.distributed._worker script.py args``; each worker sets torchrun's environment variables
(RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, ROLE_RANK, MASTER_ADDR, MASTER_PORT,
TORCHELASTIC_RUN_ID) from the MPI job's before it runs the script as ``__main__``. With MPICH's Hydra,
``-disable-auto-cleanup`` lets the surviving ranks report a failed rank (Note [Distributed engine])
instead of being killed with it. One node only (``--nnodes 1``): MPI's own host files are the way to
span machines; restarts (``--max-restarts``) are not supported, as a failed MPI job cannot rejoin.
"""
from __future__ import annotations

import argparse
import functools
import os
import shutil
import subprocess
import sys
import sysconfig
import uuid

__all__ = ["find_mpiexec", "get_args_parser", "main", "mpiexec_command", "parse_args", "run"]


def find_mpiexec() -> str:
    """The mpiexec to use: $MPIEXEC, next to this Python (the mpich wheel's), or on PATH."""
    explicit = os.environ.get("MPIEXEC")
    if explicit:
        return explicit
    for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        candidate = os.path.join(folder, "mpiexec")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("mpiexec")
    if found is None:
        raise RuntimeError("mpiexec not found: install the distributed extra (pip install \"backend_sdk[distributed]\", "
                           "which brings the mpich wheel and its mpiexec) or set MPIEXEC")
    return found


def get_args_parser() -> argparse.ArgumentParser:
    """torchrun's flags that apply on one node over MPI (both spellings, --nproc-per-node and --nproc_per_node)."""
    p = argparse.ArgumentParser(prog="python -m backend_sdk.distributed.run",
                                description="Start N processes of a training script over MPI (torchrun's flags).")

    def flag(name: str, **kw: object) -> None:
        p.add_argument(f"--{name}", f"--{name.replace('-', '_')}", **kw)  # type: ignore[arg-type]

    flag("nproc-per-node", default="1", help="processes on this node (an integer)")
    flag("nnodes", default="1", help="number of nodes: only 1 is supported")
    flag("node-rank", type=int, default=0, help="rank of this node: only 0 is supported")
    flag("master-addr", default="127.0.0.1", help="exported as MASTER_ADDR (MPI does the rendezvous)")
    flag("master-port", type=int, default=29500, help="exported as MASTER_PORT")
    flag("max-restarts", type=int, default=0, help="only 0 is supported")
    flag("rdzv-id", default=None, help="the run id (TORCHELASTIC_RUN_ID)")
    flag("rdzv-backend", default="static", help="accepted for compatibility; MPI does the rendezvous")
    flag("rdzv-endpoint", default="", help="accepted for compatibility")
    p.add_argument("--standalone", action="store_true", help="single node (the only mode)")
    p.add_argument("-m", "--module", action="store_true", help="run the script as a module (python -m)")
    flag("no-python", action="store_true", help="run the script as an executable, without python")
    p.add_argument("training_script", help="the script (or module with -m) each process runs")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return p


def parse_args(args: list[str] | None) -> argparse.Namespace:
    """Parses and checks the command line."""
    parser = get_args_parser()
    ns = parser.parse_args(args)
    try:
        ns.nproc_per_node = int(ns.nproc_per_node)
    except ValueError:
        parser.error(f"--nproc-per-node must be an integer, got {ns.nproc_per_node!r}")
    if ns.nproc_per_node < 1:
        parser.error("--nproc-per-node must be at least 1")
    if str(ns.nnodes) not in ("1", "1:1") or ns.node_rank != 0:
        parser.error("only one node is supported (--nnodes 1); use mpiexec with a host file to span machines")
    if ns.max_restarts != 0:
        parser.error("--max-restarts is not supported: a failed MPI job cannot be restarted in place")
    return ns


@functools.lru_cache(maxsize=None)
def _is_hydra(mpiexec: str) -> bool:
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "HYDRA" in out.upper()


def mpiexec_command(nproc: int, argv: list[str], module: bool = False, no_python: bool = False) -> list[str]:
    """The mpiexec command line that starts ``argv`` (a script and its arguments) on ``nproc`` ranks."""
    mpiexec = find_mpiexec()
    cmd = [mpiexec, "-n", str(nproc)]
    if _is_hydra(mpiexec):
        cmd.append("-disable-auto-cleanup")
    # Every rank starts in _worker (torchrun's variables from MPI's), which runs or execs the script.
    cmd += [sys.executable, "-u", "-m", "backend_sdk.distributed._worker"]
    if no_python:
        cmd.append("--no-python")
    elif module:
        cmd.append("--module")
    return cmd + list(argv)


def run(ns: argparse.Namespace) -> int:
    """Runs the job; returns mpiexec's exit status."""
    cmd = mpiexec_command(ns.nproc_per_node, [ns.training_script, *ns.training_script_args], ns.module,
                          ns.no_python)
    env = dict(os.environ)
    env.update(MASTER_ADDR=ns.master_addr, MASTER_PORT=str(ns.master_port),
               TORCHELASTIC_RUN_ID=ns.rdzv_id or uuid.uuid4().hex[:12])
    proc = subprocess.run(cmd, env=env)
    if proc.returncode != 0:
        print(f"backend_sdk.distributed.run: the job failed (mpiexec exit status {proc.returncode}); the ranks' "
              "errors are above", file=sys.stderr)
    return proc.returncode


def main(args: list[str] | None = None) -> int:
    """The command line entry point."""
    return run(parse_args(args))


if __name__ == "__main__":
    sys.exit(main())
