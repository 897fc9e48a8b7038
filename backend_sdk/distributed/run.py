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

Because the ranks end on their own, a rank that never ends (a loop outside distributed code, which no
collective's failure detection reaches) would keep the job alive after another rank failed. The launcher
therefore watches the ranks: each worker writes its pid and, when the script ends, its exit status into
a folder the launcher owns (BACKEND_SDK_DIST_RUN_DIR). A rank failed when it wrote a nonzero status or
its process is gone without one (``os._exit``, a signal). From the first failure the others get
``--kill-timeout`` seconds (default: the heartbeat timeout plus 5 s, time for the survivors to learn of
the failure and report it) to end; then the launcher names the failed rank and kills the whole job
(SIGTERM to its process group, SIGKILL 2 s later) and exits with status 1, so the job always ends.
"""
from __future__ import annotations

import argparse
import functools
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
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
    flag("kill-timeout", type=float, default=None,
         help="seconds the other ranks get to end after one rank failed before the job is killed (default: the "
              "heartbeat timeout + 5)")
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
    from ._engine import heartbeat_timeout

    grace = ns.kill_timeout if ns.kill_timeout is not None else heartbeat_timeout() + 5.0
    with tempfile.TemporaryDirectory(prefix="backend_sdk_run_") as status_dir:
        env["BACKEND_SDK_DIST_RUN_DIR"] = status_dir
        proc = subprocess.Popen(cmd, env=env, start_new_session=True)
        try:
            code = _watch(proc, status_dir, ns.nproc_per_node, grace)
        except KeyboardInterrupt:
            _kill(proc)
            raise
    if code != 0:
        print(f"backend_sdk.distributed.run: the job failed (mpiexec exit status {code}); the ranks' "
              "errors are above", file=sys.stderr)
    return code


def _failed_rank(status_dir: str, nproc: int) -> tuple[int, str] | None:
    """(rank, why) of a rank that failed (Note [Launcher]), or None."""
    for rank in range(nproc):
        try:
            with open(os.path.join(status_dir, f"{rank}.exit")) as f:
                status = f.read().strip()
            if status != "0":
                return rank, f"exited with status {status}"
            continue
        except OSError:
            pass
        try:
            with open(os.path.join(status_dir, f"{rank}.pid")) as f:
                pid = int(f.read().strip())
        except (OSError, ValueError):
            continue  # not started yet
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            if not os.path.exists(os.path.join(status_dir, f"{rank}.exit")):
                return rank, "died without an exit status (killed by a signal or os._exit)"
        except PermissionError:
            pass
    return None


def _watch(proc: subprocess.Popen, status_dir: str, nproc: int, grace: float) -> int:
    """Waits for mpiexec; kills the job ``grace`` seconds after a rank failed if it has not ended by then."""
    deadline = None
    failure = None
    while True:
        try:
            return proc.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            pass
        if deadline is None:
            failure = _failed_rank(status_dir, nproc)
            if failure is not None:
                deadline = time.monotonic() + grace
        elif time.monotonic() > deadline:
            assert failure is not None
            print(f"backend_sdk.distributed.run: rank {failure[0]} {failure[1]} and the other ranks did not end "
                  f"within {grace:g} s (--kill-timeout): killing the job", file=sys.stderr, flush=True)
            _kill(proc)
            return 1


def _kill(proc: subprocess.Popen) -> None:
    """SIGTERM to the job's process group, SIGKILL after 2 s."""
    import signal

    for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def main(args: list[str] | None = None) -> int:
    """The command line entry point."""
    return run(parse_args(args))


if __name__ == "__main__":
    sys.exit(main())
