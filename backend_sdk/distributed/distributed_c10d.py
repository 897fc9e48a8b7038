"""torch.distributed's process-group API (PyTorch 2.13 names, defaults, errors) on MPI.

Note [Process groups and backends]
==================================
A ``ProcessGroup`` is a set of global ranks with one backend object per device type
(``"cpu:mpi,accel:mybackend"``; a plain ``"mpi"`` serves every device type). A collective picks the
backend of its tensors' device type; a device type the group has no backend for is PyTorch's
RuntimeError "No backend type associated with device type ...". Backends are registered with
``Backend.register_backend(name, factory, extended_api=False, devices=[...])``; a factory is called as
PyTorch's, ``factory(store, group_rank, group_size, timeout)`` (``store`` is None: MPI needs none) and
returns an object with the methods of ``MPIBackend`` working on host numpy arrays.

Tensors reach a backend as host arrays through ``_HostView`` (Note [MPI backend data path]): zero-copy
for contiguous CPU tensors, staged (and copied back into the caller's tensor when the Work is waited
on) for non-contiguous tensors and for device tensors. Device tensors on the "mpi" backend warn once:
the device offers no device-side collectives, so the bytes go through host memory. A device that offers
them (the "sdk.collectives" extension) gets its own backend, registered by ``init_process_group`` and
chosen by default for its device type; its collectives take the device tensors themselves
(``_on_device``, Note [Device collectives backend] in _ccl_backend.py).
"""
from __future__ import annotations

import os
import warnings
from datetime import timedelta
from typing import Any, Callable

import numpy as np

from . import _engine
from ._engine import DistBackendError, Work
from ._ccl_backend import _OP_NUMBERS, DeviceCollectivesBackend, register_device_backends
from ._mpi_backend import MPIBackend

__all__ = [
    "Backend", "GroupMember", "ProcessGroup", "ReduceOp", "Work", "all_gather", "all_gather_into_tensor",
    "all_gather_object", "all_reduce", "all_to_all_single", "barrier", "broadcast", "broadcast_object_list",
    "destroy_process_group", "gather", "gather_object", "get_backend", "get_default_backend_for_device",
    "get_global_rank", "get_group_rank", "get_process_group_ranks", "get_rank", "get_world_size", "group",
    "init_process_group", "irecv", "is_available", "is_initialized", "is_mpi_available", "isend",
    "new_group", "recv", "reduce", "reduce_scatter", "reduce_scatter_tensor", "scatter",
    "scatter_object_list", "send", "default_pg_timeout",
]

#: PyTorch's default collective timeout (30 minutes).
default_pg_timeout: timedelta = timedelta(minutes=30)


def is_available() -> bool:
    """True: the package is importable (MPI itself is checked by ``is_mpi_available``)."""
    return True


def is_mpi_available() -> bool:
    """True if mpi4py (and an MPI library) can be imported."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


class _RedOpType(int):
    """One reduction (``ReduceOp.SUM`` ...); compares equal to ``ReduceOp(...)`` of itself."""

    _names = ["SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM", "UNUSED"]

    def __repr__(self) -> str:
        return f"<RedOpType.{self._names[self]}: {int(self)}>"

    @property
    def name(self) -> str:
        return self._names[self]


class ReduceOp:
    """Reductions for all_reduce, reduce and reduce_scatter (PyTorch's ``ReduceOp``)."""

    class RedOpType:
        """The enum of reductions (PyTorch's ``ReduceOp.RedOpType``)."""

    SUM = _RedOpType(0)
    AVG = _RedOpType(1)
    PRODUCT = _RedOpType(2)
    MIN = _RedOpType(3)
    MAX = _RedOpType(4)
    BAND = _RedOpType(5)
    BOR = _RedOpType(6)
    BXOR = _RedOpType(7)
    PREMUL_SUM = _RedOpType(8)
    UNUSED = _RedOpType(9)

    def __new__(cls, op: Any) -> "_RedOpType":  # ReduceOp(ReduceOp.SUM) is the op itself
        if isinstance(op, _RedOpType):
            return op
        raise TypeError(f"ReduceOp(): expected a ReduceOp.RedOpType, got {type(op).__name__}")


for _i, _n in enumerate(_RedOpType._names):
    setattr(ReduceOp.RedOpType, _n, getattr(ReduceOp, _n))


class Backend(str):
    """Backend names (PyTorch's enum-like ``Backend``); ``register_backend`` adds vendors' backends."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"
    XCCL = "xccl"
    FAKE = "fake"

    backend_list: list[str] = [UNDEFINED, GLOO, NCCL, XCCL, UCC, MPI, FAKE]
    default_device_backend_map: dict[str, str] = {"cpu": MPI}
    #: "*": the backend serves every device type (MPI: device tensors through host memory).
    backend_capability: dict[str, list[str]] = {MPI: ["cpu", "*"]}
    _plugins: dict[str, tuple[Callable, bool]] = {}

    def __new__(cls, name: str) -> "Backend":
        if not isinstance(name, str):
            raise ValueError("Backend constructor parameter must be string-ish")
        value = getattr(Backend, name.upper(), Backend.UNDEFINED)
        if value == Backend.UNDEFINED:
            value = name.lower()
        return str.__new__(cls, value)

    @classmethod
    def register_backend(cls, name: str, func: Callable, extended_api: bool = False,
                         devices: str | list[str] | None = None) -> None:
        """Registers backend ``name`` made by ``func(store, group_rank, group_size, timeout)`` for ``devices``."""
        if not hasattr(Backend, name.upper()):
            setattr(Backend, name.upper(), name.lower())
        if name.lower() not in Backend.backend_list:
            Backend.backend_list.append(name.lower())
        if devices is None:
            warnings.warn(f"Device capability of {name} unspecified, assuming `cpu` and `cuda` or `xpu`. Please "
                          "specify it via the `devices` argument of `register_backend`.", stacklevel=2)
            devices = ["cpu", "cuda"]
        elif isinstance(devices, str):
            devices = [devices]
        for device in devices:
            if Backend.default_device_backend_map.get(device) is None:
                Backend.default_device_backend_map[device] = name.lower()
        Backend.backend_capability[name.lower()] = list(devices)
        Backend._plugins[name.upper()] = (func, extended_api)


def _parse_backend(backend: str | None) -> dict[str, str]:
    """``"mpi"`` / ``"cpu:mpi,accel:x"`` -> {device type: backend name} (PyTorch's BackendConfig)."""
    if backend is None or str(backend) == Backend.UNDEFINED:
        return {"*": Backend.MPI, **{d: b for d, b in Backend.default_device_backend_map.items() if d != "cpu"},
                "cpu": Backend.default_device_backend_map.get("cpu", Backend.MPI)}
    text = str(backend).lower()
    if ":" in text:
        mapping: dict[str, str] = {}
        message = (f"The custom backend string argument is invalid: {backend}. Custom backend string is an "
                   "experimental feature where the backend string must be in the format: "
                   "\"<device_type1>:<backend1>,<device_type2>:<backend2>...\". e.g. 'cpu:gloo,cuda:nccl'")
        for pair in text.split(","):
            parts = pair.split(":")
            if len(parts) != 2:
                raise ValueError(f"Invalid device:backend pairing: {pair}. {message}")
            if parts[0] in mapping:
                raise ValueError(f"Duplicate device type {parts[0]} in backend string: {parts[1]}. {message}")
            mapping[parts[0].strip()] = Backend(parts[1].strip())
        return mapping
    name = Backend(text)
    if name not in Backend.backend_list:
        raise ValueError(f"Invalid backend: '{backend}'. Available backends: {Backend.backend_list}")
    return {device: name for device in Backend.backend_capability.get(name, ["cpu"])}


def _check_backends(mapping: dict[str, str]) -> None:
    """Every named backend must be "mpi" or registered: PyTorch's "doesn't have X built in" otherwise."""
    for device, name in mapping.items():
        if name == Backend.MPI or name.upper() in Backend._plugins:
            continue
        if name in (Backend.GLOO, Backend.NCCL, Backend.UCC, Backend.XCCL):
            raise RuntimeError(f"Distributed package doesn't have {name.upper()} built in: backend_sdk.distributed "
                               "runs on MPI (backend=\"mpi\"), or register a backend with Backend.register_backend")
        where = "" if device == "*" else f" for device type {device}"
        raise ValueError(f"Invalid backend: '{name}'{where}. Available backends: {Backend.backend_list}")


class ProcessGroup:
    """A group of ranks and its backends (PyTorch's ``ProcessGroup``)."""

    def __init__(self, ranks: list[int], comm: Any, backends: dict[str, str], timeout: timedelta,
                 name: str) -> None:
        self._ranks = ranks
        self._comm = comm
        self._backend_names = backends
        self._backends: dict[str, Any] = {}
        self._timeout = timeout
        self.group_name = name
        self._rank = comm.Get_rank()

    def rank(self) -> int:
        """This process's rank in the group."""
        return self._rank

    def size(self) -> int:
        """The number of ranks in the group."""
        return len(self._ranks)

    def name(self) -> str:
        """The backend string of the group."""
        return ",".join(f"{d}:{b}" for d, b in self._backend_names.items() if d != "*") or "mpi"

    def _backend_for(self, device_type: str) -> Any:
        key = device_type if device_type in self._backend_names else "*"
        if key not in self._backend_names:
            raise RuntimeError(f"No backend type associated with device type {device_type}")
        backend = self._backends.get(key)
        if backend is None:
            name = self._backend_names[key]
            if name == Backend.MPI:
                backend = MPIBackend(self._comm)
            elif name.upper() in Backend._plugins:
                factory, extended = Backend._plugins[name.upper()]
                backend = factory(None, self._rank, self.size(), self._timeout) if not extended else \
                    factory(_BackendOptions(self), None)
            else:
                raise RuntimeError(f"Unknown backend '{name}' for device type {device_type}: register it with "
                                   "Backend.register_backend first")
            self._backends[key] = backend
        return backend

    def __repr__(self) -> str:
        return f"<ProcessGroup ranks={self._ranks} backend={self.name()}>"


class _BackendOptions:
    """What an ``extended_api=True`` factory receives (PyTorch's DistributedBackendOptions, abridged)."""

    def __init__(self, group: ProcessGroup) -> None:
        self.store = None
        self.group_rank = group.rank()
        self.group_size = group.size()
        self.timeout = group._timeout
        self.group_id = group.group_name
        self.global_ranks_in_group = list(group._ranks)
        self.comm = group._comm


class GroupMember:
    """``GroupMember.WORLD`` (the default group) and ``GroupMember.NON_GROUP_MEMBER``."""

    WORLD: ProcessGroup | None = None
    NON_GROUP_MEMBER: Any = -100


class _GroupAlias:
    """``backend_sdk.distributed.group.WORLD``: the default group (None before init)."""

    @property
    def WORLD(self) -> ProcessGroup | None:  # noqa: N802 (PyTorch's name)
        return GroupMember.WORLD


group = _GroupAlias()
_groups: list[ProcessGroup] = []


def is_initialized() -> bool:
    """True once ``init_process_group`` has run (and ``destroy_process_group`` has not)."""
    return GroupMember.WORLD is not None


def _default_group() -> ProcessGroup:
    if GroupMember.WORLD is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return GroupMember.WORLD


def _resolve(group: ProcessGroup | None) -> ProcessGroup | None:
    """The group to use, or None when this rank is not a member (the op is then a no-op, as PyTorch's)."""
    pg = _default_group() if group is None or group is GroupMember.WORLD else group
    if not isinstance(pg, ProcessGroup) and pg is not GroupMember.NON_GROUP_MEMBER:
        raise ValueError(f"Expecting a ProcessGroup, but got a {type(pg)}.")
    if pg is GroupMember.NON_GROUP_MEMBER:
        return None
    if pg not in _groups:
        raise ValueError("Invalid process group specified or has been destroyed.")
    return pg


def _timeout_seconds(timeout: Any) -> float:
    if timeout is None:
        return default_pg_timeout.total_seconds()
    if not isinstance(timeout, timedelta):
        raise TypeError("Expected timeout argument to be of type datetime.timedelta")
    return timeout.total_seconds()


def init_process_group(backend: str | None = None, init_method: str | None = None, timeout: timedelta | None = None,
                       world_size: int = -1, rank: int = -1, store: Any = None, group_name: str = "",
                       pg_options: Any = None, device_id: Any = None) -> None:
    """Initialises the default process group over MPI.

    Rank and size come from MPI (a process started by ``mpiexec`` or ``backend_sdk.distributed.run``);
    ``rank``/``world_size`` or the ``env://`` variables (RANK, WORLD_SIZE) are checked against them.
    """
    _timeout_seconds(timeout)
    if GroupMember.WORLD is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if store is not None and init_method is not None:
        raise ValueError("Cannot specify both init_method and store.")
    if init_method is not None and not (init_method.startswith("env://") or init_method.startswith("mpi://")
                                        or init_method.startswith("tcp://") or init_method.startswith("file://")):
        raise ValueError(f"Unsupported init_method: {init_method}")
    if device_id is not None:
        from .. import device as _device

        dev = _device(device_id) if not isinstance(device_id, int) else None
        if dev is not None and (dev.index is None or dev.type == "cpu"):
            raise ValueError("init_process_group device_id parameter must be an accelerator with an index")
    register_device_backends()  # Note [Device collectives backend]
    backends = _parse_backend(backend)
    _check_backends(backends)
    if not is_mpi_available():
        raise RuntimeError("Distributed package doesn't have MPI built in: pip install \"backend_sdk[distributed]\" "
                           "(mpi4py and an MPI library such as the mpich wheel)")
    eng = _engine.engine()
    env_rank, env_size = os.environ.get("RANK"), os.environ.get("WORLD_SIZE")
    for what, given, env, actual in (("rank", rank, env_rank, eng.rank), ("world_size", world_size, env_size, eng.size)):
        for source, value in (("argument", given), ("environment variable " + ("RANK" if what == "rank" else
                                                                               "WORLD_SIZE"), env)):
            if value is None or int(value) < 0:
                continue
            if int(value) != actual:
                raise ValueError(f"init_process_group: {what} {value} (from the {source}) does not match the MPI job, "
                                 f"whose {what} is {actual}; start the processes with mpiexec or "
                                 "python -m backend_sdk.distributed.run")
    world = ProcessGroup(list(range(eng.size)), eng.world, backends, timeout or default_pg_timeout,
                         group_name or "0")
    GroupMember.WORLD = world
    _groups.append(world)


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Destroys ``group``, or every group and the default one (then ``init_process_group`` may run again)."""
    if group is None or group is GroupMember.WORLD:
        _default_group()
        for pg in _groups[1:]:
            _free_comm(pg)
        for backend in _groups[0]._backends.values() if _groups else ():
            if isinstance(backend, DeviceCollectivesBackend):
                backend.destroy()
        _groups.clear()
        GroupMember.WORLD = None
        _engine.release_engine()
        return
    if group not in _groups:
        raise ValueError("Invalid process group specified or has been destroyed.")
    _groups.remove(group)
    _free_comm(group)


def _free_comm(pg: ProcessGroup) -> None:
    for backend in pg._backends.values():
        if isinstance(backend, DeviceCollectivesBackend):
            backend.destroy()
    try:
        pg._comm.Free()
    except Exception:
        pass


def get_rank(group: ProcessGroup | None = None) -> int:
    """This process's rank in ``group`` (the default group if None); -1 if it is not a member."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    pg = _resolve(group)
    return -1 if pg is None else pg.rank()


def get_world_size(group: ProcessGroup | None = None) -> int:
    """The number of ranks in ``group``; -1 if this process is not a member."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    pg = _resolve(group)
    return -1 if pg is None else pg.size()


def get_backend(group: ProcessGroup | None = None) -> Backend:
    """The backend of ``group`` as a lower-case string (``"mpi"``, or ``"cpu:mpi,accel:x"``)."""
    pg = _resolve(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    names = {b for d, b in pg._backend_names.items()}
    return Backend(names.pop() if len(names) == 1 else pg.name())


def get_default_backend_for_device(device: Any) -> str:
    """The backend registered for ``device``'s type."""
    device_str = device.type if hasattr(device, "type") else str(device).split(":")[0]
    backend = Backend.default_device_backend_map.get(device_str)
    if backend is None:
        raise ValueError(f"Default backend not registered for device : {device}")
    return backend


def get_process_group_ranks(group: ProcessGroup | None) -> list[int]:
    """The global ranks of ``group``, in group order."""
    pg = _resolve(group)
    return [] if pg is None else list(pg._ranks)


def get_global_rank(group: ProcessGroup, group_rank: int) -> int:
    """The global rank of ``group_rank`` in ``group``."""
    if group is GroupMember.WORLD:
        return group_rank
    if not 0 <= group_rank < len(group._ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return group._ranks[group_rank]


def get_group_rank(group: ProcessGroup, global_rank: int) -> int:
    """The rank in ``group`` of ``global_rank``."""
    if group is GroupMember.WORLD:
        return global_rank
    if global_rank not in group._ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return group._ranks.index(global_rank)


def new_group(ranks: list[int] | None = None, timeout: timedelta | None = None, backend: str | None = None,
              pg_options: Any = None, use_local_synchronization: bool = False, group_desc: str | None = None,
              device_id: Any = None) -> Any:
    """A new group of ``ranks`` (all ranks must call it); non-members get ``GroupMember.NON_GROUP_MEMBER``."""
    world = _default_group()
    eng = _engine.engine()
    size = world.size()
    ranks = sorted(range(size) if ranks is None else ranks)
    for r in ranks:
        if not 0 <= r < size:
            raise ValueError(f"Invalid rank {r}: ranks must be in [0, {size}) (the world size)")
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"new_group: ranks {ranks} contain duplicates")
    backends = world._backend_names if backend is None else _parse_backend(backend)
    _check_backends(backends)
    seconds = _timeout_seconds(timeout) if timeout is not None else world._timeout.total_seconds()

    def create() -> Any:
        return eng.world.Create(eng.world.Get_group().Incl(ranks))

    work = eng.submit("new_group", create, seconds)
    work.wait()
    comm = work._result
    if comm == eng.MPI.COMM_NULL:
        return GroupMember.NON_GROUP_MEMBER
    pg = ProcessGroup(ranks, comm, backends, timeout or world._timeout, str(len(_groups)))
    _groups.append(pg)
    return pg


# ---- tensors to host arrays (Note [MPI backend data path]) -----------------------------------------------
_warned_staging: set[str] = set()


def _check_tensor(value: Any, name: str) -> None:
    from .._tensor import Tensor

    if not isinstance(value, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type backend_sdk.Tensor\n"
                        f"             but got {type(value)} instead.")


def _check_tensor_list(value: Any, name: str) -> None:
    from .._tensor import Tensor

    if not isinstance(value, list):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type List[backend_sdk.Tensor]\n"
                        f"             but got {type(value)} instead.")
    if not all(isinstance(v, Tensor) for v in value):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type List[backend_sdk.Tensor]\n"
                        f"             but got {type(value)} with elements of type {[type(v) for v in value]}.")


class _HostView:
    """A contiguous host array for ``tensor``: its own memory when possible, else a staged copy."""

    __slots__ = ("tensor", "array", "staged")

    def __init__(self, tensor: Any, read: bool = True) -> None:
        self.tensor = tensor
        plain = tensor.detach()
        if plain.device.type == "cpu":
            if plain.is_contiguous():
                self.array, self.staged = plain.numpy(), False
            else:
                self.array, self.staged = np.ascontiguousarray(plain.numpy()), True
        else:
            self.array, self.staged = plain.cpu().contiguous().numpy(), True

    def write_back(self) -> None:
        """Copies a staged array into the caller's tensor (after the operation)."""
        if self.staged:
            from .. import from_numpy, no_grad

            with no_grad():
                self.tensor.copy_(from_numpy(self.array))


def _backend(pg: ProcessGroup, tensors: list, op_name: str) -> Any:
    device_type = tensors[0].device.type
    for t in tensors[1:]:
        if t.device.type != device_type:
            raise RuntimeError(f"{op_name}: tensors must all be on one device type, got {device_type} and "
                               f"{t.device.type}")
    backend = pg._backend_for(device_type)
    if device_type != "cpu" and type(backend) is MPIBackend and device_type not in _warned_staging:
        _warned_staging.add(device_type)
        warnings.warn(f"backend_sdk.distributed: {device_type} tensors are exchanged through host memory over MPI "
                      f"(the device has no 'sdk.collectives' extension); collectives on {device_type} copy to and "
                      "from the host", UserWarning, stacklevel=3)
    return backend


def _group_rank(pg: ProcessGroup, rank: int | None, group_rank: int | None, what: str) -> int:
    if rank is not None and group_rank is not None:
        raise ValueError("Can't specify both group_rank and global_rank")
    if rank is None and group_rank is None:
        if what in ("dst", "src"):
            return 0
        raise ValueError("Must specify global_rank or group_rank")
    if group_rank is not None:
        if not 0 <= group_rank < pg.size():
            raise ValueError(f"Group rank {group_rank} is not part of group {pg}")
        return group_rank
    if rank not in pg._ranks:
        raise ValueError(f"Global rank {rank} is not part of group {pg}")
    return pg._ranks.index(rank)


def _submit(pg: ProcessGroup, name: str, fn: Callable[[], Any], async_op: bool,
            then: Callable[[], None] | None = None) -> Work | None:
    work = _engine.engine().submit(name, fn, pg._timeout.total_seconds(), then)
    if async_op:
        return work
    work.wait()
    return None


#: Synchronous collectives up to this size run on the calling thread (Note [Inline small collectives]).
INLINE_MAX_BYTES = 1 << 20


def _inline(pg: ProcessGroup, name: str, backend: Any, async_op: bool, array: np.ndarray | None,
            steps: Callable[[], Any], timeout: float | None = None) -> bool:
    """True if the collective ran inline (the mpi backend, synchronous, small, nothing queued)."""
    if async_op or type(backend) is not MPIBackend or (array is not None and array.nbytes > INLINE_MAX_BYTES):
        return False
    seconds = pg._timeout.total_seconds() if timeout is None else timeout
    return _engine.engine().run_inline(name, steps(), seconds)


def _on_device(backend: Any, tensors: list, op: str | None = None) -> bool:
    """True if the collective runs on the device (Note [Device collectives backend]) rather than via the host."""
    return (isinstance(backend, DeviceCollectivesBackend) and tensors[0].device.type == backend.device_type
            and (op is None or op in _OP_NUMBERS))


def _op_name(op: Any) -> str:
    if not isinstance(op, _RedOpType):
        raise TypeError(f"Invalid reduce op {op!r}: expected a ReduceOp (ReduceOp.SUM, ...)")
    if op in (ReduceOp.PREMUL_SUM, ReduceOp.UNUSED):
        raise ValueError(f"ReduceOp.{op.name} is not supported by the mpi backend")
    return op.name


def _check_reduction(op_name: str, op: Any, tensor: Any) -> str:
    name = _op_name(op)
    from .. import bool as _bool

    if tensor.dtype == _bool and name == "AVG":
        raise TypeError(f"{op_name}: Cannot use ReduceOp.AVG with boolean inputs")
    if tensor.dtype.is_floating_point and name in ("BAND", "BOR", "BXOR"):
        raise TypeError(f"{op_name}: ReduceOp.{name} is only defined for integer and bool tensors, got "
                        f"{tensor.dtype}")
    return name


# ---- collectives -------------------------------------------------------------------------------------------
def broadcast(tensor: Any, src: int | None = None, group: ProcessGroup | None = None, async_op: bool = False,
              group_src: int | None = None) -> Work | None:
    """Copies ``tensor`` of rank ``src`` into ``tensor`` of every rank of ``group``."""
    _check_tensor(tensor, "tensor")
    pg = _resolve(group)
    if pg is None:
        return None
    root = _group_rank(pg, src, group_src, "src")
    backend = _backend(pg, [tensor], "broadcast")
    if _on_device(backend, [tensor]):
        return backend.device_broadcast(tensor, root, async_op)
    view = _HostView(tensor)
    if _inline(pg, "broadcast", backend, async_op, view.array, lambda: backend.broadcast_steps(view.array, root)):
        view.write_back()
        return None
    return _submit(pg, "broadcast", lambda: backend.broadcast(view.array, root), async_op, view.write_back)


def all_reduce(tensor: Any, op: Any = ReduceOp.SUM, group: ProcessGroup | None = None,
               async_op: bool = False) -> Work | None:
    """Reduces ``tensor`` across ``group`` with ``op``; every rank gets the result in ``tensor``."""
    _check_tensor(tensor, "tensor")
    pg = _resolve(group)
    if pg is None:
        return None
    name = _check_reduction("all_reduce", op, tensor)
    backend = _backend(pg, [tensor], "all_reduce")
    if _on_device(backend, [tensor], name):
        return backend.device_all_reduce(tensor, name, async_op)
    view = _HostView(tensor)
    if _inline(pg, "all_reduce", backend, async_op, view.array, lambda: backend.all_reduce_steps(view.array, name)):
        view.write_back()
        return None
    return _submit(pg, "all_reduce", lambda: backend.all_reduce(view.array, name), async_op, view.write_back)


def reduce(tensor: Any, dst: int | None = None, op: Any = ReduceOp.SUM, group: ProcessGroup | None = None,
           async_op: bool = False, group_dst: int | None = None) -> Work | None:
    """Reduces ``tensor`` across ``group`` into ``tensor`` of rank ``dst``."""
    _check_tensor(tensor, "tensor")
    pg = _resolve(group)
    if pg is None:
        return None
    root = _group_rank(pg, dst, group_dst, "dst")
    name = _check_reduction("reduce", op, tensor)
    backend = _backend(pg, [tensor], "reduce")
    view = _HostView(tensor)
    then = view.write_back if pg.rank() == root else None
    return _submit(pg, "reduce", lambda: backend.reduce(view.array, root, name), async_op, then)


def _check_same(name: str, reference: Any, tensors: list, what: str) -> None:
    for i, t in enumerate(tensors):
        if t.dtype != reference.dtype:
            raise TypeError(f"{name}: {what}[{i}] has dtype {t.dtype}, expected {reference.dtype} (the input's)")
        if t.numel() != reference.numel():
            raise ValueError(f"{name}: {what}[{i}] has {t.numel()} elements, expected {reference.numel()} "
                             f"(the input's)")


def all_gather(tensor_list: list, tensor: Any, group: ProcessGroup | None = None,
               async_op: bool = False) -> Work | None:
    """Gathers ``tensor`` of every rank into ``tensor_list[rank]`` on every rank."""
    _check_tensor_list(tensor_list, "tensor_list")
    _check_tensor(tensor, "tensor")
    pg = _resolve(group)
    if pg is None:
        return None
    if len(tensor_list) != pg.size():
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors, expected {pg.size()} "
                         "(the group size)")
    _check_same("all_gather", tensor, tensor_list, "tensor_list")
    backend = _backend(pg, [tensor, *tensor_list], "all_gather")
    if _on_device(backend, [tensor]):
        from .. import empty, no_grad

        flat = empty([pg.size() * tensor.numel()], dtype=tensor.dtype, device=tensor.device)

        def scatter_back() -> None:
            with no_grad():
                for i, t in enumerate(tensor_list):
                    t.copy_(flat[i * tensor.numel():(i + 1) * tensor.numel()].reshape(list(t.shape)))

        return backend.device_all_gather("all_gather", flat, tensor, async_op, scatter_back)
    view = _HostView(tensor)
    out = np.empty((pg.size(), *view.array.shape), dtype=view.array.dtype)

    def then() -> None:
        from .. import from_numpy, no_grad

        with no_grad():
            for i, t in enumerate(tensor_list):
                t.copy_(from_numpy(out[i, ...]).reshape(list(t.shape)))  # [i, ...]: an array even for 0-d

    return _submit(pg, "all_gather", lambda: backend.all_gather(out, view.array), async_op, then)


def all_gather_into_tensor(output_tensor: Any, input_tensor: Any, group: ProcessGroup | None = None,
                           async_op: bool = False) -> Work | None:
    """Gathers ``input_tensor`` of every rank, concatenated along dim 0 (or stacked), into ``output_tensor``."""
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")
    pg = _resolve(group)
    if pg is None:
        return None
    if output_tensor.dtype != input_tensor.dtype:
        raise TypeError(f"all_gather_into_tensor: output tensor dtype {output_tensor.dtype} does not match input "
                        f"tensor dtype {input_tensor.dtype}")
    if output_tensor.numel() != input_tensor.numel() * pg.size():
        raise ValueError("output tensor size must be equal to world_size times input tensor size "
                         f"(output {list(output_tensor.shape)}, input {list(input_tensor.shape)}, world_size "
                         f"{pg.size()})")
    backend = _backend(pg, [output_tensor, input_tensor], "all_gather_into_tensor")
    if _on_device(backend, [input_tensor]):
        return backend.device_all_gather("all_gather_into_tensor", output_tensor, input_tensor, async_op)
    src, dst = _HostView(input_tensor), _HostView(output_tensor)
    return _submit(pg, "all_gather_into_tensor", lambda: backend.all_gather(dst.array, src.array), async_op,
                   dst.write_back)


def reduce_scatter(output: Any, input_list: list, op: Any = ReduceOp.SUM, group: ProcessGroup | None = None,
                   async_op: bool = False) -> Work | None:
    """Rank r gets in ``output`` the reduction over ranks of their ``input_list[r]``."""
    _check_tensor(output, "output")
    _check_tensor_list(input_list, "input_list")
    pg = _resolve(group)
    if pg is None:
        return None
    if len(input_list) != pg.size():
        raise ValueError(f"reduce_scatter: input_list has {len(input_list)} tensors, expected {pg.size()} "
                         "(the group size)")
    _check_same("reduce_scatter", output, input_list, "input_list")
    name = _check_reduction("reduce_scatter", op, output)
    backend = _backend(pg, [output, *input_list], "reduce_scatter")
    if _on_device(backend, [output], name):
        from .. import cat

        flat = cat([t.detach().reshape(-1) for t in input_list])
        return backend.device_reduce_scatter("reduce_scatter", output, flat, name, async_op)
    stacked = np.stack([_HostView(t).array.reshape(-1) for t in input_list])
    out = _HostView(output)
    return _submit(pg, "reduce_scatter", lambda: backend.reduce_scatter(out.array.reshape(-1), stacked, name),
                   async_op, out.write_back)


def reduce_scatter_tensor(output: Any, input: Any, op: Any = ReduceOp.SUM, group: ProcessGroup | None = None,
                          async_op: bool = False) -> Work | None:
    """``input`` is ``group size`` chunks along dim 0; rank r gets the reduction of chunk r in ``output``."""
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    pg = _resolve(group)
    if pg is None:
        return None
    if output.dtype != input.dtype:
        raise TypeError(f"reduce_scatter_tensor: input tensor dtype {input.dtype} does not match output tensor "
                        f"dtype {output.dtype}")
    if input.numel() != output.numel() * pg.size():
        raise ValueError("input tensor must be the same size as output size times world size "
                         f"(input {list(input.shape)}, output {list(output.shape)}, world_size {pg.size()})")
    name = _check_reduction("reduce_scatter_tensor", op, output)
    backend = _backend(pg, [output, input], "reduce_scatter_tensor")
    if _on_device(backend, [output], name):
        return backend.device_reduce_scatter("reduce_scatter_tensor", output, input, name, async_op)
    src, dst = _HostView(input), _HostView(output)
    return _submit(pg, "reduce_scatter_tensor",
                   lambda: backend.reduce_scatter(dst.array.reshape(-1), src.array.reshape(pg.size(), -1), name),
                   async_op, dst.write_back)


def all_to_all_single(output: Any, input: Any, output_split_sizes: list[int] | None = None,
                      input_split_sizes: list[int] | None = None, group: ProcessGroup | None = None,
                      async_op: bool = False) -> Work | None:
    """Splits ``input`` along dim 0 and sends split i to rank i; ``output`` gets rank i's split in slot i."""
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    pg = _resolve(group)
    if pg is None:
        return None
    if output.dtype != input.dtype:
        raise TypeError(f"all_to_all_single: output dtype {output.dtype} does not match input dtype {input.dtype}")
    n = pg.size()

    def counts(tensor: Any, splits: list[int] | None, what: str) -> list[int]:
        rows = tensor.shape[0] if tensor.dim() > 0 else 1
        row = tensor.numel() // rows if rows else 0
        if splits is None or len(splits) == 0:
            if rows % n:
                raise ValueError(f"all_to_all_single: {what} dim 0 ({rows}) is not divisible by the group size {n}")
            return [rows // n * row] * n
        if len(splits) != n or sum(splits) != rows:
            raise ValueError(f"all_to_all_single: {what}_split_sizes {list(splits)} must have {n} entries summing "
                             f"to {what}.size(0) = {rows}")
        return [int(s) * row for s in splits]

    send_counts = counts(input, input_split_sizes, "input")
    recv_counts = counts(output, output_split_sizes, "output")
    backend = _backend(pg, [output, input], "all_to_all_single")
    src, dst = _HostView(input), _HostView(output)
    return _submit(pg, "all_to_all_single",
                   lambda: backend.all_to_all(dst.array, src.array, send_counts, recv_counts), async_op,
                   dst.write_back)


def gather(tensor: Any, gather_list: list | None = None, dst: int | None = None, group: ProcessGroup | None = None,
           async_op: bool = False, group_dst: int | None = None) -> Work | None:
    """Gathers ``tensor`` of every rank into ``gather_list`` of rank ``dst``."""
    _check_tensor(tensor, "tensor")
    pg = _resolve(group)
    if pg is None:
        return None
    root = _group_rank(pg, dst, group_dst, "dst")
    if pg.rank() == root:
        if gather_list is None:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        _check_tensor_list(gather_list, "gather_list")
        if len(gather_list) != pg.size():
            raise ValueError(f"gather: gather_list has {len(gather_list)} tensors, expected {pg.size()}")
        _check_same("gather", tensor, gather_list, "gather_list")
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    backend = _backend(pg, [tensor], "gather")
    view = _HostView(tensor)
    out = np.empty((pg.size(), *view.array.shape), dtype=view.array.dtype) if pg.rank() == root else None

    def then() -> None:
        if out is None:
            return
        from .. import from_numpy, no_grad

        with no_grad():
            for i, t in enumerate(gather_list or []):
                t.copy_(from_numpy(out[i, ...]).reshape(list(t.shape)))  # [i, ...]: an array even for 0-d

    return _submit(pg, "gather", lambda: backend.gather(out, view.array, root), async_op, then)


def scatter(tensor: Any, scatter_list: list | None = None, src: int | None = None, group: ProcessGroup | None = None,
            async_op: bool = False, group_src: int | None = None) -> Work | None:
    """Rank ``src`` sends ``scatter_list[i]`` to rank i, which receives it into ``tensor``."""
    _check_tensor(tensor, "tensor")
    pg = _resolve(group)
    if pg is None:
        return None
    root = _group_rank(pg, src, group_src, "src")
    stacked = None
    if pg.rank() == root:
        if scatter_list is None:
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        _check_tensor_list(scatter_list, "scatter_list")
        if len(scatter_list) != pg.size():
            raise ValueError(f"scatter: scatter_list has {len(scatter_list)} tensors, expected {pg.size()}")
        _check_same("scatter", tensor, scatter_list, "scatter_list")
        stacked = np.stack([_HostView(t).array.reshape(-1) for t in scatter_list])
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    backend = _backend(pg, [tensor], "scatter")
    view = _HostView(tensor)
    return _submit(pg, "scatter", lambda: backend.scatter(view.array, stacked, root), async_op, view.write_back)


def barrier(group: ProcessGroup | None = None, async_op: bool = False, device_ids: Any = None,
            timeout: timedelta | None = None) -> Work | None:
    """Blocks until every rank of ``group`` has entered the barrier."""
    pg = _resolve(group)
    if pg is None:
        return None
    backend = pg._backend_for("cpu") if "cpu" in pg._backend_names else pg._backend_for("*")
    seconds = _timeout_seconds(timeout) if timeout is not None else pg._timeout.total_seconds()
    if _inline(pg, "barrier", backend, async_op, None, backend.barrier_steps, seconds):
        return None
    work = _engine.engine().submit("barrier", backend.barrier, seconds)
    if async_op:
        return work
    work.wait()
    return None


# ---- point to point ----------------------------------------------------------------------------------------
def isend(tensor: Any, dst: int | None = None, group: ProcessGroup | None = None, tag: int = 0,
          group_dst: int | None = None) -> Work | None:
    """Sends ``tensor`` to rank ``dst`` asynchronously; returns a Work."""
    _check_tensor(tensor, "tensor")
    pg = _resolve(group)
    if pg is None:
        return None
    peer = _group_rank(pg, dst, group_dst, "dst")
    if peer == pg.rank():
        raise ValueError("Invalid destination rank: should not be the same as the rank of the current process.")
    backend = _backend(pg, [tensor], "isend")
    if _on_device(backend, [tensor]):
        return backend.device_send(tensor, peer)
    view = _HostView(tensor)
    return _engine.engine().submit("send", lambda: backend.send(view.array, peer, tag), pg._timeout.total_seconds())


def irecv(tensor: Any, src: int | None = None, group: ProcessGroup | None = None, tag: int = 0,
          group_src: int | None = None) -> Work | None:
    """Receives into ``tensor`` from rank ``src`` (any rank if None) asynchronously; returns a Work."""
    _check_tensor(tensor, "tensor")
    pg = _resolve(group)
    if pg is None:
        return None
    peer = None if src is None and group_src is None else _group_rank(pg, src, group_src, "src")
    if peer == pg.rank():
        raise ValueError("Invalid source rank: should not be the same as the rank of the current process.")
    backend = _backend(pg, [tensor], "irecv")
    if _on_device(backend, [tensor]):
        return backend.device_recv(tensor, peer)
    view = _HostView(tensor)
    return _engine.engine().submit("recv", lambda: backend.recv(view.array, peer, tag), pg._timeout.total_seconds(),
                                   view.write_back)


def send(tensor: Any, dst: int | None = None, group: ProcessGroup | None = None, tag: int = 0,
         group_dst: int | None = None) -> None:
    """Sends ``tensor`` to rank ``dst`` and waits until it was sent."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor: Any, src: int | None = None, group: ProcessGroup | None = None, tag: int = 0,
         group_src: int | None = None) -> int:
    """Receives into ``tensor`` from rank ``src`` (any rank if None); returns the sender's global rank."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    pg = _resolve(group)
    return pg._ranks[int(work._result)] if pg is not None else -1


# ---- objects -----------------------------------------------------------------------------------------------
def _object_call(pg: ProcessGroup, name: str, fn: Callable[[Any], Any]) -> Any:
    backend = pg._backend_for("cpu") if "cpu" in pg._backend_names else pg._backend_for("*")
    work = _engine.engine().submit(name, lambda: fn(backend), pg._timeout.total_seconds())
    work.wait()
    return work._result


def broadcast_object_list(object_list: list, src: int | None = None, group: ProcessGroup | None = None,
                          device: Any = None, group_src: int | None = None) -> None:
    """Replaces ``object_list``'s items on every rank with those of rank ``src`` (pickled)."""
    pg = _resolve(group)
    if pg is None:
        return
    root = _group_rank(pg, src, group_src, "src")
    objs = _object_call(pg, "broadcast_object_list",
                        lambda b: b.bcast_object(list(object_list) if pg.rank() == root else None, root))
    if len(objs) != len(object_list):
        raise ValueError(f"broadcast_object_list: rank {pg._ranks[root]} broadcast {len(objs)} objects but this rank's "
                         f"object_list has {len(object_list)}")
    object_list[:] = objs


def all_gather_object(object_list: list, obj: Any, group: ProcessGroup | None = None) -> None:
    """Fills ``object_list[r]`` with rank r's ``obj`` (pickled) on every rank."""
    pg = _resolve(group)
    if pg is None:
        return
    if len(object_list) != pg.size():
        raise ValueError(f"all_gather_object: object_list has {len(object_list)} entries, expected {pg.size()}")
    object_list[:] = _object_call(pg, "all_gather_object", lambda b: b.allgather_object(obj))


def gather_object(obj: Any, object_gather_list: list | None = None, dst: int | None = None,
                  group: ProcessGroup | None = None, group_dst: int | None = None) -> None:
    """Fills ``object_gather_list[r]`` on rank ``dst`` with rank r's ``obj``."""
    pg = _resolve(group)
    if pg is None:
        return
    root = _group_rank(pg, dst, group_dst, "dst")
    result = _object_call(pg, "gather_object", lambda b: b.gather_object(obj, root))
    if pg.rank() == root:
        if object_gather_list is None:
            raise ValueError("Argument ``object_gather_list`` must be specified on destination rank.")
        object_gather_list[:] = result


def scatter_object_list(scatter_object_output_list: list, scatter_object_input_list: list | None = None,
                        src: int | None = None, group: ProcessGroup | None = None,
                        group_src: int | None = None) -> None:
    """Rank ``src`` sends ``scatter_object_input_list[i]`` to rank i, into ``scatter_object_output_list[0]``."""
    pg = _resolve(group)
    if pg is None:
        return
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at least 1.")
    root = _group_rank(pg, src, group_src, "src")
    objs = list(scatter_object_input_list) if pg.rank() == root and scatter_object_input_list is not None else None
    scatter_object_output_list[0] = _object_call(pg, "scatter_object_list", lambda b: b.scatter_object(objs, root))
