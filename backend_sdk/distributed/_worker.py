"""One rank of ``backend_sdk.distributed.run``: torchrun's environment from MPI's, then the script (Note [Launcher])."""
from __future__ import annotations

import os
import runpy
import sys


def _mpi_env(*names: str) -> str | None:
    for name in names:
        if name in os.environ:
            return os.environ[name]
    return None


def main() -> None:
    """Sets RANK/LOCAL_RANK/WORLD_SIZE/... and runs the script (argv[1:]) as __main__."""
    args = sys.argv[1:]
    module = no_python = False
    while args and args[0] in ("--module", "--no-python"):
        module |= args[0] == "--module"
        no_python |= args[0] == "--no-python"
        args = args[1:]
    rank = _mpi_env("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK") or "0"
    size = _mpi_env("PMI_SIZE", "OMPI_COMM_WORLD_SIZE") or "1"
    local_rank = _mpi_env("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK") or rank
    local_size = _mpi_env("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE") or size
    os.environ.update(RANK=rank, WORLD_SIZE=size, LOCAL_RANK=local_rank, LOCAL_WORLD_SIZE=local_size,
                      GROUP_RANK="0", ROLE_RANK=rank, ROLE_WORLD_SIZE=size, GROUP_WORLD_SIZE="1")
    status_dir = os.environ.get("BACKEND_SDK_DIST_RUN_DIR")
    if status_dir:  # Note [Launcher]: the launcher watches this rank through these files
        _write(status_dir, f"{rank}.pid", str(os.getpid()))
    if no_python:
        os.execvp(args[0], args)
    sys.argv = list(args)
    code: object = 1
    try:
        if module:
            runpy.run_module(args[0], run_name="__main__", alter_sys=True)
        else:
            sys.path.insert(0, os.path.dirname(os.path.abspath(args[0])))
            runpy.run_path(args[0], run_name="__main__")
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        raise
    finally:
        if status_dir:
            _write(status_dir, f"{rank}.exit", str(code))


def _write(folder: str, name: str, text: str) -> None:
    """Writes folder/name atomically (the launcher never reads half a file); errors are ignored."""
    try:
        tmp = os.path.join(folder, f".{name}.{os.getpid()}")
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, os.path.join(folder, name))
    except OSError:
        pass


if __name__ == "__main__":
    main()
