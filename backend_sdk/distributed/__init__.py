"""backend_sdk.distributed: torch.distributed's API (process groups, collectives) on MPI.

Start the processes with ``mpiexec -n N python script.py`` or ``python -m backend_sdk.distributed.run
--nproc-per-node N script.py``; then ``init_process_group("mpi")``. Needs the ``distributed`` extra
(``pip install "backend_sdk[distributed]"``: mpi4py and the mpich wheel). See docs/architecture.md,
"Distributed".
"""
from ._ccl_backend import register_device_backends
from ._engine import DistBackendError, DistError, DistNetworkError, DistStoreError, Work
from .distributed_c10d import (
    Backend, GroupMember, ProcessGroup, ReduceOp, all_gather, all_gather_into_tensor, all_gather_object, all_reduce,
    all_to_all_single, barrier, broadcast, broadcast_object_list, default_pg_timeout, destroy_process_group, gather,
    gather_object, get_backend, get_default_backend_for_device, get_global_rank, get_group_rank,
    get_process_group_ranks, get_rank, get_world_size, group, init_process_group, irecv, is_available,
    is_initialized, is_mpi_available, isend, new_group, recv, reduce, reduce_scatter, reduce_scatter_tensor, scatter,
    scatter_object_list, send,
)

__all__ = [
    "Backend", "DistBackendError", "DistError", "DistNetworkError", "DistStoreError", "GroupMember", "ProcessGroup",
    "ReduceOp", "Work", "all_gather", "all_gather_into_tensor", "all_gather_object", "all_reduce",
    "all_to_all_single", "barrier", "broadcast", "broadcast_object_list", "default_pg_timeout",
    "destroy_process_group", "gather", "gather_object", "get_backend", "get_default_backend_for_device",
    "get_global_rank", "get_group_rank", "get_process_group_ranks", "get_rank", "get_world_size", "group",
    "init_process_group", "irecv", "is_available", "is_initialized", "is_mpi_available", "isend", "new_group",
    "recv", "reduce", "reduce_scatter", "reduce_scatter_tensor", "scatter", "scatter_object_list", "send",
    # not torch.distributed's: registers the process-group backend of every device offering "sdk.collectives"
    # (init_process_group calls it; Note [Device collectives backend])
    "register_device_backends",
]
