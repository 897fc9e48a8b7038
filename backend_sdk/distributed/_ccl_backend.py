"""Process-group backends made from a device's "sdk.collectives" extension (issue 21).

Note [Device collectives backend]
=================================
A device whose contract offers the "sdk.collectives" extension (Note [Device collectives extension] in
runtime/DeviceCollectivesExtension.h) gets a process-group backend with no vendor Python code:
``register_device_backends`` (called by ``init_process_group``) registers, for every PrivateUse backend
with such a device, ``Backend.register_backend(<the extension's backend_name>, ..., devices=[<device
type>])``, so ``init_process_group()`` picks it for that device type by default ("accel:simccl" on
device_sim) and ``"cpu:mpi,accel:simccl"`` names it. A device without the extension keeps the "mpi"
backend's host staging with its one-time warning.

Data path. all_reduce, broadcast, all_gather(_into_tensor), reduce_scatter(_tensor) and send/recv of a
device tensor are enqueued on the tensor device's *current stream* (``_C._runtime._ccl_enqueue``), so
they are ordered with the kernels before and after them, as NCCL's are; a non-contiguous tensor goes
through a contiguous device copy. Nothing crosses host memory unless the device's own fabric does
(device_sim carries bytes over the SDK's MPI fabric between processes: Note [MPI fabric] in
csrc/python/PyCollectives.cpp). The other collectives of the group (reduce, gather, scatter,
all_to_all, barrier, objects) are not in the extension and run as the "mpi" backend's, through host
memory (this class is an MPIBackend on the group's communicator).

Communicators are per device, made on first use by every rank together: rank 0's unique id is
broadcast over MPI and every rank calls comm_init_rank with its group rank and a fabric on its own
duplicate of the group's communicator (made on the engine's thread, in issue order, as every MPI call
of the group is).

Waiting. ``Work.wait()`` (and every synchronous call: unlike PyTorch's NCCL, which only orders the
current stream, a synchronous collective here waits for its completion on the host) polls the event
recorded after the collective and, between polls, asks the failure monitor about the peers and checks
the timeout, exactly as the "mpi" backend's waits (Note [Distributed engine]). Errors the ranks detect
together (a rank's link down, mismatched inputs) are asynchronous device errors: the event's
synchronize raises them, and they are re-raised as ``DistBackendError`` with the device's text, which
names the collective and the rank, on every rank.
"""
from __future__ import annotations

import time
from typing import Any, Callable

from ._engine import _FAILURE_GRACE, DistBackendError, Work, engine
from ._mpi_backend import MPIBackend

__all__ = ["DeviceCollectivesBackend", "register_device_backends"]

#: SDK_DTYPE_* numbers (Note [Device dtype numbers]) by dtype name.
_DTYPE_NUMBERS = {"uint8": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "float16": 5, "float32": 6,
                  "float64": 7, "bool": 11, "bfloat16": 15}
#: SDK_CCL_* numbers by ReduceOp name.
_OP_NUMBERS = {"SUM": 0, "PRODUCT": 1, "MIN": 2, "MAX": 3, "AVG": 4}


def _signed(handle: int) -> int:
    """An MPI handle as intptr_t (mpi4py gives it unsigned; MPICH's negative int handles come sign-extended)."""
    return handle - (1 << 64) if handle >= 1 << 63 else handle


def _rt() -> Any:
    from .. import _C

    return _C._runtime


class _DeviceWork(Work):
    """A collective enqueued on a device stream: done when the event recorded after it has completed."""

    def __init__(self, name: str, event: Any, timeout: float, then: Callable[[], None] | None, keep: tuple,
                 result: Any = None) -> None:
        eng = engine()
        super().__init__(name, lambda: None, eng, timeout, then)
        self._event = event
        self._keep = keep  # the tensors the device reads and writes stay alive until the work is waited on
        self._result = result
        self._rank = eng.rank

    def is_completed(self) -> bool:
        """True once the device finished the collective (successfully or not); never blocks."""
        if not self._done.is_set() and self._event.query():
            self._done.set()
        return self._done.is_set()

    def is_success(self) -> bool:
        """True if completed and waited on without an error."""
        return self.is_completed() and self._exception is None

    def wait(self, timeout: Any = None) -> bool:
        """Waits for the collective; a device error, a peer's failure or the timeout raise DistBackendError."""
        if self._finished:
            if self._exception is not None:
                raise self._exception
            return True
        if timeout is not None and hasattr(timeout, "total_seconds"):
            timeout = timeout.total_seconds()
        limit = self._timeout if timeout is None or timeout <= 0 else float(timeout)
        deadline = time.monotonic() + limit
        pause = 0.0
        polls = 0
        while not self.is_completed():
            polls += 1
            if polls > 200:  # after a short spin, sleep with a growing pause (a loaded machine)
                pause = min(0.002, pause * 2 or 0.0001)
                time.sleep(pause)
            if polls % 64 == 0:
                self._engine.check_progress(self._name, deadline, limit, self._completes)
        self._finished = True
        try:
            self._event.synchronize()  # raises the device's asynchronous error, if any
        except RuntimeError as e:
            self._exception = DistBackendError(f"[Rank {self._rank}] {self._name} failed: {e}")
            self._exception.__cause__ = e
            raise self._exception
        if self._then is not None:
            self._then()
        self._keep = ()
        return True

    def _completes(self) -> bool:
        end = time.monotonic() + _FAILURE_GRACE
        while time.monotonic() < end:
            if self.is_completed():
                return True
            time.sleep(0.005)
        return False

    def result(self) -> list:
        """The output tensors (PyTorch's ``Work.result()``); valid after ``wait()``."""
        self.wait()
        return self._result if isinstance(self._result, list) else []


class DeviceCollectivesBackend(MPIBackend):
    """A process-group backend on a device's "sdk.collectives" (Note [Device collectives backend])."""

    def __init__(self, comm: Any, device_type: str, backend_name: str, timeout: float) -> None:
        super().__init__(comm)
        self.device_type = device_type
        self.name = backend_name
        self._timeout = timeout
        self._comms: dict[int, tuple[int, Any, Any]] = {}  # device index -> (handle, fabric, MPI comm)

    # ---- communicators ---------------------------------------------------------------------------------
    def _comm_for(self, index: int) -> int:
        entry = self._comms.get(index)
        if entry is not None:
            return entry[0]
        rt, MPI = _rt(), self.MPI
        device_type, rank, size = self.device_type, self.rank, self.size

        def create() -> tuple[int, Any, Any]:
            uid = rt._ccl_unique_id(device_type) if rank == 0 else None
            uid = self.comm.bcast(uid, root=0)
            dup = self.comm.Dup()
            fabric = rt._CclMpiFabric(_signed(MPI._handleof(dup)), _signed(MPI._handleof(MPI.BYTE)))
            handle = rt._ccl_comm_init(device_type, index, uid, size, rank, fabric)
            return handle, fabric, dup

        work = engine().submit(f"{self.name} communicator", create, self._timeout)
        work.wait()
        self._comms[index] = work._result
        return work._result[0]

    def destroy(self) -> None:
        """Destroys the communicators (destroy_process_group); the device frees them after their queued work."""
        rt = _rt()
        for handle, _fabric, dup in self._comms.values():
            try:
                rt._ccl_comm_destroy(self.device_type, handle)
            except Exception:
                pass
            # the MPI duplicate stays: a collective still queued may use it (freed with the process)
        self._comms.clear()

    # ---- enqueueing --------------------------------------------------------------------------------------
    @staticmethod
    def _dtype(tensor: Any, op_name: str) -> int:
        name = str(tensor.dtype).split(".")[-1]
        number = _DTYPE_NUMBERS.get(name)
        if number is None:
            raise TypeError(f"{op_name}: dtype {tensor.dtype} is not supported by device collectives (supported: "
                            f"{', '.join(sorted(_DTYPE_NUMBERS))})")
        return number

    def _enqueue(self, op_name: str, kind: str, device: Any, send: Any, recv: Any, count: int, dtype: int,
                 arg: int, async_op: bool, then: Callable[[], None] | None, keep: tuple,
                 result: Any = None) -> Work | None:
        from .. import _runtime
        from .._streams import Event

        comm = self._comm_for(device.index)
        stream = _runtime.current_stream(device)
        send_ptr = send.data_ptr() if send is not None else 0
        recv_ptr = recv.data_ptr() if recv is not None else 0
        _rt()._ccl_enqueue(self.device_type, kind, comm, send_ptr, recv_ptr, count, dtype, arg, stream.native_handle)
        event = Event(device)
        event.record(stream)
        work = _DeviceWork(op_name, event, self._timeout, then, keep, result)
        if async_op:
            return work
        work.wait()
        return None

    @staticmethod
    def _contiguous(tensor: Any) -> tuple[Any, Callable[[], None] | None]:
        """The tensor itself if contiguous, else a contiguous copy and the copy-back to run after the op."""
        plain = tensor.detach()
        if plain.is_contiguous():
            return plain, None
        tmp = plain.contiguous()

        def back() -> None:
            from .. import no_grad

            with no_grad():
                tensor.copy_(tmp)

        return tmp, back

    def device_all_reduce(self, tensor: Any, op: str, async_op: bool) -> Work | None:
        """all_reduce of a device tensor, in place."""
        if op not in _OP_NUMBERS:
            raise ValueError(f"all_reduce: ReduceOp.{op} is not supported by the {self.name} backend "
                             f"(supported: {', '.join(_OP_NUMBERS)})")
        buf, back = self._contiguous(tensor)
        return self._enqueue("all_reduce", "all_reduce", buf.device, buf, buf, buf.numel(),
                             self._dtype(buf, "all_reduce"), _OP_NUMBERS[op], async_op, back, (tensor, buf))

    def device_broadcast(self, tensor: Any, root: int, async_op: bool) -> Work | None:
        """broadcast of a device tensor from group rank ``root``."""
        buf, back = self._contiguous(tensor)
        return self._enqueue("broadcast", "broadcast", buf.device, buf, buf, buf.numel(),
                             self._dtype(buf, "broadcast"), root, async_op, back, (tensor, buf))

    def device_all_gather(self, op_name: str, output: Any, tensor: Any, async_op: bool,
                          then: Callable[[], None] | None = None) -> Work | None:
        """all_gather of ``tensor`` into the contiguous ``output`` (size * numel elements)."""
        src, _ = self._contiguous(tensor)
        dst, back = self._contiguous(output)
        return self._enqueue(op_name, "all_gather", src.device, src, dst, src.numel(), self._dtype(src, op_name),
                             0, async_op, _chain(back, then), (tensor, src, output, dst))

    def device_reduce_scatter(self, op_name: str, output: Any, stacked: Any, op: str, async_op: bool) -> Work | None:
        """reduce_scatter of the contiguous ``stacked`` (size * numel elements) into ``output``."""
        if op not in _OP_NUMBERS:
            raise ValueError(f"{op_name}: ReduceOp.{op} is not supported by the {self.name} backend "
                             f"(supported: {', '.join(_OP_NUMBERS)})")
        src, _ = self._contiguous(stacked)
        dst, back = self._contiguous(output)
        return self._enqueue(op_name, "reduce_scatter", dst.device, src, dst, dst.numel(), self._dtype(dst, op_name),
                             _OP_NUMBERS[op], async_op, back, (stacked, src, output, dst))

    def device_send(self, tensor: Any, peer: int) -> Work:
        """send of a device tensor to group rank ``peer`` (a Work)."""
        buf, _ = self._contiguous(tensor)
        work = self._enqueue("send", "send", buf.device, buf, None, buf.numel(), self._dtype(buf, "send"), peer,
                             True, None, (tensor, buf))
        assert work is not None
        return work

    def device_recv(self, tensor: Any, peer: int | None) -> Work:
        """recv into a device tensor from group rank ``peer`` (a Work whose result is the peer)."""
        if peer is None:
            raise RuntimeError(f"recv: the {self.name} backend cannot receive from any source (src=None); name the "
                               "source rank, as with NCCL")
        buf, back = self._contiguous(tensor)
        work = self._enqueue("recv", "recv", buf.device, None, buf, buf.numel(), self._dtype(buf, "recv"), peer,
                             True, back, (tensor, buf), result=peer)
        assert work is not None
        return work


def _chain(first: Callable[[], None] | None, second: Callable[[], None] | None) -> Callable[[], None] | None:
    if first is None or second is None:
        return first or second

    def both() -> None:
        first()
        second()

    return both


def register_device_backends() -> dict[str, str]:
    """Registers a backend for every PrivateUse backend whose device offers "sdk.collectives".

    Returns {device type: backend name} of what is registered (Note [Device collectives backend]).
    """
    from .. import _C
    from .distributed_c10d import Backend

    rt = _rt()
    found: dict[str, str] = {}
    for which in (1, 2, 3):
        device_type = _C._get_privateuse_backend_name(which)
        try:
            if not rt._has_device_collectives(device_type):
                continue
            name = rt._ccl_backend_name(device_type)
        except (RuntimeError, ValueError):
            continue
        found[device_type] = name
        if name.upper() in Backend._plugins:
            continue

        def factory(options: Any, _unused: Any = None, device_type: str = device_type, name: str = name) -> Any:
            return DeviceCollectivesBackend(options.comm, device_type, name, options.timeout.total_seconds())

        Backend.register_backend(name, factory, extended_api=True, devices=[device_type])
    return found
